r"""One transformer block, defined once (:class:`BlockSpec`) and realised twice.

* :meth:`BlockSpec.stax` -- the neural-tangents ``stax`` network (``kernel_fn`` gives the
  infinite-width NNGP/NTK, ``init_fn``/``apply_fn`` the finite network);
* :meth:`BlockSpec.flax` -- the same finite network as a ``flax.linen`` module (used for the
  empirical NTK via ``nt.empirical_ntk_fn``, for training, and to read out attention patterns).

Both are in NTK parameterisation with all weights i.i.d. :math:`\mathcal N(0,1)`; the flax module
uses neural-tangents' exact formulas, and :func:`flax_params_from_stax` maps a ``stax`` parameter
tree onto the flax one (``tests/test_framework_models.py`` checks the two outputs agree).

The network, for tokens :math:`X \in \mathbb R^{S\times d_\mathrm{in}}` (optionally plus the
sinusoidal encoding :math:`PE_{p,2i} = \sin(p/10000^{2i/d})`, :math:`PE_{p,2i+1} = \cos(\cdot)`,
:func:`sinusoidal_encoding`, added to the inputs):

.. math::

    h_0 &= X W^E/\sqrt{d_\mathrm{in}} \quad (\text{if ``embed``}) \\
    h_1 &= \mathrm{LN}(h_0 + \mathrm{MHA}(h_0)), \qquad
    h_2 = \mathrm{LN}(h_1 + \mathrm{FFN}(h_1)), \qquad f = h_2 W^R/\sqrt{n}

with :math:`\mathrm{FFN}(h) = \sqrt2\,\sigma(h W_1/\sqrt n)\, W_2/\sqrt{n_\mathrm{ffn}}`, :math:`\sigma` = ReLU
(``activation="relu"``) or the exact GELU :math:`u\,\Phi(u)` (``activation="gelu"``, smooth),
LN optional (parameter-free, over channels), and neural-tangents' multi-head attention

.. math::

    G_h = \frac{(h W^Q_h)(h W^K_h)^\top}{n\, d_k^{\,p}}, \quad
    \mathrm{MHA}(h) = \frac{[\phi(G_1) h W^V_1, \dots, \phi(G_H) h W^V_H]\, W^O}{\sqrt{d_v H n}}

where :math:`\phi` is the row softmax (``attention="SOFTMAX"``) or the identity (linear attention
:math:`Q(K^\top V)`, ``attention="IDENTITY"``). ``scaling="linear"`` is :math:`p=1` with tied
:math:`W^Q = W^K` (the only softmax variant whose infinite-width kernel neural-tangents computes);
``scaling="sqrt"`` is the standard :math:`p = 1/2` with independent :math:`W^Q, W^K`.
``causal=True`` masks keys :math:`t > s` (GPT style: logit :math:`-\infty` before a softmax, 0 for
identity attention); ``causal=False`` is BERT-style bidirectional attention. neural-tangents'
``GlobalSelfAttention`` has no causal mask, so :meth:`BlockSpec.stax` refuses ``causal=True`` and
the causal network exists only at finite width (its NTK is the empirical one).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from ntkrepro.nt import nt, stax

#: NONE: no attention sub-layer (baseline). POSITIONWISE (infinite width only, F3's control): the attention
#: sub-layer with its pattern replaced by the identity -- each position attends to itself only, so the
#: branch is the value and output projections applied position-wise and couples no positions.
ATTENTIONS = ("SOFTMAX", "IDENTITY", "NONE", "POSITIONWISE")
SCALINGS = {"linear": 1.0, "sqrt": 0.5}
ACTIVATIONS = ("relu", "gelu")  # FFN nonlinearity: ReLU (kinked) or exact GELU (smooth)


@dataclass(frozen=True)
class BlockSpec:
    """Hyper-parameters of the single transformer block (see the module docstring).

    ``width`` is the model width :math:`n` (embedding, residual stream, and the key/value width
    ``n_heads * d_head``); ``ffn_mult`` sets :math:`n_\\mathrm{ffn}` = ``ffn_mult * width`` (0 = no
    FFN); ``embed=False`` feeds the inputs straight into attention (then there is no residual
    around it and ``width`` is unused for the attention input).
    """

    width: int = 64
    n_heads: int = 4
    attention: str = "SOFTMAX"
    scaling: str = "linear"
    layernorm: bool = True
    causal: bool = False
    ffn_mult: int = 1
    embed: bool = True
    residual: bool = True
    out_dim: int = 1
    qk_std: float = 1.0
    activation: str = "relu"

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {self.attention!r}")
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {sorted(SCALINGS)}, got {self.scaling!r}")
        if self.width < 1 or self.n_heads < 1 or self.width % self.n_heads:
            raise ValueError(f"width ({self.width}) must be a positive multiple of n_heads ({self.n_heads})")
        if self.ffn_mult < 0 or self.out_dim < 1:
            raise ValueError("ffn_mult must be >= 0 and out_dim >= 1")
        if self.residual and not self.embed:
            raise ValueError("a residual around attention needs embed=True (input width != model width)")

    @property
    def d_head(self) -> int:
        return self.width // self.n_heads

    @property
    def tied(self) -> bool:
        return self.scaling == "linear"

    def with_(self, **kw: Any) -> "BlockSpec":
        return replace(self, **kw)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    # ---------------------------------------------------------------- infinite width
    def stax(self):
        """``(init_fn, apply_fn, kernel_fn)`` of the block in neural-tangents ``stax``."""
        if self.causal:
            raise NotImplementedError(
                "neural-tangents' GlobalSelfAttention has no causal mask: the infinite-width causal "
                "kernel is not available from stax; use the finite-width empirical NTK (BlockSpec.flax)."
            )
        if self.attention == "SOFTMAX" and not self.tied:
            raise NotImplementedError("the infinite-width kernel of d^-1/2 softmax attention has no closed "
                                      "form in neural-tangents; use scaling='linear' (tied Q=K, d^-1)")
        if self.attention == "NONE" and not (self.embed and self.residual):
            raise ValueError("attention='NONE' (no attention sub-layer) needs embed=True and residual=True")
        layers = []
        if self.embed:
            layers.append(stax.Dense(self.width))
        if self.attention == "POSITIONWISE":
            n_out = self.width if self.embed else self.out_dim if self.ffn_mult == 0 else self.width
            attn = stax.serial(stax.Dense(self.n_heads * self.d_head), stax.Dense(n_out))
            layers.append(_stax_residual(attn) if self.residual else attn)
            if self.layernorm:
                layers.append(stax.LayerNorm(axis=-1))
        elif self.attention != "NONE":
            attn = stax.GlobalSelfAttention(
                self.width if self.embed else self.out_dim if self.ffn_mult == 0 else self.width,
                self.d_head, self.d_head, self.n_heads, linear_scaling=self.tied,
                W_query_std=1.0, W_key_std=self.qk_std,
                attention_mechanism=self.attention)
            layers.append(_stax_residual(attn) if self.residual else attn)
            if self.layernorm:
                layers.append(stax.LayerNorm(axis=-1))
        if self.ffn_mult:
            act = stax.Relu() if self.activation == "relu" else stax.Gelu(approximate=False)
            ffn = stax.serial(stax.Dense(self.ffn_mult * self.width, W_std=math.sqrt(2.0)), act,
                              stax.Dense(self.width))
            layers.append(_stax_residual(ffn) if self.residual else ffn)
            if self.layernorm:
                layers.append(stax.LayerNorm(axis=-1))
        if self.embed or self.ffn_mult:
            layers.append(stax.Dense(self.out_dim))
        return stax.serial(*layers)

    def kernel_fn(self):
        """The infinite-width kernel function (``kernel_fn(x1, x2, 'ntk')`` -> ``(N1, N2, S, S)``)."""
        return self.stax()[2]

    # ---------------------------------------------------------------- finite width
    def flax(self) -> "Block":
        """The finite network as a flax module (``Block(self)``)."""
        if self.attention == "POSITIONWISE":
            raise NotImplementedError("attention='POSITIONWISE' exists at infinite width only (BlockSpec.stax)")
        return Block(self)


def _stax_residual(layer):
    return stax.serial(stax.FanOut(2), stax.parallel(layer, stax.Identity()), stax.FanInSum())


def sinusoidal_encoding(seq_len: int, dim: int, base: float = 10000.0) -> np.ndarray:
    r""":math:`PE_{p,2i} = \sin(p / b^{2i/d})`, :math:`PE_{p,2i+1} = \cos(p / b^{2i/d})` (Vaswani et al.)."""
    if seq_len < 1 or dim < 2:
        raise ValueError("need seq_len >= 1 and dim >= 2")
    pos = np.arange(seq_len)[:, None]
    i = np.arange((dim + 1) // 2)[None, :]
    ang = pos / base ** (2 * i / dim)
    pe = np.zeros((seq_len, dim))
    pe[:, 0::2] = np.sin(ang)
    pe[:, 1::2] = np.cos(ang)[:, : dim // 2]
    return pe


def make_inputs(x: np.ndarray, pos_enc: bool, *, base: float = 10000.0, scale: float = 1.0) -> np.ndarray:
    """Inputs ``x`` (``(N, S, d)``) with ``scale * PE`` added when ``pos_enc`` (same for both models)."""
    x = np.asarray(x)
    if x.ndim != 3:
        raise ValueError(f"inputs must be (N, S, d), got shape {x.shape}")
    if not pos_enc:
        return x
    return x + scale * sinusoidal_encoding(x.shape[1], x.shape[2], base).astype(x.dtype)[None]


# ---------------------------------------------------------------- flax modules

_normal = nn.initializers.normal(1.0)


class Dense(nn.Module):
    r""":math:`y = \sigma_W\, x W / \sqrt{n_\mathrm{in}}` (NTK parameterisation, no bias)."""

    features: int
    W_std: float = 1.0

    @nn.compact
    def __call__(self, x):
        W = self.param("W", _normal, (x.shape[-1], self.features), x.dtype)
        return self.W_std * (x @ W) / math.sqrt(x.shape[-1])


class Attention(nn.Module):
    """neural-tangents' ``GlobalSelfAttention`` (module docstring) with an optional causal mask.

    The attention matrices :math:`\\phi(G_h)` (``(..., H, S, S)``) are sown as
    ``intermediates/attention``.
    """

    n_out: int
    n_heads: int
    d_head: int
    attention: str
    tied: bool
    causal: bool
    qk_std: float = 1.0

    @nn.compact
    def __call__(self, x):
        d_in, S = x.shape[-1], x.shape[-2]
        H, dk = self.n_heads, self.d_head
        Wk = self.param("key", _normal, (H, d_in, dk), x.dtype)
        Wq = Wk if self.tied else self.param("query", _normal, (H, d_in, dk), x.dtype)
        Wv = self.param("value", _normal, (H, d_in, dk), x.dtype)
        Wo = self.param("out", _normal, (dk * H, self.n_out), x.dtype)
        q = jnp.einsum("...sd,hdk->...hsk", x, Wq)
        k = jnp.einsum("...sd,hdk->...hsk", x, Wk)
        v = jnp.einsum("...sd,hdk->...hsk", x, Wv)
        p = 1.0 if self.tied else 0.5
        G = jnp.einsum("...hsk,...htk->...hst", q, k) * self.qk_std / (d_in * dk ** p)
        if self.causal:
            keep = jnp.tril(jnp.ones((S, S), bool))
            G = jnp.where(keep, G, -jnp.inf if self.attention == "SOFTMAX" else 0.0)
        A = jax.nn.softmax(G, axis=-1) if self.attention == "SOFTMAX" else G
        self.sow("intermediates", "attention", A)
        heads = jnp.einsum("...hst,...htv->...svh", A, v)  # stax concatenates value-major
        heads = heads.reshape(heads.shape[:-2] + (dk * H,))
        return heads @ Wo / math.sqrt(dk * H * d_in)


def activation(name: str, u):
    r"""The FFN nonlinearity: ``relu`` :math:`\max(u, 0)` or ``gelu`` :math:`u\,\Phi(u)` (exact, erf form;
    the same function as ``stax.Gelu(approximate=False)``)."""
    if name == "relu":
        return jax.nn.relu(u)
    if name == "gelu":
        return jax.nn.gelu(u, approximate=False)
    raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")


def layer_norm(x, eps: float = 1e-12):
    r""":math:`(x - \bar x)/\sqrt{\mathrm{Var}(x) + \epsilon}` over channels (stax.LayerNorm)."""
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(eps + var)


class Block(nn.Module):
    """The finite network of :class:`BlockSpec` (inputs ``(N, S, d_in)`` -> ``(N, S, out_dim)``)."""

    spec: BlockSpec

    @nn.compact
    def __call__(self, x):
        s = self.spec
        h = Dense(s.width, name="embed")(x) if s.embed else x
        n_attn_out = s.width if s.embed else (s.out_dim if s.ffn_mult == 0 else s.width)
        if s.attention != "NONE":
            a = Attention(n_attn_out, s.n_heads, s.d_head, s.attention, s.tied, s.causal,
                          qk_std=s.qk_std, name="attn")(h)
            h = h + a if s.residual else a
            if s.layernorm:
                h = layer_norm(h)
        if s.ffn_mult:
            u = Dense(s.ffn_mult * s.width, W_std=math.sqrt(2.0), name="ffn_in")(h)
            u = Dense(s.width, name="ffn_out")(activation(s.activation, u))
            h = h + u if s.residual else u
            if s.layernorm:
                h = layer_norm(h)
        if s.embed or s.ffn_mult:
            h = Dense(s.out_dim, name="readout")(h)
        return h


def init_params(spec: BlockSpec, key: jax.Array, x: jax.Array) -> dict:
    """Initial flax parameters (all weights i.i.d. N(0, 1)) for inputs shaped like ``x``.

    Drawn by the stax twin's ``init_fn`` and mapped with :func:`flax_params_from_stax`, so both
    realisations start from the same weights (and no per-shape flax tracing is needed). The causal
    mask has no parameters: a causal block is initialised like its bidirectional twin.
    """
    init_fn = spec.with_(causal=False).stax()[0]
    _, stax_params = init_fn(key, tuple(x.shape))
    params = flax_params_from_stax(spec, stax_params)
    return jax.tree.map(lambda a: jnp.asarray(a, x.dtype), params)


def param_shapes(spec: BlockSpec, x_shape: tuple[int, ...]) -> Any:
    """The flax parameter tree of :func:`init_params` as ``jax.ShapeDtypeStruct`` leaves (no compute)."""
    init_fn = spec.with_(causal=False).stax()[0]
    return jax.eval_shape(lambda k: flax_params_from_stax(spec, init_fn(k, tuple(x_shape))[1]),
                          jax.random.PRNGKey(0))


def draw_params(spec: BlockSpec, x_shape: tuple[int, ...], seeds: Sequence[Sequence[int] | int],
                dtype=np.float32) -> dict:
    r"""Initial parameters for several seeds at once, stacked on a leading axis ``len(seeds)``.

    Every weight is i.i.d. :math:`\mathcal N(0, 1)` (NTK parameterisation), the distribution of
    :func:`init_params`, drawn on the host by ``numpy.random.default_rng(seed)`` leaf by leaf (in the
    tree's flatten order). Drawing outside XLA costs no compilation, which dominates at small widths
    on a CPU; ``seed`` may be an int or a tuple of ints (e.g. ``(config seed, width, index)``).
    """
    leaves, treedef = jax.tree.flatten(param_shapes(spec, x_shape))
    stacked = [np.empty((len(seeds),) + tuple(leaf.shape), dtype) for leaf in leaves]
    for i, seed in enumerate(seeds):
        rng = np.random.default_rng(seed)
        for out, leaf in zip(stacked, leaves):
            out[i] = rng.standard_normal(leaf.shape, dtype=np.float32).astype(dtype)
    return jax.tree.unflatten(treedef, [jnp.asarray(a) for a in stacked])


def apply(spec: BlockSpec, params: dict, x: jax.Array) -> jax.Array:
    """Finite network output ``(N, S, out_dim)``."""
    return spec.flax().apply({"params": params}, x)


def attention_maps(spec: BlockSpec, params: dict, x: jax.Array) -> jax.Array:
    """Attention matrices ``(N, H, S, S)`` of the finite network on ``x``."""
    _, state = spec.flax().apply({"params": params}, x, mutable=["intermediates"])
    return state["intermediates"]["attn"]["attention"][0]


def flax_params_from_stax(spec: BlockSpec, stax_params) -> dict:
    """Map a ``BlockSpec.stax()`` parameter tree onto the flax module's parameters."""
    it = iter(stax_params)
    out: dict[str, Any] = {}
    if spec.embed:
        out["embed"] = {"W": next(it)[0]}
    if spec.attention != "NONE":
        a = next(it)
        if spec.residual:
            a = a[1][0]
        q, k, v, o, _b, _pe = a
        out["attn"] = {"key": k, "value": v, "out": o}
        if not spec.tied:
            out["attn"]["query"] = q
        if spec.layernorm:
            next(it)
    if spec.ffn_mult:
        f = next(it)
        if spec.residual:
            f = f[1][0]
        out["ffn_in"] = {"W": f[0][0]}
        out["ffn_out"] = {"W": f[2][0]}
        if spec.layernorm:
            next(it)
    if spec.embed or spec.ffn_mult:
        out["readout"] = {"W": next(it)[0]}
    return out


def empirical_ntk_fn(spec: BlockSpec):
    r"""``ntk(x1, x2, params)`` -> empirical NTK :math:`\sum_\theta \partial_\theta f_{s}(x_1)\,
    \partial_\theta f_{s'}(x_2)` of the flax network, shape ``(N1, N2, S, S)`` (output channels traced)."""
    model = spec.flax()

    def f(params, x):
        return model.apply({"params": params}, x)

    return nt.empirical_ntk_fn(f, trace_axes=(-1,), vmap_axes=0,
                               implementation=nt.NtkImplementation.JACOBIAN_CONTRACTION)


def infinite_ntk(spec: BlockSpec, x1, x2=None, get: str = "ntk") -> np.ndarray:
    """Infinite-width ``get`` (``'ntk'``/``'nngp'``) kernel from stax, ``(N1, N2, S, S)``."""
    return np.asarray(spec.kernel_fn()(jnp.asarray(x1), None if x2 is None else jnp.asarray(x2), get))


def fast_ntk_fn(spec: BlockSpec):
    r"""Jitted ``ntk(params, x)`` -> the empirical NTK of ``x`` with itself, ``(N, N, S, S)``.

    Same quantity as :func:`empirical_ntk_fn` (output channels traced), computed as
    :math:`\sum_\text{leaves} J J^\top` from one reverse-mode Jacobian; it compiles several times
    faster, which matters when every width is a new shape. ``tests/test_framework_models.py``
    checks it against ``nt.empirical_ntk_fn``.
    """
    return jax.jit(ntk_fn(spec))


def ntk_fn(spec: BlockSpec):
    """Un-jitted :func:`fast_ntk_fn` (to be traced inside a larger jitted / mapped computation)."""
    model = spec.flax()

    def ntk(params, x):
        n, s = x.shape[0], x.shape[1]
        jac = jax.jacrev(lambda pr: model.apply({"params": pr}, x).reshape(-1))(params)
        out = 0.0
        for j in jax.tree.leaves(jac):
            j = j.reshape(n * s, spec.out_dim, -1)
            out = out + jnp.einsum("aop,bop->ab", j, j)
        return out.reshape(n, s, n, s).transpose(0, 2, 1, 3)

    return ntk


def fast_position_ntk_fn(spec: BlockSpec):
    r"""Jitted ``ntk(params, x)`` -> only the per-sequence position kernels :math:`\Theta(x_a, x_a)`,
    ``(N, S, S)``: the diagonal blocks of :func:`fast_ntk_fn`, one sequence at a time (``vmap``), so
    the work grows linearly instead of quadratically in the number of sequences."""
    model = spec.flax()

    def one(params, xa):
        s = xa.shape[0]
        jac = jax.jacrev(lambda pr: model.apply({"params": pr}, xa[None]).reshape(-1))(params)
        out = 0.0
        for j in jax.tree.leaves(jac):
            j = j.reshape(s, spec.out_dim, -1)
            out = out + jnp.einsum("sop,top->st", j, j)
        return out

    return jax.jit(jax.vmap(one, in_axes=(None, 0)))
