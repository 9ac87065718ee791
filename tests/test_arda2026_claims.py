"""Arda et al. (2026) criteria A1-A5 on synthetic results, in both directions."""

import numpy as np
import pytest

from ntkrepro.arda2026 import claims  # noqa: F401  (registers A1-A5)
from ntkrepro.arda2026.scaling import summarise
from ntkrepro.ledger import Verdict, get_claim, make_entry


def iv(v, lo, hi):
    return {"value": v, "ci_low": lo, "ci_high": hi, "ci_level": 0.95, "method": "synthetic"}


A1_PARAMS = {"n": 5000, "d": 8, "T": 16, "steps": 4000, "seeds": list(range(10)),
             "widths": [8, 16, 32, 64, 128, 256], "teacher": {"n_mc": 8192}}


def a1(slopes, params=A1_PARAMS):
    return {"A1_width_scaling": {"metrics": {k: {"slope": iv(*s)} for k, s in slopes.items()},
                                 "widths": [8, 256], "seeds": [1, 2, 3], "params": params}}


def test_a1_reproduced_refuted_inconclusive():
    ev = get_claim("A1").evaluate
    good = {"train_loss": (-0.52, -0.6, -0.45), "approx_error": (-0.45, -0.55, -0.4), "lin_error": (-0.6, -0.7, -0.56)}
    assert ev(a1(good), "paper").verdict is Verdict.REPRODUCED
    bad = dict(good, train_loss=(-0.1, -0.2, 0.0))
    assert ev(a1(bad), "paper").verdict is Verdict.NOT_REPRODUCED
    steep = dict(good, lin_error=(-1.0, -1.1, -0.9))
    assert ev(a1(steep), "paper").verdict is Verdict.NOT_REPRODUCED
    unsure = dict(good, train_loss=(-0.3, -0.4, -0.2))  # not consistent, not refuted
    assert ev(a1(unsure), "paper").verdict is Verdict.INCONCLUSIVE


def test_a1_substitutes_listed_at_reduced_scale():
    small = dict(A1_PARAMS, n=1000, steps=400, seeds=[1, 2])
    good = {k: (-0.5, -0.6, -0.4) for k in ("train_loss", "approx_error", "lin_error")}
    subs = get_claim("A1").evaluate(a1(good, small), "default").substitutes
    assert any("n=1000" in s for s in subs) and any("steps=400" in s for s in subs) and any("seeds=2" in s for s in subs)
    assert not any("n=" in s for s in get_claim("A1").evaluate(a1(good), "paper").substitutes)


def a2(p, rss_log, rss_pow, valid=1000):
    return {"A2_sample_size": {"exponent_p": iv(*p), "log_coef_a": iv(1, 0, 2),
                               "fits": {"rss_log": rss_log, "rss_pow": rss_pow}, "n_boot_valid": valid,
                               "m_star": [10, 12, 14], "n_values": [100, 1000, 10000], "target_error": 0.1,
                               "frac_boot_log_better": 0.7, "params": {"n_boot": 1000, "teacher": {"n_mc": 8192}}}}


def test_a2_both_directions():
    ev = get_claim("A2").evaluate
    assert ev(a2((0.1, 0.05, 0.2), 1.0, 2.0), "paper").verdict is Verdict.REPRODUCED
    assert ev(a2((0.9, 0.7, 1.1), 1.0, 2.0), "paper").verdict is Verdict.NOT_REPRODUCED
    assert ev(a2((0.1, 0.05, 0.2), 3.0, 2.0), "paper").verdict is Verdict.INCONCLUSIVE  # power law fits better
    assert ev(a2((0.1, 0.05, 0.2), 1.0, 2.0, valid=100), "paper").verdict is Verdict.INCONCLUSIVE


def a3(s):
    return {"A3_sequence_length": {"metrics": {"train_loss": {"slope": iv(*s), "median": [1, 1, 1]}},
                                   "T_values": [4, 16, 64], "m": 64, "n": 5000,
                                   "params": {"steps": 4000, "seeds": list(range(10)), "teacher": {"n_mc": 8192}}}}


def test_a3_both_directions():
    ev = get_claim("A3").evaluate
    assert ev(a3((0.01, -0.1, 0.12)), "paper").verdict is Verdict.REPRODUCED
    assert ev(a3((0.03, 0.01, 0.06)), "paper").verdict is Verdict.REPRODUCED  # negligible though nonzero
    assert ev(a3((0.4, 0.3, 0.5)), "paper").verdict is Verdict.NOT_REPRODUCED
    assert ev(a3((-0.2, -0.3, -0.15)), "paper").verdict is Verdict.NOT_REPRODUCED
    assert ev(a3((0.0, -0.5, 0.5)), "paper").verdict is Verdict.INCONCLUSIVE


def a4(tf, rnn, grad):
    # slopes per unit L; span = 96 - 4 = 92
    m = {"tf_min_val": {"slope_linear": iv(*[v / 92 for v in tf]), "median": [0.3, 0.3]},
         "rnn_min_val": {"slope_linear": iv(*[v / 92 for v in rnn]), "median": [0.3, 0.9]},
         "rnn_grad_blockmax": {"slope": iv(*grad)}, "tf_grad_blockmax": {"slope": iv(0, -0.1, 0.1)}}
    return {"A4_lag_forecasting": {"metrics": m, "L_values": [4, 16, 72, 96],
                                   "params": {"n": 5000, "m": 64, "steps": 5000, "seeds": list(range(20)),
                                              "L_values": [4, 16, 72, 96], "grad_block": 500}}}


def test_a4_both_directions():
    ev = get_claim("A4").evaluate
    assert ev(a4((0.0, -0.05, 0.05), (0.6, 0.4, 0.8), (1.0, 0.5, 1.5)), "paper").verdict is Verdict.REPRODUCED
    assert ev(a4((0.5, 0.3, 0.7), (0.6, 0.4, 0.8), (1.0, 0.5, 1.5)), "paper").verdict is Verdict.NOT_REPRODUCED
    assert ev(a4((0.0, -0.05, 0.05), (-0.3, -0.5, -0.1), (1.0, 0.5, 1.5)), "paper").verdict is Verdict.NOT_REPRODUCED
    assert ev(a4((0.0, -0.05, 0.05), (0.6, 0.4, 0.8), (-1.0, -1.5, -0.5)), "paper").verdict is Verdict.NOT_REPRODUCED
    assert ev(a4((0.0, -0.05, 0.05), (0.2, 0.05, 0.4), (1.0, 0.5, 1.5)), "paper").verdict is Verdict.INCONCLUSIVE


def a5(cis, slope):
    return {"A5_attention_share": {"metrics": {"attention_share": {"ci": [iv(*c) for c in cis], "mean": [c[0] for c in cis]},
                                               "value_share": {"mean": [0.5] * len(cis)}},
                                   "attention_slope": iv(*slope), "widths": [8, 64, 512], "params": {}}}


def test_a5_both_directions():
    ev = get_claim("A5").evaluate
    ok = [(0.3, 0.25, 0.35)] * 3
    assert ev(a5(ok, (0.0, -0.02, 0.02)), "paper").verdict is Verdict.REPRODUCED
    assert ev(a5(ok[:2] + [(0.005, 0.002, 0.008)], (-0.5, -0.6, -0.4)), "paper").verdict is Verdict.NOT_REPRODUCED
    assert ev(a5(ok, (-0.3, -0.4, -0.2)), "paper").verdict is Verdict.NOT_REPRODUCED
    assert ev(a5(ok, (-0.1, -0.2, 0.0)), "paper").verdict is Verdict.INCONCLUSIVE


def test_summarise_recovers_known_slope_and_entry_is_complete():
    x = np.array([8, 16, 32, 64, 128], float)
    rng = np.random.default_rng(0)
    vals = 2.0 * x[:, None] ** -0.5 * np.exp(0.02 * rng.normal(size=(5, 6)))
    s = summarise(x, vals, n_boot=300)
    assert s["slope"]["ci_low"] < -0.5 < s["slope"]["ci_high"]
    assert abs(s["slope"]["value"] + 0.5) < 0.03
    res = a1({k: (s["slope"]["value"], s["slope"]["ci_low"], s["slope"]["ci_high"])
              for k in ("train_loss", "approx_error", "lin_error")})
    entry = make_entry("A1", res, scale="paper")
    assert entry["verdict"] == "reproduced" and entry["measured"]["slope_lin_error"]["ci_low"] < -0.5
    with pytest.raises(KeyError):
        get_claim("A1").evaluate({"wrong": {}}, "paper")
