"""Intervals, fits and the decisions on intervals (CLAIMS.md rules 1-2): :class:`Interval`,
:func:`bootstrap_ci`, :func:`linear_fit`, :func:`powerlaw_fit`, :func:`bootstrap_slope`, :func:`effective_rank`,
:func:`participation_ratio`; :class:`Status`, :func:`at_least`, :func:`at_most`, :func:`equivalence`,
:func:`combine`."""

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
