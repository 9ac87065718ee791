r"""Attention: ``GlobalSelfAttention`` with ``linear_scaling=True`` (neural-tangents
``stax/linear.py: GlobalSelfAttention``), the infinite-width attention kernel of Hron et al. (2020).

With :math:`\tilde C(x) = C(x) + \sigma_{pe}^2 R` (``pos_emb_type='SUM'``, :math:`R_{st} =
\phi(\sum_i |s_i - t_i|^p)`, zeroed on masked rows / columns), :math:`\sigma_{QK} = \sigma_Q\sigma_K`,
:math:`\sigma_{OV} = \sigma_O\sigma_V` and :math:`f` the attention mechanism (softmax over keys,
identity, abs, relu; masked keys 0, or :math:`-10^{20}` before the softmax):

.. math::
    G(x) = f\big(\sigma_{QK}\,\tilde C(x)\big),\qquad
    K'(x,y) = \sigma_{OV}^2\, G(x) K(x,y) G(y)^\top + \sigma_b^2,

    \Theta'(x,y) = \sigma_{OV}^2\, G(x)\Theta(x,y)G(y)^\top + \sigma_b^2 + 2(K' - \sigma_b^2).

The output is Gaussian (the value and output weights are fresh Gaussians) whatever the input.

``linear_scaling=False`` (the standard :math:`d^{-1/2}` scaling, infinitely many heads; an
extension: neural-tangents has it for ``IDENTITY`` only) is the Monte Carlo layer of
:mod:`.attention_mc` (``mc_samples``, ``mc_seed``, ``mc_chunk``); the code of the
``linear_scaling=True`` path is unchanged by it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from ntkrepro.kernels._src.attention_mc import pair_mc, single_mc
from ntkrepro.kernels._src.base import (Array, Info, Layer, Pair, Single, _affine, _mask_pair, _mask_single, _nt_stax, _size,
                                        _stack, enum_value, stax_keywords)

_NEG_INF = -1e20  # neural-tangents' masked-key logit (softmax raises on -inf rows)


def _pos_emb_cov(shape: Sequence[int], p_norm: float, decay_fn: Callable | None, dtype) -> Array:
    r"""Positional-embedding covariance :math:`R_{st} = \phi(\sum_i |s_i - t_i|^{p})` over the
    flattened positions (identity if ``decay_fn`` is None): ``linear.py: _pos_emb_pdist``."""
    s = _size(shape)
    if decay_fn is None:
        return jnp.eye(s, dtype=dtype)
    grids = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
    coords = [jnp.asarray(g.reshape(-1)) for g in grids]  # integer positions, as jnp.arange
    r = jnp.zeros((1, 1), dtype)
    for c in coords:
        r = r + jnp.abs(c[:, None] - c[None, :]) ** p_norm
    return jnp.asarray(decay_fn(r), dtype)


@stax_keywords(batch_axis=0, channel_axis=-1)
@dataclass(frozen=True, repr=False)
class GlobalSelfAttention(Layer):
    r"""``stax.GlobalSelfAttention(..., linear_scaling=True)`` (``linear.py: GlobalSelfAttention``):
    with :math:`\tilde C(x) = C(x) + \sigma_{pe}^2 R` (``pos_emb_type='SUM'``, :math:`R` zeroed on
    masked rows/columns) the attention weights are

    .. math:: G(x) = f\big(\sigma_{QK}\,\tilde C(x)\big)\quad(\text{masked keys: } 0, \text{ or }
        -10^{20} \text{ before the softmax over keys}),

    :math:`\sigma_{QK} = \sigma_Q\sigma_K`, :math:`\sigma_{OV} = \sigma_O\sigma_V`, and

    .. math::
        K'(x,y) = \sigma_{OV}^2\, G(x) K(x,y) G(y)^\top + \sigma_b^2,\qquad
        \Theta'(x,y) = \sigma_{OV}^2\, G(x)\Theta(x,y)G(y)^\top + \sigma_b^2 + 2(K' - \sigma_b^2),

    then masked rows/columns zeroed. Per pair and kernel: two :math:`S\times S` products,
    :math:`4S^3` FLOPs, computed as :math:`T = G(x)[K\ \Theta](x,\cdot)` (one GEMM per :math:`x`,
    :math:`S\times S` by :math:`S\times 2n_2S`) then :math:`T\,G(y)^\top`. When only the diagonal
    of the output is needed (the layer feeds ``LayerNorm``/``Flatten``),
    :math:`K'_{ss} = \sum_t T_{st}\,G(y)_{st}`: :math:`2S^3 + 2S^2` FLOPs per kernel."""

    n_chan_out: int
    n_chan_key: int
    n_chan_val: int
    n_heads: int
    linear_scaling: bool = True
    W_key_std: float = 1.0
    W_value_std: float = 1.0
    W_query_std: float = 1.0
    W_out_std: float = 1.0
    b_std: float | None = None
    attention_mechanism: str = "SOFTMAX"
    pos_emb_type: str = "NONE"
    pos_emb_p_norm: float = 2
    pos_emb_decay_fn: Callable | None = field(default=None, compare=False)
    n_chan_pos_emb: int | None = None
    W_pos_emb_std: float = 1.0
    val_pos_emb: bool = False
    #: ``linear_scaling=False`` only (:mod:`.attention_mc`): Monte Carlo draws (even; required),
    #: seed, draws per chunk (None: as many as fit ``attention_mc.MC_MEMORY_BUDGET`` bytes).
    mc_samples: int | None = None
    mc_seed: int = 0
    mc_chunk: int | None = None

    def __post_init__(self):
        # neural-tangents' enums (stax.AttentionMechanism.RELU, stax.PositionalEmbedding.SUM) -> their values
        object.__setattr__(self, "attention_mechanism", enum_value(self.attention_mechanism))
        object.__setattr__(self, "pos_emb_type", enum_value(self.pos_emb_type))

    def _build_stax(self):
        stax = _nt_stax()
        return stax.GlobalSelfAttention(
            self.n_chan_out, self.n_chan_key, self.n_chan_val, self.n_heads, linear_scaling=self.linear_scaling,
            W_key_std=self.W_key_std, W_value_std=self.W_value_std, W_query_std=self.W_query_std,
            W_out_std=self.W_out_std, b_std=self.b_std, attention_mechanism=self.attention_mechanism,
            pos_emb_type=self.pos_emb_type, pos_emb_p_norm=self.pos_emb_p_norm,
            pos_emb_decay_fn=self.pos_emb_decay_fn, n_chan_pos_emb=self.n_chan_pos_emb,
            W_pos_emb_std=self.W_pos_emb_std, val_pos_emb=self.val_pos_emb, **self.stax_kwargs())

    def info(self, i):
        self.check_keywords()
        if not i.shape:
            raise ValueError("GlobalSelfAttention needs spatial inputs")
        # fresh Gaussian value / output weights: a Gaussian output whatever the input (neural-tangents)
        return Info(i.shape, int(self.n_chan_out), True)

    def need(self, out_mode, in_shape):
        if not self.linear_scaling:
            self._check_mc()
        if self.pos_emb_type not in ("NONE", "SUM"):
            raise self.unsupported("pos_emb_type", self.pos_emb_type, "NONE or SUM only")
        if self.val_pos_emb:
            raise self.unsupported("val_pos_emb", self.val_pos_emb, "False only")
        if self.attention_mechanism not in ("SOFTMAX", "IDENTITY", "ABS", "RELU"):
            raise ValueError(f"unknown attention_mechanism {self.attention_mechanism!r}")
        if not in_shape:
            raise ValueError("GlobalSelfAttention needs spatial inputs")
        return "full"

    def _check_mc(self):
        """``linear_scaling=False``: the Monte Carlo layer of :mod:`.attention_mc` needs an even
        ``mc_samples``; positional embeddings are not implemented there."""
        if self.mc_samples is None:
            raise self.unsupported("linear_scaling", self.linear_scaling,
                                   "the d^-1/2 kernel has no closed form: give mc_samples=N (even) for the "
                                   "Monte Carlo kernel of ntkrepro.kernels._src.attention_mc")
        n = self.mc_samples
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2 or n % 2:
            raise ValueError(f"mc_samples must be an even integer >= 2 (draws come in swapped pairs), got {n!r}")
        if self.mc_chunk is not None and (isinstance(self.mc_chunk, bool) or int(self.mc_chunk) < 1):
            raise ValueError(f"mc_chunk must be a positive integer or None, got {self.mc_chunk!r}")
        if self.pos_emb_type != "NONE":
            raise self.unsupported("pos_emb_type", self.pos_emb_type, "NONE only with linear_scaling=False")

    def weights(self, cov: Array, mask: Array | None, shape: Sequence[int]) -> Array:
        """``G`` of the class docstring, ``(n, S, S)``, from ``cov (n, S, S)`` and ``mask (n, S)``."""
        c = cov
        qk = self.W_query_std * self.W_key_std
        if self.pos_emb_type == "SUM":
            r = _pos_emb_cov(shape, self.pos_emb_p_norm, self.pos_emb_decay_fn, c.dtype)[None]
            if mask is not None:
                r = jnp.where(mask[:, :, None] | mask[:, None, :], jnp.zeros((), c.dtype), r)
            c = c + self.W_pos_emb_std ** 2 * r
        mech = self.attention_mechanism
        if mask is not None:
            c = jnp.where(mask[:, None, :], jnp.asarray(_NEG_INF if mech == "SOFTMAX" else 0.0, c.dtype), c)
        if mech == "SOFTMAX":
            return jax.nn.softmax(qk * c, axis=-1)
        if mech == "IDENTITY":
            return qk * c
        if mech == "ABS":
            return jnp.abs(qk * c)
        return jnp.maximum(qk * c, 0.0)

    def single(self, st, plan):
        if not self.linear_scaling:
            out = _affine(single_mc(self, st.cov, st.mask, plan.out_mode), self.W_out_std * self.W_value_std,
                          self.b_std)
            return Single(_mask_single(out, st.mask, plan.out_mode), st.mask), (st.cov, st.mask)
        g = self.weights(st.cov, st.mask, plan.in_shape)
        gc = jnp.einsum("nsu,nut->nst", g, st.cov)
        if plan.out_mode == "full":
            out = jnp.einsum("nst,nvt->nsv", gc, g)
        else:
            out = jnp.sum(gc * g, axis=-1)
        out = _affine(out, self.W_out_std * self.W_value_std, self.b_std)
        return Single(_mask_single(out, st.mask, plan.out_mode), st.mask), (g, st.mask)

    def pair(self, p, aux1, aux2, plan):
        if not self.linear_scaling:
            return self._pair_mc(p, aux1, aux2, plan)
        (g1, m1), (g2, m2) = aux1, aux2
        ov2 = (self.W_out_std * self.W_value_std) ** 2
        b2 = 0.0 if self.b_std is None else self.b_std ** 2
        # x at S1 positions, y at S2 (sequences of two lengths, see base.pair_shapes): G(x) is S1 x S1,
        # G(y) S2 x S2, and the product G(x) K G(y)^T is S1 x S2
        n1, s, kk, n2, s2 = p.k.shape
        t = jnp.einsum("xsu,xukyt->xskyt", g1, p.k)  # one GEMM per x over both kernels
        if plan.out_mode == "full":
            # right product per y, batch axis made leading explicitly (XLA's own layout choice for
            # this dot_general transposed ~3x slower on the CPU)
            tt = jnp.transpose(t, (3, 0, 1, 2, 4)).reshape(n2, n1 * s * kk, s2)
            y = jnp.einsum("yrt,yvt->yrv", tt, g2).reshape(n2, n1, s, kk, s2)
            y = jnp.transpose(y, (1, 2, 3, 0, 4))
        else:  # sum_t T[x,s,k,y,t] G(y)[s,t], as a product with ones: XLA emits one vectorised loop
            y = (t * jnp.transpose(g2, (1, 0, 2))[None, :, None]) @ jnp.ones((s,), t.dtype)
        y = ov2 * y
        if p.ntk == "array":  # linear: Theta' = ov2 G Theta G' + 2 K' - b2, mixed on the (smaller or
            # transposed anyway) product rather than on T (one pass over T less)
            y = _stack([y[:, :, 0], y[:, :, 1] + 2 * y[:, :, 0]], plan.out_mode)
        if p.ntk in ("copy", "zero"):  # Theta' = ov2 G (c K) G' + 2 K' - b2: c = 1 (copy), 0 (zero)
            y0 = y[:, :, 0]
            y = _stack([y0, (3.0 if p.ntk == "copy" else 2.0) * y0], plan.out_mode)
        if self.b_std is not None:
            y = y + b2
        k = _mask_pair(y, m1, m2, plan.out_mode)
        return Pair(k, "none" if p.ntk == "none" else "array", p.offset)

    def _pair_mc(self, p, aux1, aux2, plan):
        """``linear_scaling=False``: :func:`.attention_mc.pair_mc` on the block, in this layout."""
        (c1, m1), (c2, m2) = aux1, aux2
        k = jnp.transpose(p.k[:, :, 0], (0, 2, 1, 3))  # (n1, n2, S, S)
        theta = {"array": lambda: jnp.transpose(p.k[:, :, 1], (0, 2, 1, 3)), "copy": lambda: k,
                 "zero": lambda: None, "none": lambda: None}[p.ntk]()
        compute_ntk = p.ntk != "none"
        e_k, e_t = pair_mc(self, c1, c2, m1, m2, k, theta, compute_ntk, plan.out_mode)
        perm = (0, 2, 1, 3) if plan.out_mode == "full" else (0, 2, 1)
        ov = self.W_out_std * self.W_value_std
        parts = [_affine(jnp.transpose(e, perm), ov, self.b_std) for e in ((e_k, e_t) if compute_ntk else (e_k,))]
        y = _stack(parts, plan.out_mode)
        return Pair(_mask_pair(y, m1, m2, plan.out_mode), "array" if compute_ntk else "none", p.offset)
