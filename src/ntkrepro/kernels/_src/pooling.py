r"""Pooling and readout: ``Flatten``, ``GlobalAvgPool``, ``AvgPool`` (neural-tangents
``stax/linear.py``).

.. math::
    \text{Flatten:}\quad K' = \frac1S\sum_s K_{ss};\qquad
    \text{GlobalAvgPool:}\quad K' = \frac{\sum_{s,t} K_{st}}{\max(1, |x|\,|y|)};\qquad
    \text{AvgPool:}\quad K'_{IJ} = \frac{1}{\prod_i w_i^2}\sum_{s\in W_I,\,t\in W_J} K_{st},

with :math:`|x|` the unmasked positions of :math:`x` and :math:`W_I` the (non-overlapping) window
:math:`I`; :math:`\Theta` and :math:`C` alike. ``Flatten`` needs only the diagonal of its input;
the pools need the full covariance. Average pools of a Gaussian field are Gaussian; a flattened
field is not treated as one (neural-tangents marks ``Flatten``'s output non-Gaussian: its entries
are not exchangeable channels), so no nonlinearity may follow it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ntkrepro.kernels._src.base import Array, Info, Layer, Single, enum_value, stax_keywords, _nt_stax, _size, convert_pair, convert_single


@stax_keywords(batch_axis=0, batch_axis_out=0)
@dataclass(frozen=True, repr=False)
class Flatten(Layer):
    r"""``stax.Flatten()``: :math:`K' = \frac1S\sum_s K_{ss}` (``linear.py: Flatten``: the mean of
    the diagonal; needs only the diagonal of its input)."""

    def _build_stax(self):
        stax = _nt_stax()
        return stax.Flatten(**self.stax_kwargs())

    def info(self, i):
        self.check_keywords()
        # neural-tangents marks a flattened field non-Gaussian: no nonlinearity may follow
        return Info(None, i.channels * (_size(i.shape) if i.shape else 1), False)

    def out_shape(self, shape):
        return None

    def need(self, out_mode, in_shape):
        return "diag" if in_shape else out_mode

    def single(self, st, plan):
        if not plan.in_shape:
            return st, None
        return Single(jnp.mean(st.cov, axis=1), None), None

    def pair(self, p, aux1, aux2, plan):
        if not plan.in_shape:
            return p
        return p._replace(k=jnp.mean(p.k, axis=1))


@stax_keywords(batch_axis=0, channel_axis=-1)
@dataclass(frozen=True, repr=False)
class GlobalAvgPool(Layer):
    r"""``stax.GlobalAvgPool()``: :math:`K' = \sum_{s,t} K_{st} / \max(1, |x||y|)` with
    :math:`|x|` the number of unmasked positions (``linear.py: _GlobalPool`` with
    ``mean_and_var(mask=...)``; masked entries are already zero)."""

    def _build_stax(self):
        stax = _nt_stax()
        return stax.GlobalAvgPool(**self.stax_kwargs())

    def out_shape(self, shape):
        return None

    def need(self, out_mode, in_shape):
        return "full"

    def single(self, st, plan):
        n = st.cov.shape[0]
        total = jnp.sum(st.cov.reshape(n, -1), axis=1)
        if st.mask is None:
            u = jnp.full((n,), float(_size(plan.in_shape)), st.cov.dtype)
        else:  # unmasked positions per input (an exact integer in either float type)
            u = jnp.sum(~st.mask, axis=1).astype(st.cov.dtype)
        return Single(total / jnp.maximum(u * u, 1.0), None), u

    def pair(self, p, aux1, aux2, plan):
        size = jnp.maximum(aux1[:, None, None] * aux2[None, None, :], 1.0)
        return p._replace(k=jnp.sum(p.k, axis=(1, 4)) / size)


@stax_keywords(normalize_edges=False, batch_axis=0, channel_axis=-1)
@dataclass(frozen=True, repr=False)
class AvgPool(Layer):
    r"""``stax.AvgPool(window, strides=window, padding='VALID')`` (non-overlapping windows):
    :math:`K'_{IJ} = \frac{1}{\prod_i w_i^2}\sum_{s\in W_I,\,t\in W_J} K_{st}`
    (``linear.py: _pool_kernel``: ``reduce_window`` over both positions)."""

    window_shape: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    padding: str = "VALID"

    def __post_init__(self):
        object.__setattr__(self, "window_shape", tuple(int(k) for k in self.window_shape))
        if self.strides is not None:
            object.__setattr__(self, "strides", tuple(int(k) for k in self.strides))
        object.__setattr__(self, "padding", enum_value(self.padding))

    def _build_stax(self):
        stax = _nt_stax()
        return stax.AvgPool(self.window_shape, strides=self.strides, padding=self.padding, **self.stax_kwargs())

    def out_shape(self, shape):
        strides = self.strides or (1,) * len(self.window_shape)
        if strides != self.window_shape:
            raise self.unsupported("strides", self.strides, "strides == window_shape only")
        if self.padding != "VALID":
            raise self.unsupported("padding", self.padding, "VALID only")
        return tuple(n // w for n, w in zip(shape, self.window_shape))

    def need(self, out_mode, in_shape):
        return "full"

    def _pool(self, a: Array, groups: Sequence[int], shape: Sequence[int]) -> Array:
        r"""Average the flattened-position axes ``groups`` of ``a`` over the windows: unflatten,
        crop to whole windows, sum each window, scale :math:`1/\prod_i w_i` per axis, flatten."""
        w = self.window_shape
        out = tuple(n // k for n, k in zip(shape, w))
        orig = a.shape
        tags: list[tuple[str, int]] = []
        for ax, n in enumerate(orig):
            tags += [("sp", i) for i in range(len(shape))] if ax in groups else [("o", n)]
        a = a.reshape([shape[i] if t == "sp" else i for t, i in tags])
        a = a[tuple(slice(0, out[i] * w[i]) if t == "sp" else slice(None) for t, i in tags)]
        split: list[int] = []
        sum_axes: list[int] = []
        for t, i in tags:
            if t == "sp":
                split += [out[i], w[i]]
                sum_axes.append(len(split) - 1)
            else:
                split.append(i)
        a = jnp.sum(a.reshape(split), axis=tuple(sum_axes)) / float(np.prod(w)) ** len(groups)
        return a.reshape([_size(out) if ax in groups else n for ax, n in enumerate(orig)])

    def single(self, st, plan):
        if st.mask is not None:
            raise NotImplementedError("fast backend: AvgPool with masked inputs")
        cov = self._pool(st.cov, (1, 2), plan.in_shape)
        return convert_single(Single(cov, None), "full", plan.out_mode), None

    def pair(self, p, aux1, aux2, plan):
        return convert_pair(p._replace(k=self._pool(p.k, (1, 4), plan.in_shape)), "full", plan.out_mode)
