"""H6 (Hron et al. 2020, IMDb): model kernels, variable-length masking, the run
(criterion: test_hron2020_criteria.py)."""

from pathlib import Path

import numpy as np
import pytest

from ntkrepro.hron2020 import imdb as h6
from ntkrepro.hron2020 import claims

C = 100.0
SUBSET = Path(__file__).resolve().parents[1] / "../shared/data/aclImdb-subset.tar.gz"


def _masked_inputs(n=3, L=20, d=5, lengths=(20, 13, 7), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, L, d)).astype(np.float32)
    for i, ln in enumerate(lengths):
        x[i, ln:] = C
    return x


def test_gap_only_matches_the_masked_mean_embedding_formula():
    x = _masked_inputs()
    lengths = [20, 13, 7]
    k = h6.build_kernel_fn("gap", 0)(x, x, ("nngp", "ntk"), mask_constant=C)
    m = np.stack([x[i, :ln].astype(np.float64).mean(0) for i, ln in enumerate(lengths)])
    want = m @ m.T / x.shape[-1]  # K = m(X).m(X') / D over unmasked tokens only
    np.testing.assert_allclose(np.asarray(k.nngp), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(k.ntk), 2 * want, rtol=1e-5, atol=1e-7)


def _relu_nngp(k11, k22, k12):
    """E[relu(u) relu(v)] for (u, v) ~ N(0, [[k11, k12], [k12, k22]]) (arc-cosine kernel, order 1)."""
    norm = np.sqrt(k11 * k22)
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 only at masked positions, dropped later
        cos = np.clip(k12 / norm, -1.0, 1.0)
    th = np.arccos(cos)
    return norm * (np.sin(th) + (np.pi - th) * cos) / (2 * np.pi)


def test_gap_fcn_matches_arccos_of_the_gap_kernel():
    x = _masked_inputs()
    lengths = [20, 13, 7]
    m = np.stack([x[i, :ln].astype(np.float64).mean(0) for i, ln in enumerate(lengths)])
    k0 = m @ m.T / x.shape[-1]
    d = np.diag(k0)
    want = _relu_nngp(d[:, None], d[None, :], k0)
    got = h6.build_kernel_fn("gap_fcn", 1)(x, x, "nngp", mask_constant=C)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-7)


def test_cnn_gap_matches_a_direct_masked_computation():
    """Conv(k, VALID) -> Relu -> GAP -> Dense NNGP, written out: masked inputs are zero, the conv
    averages the input covariance along diagonals, an output is masked iff its window centre is."""
    k = 5
    x = _masked_inputs(L=16, d=4, lengths=(16, 12, 9), seed=2)
    xz = np.where(x == C, 0.0, x).astype(np.float64)
    L, D = x.shape[1], x.shape[2]
    out_len = L - k + 1
    real = ~np.all(x == C, axis=-1)                            # (n, L)
    out_real = real[:, (k - 1) // 2: (k - 1) // 2 + out_len]  # centre of each VALID window
    n = x.shape[0]
    want = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            def conv_cov(u, v):
                k0 = u @ v.T / D                               # input covariance (L, L)
                return np.mean([k0[t:t + out_len, t:t + out_len] for t in range(k)], axis=0)
            k12 = conv_cov(xz[a], xz[b])
            k11 = np.diag(conv_cov(xz[a], xz[a]))
            k22 = np.diag(conv_cov(xz[b], xz[b]))
            r = _relu_nngp(k11[:, None], k22[None, :], k12)
            want[a, b] = r[np.ix_(out_real[a], out_real[b])].mean()
    got = h6.build_kernel_fn("cnn_gap", 1, filter_size=k)(x, x, "nngp", mask_constant=C)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-7)


MARGIN_PARAMS = {"filter_size": 9, "cnn_depths": [1, 2], "attention_layers": [1, 2]}


@pytest.mark.parametrize("family,depth", [("gap", 0), ("gap_fcn", 1), ("cnn_gap", 2), ("struct", 1), ("struct", 2)])
def test_kernel_unchanged_when_padding_is_appended(family, depth):
    margin = h6.mask_margin(MARGIN_PARAMS)
    assert margin == 8
    # a truncated review (no padding of its own) and two shorter ones, all followed by the margin
    x = _masked_inputs(L=24 + margin, lengths=(24, 15, 11))
    kfn = h6.build_kernel_fn(family, depth)
    rel = h6.padding_invariance(kfn, x, extra=13, mask_constant=C)
    assert max(rel.values()) < 1e-5, rel
    # and the kernel does depend on the inputs (the check is not vacuous)
    k = kfn(x, x, "nngp", mask_constant=C)
    assert np.ptp(np.asarray(k)) > 1e-3


def test_valid_conv_needs_the_margin():
    """neural-tangents masks a VALID conv output by its window centre: without trailing masked
    positions the last (k-1)/2 tokens gain windows when padding is appended (why mask_margin exists)."""
    x = _masked_inputs(L=24, lengths=(24, 24, 24))
    rel = h6.padding_invariance(h6.build_kernel_fn("cnn_gap", 1), x, extra=6, mask_constant=C)
    assert max(rel.values()) > 1e-3


def test_mask_margin_and_model_grid():
    assert h6.mask_margin({"filter_size": 9, "cnn_depths": [1], "attention_layers": []}) == 4
    assert h6.mask_margin({"filter_size": 9, "cnn_depths": [3], "attention_layers": [1]}) == 12
    grid = h6.model_grid({"fcn_depths": [1], "cnn_depths": [1, 2], "attention_layers": [2]})
    assert grid == [("gap", 0), ("gap_fcn", 1), ("cnn_gap", 1), ("cnn_gap", 2), ("struct", 2)]
    with pytest.raises(ValueError, match="unknown model family"):
        h6.build_kernel_fn("lstm", 1)
    with pytest.raises(ValueError, match="depth"):
        h6.build_kernel_fn("struct", 0)


# ---- end to end on real data, tiny -------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(not SUBSET.exists(), reason="offline IMDb subset not available")
def test_run_h6_is_deterministic(tmp_path):
    from ntkrepro.run import RunContext

    params = {"seq_len": 16, "n_train": 12, "n_valid": 6, "n_test": 8, "mask_constant": C, "filter_size": 5,
              "W_pos_emb_std": 1.0, "fcn_depths": [1], "cnn_depths": [1], "attention_layers": [1],
              "diag_reg_grid": [1e-3, 1e-1], "block_size": 6, "dtype": "float32",
              "pad_check": {"n_reviews": 2, "extra": 5}, "n_boot": 100, "seed": 0,
              "final": {"n_train": 14, "n_test": 10},
              "imdb": {"archive": str(SUBSET),
                       "sha256": "946775c79fc88d7450a8575a03076f4d670a576d556e5e2f4608218b59ef44f4"},
              "glove": {"source": "wheel", "dim": 50}}
    runs = []
    for cache in ("a", "b"):  # two independent computations (separate kernel caches)
        ctx = RunContext(scale="smoke", params=params, outputs={"table": tmp_path / f"table_{cache}.csv"})
        runs.append(h6.run_h6({**params, "cache_dir": str(tmp_path / cache)}, ctx))
    for r in runs[1:]:
        assert r["families"] == runs[0]["families"]
        assert [m["kernels"] for m in r["models"]] == [m["kernels"] for m in runs[0]["models"]]
    assert runs[0]["padding_invariance_max"] < 1e-4
    assert runs[0]["protocol"]["array_length"] == 16 + 2
    assert {f["label"] for f in runs[0]["families"].values()} == {"GAP-only", "GAP-FCN", "CNN-GAP", "Struct"}
    import pandas as pd

    tab = pd.read_csv(tmp_path / "table_a.csv")
    assert len(tab) == 2 * len(runs[0]["models"]) and tab["selected"].sum() == len(runs[0]["families"])
    assert tab["final_test_accuracy"].notna().sum() == len(runs[0]["families"])
    assert (tmp_path / "table_a.csv").read_bytes() == (tmp_path / "table_b.csv").read_bytes()
    fin = runs[0]["final"]
    assert fin == runs[1]["final"] and set(fin["families"]) == set(runs[0]["families"])
    for f, v in fin["families"].items():
        sel = runs[0]["families"][f]
        assert (v["depth"], v["kernel"], v["diag_reg"]) == (sel["depth"], sel["kernel"], sel["diag_reg"])
        assert len(v["test_correct"]) == 10
    assert any("reduced final table 14/10" in s for s in claims.h6_substitutes(runs[0]))
    for f, v in runs[0]["families"].items():  # the jitter of every test-set regression is recorded
        assert v["jitter"] >= 0 and fin["families"][f]["jitter"] >= 0
