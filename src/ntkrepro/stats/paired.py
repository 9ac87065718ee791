"""Resampling and exact paired tests for few units (rule 4): :func:`paired_bootstrap`,
:func:`hierarchical_bootstrap`, :func:`slope_statistic`, :class:`OneSidedTest`, :class:`PairedTest`,
:func:`sign_test`, :func:`permutation_test`, :func:`paired_test_power`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from ntkrepro.stats.intervals import Interval, Status, bootstrap_ci
from ntkrepro.stats.power import PowerLine


# --------------------------------------------------------------------------------------------
# Resampling: paired, hierarchical, exact paired tests (rule 4)


def paired_bootstrap(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, n_boot: int = 2000,
                     level: float = 0.95, seed: int = 0) -> Interval:
    r"""Mean paired difference :math:`\overline{a-b}` with a percentile bootstrap over the shared units
    (test points, seeds): the units are resampled jointly for both arms."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        raise ValueError(f"paired comparison needs the same units, got shapes {a.shape} and {b.shape}")
    iv = bootstrap_ci(a - b, np.mean, n_boot=n_boot, level=level, seed=seed)
    return Interval(iv.value, iv.low, iv.high, iv.level, "paired " + iv.method)


def hierarchical_resample(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One two-stage resample of ``y`` with shape ``(..., n_outer, n_inner)``.

    For every leading index independently: draw outer units (teacher / data draws) with
    replacement, then within each drawn outer unit draw inner units (init seeds) with replacement.
    """
    y = np.asarray(y)
    *lead, n_out, n_in = y.shape
    oi = rng.integers(0, n_out, size=(*lead, n_out))
    ii = rng.integers(0, n_in, size=(*lead, n_out, n_in))
    outer = np.take_along_axis(y, oi[..., None].repeat(n_in, axis=-1), axis=-2)
    return np.take_along_axis(outer, ii, axis=-1)


def hierarchical_bootstrap(y: np.ndarray, statistic: Callable[[np.ndarray], float], *, n_boot: int = 2000,
                           level: float = 0.95, seed: int = 0) -> Interval:
    r"""Percentile interval of ``statistic(y)`` under the two-stage resample of :func:`hierarchical_resample`.

    ``y`` has shape ``(..., n_outer, n_inner)``; e.g. ``(n_T, n_teachers, n_seeds)`` for a slope over
    T whose interval must carry both the teacher and the seed variance.
    """
    y = np.asarray(y, float)
    if y.shape[-2] < 2 or y.shape[-1] < 1:
        raise ValueError("a hierarchical bootstrap needs at least two outer units")
    rng = np.random.default_rng(seed)
    boots = np.array([statistic(hierarchical_resample(y, rng)) for _ in range(n_boot)])
    a = (1 - level) / 2
    return Interval(float(statistic(y)), float(np.quantile(boots, a)), float(np.quantile(boots, 1 - a)), level,
                    f"hierarchical bootstrap (outer x inner = {y.shape[-2]} x {y.shape[-1]}), {n_boot} resamples")


def slope_statistic(x: Sequence[float], *, log_x: bool = True, log_y: bool = True,
                    center: Callable = np.mean) -> Callable[[np.ndarray], float]:
    """``statistic(y)`` for :func:`hierarchical_bootstrap`: the OLS slope of the centre of ``y[i]`` vs ``x[i]``."""
    tx = np.log(np.asarray(x, float)) if log_x else np.asarray(x, float)

    def stat(y: np.ndarray) -> float:
        c = center(np.asarray(y).reshape(len(tx), -1), axis=1)
        return float(np.polyfit(tx, np.log(c) if log_y else c, 1)[0])

    return stat


@dataclass(frozen=True)
class OneSidedTest:
    r"""An exact (or Monte Carlo) test of a one-sided alternative and of its reverse.

    ``statistic`` is the observed statistic, ``p_greater`` / ``p_less`` the p-values of
    "greater than the null" / "less than the null"; :attr:`status` applies level ``alpha``.
    ``as_dict`` names the statistic ``statistic_name``.
    """

    test: str
    n: int
    statistic: float
    p_greater: float
    p_less: float
    alpha: float = 0.05
    statistic_name: str = "statistic"

    @property
    def status(self) -> Status:
        """HOLDS if ``p_greater < alpha``; REFUTED if ``p_less < alpha``; else UNDECIDED."""
        if self.p_greater < self.alpha:
            return Status.HOLDS
        return Status.REFUTED if self.p_less < self.alpha else Status.UNDECIDED

    def as_dict(self) -> dict[str, float | str | int]:
        return {"test": self.test, "n": self.n, self.statistic_name: float(self.statistic),
                "p_greater": float(self.p_greater), "p_less": float(self.p_less), "alpha": self.alpha,
                "status": self.status.value}


@dataclass(frozen=True)
class PairedTest(OneSidedTest):
    """A paired test of ``mean(a - b) > 0`` (and of the reverse); ``statistic`` is the mean difference."""

    statistic_name: str = "mean_difference"

    @property
    def mean_difference(self) -> float:
        return self.statistic


def sign_test(diffs: Sequence[float] | np.ndarray, *, alpha: float = 0.05) -> PairedTest:
    """Exact sign test (``scipy.stats.binomtest``) on the paired differences, ties dropped."""
    d = np.asarray(diffs, float)
    d = d[np.isfinite(d)]
    pos, neg = int((d > 0).sum()), int((d < 0).sum())
    k = pos + neg
    if k == 0:
        return PairedTest("sign", 0, 0.0, 1.0, 1.0, alpha)
    pg = _st.binomtest(pos, k, 0.5, alternative="greater").pvalue
    pl = _st.binomtest(pos, k, 0.5, alternative="less").pvalue
    return PairedTest("sign", int(d.size), float(d.mean()), float(pg), float(pl), alpha)


def permutation_test(diffs: Sequence[float] | np.ndarray, *, alpha: float = 0.05, n_resamples: int = 20000,
                     seed: int = 0) -> PairedTest:
    r"""Paired (sign-flip) permutation test of the mean difference (``scipy.stats.permutation_test``).

    Exact over all :math:`2^n` sign flips when :math:`2^n \le` ``n_resamples``, Monte Carlo otherwise.
    """
    d = np.asarray(diffs, float)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return PairedTest("permutation", int(d.size), float(d.mean()) if d.size else 0.0, 1.0, 1.0, alpha)

    def stat(x, axis=-1):
        return np.mean(x, axis=axis)

    out = {}
    for alt in ("greater", "less"):
        res = _st.permutation_test((d,), stat, permutation_type="samples", alternative=alt,
                                   n_resamples=n_resamples, random_state=seed)
        out[alt] = float(res.pvalue)
    exact = 2 ** d.size <= n_resamples
    return PairedTest("permutation (exact)" if exact else "permutation (MC)", int(d.size), float(d.mean()),
                      out["greater"], out["less"], alpha)


def paired_test_power(diffs: Sequence[float] | np.ndarray, quantity: str, *, alpha: float = 0.05,
                      power: float = 0.8, size_name: str = "paired units") -> PowerLine:
    r"""Units needed for a one-sided paired test at level ``alpha`` to detect the observed mean
    difference with probability ``power``: :math:`n^\ast = ((z_{1-\alpha}+z_{\text{power}})\,s/|\bar d|)^2`."""
    d = np.asarray(diffs, float)
    d = d[np.isfinite(d)]
    m, s = float(d.mean()), float(d.std(ddof=1)) if d.size > 1 else float("nan")
    if d.size and abs(m) <= 1e-12 * max(1.0, float(np.abs(d).max())):
        m = 0.0  # a round-off mean of differences that cancel (e.g. accuracies k/n): no size decides it
    z = _st.norm.ppf(1 - alpha) + _st.norm.ppf(power)
    needed = (z * s / abs(m)) ** 2 if m != 0 and np.isfinite(s) else float("inf")
    hw = float(_st.t.ppf(0.975, max(d.size - 1, 1)) * s / np.sqrt(d.size)) if d.size > 1 else float("inf")
    return PowerLine(quantity, hw, abs(m), size_name, float(d.size), float(needed))
