"""H1-H6 criteria (ntkrepro.hron2020.claims) on synthetic numbers, four directions each.

Every criterion is checked on results that reproduce the claim, refute it, leave it undecided,
and on an underpowered run whose wide interval contains the paper's value, which must come out
inconclusive (CLAIMS.md rule 2); every inconclusive entry must carry a power line (rule 5). The H1
heads-law fit is also run end to end on planted draws: i.i.d. heads (kappa_1/H, slope -1) and
perfectly dependent heads (no decay, refuted).
"""

import numpy as np
import pytest

from ntkrepro.hron2020 import cifar10, claims, gaussianity, imdb
from ntkrepro.ledger import UNINFORMATIVE, Verdict, get_claim, make_entry
from ntkrepro.stats import (Interval, Status, at_least, bootstrap_ci, crossed_bootstrap, paired_test_power,
                            powerlaw_wls_fit)


def _check(ev, expected):
    assert ev.verdict is expected, ev.reason
    if expected is Verdict.INCONCLUSIVE:
        assert ev.power, "an inconclusive entry needs a power line"
    return ev


# ============================================================================ shared stats helpers
def test_powerlaw_wls_fit_recovers_planted_law_with_negative_values():
    rng = np.random.default_rng(0)
    x = np.array([1, 2, 4, 8, 16, 100.0])
    y = 0.4 * x ** -1.0
    sd = np.full(x.size, 0.004)
    boots = y + rng.normal(0, 1, (500, x.size)) * sd
    yobs = y.copy()
    yobs[-1] = -0.003                       # a tiny law value measured below 0 must not break the fit
    b, a = powerlaw_wls_fit(x, yobs, boots - y + yobs, sigma=sd)
    assert b.inside(-1.1, -0.9) and a.contains(0.4)
    with pytest.raises(ValueError):
        powerlaw_wls_fit(x, y, boots[:, :3])


def test_crossed_bootstrap_is_wider_than_columns_only_when_rows_differ():
    rng = np.random.default_rng(1)
    rows = rng.normal(0, 0.3, size=(5, 1))                 # a strong between-family spread
    y = rows + rng.normal(0, 0.05, size=(5, 200))
    iv = crossed_bootstrap(y, n_boot=500, seed=0)
    cols_only = np.quantile([y[:, rng.integers(0, 200, 200)].mean() for _ in range(500)], [0.025, 0.975])
    assert iv.high - iv.low > 2 * (cols_only[1] - cols_only[0]) and iv.contains(y.mean())


def test_paired_test_power_treats_round_off_mean_as_zero():
    d = np.array([0.1, 0.2, -0.3, 0.05, -0.05])              # cancels exactly; the floating-point mean is ~1e-17
    pl = paired_test_power(d, "diff")
    assert not np.isfinite(pl.needed) and "no" in pl.text()
    assert np.isfinite(paired_test_power(d + 0.001, "diff").needed)


# ============================================================================================ H1
H1_HEADS = [1, 2, 4, 8, 16, 100]


def _h1(kappa, sd, n=100000, seed=0):
    """Synthetic H1 results: point estimates ``kappa`` and bootstrap replicates kappa + N(0, sd)."""
    rng = np.random.default_rng(seed)
    rows = []
    for h, k, s in zip(H1_HEADS, kappa, np.broadcast_to(sd, len(kappa))):
        reps = k + s * rng.standard_normal(400)
        rows.append({"heads": h, "n_draws": n, "variance": 1.0,
                     "kurtosis": Interval(k, float(np.quantile(reps, 0.025)),
                                          float(np.quantile(reps, 0.975))).as_dict(),
                     "kurtosis_boot": reps.tolist(), "ks": Interval(0.01, 0.008, 0.012).as_dict()})
    return {"H1_gaussianity": {"per_heads": rows, "ks_null_95": 0.01, "ks_draws": 1000, "n_draws": [n] * len(rows),
                               "d": 1000, "seq_len": 8, "provenance": {},
                               "scale_mixture_kurtosis_1_head": {"value": 0.34, "se": 0.001, "n_draws": 1000}}}


H = np.array(H1_HEADS, float)


@pytest.mark.parametrize("name,res,expected", [
    ("reproduces: kappa_1/H", _h1(0.34 / H, 0.004), Verdict.REPRODUCED),
    ("refutes: no decay with heads", _h1(0.34 + 0 * H, 0.004), Verdict.NOT_REPRODUCED),
    ("refutes: decays like 1/H^2", _h1(0.34 / H ** 2, 0.002), Verdict.NOT_REPRODUCED),
    ("refutes: one head Gaussian (kurtosis below 0)", _h1(np.r_[-0.05, -0.03, -0.02, -0.01, 0.0, 0.0], 0.004),
     Verdict.NOT_REPRODUCED),
    ("refutes: one head Gaussian (kurtosis 0 +- noise)", _h1(np.zeros(6), 0.01), Verdict.NOT_REPRODUCED),
    ("refutes: one head far below the scale mixture's kurtosis", _h1(0.1 / H, 0.004), Verdict.NOT_REPRODUCED),
    ("inconclusive: one head on half the scale mixture's kurtosis", _h1(0.17 / H, 0.004), Verdict.INCONCLUSIVE),
    ("inconclusive: slope on the band edge", _h1(0.34 * H ** -0.75, 0.004), Verdict.INCONCLUSIVE),
    ("underpowered: kappa_1/H with a wide interval", _h1(0.34 / H, 0.15, n=2000), Verdict.INCONCLUSIVE),
])
def test_h1_four_directions(name, res, expected):
    ev = _check(claims.evaluate_h1(res, "smoke"), expected)
    if "underpowered" in name:
        slope = ev.measured["heads_law_slope"]
        assert slope.contains(-1.0) and slope.high - slope.low > 0.5
        assert any(p.needed > p.size for p in ev.power)


def _planted_draws(heads, n, independent, rng):
    """Output of H heads with Laplace-like head terms sqrt(v) z, v ~ Exp(1) (excess kurtosis 3):
    i.i.d. heads give kappa_1/H; heads sharing one v (dependent) keep kurtosis 3 at every H."""
    v = rng.exponential(1.0, size=(n, heads)) if independent else np.repeat(rng.exponential(1.0, (n, 1)), heads, 1)
    return (np.sqrt(v) * rng.standard_normal((n, heads))).sum(axis=1) / np.sqrt(heads)


@pytest.mark.parametrize("independent,expected", [(True, Verdict.REPRODUCED), (False, Verdict.NOT_REPRODUCED)])
def test_h1_heads_law_on_planted_draws(independent, expected):
    rng = np.random.default_rng(3)
    heads, rows = [1, 2, 4, 8, 16], []
    for h in heads:
        x = _planted_draws(h, 200000, independent, rng)
        iv, reps = gaussianity.kurtosis_bootstrap(x, n_boot=400, seed=h)
        assert iv.value == pytest.approx(gaussianity.excess_kurtosis(x), rel=1e-6)
        rows.append({"heads": h, "n_draws": x.size, "variance": float(x.var()), "kurtosis": iv.as_dict(),
                     "kurtosis_boot": reps.tolist(), "ks": Interval(0.0, 0.0, 0.0).as_dict()})
    res = {"H1_gaussianity": {"per_heads": rows, "ks_null_95": 0.01, "ks_draws": 1000, "d": 1, "seq_len": 1,
                              "scale_mixture_kurtosis_1_head": {"value": 3.0, "se": 0.0, "n_draws": 1}}}
    ev = _check(claims.evaluate_h1(res, "smoke"), expected)
    slope = ev.measured["heads_law_slope"]
    if independent:
        assert slope.contains(-1.0) and slope.inside(-1.25, -0.75)
        assert ev.measured["heads_law_kappa_1"].contains(3.0)
    else:
        assert slope.contains(0.0)


def _h1_rows_from_draws(draws_by_heads, seed=0):
    rows = []
    for h, x in draws_by_heads.items():
        iv, reps = gaussianity.kurtosis_bootstrap(x, n_boot=400, seed=seed + h)
        rows.append({"heads": h, "n_draws": x.size, "variance": float(x.var()), "kurtosis": iv.as_dict(),
                     "kurtosis_boot": reps.tolist(), "ks": Interval(0.0, 0.0, 0.0).as_dict()})
    return rows


def test_h1_gaussian_draws_are_rejected_now_and_were_undecided_before():
    """Issue 21: Gaussian draws of the measured variance (the gaussian_draws control) must make part (a)
    fail. Under the old part (a) ('refuted iff the interval lies below 0') they were undecided, so the
    criterion could not reject that control; against half the scale mixture's kurtosis it is refuted."""
    rng = np.random.default_rng(5)
    heads = [1, 2, 4, 8, 16]
    rows = _h1_rows_from_draws({h: rng.standard_normal(200000) for h in heads})
    res = {"H1_gaussianity": {"per_heads": rows, "ks_null_95": 0.01, "ks_draws": 1000, "d": 1, "seq_len": 1,
                              "scale_mixture_kurtosis_1_head": {"value": 0.33, "se": 0.001, "n_draws": 1}}}
    ev = claims.evaluate_h1(res, "smoke")
    k1 = ev.measured["kurtosis_1_head"]
    assert k1.contains(0.0)                                   # the old part (a) could not decide this
    assert at_least(k1, 0.0) is Status.UNDECIDED
    assert ev.parts[claims.H1_ONE_HEAD] is Status.REFUTED and ev.verdict is Verdict.NOT_REPRODUCED


def _h1_with_controls(gaussian, shared, seed=0):
    """Planted H1 results with i.i.d. Laplace-like heads (kurtosis 3/H) and the two control payloads:
    ``gaussian`` / ``shared`` True give the controls' laws, False copy the real rows (a control the
    criterion cannot reject)."""
    rng = np.random.default_rng(seed)
    heads = [1, 2, 4, 8, 16]
    real = {h: _planted_draws(h, 100000, True, rng) for h in heads}
    rows = _h1_rows_from_draws(real)
    g_rows = (_h1_rows_from_draws({h: np.sqrt(x.var()) * rng.standard_normal(x.size) for h, x in real.items()})
              if gaussian else rows)
    s_rows = _h1_rows_from_draws({h: (real[1] if h == 1 else _planted_draws(h, 100000, False, rng)) for h in heads}
                                 ) if shared else rows
    base = {"ks_null_95": 0.01, "ks_draws": 1000, "d": 1, "seq_len": 1,
            "scale_mixture_kurtosis_1_head": {"value": 3.0, "se": 0.0, "n_draws": 1}}
    return {"H1_gaussianity": {**base, "per_heads": rows, "provenance": {},
                               "controls": {"gaussian_draws": {**base, "per_heads": g_rows},
                                            "shared_heads": {**base, "per_heads": s_rows}}}}


def test_h1_entry_rejects_both_controls_and_is_capped_when_one_is_not_rejected():
    e = make_entry("H1", _h1_with_controls(True, True), scale="smoke")
    assert e["verdict"] == "reproduced" and e["criterion_verdict"] == "reproduced"
    ctrl = {c["name"]: c for c in e["controls"]}
    assert set(ctrl) == {"gaussian_draws", "shared_heads"} and all(c["rejected"] for c in ctrl.values())
    assert ctrl["gaussian_draws"]["parts"][claims.H1_ONE_HEAD] == "refuted"
    assert ctrl["shared_heads"]["parts"]["heads-law slope in [-1.25, -0.75]"] == "refuted"
    capped = make_entry("H1", _h1_with_controls(True, False), scale="smoke")
    assert capped["verdict"] == "inconclusive" and "shared_heads" in capped["reason"]


def test_h1_needs_replicates_and_one_head():
    res = _h1(0.34 / H, 0.004)
    del res["H1_gaussianity"]["per_heads"][2]["kurtosis_boot"]
    with pytest.raises(ValueError, match="bootstrap replicates"):
        claims.evaluate_h1(res, "smoke")
    res = _h1(0.34 / H, 0.004)
    res["H1_gaussianity"]["per_heads"][0]["heads"] = 3
    with pytest.raises(ValueError, match="1 head"):
        claims.evaluate_h1(res, "smoke")
    res = _h1(0.34 / H, 0.004)
    del res["H1_gaussianity"]["scale_mixture_kurtosis_1_head"]
    with pytest.raises(ValueError, match="scale mixture"):
        claims.evaluate_h1(res, "smoke")


# ============================================================================================ H2
def _h2(slope_spread, slope_dist, last, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for d in [4, 16, 64, 256, 1024]:
        s = 0.5 * (d / 4) ** slope_spread * np.exp(noise * rng.standard_normal())
        n = 0.05 * (d / 4) ** slope_dist * np.exp(noise * rng.standard_normal())
        rows.append({"d": d, "spread": Interval(s, s * 0.99, s * 1.01).as_dict(),
                     "nngp_distance": Interval(n, n * 0.9, n * 1.1).as_dict()})
    rows[-1]["nngp_distance"] = Interval(*last).as_dict()
    return {"H2_average_pooling": {"per_d": rows, "n_draws": 10, "n_inputs": 2, "seq_len": 4, "d_in": 8,
                                   "tied_linear_scaling_distance": 0.1}}


@pytest.mark.parametrize("res,expected", [
    (_h2(-0.5, -0.5, (0.003, 0.002, 0.004)), Verdict.REPRODUCED),
    (_h2(0.05, -0.5, (0.003, 0.002, 0.004)), Verdict.NOT_REPRODUCED),            # spread grows with d
    (_h2(-0.5, 0.1, (0.087, 0.08, 0.09)), Verdict.NOT_REPRODUCED),               # distance grows with d
    (_h2(-0.5, -0.5, (0.5, 0.45, 0.55)), Verdict.INCONCLUSIVE),                   # shrinking, still far from GAP
    (_h2(-0.5, -0.5, (0.08, 0.02, 0.3)), Verdict.INCONCLUSIVE),                   # point below 0.1, interval not
    (_h2(-0.05, -0.05, (0.003, 0.002, 0.004), noise=1.0), Verdict.INCONCLUSIVE),  # underpowered: wide slopes
])
def test_h2_four_directions(res, expected):
    _check(claims.evaluate_h2(res, "smoke"), expected)


def test_h2_no_collapse_is_refuted_now_and_was_undecided_before():
    """Issue 21: under d^-1/2 logits (the sqrt_scaling control) spread and distance do not shrink: slopes
    about 0 with intervals straddling 0, which the old 'refuted iff wholly at or above 0' left undecided;
    judged against -1/4 (half the slowest predicted rate) both are refuted."""
    res = _h2(0.0, 0.0, (0.2, 0.18, 0.22), noise=0.05, seed=3)
    ev = claims.evaluate_h2(res, "smoke")
    for key in ("spread_slope_vs_log_d", "nngp_distance_slope_vs_log_d"):
        sl = ev.measured[key]
        assert sl.low < 0 < sl.high                                   # the old criterion: undecided
        assert sl.low > claims.H2_SLOPE_MARGIN
    assert all(ev.parts[k] is Status.REFUTED for k in ev.parts if "slope" in k)
    assert ev.verdict is Verdict.NOT_REPRODUCED


def test_h2_a_slow_collapse_is_not_enough():
    """A distance that falls, but slower than half the predicted rate (d^-0.1), does not hold."""
    last = 0.05 * 256 ** -0.1                                 # on the d^-0.1 line, below 0.1
    _check(claims.evaluate_h2(_h2(-0.5, -0.1, (last, 0.9 * last, 1.1 * last)), "smoke"), Verdict.NOT_REPRODUCED)
    _check(claims.evaluate_h2(_h2(-0.5, -0.25, (0.003, 0.002, 0.004), noise=0.3, seed=1), "smoke"),
           Verdict.INCONCLUSIVE)


def _h2_entry_results(control_slope, control_last=(0.2, 0.18, 0.22)):
    res = _h2(-0.5, -0.5, (0.003, 0.002, 0.004))
    ctrl = _h2(control_slope, control_slope, control_last, noise=0.05, seed=3)["H2_average_pooling"]
    res["H2_average_pooling"]["controls"] = {"sqrt_scaling": ctrl}
    return res


def test_h2_entry_rejects_its_control_and_is_uninformative_when_the_control_passes_too():
    """Control rule of commit 49365b4: a refuted or inconclusive control leaves the claim reproduced;
    a control that passes the same criterion makes it inconclusive, 'uninformative at this scale'."""
    e = make_entry("H2", _h2_entry_results(0.0), scale="smoke")
    assert e["verdict"] == "reproduced" and [(c["name"], c["verdict"]) for c in e["controls"]] == [
        ("sqrt_scaling", "not_reproduced")]
    # a control that collapses but stays far from GAP at the largest d: inconclusive, no longer caps
    half = make_entry("H2", _h2_entry_results(-0.5), scale="smoke")
    assert half["controls"][0]["verdict"] == "inconclusive"
    assert half["verdict"] == "reproduced" and UNINFORMATIVE not in half["reason"]
    # a control that reduces to GAP like the real run: the run cannot tell them apart
    both = make_entry("H2", _h2_entry_results(-0.5, (0.003, 0.002, 0.004)), scale="smoke")
    assert both["controls"][0]["verdict"] == "reproduced"
    assert both["criterion_verdict"] == "reproduced" and both["verdict"] == "inconclusive"
    assert "holds in 'sqrt_scaling' too" in both["reason"] and UNINFORMATIVE in both["reason"]


# ============================================================================================ H3
def _h3(exponent, noise, widths=(16, 32, 64, 128), reps=4, seed=0):
    rng = np.random.default_rng(seed)
    rows = [{"width": w, "n_heads": 1,
             "nngp_distance": list(w ** exponent * np.exp(noise * rng.standard_normal(reps))),
             "ntk_distance": list(w ** exponent * np.exp(noise * rng.standard_normal(reps)))} for w in widths]
    return {"H3_kernel_convergence": {"per_width": rows, "n_samples": 4, "n_replicates": reps, "n_inputs": 4,
                                      "image_size": 4, "archive": "x.tar.gz", "archive_sha256": "0"}}


@pytest.mark.parametrize("res,expected", [
    (_h3(-0.5, 0.05), Verdict.REPRODUCED),
    (_h3(0.3, 0.05), Verdict.NOT_REPRODUCED),
    (_h3(-0.25, 0.3), Verdict.INCONCLUSIVE),                               # on the -1/4 margin
    (_h3(-0.02, 0.05), Verdict.NOT_REPRODUCED),                            # stops falling
    (_h3(-0.5, 1.5, widths=(16, 32, 64), reps=2), Verdict.INCONCLUSIVE),   # underpowered: true slope -0.5
])
def test_h3_four_directions(res, expected):
    ev = _check(claims.evaluate_h3(res, "smoke"), expected)
    assert "independent (width, replicate)" in ev.measured["nngp_distance_slope_vs_log_width"].method


def _h3_plateau(floor, widths=(16, 32, 64, 128, 256), reps=5, seed=0, mc=2.0):
    """Distances to a wrong kernel (the H3 control): the Monte Carlo error (``mc`` width^-1/2, 30%
    noise) on top of a floor the distance cannot fall below."""
    rng = np.random.default_rng(seed)
    rows = [{"width": w, "n_heads": 1,
             **{f"{g}_distance": list(np.hypot(floor, mc * w ** -0.5 * np.exp(0.3 * rng.standard_normal(reps))))
                for g in ("nngp", "ntk")}} for w in widths]
    return {"H3_kernel_convergence": {"per_width": rows, "n_samples": 4, "n_replicates": reps, "n_inputs": 4,
                                      "image_size": 4, "archive": "x.tar.gz", "archive_sha256": "0"}}


def test_h3_a_distance_that_stops_falling_is_refuted_now_and_was_undecided_before():
    """Issue 21: distances to a wrong analytic kernel level off at its bias. Their slope is slightly
    negative (the Monte Carlo error still shrinks on top of the floor): the old part 'holds iff wholly
    below 0, refuted iff wholly at or above 0' calls that converging; against -1/4 it is refuted."""
    ev = claims.evaluate_h3(_h3_plateau(1.0), "smoke")
    for g in ("nngp", "ntk"):
        sl = ev.measured[f"{g}_distance_slope_vs_log_width"]
        assert sl.high < 0                                      # the old criterion: holds
        assert sl.low > claims.H3_SLOPE_MARGIN
    assert ev.verdict is Verdict.NOT_REPRODUCED


#: The H3 control's offset: a limit 3 % larger is at relative distance 0.03 / 1.03 from the true one.
OFF3 = 0.03 / 1.03
#: Widths that resolve a 3 % offset: the Monte Carlo error 0.5 width^-1/2 falls from 0.125 to 0.004.
RESOLVING = (16, 64, 256, 1024, 4096, 16384)


def test_h3_criterion_rejects_a_kernel_3pct_off():
    """Issue 28: the H3 criterion does not reproduce on a limit 3 % off once the widths carry the
    Monte Carlo error below the offset (the distance levels off at 3 %), while the true limit, the
    same Monte Carlo error without the floor, reproduces over the same widths."""
    wrong = claims.evaluate_h3(_h3_plateau(OFF3, widths=RESOLVING, reps=10, mc=0.5), "smoke")
    assert wrong.verdict is not Verdict.REPRODUCED, wrong.reason
    right = claims.evaluate_h3(_h3_plateau(0.0, widths=RESOLVING, reps=10, mc=0.5), "smoke")
    assert right.verdict is Verdict.REPRODUCED, right.reason
    # the plateau is wholly visible (Monte Carlo error below the offset from the first width on): refuted
    flat = claims.evaluate_h3(_h3_plateau(OFF3, widths=RESOLVING, reps=10, mc=0.05), "smoke")
    assert flat.verdict is Verdict.NOT_REPRODUCED, flat.reason


def test_h3_entry_rejects_its_control_and_is_uninformative_when_the_widths_cannot_tell():
    """The control rule on H3's 3 %-off control: rejected where the widths resolve 3 %; where the
    Monte Carlo error stays far above 3 % at every width the control converges just like the run, so
    the entry is inconclusive, 'uninformative at this scale' (rule 8), whatever the criterion alone says."""
    res = _h3_plateau(0.0, widths=RESOLVING, reps=10, mc=0.5)
    res["H3_kernel_convergence"]["controls"] = {
        "kernel_3pct_off": {**_h3_plateau(OFF3, widths=RESOLVING, reps=10, mc=0.5)["H3_kernel_convergence"],
                            "analytic_offset": {"nngp": OFF3, "ntk": OFF3}}}
    e = make_entry("H3", res, scale="smoke")
    assert e["controls"][0]["name"] == "kernel_3pct_off" and e["controls"][0]["verdict"] != "reproduced"
    assert e["verdict"] == "reproduced", e["reason"]
    assert "3 % off" in e["reason"] and e["measured"]["nngp_offset_of_the_3pct_off_limit (control; reported)"] == OFF3
    # widths 16..256 with a Monte Carlo error 2 width^-1/2 (0.5 .. 0.125): 3 % is invisible
    small = (16, 32, 64, 128, 256)
    res = _h3_plateau(0.0, widths=small, reps=10)
    res["H3_kernel_convergence"]["controls"] = {"kernel_3pct_off": _h3_plateau(OFF3, widths=small, reps=10)[
        "H3_kernel_convergence"]}
    capped = make_entry("H3", res, scale="smoke")
    assert capped["controls"][0]["verdict"] == "reproduced"
    assert capped["criterion_verdict"] == "reproduced" and capped["verdict"] == "inconclusive"
    assert "holds in 'kernel_3pct_off' too" in capped["reason"] and UNINFORMATIVE in capped["reason"]


def test_h3_slope_uses_every_replicate():
    res = _h3(-0.5, 0.0)
    rows = res["H3_kernel_convergence"]["per_width"]
    rows[0]["nngp_distance"][0] *= 10            # one outlying replicate moves the pooled fit
    s = claims.h3_slope(rows, "nngp")
    x = [np.log(r["width"]) for r in rows for _ in r["nngp_distance"]]
    y = [np.log(v) for r in rows for v in r["nngp_distance"]]
    assert s.value == pytest.approx(np.polyfit(x, y, 1)[0]) and s.value < -0.5 and s.high > s.low


# ============================================================================================ H4
H4_FAMILIES = ["flatten", "gap", "lap", "vanilla", "struct", "residual"]


CURVE_SIZES = [25, 25, 50, 50, 100, 100, 200]


def _resampled(base, common, rng, sizes=CURVE_SIZES, n_fit=200, slope=0.02):
    """Synthetic two-way bootstrap accuracies (``common``: the shared test/training resample, so that
    differences between models are paired) and a learning curve rising as ``slope`` per unit log n."""
    return {"boot_accuracy": (base + common + rng.normal(0, 0.003, common.size)).tolist(),
            "curve_accuracy": [base + slope * np.log(m / n_fit) for m in sizes]}


def _two_draws(base, rng, half_diff=0.0, n_fit=200, n_boot=200):
    """Synthetic null pair of one model (issue 28): the model on two halves of its training rows,
    accuracies ``base + half_diff`` and ``base`` (true difference ``half_diff``), paired resamples."""
    common = rng.normal(0, 0.008, n_boot)
    sizes = [m // 2 for m in CURVE_SIZES]
    return [{"n_fit": n_fit // 2, "accuracy": base + dd, "curve_sizes": sizes,
             **_resampled(base + dd, common, rng, sizes=sizes, n_fit=n_fit // 2)} for dd in (half_diff, 0.0)]


def _h4(diffs, shallow_acc, deep_acc, n_val=400, depths=(1, 2, 3), seed=0, per_point=True, n_test=500, level=0.5,
        slope=0.02, half_diff=0.0):
    """Synthetic H4 results: ordering differences ``diffs`` (two-way bootstrap +-~0.01) of final models
    around accuracy ``level``, per-image validation correctness with accuracy ``shallow_acc`` at the two
    smallest depths and ``deep_acc`` deeper (non-Flatten), and a permuted-label control at chance."""
    rng = np.random.default_rng(seed)
    d_sv, d_rv, d_sg, d_sl = diffs
    base = {"vanilla": level, "struct": level + d_sv, "residual": level + d_rv, "flatten": level}
    base.update(gap=base["struct"] - d_sg, lap=base["struct"] - d_sl)
    common = rng.normal(0, 0.005, 200)
    comps = [{"kernel": g, "a": a, "b": b, "a_is_best_attention_on_val": a == "struct",
              "difference": Interval(base[a] - base[b], base[a] - base[b] - 0.02, base[a] - base[b] + 0.02).as_dict()}
             for g in ("nngp", "ntk") for (a, b) in [("struct", "vanilla"), ("residual", "vanilla"),
                                                      ("struct", "gap"), ("struct", "lap")]]
    sweep = []
    for f in H4_FAMILIES:
        for g in ("nngp", "ntk"):
            for i, dp in enumerate(sorted(depths)):
                acc = shallow_acc if i < 2 else deep_acc
                if f == "flatten":
                    acc = deep_acc if i < 2 else shallow_acc
                ok = (rng.random(n_val) < acc).astype(int)
                row = {"family": f, "depth": dp, "kernel": g, "diag_reg": 0.01, "val_accuracy": float(ok.mean())}
                if per_point:
                    row["val_correct"] = ok.tolist()
                sweep.append(row)
    final = [{"family": f, "kernel": g, "depth": 1, "selected_depth": 1, "val_accuracy": 0.5,
              "test_accuracy": Interval(base[f], base[f] - 0.05, base[f] + 0.05).as_dict(),
              **_resampled(base[f], common, rng, slope=slope)} for g in ("nngp", "ntk") for f in H4_FAMILIES]
    rs = {"n_boot": 200, "n_fit": 200, "curve_sizes": CURVE_SIZES, "paper_n_fit": 50000, "chance": 0.1}
    r = {"comparisons": comps, "final": final, "sweep": sweep, "depths": list(depths),
         "families": H4_FAMILIES, "n_train": 10, "n_val": n_val, "n_test": n_test,
         "image_size": 8, "archive": "cifar-10-python.tar.gz", "archive_sha256": "0",
         "params": {"n_boot": 500, "seed": 0}, "train_resample": rs}
    ctrl = {**r, "final": [{**f, "test_accuracy": Interval(0.1, 0.08, 0.12).as_dict(),
                            **_resampled(0.1 + 0.002 * k, rng.normal(0, 0.01, 200), rng, slope=0.0)}
                           for k, f in enumerate(final)],
            "comparisons": [{**c, "difference": Interval(0.0, -0.02, 0.02).as_dict()} for c in comps]}
    with_pairs = {**r, "final": [{**f, "two_draws": _two_draws(base[f["family"]], rng, half_diff)}
                                 if f["family"] in ("vanilla", "struct", "residual") else f for f in final]}
    r["controls"] = {"permuted_labels": ctrl, "same_family_two_draws": cifar10.null_ordering_control(with_pairs)}
    return {"H4_cifar10_kernels": r}


@pytest.mark.parametrize("name,res,expected", [
    ("reproduces", _h4([0.05] * 4, 0.6, 0.45), Verdict.REPRODUCED),
    ("refutes: GAP beats attention", _h4([0.05, 0.05, -0.05, 0.05], 0.6, 0.45), Verdict.NOT_REPRODUCED),
    ("refutes: deeper is better", _h4([0.05] * 4, 0.4, 0.6), Verdict.NOT_REPRODUCED),
    ("inconclusive: an ordering undecided", _h4([0.05, 0.0, 0.05, 0.05], 0.6, 0.45), Verdict.INCONCLUSIVE),
    ("inconclusive: no depth effect", _h4([0.05] * 4, 0.5, 0.5, seed=2), Verdict.INCONCLUSIVE),
    ("underpowered: 12 validation images", _h4([0.05] * 4, 0.6, 0.45, n_val=12, seed=1), Verdict.INCONCLUSIVE),
    ("two depths cannot decide the depth ordering", _h4([0.05] * 4, 0.6, 0.45, depths=(1, 2)), Verdict.INCONCLUSIVE),
])
def test_h4_four_directions(name, res, expected):
    ev = _check(claims.evaluate_h4(res, "paper"), expected)
    if "underpowered" in name:
        iv = next(v for k, v in ev.measured.items() if k.startswith("depth ordering"))
        assert iv.contains(0.0) and iv.value > 0
        assert any(p.size_name == "n_val" for p in ev.power)


def test_h4_old_results_leave_the_depth_ordering_out():
    ev = claims.evaluate_h4(_h4([0.05] * 4, 0.4, 0.6, per_point=False), "paper")
    assert ev.verdict is Verdict.REPRODUCED and "not judged" in ev.reason
    assert not any(k.startswith("depth ordering") for k in ev.parts)


def test_h4_power_line_is_in_the_training_count_with_the_predicted_verdict():
    ev = claims.evaluate_h4(_h4([0.05, 0.0, 0.05, 0.05], 0.6, 0.45), "paper")
    line = next(p for p in ev.power if "residual] - acc[vanilla]" in p.quantity)
    assert line.size_name == "n_train+val" and line.size == 200
    assert "no trend" in line.text()                  # flat difference curve: no training count decides it
    # a difference that grows with the training count is predicted to hold at a named size
    res = _h4([0.05, 0.0, 0.05, 0.05], 0.6, 0.45)
    for f in res["H4_cifar10_kernels"]["final"]:
        if f["family"] == "residual":
            f["curve_accuracy"] = [0.5 + 0.03 * np.log(m / 200) for m in CURVE_SIZES]
            f["curve_accuracy"] = [v + 0.01 * ((i % 2) - 0.5) for i, v in enumerate(f["curve_accuracy"])]
    ev = claims.evaluate_h4(res, "paper")
    line = next(p for p in ev.power if "residual] - acc[vanilla]" in p.quantity)
    assert "predicted to hold" in line.text() and 200 < line.needed < 50000


def test_h4_depth_contrast_is_shallow_minus_deep():
    res = _h4([0.05] * 4, 1.0, 0.0, n_val=5)["H4_cifar10_kernels"]
    c = claims.h4_depth_contrast(res["sweep"], res["depths"], ["gap", "struct"])
    np.testing.assert_array_equal(c, np.ones((2, 5)))
    np.testing.assert_array_equal(claims.h4_depth_contrast(res["sweep"], res["depths"], ["flatten"]), -np.ones((1, 5)))


# ============================================================================================ H5
MECHS, LNS = ("softmax", "relu", "identity"), ("none", "per_head", "output")


def _h5_runs(acc, seeds, rng, n_val, noise, epochs=4, learn=True):
    runs = []
    for m in MECHS:
        for ln in LNS:
            for s in seeds:
                a = acc(m, ln) + noise * rng.standard_normal()
                correct = (rng.random(n_val) < a).astype(int)
                curve = [0.1 + (a - 0.1) * (e / epochs if learn else 1.0) for e in range(1, epochs + 1)]
                runs.append({"mechanism": m, "layer_norm": ln, "seed": s, "val_accuracy": a, "finite": True,
                             "correct": correct.tolist(), "val_accuracy_by_epoch": curve})
    return runs


def _h5(acc, n_seeds=5, noise=0.0, seed=0, shift=0.2, n_val=400, epochs=4):
    """Synthetic H5 runs at accuracy ``acc(m, ln) + shift`` (well above chance by default, so that the
    regime is informative) and the permuted-label control (one seed per configuration, at chance)."""
    rng = np.random.default_rng(seed)
    runs = _h5_runs(lambda m, ln: acc(m, ln) + shift, range(n_seeds), rng, n_val, noise, epochs)
    ctrl_runs = _h5_runs(lambda m, ln: 0.1, [0], rng, n_val, 0.0, epochs, learn=False)
    base = {"epochs": epochs, "n_train": 10, "n_val": n_val, "image_size": 4, "archive": "x.tar.gz",
            "archive_sha256": "0"}
    return {"H5_finite_attention": {**base, "runs": runs, "seeds": list(range(n_seeds)),
                                    "params": {"n_boot": 300, "seed": 0},
                                    "controls": {"permuted_labels": {**base, "runs": ctrl_runs, "seeds": [0],
                                                                     "control_note": "permuted (test)"}}}}


def _part3(ev):
    return next(v for k, v in ev.parts.items() if k.startswith("acc[identity+LN output]"))


MECH = {"softmax": 0.0, "relu": 0.05, "identity": 0.08}
LNB = {"none": 0.0, "per_head": 0.03, "output": 0.06}


@pytest.mark.parametrize("name,res,expected", [
    ("reproduces", _h5(lambda m, ln: 0.3 + MECH[m] + LNB[ln], noise=0.003), Verdict.REPRODUCED),
    ("refutes: softmax best", _h5(lambda m, ln: 0.3 - MECH[m] + LNB[ln], noise=0.003), Verdict.NOT_REPRODUCED),
    ("refutes: identity+LN output 3 points behind identity+LN per head",
     _h5(lambda m, ln: 0.3 + MECH[m] + LNB[ln] + (0.06 if (m, ln) == ("identity", "per_head") else 0), noise=0.003),
     Verdict.NOT_REPRODUCED),
    ("inconclusive: no effects, noise", _h5(lambda m, ln: 0.3, noise=0.02, seed=4), Verdict.INCONCLUSIVE),
    ("underpowered: 2 seeds", _h5(lambda m, ln: 0.3 + MECH[m] + LNB[ln], n_seeds=2, noise=0.003), Verdict.INCONCLUSIVE),
])
def test_h5_four_directions(name, res, expected):
    ev = _check(claims.evaluate_h5(res, "smoke"), expected)
    if name == "reproduces":
        assert all(v["test"] == "permutation (exact)" for v in ev.measured.values() if isinstance(v, dict))
    if "underpowered" in name:
        assert _part3(ev) is Status.UNDECIDED          # 2 seeds cannot reach p < 0.05


def test_h5_best_is_non_inferiority_not_ci_contains_zero():
    """identity+LN output one point behind the best other is within the margin only if the test says so."""
    base = lambda m, ln: 0.3 + MECH[m] + LNB[ln]                                       # noqa: E731
    tie = _h5(lambda m, ln: base(m, ln) + (0.08 if (m, ln) == ("relu", "output") else 0), noise=0.0005)
    ev = claims.evaluate_h5(tie, "smoke")                      # relu+output leads by ~0.05: trails > 1 point
    assert _part3(ev) is Status.REFUTED
    near = _h5(lambda m, ln: base(m, ln) + (0.025 if (m, ln) == ("relu", "output") else 0), noise=0.0005)
    assert _part3(claims.evaluate_h5(near, "smoke")) is Status.HOLDS   # 0.005 behind < 0.01


def test_h5_paired_differences_pair_seed_and_fixed_factor():
    res = _h5(lambda m, ln: 0.3 + MECH[m])["H5_finite_attention"]
    d = claims.h5_paired_differences(res["runs"], {"mechanism": "relu"}, {"mechanism": "softmax"}, "layer_norm")
    assert d.shape == (15,) and np.allclose(d, 0.05)
    with pytest.raises(ValueError):
        claims.h5_paired_differences(res["runs"][:1], {"mechanism": "relu"}, {"mechanism": "softmax"}, "layer_norm")


# ============================================================================================ H6
H6_SIZES = [10, 10, 20, 20, 40, 40, 80]


def _family(correct, depth=1, jitter=0.0, boot_idx=None, slope=0.03):
    c = np.asarray(correct, float)
    acc = float(c.mean())
    return {"kernel": "nngp", "depth": depth, "diag_reg": 0.01, "valid_accuracy": acc, "jitter": jitter,
            "test_accuracy": bootstrap_ci(c, np.mean, n_boot=300, seed=0).as_dict(),
            "test_correct": c.astype(int).tolist(),
            "boot_accuracy": [float(c[i].mean()) for i in boot_idx],
            "curve_accuracy": [acc + slope * np.log(m / 80) for m in H6_SIZES]}


def _h6(acc_gap, acc_fcn, acc_struct, n=2000, pad=1e-7, shared=True, seed=0, control_acc=0.5, half_diff=0.0):
    """Synthetic H6 results: per-review correctness of each family (``shared``: a common difficulty,
    as on a real test set), two-way bootstrap replicates resampling the test reviews (the same draws
    for every family) and the permuted-label control at ``control_acc``."""
    rng = np.random.default_rng(seed)
    u = rng.random(n)  # shared difficulty: correlated correctness, as on a real common test set
    boot_idx = rng.integers(0, n, (300, n))

    def corr(acc):
        return (u < acc).astype(int) if shared else (rng.random(n) < acc).astype(int)

    def fams(accs, slope=0.03):
        g, f, s_, c = accs
        return {"gap": _family(corr(g), depth=0, boot_idx=boot_idx, slope=slope),
                "gap_fcn": _family(corr(f), boot_idx=boot_idx, slope=slope),
                "struct": _family(corr(s_), jitter=1e-9, boot_idx=boot_idx, slope=slope),
                "cnn_gap": _family(corr(c), boot_idx=boot_idx, slope=slope)}

    rs = {"n_boot": 300, "n_fit": 80, "curve_sizes": H6_SIZES, "paper_n_fit": 3200, "chance": 0.5}
    base = {"padding_invariance_max": pad, "train_resample": rs,
            "protocol": {"archive": "aclImdb-subset.tar.gz", "n_train": 3200, "n_valid": 1600, "n_test": n,
                         "seq_len": 500}}
    ctrl = {**base, "families": fams([control_acc] * 4, slope=0.0), "control_note": "permuted (test)"}
    real = {**base, "families": fams([acc_gap, acc_fcn, acc_struct, acc_fcn]), "params": {"n_boot": 300, "seed": 0}}
    # the ordering control's null pair: Struct on two halves of the training reviews (true difference half_diff)
    halves = []
    for dd in (half_diff, 0.0):
        c = ((u + 0.1 * rng.standard_normal(n)) < acc_struct + dd).astype(int)
        halves.append({**_family(c, boot_idx=boot_idx), "n_fit": 40, "accuracy": float(c.mean()),
                       "curve_sizes": [m // 2 for m in H6_SIZES]})
    real["families"]["struct"]["two_draws"] = halves
    real["controls"] = {"permuted_labels": ctrl, "same_family_two_draws": imdb.null_ordering_control(real)}
    return {"H6_imdb": real}


@pytest.mark.parametrize("name,res,expected", [
    ("reproduces", _h6(0.80, 0.86, 0.865), Verdict.REPRODUCED),
    ("refutes: Struct below GAP-only", _h6(0.86, 0.86, 0.80), Verdict.NOT_REPRODUCED),
    ("refutes: Struct 3 points above GAP-FCN (inside the old +-0.03 band)", _h6(0.75, 0.80, 0.83, n=8000),
     Verdict.NOT_REPRODUCED),
    ("refutes: competitive with SOTA", _h6(0.985, 0.99, 0.99), Verdict.NOT_REPRODUCED),
    ("inconclusive: few test reviews", _h6(0.80, 0.82, 0.83, n=60, shared=False), Verdict.INCONCLUSIVE),
    ("underpowered: equal families, 200 reviews", _h6(0.70, 0.85, 0.85, n=200, shared=False, seed=3),
     Verdict.INCONCLUSIVE),
    ("invalid kernels decide nothing", _h6(0.86, 0.86, 0.80, pad=1e-2), Verdict.INCONCLUSIVE),
])
def test_h6_four_directions(name, res, expected):
    ev = _check(claims.evaluate_h6(res, "paper"), expected)
    if "underpowered" in name:
        d = ev.measured["acc_struct_minus_gap_fcn"]
        assert d.contains(0.0) and d.high - d.low > 0.04
        pl = next(p for p in ev.power if "GAP-FCN" in p.quantity)
        assert pl.size_name == "n_train" and pl.size == 80 and "n_train" in pl.text()
    if name == "reproduces":
        assert "jitter 1e-09" in ev.measured["final_regression_jitter"]


def test_h6_uses_the_final_table_when_present():
    sel = _h6(0.86, 0.86, 0.80)["H6_imdb"]                 # selection split: Struct worse (refuted)
    fin = _h6(0.80, 0.86, 0.865, n=2000, seed=1)["H6_imdb"]["families"]
    sel["final"] = {"n_train": 25000, "n_test": 25000, "families": fin,
                    "train_resample": {**sel["train_resample"], "n_fit": 25000, "paper_n_fit": 25000}}
    ev = claims.evaluate_h6({"H6_imdb": sel}, "paper")
    assert ev.verdict is Verdict.REPRODUCED, ev.reason
    assert not any("final" in s for s in ev.substitutes)


def test_h6_substitutes_label_reduced_runs():
    r = _h6(0.8, 0.8, 0.8)["H6_imdb"]
    r["protocol"].update(n_train=200, seq_len=64,
                         archive_sha256="946775c79fc88d7450a8575a03076f4d670a576d556e5e2f4608218b59ef44f4")
    subs = claims.h6_substitutes(r)
    assert any("reduced protocol 200/" in s for s in subs) and any("not the official" in s for s in subs)
    assert any("final table was not run" in s for s in subs)


def test_data_substitute_labels_come_from_the_recorded_sha256_not_the_file_name():
    from ntkrepro.data import cifar10, imdb

    # H6: an archive named like the official one but with another sha256 is labelled; the official
    # sha256 under any file name is not; no recorded sha256 is labelled as unconfirmed
    r = _h6(0.8, 0.8, 0.8)["H6_imdb"]
    r["protocol"].update(archive="aclImdb_v1.tar.gz", archive_sha256="0" * 64)
    assert any("not the official" in s for s in claims.h6_substitutes(r))
    r["protocol"].update(archive="aclImdb-subset.tar.gz", archive_sha256=imdb.OFFICIAL_SHA256)
    assert not any("archive" in s for s in claims.h6_substitutes(r))
    del r["protocol"]["archive_sha256"]
    assert any("sha256 not recorded" in s for s in claims.h6_substitutes(r))
    # H4 (the ledger and the figure use the same function)
    h = _h4([0.05] * 4, 0.6, 0.45)["H4_cifar10_kernels"]
    h.update(archive="cifar-10-python.tar.gz", archive_sha256="0" * 64)
    assert any("not the official" in s for s in claims.evaluate_h4({"H4_cifar10_kernels": h}, "paper").substitutes)
    h.update(archive="cifar-10-python-subset.tar.gz", archive_sha256=cifar10.OFFICIAL_SHA256)
    assert claims.evaluate_h4({"H4_cifar10_kernels": h}, "paper").substitutes == []
    assert claims.h4_substitutes(h, "default")[0].startswith("10/400 train/validation")


# ==================================================================================== registration
@pytest.mark.parametrize("cid,version", [("H1", 4), ("H2", 3), ("H3", 4), ("H4", 5), ("H5", 5), ("H6", 6)])
def test_every_criterion_quotes_the_paper_and_logs_its_amendments(cid, version):
    spec = get_claim(cid)
    assert spec.evaluate is getattr(claims, f"evaluate_{cid.lower()}")
    assert spec.criterion.startswith("Paper") and '"' in spec.criterion
    assert spec.version == version and all(a.date in ("2026-12-02", "2026-12-04", "2026-12-05") and a.previous
                                           for a in spec.amendments)
    # a placeholder left in a past entry (the log is append-only) must be filled in by a correction
    corrected = {c.amendment for c in spec.corrections}
    assert not any(("BASELINE_" in v or "SMOKE_" in v) and i + 1 not in corrected
                   for i, a in enumerate(spec.amendments) for v in a.previous.values())


@pytest.mark.parametrize("cid", ["H1", "H2", "H3", "H4", "H5", "H6"])
def test_every_control_says_why_it_is_the_nearest_false_alternative(cid):
    """Issue 28 / CLAIMS.md rule 7: every H control carries why_nearest (a reason, or 'No near miss
    exists: ...'); H3's control is a limit a few percent off, not a factor of two."""
    spec = get_claim(cid)
    assert spec.controls and all(len(c.why_nearest) > 80 for c in spec.controls), [c.name for c in spec.controls]
    if cid == "H3":
        assert [c.name for c in spec.controls] == ["kernel_3pct_off"] and "3 %" in spec.controls[0].why_nearest
    if cid in ("H4", "H6"):
        assert [c.name for c in spec.controls] == ["permuted_labels", "same_family_two_draws"]


@pytest.mark.parametrize("cid", ["H4", "H5", "H6"])
def test_h4_h6_criteria_v3_log_issue_21_with_old_numbers_and_a_control(cid):
    spec = get_claim(cid)
    assert spec.evaluate is getattr(claims, f"evaluate_{cid.lower()}")
    assert spec.criterion.startswith("Paper") and "Regime rule (v3" in spec.criterion
    # H6 v4 (issue 21 section 3): the default training count its regime line named, a size amendment;
    # H4-H6 v4/v5 (issue 28): the power lines' range, and for H4, H6 the ordering control
    # H4-H6 v5/v6 (2026-12-05, after H5's decisive tier): the regime rule refutes only models not shown to learn
    dates = ["2026-12-02", "2026-12-04"] + (["2026-12-04"] if cid == "H6" else []) + ["2026-12-04", "2026-12-05"]
    assert spec.version == 1 + len(dates) and [a.date for a in spec.amendments] == dates
    assert all(a.previous.get("default") and a.previous.get("smoke") for a in spec.amendments[:-1])
    assert "Power lines (v4, issue 28)" in spec.criterion and "10x" in spec.amendments[-2].change
    last = spec.amendments[-1]
    assert last.previous.get("default") and "reaches down to chance" in spec.criterion
    if cid == "H5":  # the verdict the amendment changed, with its numbers
        assert "not_reproduced" in last.previous["decisive"] and "+0.157 [+0.142, +0.173]" in last.previous["decisive"]
    assert spec.controls[0].name == "permuted_labels" and "must" in spec.controls[0].why_fails


def test_inconclusive_entry_carries_power_line():
    e = make_entry("H6", _h6(0.80, 0.82, 0.83, n=60, shared=False), scale="smoke")
    assert e["verdict"] == "inconclusive" and e["power"] and "n_train" in e["power"][0]["text"]
    assert e["criterion_version"] == 6 and e["amendments"][0]["change"].startswith("'About equal' band")


def test_h3_width_reaching_the_control_offset_is_named_only_within_10x():
    rows = _h3(-0.5, 0.0, widths=(16, 32, 64, 128), reps=3)["H3_kernel_convergence"]["per_width"]
    s = claims.h3_slope(rows, "nngp")                      # D = w^-1/2: 0.088 at 128
    assert "width ~ 1112" in claims.h3_width_reaching(rows, "nngp", s, 0.03)       # (1/0.03)^2 = 1111.1
    far = claims.h3_width_reaching(rows, "nngp", s, 0.005)                        # 40,000 = 312x 128
    assert "needs a larger run to tell" in far and "width ~" not in far
    assert "measured" in claims.h3_width_reaching(rows, "nngp", s, 0.2)
