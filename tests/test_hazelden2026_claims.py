"""Pre-registered criteria G1-G4 on synthetic numbers, in four directions each: reproduces, refutes,
inconclusive, and an underpowered (wide-interval / incomplete) case that must come out inconclusive."""

import copy

import numpy as np
import pytest

from ntkrepro.hazelden2026 import claims
from ntkrepro.ledger import UNINFORMATIVE, Verdict, evaluate_control, get_claim, make_entry, make_evaluation
from ntkrepro.ledger.specs import NOT_A_CLAIM
from ntkrepro.stats import participation_ratio, spearman, stratified_spearman_ci

KINDS1 = ["embed", "q", "k", "v", "o", "mlp_in", "mlp_out", "readout"]
KINDS2 = sorted(claims.G2_KINDS)


# ------------------------------------------------------------------------------------------ G1
def g1(err64=1e-17, err32=1e-8, kinds=KINDS1, control=0.5, nobias=lambda i: 0.01 * (i + 1)):
    """Sites with the given errors; ``control`` = row-permuted core's error (the precision condition),
    ``nobias(i)`` = error of the core without the bias column at site i (the negative control)."""
    sites = lambda e: [{"site": k, "kind": k, "rel_error": e, "control_rel_error": control,  # noqa: E731
                        "nobias_rel_error": nobias(i)} for i, k in enumerate(kinds)]
    return {"G1_kronecker_transformer": {
        "dtypes": {"float64": {"sites": sites(err64)}, "float32": {"sites": sites(err32)}},
        "params": dict(d_in=16, d_model=64, n_heads=1, d_mlp=128, n_layers=3, seq_len=50, batch=8, n_units=4, seed=0),
    }}


def test_g1_four_directions():
    assert claims.evaluate_g1(g1(), "paper").verdict is Verdict.REPRODUCED
    assert claims.evaluate_g1(g1(err64=1e-9), "paper").verdict is Verdict.NOT_REPRODUCED
    assert claims.evaluate_g1(g1(err32=2e-5), "paper").verdict is Verdict.NOT_REPRODUCED
    ev = claims.evaluate_g1(g1(kinds=KINDS1[:-1]), "paper")        # a site kind missing
    assert ev.verdict is Verdict.INCONCLUSIVE and ev.power and "7 of 8" in ev.power[0].text()
    # underpowered: the precision condition fails (the row-permuted core looks right): never passes
    ev = claims.evaluate_g1(g1(control=1e-6), "paper")
    assert ev.verdict is Verdict.INCONCLUSIVE and any("negative control" in p.text() for p in ev.power)
    ev = claims.evaluate_g1(g1(), "smoke")
    assert any("4 output units" in s for s in ev.substitutes)


# ------------------------------------------------------------------------------------------ G2
def g2(err=1e-7, n_layers=24, weights="random_init", drop=False, control=0.7, nobias=lambda i: 1e-4 * (i + 1)):
    sites = [{"site": f"l{l}.{k}", "layer": l, "kind": k, "rel_error": err, "control_rel_error": control,
              "nobias_rel_error": nobias(l * len(KINDS2) + j)}
             for l in range(n_layers) for j, k in enumerate(KINDS2)]
    if drop:
        sites = sites[:-1]
    return {"G2_kronecker_pythia": {"sites": sites, "n_layers": n_layers, "weights": weights, "arch": "pythia-410m",
                                    "hidden_size": 1024, "params": {"n_tokens": 4, "seq_len": 16, "n_units": 4}}}


def test_g2_four_directions_and_weights_label():
    ev = claims.evaluate_g2(g2(), "default")
    assert ev.verdict is Verdict.REPRODUCED
    assert any("random-init" in s for s in ev.substitutes) and ev.measured["weights"] == "random_init"
    assert not any("random-init" in s for s in claims.evaluate_g2(g2(weights="pretrained"), "default").substitutes)
    assert claims.evaluate_g2(g2(err=3e-5), "default").verdict is Verdict.NOT_REPRODUCED
    ev = claims.evaluate_g2(g2(drop=True), "default")
    assert ev.verdict is Verdict.INCONCLUSIVE and "95 of 96" in ev.power[0].text()
    ev = claims.evaluate_g2(g2(control=1e-5), "default")
    assert ev.verdict is Verdict.INCONCLUSIVE and ev.power


def _prov(res):
    for r in res.values():
        r["provenance"] = {}
    return res


@pytest.mark.parametrize("claim, fake", [("G1", g1), ("G2", g2)])
def test_g1_g2_bias_column_control_judged_by_the_criterion(claim, fake):
    """The near-miss control (issue 28): the core exact everywhere but at the one site where leaving out the bias's
    constant-1 column changes it least. Judged by the same criterion it is rejected when that smallest error exceeds
    the tolerance; a wrong core within the tolerance passes too, and the claim is inconclusive (uninformative), not
    reproduced (ledger control rule of commit 49365b4)."""
    e = make_evaluation(claim, _prov(fake()), scale="default")
    (c,) = e["controls"]
    assert c["name"] == "bias_column_dropped" and c["verdict"] == "not_reproduced" and c["rejected"]
    assert e["verdict"] == "reproduced"
    # the smallest no-bias error (site 0: 0.01 resp. 1e-4) is the control's largest error
    key = "max_rel_error_float64" if claim == "G1" else "max_rel_error_float32"
    assert c["measured"][key] == pytest.approx(0.01 if claim == "G1" else 1e-4)
    # a wrong core within the tolerances at its least-affected site: the control passes, the claim cannot
    e = make_evaluation(claim, _prov(fake(nobias=lambda i: 1e-12 * (i + 1))), scale="default")
    assert e["controls"][0]["verdict"] == "reproduced" and e["criterion_verdict"] == "reproduced"
    assert e["verdict"] == "inconclusive" and UNINFORMATIVE in e["reason"] and "bias_column_dropped" in e["reason"]


def test_bias_control_changes_only_the_least_affected_site():
    res = g1(nobias=lambda i: [0.3, 0.02, 0.5, 0.04, 0.6, 0.7, 0.8, 0.9][i])
    ctl = claims.control_g1_bias_dropped(res)["G1_kronecker_transformer"]["dtypes"]["float64"]["sites"]
    changed = [s for s in ctl if s["rel_error"] != 1e-17]
    assert [s["site"] for s in changed] == ["q"] and changed[0]["rel_error"] == 0.02
    res = g2()
    for s in res["G2_kronecker_pythia"]["sites"]:
        s.pop("nobias_rel_error")
    with pytest.raises(ValueError, match="nobias_rel_error"):
        claims.control_g2_bias_dropped(res)


# ------------------------------------------------------------------------------------------ G3
SCALES = [1e-3, 1e-2, 1e-1, 0.5, 1.0, 3.0]


def g3(pr_frac, loss_ratio, models=("rnn", "gru"), scales=SCALES, seeds=5, noise=0.0, diverged=(), dim=1000,
       rng_seed=0, model_shift=None, seed_noise=0.0):
    """Runs with PR/N = pr_frac(scale_index) and loss ratio = loss_ratio(scale_index) (+ noise per run, + a
    seed-level offset of sd ``seed_noise``); ``model_shift[m] = (PR/N factor, loss-ratio offset)`` shifts a model."""
    rng = np.random.default_rng(rng_seed)
    seed_off = {s: seed_noise * rng.standard_normal() for s in range(seeds)}
    runs = []
    for m in models:
        for i, g in enumerate(scales):
            for s in range(seeds):
                fac, off = (model_shift or {}).get(m, (1.0, 0.0))
                f = float(np.clip(fac * pr_frac(i) * (1 + 0.01 * rng.standard_normal()), 1e-4, 1))
                lr = float(off + loss_ratio(i) + noise * rng.standard_normal() + seed_off[s])
                runs.append({"model": m, "scale": g, "seed": s, "pr_full": f * dim, "dim_full": dim,
                             "er_full": 2 * f * dim, "pr_space": 5.0, "dim_space": 64, "pr_time": 3.0, "dim_time": 20,
                             "loss_initial": 1.0, "loss_final": lr, "loss_ratio": lr,
                             "diverged": (m, g, s) in diverged})
    return {"G3_rnn_spectra": {"runs": runs, "hidden": 64, "seq_len": 20, "kernel_samples": 1}}


def test_g3_reproduces_low_rank_init_learns_worse():
    res = g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.9 - 0.12 * i, noise=0.02)
    ev = claims.g3_scale_sweep(res, "default")
    assert ev.verdict is Verdict.REPRODUCED, ev.reason
    assert ev.measured["spearman_pr_vs_loss_ratio_within_model"].high <= 0
    assert ev.measured["lowest_pr_ratio_to_g1"].high <= 0.5     # g=1e-3: PR 1/5 of g=1's
    assert ev.parts["a_low_rank"].value == "holds" and not ev.power
    assert ev.measured["n_distinct_points"] == 60


def test_g3_refutes_when_low_rank_learns_better_or_nothing_is_low_rank():
    # lower initial rank goes with BETTER learning: interval wholly above 0
    ev = claims.g3_scale_sweep(g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.2 + 0.12 * i, noise=0.02),
                            "default")
    assert ev.verdict is Verdict.NOT_REPRODUCED and ev.measured["spearman_pr_vs_loss_ratio_within_model"].low > 0
    # no initialisation low-rank relative to g = 1 (all PR within 20% of g=1's, tight over seeds)
    ev = claims.g3_scale_sweep(g3(pr_frac=lambda i: 0.5 + 0.05 * i, loss_ratio=lambda i: 0.9 - 0.12 * i, noise=0.02),
                            "default")
    assert ev.verdict is Verdict.NOT_REPRODUCED and ev.parts["a_low_rank"].value == "refuted"


def test_g3_between_model_confound_does_not_pass():
    """Simpson's paradox: within each model lower rank learns BETTER, but one model has lower rank and
    higher loss overall, so the pooled correlation is negative. The within-model criterion refutes."""
    res = g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.1 + 0.02 * i, noise=0.005,
             model_shift={"gru": (0.1, 0.6), "rnn": (1.0, 0.0)})
    ev = claims.g3_scale_sweep(res, "default")
    assert ev.measured["spearman_pr_vs_loss_ratio_pooled"].high < 0            # pooled: "supports"
    assert ev.measured["spearman_pr_vs_loss_ratio_within_model"].low > 0       # within: contradicts
    assert ev.verdict is Verdict.NOT_REPRODUCED


def test_g3_uniformly_low_pr_is_not_low_rank():
    """Issue 21: every GRU configuration had PR/N 0.056-0.079, below criterion v4's absolute 0.1, so (a) could not
    fail. Relative to g = 1 a uniformly low PR is not a low-rank initialisation: (a) is refuted."""
    res = g3(pr_frac=lambda i: 0.06 + 0.004 * i, loss_ratio=lambda i: 0.9 - 0.12 * i, noise=0.02, models=("gru",))
    ev = claims.g3_scale_sweep(res, "default")
    assert all(v < 0.1 for v in ev.measured["pr_fraction_mean"].values())       # v4's (a) would hold
    assert ev.parts["a_low_rank"].value == "refuted" and ev.verdict is Verdict.NOT_REPRODUCED


def test_g3_duplicate_scales_are_one_point():
    """Issue 21 "Done when": scales that give the same run (same PR and loss ratio) count once. Five seeds of three
    distinct runs with a seed-level loss offset leave the association undecided; adding five more small scales that
    repeat the smallest-scale run changes nothing, while a bootstrap over runs (criterion v4) declares it."""
    kw = dict(pr_frac=lambda i: [0.01, 0.05, 0.25][i], loss_ratio=lambda i: [0.55, 0.5, 0.45][i], noise=0.05,
              seed_noise=0.3, rng_seed=2)
    base = g3(scales=[0.1, 1.0, 3.0], **kw)
    runs = base["G3_rnn_spectra"]["runs"]
    dup = copy.deepcopy(base)
    for u in runs:
        if u["scale"] == 0.1:
            dup["G3_rnn_spectra"]["runs"] += [{**u, "scale": g} for g in (1e-3, 3e-3, 1e-2, 3e-2, 5e-2)]
    ev0, ev1 = claims.g3_scale_sweep(base, "default"), claims.g3_scale_sweep(dup, "default")
    assert ev0.measured["n_distinct_points"] == ev1.measured["n_distinct_points"] == 30
    assert ev1.measured["n_runs"] == 80
    iv0, iv1 = (e.measured["spearman_pr_vs_loss_ratio_within_model"] for e in (ev0, ev1))
    assert (iv1.value, iv1.low, iv1.high) == (iv0.value, iv0.low, iv0.high)
    assert ev1.parts["b_rank_vs_learning"].value == "undecided" and ev1.verdict is Verdict.INCONCLUSIVE
    # criterion v4's test of the same runs (every run a point, bootstrap over runs) says the association holds
    ok = dup["G3_rnn_spectra"]["runs"]
    old = stratified_spearman_ci([u["pr_full"] for u in ok], [u["loss_ratio"] for u in ok], [u["model"] for u in ok],
                                 n_boot=500, seed=0, min_size=4)
    assert old.high <= 0 < iv1.high


def test_g3_too_few_seeds_or_no_reference_scale_is_undecided():
    res = g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.9 - 0.12 * i, noise=0.02, seeds=4)
    ev = claims.g3_scale_sweep(res, "default")
    assert ev.parts["b_rank_vs_learning"].value == "undecided" and ev.verdict is Verdict.INCONCLUSIVE
    assert any("4 seeds (>= 5 needed)" in p.text() for p in ev.power)
    res = g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.9 - 0.12 * i, noise=0.02,
             scales=[1e-3, 1e-2, 1e-1, 0.5, 3.0])
    ev = claims.g3_scale_sweep(res, "default")
    assert ev.parts["a_low_rank"].value == "undecided" and any("reference scale" in p.text() for p in ev.power)


def test_g3_diverged_low_rank_runs_are_counted_as_worst_learners():
    """CLAIMS.md G3 / issue 28: a run that diverged is the paper's plateau case -- ranked as the worst learner,
    never dropped. Here the two lowest-rank initialisations diverge and the others learn equally (noise only):
    counting the diverged runs, lower initial rank goes with worse learning; dropping them (criterion v5) leaves
    no association to see."""
    div = {(m, g, s) for m in ("rnn", "gru") for g in SCALES[:2] for s in range(5)}   # exactly a third
    res = g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.5, noise=0.1, diverged=div, rng_seed=4)
    for u in res["G3_rnn_spectra"]["runs"]:
        if u["diverged"]:
            u["loss_ratio"] = u["loss_final"] = float("nan")
    ev = claims.g3_scale_sweep(res, "default")
    iv = ev.measured["spearman_pr_vs_loss_ratio_within_model"]
    assert ev.measured["n_distinct_points"] == 60 and len(ev.measured["diverged"]) == 20
    assert ev.measured["diverged_ranked_worst"] == 20 and "ranked as the worst learners" in ev.reason
    assert iv.high <= 0 and ev.parts["b_rank_vs_learning"].value == "holds" and ev.verdict is Verdict.REPRODUCED
    # the same runs with the diverged ones dropped (criterion v5's filter): the association is not seen
    kept = copy.deepcopy(res)
    kept["G3_rnn_spectra"]["runs"] = [u for u in kept["G3_rnn_spectra"]["runs"] if not u["diverged"]]
    ev5 = claims.g3_scale_sweep(kept, "default")
    assert ev5.parts["b_rank_vs_learning"].value != "holds"
    # a diverged run with a finite but huge loss ratio ranks the same as one with none
    for u in res["G3_rnn_spectra"]["runs"]:
        if u["diverged"]:
            u["loss_ratio"] = 1e6
    iv2 = claims.g3_scale_sweep(res, "default").measured["spearman_pr_vs_loss_ratio_within_model"]
    assert (iv2.value, iv2.low, iv2.high) == (iv.value, iv.low, iv.high)


def test_g3_inconclusive_when_more_than_a_third_diverge():
    div = {(m, g, s) for m in ("rnn", "gru") for g in SCALES[3:] for s in range(5)}  # half of the runs
    ev = claims.g3_scale_sweep(g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.9 - 0.12 * i,
                               noise=0.02, diverged=div), "default")
    assert ev.verdict is Verdict.INCONCLUSIVE
    assert any("diverged" in p.text() for p in ev.power)
    assert len(ev.measured["diverged"]) == 30


def test_g3_underpowered_wide_interval_is_inconclusive():
    # weak noisy association: the seed-bootstrap interval straddles 0 -> inconclusive with a power line in seeds
    ev = claims.g3_scale_sweep(g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.6 - 0.02 * i, noise=0.3,
                               rng_seed=3), "default")
    iv = ev.measured["spearman_pr_vs_loss_ratio_within_model"]
    assert ev.verdict is Verdict.INCONCLUSIVE and iv.low < 0 < iv.high
    assert any("Spearman" in p.text() and "seeds" in p.text() for p in ev.power)
    # a single seed per initialisation cannot establish "low rank" with precision
    ev = claims.g3_scale_sweep(g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.9 - 0.12 * i, seeds=1),
                            "default")
    assert ev.parts["a_low_rank"].value == "undecided" and ev.verdict is Verdict.INCONCLUSIVE and ev.power


# ------------------------------------------------------------------------------------------ G4
DIMS = [1, 2, 4, 8, 16, 32]


def _g4_rows(pr_time, seeds, noise, rng, reported=True):
    rows = []
    for s in range(seeds):
        for k in DIMS:
            prx = 0.8 * k * (1 + 0.02 * rng.standard_normal())
            prt = float(pr_time(prx) + noise * rng.standard_normal())
            rows.append({"seed": s, "k": k, "pr_input": prx, "er_input": prx, "pr_time": prt, "er_time": prt,
                         "spectrum_time": [1.0]}
                        | ({"pr_out": prt, "er_out": prt, "pr_post_gelu": 2 * prx + 3, "er_post_gelu": prx}
                           if reported else {}))
    return rows


def g4(pr_time, seeds=8, noise=0.0, check=1e-15, rng_seed=0, control=lambda x: x + 2.5, state="internal",
       arch="site_attention_mlp"):
    """Rows with PR_time = pr_time(PR_x) (+ noise); the time-code control's rows follow ``control`` (default: two
    directions more than the input, the near miss); the post-GELU state (reported) is 2 PR_x + 3, above the bound."""
    rng = np.random.default_rng(rng_seed)
    common = {"input_dims": DIMS, "fourier_rows": [], "fourier_modes": [], "state": state, "arch": arch,
              "state_core_vs_autodiff_rel_error": check, "params": {"mlp_layers": 3}}
    return {"G4_transformer_rank": {**common, "rows": _g4_rows(pr_time, seeds, noise, rng),
                                    "post_gelu_core_vs_autodiff_rel_error": check,
                                    "output_core_vs_autodiff_rel_error": check,
                                    "controls": {"time_code": {
                                        **common, "rows": _g4_rows(control, seeds, noise, rng, reported=False)}}}}


def test_g4_four_directions():
    ev = claims.evaluate_g4(g4(lambda x: 0.9 * x + 0.5, noise=0.05), "default")
    assert ev.verdict is Verdict.REPRODUCED, ev.reason
    assert any("kpflow examples/transformer_validation" in s for s in ev.substitutes)
    # refutes: temporal rank far above the input's effective dimension
    assert claims.evaluate_g4(g4(lambda x: 2 * x + 3, noise=0.05), "default").verdict is Verdict.NOT_REPRODUCED
    # inconclusive: an invalid GeNTK computation never yields a verdict either way
    ev = claims.evaluate_g4(g4(lambda x: 2 * x + 3, check=1e-3), "default")
    assert ev.verdict is Verdict.INCONCLUSIVE and ev.power
    # underpowered: excess hovering at the bound with large seed noise -> interval straddles 0
    ev = claims.evaluate_g4(g4(lambda x: 1.25 * x + 1, noise=2.0, seeds=6), "default")
    iv = ev.measured["max_excess_over_bound"]
    assert ev.verdict is Verdict.INCONCLUSIVE and iv.low < 0 < iv.high and ev.power
    # too few seeds to trust a bootstrap: undecided even if the point estimates look good
    ev = claims.evaluate_g4(g4(lambda x: 0.9 * x + 0.5, seeds=2), "default")
    assert ev.verdict is Verdict.INCONCLUSIVE and "seeds < 5" in ev.power[0].text()


def test_g4_time_code_control_judged_by_the_criterion():
    """The near-miss control (issue 28): two temporal directions more than the input's effective dimension break the
    bound 1.25 PR_x + 1 at small k, so the criterion rejects it. A control that stays within the bound as well
    (the measurement cannot see the extra directions) is not rejected: the claim is inconclusive with the reason
    'holds in time_code too: uninformative at this scale' (ledger control rule of commit 49365b4)."""
    # issue 38 / rule 9: G4 is not a claim of seed 004, so its entry carries no verdict; the criterion
    # function still measures the state and the control (reported), and behaves as before on them
    spec = get_claim("G4")
    res = _prov(g4(lambda x: 0.9 * x + 0.5, noise=0.05))
    c = evaluate_control(spec, spec.controls[0], res, "default")
    assert c["name"] == "time_code" and c["verdict"] == "not_reproduced" and c["parts"]["a_bound"] == "refuted"
    ev = claims.evaluate_g4(res, "default")
    assert ev.verdict is Verdict.REPRODUCED
    # the post-GELU state is reported beside the verdict (here above the bound), never judged
    assert ev.measured["post_gelu_max_excess_over_bound"] > 0 and "reported, not judged: post-GELU" in ev.reason
    e = make_evaluation("G4", res, scale="default")
    assert e["verdict"] == NOT_A_CLAIM and e["criterion_verdict"] is None and "not a claim of the seed" in e["reason"]
    assert e["measured"]["pr_post_gelu_mean"] and e["controls"][0]["verdict"] == NOT_A_CLAIM
    assert e["controls"][0]["measured"]
    res = _prov(g4(lambda x: 0.9 * x + 0.5, noise=0.05, control=lambda x: 0.9 * x + 0.5))
    assert evaluate_control(spec, spec.controls[0], res, "default")["verdict"] == "reproduced"
    assert make_evaluation("G4", res, scale="default")["verdict"] == NOT_A_CLAIM


def test_g4_judges_the_examples_state_on_the_examples_model():
    """A result of another state or model is labelled a substitute; the slack needed is reported."""
    ev = claims.evaluate_g4(g4(lambda x: 1.1 * x, noise=0.01), "default")
    assert not any("instead of" in t for t in ev.substitutes)
    # (1.1 PR_x - 1) / PR_x
    assert ev.measured["slack_mult_needed"] == pytest.approx(1.1 - 1 / (0.8 * DIMS[-1]), abs=0.02)
    assert ev.measured["slack_mult_needed"] < claims.G4_SLACK_MULT and "3 x h0" in ev.reason
    ev = claims.evaluate_g4(g4(lambda x: 1.1 * x, noise=0.01, state="mlp_hidden", arch="residual"), "default")
    assert sum("instead of" in t for t in ev.substitutes) == 2


def test_g4_no_trend_is_not_a_pass():
    # bounded but flat (the rank does not follow the input dimension): trend part refuted
    ev = claims.evaluate_g4(g4(lambda x: 1.5, noise=0.05), "default")
    assert ev.parts["a_bound"].value == "holds" and ev.verdict is not Verdict.REPRODUCED


# ------------------------------------------------------------------------------- shared pieces
def test_participation_ratio_on_analytic_spectra():
    assert participation_ratio(np.ones(7)) == pytest.approx(7)
    assert participation_ratio(np.array([3.0, 0, 0])) == pytest.approx(1)
    assert participation_ratio(np.array([1.0, 1.0, -1e-15])) == pytest.approx(2)
    # (1 + 1/2)^2 / (1 + 1/4) = 1.8; a geometric spectrum 2^-k -> (2)^2 / (4/3) = 3 in the limit
    assert participation_ratio(np.array([1.0, 0.5])) == pytest.approx(1.8)
    assert participation_ratio(0.5 ** np.arange(60)) == pytest.approx(3.0)
    lam = np.random.default_rng(0).exponential(size=50)
    from ntkrepro.stats import effective_rank
    assert participation_ratio(lam) <= effective_rank(lam) + 1e-12
    with pytest.raises(ValueError):
        participation_ratio(np.zeros(3))


def test_stratified_spearman_ci():
    x = np.r_[np.arange(10.0), np.arange(10.0) + 100]
    y = np.r_[np.arange(10.0), np.arange(10.0) - 100]    # within +1 in both strata, pooled negative
    strata = ["a"] * 10 + ["b"] * 10
    iv = stratified_spearman_ci(x, y, strata, n_boot=200)
    assert iv.value == pytest.approx(1.0) and iv.low > 0.9 and spearman(x, y) < 0
    # a stratum with fewer than min_size pairs is left out; none left -> error
    iv = stratified_spearman_ci(np.r_[x, 5.0], np.r_[y, -5.0], strata + ["c"], n_boot=100)
    assert iv.value == pytest.approx(1.0)
    with pytest.raises(ValueError):
        stratified_spearman_ci([1.0, 2.0], [1.0, 2.0], ["a", "b"])
    # independent noise: the interval covers 0
    rng = np.random.default_rng(0)
    iv = stratified_spearman_ci(rng.standard_normal(40), rng.standard_normal(40), [0, 1] * 20, n_boot=500)
    assert iv.low < 0 < iv.high


def test_ledger_entries_carry_amendments_and_source():
    spec = get_claim("G1")
    assert spec.paper == "hazelden2026" and "1e-10" in spec.criterion and spec.version == 3
    res = copy.deepcopy(g1())
    res["G1_kronecker_transformer"]["provenance"] = {"x": 1}
    entry = make_entry("G1", res, scale="smoke")
    assert entry["verdict"] == "reproduced" and entry["measured"]["max_rel_error_float64"] == 1e-17
    g3spec = get_claim("G3")
    assert g3spec.version == 9 and len(g3spec.amendments) == 8 and "g = 1" in g3spec.criterion
    assert "worst learner" in g3spec.criterion and "+0.97" in g3spec.amendments[-3].previous["default"]
    assert "planted" in g3spec.criterion and "before any run" in g3spec.amendments[-2].why
    assert "log(1.1)" in g3spec.criterion and "0.29 [0.22, 0.39]" in g3spec.amendments[-1].previous["default"]
    assert "0.05" in g3spec.amendments[0].change and "diverge" in g3spec.amendments[0].why
    assert "some RNN initializations" in g3spec.statement
    res = {**g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.9 - 0.12 * i, noise=0.02),
           **planted()}
    res["G3_rnn_spectra"]["provenance"] = res["G3_planted_fixed_points"]["provenance"] = {}
    entry = make_entry("G3", res, scale="default")
    assert entry["criterion_version"] == 9 and len(entry["amendments"]) == 8
    assert all(a["previous"] for a in entry["amendments"])
    g4spec = get_claim("G4")
    assert "kpflow" in g4spec.statement and g4spec.version == 5 and "3 x h0" in g4spec.criterion
    assert not g4spec.seed_claim and "rule 9" in g4spec.amendments[-1].change
    assert "1.25 PR_x + 1" in g4spec.criterion and claims.G4_SLACK_MULT == 1.25 and claims.G4_SLACK_ADD == 1.0
    # every control of G1-G4 says why it is the nearest false alternative
    assert all(c.why_nearest for cid in ("G1", "G2", "G3", "G4") for c in get_claim(cid).controls)
    assert g4spec.statement.endswith(f"Source: {claims.G4_SOURCE}.")   # the source the entries name
    res = g4(lambda x: 2 * x + 3, seeds=2)
    res["G4_transformer_rank"]["provenance"] = {}
    entry = make_entry("G4", res, scale="smoke")
    assert entry["verdict"] == NOT_A_CLAIM and entry["amendments"][0]["previous"]   # rule 9: no verdict, no power


def planted(pr_factor=0.6, loss_factor=2.0, seeds=6, noise=0.05, redraw=(1.0, 1.0), matched=(0.9, 1.2),
            diverged=(), rng_seed=0, **over):
    """G3 planted-comparison results (ntkrepro.hazelden2026.planted.run_planted's layout): per seed, arm ``none``
    (PR ~ 100, a loss curve falling to ~0.1), ``planted`` with PR x ``pr_factor`` and its loss curve x
    ``loss_factor``, ``matched`` / ``redraw`` likewise with their factor pairs; log-normal noise ``noise`` per run.
    ``diverged``: (seed, arm) pairs whose loss curve blows up. ``over`` overrides the recorded sizes."""
    rng = np.random.default_rng(rng_seed)
    fac = {"none": (1.0, 1.0), "planted": (pr_factor, loss_factor), "matched": matched, "redraw": redraw}
    steps = 50
    runs = []
    for s in range(seeds):
        base = np.exp(-np.linspace(0, 2.3, steps)) * np.exp(noise * rng.standard_normal())
        for arm, (fp, fl) in fac.items():
            loss = base * fl * np.exp(noise * rng.standard_normal())
            if (s, arm) in diverged:
                loss = loss.copy()
                loss[-5:] = np.inf
            runs.append({"seed": s, "arm": arm, "pr": 100.0 * fp * float(np.exp(noise * rng.standard_normal())),
                         "pr_dim": 5760, "loss": loss.tolist(), "diverged": (s, arm) in diverged})
    sizes = {"hidden": 64, "dt": 0.7, "periods": [30, 30, 30], "noise_std": 0.14, "n_fixed_points": 5, "g": 1.0,
             "n_train": 1000, "batch": 50, "steps": steps, "lr": 0.05, "kernel_samples": 1, "n_seeds": seeds,
             "seed": 0, **over}
    return {"G3_planted_fixed_points": {"runs": runs, "arms": list(fac), **sizes}}


def g3v8(**kw):
    return _prov({**g3(pr_frac=lambda i: 0.01 * (i + 1), loss_ratio=lambda i: 0.9 - 0.12 * i, noise=0.02),
                  **planted(**kw)})


AUTHORS = {"hidden": 256, "n_train": 5000, "batch": 500, "steps": 10000}


def test_g3_planted_points_lower_rank_and_learn_worse_reproduce():
    """v8 (issue 38): the authors' comparison decides -- planted fixed points give a lower GeNTK participation ratio
    and a higher tail loss, seed-paired; the control (a second unplanted draw in the planted arm's place) is
    inconclusive; the sweep and the norm-matched arm are reported, not judged."""
    e = make_evaluation("G3", g3v8(), scale="default")
    assert e["verdict"] == "reproduced", e["reason"]
    assert e["parts"] == {"a_planted_lower_rank": "holds", "b_planted_learns_worse": "holds"}
    assert e["measured"]["planted_pr_ratio"] == pytest.approx(0.6, rel=0.1)
    assert e["measured"]["planted_tail_loss_ratio"] == pytest.approx(2.0, rel=0.1)
    assert "reported_matched_log_pr_ratio" in e["measured"] and "sweep_spearman_pr_vs_loss_ratio_within_model" in \
        e["measured"] and e["measured"]["reported_sweep_v6_verdict"] == "reproduced"
    (c,) = e["controls"]
    assert c["name"] == "two_unplanted_draws" and not c["holds"]
    assert set(c["parts"]) == set(e["parts"])                # the control is judged by the same parts
    assert c["measured"]["planted_pr_ratio"] == pytest.approx(1.0, rel=0.1)
    assert c["parts"]["b_planted_learns_worse"] == "refuted"  # v9: two draws learn alike (within 10 %)
    assert list(e["measured"])[0] == "planted_log_pr_ratio"


def test_g3_control_that_passes_caps_the_claim():
    """A second unplanted draw that also has the lower rank and the higher loss (the comparison cannot tell
    planting from any redraw) caps G3 at inconclusive."""
    e = make_evaluation("G3", g3v8(redraw=(0.6, 2.0)), scale="default")
    assert e["criterion_verdict"] == "reproduced" and e["verdict"] == "inconclusive"
    assert e["controls"][0]["holds"]


@pytest.mark.parametrize("over, verdict", [({}, "inconclusive"), (AUTHORS, "not_reproduced")])
def test_g3_refuted_only_at_the_authors_conditions(over, verdict):
    """CLAIMS.md G3 row: the planted (lower-rank) initialisation learning better refutes the existential sentence
    only at the authors' conditions; at reduced sizes it is inconclusive with that reason."""
    e = make_evaluation("G3", g3v8(loss_factor=0.5, **over), scale="default")
    assert e["parts"] == {"a_planted_lower_rank": "holds", "b_planted_learns_worse": "refuted"}
    assert e["verdict"] == verdict
    if verdict == "inconclusive":
        assert "authors' conditions" in e["reason"] and "hidden 64 (kpflow 256)" in e["reason"]
        assert any("authors' sizes decide" in p["text"] for p in e["power"])    # never inconclusive without one
    else:
        assert e["measured"]["planted_at_authors_conditions"] is True


def test_g3_no_lower_rank_or_equal_learning_is_inconclusive():
    """Planting that raises the rank leaves nothing to test (inconclusive, not refuted). v9: learning within 10 %
    of the base draw's tail loss is 'as well' -- (b) refuted, a refutation only at the authors' conditions -- and
    a 5 % worse tail loss is no plateau; an interval straddling the 10 % margin leaves (b) undecided, with a power
    line over seeds."""
    e = make_evaluation("G3", g3v8(pr_factor=1.6, loss_factor=0.5, **AUTHORS), scale="default")
    assert e["parts"]["a_planted_lower_rank"] == "refuted" and e["verdict"] == "inconclusive"
    assert "no lower-rank initialisation" in e["reason"] and e["power"]
    for factor in (1.0, 1.05):
        e = make_evaluation("G3", g3v8(loss_factor=factor, noise=0.01, **AUTHORS), scale="default")
        assert e["parts"]["b_planted_learns_worse"] == "refuted" and e["verdict"] == "not_reproduced"
    e = make_evaluation("G3", g3v8(loss_factor=1.1, noise=0.2), scale="default")
    assert e["parts"]["b_planted_learns_worse"] == "undecided" and e["verdict"] == "inconclusive"
    assert any("seeds" in p["text"] for p in e["power"])


def test_g3_diverged_seeds_and_too_few_seeds():
    """Seeds with a diverged run are left out of (b) and counted; more than a third of them leave (b) undecided
    (a smaller learning rate decides); fewer than 5 seeds decide nothing."""
    e = make_evaluation("G3", g3v8(diverged={(0, "planted")}), scale="default")
    assert e["measured"]["planted_diverged_seeds"] == [0] and e["verdict"] == "reproduced"
    e = make_evaluation("G3", g3v8(diverged={(s, "planted") for s in range(3)}), scale="default")
    assert e["parts"]["b_planted_learns_worse"] == "undecided"
    assert any("learning rate" in p["text"] for p in e["power"])
    e = make_evaluation("G3", g3v8(seeds=4), scale="default")
    assert e["parts"] == {"a_planted_lower_rank": "undecided", "b_planted_learns_worse": "undecided"}
    with pytest.raises(KeyError, match="redraw"):
        claims.control_g3_two_draws({"G3_planted_fixed_points": {"runs": [], "arms": ["none", "planted"]}})


def test_g3_judged_on_the_planted_runs_alone():
    """The decisive tier archives the planted comparison only (config/decisive.yaml G3): the criterion judges it
    without the initial-scale sweep, and at the authors' sizes the reduced-size substitutes are gone."""
    res = _prov(planted(**AUTHORS))
    e = make_evaluation("G3", res, scale="paper")
    assert e["verdict"] == "reproduced" and not any(k.startswith("sweep_") for k in e["measured"])
    assert not any("planted comparison:" in s for s in e["substitutes"])
    assert any("1 noise-free sequences" in s for s in e["substitutes"])       # kernel_samples 1 (kpflow: 30)
