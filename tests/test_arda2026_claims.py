"""Arda et al. (2026) criteria A1-A5 on synthetic numbers, each in four directions: reproduces, refutes,
inconclusive, and an underpowered wide interval (which must come out inconclusive, with a power line)."""

import numpy as np
import pytest

from ntkrepro.arda2026 import claims  # noqa: F401  (registers A1-A5)
from ntkrepro.arda2026 import scaling
from ntkrepro.ledger import Verdict, get_claim, make_entry

TEACHER = {"kind": "authors", "R": 16, "nu": 3.0, "n_mc": 8192}


def iv(v, lo, hi):
    return {"value": v, "ci_low": lo, "ci_high": hi, "ci_level": 0.95, "method": "synthetic"}


def check(claim, results, expected):
    entry = make_entry(claim, results, scale="paper")
    assert entry["verdict"] == expected.value, entry["reason"]
    if expected is Verdict.INCONCLUSIVE:
        assert entry["power"], "an inconclusive entry needs a power line"
    assert entry["amendments"] and entry["criterion_version"] == 1 + len(entry["amendments"])
    return entry


# ------------------------------------------------------------------------------------------ A1
A1_PARAMS = {"n": 5000, "d": 8, "T": 16, "steps": 4000, "seeds": list(range(10)),
             "widths": [8, 16, 32, 64, 128, 256], "teacher": TEACHER}


def a1(slopes, paper=None, params=A1_PARAMS):
    def kind(sl):
        return {"metrics": {k: {"slope": iv(*s), "slope_medians": iv(*s), "median": [1e-4, 5e-5]}
                            for k, s in sl.items()}, "mean_y2": 1e-3}
    kinds = {"authors": kind(slopes)}
    if paper:
        kinds["paper"] = kind(paper)
    return {"A1_width_scaling": {"kinds": kinds, "headline_kind": "authors", "widths": [8, 256],
                                 "seeds": list(range(10)), "params": params}}


GOOD = {"min_train_loss": (-0.52, -0.6, -0.45), "approx_error": (-0.5, -0.55, -0.45), "lin_error": (-0.5, -0.6, -0.4)}


@pytest.mark.parametrize("change, expected", [
    ({}, Verdict.REPRODUCED),
    ({"min_train_loss": (-0.1, -0.2, 0.0)}, Verdict.NOT_REPRODUCED),           # wholly above the margin
    ({"lin_error": (-1.0, -1.1, -0.9)}, Verdict.NOT_REPRODUCED),               # wholly below
    ({"min_train_loss": (-0.33, -0.4, -0.25)}, Verdict.INCONCLUSIVE),          # straddles -0.35
    ({"approx_error": (-0.5, -2.0, 1.0)}, Verdict.INCONCLUSIVE),               # underpowered, contains -0.5
])
def test_a1_four_directions(change, expected):
    check("A1", a1({**GOOD, **change}), expected)


def test_a1_verdict_uses_the_authors_teacher_and_reports_the_papers():
    bad = {"min_train_loss": (-0.1, -0.2, 0.0), "approx_error": (-0.1, -0.2, 0.0)}
    e = check("A1", a1(GOOD, paper=bad), Verdict.REPRODUCED)
    assert e["measured"]["slope_min_train_loss_paper_teacher"]["value"] == -0.1
    assert "paper's teacher" in e["reason"] and any("diagonal logits" in s for s in e["substitutes"])
    e = check("A1", a1({**GOOD, **bad}, paper=GOOD), Verdict.NOT_REPRODUCED)


def test_a1_substitutes_listed_at_reduced_scale():
    small = dict(A1_PARAMS, n=1000, steps=400, seeds=[1, 2])
    subs = get_claim("A1").evaluate(a1(GOOD, params=small), "default").substitutes
    assert any("n=1000" in s for s in subs) and any("steps=400" in s for s in subs) and any("seeds=2" in s for s in subs)
    assert not any("n=" in s for s in get_claim("A1").evaluate(a1(GOOD), "paper").substitutes)


# ------------------------------------------------------------------------------------------ A2
def a2(p, valid=1000):
    k = {"exponent_p": iv(*p), "log_coef_a": iv(1, 0, 2), "fits": {"rss_log": 1.0, "rss_pow": 2.0},
         "n_boot_valid": valid, "m_star": [10, 12, 14], "n_values": [100, 1000, 10000], "target_error": 0.1,
         "frac_boot_log_better": 0.7, "n_units": 10, "label_stats": {"1": {"mean_y2": 1e-3}}}
    return {"A2_sample_size": {"kinds": {"authors": k}, "headline_kind": "authors",
                               "params": {"n_boot": 1000, "teacher": TEACHER, "seeds": list(range(10))}}}


@pytest.mark.parametrize("p, valid, expected", [
    ((0.1, 0.05, 0.2), 1000, Verdict.REPRODUCED),
    ((0.9, 0.7, 1.1), 1000, Verdict.NOT_REPRODUCED),
    ((0.45, 0.3, 0.6), 1000, Verdict.INCONCLUSIVE),
    ((0.1, -2.0, 0.4), 1000, Verdict.INCONCLUSIVE),   # wholly below 0.5 but wide: must not pass
    ((0.1, 0.05, 0.2), 100, Verdict.INCONCLUSIVE),    # m* undefined in most resamples
])
def test_a2_four_directions(p, valid, expected):
    check("A2", a2(p, valid), expected)


# ------------------------------------------------------------------------------------------ A3
def a3(s, paper=None):
    def kind(sl):
        m = {k: {"slope": iv(*sl), "mean": [1e-4, 1e-4, 1e-4]}
             for k in ("min_train_loss", "normalised_loss", "initial_loss")}
        return {"metrics": m, "slope_label_var": iv(-1, -1.2, -0.8), "T_values": [4, 16, 64],
                "teachers": [1, 2, 3, 4], "seeds": [1, 2, 3, 4]}
    kinds = {"authors": kind(s)}
    if paper:
        kinds["paper"] = kind(paper)
    return {"A3_sequence_length": {"kinds": kinds, "headline_kind": "authors", "m": 64, "n": 5000,
                                   "params": {"steps": 4000, "seeds": [1, 2, 3, 4], "teacher_seeds": [1, 2, 3, 4],
                                              "teacher": TEACHER}}}


@pytest.mark.parametrize("s, expected", [
    ((0.02, -0.05, 0.08), Verdict.REPRODUCED),
    ((-0.6, -0.9, -0.3), Verdict.REPRODUCED),        # falling with T agrees with a T-free bound
    ((0.4, 0.2, 0.6), Verdict.NOT_REPRODUCED),
    ((0.1, 0.02, 0.18), Verdict.INCONCLUSIVE),
    ((0.0, -1.5, 1.5), Verdict.INCONCLUSIVE),        # underpowered
])
def test_a3_four_directions(s, expected):
    check("A3", a3(s), expected)


def test_a3_papers_teacher_reported_not_judged():
    e = check("A3", a3((0.0, -0.05, 0.05), paper=(0.5, 0.3, 0.7)), Verdict.REPRODUCED)
    assert e["measured"]["slope_abs_loss_vs_T_paper_teacher"]["value"] == 0.5


def test_a3_hierarchical_interval_carries_teacher_variance(tmp_path):
    """A planted between-teacher spread widens the interval of the aggregated slope (and can flip it)."""
    from ntkrepro.io import write_json
    from ntkrepro.run import RunContext

    Ts, teachers, seeds = [4, 16, 64], [1, 2, 3, 4], [1, 2, 3, 4]

    def run(spread):
        rng = np.random.default_rng(0)
        rows = []
        for T in Ts:
            for t in teachers:
                level = np.exp(spread * rng.normal())
                for s in seeds:
                    loss = 1e-4 * level * np.exp(0.02 * rng.normal())
                    rows.append({"kind": "authors", "T": T, "teacher": t, "seed": s, "min_train_loss": loss,
                                 "final_train_loss": loss, "initial_loss": 1e-3, "normalised_loss": loss / 1e-3,
                                 "label_stats": {"var": 1e-3}})
        f = tmp_path / f"a3_{spread}.json"
        write_json(f, {"rows": rows})
        prm = {"shard_files": [str(f)], "n_boot": 400, "teacher": TEACHER, "m": 64, "n": 100, "steps": 10,
               "compare_kinds": []}
        return scaling.aggregate_a3(prm, RunContext(scale="smoke"))["kinds"]["authors"]["metrics"]["min_train_loss"]["slope"]

    tight, wide = run(0.0), run(0.8)
    assert tight["ci_high"] - tight["ci_low"] < 0.1 and tight["ci_high"] < 0.1     # seeds only: decided
    assert wide["ci_high"] - wide["ci_low"] > 3 * (tight["ci_high"] - tight["ci_low"])
    assert "hierarchical" in wide["method"]


# ------------------------------------------------------------------------------------------ A4
def a4(tf, rnn, grad):
    # slopes per unit L; span = 96 - 4 = 92
    m = {"tf_min_val": {"slope_linear": iv(*[v / 92 for v in tf]), "median": [0.3, 0.3]},
         "rnn_min_val": {"slope_linear": iv(*[v / 92 for v in rnn]), "median": [0.3, 0.9]},
         "rnn_grad_blockmax": {"slope": iv(*grad)}, "tf_grad_blockmax": {"slope": iv(0, -0.1, 0.1)}}
    return {"A4_lag_forecasting": {"metrics": m, "L_values": [4, 16, 72, 96], "seeds": list(range(20)),
                                   "params": {"n": 5000, "m": 64, "steps": 5000, "seeds": list(range(20)),
                                              "L_values": [4, 16, 72, 96], "grad_block": 500}}}


FLAT, GROWS, BLOWS = (0.0, -0.05, 0.05), (0.6, 0.4, 0.8), (1.0, 0.5, 1.5)


@pytest.mark.parametrize("tf, rnn, grad, expected", [
    (FLAT, GROWS, BLOWS, Verdict.REPRODUCED),
    ((0.5, 0.3, 0.7), GROWS, BLOWS, Verdict.NOT_REPRODUCED),         # transformer error grows
    ((-0.5, -0.7, -0.3), GROWS, BLOWS, Verdict.NOT_REPRODUCED),      # ... or falls: not flat either
    (FLAT, (-0.3, -0.5, -0.1), BLOWS, Verdict.NOT_REPRODUCED),
    (FLAT, GROWS, (-1.0, -1.5, -0.5), Verdict.NOT_REPRODUCED),
    (FLAT, (0.2, 0.05, 0.4), BLOWS, Verdict.INCONCLUSIVE),
    ((0.0, -1.0, 1.0), GROWS, BLOWS, Verdict.INCONCLUSIVE),          # underpowered flatness
])
def test_a4_four_directions(tf, rnn, grad, expected):
    e = check("A4", a4(tf, rnn, grad), expected)
    assert not any("read from the setting (W_in" in s for s in e["substitutes"])
    assert any("pairwise-symmetric" in s for s in e["substitutes"])


# ------------------------------------------------------------------------------------------ A5
def a5(cis, slope):
    return {"A5_attention_share": {"metrics": {"attention_share": {"ci": [iv(*c) for c in cis], "mean": [c[0] for c in cis]},
                                               "value_share": {"mean": [0.5] * len(cis)}},
                                   "attention_slope": iv(*slope), "widths": [8, 64, 512], "seeds": list(range(10)),
                                   "params": {"seeds": list(range(10))}}}


OK = [(0.3, 0.25, 0.35)] * 3


@pytest.mark.parametrize("cis, slope, expected", [
    (OK, (0.0, -0.02, 0.02), Verdict.REPRODUCED),
    (OK[:2] + [(0.005, 0.002, 0.008)], (-0.5, -0.6, -0.4), Verdict.NOT_REPRODUCED),
    (OK, (-0.3, -0.4, -0.2), Verdict.NOT_REPRODUCED),
    (OK, (-0.1, -0.2, 0.0), Verdict.INCONCLUSIVE),
    ([(0.3, -0.5, 1.1)] * 3, (0.0, -2.0, 2.0), Verdict.INCONCLUSIVE),   # underpowered
])
def test_a5_four_directions(cis, slope, expected):
    check("A5", a5(cis, slope), expected)


# ------------------------------------------------------------------------------------------ aggregation
def test_per_unit_slope_and_summarise_recover_known_slope():
    x = np.array([8, 16, 32, 64, 128], float)
    rng = np.random.default_rng(0)
    level = np.exp(rng.normal(0, 1.0, size=6))      # a big per-unit (teacher) level: cancels in the paired slope
    vals = level[None, :] * 2.0 * x[:, None] ** -0.5 * np.exp(0.02 * rng.normal(size=(5, 6)))
    s = scaling.summarise(x, vals, n_boot=300, paired=True)
    assert s["slope"]["ci_low"] < -0.5 < s["slope"]["ci_high"] and s["slope"]["ci_high"] - s["slope"]["ci_low"] < 0.1
    unpaired = scaling.summarise(x, vals, n_boot=300, paired=False)["slope"]
    assert unpaired["ci_high"] - unpaired["ci_low"] > 3 * (s["slope"]["ci_high"] - s["slope"]["ci_low"])
    with pytest.raises(ValueError):
        scaling.t_interval([1.0])
