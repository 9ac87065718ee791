"""Statistics shared by the claim criteria of all four papers (one home for each helper).

* intervals: :class:`Interval`, :func:`bootstrap_ci`, :func:`paired_bootstrap`,
  :func:`hierarchical_bootstrap` (outer: teacher / data draw, inner: init seed), fits
  (:func:`linear_fit`, :func:`powerlaw_fit`, :func:`bootstrap_slope`, :func:`powerlaw_wls_fit` on raw
  values), :func:`crossed_bootstrap` (rows x columns, e.g. model families x shared test points);
* decisions (CLAIMS.md rules 1-2): :func:`at_least`, :func:`at_most` (one-sided),
  :func:`equivalence` (a stated margin; a wide interval never passes), :func:`combine`;
* exact paired tests for few units: :func:`sign_test`, :func:`permutation_test`;
* the power line of an undecided entry (rule 5): :func:`power_line`, :func:`paired_test_power`;
* distances and associations: :func:`rel_frobenius`, :func:`spearman`, :func:`spearman_ci`,
  :func:`stratified_spearman_ci`, :func:`ks_distance`, :func:`effective_rank`,
  :func:`participation_ratio`.

All functions are deterministic given their ``seed`` so that ledger numbers repeat exactly.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval ``[low, high]`` at ``level``."""

    value: float
    low: float
    high: float
    level: float = 0.95
    method: str = ""

    def contains(self, x: float) -> bool:
        """True if ``low <= x <= high``."""
        return self.low <= x <= self.high

    def below(self, x: float) -> bool:
        """True if the whole interval lies strictly below ``x``."""
        return self.high < x

    def above(self, x: float) -> bool:
        """True if the whole interval lies strictly above ``x``."""
        return self.low > x

    @classmethod
    def from_dict(cls, d: dict) -> "Interval":
        """Inverse of :meth:`as_dict` (reads a ledger/results ``measured`` block)."""
        return cls(float(d["value"]), float(d["ci_low"]), float(d["ci_high"]), float(d.get("ci_level", 0.95)),
                   str(d.get("method", "")))

    @property
    def half_width(self) -> float:
        """The larger distance from the point estimate to an interval end."""
        return float(max(self.value - self.low, self.high - self.value))

    def inside(self, low: float, high: float) -> bool:
        """True if the whole interval lies inside ``[low, high]``."""
        return low <= self.low and self.high <= high

    def as_dict(self) -> dict[str, float | str]:
        """JSON form used in the ledger's ``measured`` block."""
        return {"value": float(self.value), "ci_low": float(self.low), "ci_high": float(self.high),
                "ci_level": float(self.level), "method": self.method}


def bootstrap_ci(samples: Sequence[float] | np.ndarray, statistic: Callable[[np.ndarray], float] = np.mean,
                 *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> Interval:
    r"""Percentile bootstrap interval of ``statistic`` over the first axis of ``samples``.

    Resamples rows with replacement ``n_boot`` times; the interval is the
    :math:`[(1-\ell)/2, (1+\ell)/2]` quantiles of the resampled statistic.
    """
    x = np.asarray(samples)
    if x.shape[0] < 2:
        raise ValueError("bootstrap needs at least two samples")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.shape[0], size=(n_boot, x.shape[0]))
    boot = np.array([statistic(x[i]) for i in idx])
    a = (1 - level) / 2
    return Interval(float(statistic(x)), float(np.quantile(boot, a)), float(np.quantile(boot, 1 - a)),
                    level, f"percentile bootstrap, {n_boot} resamples")


def linear_fit(x: Sequence[float], y: Sequence[float], *, level: float = 0.95) -> tuple[Interval, Interval]:
    r"""Ordinary least squares :math:`y = a + b x`; returns (slope, intercept) with t-intervals.

    The slope interval is :math:`\hat b \pm t_{n-2,(1+\ell)/2}\,\mathrm{se}(\hat b)`.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if x.size < 3:
        raise ValueError("a fitted slope with an interval needs at least three points")
    res = _st.linregress(x, y)
    t = _st.t.ppf((1 + level) / 2, x.size - 2)
    slope = Interval(res.slope, res.slope - t * res.stderr, res.slope + t * res.stderr, level,
                     "OLS t-interval")
    icpt = Interval(res.intercept, res.intercept - t * res.intercept_stderr,
                    res.intercept + t * res.intercept_stderr, level, "OLS t-interval")
    return slope, icpt


def powerlaw_fit(x: Sequence[float], y: Sequence[float], *, level: float = 0.95) -> tuple[Interval, Interval]:
    r"""Fit :math:`y = C x^{b}` by OLS on :math:`\log y = \log C + b \log x`; returns (b, log C)."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("power-law fit needs positive x and y")
    return linear_fit(np.log(x), np.log(y), level=level)


def bootstrap_slope(x: np.ndarray, y_samples: np.ndarray, *, log: bool = True, n_boot: int = 2000,
                    level: float = 0.95, seed: int = 0, center: Callable = np.median) -> Interval:
    r"""Slope of ``center(y)`` vs ``x`` (log-log if ``log``) with a bootstrap over replicates.

    ``y_samples`` has shape ``(len(x), n_replicates)`` (e.g. seeds). Each bootstrap draw resamples
    the replicates at every ``x`` independently, recomputes the centre and refits the slope.
    """
    x = np.asarray(x, float)
    y = np.asarray(y_samples, float)
    tx = np.log(x) if log else x
    f = (lambda v: np.log(v)) if log else (lambda v: v)

    def slope_of(cy: np.ndarray) -> float:
        return float(np.polyfit(tx, f(cy), 1)[0])

    rng = np.random.default_rng(seed)
    point = slope_of(center(y, axis=1))
    boots = np.empty(n_boot)
    for b in range(n_boot):
        idx = rng.integers(0, y.shape[1], size=y.shape)
        boots[b] = slope_of(center(np.take_along_axis(y, idx, axis=1), axis=1))
    a = (1 - level) / 2
    return Interval(point, float(np.quantile(boots, a)), float(np.quantile(boots, 1 - a)), level,
                    f"bootstrap over replicates ({n_boot}), fit to {center.__name__}s")


def effective_rank(eigvals: Sequence[float] | np.ndarray) -> float:
    r"""Entropy effective rank (Roy & Vetterli 2007) of a PSD spectrum.

    :math:`\exp(-\sum_k p_k \log p_k)` with :math:`p_k = \lambda_k / \sum_j \lambda_j` over the
    eigenvalues clipped at 0 (round-off negatives). Shared by the framework (F3, F5, F6) and
    global-empirical-NTK (G3, G4) spectra.
    """
    lam = np.clip(np.asarray(eigvals, np.float64), 0.0, None)
    total = lam.sum()
    if total <= 0:
        raise ValueError("effective rank of a zero spectrum is undefined")
    p = lam[lam > 0] / total
    return float(np.exp(-(p * np.log(p)).sum()))


def participation_ratio(eigvals: Sequence[float] | np.ndarray) -> float:
    r"""Participation ratio :math:`(\sum_k\lambda_k)^2 / \sum_k\lambda_k^2` of a PSD spectrum.

    Eigenvalues are clipped at 0 (round-off negatives). It is :math:`n` for :math:`n` equal
    eigenvalues and 1 for a rank-one spectrum, and never exceeds :func:`effective_rank` (Renyi-2
    against Shannon entropy). For an operator :math:`G` on :math:`\mathbb R^m` it equals
    :math:`(\operatorname{tr} G)^2/\lVert G\rVert_F^2 = m\cos^2(G, I)`, the effective dimension of
    Hazelden et al.'s library kpflow (``Operator.effdim``; G3, G4).
    """
    lam = np.clip(np.asarray(eigvals, np.float64), 0.0, None)
    sq = float((lam ** 2).sum())
    if sq <= 0:
        raise ValueError("participation ratio of a zero spectrum is undefined")
    return float(lam.sum() ** 2 / sq)


# --------------------------------------------------------------------------------------------
# Decisions on intervals (CLAIMS.md, "How a criterion is written", rules 1-2)


class Status(str, enum.Enum):
    """Outcome of one part of a criterion: the paper's relation holds, is refuted, or is undecided."""

    HOLDS = "holds"
    REFUTED = "refuted"
    UNDECIDED = "undecided"


def at_least(iv: Interval, bound: float, *, refute_below: float | None = None) -> Status:
    r"""One-sided claim "the quantity exceeds ``bound``" (e.g. A beats B: difference > 0).

    Holds iff the whole interval lies above ``bound`` (:math:`\ell > b`); refuted iff it lies wholly
    below ``refute_below`` (default ``bound``): :math:`h < b_r`. Otherwise undecided.
    """
    r = bound if refute_below is None else refute_below
    if iv.high < r:
        return Status.REFUTED
    return Status.HOLDS if iv.low > bound else Status.UNDECIDED


def at_most(iv: Interval, bound: float, *, refute_above: float | None = None) -> Status:
    r"""One-sided claim "the quantity does not exceed ``bound``" (e.g. loss does not grow with T).

    Holds iff :math:`h \le b`; refuted iff :math:`\ell > b_r` (default :math:`b_r = b`); else undecided.
    A quantity that falls is consistent with the claim.
    """
    r = bound if refute_above is None else refute_above
    if iv.low > r:
        return Status.REFUTED
    return Status.HOLDS if iv.high <= bound else Status.UNDECIDED


def equivalence(iv: Interval, low: float, high: float) -> Status:
    r"""Equivalence with a stated margin: holds iff :math:`[\ell, h] \subseteq [a, b]`; refuted iff
    the interval lies wholly outside (:math:`h < a` or :math:`\ell > b`); otherwise undecided.

    An interval that merely contains the target is *undecided*: a wide interval never passes.
    """
    if low > high:
        raise ValueError("equivalence margin needs low <= high")
    if iv.high < low or iv.low > high:
        return Status.REFUTED
    return Status.HOLDS if (low <= iv.low and iv.high <= high) else Status.UNDECIDED


def combine(statuses: Sequence[Status | str]) -> Status:
    """All parts hold -> HOLDS; any part refuted -> REFUTED; otherwise UNDECIDED."""
    s = [Status(x) for x in statuses]
    if any(x is Status.REFUTED for x in s):
        return Status.REFUTED
    return Status.HOLDS if s and all(x is Status.HOLDS for x in s) else Status.UNDECIDED


# --------------------------------------------------------------------------------------------
# Power line (rule 5)


#: A power line extrapolates from one run's variance; beyond this factor over the size just run it
#: refuses to name a size and says "needs a larger run to tell" (issue 28 item 4).
MAX_EXTRAPOLATION = 10.0


@dataclass(frozen=True)
class PowerLine:
    r"""What an undecided interval reached and the size at which the same criterion would decide.

    With half-width :math:`w` at size :math:`n` and :math:`w \propto n^{-\gamma}` (:math:`\gamma=1/2`
    for means over seeds, examples or draws), the criterion decides once :math:`w` falls below the
    distance :math:`\delta` from the point estimate to the nearest threshold the interval straddles:
    :math:`n^\ast = n\,(w/\delta)^{1/\gamma}`. ``needed`` is ``inf`` when the point estimate sits on
    a threshold (no size decides).

    A power line never names a size at or below the one just run, and never one beyond
    :data:`MAX_EXTRAPOLATION` times it (:meth:`named`): where :math:`n^\ast \le n` (a skewed
    interval straddles a threshold that the variance alone says this size should clear) or
    :math:`n^\ast > 10n`, the text says "needs a larger run to tell" and states the range
    (size measured vs size extrapolated) instead of a size.
    """

    quantity: str
    half_width: float
    needed_half_width: float
    size_name: str
    size: float
    needed: float

    def named(self) -> bool:
        """Whether the line names ``needed`` as the deciding size: finite, above the size just run,
        and within :data:`MAX_EXTRAPOLATION` times it."""
        return bool(np.isfinite(self.needed) and self.size < self.needed <= MAX_EXTRAPOLATION * self.size)

    def _tail(self) -> str:
        """The clause after the half-width: the deciding size, or why none is named."""
        if self.needed <= self.size:
            return (f"needs <= {self.needed_half_width:.3g}; the interval is skewed across the threshold, so the "
                    f"measured variance cannot say which {self.size_name} decides: needs a larger run to tell "
                    f"(more than {self.size_name}={self.size:g})")
        if self.needed > MAX_EXTRAPOLATION * self.size:
            return (f"needs <= {self.needed_half_width:.3g}, beyond {MAX_EXTRAPOLATION:g}x the {self.size_name} run "
                    f"(measured at {self.size:g}; the variance extrapolates to ~{int(np.ceil(self.needed)):d}, "
                    f"too far to trust): needs a larger run to tell")
        return (f"needs <= {self.needed_half_width:.3g}, i.e. {self.size_name} ~ {int(np.ceil(self.needed)):d} "
                f"at the measured variance")

    def text(self) -> str:
        """One line for the ledger and the report."""
        if not np.isfinite(self.needed):
            return (f"{self.quantity}: half-width {self.half_width:.3g}; the point estimate lies on a threshold, "
                    f"so no {self.size_name} decides it")
        return f"{self.quantity}: half-width {self.half_width:.3g} at {self.size_name}={self.size:g}; {self._tail()}"

    def as_dict(self) -> dict[str, float | str]:
        return {"quantity": self.quantity, "half_width": float(self.half_width),
                "needed_half_width": float(self.needed_half_width), "size_name": self.size_name,
                "size": float(self.size), "needed": float(self.needed), "named": self.named(),
                "text": self.text()}


@dataclass(frozen=True)
class NotePowerLine(PowerLine):
    """A power line whose undecided part is not a sample-size question (no size of the design decides it,
    too many runs diverged, ...): its text is the quantity and the ``note`` saying why."""

    note: str = ""

    def text(self) -> str:
        return f"{self.quantity}: {self.note}"


def mean_t_interval(values: Sequence[float] | np.ndarray, level: float = 0.95, *, unit: str = "seed",
                    method: str | None = None) -> Interval:
    r"""Mean of independent values with the Student-t interval :math:`\bar v \pm t_{n-1}\, s/\sqrt n`
    (symmetric about the mean, so it contains it; infinite for fewer than two values)."""
    v = np.asarray(values, float)
    m = float(v.mean())
    if v.size < 2:
        return Interval(m, -np.inf, np.inf, level, f"single {unit}: no interval")
    half = float(_st.t.ppf((1 + level) / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return Interval(m, m - half, m + half, level, method or f"t-interval over {v.size} {unit}s")


def power_line(quantity: str, iv: Interval, thresholds: Sequence[float], *, size: float, size_name: str,
               rate: float = 0.5) -> PowerLine | None:
    r"""Power line of ``iv`` against the criterion's ``thresholds``; ``None`` if no threshold is straddled.

    The needed half-width is :math:`\delta = \min_t |\hat v - t|` over the thresholds :math:`t` inside
    :math:`[\ell, h]`; the half-width is the larger of :math:`\hat v-\ell` and :math:`h-\hat v` (a
    percentile interval can be skewed). ``rate`` is :math:`\gamma` in :math:`w\propto n^{-\gamma}`.
    """
    inside = [t for t in thresholds if iv.low <= t <= iv.high]
    if not inside:
        return None
    hw = float(max(iv.value - iv.low, iv.high - iv.value))
    delta = float(min(abs(iv.value - t) for t in inside))
    needed = size * (hw / delta) ** (1.0 / rate) if delta > 0 and hw > 0 else float("inf")
    return PowerLine(quantity, hw, delta, size_name, float(size), float(needed))


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


# --------------------------------------------------------------------------------------------
# Distances and associations used by several papers


def rel_frobenius(a: np.ndarray, b: np.ndarray) -> float:
    r""":math:`\lVert A - B\rVert_F / \lVert B\rVert_F` (``b`` is the reference)."""
    a, b = np.asarray(a), np.asarray(b)
    nb = float(np.linalg.norm(b))
    if nb == 0:
        raise ValueError("relative distance to a zero reference")
    return float(np.linalg.norm(a - b) / nb)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (``scipy.stats.spearmanr``); 0.0 if either input is constant."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0
    return float(_st.spearmanr(x, y).statistic)


def spearman_ci(x: Sequence[float], y: Sequence[float], *, n_boot: int = 2000, level: float = 0.95,
                seed: int = 0) -> Interval:
    """Spearman correlation with a percentile bootstrap over the (x, y) pairs."""
    z = np.column_stack([np.asarray(x, float), np.asarray(y, float)])
    iv = bootstrap_ci(z, lambda u: spearman(u[:, 0], u[:, 1]), n_boot=n_boot, level=level, seed=seed)
    return Interval(iv.value, iv.low, iv.high, iv.level, "Spearman, " + iv.method)


def stratified_spearman_ci(x: Sequence[float], y: Sequence[float], strata: Sequence, *, n_boot: int = 2000,
                           level: float = 0.95, seed: int = 0, min_size: int = 3) -> Interval:
    r"""Mean over strata of the within-stratum Spearman correlation, :math:`\bar\rho = \frac1K\sum_k \rho_k`,
    with a percentile bootstrap that resamples the (x, y) pairs within each stratum (sizes fixed).

    An association that must hold *within* groups (e.g. across initialisations of one model) is
    not confounded by differences between the groups, which a pooled correlation would mix in
    (Simpson's paradox). Strata with fewer than ``min_size`` pairs are left out.
    """
    x, y, s = np.asarray(x, float), np.asarray(y, float), np.asarray(strata)
    groups = [np.flatnonzero(s == k) for k in np.unique(s)]
    groups = [g for g in groups if g.size >= min_size]
    if not groups:
        raise ValueError(f"no stratum has {min_size} or more pairs")
    rng = np.random.default_rng(seed)

    def stat(idx: list[np.ndarray]) -> float:
        return float(np.mean([spearman(x[i], y[i]) for i in idx]))

    boots = np.array([stat([g[rng.integers(0, g.size, g.size)] for g in groups]) for _ in range(n_boot)])
    a = (1 - level) / 2
    return Interval(stat(groups), float(np.quantile(boots, a)), float(np.quantile(boots, 1 - a)), level,
                    f"mean within-stratum Spearman ({len(groups)} strata), stratified percentile bootstrap, "
                    f"{n_boot} resamples")


def ks_distance(samples: Sequence[float] | np.ndarray, cdf: str | Callable = "norm", args: tuple = ()) -> float:
    """Kolmogorov-Smirnov distance of ``samples`` to ``cdf`` (``scipy.stats.kstest``)."""
    return float(_st.kstest(np.asarray(samples, float), cdf, args=args).statistic)


# --------------------------------------------------------------------------------------------
# A raw-scale power-law fit with a bootstrap interval; a crossed (two-way) bootstrap


def powerlaw_wls_fit(x: Sequence[float], y: Sequence[float], y_boot: np.ndarray, *,
                     sigma: Sequence[float] | None = None, level: float = 0.95,
                     b_range: tuple[float, float] = (-4.0, 2.0), b_step: float = 1e-3) -> tuple[Interval, Interval]:
    r"""Weighted least squares :math:`y \approx a\,x^{b}` on the *raw* values of ``y``, with a
    bootstrap interval; returns ``(b, a)``.

    Minimises :math:`S(a, b) = \sum_i w_i (y_i - a x_i^b)^2` with :math:`w_i = \sigma_i^{-2}`. For
    fixed :math:`b` the best :math:`a` is :math:`a(b) = \sum_i w_i y_i x_i^b / \sum_i w_i x_i^{2b}`,
    so :math:`S` is profiled over a grid of :math:`b` in ``b_range`` (step ``b_step``; an estimate on
    the grid's edge means the data ask for a law outside it). Because :math:`y` is fitted directly,
    values near or below 0 (e.g. a small excess kurtosis estimated negative in a sample) enter as
    measured, with their own uncertainty, instead of being dropped or logged.

    ``y_boot`` (shape ``(B, n)``) holds bootstrap replicates of ``y`` -- each row one resample of
    all the data behind ``y``; each row is refitted with the same weights and the interval is the
    percentile interval of the refitted :math:`b` (and :math:`a`). ``sigma`` defaults to the
    standard deviations of the columns of ``y_boot``.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    yb = np.asarray(y_boot, float)
    if np.any(x <= 0):
        raise ValueError("power-law fit needs positive x")
    if yb.ndim != 2 or yb.shape[1] != x.size or y.shape != x.shape:
        raise ValueError(f"y_boot must have shape (B, {x.size}), got {yb.shape}")
    s = yb.std(axis=0, ddof=1) if sigma is None else np.asarray(sigma, float)
    if np.any(~np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("sigma must be positive and finite")
    w = 1.0 / s**2
    grid = np.arange(b_range[0], b_range[1] + b_step / 2, b_step)
    xb = x[None, :] ** grid[:, None]                     # (G, n)
    den = (w * xb**2).sum(axis=1)                         # (G,)

    def fit(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        bs, as_ = [], []
        for chunk in np.array_split(rows, max(1, int(np.ceil(rows.shape[0] / 256)))):
            num = (chunk * w) @ xb.T                      # (c, G)
            j = np.argmax(num**2 / den, axis=1)           # min S  <=>  max num^2 / den
            bs.append(grid[j])
            as_.append(num[np.arange(chunk.shape[0]), j] / den[j])
        return np.concatenate(bs), np.concatenate(as_)

    (b0,), (a0,) = fit(y[None, :])
    bb, ab = fit(yb)
    q = ((1 - level) / 2, (1 + level) / 2)
    method = f"weighted LS on raw values, b profiled on [{b_range[0]:g}, {b_range[1]:g}], bootstrap ({yb.shape[0]})"
    return (Interval(float(b0), float(np.quantile(bb, q[0])), float(np.quantile(bb, q[1])), level, method),
            Interval(float(a0), float(np.quantile(ab, q[0])), float(np.quantile(ab, q[1])), level, method))


def crossed_bootstrap(y: np.ndarray, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> Interval:
    r"""Grand mean of ``y`` (``n_rows x n_cols``) with a bootstrap resampling rows *and* columns.

    For a crossed design -- e.g. model families (rows) evaluated on the same validation points
    (columns) -- each replicate draws rows :math:`I` and columns :math:`J` independently with
    replacement and takes :math:`\overline{y_{IJ}}`, so both sources of variation enter the
    percentile interval (the two-way bootstrap; slightly conservative).
    """
    y = np.asarray(y, float)
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError("a crossed bootstrap needs at least two rows and two columns")
    n_r, n_c = y.shape
    rng = np.random.default_rng(seed)
    rows = np.stack([np.bincount(rng.integers(0, n_r, n_r), minlength=n_r) for _ in range(n_boot)]) / n_r
    cols = np.stack([np.bincount(rng.integers(0, n_c, n_c), minlength=n_c) for _ in range(n_boot)]) / n_c
    boots = np.einsum("br,rc,bc->b", rows, y, cols)
    a = (1 - level) / 2
    return Interval(float(y.mean()), float(np.quantile(boots, a)), float(np.quantile(boots, 1 - a)), level,
                    f"crossed bootstrap (rows x columns = {n_r} x {n_c}), {n_boot} resamples")


@dataclass(frozen=True)
class CrossedPowerLine(PowerLine):
    """The power line of one factor of a crossed (rows x columns) mean, the other factor held at its size."""

    other: str = ""
    share: float = 1.0

    def text(self) -> str:
        head = (f"{self.quantity}: half-width {self.half_width:.3g} at {self.size_name}={self.size:g} "
                f"({self.other}; {self.size_name} carry {100 * self.share:.0f}% of the variance)")
        if not np.isfinite(self.needed):
            return (f"{head}; needs <= {self.needed_half_width:.3g}, which no number of {self.size_name} reaches: "
                    f"the rest of the variance alone is wider")
        return f"{head}; {self._tail()}"


def crossed_power_lines(quantity: str, y: np.ndarray, iv: Interval, thresholds: Sequence[float], *,
                        row_name: str, col_name: str, n_boot: int = 2000, level: float = 0.95,
                        seed: int = 0) -> list[PowerLine]:
    r"""Power lines, one per factor, of a :func:`crossed_bootstrap` interval ``iv`` of ``y`` (rows x columns).

    A crossed mean's variance has a row and a column part; adding rows shrinks only the first. The parts
    are split by the one-way bootstrap half-widths :math:`w_r` (of the row means) and :math:`w_c` (of
    the column means): share :math:`p_r = w_r^2/(w_r^2+w_c^2)`. With the measured half-width :math:`w`
    and the distance :math:`\delta` to the straddled threshold, :math:`n_r` rows decide at
    :math:`n_r^\ast = n_r\,p_r w^2/(\delta^2-(1-p_r)w^2)`, and no number of rows does when
    :math:`(1-p_r)w^2 \ge \delta^2`; likewise for columns. Empty if no threshold is straddled.
    """
    inside = [t for t in thresholds if iv.low <= t <= iv.high]
    if not inside:
        return []
    y = np.asarray(y, float)
    hw = float(max(iv.value - iv.low, iv.high - iv.value))
    delta = float(min(abs(iv.value - t) for t in inside))
    b = dict(n_boot=n_boot, level=level, seed=seed)
    w_r = bootstrap_ci(y.mean(axis=1), **b).half_width
    w_c = bootstrap_ci(y.mean(axis=0), **b).half_width
    total = w_r ** 2 + w_c ** 2
    share_r = w_r ** 2 / total if total > 0 else 0.5
    lines: list[PowerLine] = []
    for name, n, share, other, n_other in ((row_name, y.shape[0], share_r, col_name, y.shape[1]),
                                           (col_name, y.shape[1], 1.0 - share_r, row_name, y.shape[0])):
        rest = (1.0 - share) * hw ** 2
        needed = n * share * hw ** 2 / (delta ** 2 - rest) if delta ** 2 > rest and share > 0 else float("inf")
        lines.append(CrossedPowerLine(quantity, hw, delta, name, float(n), float(needed),
                                      other=f"{other} held at {n_other}", share=float(share)))
    return lines


# --------------------------------------------------------------------------------------------
# Exact test of a rank correlation across few units


@dataclass(frozen=True)
class CorrelationTest(OneSidedTest):
    """A permutation test of a rank correlation between paired units (``p_greater``: positive association)."""


def spearman_permutation_test(x: Sequence[float], y: Sequence[float], *, alpha: float = 0.05,
                              n_resamples: int = 50000, seed: int = 0) -> CorrelationTest:
    r"""Permutation test of Spearman's :math:`\rho(x, y)` over the pairings of few units
    (``scipy.stats.permutation_test``, ``permutation_type='pairings'``).

    Exact -- all :math:`n!` pairings -- when :math:`n! \le` ``n_resamples`` (:math:`n \le 8` by
    default), Monte Carlo otherwise. With :math:`n` units the smallest attainable one-sided p-value
    is :math:`1/n!` (e.g. 1/24 for four units), so few units can decide only a near-perfect ordering.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"need two 1-D arrays of equal length, got {x.shape} and {y.shape}")
    rho = spearman(x, y)
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return CorrelationTest("Spearman permutation", int(x.size), rho, 1.0, 1.0, alpha)

    def stat(a, axis=-1):
        ra = _st.rankdata(a, axis=axis)
        ry = _st.rankdata(y)
        ra = ra - ra.mean(axis=axis, keepdims=True)
        ry = ry - ry.mean()
        return (ra * ry).sum(axis=axis) / np.sqrt((ra ** 2).sum(axis=axis) * (ry ** 2).sum())

    out = {}
    for alt in ("greater", "less"):
        res = _st.permutation_test((x,), stat, permutation_type="pairings", alternative=alt,
                                   n_resamples=n_resamples, random_state=seed, vectorized=True)
        out[alt] = float(res.pvalue)
    exact = float(np.prod(np.arange(1, x.size + 1, dtype=float))) <= n_resamples
    return CorrelationTest("Spearman permutation (exact)" if exact else "Spearman permutation (MC)", int(x.size),
                           rho, out["greater"], out["less"], alpha)
