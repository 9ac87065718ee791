"""G3's initial-scale sweep, read as criterion v6 did (:func:`g3_scale_sweep`; reported beside the verdict,
never judged, since v7): which runs learned, one point per distinct run, the mean within-model Spearman
correlation of initial participation ratio and loss ratio with a bootstrap over seeds, and the sweep's
thresholds.

Split out of :mod:`ntkrepro.hazelden2026.claims` (issue 40: no module over 600 lines), which re-exports every
name; the criterion (``evaluate_g3``: the planted-fixed-point comparison, v8) stays there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as _st

from ntkrepro.ledger import Evaluation, Results, Verdict, one_result, verdict_of
from ntkrepro.stats import (Interval, NotePowerLine, PowerLine, Status, at_most, combine, mean_t_interval, power_line,
                            spearman, spearman_ci)

#: G3 thresholds (criterion version 5).
G3_REF_SCALE = 1.0          # reference initialisation: recurrent weights N(0, 1/H), the classical critical scale
G3_LOW_RANK_RATIO = 0.5     # low rank: PR(g) at most half the PR at g = 1 (upper end of the seed interval)
# G3_SAME_RUN_RTOL = 0.01: runs within 1 % are one point (ntkrepro.hazelden2026.g3_points, imported above)
G3_MAX_DIVERGED = 1 / 3     # more diverged runs than this share: inconclusive
G3_MIN_SEEDS = 5            # fewer seeds: the bootstrap over seeds is not trusted (undecided)
G3_MIN_RUNS = 10            # fewer distinct non-diverged runs: the correlation is not trusted (undecided)
G3_MIN_PER_MODEL = 4        # a model with fewer distinct runs is left out of the within-model correlation
G3_N_BOOT = 2000
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


def g3_scale_sweep(results: Results, scale: str) -> Evaluation:
    """The initial-scale sweep read as criterion v6 did (parts (a) low rank relative to g = 1 and (b) the
    within-model rank-learning correlation): since v7 reported beside the verdict, never judged."""
    r = one_result(results, "G3_rnn")
    runs = r["runs"]
    n_runs = len(runs)
    seeds = sorted({u["seed"] for u in runs})
    models = sorted({u["model"] for u in runs})
    configs = sorted({(u["model"], u["scale"]) for u in runs})
    pr = {(u["model"], u["scale"], u["seed"]): u["pr_full"] for u in runs}
    # (a) low rank relative to the reference scale g = 1, paired by seed, interval over seeds
    targets = [(m, g) for m, g in configs if g != G3_REF_SCALE]
    has_ref = {m: any(g == G3_REF_SCALE for mm, g in configs if mm == m) for m in models}
    level = 1 - 0.05 / max(1, len(targets))  # Bonferroni: "at least one initialisation" is a search over them
    log_ratio: dict[tuple[str, float], Interval] = {}
    for m, g in targets:
        if not has_ref[m]:
            continue
        v = [np.log(pr[(m, g, s)] / pr[(m, G3_REF_SCALE, s)]) for s in seeds
             if (m, g, s) in pr and (m, G3_REF_SCALE, s) in pr]
        if v:
            log_ratio[(m, g)] = mean_t_interval(v, level, unit="seed")
    bound = float(np.log(G3_LOW_RANK_RATIO))
    st_low = {c: at_most(iv, bound) for c, iv in log_ratio.items()}
    if any(s is Status.HOLDS for s in st_low.values()):
        low_status = Status.HOLDS
    elif st_low and all(has_ref.values()) and all(s is Status.REFUTED for s in st_low.values()):
        low_status = Status.REFUTED
    else:
        low_status = Status.UNDECIDED

    def _ratio_iv(c):
        iv = log_ratio[c]
        return Interval(float(np.exp(iv.value)), float(np.exp(iv.low)), float(np.exp(iv.high)), iv.level,
                        f"PR(g)/PR(g={G3_REF_SCALE:g}), geometric mean over seeds, " + iv.method)

    best = (min(log_ratio, key=lambda c: log_ratio[c].high if np.isfinite(log_ratio[c].high) else log_ratio[c].value)
            if log_ratio else None)
    # (b) association over all distinct runs, bootstrap over seeds; a run that diverged or has no finite loss
    # ratio did not learn: the paper's plateau case, ranked as the worst learner (loss ratio +inf), never dropped
    ok = [u for u in runs if _learned(u)]
    n_div = n_runs - len(ok)
    points = _distinct_points([{**u, "loss_ratio": _learning_score(u)} for u in runs])
    judged = [m for m in models if sum(p["model"] == m for p in points) >= G3_MIN_PER_MODEL]
    rho = (_seed_bootstrap_spearman(points, judged, G3_N_BOOT) if judged
           else Interval(0.0, -1.0, 1.0, 0.95, "no model with enough distinct runs"))
    pooled = (spearman_ci([p["pr_full"] for p in points], _st.rankdata([p["loss_ratio"] for p in points]),
                          n_boot=G3_N_BOOT, seed=0)
              if len(points) >= 3 else Interval(0.0, -1.0, 1.0))
    enough = len(seeds) >= G3_MIN_SEEDS and len(points) >= G3_MIN_RUNS and bool(judged) and np.isfinite(rho.value)
    corr_status = at_most(rho, 0.0) if enough else Status.UNDECIDED
    too_many_diverged = n_div > G3_MAX_DIVERGED * n_runs
    overall = combine([low_status, corr_status])
    verdict = Verdict.INCONCLUSIVE if too_many_diverged else verdict_of(overall)
    power: list[PowerLine] = []
    if verdict is Verdict.INCONCLUSIVE:
        if too_many_diverged:
            power.append(NotePowerLine("diverged runs", float(n_div) / n_runs, G3_MAX_DIVERGED, "runs", float(n_runs),
                                       float("inf"), note=(f"{n_div} of {n_runs} runs diverged (> 1/3): a smaller "
                                                           "learning rate, not more runs, decides this")))
        if corr_status is Status.UNDECIDED:
            pl = (power_line("within-model Spearman(initial PR, loss ratio)", rho, [0.0], size=len(seeds),
                             size_name="seeds") if enough else None)
            power.append(pl if pl is not None else NotePowerLine(
                "within-model Spearman(initial PR, loss ratio)", rho.half_width, 0.0, "seeds", float(len(seeds)),
                float(G3_MIN_SEEDS), note=(f"{len(seeds)} seeds (>= {G3_MIN_SEEDS} needed) and {len(points)} distinct "
                                           f"non-diverged runs (>= {G3_MIN_RUNS} needed): too few to trust the "
                                           "seed bootstrap")))
        if low_status is Status.UNDECIDED:
            if not all(has_ref.values()) or not log_ratio:
                power.append(NotePowerLine("PR relative to g = 1", 0.0, bound, "runs", 0.0, float("inf"),
                                           note=f"the sweep lacks the reference scale g = {G3_REF_SCALE:g} for "
                                                f"{[m for m in models if not has_ref[m]]}: add it"))
            else:
                straddle = [c for c in log_ratio if log_ratio[c].low <= bound < log_ratio[c].high]
                c = min(straddle, key=lambda c: log_ratio[c].value) if straddle else best
                pl = power_line(f"log PR ratio to g=1 of {c[0]} at scale {c[1]:.3g}", log_ratio[c], [bound],
                                size=len(seeds), size_name="seeds")
                power.append(pl if pl is not None else NotePowerLine(
                    "PR ratio to g = 1", 0.0, G3_LOW_RANK_RATIO, "seeds", float(len(seeds)), float("inf"),
                    note="a single seed gives no interval; >= 2 seeds per initialisation are needed"))
    per_model = {m: spearman([p["pr_full"] for p in points if p["model"] == m],
                             _st.rankdata([p["loss_ratio"] for p in points if p["model"] == m])) for m in models}
    lowest = _ratio_iv(best) if best else Interval(float("nan"), float("nan"), float("nan"), 0.95, "no g = 1 run")
    measured: dict[str, Any] = {
        "spearman_pr_vs_loss_ratio_within_model": rho,
        "lowest_pr_ratio_to_g1": lowest,
        "spearman_pr_vs_loss_ratio_pooled": pooled,
        "lowest_pr_ratio_config": f"{best[0]} scale {best[1]:.3g}" if best else "none",
        "pr_ratio_to_g1_mean": {f"{m}_s{g:.3g}": float(np.exp(iv.value)) for (m, g), iv in log_ratio.items()},
        "n_distinct_points": len(points),
        "distinct_points": {m: [[p["seed"], p["scales"]] for p in points if p["model"] == m] for m in models},
        "spearman_pr_vs_loss_ratio_per_model": per_model,
        "pr_fraction_mean": {f"{m}_s{g:.3g}": float(np.mean([u["pr_full"] / u["dim_full"] for u in runs
                                                              if u["model"] == m and u["scale"] == g]))
                             for m, g in configs},
        "pr_space_frac_mean": {f"{m}_s{g:.3g}": float(np.mean([u["pr_space"] / u["dim_space"] for u in runs
                                                                if u["model"] == m and u["scale"] == g]))
                               for m, g in configs},
        "pr_time_frac_mean": {f"{m}_s{g:.3g}": float(np.mean([u["pr_time"] / u["dim_time"] for u in runs
                                                               if u["model"] == m and u["scale"] == g]))
                              for m, g in configs},
        "loss_ratio_mean": {f"{m}_s{g:.3g}": float(np.mean([u["loss_ratio"] for u in runs
                                                             if u["model"] == m and u["scale"] == g]))
                            for m, g in configs},
        "diverged": [f"{_key(u)}_seed{u['seed']}" for u in runs if u not in ok],
        "diverged_ranked_worst": n_div,
        "n_runs": n_runs,
        "n_seeds": len(seeds),
        "init_scales": sorted({u["scale"] for u in runs}),
    }
    parts = {"a_low_rank": low_status, "b_rank_vs_learning": corr_status}
    a_txt = (f"lowest PR relative to g = 1: {lowest.value:.3g} [{lowest.low:.3g}, {lowest.high:.3g}] ({best[0]}, "
             f"scale {best[1]:.3g}; threshold {G3_LOW_RANK_RATIO:g})" if best else "no g = 1 reference run")
    reason = (f"(a) low rank {low_status.value}: {a_txt}; (b) {corr_status.value}: within-model Spearman(PR, loss "
              f"ratio) = {rho.value:.2f} [{rho.low:.2f}, {rho.high:.2f}] ("
              + ", ".join(f"{m.upper()} {v:+.2f}" for m, v in per_model.items())
              + f") over {len(points)} distinct runs of {len(seeds)} seeds ({n_div}/{n_runs} runs diverged or did not "
              f"learn: ranked as the worst learners), bootstrap over seeds; pooled {pooled.value:.2f} "
              f"[{pooled.low:.2f}, {pooled.high:.2f}]")
    subs = [] if scale == "paper" else [f"{scale} scale: sizes reduced from config/paper.yaml"]
    subs.append("flip-flop task with full-batch GD (kpflow's sweep: noisy memory-pro, Adam lr 1e-3, fresh batches, "
                "hidden 256)")
    subs.append("initial scale g = std x sqrt(H) of the recurrent weights (kpflow's init_level l multiplies "
                "PyTorch's U(+-1/sqrt(H)) init: g = l / sqrt(3))")
    if r["hidden"] < 256:
        subs.append(f"hidden {r['hidden']} (kpflow 256)")
    return Evaluation(measured, verdict, reason, substitutes=subs, power=power, parts=parts,
                      figure={"low_rank_ratio": G3_LOW_RANK_RATIO, "ref_scale": G3_REF_SCALE})
