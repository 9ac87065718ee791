"""H1/H2: the exact sampler against neural-tangents, and the criteria on synthetic numbers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from ntkrepro.hron2020 import attention, average_pooling, gaussianity
from ntkrepro.ledger import Verdict
from ntkrepro.stats import Interval


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
        p = jax.vmap(lambda k: attention.sample_logit_products(k, 4, dk))(jax.random.split(jax.random.PRNGKey(0), 20000))
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


def _h1(k1, kmax, ks1, ksmax, null=0.01):
    def row(h, k, ks):
        return {"heads": h, "variance": 1.0, "kurtosis": Interval(*k).as_dict(), "ks": Interval(ks, ks, ks).as_dict()}
    return {"H1_gaussianity": {"per_heads": [row(1, k1, ks1), row(100, kmax, ksmax)], "ks_null_95": null,
                               "n_draws": 1000, "d": 1000, "seq_len": 8, "provenance": {}}}


@pytest.mark.parametrize("res,expected", [
    (_h1((0.4, 0.3, 0.5), (0.0, -0.05, 0.05), 0.02, 0.005), Verdict.REPRODUCED),
    (_h1((0.01, -0.03, 0.04), (0.0, -0.05, 0.05), 0.02, 0.005), Verdict.NOT_REPRODUCED),  # 1 head Gaussian
    (_h1((0.4, 0.3, 0.5), (0.38, 0.3, 0.45), 0.02, 0.02), Verdict.NOT_REPRODUCED),  # no decrease
    (_h1((0.2, 0.05, 0.35), (0.0, -0.05, 0.05), 0.008, 0.005), Verdict.INCONCLUSIVE),  # KS underpowered
])
def test_h1_criterion_both_directions(res, expected):
    assert gaussianity.evaluate_h1(res, "smoke").verdict is expected


def _h2(slope_spread, slope_dist, last):
    rows = []
    for d in [4, 16, 64, 256, 1024]:
        s, n = 0.5 * (d / 4) ** slope_spread, 0.05 * (d / 4) ** slope_dist
        rows.append({"d": d, "spread": Interval(s, s, s).as_dict(), "nngp_distance": Interval(n, n, n).as_dict()})
    rows[-1]["nngp_distance"] = Interval(last, last, last).as_dict()
    return {"H2_average_pooling": {"per_d": rows, "n_draws": 10, "n_inputs": 2, "seq_len": 4, "d_in": 8,
                                   "tied_linear_scaling_distance": 0.1}}


def test_h2_criterion_both_directions():
    assert average_pooling.evaluate_h2(_h2(-0.5, -0.5, 0.003), "smoke").verdict is Verdict.REPRODUCED
    assert average_pooling.evaluate_h2(_h2(0.05, -0.5, 0.003), "smoke").verdict is Verdict.NOT_REPRODUCED
    assert average_pooling.evaluate_h2(_h2(-0.5, 0.1, 0.087), "smoke").verdict is Verdict.NOT_REPRODUCED
    assert average_pooling.evaluate_h2(_h2(-0.5, -0.5, 0.5), "smoke").verdict is Verdict.INCONCLUSIVE
