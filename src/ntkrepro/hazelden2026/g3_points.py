"""G3's scale-sweep reading, its points and statistics: which runs learned, one point per distinct run, and
the mean within-model Spearman correlation of initial participation ratio and loss ratio with a bootstrap over
seeds.

Split out of :mod:`ntkrepro.hazelden2026.claims` (issue 40: no module over 600 lines), which re-exports every
name (``G3_SAME_RUN_RTOL`` among its G3 thresholds); the criterion (``evaluate_g3``, ``g3_scale_sweep``) stays
there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as _st

from ntkrepro.stats import Interval

#: G3 (criterion version 5): the distinct-point rule of :func:`_distinct_points`.
G3_SAME_RUN_RTOL = 0.01     # runs whose PR and loss ratio agree within 1% are one point (the same network)


def _learned(u: dict[str, Any]) -> bool:
    """A run learned (has a usable loss ratio) unless it diverged or its loss ratio is not finite."""
    return not u["diverged"] and bool(np.isfinite(u["loss_ratio"]))


def _learning_score(u: dict[str, Any]) -> float:
    """The quantity ranked in part (b): the loss ratio (lower = learned more); +inf for a run that diverged or did
    not learn (criterion version 6: the paper's plateau case, ranked as the worst learner, never dropped)."""
    return float(u["loss_ratio"]) if _learned(u) else float("inf")


def _key(u: dict[str, Any]) -> str:
    return f"{u['model']}_s{u['scale']:.3g}"


def _distinct_points(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    r"""One point per distinct run (criterion version 5): within each (model, seed), the runs in increasing
    initial scale; a run whose participation ratio and loss ratio both lie within :data:`G3_SAME_RUN_RTOL`
    (relative) of those of the current point's first run is the same point (small scales, where the recurrent
    weights are negligible, give the same network); a point is represented by its first (smallest-scale) run
    and lists the scales it covers."""
    def close(a: float, b: float) -> bool:
        if not (np.isfinite(a) and np.isfinite(b)):
            return a == b          # two runs that did not learn (loss ratio +inf, worst) agree in learning
        return abs(a - b) <= G3_SAME_RUN_RTOL * abs(b)

    points = []
    for m, s in sorted({(u["model"], u["seed"]) for u in runs}):
        cur = None
        for u in sorted((u for u in runs if u["model"] == m and u["seed"] == s), key=lambda u: u["scale"]):
            same = cur is not None and all(close(u[k], cur[k]) for k in ("pr_full", "loss_ratio"))
            if same:
                cur["scales"].append(u["scale"])
            else:
                cur = {"model": m, "seed": s, "scale": u["scale"], "scales": [u["scale"]],
                       "pr_full": u["pr_full"], "loss_ratio": u["loss_ratio"]}
                points.append(cur)
    return points


def _spearman_fast(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman correlation (Pearson correlation of average ranks, as ``scipy.stats.spearmanr``; 0.0 if either
    input is constant, as :func:`ntkrepro.stats.spearman`) without scipy's per-call overhead (bootstrap loops)."""
    rx, ry = _st.rankdata(x), _st.rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = float(np.sqrt((rx @ rx) * (ry @ ry)))
    return float(rx @ ry / den) if den > 0 else 0.0


def _within_model_spearman(points: list[dict[str, Any]], models: list[str]) -> float:
    """Mean over ``models`` of the Spearman correlation between initial PR and loss ratio of their points
    (a model with fewer than 3 points in ``points`` is left out; NaN if none is left)."""
    rhos = []
    for m in models:
        pm = [p for p in points if p["model"] == m]
        if len(pm) >= 3:
            rhos.append(_spearman_fast(np.array([p["pr_full"] for p in pm]), np.array([p["loss_ratio"] for p in pm])))
    return float(np.mean(rhos)) if rhos else float("nan")


def _seed_bootstrap_spearman(points: list[dict[str, Any]], models: list[str], n_boot: int, seed: int = 0) -> Interval:
    """:func:`_within_model_spearman` with a 95% percentile bootstrap that resamples seeds (every point of a
    drawn seed, of every model, enters together: the runs of one seed share its data and weight draw)."""
    seeds = sorted({p["seed"] for p in points})
    value = _within_model_spearman(points, models)
    if len(seeds) < 2:
        return Interval(value, -1.0, 1.0, 0.95, "single seed: no interval")
    by_seed = {s: [p for p in points if p["seed"] == s] for s in seeds}
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(n_boot):
        draw = rng.choice(len(seeds), len(seeds), replace=True)
        v = _within_model_spearman([p for i in draw for p in by_seed[seeds[i]]], models)
        if np.isfinite(v):
            stats.append(v)
    if not stats:
        return Interval(value, -1.0, 1.0, 0.95, "no resample with enough points")
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return Interval(value, float(lo), float(hi), 0.95,
                    f"mean within-model Spearman over distinct runs, percentile bootstrap over {len(seeds)} seeds")
