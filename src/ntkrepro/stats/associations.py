"""Distances and associations used by several papers, and the exact test of a rank correlation:
:func:`rel_frobenius`, :func:`spearman`, :func:`spearman_ci`, :func:`stratified_spearman_ci`,
:func:`ks_distance`, :class:`CorrelationTest`, :func:`spearman_permutation_test`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from ntkrepro.stats.intervals import Interval, bootstrap_ci
from ntkrepro.stats.paired import OneSidedTest


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
