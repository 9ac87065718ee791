"""F2-F6 compute functions at toy sizes (deterministic, well-formed, sane) and the linearised-model machinery."""

import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import enable_x64

from ntkrepro.framework import kernel_regime, masking, positions, training
from ntkrepro.io import read_npz
from ntkrepro.run import RunContext

pytestmark = pytest.mark.filterwarnings("ignore")


def test_run_f3_deterministic_and_structured(tmp_path):
    p = dict(d_in=8, seq_len=8, n_seq=4, n_heads=2, layernorm=True, pe_base=10000.0, pe_scale=1.0, n_boot=100, seed=0)
    outs = []
    for i in range(2):
        ctx = RunContext(scale="smoke", outputs={"kernels": tmp_path / f"k{i}.npz"}, params=p)
        outs.append((positions.run_f3(p, ctx), read_npz(tmp_path / f"k{i}.npz")[0]))
    (r1, k1), (r2, k2) = outs
    for name in ("pe", "no_pe", "no_attention_pe", "no_attention_no_pe", "positionwise_pe", "shuffled_pe"):
        np.testing.assert_array_equal(k1[name], k2[name])
        assert k1[name].shape == (4, 8, 8)
        np.testing.assert_allclose(k1[name], k1[name].transpose(0, 2, 1), rtol=1e-5, atol=1e-6)
        assert np.all(np.linalg.eigvalsh(k1[name]) > -1e-4 * np.abs(k1[name]).max())  # PSD
    assert r1["variants"] == r2["variants"]
    # the reported no-attention, no-encoding kernels differ from the encoded no-attention block's
    assert np.abs(k1["no_attention_no_pe"] - k1["no_attention_pe"]).max() > 1e-3 * np.abs(k1["no_attention_pe"]).max()
    # the controls (issue 28): the shuffled order is a derangement of the positions, and the position-wise
    # block (identity attention pattern) differs from both the transformer and the block without attention
    perm = np.asarray(r1["shuffled_positions"])
    assert sorted(perm.tolist()) == list(range(8)) and not np.any(perm == np.arange(8))
    np.testing.assert_array_equal(perm, positions.shuffled_positions(0, 8))
    for other in ("pe", "no_attention_pe"):
        assert np.abs(k1["positionwise_pe"] - k1[other]).max() > 1e-3 * np.abs(k1[other]).max()


def test_run_f5_deterministic_and_causal_kernel_is_different():
    p = dict(d_in=8, seq_len=6, n_seq=3, width=16, n_heads=2, n_seeds=2, layernorm=True, pos_enc=True,
             n_boot=100, seed=0)
    r1 = masking.run_f5(p, RunContext(scale="smoke"))
    r2 = masking.run_f5(p, RunContext(scale="smoke"))
    assert r1["eff_rank_causal"] == r2["eff_rank_causal"]
    assert np.array(r1["eff_rank_causal"]).shape == (2, 3)
    kc, kb = np.array(r1["mean_kernel"]["causal"]), np.array(r1["mean_kernel"]["bidirectional"])
    assert np.abs(kc - kb).max() > 1e-3 * np.abs(kb).max()
    # position 0 attends only to itself under the causal mask, its kernel row differs from bidirectional
    assert 1 <= np.mean(r1["eff_rank_bidirectional"]) <= 6
    # the negative control: a second, independent bidirectional initialisation per seed
    other = np.array(r1["eff_rank_bidirectional_other_seed"])
    assert other.shape == (2, 3) and r1["eff_rank_bidirectional_other_seed"] == r2["eff_rank_bidirectional_other_seed"]
    assert not np.allclose(other, r1["eff_rank_bidirectional"])


def test_run_f2_deterministic_and_measures_the_kernel_regime():
    p = dict(d_in=4, seq_len=3, n_train=3, n_test=2, n_probe=1, n_heads=2, widths=[4, 8, 16], n_seeds=2, steps=5,
             lr=0.2, layernorm=True, ffn_mult=1, activations=["gelu", "relu"], teacher_length=2.0, pos_enc=True,
             n_boot=100, seed=0)
    r1 = kernel_regime.run_f2(p, RunContext(scale="smoke"))
    r2 = kernel_regime.run_f2(p, RunContext(scale="smoke"))
    assert r1["primary_activation"] == "gelu" and set(r1["by_activation"]) == {"gelu", "relu"}
    for act in ("gelu", "relu"):
        for k in ("gap", "gap_train", "gap_test", "ntk_rel_change", "init_dev_sq", "init_dev"):
            assert r1["by_activation"][act][k] == r2["by_activation"][act][k]
            v = np.array(r1["by_activation"][act][k])
            assert v.shape == (3, 2) and np.all(np.isfinite(v)) and np.all(v > 0)
        d = r1["by_activation"][act]
        np.testing.assert_allclose(np.square(d["init_dev"]), d["init_dev_sq"], rtol=1e-12)
    assert r1["by_activation"]["gelu"]["gap"] != r1["by_activation"]["relu"]["gap"]


def test_run_f4_per_sequence_and_deterministic():
    p = dict(d_in=4, seq_len=4, n_train=4, n_test=3, widths=[4, 8, 16], n_heads=2, n_seeds=2, steps=5, lr=0.2, topk=2,
             layernorm=True, pos_enc=True, activation="gelu", teacher_length=2.0, n_boot=100, seed=0)
    r1 = training.run_f4(p, RunContext(scale="smoke"))
    r2 = training.run_f4(p, RunContext(scale="smoke"))
    for k in ("corr", "corr_init", "corr_teacher"):
        assert r1[k] == r2[k]
        c = np.array(r1[k])
        assert c.shape == (3, 2, 3) and np.all(np.abs(c) <= 1 + 1e-9)
    assert np.array(r1["test_loss"]).shape == (3, 2)


def test_run_f6_variants_deterministic_and_trains():
    V = ["base", "no_pos_enc", "identity_attention", "no_attention"]
    p = dict(d_in=4, seq_len=4, n_train=4, n_test=4, n_probe=2, widths=[4, 8, 16], n_heads=2, n_seeds=2, steps=20,
             lr=0.2, layernorm=True, pos_enc=True, activation="gelu", teacher_length=2.0, variants=V, n_boot=100,
             seed=0)
    r1 = training.run_f6(p, RunContext(scale="smoke"))
    r2 = training.run_f6(p, RunContext(scale="smoke"))
    assert r1["variants"] == V
    for k in ("test_loss", "train_loss", "eff_rank_init", "eff_rank_probe_kernel"):
        assert r1[k] == r2[k]
        for name in V:
            assert np.array(r1[k][name]).shape == (3, 2)
    for name in V:
        assert np.all((np.array(r1["eff_rank_init"][name]) >= 1) & (np.array(r1["eff_rank_init"][name]) <= 4 + 1e-9))
        assert np.mean(r1["train_loss"][name]) < 1.0          # standardised targets: training lowered the loss
    assert r1["blocks"]["no_pos_enc"]["pos_enc"] is False
    with pytest.raises(ValueError, match="unknown variant keys"):
        training.variant_block(p, {"depth": 2}, 8)


def _linear(p, x):
    return x @ p["W"]


def test_linearised_model_is_exact_for_a_model_linear_in_its_parameters():
    with enable_x64():
        rng = np.random.default_rng(0)
        x, xt = jnp.asarray(rng.standard_normal((6, 3))), jnp.asarray(rng.standard_normal((4, 3)))
        y = jnp.asarray(rng.standard_normal((6, 1)))
        p0 = {"W": jnp.asarray(rng.standard_normal((3, 1)))}
        fit = training.kernel_regime_fit(_linear, p0, x, y, xt, lr=0.1, steps=50)
        np.testing.assert_allclose(fit["f_train"], fit["lin_train"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(fit["f_test"], fit["lin_test"], rtol=0, atol=1e-12)
        assert training.relative_gap(fit["f_train"], fit["lin_train"], fit["f0_train"]) < 1e-12
        assert np.linalg.norm(np.asarray(fit["lin_train"] - fit["f0_train"])) > 0.1   # and it did train
        # the linearised model's function-space dynamics are kernel GD with Theta_0 = J J^T (here x x^T)
        f = np.asarray(fit["f0_train"])
        K = np.asarray(x @ x.T)
        for _ in range(50):
            f = f - 0.1 * 2.0 / y.size * K @ (f - np.asarray(y))
        np.testing.assert_allclose(np.asarray(fit["lin_train"]), f, rtol=1e-10, atol=1e-12)


def _two_layer_tanh(p, x):
    """f(x) = a . tanh(W x / sqrt(d)) / sqrt(n): NTK parameterisation, smooth activation."""
    return jnp.tanh(x @ p["W"] / jnp.sqrt(x.shape[-1])) @ p["a"] / jnp.sqrt(p["a"].shape[0])


def test_two_layer_gap_is_positive_and_relative_gap_edge_cases():
    with enable_x64():
        rng = np.random.default_rng(1)
        x, xt = jnp.asarray(rng.standard_normal((8, 4))), jnp.asarray(rng.standard_normal((4, 4)))
        y = jnp.asarray(np.sin(np.asarray(x) @ rng.standard_normal(4))[:, None])
        p0 = {"W": jnp.asarray(rng.standard_normal((4, 16))), "a": jnp.asarray(rng.standard_normal((16, 1)))}
        fit = training.kernel_regime_fit(_two_layer_tanh, p0, x, y, xt, lr=0.5, steps=50)
        assert training.relative_gap(fit["f_train"], fit["lin_train"], fit["f0_train"]) > 1e-3
    with pytest.raises(ValueError, match="did not move"):
        training.relative_gap(np.ones(3), np.zeros(3), np.zeros(3))


@pytest.mark.slow
def test_two_layer_tanh_gap_scales_as_one_over_width():
    """Dyer & Gur-Ari: for a smooth activation the trained-vs-linearised gap is O(1/W) (CLAIMS.md: -0.96)."""
    with enable_x64():
        rng = np.random.default_rng(0)
        x, xt = jnp.asarray(rng.standard_normal((16, 4))), jnp.asarray(rng.standard_normal((16, 4)))
        y = jnp.asarray(np.sin(np.asarray(x) @ rng.standard_normal(4))[:, None])
        widths, n_seeds, gaps = [64, 128, 256, 512, 1024], 12, []
        for n in widths:
            ps = {"W": jnp.asarray(rng.standard_normal((n_seeds, 4, n))),
                  "a": jnp.asarray(rng.standard_normal((n_seeds, n, 1)))}
            out = training.map_over_seeds(
                lambda p: training.kernel_regime_fit(_two_layer_tanh, p, x, y, xt, lr=0.5, steps=200), ps,
                batch_size=n_seeds)
            cat = {k: np.concatenate([out[f"{k}_train"].reshape(n_seeds, -1), out[f"{k}_test"].reshape(n_seeds, -1)], 1)
                   for k in ("f0", "f", "lin")}
            gaps.append(np.mean([training.relative_gap(cat["f"][s], cat["lin"][s], cat["f0"][s])
                                 for s in range(n_seeds)]))
        slope = np.polyfit(np.log(widths), np.log(gaps), 1)[0]
        assert -1.25 < slope < -0.75, slope


def test_teacher_task_and_helpers():
    p = dict(seed=0, seq_len=5, d_in=3, n_train=6, n_test=2, teacher_length=1.0, pos_enc=False)
    xtr, ytr, xte, yte, a = training.make_task(p)
    assert xtr.shape == (6, 5, 3) and ytr.shape == (6, 5, 1) and xte.shape == (2, 5, 3)
    np.testing.assert_allclose(a.sum(1), 1.0)
    np.testing.assert_array_equal(training.make_task(p, 1)[0], training.make_task(p, 1)[0])
    assert not np.allclose(training.make_task(p, 1)[0], xtr)           # another draw
    stacked = training.stacked_tasks(p, 3)
    assert stacked[0].shape == (3, 6, 5, 3)
    np.testing.assert_array_equal(stacked[0][0], xtr)
    sym = np.array([[1.0, 0.2, 0.5], [0.2, 1.0, 0.9], [0.5, 0.9, 3.0]])
    assert training.offdiag_pearson(sym, sym * 2 + np.eye(3) * 7) == pytest.approx(1.0)  # diagonal ignored
    assert training.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert training.pearson([1, 1, 1], [2, 4, 6]) == 0.0
    k = np.diag([3.0, 1.0, 0.5])
    np.testing.assert_allclose(training.topk_reconstruction(k, 1), np.diag([3.0, 0, 0]), atol=1e-12)
