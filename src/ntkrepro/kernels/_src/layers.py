r"""Layer descriptions: each builds its neural-tangents ``stax`` layer and implements the same
infinite-width kernel recursion over blocks of input pairs.

Notation: a block of :math:`n_1` inputs :math:`x` against :math:`n_2` inputs :math:`y`, spatial
shape ``sp`` with :math:`S` positions :math:`s, t` (flattened row-major).

* per input, :class:`Single`: the covariance :math:`C(x)_{st}` (``cov``) and the padding mask
  :math:`m(x)_s` (``True`` = masked, or ``None``);
* per pair, :class:`Pair`: NNGP :math:`K(x, y)_{st}` and NTK :math:`\Theta(x, y)_{st}` *stacked* in
  one array ``k`` along a kernel axis of size ``K`` (2 if the NTK is stored, else 1):
  ``k[..., 0, ...]`` = NNGP, ``k[..., 1, ...]`` = NTK. ``ntk`` says what the NTK is: ``"array"``
  (stored), ``"copy"`` (equal to the NNGP, as after the first layer with weights: not stored),
  ``"zero"`` (the inputs' NTK) or ``"none"`` (not requested).

Each is kept in one of three *modes*, chosen by :meth:`Layer.plan` from what later layers need:

=======  ===============================================  ====================
mode     ``Pair.k``                                       ``Single.cov``
=======  ===============================================  ====================
full     ``(n1, S, K, n2, S)``  (:math:`x, s, \cdot, y, t`)  ``(n, S, S)``
diag     ``(n1, S, K, n2)``  (:math:`s = t` only)         ``(n, S)``
none     ``(n1, K, n2)``  (no spatial axes left)          ``(n,)``
=======  ===============================================  ====================

The full layout is the block matrix :math:`[K(x,y)_{st}]` with rows :math:`(x, s)` and columns
:math:`(\cdot, y, t)`: every elementwise pass (ReLU, masks, LayerNorm) runs over a long contiguous
minor axis (XLA's CPU loops do not vectorise over the 8-wide minor axes of an
``(n1, H, W, n2, H, W)`` layout), the conv stencil is a sum of shifted copies of that matrix, and an
attention layer is one GEMM :math:`G(x)\,[K(x,\cdot)\ \Theta(x,\cdot)]` per :math:`x` over both
kernels at once.

``Flatten`` needs only :math:`s = t` of its input (it is :math:`\frac1S\sum_s K_{ss}`), and conv,
ReLU, Dense and LayerNorm map diagonals to diagonals, so a ``Flatten`` readout keeps everything
before it diagonal (as neural-tangents' ``diagonal_spatial``); an attention layer needs its full input
but, feeding ``LayerNorm``/``Flatten``, only the diagonal of its output, which halves its cost
(:class:`GlobalSelfAttention`). ``GlobalAvgPool`` and ``AvgPool`` need full input.

Every recursion is neural-tangents 0.6.5 ``stax`` (file and function named in each docstring)
restricted to the arguments the H4 / H6 models use; anything else raises ``NotImplementedError`` in
the fast backend (the ``stax`` layer is still built).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ntkrepro.kernels._src.elementwise import relu_kernel

Array = Any
MODES = ("none", "diag", "full")
_NEG_INF = -1e20  # neural-tangents' masked-key logit (softmax raises on -inf rows)


class Single(NamedTuple):
    """Per-input state: covariance ``cov`` and mask ``mask`` (``(n, S)`` bool, or ``None``)."""

    cov: Array
    mask: Array | None


class Pair(NamedTuple):
    """Per-pair state: stacked kernels ``k``, NTK status ``ntk`` ("array" | "copy" | "zero" |
    "none") and,
    for a symmetric block :math:`K(X, X)`, ``offset``: pair :math:`(i, j)` of the chunk is the
    same input iff :math:`j = i + \\text{offset}` (else ``None``)."""

    k: Array
    ntk: str
    offset: Array | None = None


def _nt_stax():
    """neural-tangents' ``stax`` (through ``ntkrepro.nt.nt``: ``ntkrepro.nt.stax`` may be pointed at
    this module's layers while a builder runs, see :mod:`.bridge`)."""
    from ntkrepro.nt import nt

    return nt.stax


def max_mode(*modes: str) -> str:
    """The most demanding of ``modes`` (none < diag < full)."""
    return max(modes, key=MODES.index)


@dataclass(frozen=True)
class Plan:
    """Static plan of one layer: spatial shapes (``None`` = no spatial axes) and modes of its input
    and output (tuples of those between ``FanOut`` and ``FanInSum``), and sub-plans."""

    in_shape: Any
    out_shape: Any
    in_mode: Any
    out_mode: Any
    children: tuple["Plan", ...] = ()


def _size(sp: Sequence[int] | None) -> int:
    return int(np.prod(sp)) if sp else 1


# --------------------------------------------------------------------------------------------
# layout helpers


def _n2(k: Array, mode: str) -> int:
    return k.shape[3] if mode != "none" else k.shape[2]


def _pair_var(v1: Array, v2: Array, mode: str) -> tuple[Array, Array]:
    """Per-input quantities ``v1 (n1, S)``, ``v2 (n2, S)`` (``(n,)`` in none mode) broadcast
    against ``Pair.k`` in ``mode``."""
    if mode == "full":
        return v1[:, :, None, None, None], v2[None, None, None, :, :]
    if mode == "diag":
        return v1[:, :, None, None], v2.T[None, :, None, :]
    return v1[:, None, None], v2[None, None, :]


def _single_var(v: Array, mode: str) -> tuple[Array, Array]:
    """``v (n, S)`` broadcast against a Single covariance as rows and as columns."""
    if mode == "full":
        return v[:, :, None], v[:, None, :]
    return v, v


def _diag_of_single(cov: Array, mode: str) -> Array:
    r"""Variances :math:`C(x)_{ss}` of a Single covariance."""
    return jnp.diagonal(cov, axis1=1, axis2=2) if mode == "full" else cov


def convert_single(st: Single, src: str, dst: str) -> Single:
    """Reduce a Single state from mode ``src`` to the (less demanding) mode ``dst``."""
    if src == dst:
        return st
    if (src, dst) != ("full", "diag"):
        raise ValueError(f"cannot convert a {src} covariance to {dst}")
    return st._replace(cov=_diag_of_single(st.cov, "full"))


def convert_pair(p: Pair, src: str, dst: str) -> Pair:
    """Reduce a Pair state from mode ``src`` to ``dst`` (full -> diag: :math:`s = t`)."""
    if src == dst:
        return p
    if (src, dst) != ("full", "diag"):
        raise ValueError(f"cannot convert a {src} kernel to {dst}")
    return p._replace(k=jnp.einsum("xskys->xsky", p.k))


def _mask_pair(k: Array, m1: Array | None, m2: Array | None, mode: str) -> Array:
    """Zero the entries where either position is masked (neural-tangents ``Kernel.mask``)."""
    if m1 is None and m2 is None or mode == "none":
        return k
    b1, b2 = _pair_var(m1, m2, mode)
    return jnp.where(b1 | b2, jnp.zeros((), k.dtype), k)


def _mask_single(cov: Array, m: Array | None, mode: str) -> Array:
    if m is None or mode == "none":
        return cov
    r, c = _single_var(m, mode)
    return jnp.where(r | c, jnp.zeros((), cov.dtype), cov)


def _coincident(p: Pair, mode: str) -> Array | None:
    r"""Entries :math:`(x, s; y, t)` with :math:`y = x + \text{offset}` (same input) and
    :math:`s = t` (broadcastable against the NNGP slice of ``p.k``), where the correlation is 1."""
    if p.offset is None:
        return None
    k = p.k
    n1 = k.shape[0]
    if mode == "full":  # view (n1 S, n2 S): column - row = offset * S exactly on those entries
        s = k.shape[1]
        r = jnp.arange(n1 * s)[:, None]
        c = jnp.arange(_n2(k, mode) * s)[None, :]
        return (c - r == p.offset * s).reshape(n1, s, 1, -1, s)[:, :, 0]
    x = jnp.arange(n1)
    y = jnp.arange(_n2(k, mode))
    same = (y[None, :] - x[:, None]) == p.offset
    return same[:, None, :] if mode == "diag" else same


def _kernel_slices(k: Array) -> list[Array]:
    return [k[:, :, i] if k.ndim >= 4 else k[:, i] for i in range(k.shape[2 if k.ndim >= 4 else 1])]


def _stack(parts: Sequence[Array], mode: str) -> Array:
    return jnp.stack(parts, axis=2 if mode != "none" else 1)


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
        raise NotImplementedError(f"fast backend: padding {padding!r}")
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
             padding: str) -> Array:
    r"""The conv stencil on a covariance (neural-tangents ``_conv_kernel_full_spatial_shared`` /
    ``_conv_kernel_diagonal_spatial``: a diagonal filter of weights :math:`1/k_i` per dimension,
    stride 1): with :math:`a` viewed as a matrix of ``n_rows`` row blocks of :math:`S` positions and
    (if ``n_cols``) ``n_cols`` column blocks,

    .. math:: \mathcal A(a)_{(x,s),(y,t)} = \frac{1}{\prod_i k_i}\sum_{\text{taps}}
        [\,s + d \in \text{grid}\,][\,t + d \in \text{grid}\,]\; a_{(x,s+o),(y,t+o)},

    both positions shifted jointly (only rows when ``n_cols`` is None: the diagonal mode). The
    result is cropped to the output grid (``VALID``). ``a`` is 2-D ``(n_rows S, C)``."""
    taps, out_shape = conv_offsets(shape, filter_shape, padding)
    s = _size(shape)
    r, c = a.shape
    lo = max(0, -min(o for o, _ in taps))
    hi = max(0, max(o for o, _ in taps))
    ap = jnp.pad(a, ((lo, hi), (lo, hi) if n_cols else (0, 0)))
    acc = None
    for o, inside in taps:
        term = ap[lo + o:lo + o + r, (lo + o if n_cols else 0):(lo + o if n_cols else 0) + c]
        if inside is not None:  # zero the taps that read outside the grid (row and column factor)
            term = term * jnp.asarray(np.tile(inside, n_rows), a.dtype)[:, None]
            if n_cols:
                term = term * jnp.asarray(np.tile(inside, n_cols), a.dtype)[None, :]
        acc = term if acc is None else acc + term
    acc = acc / float(np.prod(filter_shape))
    if tuple(out_shape) != tuple(shape):
        crop = tuple(slice(0, m) for m in out_shape)
        so = _size(out_shape)
        acc = acc.reshape((n_rows,) + tuple(shape) + ((c,) if not n_cols else (n_cols,) + tuple(shape)))
        idx = (slice(None),) + crop + ((slice(None),) if not n_cols else (slice(None),) + crop)
        acc = acc[idx].reshape(n_rows * so, c if not n_cols else n_cols * so)
    return acc


def _affine(a: Array, w_std: float, b_std: float | None) -> Array:
    r""":math:`\sigma_w^2 a + \sigma_b^2` (neural-tangents ``_affine``)."""
    a = a * w_std ** 2
    return a if b_std is None else a + b_std ** 2


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


# --------------------------------------------------------------------------------------------
# layers


class Layer:
    """Base class. Subclasses implement :meth:`stax`, :meth:`out_shape`, :meth:`need`,
    :meth:`single` (per-input pass: the new state and the ``aux`` the pair pass needs, an array or
    pytree with a leading input axis) and :meth:`pair` (per-pair pass)."""

    def stax(self):
        """neural-tangents' ``(init_fn, apply_fn, kernel_fn)`` of this layer (the reference; built
        once per layer object)."""
        cached = self.__dict__.get("_stax_triple")
        if cached is None:
            cached = self._build_stax()
            object.__setattr__(self, "_stax_triple", cached)
        return cached

    def _build_stax(self):
        raise NotImplementedError

    # A Layer unpacks and indexes like the stax triple it describes, so code written for
    # ``init_fn, apply_fn, kernel_fn = stax.serial(...)`` or ``model[2]`` keeps working on it.
    def __iter__(self):
        return iter(self.stax())

    def __getitem__(self, i: int):
        return self.stax()[i]

    def __len__(self) -> int:
        return 3

    def out_shape(self, shape: Any) -> Any:
        return shape

    def need(self, out_mode: Any, in_shape: Any) -> Any:
        return out_mode

    def plan(self, in_shape: Any, out_mode: Any) -> Plan:
        return Plan(in_shape, self.out_shape(in_shape), self.need(out_mode, in_shape), out_mode)

    def single(self, st: Single, plan: Plan) -> tuple[Single, Any]:
        raise NotImplementedError

    def pair(self, p: Pair, aux1: Any, aux2: Any, plan: Plan) -> Pair:
        raise NotImplementedError

    def pair_with(self, run: Callable[..., Pair], p: Any, aux1: Any, aux2: Any, plan: Plan) -> Any:
        """The per-pair pass with every *leaf* layer evaluated by ``run(layer, p, aux1, aux2, plan)``
        (the engine jits each leaf separately: XLA fusing across layers made the CPU loops slower)."""
        return run(self, p, aux1, aux2, plan)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


@dataclass(frozen=True, repr=False)
class Identity(Layer):
    """``stax.Identity()``."""

    def _build_stax(self):
        stax = _nt_stax()
        return stax.Identity()

    def single(self, st, plan):
        return st, None

    def pair(self, p, aux1, aux2, plan):
        return p


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
        return stax.Dense(self.out_dim, W_std=self.W_std, b_std=self.b_std)

    def single(self, st, plan):
        cov = _mask_single(_affine(st.cov, self.W_std, self.b_std), st.mask, plan.in_mode)
        return Single(cov, st.mask), st.mask

    def pair(self, p, aux1, aux2, plan):
        return _linear_pair(p, plan.in_mode, lambda a: a, self.W_std, self.b_std, aux1, aux2)


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

    def _build_stax(self):
        stax = _nt_stax()
        return stax.Conv(self.out_chan, self.filter_shape, strides=self.strides, padding=self.padding,
                         W_std=self.W_std, b_std=self.b_std)

    def out_shape(self, shape):
        if shape is None or len(shape) != len(self.filter_shape):
            raise ValueError(f"Conv{self.filter_shape} needs {len(self.filter_shape)} spatial dims, got {shape}")
        if self.strides is not None and any(s != 1 for s in self.strides):
            raise NotImplementedError("fast backend: Conv strides other than 1")
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

    def pair(self, p, aux1, aux2, plan):
        s, so = _size(plan.in_shape), _size(plan.out_shape)
        full = plan.in_mode == "full"

        def apply(k):
            n1, kk, n2 = k.shape[0], k.shape[2], k.shape[3]
            if full:
                out = _stencil(k.reshape(n1 * s, kk * n2 * s), n1, kk * n2, plan.in_shape, self.filter_shape,
                               self.padding)
                return out.reshape(n1, so, kk, n2, so)
            out = _stencil(k.reshape(n1 * s, kk * n2), n1, None, plan.in_shape, self.filter_shape, self.padding)
            return out.reshape(n1, so, kk, n2)
        return _linear_pair(p, plan.in_mode, apply, self.W_std, self.b_std, aux1, aux2)


@dataclass(frozen=True, repr=False)
class Relu(Layer):
    r"""``stax.Relu()``: the arc-cosine map of :mod:`.elementwise` on every entry, with variance
    product :math:`C(x)_{ss} C(y)_{tt}` (``elementwise.py: ABRelu``, :math:`a=0, b=1`):
    :math:`K' = \frac{1}{2\pi}\sqrt{q} + \dot\sigma K`, :math:`\Theta' = \dot\sigma\Theta`. The
    per-input covariance gets the same map with :math:`C(x)_{ss}C(x)_{tt}` (on a diagonal:
    :math:`C/2`)."""

    def _build_stax(self):
        stax = _nt_stax()
        return stax.Relu()

    def single(self, st, plan):
        var = _diag_of_single(st.cov, plan.in_mode)
        if plan.in_mode == "full":
            r, c = _single_var(var, "full")
            cov, _ = relu_kernel(st.cov, r * c)
        else:
            cov = st.cov * 0.5  # (a^2 + b^2)/2 * cov: neural-tangents' nngp_fn_diag
        return Single(cov, st.mask), var

    def pair(self, p, aux1, aux2, plan):
        mode = plan.in_mode
        v1, v2 = _pair_var(aux1, aux2, mode)
        parts = _kernel_slices(p.k)
        prod = v1 * v2
        if mode != "none":  # drop the kernel axis of the broadcast variances
            prod = prod[:, :, 0]
        else:
            prod = prod[:, 0]
        nngp, dot_sigma = relu_kernel(parts[0], prod, _coincident(p, mode))
        if p.ntk in ("array", "copy"):
            ntk = (parts[1] if p.ntk == "array" else parts[0]) * dot_sigma
            return Pair(_stack([nngp, ntk], mode), "array", p.offset)
        return Pair(_stack([nngp], mode), p.ntk, p.offset)


@dataclass(frozen=True, repr=False)
class LayerNorm(Layer):
    r"""``stax.LayerNorm(axis=-1, eps)`` over channels only:
    :math:`K'_{st} = K_{st}/\sqrt{(\epsilon + C(x)_{ss})(\epsilon + C(y)_{tt})}`, same for
    :math:`\Theta` and :math:`C` (``linear.py: LayerNorm``; with ``axis`` = channels the mask does
    not enter)."""

    axis: Any = -1
    eps: float = 1e-12

    def _build_stax(self):
        stax = _nt_stax()
        return stax.LayerNorm(axis=self.axis, eps=self.eps)

    def need(self, out_mode, in_shape):
        if self.axis not in (-1, (-1,)):
            raise NotImplementedError("fast backend: LayerNorm over channels only (axis=-1)")
        return out_mode

    def single(self, st, plan):
        var = _diag_of_single(self.eps + st.cov, plan.in_mode)
        r, c = _single_var(var, plan.in_mode)
        return Single(st.cov / jnp.sqrt(r * c), st.mask), var

    def pair(self, p, aux1, aux2, plan):
        v1, v2 = _pair_var(aux1, aux2, plan.in_mode)
        return p._replace(k=p.k / jnp.sqrt(v1 * v2))


@dataclass(frozen=True, repr=False)
class Flatten(Layer):
    r"""``stax.Flatten()``: :math:`K' = \frac1S\sum_s K_{ss}` (``linear.py: Flatten``: the mean of
    the diagonal; needs only the diagonal of its input)."""

    def _build_stax(self):
        stax = _nt_stax()
        return stax.Flatten()

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


@dataclass(frozen=True, repr=False)
class GlobalAvgPool(Layer):
    r"""``stax.GlobalAvgPool()``: :math:`K' = \sum_{s,t} K_{st} / \max(1, |x||y|)` with
    :math:`|x|` the number of unmasked positions (``linear.py: _GlobalPool`` with
    ``mean_and_var(mask=...)``; masked entries are already zero)."""

    def _build_stax(self):
        stax = _nt_stax()
        return stax.GlobalAvgPool()

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

    def _build_stax(self):
        stax = _nt_stax()
        return stax.AvgPool(self.window_shape, strides=self.strides, padding=self.padding)

    def out_shape(self, shape):
        strides = self.strides or (1,) * len(self.window_shape)
        if strides != self.window_shape or self.padding != "VALID":
            raise NotImplementedError("fast backend: AvgPool with strides == window and VALID padding only")
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

    def _build_stax(self):
        stax = _nt_stax()
        return stax.GlobalSelfAttention(
            self.n_chan_out, self.n_chan_key, self.n_chan_val, self.n_heads, linear_scaling=self.linear_scaling,
            W_key_std=self.W_key_std, W_value_std=self.W_value_std, W_query_std=self.W_query_std,
            W_out_std=self.W_out_std, b_std=self.b_std, attention_mechanism=self.attention_mechanism,
            pos_emb_type=self.pos_emb_type, pos_emb_p_norm=self.pos_emb_p_norm,
            pos_emb_decay_fn=self.pos_emb_decay_fn, n_chan_pos_emb=self.n_chan_pos_emb,
            W_pos_emb_std=self.W_pos_emb_std, val_pos_emb=self.val_pos_emb)

    def need(self, out_mode, in_shape):
        if not self.linear_scaling:
            raise NotImplementedError("fast backend: GlobalSelfAttention needs linear_scaling=True")
        if self.pos_emb_type not in ("NONE", "SUM") or self.val_pos_emb:
            raise NotImplementedError("fast backend: pos_emb_type NONE or SUM with val_pos_emb=False only")
        if self.attention_mechanism not in ("SOFTMAX", "IDENTITY", "ABS", "RELU"):
            raise ValueError(f"unknown attention_mechanism {self.attention_mechanism!r}")
        if not in_shape:
            raise ValueError("GlobalSelfAttention needs spatial inputs")
        return "full"

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
        g = self.weights(st.cov, st.mask, plan.in_shape)
        gc = jnp.einsum("nsu,nut->nst", g, st.cov)
        if plan.out_mode == "full":
            out = jnp.einsum("nst,nvt->nsv", gc, g)
        else:
            out = jnp.sum(gc * g, axis=-1)
        out = _affine(out, self.W_out_std * self.W_value_std, self.b_std)
        return Single(_mask_single(out, st.mask, plan.out_mode), st.mask), (g, st.mask)

    def pair(self, p, aux1, aux2, plan):
        (g1, m1), (g2, m2) = aux1, aux2
        ov2 = (self.W_out_std * self.W_value_std) ** 2
        b2 = 0.0 if self.b_std is None else self.b_std ** 2
        n1, s, kk, n2 = p.k.shape[:4]
        t = jnp.einsum("xsu,xukyt->xskyt", g1, p.k)  # one GEMM per x over both kernels
        if p.ntk == "array":  # linear: weigh [K, Theta + 2K] instead of mixing afterwards
            t = _stack([t[:, :, 0], t[:, :, 1] + 2 * t[:, :, 0]], "full")
        if plan.out_mode == "full":
            # right product per y, batch axis made leading explicitly (XLA's own layout choice for
            # this dot_general transposed ~3x slower on the CPU)
            tt = jnp.transpose(t, (3, 0, 1, 2, 4)).reshape(n2, n1 * s * kk, s)
            y = jnp.einsum("yrt,yvt->yrv", tt, g2).reshape(n2, n1, s, kk, s)
            y = jnp.transpose(y, (1, 2, 3, 0, 4))
        else:  # sum_t T[x,s,k,y,t] G(y)[s,t], as a product with ones: XLA emits one vectorised loop
            y = (t * jnp.transpose(g2, (1, 0, 2))[None, :, None]) @ jnp.ones((s,), t.dtype)
        y = ov2 * y
        if p.ntk in ("copy", "zero"):  # Theta' = ov2 G (c K) G' + 2 K' - b2: c = 1 (copy), 0 (zero)
            y0 = y[:, :, 0]
            y = _stack([y0, (3.0 if p.ntk == "copy" else 2.0) * y0], plan.out_mode)
        if self.b_std is not None:
            y = y + b2
        k = _mask_pair(y, m1, m2, plan.out_mode)
        return Pair(k, "none" if p.ntk == "none" else "array", p.offset)


# --------------------------------------------------------------------------------------------
# combinators


@dataclass(frozen=True, repr=False)
class FanOut(Layer):
    """``stax.FanOut(num)``: ``num`` copies of the state (each in the mode its branch needs)."""

    num: int

    def _build_stax(self):
        stax = _nt_stax()
        return stax.FanOut(self.num)

    def out_shape(self, shape):
        return (shape,) * self.num

    def need(self, out_mode, in_shape):
        return max_mode(*out_mode)

    def single(self, st, plan):
        return tuple(convert_single(st, plan.in_mode, m) for m in plan.out_mode), None

    def pair(self, p, aux1, aux2, plan):
        return tuple(convert_pair(p, plan.in_mode, m) for m in plan.out_mode)


@dataclass(frozen=True, repr=False)
class FanInSum(Layer):
    r"""``stax.FanInSum()``: the sum of the branches' kernels (``branching.py: FanInSum``; the
    branches are jointly Gaussian with independent output weights)."""

    def _build_stax(self):
        stax = _nt_stax()
        return stax.FanInSum()

    def out_shape(self, shape):
        if any(s != shape[0] for s in shape):
            raise ValueError(f"FanInSum of different shapes {shape}")
        return shape[0]

    def need(self, out_mode, in_shape):
        return (out_mode,) * len(in_shape)

    def single(self, sts, plan):
        if any(s.mask is not None for s in sts):
            raise NotImplementedError("fast backend: masking through FanInSum")
        return Single(sum(s.cov for s in sts), None), None

    def pair(self, ps, aux1, aux2, plan):
        states = {p.ntk for p in ps}
        if len(states) == 1 and states != {"array"}:  # none, zero or copy throughout: the same state
            return Pair(sum(p.k for p in ps), ps[0].ntk, ps[0].offset)
        ax = 2 if plan.out_mode != "none" else 1
        ks = [p.k if p.ntk == "array" else
              jnp.concatenate([p.k, p.k if p.ntk == "copy" else jnp.zeros_like(p.k)], axis=ax) for p in ps]
        return Pair(sum(ks), "array", ps[0].offset)


class _Serial(Layer):
    """``stax.serial(*layers)``."""

    def __init__(self, layers: Sequence[Layer]):
        self.layers = tuple(layers)

    def _build_stax(self):
        stax = _nt_stax()
        return stax.serial(*[l.stax() for l in self.layers])

    def plan(self, in_shape, out_mode):
        shapes = [in_shape]
        for l in self.layers:
            shapes.append(l.out_shape(shapes[-1]))
        plans: list[Plan] = []
        mode = out_mode
        for l, sh in zip(reversed(self.layers), reversed(shapes[:-1])):
            pl = l.plan(sh, mode)
            plans.append(pl)
            mode = pl.in_mode
        plans.reverse()
        return Plan(in_shape, shapes[-1], mode, out_mode, tuple(plans))

    def out_shape(self, shape):
        for l in self.layers:
            shape = l.out_shape(shape)
        return shape

    def need(self, out_mode, in_shape):
        return self.plan(in_shape, out_mode).in_mode

    def single(self, st, plan):
        auxs = []
        for l, pl in zip(self.layers, plan.children):
            st, aux = l.single(st, pl)
            auxs.append(aux)
        return st, tuple(auxs)

    def pair(self, p, aux1, aux2, plan):
        return self.pair_with(_direct, p, aux1, aux2, plan)

    def pair_with(self, run, p, aux1, aux2, plan):
        for l, pl, a1, a2 in zip(self.layers, plan.children, aux1, aux2):
            p = l.pair_with(run, p, a1, a2, pl)
        return p

    def __repr__(self):
        return "serial(" + ", ".join(map(repr, self.layers)) + ")"


class _Parallel(Layer):
    """``stax.parallel(*layers)``: layer ``i`` applied to branch ``i``."""

    def __init__(self, layers: Sequence[Layer]):
        self.layers = tuple(layers)

    def _build_stax(self):
        stax = _nt_stax()
        return stax.parallel(*[l.stax() for l in self.layers])

    def out_shape(self, shape):
        return tuple(l.out_shape(s) for l, s in zip(self.layers, shape))

    def plan(self, in_shape, out_mode):
        plans = tuple(l.plan(s, m) for l, s, m in zip(self.layers, in_shape, out_mode))
        return Plan(in_shape, tuple(p.out_shape for p in plans), tuple(p.in_mode for p in plans), out_mode, plans)

    def need(self, out_mode, in_shape):
        return self.plan(in_shape, out_mode).in_mode

    def single(self, sts, plan):
        out = [l.single(s, pl) for l, s, pl in zip(self.layers, sts, plan.children)]
        return tuple(o[0] for o in out), tuple(o[1] for o in out)

    def pair(self, ps, aux1, aux2, plan):
        return self.pair_with(_direct, ps, aux1, aux2, plan)

    def pair_with(self, run, ps, aux1, aux2, plan):
        return tuple(l.pair_with(run, p, a1, a2, pl)
                     for l, p, a1, a2, pl in zip(self.layers, ps, aux1, aux2, plan.children))

    def __repr__(self):
        return "parallel(" + ", ".join(map(repr, self.layers)) + ")"


def _direct(layer: Layer, p: Any, aux1: Any, aux2: Any, plan: Plan) -> Any:
    return layer.pair(p, aux1, aux2, plan)


def serial(*layers: Layer) -> _Serial:
    """Compose layers (``stax.serial``)."""
    return _Serial(layers)


def parallel(*layers: Layer) -> _Parallel:
    """Apply layers to the branches of a ``FanOut`` (``stax.parallel``)."""
    return _Parallel(layers)


# --------------------------------------------------------------------------------------------
# inputs


def fast_inputs(x: Array, mask_constant: float | None) -> tuple[Array, Array | None]:
    """neural-tangents' input masking: entries equal to ``mask_constant`` (NaN: entries that are
    NaN) are zeroed; a position is masked iff all its channels are (every layer's ``mask_fn`` takes
    ``jnp.all`` over channels). Returns ``x`` with spatial axes flattened, ``(n, S, C)``, and the
    mask ``(n, S)``."""
    n, c = x.shape[0], x.shape[-1]
    x = x.reshape(n, -1, c)
    if mask_constant is None:
        return x, None
    elem = jnp.isnan(x) if math.isnan(mask_constant) else x == mask_constant
    return jnp.where(elem, jnp.zeros((), x.dtype), x), jnp.all(elem, axis=-1)


def input_single(x: Array, mode: str, spatial: bool) -> Array:
    r"""Per-input covariance of the (mask-zeroed) inputs ``x (n, S, C)``:
    :math:`C(x)_{st} = x_s\cdot x_t / C_{\rm in}` (``requirements.py: _cov``)."""
    c = x.shape[-1]
    if mode == "full":
        return jnp.einsum("nsc,ntc->nst", x, x) / c
    out = jnp.sum(x * x, axis=-1) / c
    return out if spatial else out[:, 0]


def input_pair(x1: Array, x2: Array, mode: str, spatial: bool) -> Array:
    r""":math:`K(x, y)_{st} = x_s\cdot y_t / C_{\rm in}` as ``Pair.k`` (one kernel) in ``mode``."""
    c = x1.shape[-1]
    if mode == "full":
        return (jnp.einsum("xsc,ytc->xsyt", x1, x2) / c)[:, :, None]
    if mode == "diag":
        return (jnp.einsum("xsc,ysc->xsy", x1, x2) / c)[:, :, None]
    if spatial:
        raise ValueError("inputs with spatial axes need a full or diag first layer")
    return (x1[:, 0] @ x2[:, 0].T / c)[:, None]


#: The ``stax`` names this module provides (same constructors, same arguments).
STAX_NAMES = frozenset({"AvgPool", "Conv", "Dense", "FanInSum", "FanOut", "Flatten", "GlobalAvgPool",
                        "GlobalSelfAttention", "Identity", "LayerNorm", "Relu", "parallel", "serial"})
