"""H1/H2: the exact sampler against neural-tangents, kurtosis and KS helpers (criteria: test_hron2020_criteria.py)."""

import jax
import numpy as np
import pytest
from scipy import stats

from ntkrepro.hron2020 import attention, average_pooling, gaussianity


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("scaling", ["sqrt", "linear"])
def test_sampler_matches_neural_tangents_apply_fn_in_distribution(scaling):
    d_in, s, dk, dv, h = 6, 4, 5, 3, 2
    x = np.random.default_rng(0).normal(size=(s, d_in)).astype(np.float32)
    init, apply, _ = attention.nt_attention_layer(1, dk, dv, h, scaling=scaling)

    def draw(k):
        _, p = init(k, (1, s, d_in))
        return apply(p, x[None])[0, 0, 0]

    ref = np.asarray(jax.lax.map(draw, jax.random.split(jax.random.PRNGKey(1), 20000), batch_size=2000))
    ours = np.asarray(attention.sample_outputs(jax.random.PRNGKey(2), attention.gram_factor(x), n_draws=20000,
                                               n_heads=h, d_in=d_in, d_k=dk, d_v=dv, scaling=scaling))
    assert stats.ks_2samp(ref, ours).pvalue > 1e-3
    assert abs(ref.var() / ours.var() - 1) < 0.05


def test_sampler_detects_a_wrong_scaling():
    """The distribution test above can fail: a sampler with the wrong logit scaling is rejected."""
    d_in, s, dk = 6, 4, 5
    x = np.random.default_rng(0).normal(size=(s, d_in)).astype(np.float32)
    f = attention.gram_factor(x)
    a = np.asarray(attention.sample_attention_weights(jax.random.PRNGKey(0), f, n_draws=4000, d_in=d_in, d_k=dk,
                                                      scaling="sqrt", seq_len=s))
    b = np.asarray(attention.sample_attention_weights(jax.random.PRNGKey(0), f, n_draws=4000, d_in=d_in, d_k=dk,
                                                      scaling="linear", seq_len=s))
    assert stats.ks_2samp(a[:, 0, 0, 0], b[:, 0, 0, 0]).pvalue < 1e-6


def test_logit_products_have_wishart_moments():
    """E[(Z_Q Z_K^T)_{ij}^2] = d_k for the Bartlett path and the direct path alike."""
    for dk in (3, 50):
        keys = jax.random.split(jax.random.PRNGKey(0), 20000)
        p = jax.vmap(lambda k: attention.sample_logit_products(k, 4, dk))(keys)
        np.testing.assert_allclose(np.mean(np.asarray(p) ** 2), dk, rtol=0.03)


def test_gram_factor_reproduces_gram_with_rank():
    x = np.random.default_rng(0).normal(size=(10, 3))
    f = attention.gram_factor(x)
    assert f.shape == (10, 3)
    np.testing.assert_allclose(f @ f.T, x @ x.T, rtol=1e-4, atol=1e-4)


def test_gap_nngp_matches_closed_form():
    x = np.random.default_rng(0).normal(size=(3, 5, 4))
    m = x.mean(axis=1)
    np.testing.assert_allclose(average_pooling.gap_nngp(x), m @ m.T / 4, rtol=1e-5)


def test_uniform_attention_gives_gap_nngp_exactly():
    x = np.random.default_rng(1).normal(size=(3, 5, 4))
    uniform = np.full((2, 3, 5, 5), 1 / 5)
    k = average_pooling.attention_gap_nngp_draws(uniform, x).mean(axis=0)
    np.testing.assert_allclose(k, average_pooling.gap_nngp(x), rtol=1e-5)
    assert np.allclose(average_pooling.attention_spread(uniform), 0)


def test_ks_and_kurtosis_on_known_laws():
    rng = np.random.default_rng(0)
    g = rng.standard_normal(50000)
    mix = g * np.sqrt(rng.exponential(1.0, 50000))  # Laplace-like scale mixture: excess kurtosis 3
    assert abs(gaussianity.excess_kurtosis(g)) < 0.1 and gaussianity.excess_kurtosis(mix) > 2
    assert gaussianity.ks_to_gaussian(g) < 0.01 < gaussianity.ks_to_gaussian(mix)


def test_kurtosis_from_block_sums_matches_scipy_and_bootstrap_is_deterministic():
    x = np.random.default_rng(2).laplace(size=30001)
    iv, reps = gaussianity.kurtosis_bootstrap(x, n_boot=300, seed=1)
    assert iv.value == pytest.approx(float(gaussianity.excess_kurtosis(x)), rel=1e-9)
    assert iv.low < iv.value < iv.high and reps.shape == (300,)
    iv2, reps2 = gaussianity.kurtosis_bootstrap(x, n_boot=300, seed=1)
    assert iv2 == iv and np.array_equal(reps, reps2)
    # the Laplace law has excess kurtosis 3; the interval covers it
    assert iv.contains(3.0)


def test_sample_outputs_one_compilation_for_every_head_count_and_kappa_over_h():
    """Head terms are drawn in fixed-size chunks; the sum of H i.i.d. heads has kurtosis kappa_1/H."""
    x = np.random.default_rng(0).normal(size=(8, 50)).astype(np.float32)
    f = attention.gram_factor(x)
    one = attention.sample_outputs(jax.random.PRNGKey(0), f, n_draws=200000, n_heads=1, d_in=50, d_k=50, d_v=50)
    four = attention.sample_outputs(jax.random.PRNGKey(1), f, n_draws=200000, n_heads=4, d_in=50, d_k=50, d_v=50)
    k1, k4 = gaussianity.excess_kurtosis(one), gaussianity.excess_kurtosis(four)
    assert k1 > 0.2 and abs(k4 - k1 / 4) < 0.05
    assert abs(one.var() / four.var() - 1) < 0.02            # the 1/sqrt(H) normalisation keeps the variance


def test_draws_per_head():
    assert gaussianity.draws_per_head({"heads": [1, 2], "n_draws": 5}) == [5, 5]
    assert gaussianity.draws_per_head({"heads": [1, 2], "n_draws": [5, 6]}) == [5, 6]
    with pytest.raises(ValueError):
        gaussianity.draws_per_head({"heads": [1, 2], "n_draws": [5]})


# ---- issue 21: the scale mixture's predicted kurtosis and the negative controls of run_h1 / run_h2

def test_scale_mixture_kurtosis_predicts_the_sampled_one_head_kurtosis():
    x = np.random.default_rng(0).normal(size=(8, 50)).astype(np.float32)
    f = attention.gram_factor(x)
    pred = gaussianity.scale_mixture_kurtosis([0, 1], f, d_in=50, d_k=50, d_v=50)
    draws = attention.sample_outputs(jax.random.PRNGKey(0), f, n_draws=400000, n_heads=1, d_in=50, d_k=50, d_v=50)
    iv, _ = gaussianity.kurtosis_bootstrap(draws, n_boot=200, seed=0)
    assert pred["value"] > 0.2 and pred["se"] < 0.02 and iv.contains(pred["value"])


def test_run_h1_stores_both_controls_in_the_results_layout(tmp_path):
    from ntkrepro.run import RunContext

    params = {"d": 50, "seq_len": 8, "heads": [1, 2, 4], "n_draws": 20000, "ks_draws": 2000, "n_boot": 100,
              "n_null": 20, "seed": 0}
    r = gaussianity.run_h1(params, RunContext(scale="smoke", outputs={"samples": tmp_path / "s.npz"}))
    assert r["scale_mixture_kurtosis_1_head"]["value"] > 0.2
    for name in ("gaussian_draws", "shared_heads"):
        c = r["controls"][name]
        assert [row["heads"] for row in c["per_heads"]] == [1, 2, 4]
        assert c["scale_mixture_kurtosis_1_head"] == r["scale_mixture_kurtosis_1_head"]
        assert set(c["per_heads"][1]) == set(r["per_heads"][1])
    gauss = r["controls"]["gaussian_draws"]["per_heads"]
    assert all(abs(row["kurtosis"]["value"]) < 0.15 for row in gauss)
    assert np.allclose([row["variance"] for row in gauss], [row["variance"] for row in r["per_heads"]], rtol=0.05)
    shared = r["controls"]["shared_heads"]["per_heads"]
    assert shared[0] == r["per_heads"][0]                          # one head: the layer itself
    k1 = r["per_heads"][0]["kurtosis"]["value"]
    assert abs(shared[2]["kurtosis"]["value"] - k1) < 0.15 < k1 - r["per_heads"][2]["kurtosis"]["value"]


def test_run_h2_stores_the_sqrt_scaling_control_with_one_compilation_for_large_d():
    from ntkrepro.run import RunContext

    params = {"d_in": 8, "seq_len": 4, "n_inputs": 2, "d_values": [8, 64, 512], "n_draws": 30, "n_boot": 100,
              "seed": 0, "d_seed_modulus": 9973}
    before = attention._attention_weights._cache_size()
    r = average_pooling.run_h2(params, RunContext(scale="smoke"))
    assert attention._attention_weights._cache_size() - before <= 1   # every d >= rank, both scalings
    c = r["controls"]["sqrt_scaling"]
    assert [row["d"] for row in c["per_d"]] == [8, 64, 512] and set(c["per_d"][0]) == set(r["per_d"][0])
    # d^-1 logits collapse, d^-1/2 logits do not
    assert r["per_d"][-1]["spread"]["value"] < 0.2 * c["per_d"][-1]["spread"]["value"]
    assert c["per_d"][-1]["spread"]["value"] > 0.5 * c["per_d"][0]["spread"]["value"]
