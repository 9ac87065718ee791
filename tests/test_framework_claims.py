"""F1-F6 criteria on synthetic numbers, in both directions."""

import numpy as np
import pytest

from ntkrepro.framework import claims
from ntkrepro.ledger import Verdict, get_claim

W = [64, 256, 1024, 4096]


def _noisy(base, n_seeds=6, sd=0.03, seed=0):
    rng = np.random.default_rng(seed)
    base = np.asarray(base, float)
    return (base[:, None] * np.exp(rng.normal(0, sd, (base.size, n_seeds)))).tolist()


def test_all_framework_claims_registered():
    for c in ("F1", "F2", "F3", "F4", "F5", "F6"):
        spec = get_claim(c)
        assert spec.paper == "framework" and spec.evaluate is not None


def _f1(err, nt_rel=1e-16):
    return {"F1_linear_attention": {"widths": W, "rel_error": err, "rel_error_of_seed_mean": [0.01] * 4,
                                    "closed_vs_neural_tangents_max_rel": nt_rel, "params": {"n_boot": 300}}}


def test_f1_criterion():
    good = _noisy(2.0 * np.array(W, float) ** -0.5)  # 0.031 at 4096
    assert claims.evaluate_f1(_f1(good), "default").verdict is Verdict.REPRODUCED
    assert claims.evaluate_f1(_f1(good, nt_rel=1e-3), "default").verdict is Verdict.NOT_REPRODUCED
    rising = _noisy(0.01 * np.array(W, float) ** 0.5)
    assert claims.evaluate_f1(_f1(rising), "default").verdict is Verdict.NOT_REPRODUCED
    slow = _noisy(20.0 * np.array(W, float) ** -0.5)  # decreasing but 0.31 at the largest width
    assert claims.evaluate_f1(_f1(slow), "default").verdict is Verdict.INCONCLUSIVE


def _f2(widths, dev):
    return {"F2_deviation": {"widths": widths, "rel_deviation": dev, "params": {"n_boot": 300}}}


def test_f2_criterion():
    w = [64, 128, 256, 512, 1024]
    assert claims.evaluate_f2(_f2(w, _noisy(5.0 / np.array(w, float))), "default").verdict is Verdict.REPRODUCED
    ev = claims.evaluate_f2(_f2(w, _noisy(1.0 / np.sqrt(w))), "default")
    assert ev.verdict is Verdict.NOT_REPRODUCED and ev.measured["slope_vs_width"].contains(-0.5)
    wp = [256, 512, 2048, 4096]
    assert claims.evaluate_f2(_f2(wp, _noisy(20.0 / np.array(wp, float))), "paper").verdict is Verdict.REPRODUCED
    # slope -1 but even the widest deviates by > 5 %: the table part fails
    assert claims.evaluate_f2(_f2(wp, _noisy(400.0 / np.array(wp, float))), "paper").verdict is Verdict.NOT_REPRODUCED


def _f3_kernels(n=30, S=16, seed=0, pe_decay=3.0, coupling=0.3):
    rng = np.random.default_rng(seed)
    d = np.abs(np.arange(S)[:, None] - np.arange(S)[None])

    def noisy(base):
        e = rng.normal(0, 0.02, (n, S, S))
        return base[None] + 0.5 * (e + e.transpose(0, 2, 1))

    pe = noisy(np.eye(S) + coupling * np.exp(-d / pe_decay) + 0.2)
    no_pe = noisy(np.eye(S) + coupling * 0.5 + 0.2)
    no_attn = noisy(np.eye(S) + 0.05)
    return {"F3_positions": {"params": {"n_boot": 300}},
            "F3_position_kernels": {"pe": pe, "no_pe": no_pe, "no_attention_pe": no_attn}}


def test_f3_criterion():
    assert claims.evaluate_f3(_f3_kernels(), "default").verdict is Verdict.REPRODUCED
    r = _f3_kernels()
    k = r["F3_position_kernels"]
    k["no_attention_pe"], k["pe"] = k["pe"] + 0.5 * (1 - np.eye(16)), k["pe"]  # no-attention couples more
    assert claims.evaluate_f3(r, "default").verdict is Verdict.NOT_REPRODUCED


def _f6(corr=None, change=None, rank=None, loss=None, widths=(32, 64, 128, 256)):
    n = len(widths)
    z = np.zeros((n, 6)).tolist()
    return {"F6_training": {"widths": list(widths), "attention_ntk_corr": corr or z, "ntk_rel_change": change or z,
                            "eff_rank_init": rank or z, "test_loss": loss or z,
                            "params": {"n_boot": 300, "steps": 100}}}


def test_f4_criterion():
    rng = np.random.default_rng(0)
    up = (0.2 + 0.1 * np.arange(4)[:, None] + rng.normal(0, 0.01, (4, 6))).tolist()
    down = (0.6 - 0.1 * np.arange(4)[:, None] + rng.normal(0, 0.01, (4, 6))).tolist()
    flat = (0.3 + rng.normal(0, 0.05, (4, 6))).tolist()
    assert claims.evaluate_f4(_f6(corr=up), "default").verdict is Verdict.REPRODUCED
    assert claims.evaluate_f4(_f6(corr=down), "default").verdict is Verdict.NOT_REPRODUCED
    assert claims.evaluate_f4(_f6(corr=flat), "default").verdict is Verdict.INCONCLUSIVE


def test_f5_criterion():
    rng = np.random.default_rng(0)
    bidir = 5 + rng.normal(0, 0.2, (3, 10))
    r = {"F5_masking": {"eff_rank_bidirectional": bidir.tolist(), "eff_rank_causal": (bidir + 0.5).tolist(),
                        "params": {"n_boot": 300, "width": 64}}}
    assert claims.evaluate_f5(r, "default").verdict is Verdict.REPRODUCED
    r["F5_masking"]["eff_rank_causal"] = (bidir + rng.normal(0, 0.01, bidir.shape)).tolist()
    assert claims.evaluate_f5(r, "default").verdict is Verdict.NOT_REPRODUCED


def test_f6_criterion():
    w = np.array([32, 64, 128, 256], float)
    shrink = _noisy(2.0 / np.sqrt(w))
    grow = _noisy(0.01 * np.sqrt(w))
    rng = np.random.default_rng(1)
    rank = rng.uniform(5, 20, (4, 6))
    good_loss = (1.0 / rank + rng.normal(0, 0.001, rank.shape)).tolist()
    bad_loss = (rank / 20 + rng.normal(0, 0.001, rank.shape)).tolist()
    assert claims.evaluate_f6(_f6(change=shrink, rank=rank.tolist(), loss=good_loss), "default").verdict is Verdict.REPRODUCED
    assert claims.evaluate_f6(_f6(change=grow, rank=rank.tolist(), loss=good_loss), "default").verdict is Verdict.NOT_REPRODUCED
    assert claims.evaluate_f6(_f6(change=shrink, rank=rank.tolist(), loss=bad_loss), "default").verdict is Verdict.NOT_REPRODUCED


def test_missing_results_file_is_a_clear_error():
    with pytest.raises(KeyError, match="F2_deviation"):
        claims.evaluate_f2({}, "smoke")
