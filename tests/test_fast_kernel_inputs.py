"""ntkrepro.kernels.fast refuses what neural-tangents refuses (issue 22 item 2).

Each layer's recursion assumes an input of a given kind: ReLU's arc-cosine map and LayerNorm's
normalisation (no mean-centring) a mean-zero Gaussian input, FanInSum jointly Gaussian branches of
one shape. neural-tangents tracks this (``Kernel.is_gaussian``; inputs are not Gaussian, Dense /
Conv / attention outputs are, ReLU and Flatten outputs are not) and refuses the rest; the fast
backend computed those compositions silently and wrongly (NNGP off by 27-114 %). Here both
backends must raise the same exception. Also: neural-tangents' enum arguments work, keywords the
fast backend does not implement raise NotImplementedError naming the keyword, and
``from_stax_builder`` reads the model the builder returns.
"""

from __future__ import annotations

import numpy as np
import pytest
from jax.experimental import enable_x64

from ntkrepro.kernels import fast

RNG = np.random.default_rng(0)
IMAGES = RNG.standard_normal((3, 4, 4, 3)).astype(np.float32)
IMAGES2 = RNG.standard_normal((2, 4, 4, 3)).astype(np.float32)
VECTORS = RNG.standard_normal((3, 5)).astype(np.float32)


def _conv(c=4):
    return fast.Conv(c, (3, 3), padding="SAME", W_std=1.3, b_std=0.1)


REFUSED = {
    "conv_relu_relu_gap": (fast.serial(_conv(), fast.Relu(), fast.Relu(), fast.GlobalAvgPool(), fast.Dense(1)),
                           IMAGES, ValueError),
    "conv_relu_gap_relu": (fast.serial(_conv(), fast.Relu(), fast.GlobalAvgPool(), fast.Relu(), fast.Dense(1)),
                           IMAGES, ValueError),
    "relu_on_raw_inputs": (fast.serial(fast.Relu(), fast.Flatten(), fast.Dense(1)), IMAGES, ValueError),
    "relu_on_raw_vectors": (fast.serial(fast.Relu(), fast.Dense(1)), VECTORS, ValueError),
    "dense_relu_layernorm": (fast.serial(fast.Dense(8), fast.Relu(), fast.LayerNorm(), fast.Dense(1)), VECTORS,
                             NotImplementedError),
    "relu_after_flatten": (fast.serial(_conv(), fast.Flatten(), fast.Relu(), fast.Dense(1)), IMAGES, ValueError),
    "fan_in_sum_of_relu_and_conv": (fast.serial(_conv(), fast.FanOut(2), fast.parallel(fast.Relu(), _conv()),
                                                fast.FanInSum(), fast.Flatten(), fast.Dense(1)), IMAGES,
                                    NotImplementedError),
    "fan_in_sum_of_channel_counts": (fast.serial(fast.FanOut(2), fast.parallel(_conv(4), _conv(6)), fast.FanInSum(),
                                                 fast.Flatten(), fast.Dense(1)), IMAGES, ValueError),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_fast_refuses_what_neural_tangents_refuses(name):
    model, x, exc = REFUSED[name]
    with pytest.raises(exc):  # the reference refuses it ...
        fast.kernel_fn(model, "nt")(x, None, ("nngp", "ntk"))
    with pytest.raises(exc):  # ... and so does the fast backend, instead of a wrong kernel
        fast.kernel_fn(model, "fast")(x, None, ("nngp", "ntk"))


def _agree(model, x=IMAGES, x2=IMAGES2):
    """fp64 agreement on a block of distinct inputs (on K(X, X) the coincident entries differ by
    neural-tangents' sqrt(eps) error, see tests/test_fast_kernels.py::test_symmetric_blocks)."""
    get = ("nngp", "ntk")
    with enable_x64():
        a = fast.kernel_fn(model, "nt")(x.astype(np.float64), x2.astype(np.float64), get)
        b = fast.kernel_fn(model, "fast")(x.astype(np.float64), x2.astype(np.float64), get)
        for g in get:
            ref, got = np.asarray(getattr(a, g)), np.asarray(getattr(b, g))
            assert np.max(np.abs(got - ref)) / np.max(np.abs(ref)) <= 1e-10, g


def test_accepted_compositions_still_equal_neural_tangents():
    """Gaussian inputs wherever a formula needs one: attention after ReLU, a residual sum of two
    Gaussian branches, LayerNorm after it, ReLU after a pool of a Gaussian field."""
    att = fast.GlobalSelfAttention(4, 4, 4, 1, attention_mechanism="IDENTITY")
    model = fast.serial(_conv(), fast.Relu(), _conv(), fast.FanOut(2), fast.parallel(fast.Identity(), att),
                        fast.FanInSum(), fast.LayerNorm(), fast.Relu(), _conv(), fast.GlobalAvgPool(), fast.Relu(),
                        fast.Dense(1))
    _agree(model)


def test_neural_tangents_enum_arguments_work():
    from ntkrepro.nt import stax

    att = fast.GlobalSelfAttention(4, 4, 4, 1, attention_mechanism=stax.AttentionMechanism.RELU,
                                   pos_emb_type=stax.PositionalEmbedding.SUM, pos_emb_decay_fn=lambda d: 1 / (1 + d))
    model = fast.serial(fast.Conv(4, (3, 3), padding=stax.Padding.SAME), fast.Relu(), att, fast.Flatten(),
                        fast.Dense(1))
    _agree(model)


@pytest.mark.parametrize("make,keyword", [
    (lambda: fast.Dense(4, parameterization="standard"), "parameterization"),
    (lambda: fast.Conv(4, (3, 3), padding="SAME", s=(2, 1)), "s"),
    (lambda: fast.Conv(4, (2, 2), strides=(2, 2)), "strides"),
    (lambda: fast.Conv(4, (3, 3), padding="CIRCULAR"), "padding"),
    (lambda: fast.GlobalSelfAttention(4, 4, 4, 1, linear_scaling=False), "linear_scaling"),
    (lambda: fast.GlobalSelfAttention(4, 4, 4, 1, pos_emb_type="CONCAT"), "pos_emb_type"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_unsupported_keywords_name_the_keyword(make, keyword):
    layer = make()
    model = fast.serial(layer, fast.Flatten(), fast.Dense(1)) if not isinstance(layer, fast.Dense) else \
        fast.serial(fast.Flatten(), layer, fast.Dense(1))
    with pytest.raises(NotImplementedError, match=rf"\b{keyword}="):
        fast.kernel_fn(model, "fast")(IMAGES, None, "nngp")
    assert len(model.stax()) == 3  # the reference layer is still built with it


def test_keywords_at_neural_tangents_defaults_are_accepted():
    model = fast.serial(fast.Conv(4, (3, 3), padding="SAME", parameterization="ntk", s=(1, 1)), fast.Relu(),
                        fast.Flatten(batch_axis=0), fast.Dense(1, batch_axis=0, channel_axis=-1))
    _agree(model)
    with pytest.raises(TypeError):  # a keyword neural-tangents does not know either
        fast.Dense(4, no_such_keyword=1)


def test_from_stax_builder_uses_the_model_the_builder_returns():
    def builder(width):  # imports stax when it runs, as the H4 / H6 builders do
        from ntkrepro.nt import stax

        model = stax.serial(stax.Dense(width), stax.Relu(), stax.Dense(1))
        stax.serial(stax.Dense(3))  # built later, not returned
        return model

    m = fast.from_stax_builder(builder, 5)
    assert [type(l).__name__ for l in m.layers] == ["Dense", "Relu", "Dense"]

    def kernel_fn_builder():  # as hron2020.imdb.build_kernel_fn: returns the stax kernel_fn
        from ntkrepro.nt import stax

        _, _, kernel_fn = stax.serial(stax.Dense(2), stax.Relu(), stax.Dense(1))
        stax.serial(stax.Dense(3))
        return kernel_fn

    m = fast.from_stax_builder(kernel_fn_builder)
    assert [type(l).__name__ for l in m.layers] == ["Dense", "Relu", "Dense"]
    def nothing_builder():
        from ntkrepro.nt import stax

        stax.serial(stax.Dense(1))

    with pytest.raises(ValueError, match="returned NoneType"):
        fast.from_stax_builder(nothing_builder)
