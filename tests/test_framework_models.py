"""The one transformer block: stax and flax realisations agree; empirical NTKs; masks; encodings."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import enable_x64

from ntkrepro.framework import models
from ntkrepro.framework.spectra import relative_frobenius

pytestmark = pytest.mark.filterwarnings("ignore")

SPECS = [
    models.BlockSpec(width=16, n_heads=2),
    models.BlockSpec(width=12, n_heads=3, attention="IDENTITY", scaling="sqrt", layernorm=False),
    models.BlockSpec(width=8, n_heads=2, attention="IDENTITY", scaling="sqrt", embed=False, residual=False,
                     ffn_mult=0, layernorm=False),
    models.BlockSpec(width=16, n_heads=4, attention="NONE", ffn_mult=2),
    models.BlockSpec(width=16, n_heads=2, qk_std=0.5, ffn_mult=0),
    models.BlockSpec(width=16, n_heads=2, activation="gelu"),
    models.BlockSpec(width=16, n_heads=2, activation="gelu", layernorm=False, attention="IDENTITY"),
]


def _x(n=3, s=5, d=4, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=(n, s, d)).astype(dtype)


@pytest.mark.parametrize("spec", SPECS)
def test_flax_equals_stax_apply_with_the_same_weights(spec):
    with enable_x64():
        x = jnp.asarray(_x())
        init, apply, _ = spec.stax()
        _, sp = init(jax.random.PRNGKey(3), x.shape)
        fp = models.flax_params_from_stax(spec, sp)
        np.testing.assert_allclose(models.apply(spec, fp, x), apply(sp, x), rtol=1e-10, atol=1e-12)
        # init_params draws through stax: the same tree as flax's own init
        ours = models.init_params(spec, jax.random.PRNGKey(0), x)
        flax_own = spec.flax().init(jax.random.PRNGKey(0), x)["params"]
        assert jax.tree.structure(ours) == jax.tree.structure(flax_own)
        assert all(a.shape == b.shape for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(flax_own)))


@pytest.mark.parametrize("spec", [SPECS[0], SPECS[1], SPECS[0].with_(causal=True)])
def test_fast_ntk_equals_neural_tangents_empirical_ntk(spec):
    with enable_x64():
        x = jnp.asarray(_x())
        p = models.init_params(spec, jax.random.PRNGKey(1), x)
        ref = np.asarray(models.empirical_ntk_fn(spec)(x, None, p))
        ours = np.asarray(models.fast_ntk_fn(spec)(p, x))
        assert ours.shape == (3, 3, 5, 5)
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-11)
        # and against a hand-made autodiff inner product for one entry
        g = jax.grad(lambda pr, a, s: models.apply(spec, pr, x)[a, s, 0])
        g1, g2 = g(p, 0, 1), g(p, 2, 3)
        manual = sum(float(jnp.vdot(a, b)) for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g2)))
        assert abs(manual - ours[0, 2, 1, 3]) < 1e-9 * max(1.0, abs(manual))


def test_empirical_ntk_approaches_infinite_width_ntk():
    x = jnp.asarray(_x(n=2, s=4, d=6, dtype=np.float32))
    errs = {}
    for w in (8, 512):
        spec = models.BlockSpec(width=w, n_heads=2)
        inf = models.infinite_ntk(spec, x)
        fn = models.fast_ntk_fn(spec)
        errs[w] = np.median([relative_frobenius(np.asarray(fn(models.init_params(spec, jax.random.PRNGKey(s), x), x)),
                                                inf)
                             for s in range(3)])
    assert errs[512] < 0.25
    assert errs[512] < errs[8] / 3


@pytest.mark.parametrize("attention,scaling", [("SOFTMAX", "linear"), ("IDENTITY", "sqrt")])
def test_causal_output_ignores_future_tokens(attention, scaling):
    spec = models.BlockSpec(width=16, n_heads=2, attention=attention, scaling=scaling, causal=True)
    x = _x(n=1, s=6, d=4, dtype=np.float32)
    p = models.init_params(spec, jax.random.PRNGKey(0), jnp.asarray(x))
    x2 = x.copy()
    x2[0, 4:] += 3.0
    y1, y2 = models.apply(spec, p, jnp.asarray(x)), models.apply(spec, p, jnp.asarray(x2))
    np.testing.assert_allclose(y1[0, :4], y2[0, :4], rtol=1e-5, atol=1e-6)
    assert np.abs(np.asarray(y1[0, 4:] - y2[0, 4:])).max() > 1e-3
    bidir = spec.with_(causal=False)
    y3 = models.apply(bidir, p, jnp.asarray(x2))
    assert np.abs(np.asarray(models.apply(bidir, p, jnp.asarray(x))[0, :4] - y3[0, :4])).max() > 1e-3
    A = np.asarray(models.attention_maps(spec, p, jnp.asarray(x)))
    assert A.shape == (1, 2, 6, 6)
    assert np.all(A[..., np.triu_indices(6, 1)[0], np.triu_indices(6, 1)[1]] == 0)
    if attention == "SOFTMAX":
        np.testing.assert_allclose(A.sum(-1), 1.0, rtol=1e-5)


def test_invalid_specs_and_causal_stax_raise():
    with pytest.raises(NotImplementedError, match="causal"):
        models.BlockSpec(causal=True).stax()
    with pytest.raises(NotImplementedError):
        models.BlockSpec(scaling="sqrt").stax()
    with pytest.raises(ValueError, match="multiple"):
        models.BlockSpec(width=10, n_heads=4)
    with pytest.raises(ValueError, match="attention"):
        models.BlockSpec(attention="RELU")
    with pytest.raises(ValueError, match="activation"):
        models.BlockSpec(activation="tanh")
    with pytest.raises(ValueError, match="residual"):
        models.BlockSpec(embed=False, residual=True)
    with pytest.raises(ValueError, match=r"\(N, S, d\)"):
        models.make_inputs(np.zeros((4, 3)), True)


def test_sinusoidal_encoding():
    pe = models.sinusoidal_encoding(5, 6)
    np.testing.assert_allclose(pe[0], [0, 1, 0, 1, 0, 1])
    np.testing.assert_allclose(pe[:, 0], np.sin(np.arange(5)))
    np.testing.assert_allclose(pe[3, 3], np.cos(3 / 10000 ** (2 / 6)))
    x = np.zeros((2, 5, 6))
    np.testing.assert_allclose(models.make_inputs(x, True, scale=2.0)[1], 2 * pe)
    np.testing.assert_array_equal(models.make_inputs(x, False), x)


def test_position_ntk_is_the_diagonal_of_the_full_ntk():
    spec = models.BlockSpec(width=16, n_heads=2, causal=True)
    with enable_x64():
        x = jnp.asarray(_x())
        p = models.init_params(spec, jax.random.PRNGKey(2), x)
        full = np.asarray(models.fast_ntk_fn(spec)(p, x))
        pos = np.asarray(models.fast_position_ntk_fn(spec)(p, x))
        np.testing.assert_allclose(pos, np.einsum("aast->ast", full), rtol=1e-10, atol=1e-12)


def test_draw_params_shapes_distribution_and_determinism():
    spec = models.BlockSpec(width=32, n_heads=4, activation="gelu")
    x = jnp.asarray(_x(dtype=np.float32))
    p = models.draw_params(spec, x.shape, [(0, 32, 0), (0, 32, 1)])
    own = spec.flax().init(jax.random.PRNGKey(0), x)["params"]
    assert jax.tree.structure(p) == jax.tree.structure(own)
    for a, b in zip(jax.tree.leaves(p), jax.tree.leaves(own)):
        assert a.shape == (2,) + b.shape and a.dtype == jnp.float32
    flat = np.concatenate([np.asarray(a).ravel() for a in jax.tree.leaves(p)])
    assert abs(flat.mean()) < 0.02 and abs(flat.std() - 1) < 0.02
    again = models.draw_params(spec, x.shape, [(0, 32, 1)])
    for a, b in zip(jax.tree.leaves(p), jax.tree.leaves(again)):
        np.testing.assert_array_equal(np.asarray(a)[1], np.asarray(b)[0])
    assert not np.allclose(np.asarray(jax.tree.leaves(p)[0])[0], np.asarray(jax.tree.leaves(p)[0])[1])


def test_positionwise_attention_is_softmax_attention_on_one_token():
    """F3's control block (issue 28): attention with the identity pattern. On a one-token sequence softmax
    attention has exactly that pattern (and zero query/key gradients), so both infinite-width kernels agree
    (fp64); on longer sequences they differ, and the position-wise block has no flax twin."""
    from jax.experimental import enable_x64

    from ntkrepro.framework import models

    rng = np.random.default_rng(0)
    with enable_x64():
        x1 = rng.normal(size=(3, 1, 6))
        soft = models.BlockSpec(width=8, n_heads=2, attention="SOFTMAX")
        pw = soft.with_(attention="POSITIONWISE")
        a = np.asarray(soft.kernel_fn()(x1, None, "ntk"))
        b = np.asarray(pw.kernel_fn()(x1, None, "ntk"))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        x4 = rng.normal(size=(2, 4, 6))
        a4 = np.asarray(soft.kernel_fn()(x4, None, "ntk"))
        b4 = np.asarray(pw.kernel_fn()(x4, None, "ntk"))
        assert np.abs(a4 - b4).max() > 1e-3 * np.abs(a4).max()
    with pytest.raises(NotImplementedError, match="infinite width only"):
        pw.flax()
