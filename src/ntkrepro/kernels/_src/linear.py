r"""Linear layers with weights: ``Dense`` (channels) and ``Conv`` (a stencil over positions),
neural-tangents ``stax/linear.py``, NTK parameterisation.

With weight and bias variances :math:`\sigma_w^2, \sigma_b^2` and a linear map :math:`\mathcal A`
of the covariance (identity for ``Dense``; the conv stencil for ``Conv``),

.. math::
    C'(x) = \sigma_w^2\,\mathcal A(C(x)) + \sigma_b^2,\qquad
    K'(x, y) = \sigma_w^2\,\mathcal A(K(x, y)) + \sigma_b^2,\qquad
    \Theta'(x, y) = K'(x, y) + \sigma_w^2\,\mathcal A(\Theta(x, y)),

then masked entries zeroed. The conv stencil (stride 1, a diagonal filter of weight
:math:`1/\prod_i k_i`, both positions shifted jointly; neural-tangents
``_conv_kernel_full_spatial_shared`` / ``_conv_kernel_diagonal_spatial``):

.. math:: \mathcal A(K)_{st} = \frac{1}{\prod_i k_i}\sum_{d\in\text{taps}}
    [\,s + d \in \text{grid}\,][\,t + d \in \text{grid}\,]\; K_{s+d,\,t+d}.

The output of either is Gaussian whatever its input (a fresh Gaussian weight matrix): the
nonlinearities and ``LayerNorm`` may follow.

**A first conv on the inputs** (:meth:`Conv.takes_inputs`, issue 36). On the inputs' covariance
:math:`K_{st} = x_s\cdot y_t / C` the stencil is an inner product of patches,

.. math:: \mathcal A(K)_{st} = P(x)_s \cdot P(y)_t,\qquad
    P(x)_s = \big([\,s + d \in \text{grid}\,]\, x_{s+d}\big)_{d \in \text{taps}} \big/ \sqrt{C\textstyle\prod_i k_i},

one GEMM with inner dimension :math:`C\prod_i k_i` (27 for H4's 3x3 conv on RGB images; :math:`\sigma_w`
and :math:`\sigma_b` folded in as :math:`[\sigma_w P, \sigma_b]`, so that the GEMM writes :math:`K'`) instead of
the input covariance (inner dimension :math:`C`) followed by the 9-tap stencil of the whole
per-pair array: at :math:`S = 64`, 256 pairs, 1.0-1.2 ms of CPU time against 4.3-4.8 ms (measured
2026-12-06, 2 shared cores). For many input channels (H6: 9 taps of 50-d word vectors, 450) the
GEMM costs more than the stencil it replaces: used up to :data:`PATCH_MAX_FEATURES` features.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ntkrepro.kernels._src.base import (Array, Info, Inputs, Layer, Pair, Single, _affine, _kernel_slices, _mask_pair,
                                        _mask_single, _nt_stax, _size, _stack, enum_value, pair_shapes, stax_keywords)

#: A first ``Conv`` computes from the inputs' patches (module docstring) when taps x input channels is at
#: most this.
PATCH_MAX_FEATURES = 64


def conv_offsets(shape: Sequence[int], filter_shape: Sequence[int], padding: str
                 ) -> tuple[list[tuple[int, np.ndarray | None]], tuple[int, ...]]:
    r"""The conv stencil as shifts of the flattened position index: for each filter tap
    :math:`a` (:math:`d_i = a_i - \mathrm{pad}^{lo}_i`), the offset :math:`o = \sum_i d_i\,
    \mathrm{stride}_i` and the positions whose shifted neighbour :math:`p + d` lies inside the input
    (``None`` = all). ``SAME`` (stride 1): :math:`\mathrm{pad}^{lo} = \lfloor (k-1)/2\rfloor`, same
    output shape; ``VALID``: no padding, output shape :math:`n - k + 1` (the shift is computed on
    the input grid and the output cropped)."""
    shape = tuple(int(n) for n in shape)
    if padding == "SAME":
        lo = [(k - 1) // 2 for k in filter_shape]
        out = shape
    elif padding == "VALID":
        lo = [0] * len(filter_shape)
        out = tuple(n - k + 1 for n, k in zip(shape, filter_shape))
        if min(out) < 1:
            raise ValueError(f"filter {tuple(filter_shape)} larger than the input {shape}")
    else:
        raise NotImplementedError(f"fast backend: Conv(padding={padding!r}) is not implemented (SAME or VALID only)")
    strides = np.cumprod((shape[1:] + (1,))[::-1])[::-1]
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"), -1).reshape(-1, len(shape))
    taps = []
    for a in itertools.product(*[range(k) for k in filter_shape]):
        dlt = np.array(a) - np.array(lo)
        inside = np.all((grid + dlt >= 0) & (grid + dlt < np.array(shape)), axis=1)
        if padding == "VALID":
            inside = None  # every kept output reads inside the input
        taps.append((int((dlt * strides).sum()), None if inside is None or inside.all() else inside))
    return taps, out


def _stencil(a: Array, n_rows: int, n_cols: int | None, shape: Sequence[int], filter_shape: Sequence[int],
             padding: str, col_shape: Sequence[int] | None = None) -> Array:
    r"""The conv stencil on a covariance (neural-tangents ``_conv_kernel_full_spatial_shared`` /
    ``_conv_kernel_diagonal_spatial``: a diagonal filter of weights :math:`1/k_i` per dimension,
    stride 1): with :math:`a` viewed as a matrix of ``n_rows`` row blocks of :math:`S` positions and
    (if ``n_cols``) ``n_cols`` column blocks,

    .. math:: \mathcal A(a)_{(x,s),(y,t)} = \frac{1}{\prod_i k_i}\sum_{\text{taps}}
        [\,s + d \in \text{grid}\,][\,t + d \in \text{grid}\,]\; a_{(x,s+o),(y,t+o)},

    both positions shifted jointly (only rows when ``n_cols`` is None: the diagonal mode). The
    result is cropped to the output grid (``VALID``). ``a`` is 2-D ``(n_rows S, C)``. ``col_shape``: the
    column blocks' grid when it differs from the rows' (sequences of two lengths, one spatial axis: the
    flattened offsets of a tap are then the same on both sides; see :func:`.base.pair_shapes`)."""
    taps, out_shape = conv_offsets(shape, filter_shape, padding)
    col_shape = tuple(shape) if col_shape is None else tuple(col_shape)
    if col_shape != tuple(shape):
        if len(shape) != 1 or len(col_shape) != 1 or not n_cols:
            raise ValueError(f"rows and columns on different grids {tuple(shape)}, {col_shape}: one spatial axis, "
                             "full mode only")
        col_taps, col_out = conv_offsets(col_shape, filter_shape, padding)
    else:
        col_taps, col_out = taps, out_shape
    r, c = a.shape
    lo = max(0, -min(o for o, _ in taps))
    hi = max(0, max(o for o, _ in taps))
    ap = jnp.pad(a, ((lo, hi), (lo, hi) if n_cols else (0, 0)))
    acc = None
    for (o, inside), (_, col_inside) in zip(taps, col_taps):
        term = ap[lo + o:lo + o + r, (lo + o if n_cols else 0):(lo + o if n_cols else 0) + c]
        if inside is not None:  # zero the taps that read outside the grid (row factor)
            term = term * jnp.asarray(np.tile(inside, n_rows), a.dtype)[:, None]
        if n_cols and col_inside is not None:  # (column factor)
            term = term * jnp.asarray(np.tile(col_inside, n_cols), a.dtype)[None, :]
        acc = term if acc is None else acc + term
    acc = acc / float(np.prod(filter_shape))
    if tuple(out_shape) != tuple(shape) or tuple(col_out) != col_shape:
        crop = tuple(slice(0, m) for m in out_shape)
        col_crop = tuple(slice(0, m) for m in col_out)
        so, co = _size(out_shape), _size(col_out)
        acc = acc.reshape((n_rows,) + tuple(shape) + ((c,) if not n_cols else (n_cols,) + col_shape))
        idx = (slice(None),) + crop + ((slice(None),) if not n_cols else (slice(None),) + col_crop)
        acc = acc[idx].reshape(n_rows * so, c if not n_cols else n_cols * co)
    return acc


def conv_patches(x: Array, shape: Sequence[int], filter_shape: Sequence[int], padding: str) -> Array:
    r"""The patches :math:`P(x)` of the module docstring: ``x (n, S, C)`` (flattened positions of
    ``shape``) -> ``(n, S_out, taps * C)``, scaled so that :math:`P(x) P(y)^\top` is the stencil of
    :func:`_stencil` applied to :math:`x y^\top / C` (cropped to the output grid for ``VALID``)."""
    taps, out_shape = conv_offsets(shape, filter_shape, padding)
    n, s, c = x.shape
    lo = max(0, -min(o for o, _ in taps))
    hi = max(0, max(o for o, _ in taps))
    xp = jnp.pad(x, ((0, 0), (lo, hi), (0, 0)))
    cols = []
    for o, inside in taps:
        col = xp[:, lo + o:lo + o + s]
        if inside is not None:
            col = col * jnp.asarray(inside, x.dtype)[None, :, None]
        cols.append(col)
    p = jnp.concatenate(cols, axis=-1) * (1.0 / math.sqrt(c * len(taps)))
    if tuple(out_shape) != tuple(shape):
        p = p.reshape((n,) + tuple(shape) + (-1,))[(slice(None),) + tuple(slice(0, m) for m in out_shape)]
        p = p.reshape(n, _size(out_shape), -1)
    return p


def _expand(p: Pair, mode: str) -> Pair:
    """Store a ``"copy"`` NTK explicitly (``K`` 1 -> 2)."""
    if p.ntk != "copy":
        return p
    return Pair(jnp.concatenate([p.k, p.k], axis=2 if mode != "none" else 1), "array", p.offset)


def _linear_pair(p: Pair, mode: str, apply: Callable[[Array], Array], w_std: float, b_std: float | None,
                 m1, m2) -> Pair:
    r"""The NNGP/NTK update of a layer with weights and a linear map :math:`\mathcal A` of the
    covariance: :math:`K' = \sigma_w^2\mathcal A(K) + \sigma_b^2`,
    :math:`\Theta' = \sigma_w^2\mathcal A(\Theta) + K' = \sigma_w^2\mathcal A(K + \Theta) + \sigma_b^2`
    (``apply`` acts on the stacked array), then masked entries zeroed. From a zero NTK the result is
    :math:`\Theta' = K'` (state ``"copy"``)."""
    p = _expand(p, mode)
    k = p.k
    if p.ntk == "array":
        k0, k1 = _kernel_slices(k)
        k = _stack([k0, k0 + k1], mode)
    out = _mask_pair(_affine(apply(k), w_std, b_std), m1, m2, mode)
    return Pair(out, {"array": "array", "zero": "copy", "none": "none"}[p.ntk], p.offset)


@stax_keywords(batch_axis=0, channel_axis=-1, parameterization="ntk", s=(1, 1))
@dataclass(frozen=True, repr=False)
class Dense(Layer):
    r"""``stax.Dense(out_dim, W_std, b_std)`` (NTK parameterisation), acting on channels:
    :math:`K' = \sigma_w^2 K + \sigma_b^2`, :math:`\Theta' = K' + \sigma_w^2\Theta`, then masked
    entries zeroed (``linear.py: Dense``)."""

    out_dim: int
    W_std: float = 1.0
    b_std: float | None = None

    def _build_stax(self):
        stax = _nt_stax()
        return stax.Dense(self.out_dim, W_std=self.W_std, b_std=self.b_std, **self.stax_kwargs())

    def info(self, i):
        self.check_keywords()
        return Info(i.shape, int(self.out_dim), True)  # a fresh Gaussian weight matrix: Gaussian output

    def single(self, st, plan):
        cov = _mask_single(_affine(st.cov, self.W_std, self.b_std), st.mask, plan.in_mode)
        return Single(cov, st.mask), st.mask

    def pair(self, p, aux1, aux2, plan):
        return _linear_pair(p, plan.in_mode, lambda a: a, self.W_std, self.b_std, aux1, aux2)

    def fuses_into_previous(self, plan):
        return True  # K' = w^2 K + b^2 entry by entry, in any mode


@stax_keywords(dimension_numbers=None, parameterization="ntk", s=(1, 1))
@dataclass(frozen=True, repr=False)
class Conv(Layer):
    r"""``stax.Conv(out_chan, filter_shape, strides=1, padding, W_std, b_std)`` (shared weights,
    NTK parameterisation): :math:`K' = \sigma_w^2\,\mathcal A(K) + \sigma_b^2`,
    :math:`\Theta' = \sigma_w^2\,\mathcal A(\Theta) + K'` with :math:`\mathcal A` the stencil of
    :func:`_stencil` (``linear.py: _Conv.kernel_fn``). The output mask is the input mask at the
    window centre (``_pool_mask``); masked entries are zeroed."""

    out_chan: int
    filter_shape: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    padding: str = "VALID"
    W_std: float = 1.0
    b_std: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "filter_shape", tuple(int(k) for k in self.filter_shape))
        if self.strides is not None:
            object.__setattr__(self, "strides", tuple(int(k) for k in self.strides))
        object.__setattr__(self, "padding", enum_value(self.padding))  # stax.Padding.SAME -> "SAME"

    def _build_stax(self):
        stax = _nt_stax()
        return stax.Conv(self.out_chan, self.filter_shape, strides=self.strides, padding=self.padding,
                         W_std=self.W_std, b_std=self.b_std, **self.stax_kwargs())

    def info(self, i):
        self.check_keywords()
        return Info(self.out_shape(i.shape), int(self.out_chan), True)

    def out_shape(self, shape):
        if shape is None or len(shape) != len(self.filter_shape):
            raise ValueError(f"Conv{self.filter_shape} needs {len(self.filter_shape)} spatial dims, got {shape}")
        if self.strides is not None and any(s != 1 for s in self.strides):
            raise self.unsupported("strides", self.strides, "stride 1 only")
        return conv_offsets(shape, self.filter_shape, self.padding)[1]

    def _out_mask(self, m, shape):
        if m is None or self.padding == "SAME":
            return m
        idx = (slice(None),) + tuple(slice((k - 1) // 2, (k - 1) // 2 + n - k + 1)
                                     for n, k in zip(shape, self.filter_shape))
        return m.reshape((m.shape[0],) + tuple(shape))[idx].reshape(m.shape[0], -1)

    def single(self, st, plan):
        n, s = st.cov.shape[0], _size(plan.in_shape)
        so = _size(plan.out_shape)
        if plan.in_mode == "full":
            cov = _stencil(st.cov.reshape(n * s, s), n, 1, plan.in_shape, self.filter_shape, self.padding)
            cov = cov.reshape(n, so, so)
        else:
            cov = _stencil(st.cov.reshape(n * s, 1), n, None, plan.in_shape, self.filter_shape, self.padding)
            cov = cov.reshape(n, so)
        mask = self._out_mask(st.mask, plan.in_shape)
        return Single(_mask_single(_affine(cov, self.W_std, self.b_std), mask, plan.in_mode), mask), mask

    def fuses_into_previous(self, plan):
        """A 1x1 filter is the affine map of ``Dense``, entry by entry (no stencil)."""
        return all(k == 1 for k in self.filter_shape)

    def takes_inputs(self, plan, channels: int) -> bool:
        """Whether this layer, as the model's first, computes from the inputs' patches (``Pair.k`` an
        :class:`~.base.Inputs`; module docstring): full covariances and at most
        :data:`PATCH_MAX_FEATURES` taps x channels."""
        return plan.in_mode == "full" and int(np.prod(self.filter_shape)) * int(channels) <= PATCH_MAX_FEATURES

    def pair(self, p, aux1, aux2, plan):
        s, so = _size(plan.in_shape), _size(plan.out_shape)
        full = plan.in_mode == "full"
        if isinstance(p.k, Inputs):  # the stencil of the inputs' covariance as one GEMM of patches,
            # weight and bias folded into the features ([w P, b] [w P, b]^T = w^2 P P^T + b^2): the GEMM
            # writes K' itself, no elementwise pass after it; from the inputs' zero NTK, Theta' = K'.
            # Sequences: each side on its own (trimmed) length, as pair_shapes reads it from the arrays.
            feats, sizes = [], []
            for x in p.k:
                shape = (int(x.shape[1]),) if len(plan.in_shape) == 1 else plan.in_shape
                f = conv_patches(x, shape, self.filter_shape, self.padding) * self.W_std
                if self.b_std is not None:
                    f = jnp.concatenate([f, jnp.full(f.shape[:2] + (1,), self.b_std, f.dtype)], axis=-1)
                sizes.append(f.shape[1])
                feats.append(f.reshape(f.shape[0] * f.shape[1], -1))
            n1, n2 = p.k.x1.shape[0], p.k.x2.shape[0]
            k = _mask_pair((feats[0] @ feats[1].T).reshape(n1, sizes[0], 1, n2, sizes[1]), aux1, aux2,
                           plan.in_mode)
            return Pair(k, {"zero": "copy", "none": "none"}[p.ntk], p.offset)
        sh1, sh2 = pair_shapes(p.k, plan, plan.in_mode)  # x's and y's grids (sequences: two lengths)

        def apply(k):
            n1, kk, n2 = k.shape[0], k.shape[2], k.shape[3]
            if full:
                s1, s2 = _size(sh1), _size(sh2)
                o1, o2 = _size(self.out_shape(sh1)), _size(self.out_shape(sh2))
                out = _stencil(k.reshape(n1 * s1, kk * n2 * s2), n1, kk * n2, sh1, self.filter_shape,
                               self.padding, col_shape=sh2)
                return out.reshape(n1, o1, kk, n2, o2)
            out = _stencil(k.reshape(n1 * s, kk * n2), n1, None, plan.in_shape, self.filter_shape, self.padding)
            return out.reshape(n1, so, kk, n2)
        return _linear_pair(p, plan.in_mode, apply, self.W_std, self.b_std, aux1, aux2)
