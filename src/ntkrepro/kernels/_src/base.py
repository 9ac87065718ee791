r"""The states, layouts and base class every layer shares, and the inputs' covariances.

Each layer (in :mod:`.linear`, :mod:`.elementwise`, :mod:`.normalization`, :mod:`.pooling`,
:mod:`.attention`, :mod:`.combinators`; all re-exported by :mod:`.layers`) builds its
neural-tangents ``stax`` layer and implements the same infinite-width kernel recursion over
blocks of input pairs.

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

Sequences (one spatial axis) trimmed per side (:meth:`~.engine.FastKernelFn._trim`) have :math:`X_1`
at :math:`S_1` positions and :math:`X_2` at :math:`S_2`: the full ``Pair.k`` is then
``(n1, S1, K, n2, S2)``, each input's ``Single`` at its own length, and the layers read the two lengths
from the array (:func:`pair_shapes`).

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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

Array = Any
MODES = ("none", "diag", "full")


class Single(NamedTuple):
    """Per-input state: covariance ``cov`` and mask ``mask`` (``(n, S)`` bool, or ``None``)."""

    cov: Array
    mask: Array | None


class Inputs(NamedTuple):
    r"""``Pair.k`` before the first layer, when that layer computes from the inputs themselves instead
    of their covariance :math:`K(x, y)_{st} = x_s\cdot y_t / C_{\rm in}` (a first ``Conv``:
    :meth:`.linear.Conv.takes_inputs`): the mask-zeroed inputs ``x1 (n1, S1, C)``, ``x2 (n2, S2, C)``
    (a sequence's two sides may have two lengths, as for :func:`pair_shapes`)."""

    x1: Array
    x2: Array


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
    from ntkrepro.nt import nt  # here: neural-tangents is optional for the fast kernels (docs/kernels.md)

    return nt.stax


class Info(NamedTuple):
    r"""What the forward check (:meth:`Layer.info`) carries, per branch: spatial shape (``None`` =
    none), channels, and whether the activations are mean-zero Gaussian in the infinite-width limit
    (neural-tangents' ``Kernel.is_gaussian``): the inputs are not; ``Dense``, ``Conv`` and attention
    outputs are; ``Relu`` and ``Flatten`` outputs are not; pools, ``LayerNorm``, ``Identity`` keep
    their input's kind. A layer whose recursion assumes a Gaussian input refuses any other, as
    neural-tangents does (same exception type)."""

    shape: Any
    channels: int
    gaussian: bool


def enum_value(x: Any) -> Any:
    """The value of a neural-tangents enum argument (``stax.Padding.SAME`` -> ``"SAME"``), else ``x``."""
    import enum

    return x.value if isinstance(x, enum.Enum) else x


def _same(a: Any, b: Any) -> bool:
    norm = (lambda v: tuple(v) if isinstance(v, list) else enum_value(v))  # noqa: E731
    return norm(a) == norm(b)


def stax_keywords(**defaults: Any):
    """Class decorator: the layer also accepts neural-tangents' keywords ``defaults`` (name: its
    default in neural-tangents 0.6.5) that this backend does not implement. They are passed on to
    the ``stax`` layer (the ``nt`` backend takes them); the fast backend raises
    ``NotImplementedError`` naming a keyword given a value other than the default
    (:meth:`Layer.check_keywords`). A keyword neural-tangents does not know is a ``TypeError``."""

    def deco(cls):
        init = cls.__init__

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            extra = {k: kwargs.pop(k) for k in list(kwargs) if k in defaults}
            init(self, *args, **kwargs)
            object.__setattr__(self, "_stax_kwargs", extra)

        __init__.__doc__ = init.__doc__
        cls.__init__ = __init__
        cls.STAX_DEFAULTS = dict(defaults)
        return cls
    return deco


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


def pair_shapes(k: Array, plan: "Plan", mode: str) -> tuple[Any, Any]:
    r"""Spatial shapes of the rows (:math:`x`) and the columns (:math:`y`) of ``Pair.k`` in ``mode``, at
    the layer's input. The plan's shape, except for sequences (one spatial axis) in full mode: there
    :math:`x` and :math:`y` may have different lengths (the engine trims each side of a block to its own
    length, :meth:`~.engine.FastKernelFn._trim`), so the full layout is ``(n1, S1, K, n2, S2)`` and the
    lengths are read from the array. Every per-pair recursion is defined on such non-square position
    blocks: a covariance pairs a position of :math:`x` with a position of :math:`y`."""
    if mode == "full" and plan.in_shape and len(plan.in_shape) == 1:
        return (int(k.shape[1]),), (int(k.shape[4]),)
    return plan.in_shape, plan.in_shape


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
    # jnp.diagonal then a transpose of the small result: XLA's gather for einsum("xskys->xsky") ran
    # ~7x slower (0.9-1.3 ms against 0.12-0.15 ms of CPU time at S = 64, 16 x 16 pairs; issue 36)
    return p._replace(k=jnp.transpose(jnp.diagonal(p.k, axis1=1, axis2=4), (0, 3, 1, 2)))


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

def _affine(a: Array, w_std: float, b_std: float | None) -> Array:
    r""":math:`\sigma_w^2 a + \sigma_b^2` (neural-tangents ``_affine``)."""
    a = a * w_std ** 2
    return a if b_std is None else a + b_std ** 2


# --------------------------------------------------------------------------------------------
# the layer base class


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

    #: neural-tangents keywords accepted but not implemented (see :func:`stax_keywords`).
    STAX_DEFAULTS: dict[str, Any] = {}

    def stax_kwargs(self) -> dict[str, Any]:
        """The extra neural-tangents keywords this layer was given (passed on to its ``stax`` layer)."""
        return dict(self.__dict__.get("_stax_kwargs", {}))

    def unsupported(self, keyword: str, value: Any, why: str = "") -> NotImplementedError:
        """The error for a keyword value the fast backend does not implement (names the keyword)."""
        return NotImplementedError(f"fast backend: {type(self).__name__}({keyword}={value!r}) is not implemented"
                                   + (f" ({why})" if why else "") + "; the nt backend takes it")

    def check_keywords(self) -> None:
        """Raise ``NotImplementedError`` naming the first keyword given a value other than
        neural-tangents' default that this backend does not implement."""
        for k, v in self.stax_kwargs().items():
            if not _same(v, self.STAX_DEFAULTS[k]):
                raise self.unsupported(k, v, f"only the default {self.STAX_DEFAULTS[k]!r}")

    def info(self, i: Info) -> Info:
        """Forward check of what this layer receives and gives (:class:`Info`); raises where the
        fast backend (or neural-tangents) refuses the layer on this input. Default: keywords
        checked, the shape by :meth:`out_shape`, channels and kind unchanged."""
        self.check_keywords()
        return Info(self.out_shape(i.shape), i.channels, i.gaussian)

    def require_gaussian(self, i: Info, exc: type[Exception] = ValueError) -> None:
        """Refuse a non-Gaussian input (neural-tangents raises ``ValueError`` before a nonlinearity,
        ``NotImplementedError`` before ``LayerNorm`` / ``FanInSum``)."""
        if not i.gaussian:
            raise exc(f"fast backend (as neural-tangents): the input of {type(self).__name__} must be a mean-zero "
                      "Gaussian, i.e. the output of a Dense, Conv or GlobalSelfAttention layer (or of a pool, "
                      "LayerNorm or Identity of one); its formula is wrong for any other input (raw inputs, "
                      "ReLU or Flatten outputs)")

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

    def fuses_into_previous(self, plan: Plan) -> bool:
        """Whether this leaf's pair update is a cheap map of the state, elementwise in its mode (an affine
        ``Dense`` / 1x1 ``Conv``; a ``FanOut`` taking a diagonal): the engine then runs it inside the
        computation of the leaf before it (:class:`.combinators.Fused`; not when that leaf is cheap too), one
        pass over the pair arrays fewer. Default: no."""
        return False

    def pair_with(self, run: Callable[..., Pair], p: Any, aux1: Any, aux2: Any, plan: Plan) -> Any:
        """The per-pair pass with every *leaf* layer evaluated by ``run(layer, p, aux1, aux2, plan)``
        (the engine jits each leaf separately: XLA fusing across layers made the CPU loops slower)."""
        return run(self, p, aux1, aux2, plan)

    def __repr__(self) -> str:
        items = {**{k: v for k, v in vars(self).items() if not k.startswith("_")}, **self.stax_kwargs()}
        fields = ", ".join(f"{k}={v!r}" for k, v in items.items())
        return f"{type(self).__name__}({fields})"


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
