"""Pre-registered criteria of Hazelden et al. (TMLR 2026), claims G1-G4.

Each ``evaluate_*`` applies exactly the criterion text registered with it (pre-registered in
``claims.toml`` beside this module). Thresholds are module constants fixed before the results they
judge were computed; a criterion changed after results were seen carries an
:class:`~ntkrepro.ledger.Amendment` there (CLAIMS.md rule 6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as _st

from ntkrepro.ledger import Evaluation, Results, Verdict, decide, load_claim_spec, one_result, register, verdict_of
from ntkrepro.stats import (Interval, PowerLine, Status, at_least, at_most, bootstrap_ci, combine, power_line, spearman,
                            spearman_ci, stratified_spearman_ci)

PAPER = "hazelden2026"

#: Tolerances of G1/G2 (relative Frobenius error of the Kronecker core), from CLAIMS.md.
TOL = {"float64": 1e-10, "float32": 1e-5}
#: G1/G2: the comparison must discriminate -- the core built from row-permuted site variables (the
#: negative control) must differ from the autodiff core by at least this relative error at every site.
CONTROL_MIN = 1e-3

#: G1: the transformer of the paper's check.
G1_SETTING = {"d_model": 64, "n_heads": 1, "d_mlp": 128, "n_layers": 3, "seq_len": 50}
G1_KINDS = {"embed", "q", "k", "v", "o", "mlp_in", "mlp_out", "readout"}
G2_KINDS = {"attention.query_key_value", "attention.dense", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"}

#: G3 thresholds (criterion version 4).
G3_LOW_RANK_FRAC = 0.1      # PR(Theta_h) / N <= this (upper end of the seed interval): low-rank
G3_MAX_DIVERGED = 1 / 3     # more diverged runs than this share: inconclusive
G3_MIN_RUNS = 10            # fewer non-diverged runs: the correlation's bootstrap is not trusted (undecided)
G3_MIN_PER_MODEL = 4        # a model with fewer non-diverged runs is left out of the within-model correlation
G3_N_BOOT = 2000

#: G4 thresholds (criterion version 2).
G4_SLACK_MULT, G4_SLACK_ADD = 1.25, 1.0   # bounded: PR_time <= 1.25 PR(x) + 1
G4_CHECK_TOL = 1e-8                        # core-assembled GeNTK vs autodiff (validity)
G4_MIN_SEEDS = 5                           # fewer seeds: the bootstrap over seeds is not trusted (undecided)
G4_N_BOOT = 2000

#: Where G4 comes from (also stated in G4's pre-registered statement, claims.toml).
G4_SOURCE = ("the authors' library example (kpflow examples/transformer_validation/main.py, in older commits "
             "of github.com/meeree/kpflow) and an earlier version of the abstract; the abstract of the "
             "version in ../shared/seeds does not state this claim")


@dataclass(frozen=True)
class NotePowerLine(PowerLine):
    """A power line whose undecided part is not a sample-size question (e.g. too many runs diverged)."""

    note: str = ""

    def text(self) -> str:
        return f"{self.quantity}: {self.note}"


def _scale_note(scale: str) -> list[str]:
    return [] if scale == "paper" else [f"{scale} scale: sizes reduced from config/paper.yaml"]


def _coverage_line(quantity: str, have: int, need: int, size_name: str) -> PowerLine:
    """Power line of a deterministic check that is undecided because part of it was not computed."""
    return NotePowerLine(quantity, 0.0, 0.0, size_name, float(have), float(need),
                         note=f"{have} of {need} {size_name} computed; the check decides once all are present")


def _control_line(worst: float) -> PowerLine:
    return NotePowerLine("negative control", 0.0, CONTROL_MIN, "sites", 0.0, float("inf"),
                         note=(f"smallest control error {worst:.2e} < {CONTROL_MIN:g}: the comparison cannot tell a "
                               "wrong core from the right one on these inputs (use inputs with distinct rows)"))


# ---------------------------------------------------------------------------------------------
@register(load_claim_spec(PAPER, "G1"))
def evaluate_g1(results: Results, scale: str) -> Evaluation:
    r = one_result(results, "G1_")
    measured: dict[str, Any] = {}
    ok, bad = True, False
    controls = []
    for dname, tol in TOL.items():
        d = r["dtypes"][dname]
        mx = max(s["rel_error"] for s in d["sites"])
        measured[f"max_rel_error_{dname}"] = float(mx)
        ok &= mx <= tol
        bad |= mx > tol
        controls += [s.get("control_rel_error", float("nan")) for s in d["sites"]]
    worst_control = float(np.nanmin(controls)) if np.any(np.isfinite(controls)) else float("nan")
    discriminates = bool(np.all(np.isfinite(controls)) and worst_control >= CONTROL_MIN)
    measured["min_control_rel_error"] = worst_control
    kinds = {s["kind"] for s in r["dtypes"]["float64"]["sites"]}
    missing = G1_KINDS - kinds
    measured["n_sites"] = len(r["dtypes"]["float64"]["sites"])
    p = r["params"]
    subs = _scale_note(scale)
    diff = {k: p[k] for k, v in G1_SETTING.items() if p.get(k) != v}
    if diff:
        subs.append(f"transformer differs from the paper's check: {diff}")
    if p["batch"] < 5:
        subs.append(f"batch {p['batch']} < 5")
    if p["n_units"] < p["d_model"]:
        subs.append(f"autodiff block restricted to {p['n_units']} output units per site (all rows)")
    verdict = decide(reproduced=ok and not missing and discriminates, refuted=bad)
    power: list[PowerLine] = []
    if verdict is Verdict.INCONCLUSIVE:
        if missing:
            power.append(_coverage_line("site kinds", len(G1_KINDS) - len(missing), len(G1_KINDS), "site kinds"))
        if not discriminates:
            power.append(_control_line(worst_control))
    reason = (f"max rel. error fp64 {measured['max_rel_error_float64']:.2e} (tol 1e-10), "
              f"fp32 {measured['max_rel_error_float32']:.2e} (tol 1e-5) over {measured['n_sites']} sites; "
              f"smallest negative-control error {worst_control:.2e} (needs >= {CONTROL_MIN:g})"
              + (f"; missing site kinds {sorted(missing)}" if missing else ""))
    return Evaluation(measured, verdict, reason, substitutes=subs, power=power, figure={"tolerance": dict(TOL)})


# ---------------------------------------------------------------------------------------------
@register(load_claim_spec(PAPER, "G2"))
def evaluate_g2(results: Results, scale: str) -> Evaluation:
    r = one_result(results, "G2_")
    sites = r["sites"]
    layers = sorted({s["layer"] for s in sites})
    per_layer = [max(s["rel_error"] for s in sites if s["layer"] == l) for l in layers]
    covered = (layers == list(range(r["n_layers"]))
               and all({s["kind"] for s in sites if s["layer"] == l} == G2_KINDS for l in layers))
    mx = max(s["rel_error"] for s in sites)
    controls = [s.get("control_rel_error", float("nan")) for s in sites]
    worst_control = float(np.nanmin(controls)) if np.any(np.isfinite(controls)) else float("nan")
    discriminates = bool(np.all(np.isfinite(controls)) and worst_control >= CONTROL_MIN)
    measured = {"max_rel_error_float32": float(mx), "min_control_rel_error": worst_control,
                "weights": r["weights"], "arch": r["arch"],
                "n_layers": len(layers), "n_sites": len(sites), "per_layer_max_rel_error": per_layer}
    subs = _scale_note(scale)
    if r["weights"] != "pretrained":
        subs.append("random-init weights (no local pretrained Pythia-410M checkpoint)")
    if r["arch"] != "pythia-410m":
        subs.append(f"tiny GPTNeoX ({r['n_layers']} layers, hidden {r['hidden_size']}) instead of Pythia-410M")
    p = r["params"]
    subs.append(f"autodiff block: {p['n_tokens']} of {p['seq_len']} token positions x {p['n_units']} output units per site")
    verdict = decide(reproduced=covered and discriminates and mx <= TOL["float32"], refuted=mx > TOL["float32"])
    power: list[PowerLine] = []
    if verdict is Verdict.INCONCLUSIVE:
        if not covered:
            need = r["n_layers"] * len(G2_KINDS)
            have = sum(1 for s in sites if s["kind"] in G2_KINDS and 0 <= s["layer"] < r["n_layers"])
            power.append(_coverage_line("sites (layer x kind)", have, need, "sites"))
        if not discriminates:
            power.append(_control_line(worst_control))
    reason = (f"{r['arch']} ({r['weights']}): max rel. error {mx:.2e} over {len(sites)} sites in "
              f"{len(layers)} layers (tol 1e-5); smallest negative-control error {worst_control:.2e}"
              + ("" if covered else "; incomplete coverage"))
    data = [p["weights_path"]] if r["weights"] == "pretrained" and p.get("weights_path") else []
    return Evaluation(measured, verdict, reason, substitutes=subs, data=data, power=power,
                      figure={"kinds": sorted(G2_KINDS), "tolerance": TOL["float32"]})


# ---------------------------------------------------------------------------------------------
def _mean_t_interval(values: list[float] | np.ndarray, level: float = 0.95) -> Interval:
    r"""Mean over seeds with the Student-t interval :math:`\bar v \pm t_{n-1}\, s/\sqrt n` (infinite for n < 2)."""
    v = np.asarray(values, float)
    m = float(v.mean())
    if v.size < 2:
        return Interval(m, -np.inf, np.inf, level, "single seed: no interval")
    h = float(_st.t.ppf((1 + level) / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return Interval(m, m - h, m + h, level, f"t-interval over {v.size} seeds")


def _key(u: dict[str, Any]) -> str:
    return f"{u['model']}_s{u['scale']:.3g}"


@register(load_claim_spec(PAPER, "G3"))
def evaluate_g3(results: Results, scale: str) -> Evaluation:
    r = one_result(results, "G3_")
    runs = r["runs"]
    n_runs = len(runs)
    seeds = sorted({u["seed"] for u in runs})
    configs = sorted({(u["model"], u["scale"]) for u in runs})
    # (a) low rank, per (model, scale), interval over seeds
    level = 1 - 0.05 / len(configs)  # Bonferroni: "at least one of the configs" is a search over configs
    frac_iv = {(m, g): _mean_t_interval([u["pr_full"] / u["dim_full"] for u in runs
                                         if u["model"] == m and u["scale"] == g], level) for m, g in configs}
    st_low = {c: at_most(iv, G3_LOW_RANK_FRAC) for c, iv in frac_iv.items()}
    if any(s is Status.HOLDS for s in st_low.values()):
        low_status = Status.HOLDS
    elif all(s is Status.REFUTED for s in st_low.values()):
        low_status = Status.REFUTED
    else:
        low_status = Status.UNDECIDED
    best = min(frac_iv, key=lambda c: frac_iv[c].high if np.isfinite(frac_iv[c].high) else frac_iv[c].value)
    # (b) association over non-diverged runs
    ok = [u for u in runs if not u["diverged"] and np.isfinite(u["loss_ratio"])]
    n_div = n_runs - len(ok)
    pr = [u["pr_full"] for u in ok]
    lr = [u["loss_ratio"] for u in ok]
    models = [u["model"] for u in ok]
    judged = [m for m in sorted(set(models)) if models.count(m) >= G3_MIN_PER_MODEL]
    rho = (stratified_spearman_ci(pr, lr, models, n_boot=G3_N_BOOT, seed=0, min_size=G3_MIN_PER_MODEL)
           if judged else Interval(0.0, -1.0, 1.0, 0.95, "no model with enough runs"))
    pooled = spearman_ci(pr, lr, n_boot=G3_N_BOOT, seed=0) if len(ok) >= 3 else Interval(0.0, -1.0, 1.0)
    corr_status = at_most(rho, 0.0) if len(ok) >= G3_MIN_RUNS and judged else Status.UNDECIDED
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
            pl = power_line("within-model Spearman(initial PR, loss ratio)", rho, [0.0], size=len(ok),
                            size_name="non-diverged runs")
            power.append(pl if pl is not None else NotePowerLine(
                "within-model Spearman(initial PR, loss ratio)", rho.half_width, 0.0, "non-diverged runs", float(len(ok)),
                float(G3_MIN_RUNS), note=f"{len(ok)} non-diverged runs < {G3_MIN_RUNS}: too few to trust the interval"))
        if low_status is Status.UNDECIDED:
            straddle = [c for c in frac_iv if frac_iv[c].low <= G3_LOW_RANK_FRAC < frac_iv[c].high]
            c = min(straddle, key=lambda c: frac_iv[c].value) if straddle else best
            pl = power_line(f"PR/N of {c[0]} at scale {c[1]:.3g}", frac_iv[c], [G3_LOW_RANK_FRAC],
                            size=len(seeds), size_name="seeds")
            power.append(pl if pl is not None else NotePowerLine(
                "PR/N", 0.0, G3_LOW_RANK_FRAC, "seeds", float(len(seeds)), float("inf"),
                note="a single seed gives no interval; >= 2 seeds per initialisation are needed"))
    per_model = {m: spearman([u["pr_full"] for u in ok if u["model"] == m],
                             [u["loss_ratio"] for u in ok if u["model"] == m]) for m in sorted({u["model"] for u in ok})}
    measured: dict[str, Any] = {
        "spearman_pr_vs_loss_ratio_within_model": rho,
        "lowest_pr_fraction": frac_iv[best],
        "spearman_pr_vs_loss_ratio_pooled": pooled,
        "lowest_pr_fraction_config": f"{best[0]} scale {best[1]:.3g}",
        "spearman_er_vs_loss_ratio": spearman([u["er_full"] for u in ok], lr) if ok else 0.0,
        "spearman_pr_vs_loss_ratio_per_model": per_model,
        "pr_fraction_mean": {f"{m}_s{g:.3g}": frac_iv[(m, g)].value for m, g in configs},
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
        "n_runs": n_runs,
        "n_seeds": len(seeds),
        "init_scales": sorted({u["scale"] for u in runs}),
    }
    parts = {"a_low_rank": low_status, "b_rank_vs_learning": corr_status}
    reason = (f"(a) low rank {low_status.value}: lowest PR/N {frac_iv[best].value:.3g} "
              f"[{frac_iv[best].low:.3g}, {frac_iv[best].high:.3g}] ({best[0]}, scale {best[1]:.3g}; threshold "
              f"{G3_LOW_RANK_FRAC:g}); (b) {corr_status.value}: within-model Spearman(PR, loss ratio) = {rho.value:.2f} "
              f"[{rho.low:.2f}, {rho.high:.2f}] ("
              + ", ".join(f"{m.upper()} {v:+.2f}" for m, v in per_model.items())
              + f") over {len(ok)} runs; pooled {pooled.value:.2f} [{pooled.low:.2f}, {pooled.high:.2f}]; "
              f"{n_div}/{n_runs} diverged")
    subs = _scale_note(scale)
    subs.append("flip-flop task with full-batch GD (kpflow's sweep: noisy memory-pro, Adam lr 1e-3, fresh batches, "
                "hidden 256)")
    subs.append("initial scale g = std x sqrt(H) of the recurrent weights (kpflow's init_level l multiplies "
                "PyTorch's U(+-1/sqrt(H)) init: g = l / sqrt(3))")
    if r["hidden"] < 256:
        subs.append(f"hidden {r['hidden']} (kpflow 256)")
    return Evaluation(measured, verdict, reason, substitutes=subs, power=power, parts=parts,
                      figure={"low_rank_frac": G3_LOW_RANK_FRAC})


# ---------------------------------------------------------------------------------------------
@register(load_claim_spec(PAPER, "G4"))
def evaluate_g4(results: Results, scale: str) -> Evaluation:
    r = one_result(results, "G4_")
    rows = r["rows"]
    dims = list(r["input_dims"])
    seeds = sorted({u["seed"] for u in rows})
    n_k = len(dims)

    def grid(key: str) -> np.ndarray:
        return np.array([[next(u[key] for u in rows if u["seed"] == s and u["k"] == k) for k in dims] for s in seeds])

    prx, prt = grid("pr_input"), grid("pr_time")
    excess = prt - (G4_SLACK_MULT * prx + G4_SLACK_ADD)          # (seeds, k)
    pairs = np.stack([prx, prt], -1)                               # (seeds, k, 2)
    enough = len(seeds) >= G4_MIN_SEEDS
    level = 1 - 0.05 / n_k                                         # Bonferroni over the k values
    if len(seeds) >= 2:
        ex_iv = [_mean_t_interval(excess[:, i], level) for i in range(n_k)]
        rho = bootstrap_ci(pairs, lambda a: spearman(a[..., 0].ravel(), a[..., 1].ravel()), n_boot=G4_N_BOOT, seed=1)
        rho = Interval(rho.value, rho.low, rho.high, rho.level, "Spearman over (seed, k); " + rho.method + " over seeds")
    else:
        ex_iv = [Interval(float(excess[0, i]), -np.inf, np.inf, level, "single seed: no interval") for i in range(n_k)]
        rho = Interval(spearman(prx.ravel(), prt.ravel()), -1.0, 1.0, 0.95, "single seed: no interval")
    st_k = [at_most(iv, 0.0) for iv in ex_iv]
    if not enough:
        bound_status = Status.UNDECIDED
    elif any(s_ is Status.REFUTED for s_ in st_k):
        bound_status = Status.REFUTED
    else:
        bound_status = Status.HOLDS if all(s_ is Status.HOLDS for s_ in st_k) else Status.UNDECIDED
    worst = int(np.argmax([iv.high if np.isfinite(iv.high) else iv.value for iv in ex_iv]))
    trend_status = at_least(rho, 0.0) if enough else Status.UNDECIDED
    check = r.get("internal_core_vs_autodiff_rel_error")
    valid = check is not None and check <= G4_CHECK_TOL
    verdict = verdict_of(combine([bound_status, trend_status])) if valid else Verdict.INCONCLUSIVE
    power: list[PowerLine] = []
    if verdict is Verdict.INCONCLUSIVE:
        if not valid:
            power.append(NotePowerLine("core-vs-autodiff check", float(check if check is not None else np.nan),
                                       G4_CHECK_TOL, "checks", 1.0, float("inf"),
                                       note=f"rel. error {check} > {G4_CHECK_TOL:g}: the GeNTK computation is invalid"))
        if bound_status is Status.UNDECIDED:
            lines = [power_line(f"excess of PR_time over 1.25 PR_x + 1 at k={k}", iv, [0.0], size=len(seeds),
                                size_name="seeds") for k, iv in zip(dims, ex_iv)] if enough else []
            lines = [pl for pl in lines if pl is not None]
            power.append(max(lines, key=lambda pl: pl.needed) if lines else NotePowerLine(
                "excess over the bound", 0.0, 0.0, "seeds", float(len(seeds)), float(G4_MIN_SEEDS),
                note=f"{len(seeds)} seeds < {G4_MIN_SEEDS} (the pre-registered minimum): too few seeds for an interval"))
        if trend_status is Status.UNDECIDED:
            pl = power_line("Spearman(PR_x, PR_time)", rho, [0.0], size=len(seeds), size_name="seeds") if enough else None
            power.append(pl if pl is not None else NotePowerLine(
                "Spearman(PR_x, PR_time)", 0.0, 0.0, "seeds", float(len(seeds)), float(G4_MIN_SEEDS),
                note=f"{len(seeds)} seeds < {G4_MIN_SEEDS} (the pre-registered minimum): too few seeds for an interval"))
    measured: dict[str, Any] = {
        "max_excess_over_bound": ex_iv[worst],
        "spearman_prX_prTime": rho,
        "max_excess_at_k": dims[worst],
        "input_dims": dims,
        "excess_over_bound": [iv.as_dict() for iv in ex_iv],
        "pr_input_mean": prx.mean(0).tolist(),
        "pr_time_mean": prt.mean(0).tolist(),
        "pr_time_over_pr_input_mean": (prt / prx).mean(0).tolist(),
        "er_time_mean": grid("er_time").mean(0).tolist(),
        "pr_output_mean": grid("pr_out").mean(0).tolist(),
        "internal_core_vs_autodiff_rel_error": check,
        "output_core_vs_autodiff_rel_error": r.get("output_core_vs_autodiff_rel_error"),
        "claim_source": G4_SOURCE,
        "n_seeds": len(seeds),
    }
    fr = r.get("fourier_rows") or []
    if fr:
        modes = r["fourier_modes"]
        measured["fourier_modes"] = modes
        measured["fourier_pr_input_mean"] = [float(np.mean([u["pr_input"] for u in fr if u["modes"] == m])) for m in modes]
        measured["fourier_pr_time_mean"] = [float(np.mean([u["pr_time"] for u in fr if u["modes"] == m])) for m in modes]
    parts = {"a_bound": bound_status, "b_trend": trend_status}
    w = ex_iv[worst]
    check_txt = f"core-vs-autodiff {check:.1e}" if check is not None else "no core-vs-autodiff check"
    reason = (f"(a) {bound_status.value}: largest excess of PR_time over 1.25 PR_x + 1 at k={dims[worst]}: "
              f"{w.value:.2f} [{w.low:.2f}, {w.high:.2f}] ({100 * level:.1f}% simultaneous); (b) {trend_status.value}: "
              f"Spearman(PR_x, PR_time) = {rho.value:.2f} [{rho.low:.2f}, {rho.high:.2f}] over {len(seeds)} seeds x "
              f"{n_k} k; {check_txt}")
    p = r["params"]
    subs = _scale_note(scale)
    subs.append(f"claim source: {G4_SOURCE}")
    subs.append("rank-k Gaussian inputs x = A z in a fixed d_in (kpflow sweeps d_input = 1..1000 of i.i.d. "
                "Gaussian inputs); residual connections and a 2-layer GELU MLP (kpflow: no residual, 3 affine "
                "MLP layers)")
    if p.get("layernorm", True):
        subs.append("LayerNorm (without affine parameters) in the blocks; kpflow's example has none")
    return Evaluation(measured, verdict, reason, substitutes=subs, power=power, parts=parts,
                      figure={"bound_mult": G4_SLACK_MULT, "bound_add": G4_SLACK_ADD})
