r"""The fast ``kernel_fn``: plan, per-input pass, per-pair pass in row chunks.

For a block :math:`X_1 \times X_2`:

1. **plan** (once per input shape): forward spatial shapes, backward modes (full / diag / none,
   :mod:`.layers`) from the readout (``none``) to the inputs;
2. **per-input pass** (jitted, once for :math:`X_1` and once for :math:`X_2`): input masking,
   :math:`C(x)` through every layer, and each layer's ``aux`` (variances for ReLU / LayerNorm,
   attention weights :math:`G(x)`, masks, unmasked counts) -- :math:`O(n S^3)` per attention layer;
3. **per-pair pass** (jitted): :math:`K(x,y), \Theta(x,y)` through every layer for a chunk of
   ``rows`` inputs of :math:`X_1` against all of :math:`X_2`. ``rows`` is chosen so that the chunk's
   pair arrays stay under ``memory_budget`` bytes (see :func:`pair_bytes`); the last chunk is padded
   to the same size, so each input shape compiles once.

With ``mask_constant``, masked sequences are first trimmed (:meth:`FastKernelFn._trim`): each side of
the block to the length its own inputs need, so that the per-input passes run at :math:`S_1` and
:math:`S_2` and the per-pair arrays are :math:`S_1\times S_2` (issue 36 item 2; one compilation per
pair of length buckets).

The result is what ``stax`` ``kernel_fn(x1, x2, get, mask_constant=...)`` returns: an array for a
single ``get`` string, else a namedtuple with fields ``get``.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ntkrepro.kernels._src import layers as L
from ntkrepro.kernels._src.base import Info, Inputs, convert_pair
from ntkrepro.kernels._src.combinators import FanOut
from ntkrepro.kernels._src.layers import (FanInSum, Identity, Layer, Pair, Plan, Single, fast_inputs, input_pair,
                                          input_single)
from ntkrepro.kernels.allocator import freed_memory_kept
from ntkrepro.kernels.numerics import MATMUL_PRECISION, matmul_precision

BACKENDS = ("nt", "fast")
#: Bytes per chunk of pairs on accelerators.
DEFAULT_MEMORY_BUDGET = 512 * 2 ** 20
#: Bytes per chunk of pairs on the CPU: arrays above glibc's mmap threshold (32 MiB) are mapped
#: fresh on every allocation, and the page faults cost as much system time as the computation's
#: user time (H4 default, 50 x 50 blocks at S = 64: 1.5 s user + 1.3 s system at 512 MiB,
#: 1.8 s + 0.1 s at 32 MiB, 2.8 s + 0.04 s at 8 MiB). With
#: :func:`ntkrepro.kernels.allocator.keep_freed_memory` (no mmap at all) larger chunks pay off: one H4
#: Struct block of 250 x 250 images, CPU user + system s: 9.9 + 0.34 at 32 MiB, 7.8 + 0.22 at 64,
#: 6.8 + 0.24 at 128, 6.6 + 0.34 at 256 (9.1 + 3.1 at 32 MiB without it; 2026-12-06, shared CPU).
CPU_MEMORY_BUDGET = 32 * 2 ** 20
#: Bytes per chunk of pairs on the CPU once :func:`~ntkrepro.kernels.allocator.keep_freed_memory` has run in
#: the process (every compute rule, the decisive fill and the benchmarks call it first): no page faults, so
#: chunks of a few MiB of rows no longer pay off. 64 x 64 CIFAR blocks at S = 64 (chunks of 4 / 8 / 16 rows),
#: 7 interleaved repeats, wall median ms at 32 / 64 / 128 MiB: Struct 110 / 98 / 86, Vanilla 102 / 91 / 81,
#: Residual 110 / 101 / 92 (2026-12-07, 2 cores, other work paused); 256 MiB and above were 2x slower
#: (the chunk's arrays no longer fit the 32 MiB L3 cache in a few pieces).
CPU_MEMORY_BUDGET_KEPT = 128 * 2 ** 20
#: Inputs with at least this many positions run one XLA computation per layer (see ``pair``).
SPLIT_MIN_POSITIONS = 32


def default_memory_budget() -> int:
    """Bytes per chunk of pairs when ``memory_budget`` is not given: :data:`DEFAULT_MEMORY_BUDGET` on
    accelerators; on the CPU :data:`CPU_MEMORY_BUDGET_KEPT` in a process where
    :func:`~ntkrepro.kernels.allocator.keep_freed_memory` has run, else :data:`CPU_MEMORY_BUDGET`."""
    import jax

    if jax.default_backend() != "cpu":
        return DEFAULT_MEMORY_BUDGET
    return CPU_MEMORY_BUDGET_KEPT if freed_memory_kept() else CPU_MEMORY_BUDGET


def iter_leaves(model: Layer, plan: Plan):
    """``(leaf layer, its plan)`` in execution order (through ``serial`` / ``parallel``)."""
    layers = getattr(model, "layers", None)
    if layers is None:
        yield model, plan
        return
    for layer, pl in zip(layers, plan.children):
        yield from iter_leaves(layer, pl)


def _leaf_plans(plan: Plan) -> list[Plan]:
    if not plan.children:
        return [plan]
    return [q for c in plan.children for q in _leaf_plans(c)]


def _spatial_sizes(shape: Any) -> list[int]:
    """Sizes of the spatial shapes in a (possibly nested, for branches) shape description."""
    if shape is None:
        return [1]
    if shape and isinstance(shape[0], (tuple, type(None))):
        return [s for sh in shape for s in _spatial_sizes(sh)]
    return [int(np.prod(shape)) if shape else 1]


def _modes(mode: Any) -> list[str]:
    return [mode] if isinstance(mode, str) else [m for x in mode for m in _modes(x)]


def pair_bytes(plan: Plan, itemsize: int, compute_ntk: bool, plan2: Plan | None = None) -> int:
    r"""Estimated peak bytes per input pair of the per-pair pass: the largest per-pair array
    (:math:`S^2` entries in full mode, :math:`S` in diag mode) times ``itemsize`` times 4 live
    arrays per kernel (input, output, the attention product :math:`G(x)K`, a stencil/ReLU
    temporary), for NNGP and, if requested, NTK. ``plan2``: the plan of :math:`X_2`'s inputs when
    they have another length than :math:`X_1`'s (sequences trimmed per side): :math:`S_1 S_2`
    entries per full array."""
    largest = 1
    plans2 = _leaf_plans(plan if plan2 is None else plan2)
    for leaf, leaf2 in zip(_leaf_plans(plan), plans2):
        for (shape, mode), (shape2, _) in zip(((leaf.in_shape, leaf.in_mode), (leaf.out_shape, leaf.out_mode)),
                                              ((leaf2.in_shape, leaf2.in_mode), (leaf2.out_shape, leaf2.out_mode))):
            for s, s2, m in zip(_spatial_sizes(shape), _spatial_sizes(shape2), _modes(mode)):
                largest = max(largest, s * s2 if m == "full" else max(s, s2))
        if "full" in _modes(leaf.in_mode):  # attention's G(x)K is full even for a diag output
            largest = max(largest, max(_spatial_sizes(leaf.in_shape)) * max(_spatial_sizes(leaf2.in_shape)))
    return largest * itemsize * 4 * (2 if compute_ntk else 1)


#: Trimmed sequence lengths are multiples of this (see :meth:`FastKernelFn._trim`).
TRIM_QUANTUM = 32


def trailing_margin(model: Layer, plan: Plan) -> int | None:
    r"""Masked positions a sequence needs after its last real token for its kernel not to depend on
    more padding: :math:`\sum k - 1 - \lfloor (k-1)/2\rfloor` over ``VALID`` convolutions (an output
    is masked iff its window centre is, and reads :math:`k - 1 - \lfloor (k-1)/2\rfloor` positions
    past it), 0 for ``SAME``. ``None`` if a layer depends on the array length itself (``Flatten``
    divides by all positions, masked or not; ``AvgPool``) or is not a layer listed here."""
    margin = 0
    for leaf, _ in iter_leaves(model, plan):
        if isinstance(leaf, L.Conv):
            if leaf.padding == "VALID":
                margin += sum(k - 1 - (k - 1) // 2 for k in leaf.filter_shape)
        elif not isinstance(leaf, (L.Relu, L.Dense, L.GlobalSelfAttention, L.GlobalAvgPool, L.LayerNorm,
                                   L.Identity)):
            return None
    return margin


def trims_per_side(model: Layer, plan: Plan) -> bool:
    r"""Whether a block :math:`K(X_1, X_2)` of this (trimmable, :func:`trailing_margin`) model may have
    :math:`X_1` and :math:`X_2` at two different lengths: every per-pair recursion of its layers takes
    non-square position blocks (:func:`.base.pair_shapes`), except the Monte Carlo attention
    (``linear_scaling=False``), whose draws are drawn for one length of both inputs."""
    return trailing_margin(model, plan) is not None and not any(
        isinstance(leaf, L.GlobalSelfAttention) and not leaf.linear_scaling for leaf, _ in iter_leaves(model, plan))


def _real_extent(x: Any, mask_constant: float) -> int:
    """1 + the last position that is not masked in some input of ``x (n, L, C)`` (0 if none)."""
    a = np.asarray(x)
    masked = np.all(np.isnan(a) if np.isnan(mask_constant) else a == mask_constant, axis=-1)
    real = np.nonzero(~masked.all(axis=0))[0]
    return int(real[-1]) + 1 if real.size else 0


def output_modes(out_shape: Any) -> Any:
    """The readout modes (``"none"``) of a model's output shape: ``"none"`` for one output without
    spatial axes, a nested tuple of them for a model that ends in branches (``FanOut`` then
    ``parallel`` without ``FanInSum``: several readouts sharing the layers before the fan-out).
    A readout that keeps spatial axes is refused."""
    if out_shape is None:
        return "none"
    if isinstance(out_shape, tuple) and out_shape and all(s is None or isinstance(s, tuple) for s in out_shape):
        return tuple(output_modes(s) for s in out_shape)
    raise ValueError("the fast backend needs a model that ends without spatial axes "
                     f"(Flatten / GlobalAvgPool readout), got output shape {out_shape}")


def output_pairs(out: Any) -> list[Pair]:
    """The per-pair states of a model's outputs, flattened depth first (one for a single readout)."""
    if isinstance(out, Pair):
        return [out]
    return [q for o in out for q in output_pairs(o)]


def plan_outputs(plan: Plan) -> int:
    """How many outputs a model with this plan has (1 unless it ends in branches)."""
    return len(_modes(plan.out_mode))


def takes_inputs(model: Layer, plan: Plan, channels: int) -> bool:
    """Whether the model's first leaf computes its pair update from the inputs themselves
    (``Pair.k`` an :class:`~.base.Inputs`, e.g. a first ``Conv`` as one GEMM of patches,
    :meth:`.linear.Conv.takes_inputs`) instead of from their covariance."""
    leaf, pl = next(iter_leaves(model, plan))
    return bool(getattr(leaf, "takes_inputs", lambda *a: False)(pl, channels))


def _pairs_of(k: Any) -> int:
    """Input pairs of a ``Pair.k`` (an array in any mode, or :class:`~.base.Inputs`)."""
    if isinstance(k, Inputs):
        return int(k.x1.shape[0] * k.x2.shape[0])
    return int(k.shape[0] * k.shape[3 if k.ndim >= 4 else 2])


def _label(leaf: Layer) -> str:
    """A leaf's name in :meth:`FastKernelFn.profile_layers` (a :class:`~.combinators.Fused` run: its members' names
    joined by ``+``, e.g. ``Relu+Conv+FanOut``)."""
    members = getattr(leaf, "members", None)
    return "+".join(type(m).__name__ for m in members) if members is not None else type(leaf).__name__


def _runs_eagerly(leaf: Layer, plan: Plan) -> bool:
    """Layers whose pair update is no computation (``Identity``; ``FanOut`` handing each branch
    the state in its own mode; ``FanInSum`` of two arrays is one addition): run without a compiled
    copy of the arrays. A ``FanOut`` that extracts a diagonal for a branch (full -> diag, the
    Residual family's identity branch) is compiled: run eagerly, its gather dispatched op by op
    cost about 10 % of the Residual kernel at S = 64."""
    if isinstance(leaf, FanOut):
        return all(m == plan.in_mode for m in _modes(plan.out_mode))
    return isinstance(leaf, (FanInSum, Identity))


@functools.lru_cache(maxsize=None)
def _take_rows(rows: int) -> Callable[[Any, Any], Any]:
    r"""``take(tree, start)``: rows ``start .. start + rows - 1`` of every array in ``tree`` (the last row
    repeated past the end: the last chunk is padded to ``rows``), as one jitted gather. Indexing each array
    eagerly cost ~1 ms per array and chunk on the CPU (Residual at S = 64: 4 arrays, ~4 ms against a
    ~13 ms chunk of 256 pairs)."""
    import jax
    import jax.numpy as jnp

    def take(tree, start):
        def one(a):
            return a[jnp.minimum(start + jnp.arange(rows), a.shape[0] - 1)]
        return jax.tree_util.tree_map(one, tree)
    return jax.jit(take)


class FastKernelFn:
    r"""``kernel_fn(x1, x2=None, get=("nngp", "ntk"), mask_constant=None)`` of a
    :class:`~.layers.Layer` model, computed by the recursions of :mod:`.layers` (see module
    docstring). ``memory_budget``: bytes per chunk of pairs (default :func:`default_memory_budget`:
    :data:`CPU_MEMORY_BUDGET` on the CPU, :data:`CPU_MEMORY_BUDGET_KEPT` there once
    :func:`~ntkrepro.kernels.allocator.keep_freed_memory` has run, :data:`DEFAULT_MEMORY_BUDGET` elsewhere);
    ``rows``: fix the chunk height instead;
    ``trim``: drop all-masked sequence tails (exact, :meth:`_trim`); ``False`` computes the whole
    array, as a padding-invariance check of the masking itself needs. ``precision``: every matrix
    product runs under ``jax.default_matmul_precision(precision)``
    (:data:`ntkrepro.kernels.numerics.MATMUL_PRECISION`, ``"highest"``: no TF32 on GPUs).
    """

    def __init__(self, model: Layer, *, memory_budget: int | None = None, rows: int | None = None,
                 split_layers: bool | None = None, trim: bool = True, precision: str | None = None):
        self.precision = MATMUL_PRECISION if precision is None else str(precision)
        if memory_budget is None:
            memory_budget = default_memory_budget()
        self.model = model
        self.trim = bool(trim)
        self.memory_budget = int(memory_budget)
        self.rows = rows
        self.split_layers = split_layers
        self._cache: dict[tuple, tuple[Plan, Callable, Callable]] = {}
        self._leaf_cache: dict[tuple, tuple[Callable, dict]] = {}

    # -- compilation ---------------------------------------------------------------------------
    def _compiled(self, in_shape: tuple[int, ...], mask_constant: float | None, compute_ntk: bool):
        key = (in_shape, None if mask_constant is None else float(mask_constant), compute_ntk)
        if key in self._cache:
            return self._cache[key]
        import jax
        import jax.numpy as jnp

        spatial = tuple(in_shape[:-1])
        # what each layer receives (shape, channels, Gaussian or not): refuse what neural-tangents refuses
        self.model.info(Info(spatial or None, int(in_shape[-1]), False))
        plan = self.model.plan(spatial or None, output_modes(self.model.out_shape(spatial or None)))
        first = plan.in_mode
        model = self.model

        spatial_in = bool(spatial)
        ntk0 = "zero" if compute_ntk else "none"

        def single(x):
            x, mask = fast_inputs(x, mask_constant)
            cov = input_single(x, first, spatial_in)
            _, aux = model.single(Single(cov, mask), plan)
            return x, aux

        def finish_one(out: Pair):
            nngp = out.k[:, 0]
            if not compute_ntk:
                return nngp, None
            return nngp, {"array": lambda: out.k[:, 1], "copy": lambda: nngp,
                          "zero": lambda: jnp.zeros_like(nngp)}[out.ntk]()

        def finish(out: Any) -> tuple:
            """``((nngp, ntk), ...)``, one per model output (branches in order, depth first)."""
            return tuple(finish_one(o) for o in output_pairs(out))

        if self._splits(in_shape, plan):
            # one XLA computation per layer: XLA's fusion across layers (stencil into ReLU into the
            # attention operand) produced loops several times slower than the layers run separately
            first_pair = jax.jit(lambda x1, x2: input_pair(x1, x2, first, spatial_in))
            finishers: dict[tuple, Callable] = {}
            lazy = takes_inputs(model, plan, int(in_shape[-1]))

            def pair(x1, x2, aux1, aux2, offset):
                p0 = Pair(Inputs(x1, x2) if lazy else first_pair(x1, x2), ntk0, offset)
                outs = output_pairs(model.pair_with(self._run_leaf, p0, aux1, aux2, plan))
                # the (nngp, ntk) slices of every output as one compiled computation (not op by op)
                states = tuple(o.ntk for o in outs)
                if states not in finishers:
                    finishers[states] = jax.jit(lambda ks, _s=states: finish([Pair(k, n) for k, n in zip(ks, _s)]))
                return finishers[states](tuple(o.k for o in outs))
        else:  # small arrays (or diagonal-only models): one computation, one compile
            pair = jax.jit(lambda x1, x2, aux1, aux2, offset: finish(
                model.pair(Pair(input_pair(x1, x2, first, spatial_in), ntk0, offset), aux1, aux2, plan)))

        entry = (plan, jax.jit(single), pair)
        self._cache[key] = entry
        return entry

    def _splits(self, in_shape: Sequence[int], plan: Plan | None = None) -> bool:
        """Whether inputs of shape ``(n, *in_shape)`` run one XLA computation per leaf layer:
        ``split_layers`` if set, else for full spatial covariances of at least
        :data:`SPLIT_MIN_POSITIONS` positions (per-layer computations pay off for large per-pair
        arrays only)."""
        if self.split_layers is not None:
            return bool(self.split_layers)
        spatial = tuple(in_shape[:-1])
        if plan is None:
            plan = self.plan(tuple(in_shape))
        full = "full" in {m for leaf in _leaf_plans(plan) for m in _modes(leaf.in_mode) + _modes(leaf.out_mode)}
        return full and max(_spatial_sizes(spatial) or [1]) >= SPLIT_MIN_POSITIONS

    def _run_leaf(self, leaf: Layer, p: Any, aux1: Any, aux2: Any, plan: Plan) -> Any:
        """Evaluate one leaf layer's pair update as its own jitted XLA computation (cached per
        layer, plan and NTK status); ``p`` is a :class:`Pair` or a tuple of them (branches)."""
        import jax

        if _runs_eagerly(leaf, plan):  # copies / a sum: no computation to compile
            return leaf.pair(p, aux1, aux2, plan)
        if isinstance(leaf, FanOut):  # branches in other modes: one compiled reduction per mode, no copies
            return tuple(p if m == plan.in_mode else self._convert(p, plan.in_mode, m) for m in plan.out_mode)
        is_tuple = not isinstance(p, Pair)
        ins = list(p) if is_tuple else [p]
        ntks = tuple(q.ntk for q in ins)
        offset = ins[0].offset
        key = (id(leaf), plan, ntks, offset is None)
        if key not in self._leaf_cache:
            meta: dict[str, Any] = {}

            def step(ks, a1, a2, off):
                qs = [Pair(k, n, off) for k, n in zip(ks, ntks)]
                out = leaf.pair(tuple(qs) if is_tuple else qs[0], a1, a2, plan)
                outs = (out,) if isinstance(out, Pair) else tuple(out)
                meta["ntk"] = tuple(o.ntk for o in outs)
                meta["tuple"] = not isinstance(out, Pair)
                return tuple(o.k for o in outs)
            self._leaf_cache[key] = (jax.jit(step), meta)
        fn, meta = self._leaf_cache[key]
        ks = fn(tuple(q.k for q in ins), aux1, aux2, offset)
        outs = [Pair(k, n, offset) for k, n in zip(ks, meta["ntk"])]
        return tuple(outs) if meta["tuple"] else outs[0]

    def _convert(self, p: Pair, src: str, dst: str) -> Pair:
        """``convert_pair(p, src, dst)`` as one cached compiled computation (a ``FanOut`` branch that
        needs less than the shared state, e.g. the diagonal for a Flatten readout)."""
        import jax

        key = ("convert", src, dst)
        if key not in self._leaf_cache:
            self._leaf_cache[key] = (jax.jit(lambda k: convert_pair(Pair(k, "array", None), src, dst).k), {})
        return p._replace(k=self._leaf_cache[key][0](p.k))

    def profile_layers(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`_profile_layers` under this kernel's matmul precision."""
        with matmul_precision(self.precision):
            return self._profile_layers(*args, **kwargs)

    def _profile_layers(self, x1: Any, x2: Any | None = None, get: Sequence[str] = ("nngp", "ntk"),
                        mask_constant: float | None = None, repeats: int = 3) -> list[dict[str, Any]]:
        """Time every leaf layer's pair update on the first row chunk of this block (each leaf on
        its recorded input): ``[{"layer", "in_mode", "out_mode", "pairs", "wall_s", "cpu_s",
        "memory_bytes"}]`` with the best of ``repeats`` and XLA's buffer sizes (arguments + outputs +
        temporaries) of the leaf's computation."""
        import time

        import jax

        if not self._splits(np.shape(x1)[1:]):
            # this model runs as one computation at this size: profile its per-layer form
            clone = FastKernelFn(self.model, memory_budget=self.memory_budget, rows=self.rows, split_layers=True,
                                 trim=self.trim)
            return clone.profile_layers(x1, x2, get, mask_constant, repeats)
        recorded: list[tuple] = []
        run = self._run_leaf

        def recording(leaf, p, a1, a2, plan):
            out = run(leaf, p, a1, a2, plan)
            recorded.append((leaf, p, a1, a2, plan))
            return out

        self._run_leaf = recording  # type: ignore[method-assign]
        try:
            budget, self.rows = self.rows, self.rows or self.rows_for(
                np.shape(x1)[0], np.shape(x1 if x2 is None else x2)[0], np.shape(x1)[1:],
                np.dtype(getattr(x1, "dtype", np.float32)).itemsize, "ntk" in get)
            n1 = np.shape(x1)[0]
            first = x1[: self.rows] if self.rows < n1 else x1
            jax.block_until_ready(tuple(self(first, x1 if x2 is None and self.rows < n1 else x2, tuple(get),
                                             mask_constant=mask_constant)))
        finally:
            self._run_leaf = run  # type: ignore[method-assign]
            self.rows = budget
        rows = []
        for leaf, p, a1, a2, plan in recorded:
            ins = [p] if isinstance(p, Pair) else list(p)
            entry = self._leaf_cache.get((id(leaf), plan, tuple(q.ntk for q in ins), ins[0].offset is None))
            if entry is not None:
                fn = entry[0]
                args = (tuple(q.k for q in ins), a1, a2, ins[0].offset)
            else:  # layers run eagerly (FanOut, FanInSum, Identity)
                def fn(_l=leaf, _p=p, _a1=a1, _a2=a2, _pl=plan):
                    out = _l.pair(_p, _a1, _a2, _pl)
                    return [q.k for q in ((out,) if isinstance(out, Pair) else out)]
                args = ()
            jax.block_until_ready(fn(*args))
            wall, cpu = [], []
            for _ in range(repeats):
                t0, c0 = time.perf_counter(), time.process_time()
                jax.block_until_ready(fn(*args))
                wall.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            mem = fn.lower(*args).compile().memory_analysis() if entry is not None else None
            rows.append({"layer": _label(leaf), "in_mode": plan.in_mode, "out_mode": plan.out_mode,
                         "pairs": _pairs_of(ins[0].k),
                         "wall_s": min(wall), "cpu_s": min(cpu),
                         "memory_bytes": int(mem.argument_size_in_bytes + mem.output_size_in_bytes
                                             + mem.temp_size_in_bytes) if mem is not None else None})
        return rows

    def _trim(self, x1: Any, x2: Any | None, mask_constant: float) -> tuple[Any, Any | None]:
        r"""Drop trailing positions that are masked in every input of a side of the block, keeping
        the margin the model needs (:func:`trailing_margin`), rounded up to a multiple of
        :data:`TRIM_QUANTUM` (one compilation per length bucket). **Each side at its own length**
        (:math:`X_1` at :math:`S_1`, :math:`X_2` at :math:`S_2`, the per-pair arrays
        :math:`S_1\times S_2`) where every layer's pair recursion takes non-square position blocks
        (:func:`trims_per_side`), else both at the longer one. Exact: the kernel of a pair is
        invariant to appending masked positions to either input beyond that margin (neural-tangents'
        masking; tested). Only for inputs with one spatial axis and models of the layers listed in
        :func:`trailing_margin`."""
        if x1.ndim != 3:
            return x1, x2
        plan = self.plan(tuple(x1.shape[1:]))
        margin = trailing_margin(self.model, plan)
        if margin is None:
            return x1, x2

        def length(extent: int) -> int:
            return min(x1.shape[1], -(-max(extent + margin, 1) // TRIM_QUANTUM) * TRIM_QUANTUM)

        e1 = _real_extent(x1, mask_constant)
        if x2 is None:
            l1 = length(e1)
            return (x1 if l1 >= x1.shape[1] else x1[:, :l1]), None
        e2 = _real_extent(x2, mask_constant)
        if trims_per_side(self.model, plan):
            l1, l2 = length(e1), length(e2)
        else:
            l1 = l2 = length(max(e1, e2))
        return (x1 if l1 >= x1.shape[1] else x1[:, :l1]), (x2 if l2 >= x2.shape[1] else x2[:, :l2])

    def plan(self, in_shape: Sequence[int]) -> Plan:
        """The static plan (modes and shapes per layer) for inputs of shape ``(n, *in_shape)``."""
        return self._compiled(tuple(in_shape), None, True)[0]

    def rows_for(self, n1: int, n2: int, in_shape: Sequence[int], itemsize: int, compute_ntk: bool,
                 in_shape2: Sequence[int] | None = None) -> int:
        """Chunk height: ``rows`` if set, else the most rows whose pairs fit ``memory_budget``
        (``in_shape2``: :math:`X_2`'s input shape where it differs, sequences trimmed per side)."""
        if self.rows:
            return max(1, min(int(self.rows), n1))
        plan2 = None if in_shape2 is None or tuple(in_shape2) == tuple(in_shape) else self.plan(in_shape2)
        per = pair_bytes(self.plan(in_shape), itemsize, compute_ntk, plan2)
        return int(max(1, min(n1, self.memory_budget // max(1, n2 * per))))

    # -- call ------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any):
        """:meth:`_call` under ``jax.default_matmul_precision(self.precision)`` (traced into every
        computation it compiles, and part of JAX's compilation cache key)."""
        with matmul_precision(self.precision):
            return self._call(*args, **kwargs)

    def _call(self, x1: Any, x2: Any | None = None, get: str | Sequence[str] | None = ("nngp", "ntk"),
              mask_constant: float | None = None, **unused: Any):
        import jax.numpy as jnp

        single_get = isinstance(get, str)
        names = (get,) if single_get else tuple(get if get is not None else ("nngp", "ntk"))
        bad = [g for g in names if g not in ("nngp", "ntk")]
        if bad:
            raise ValueError(f"fast backend computes nngp and ntk only, got get={names}")
        compute_ntk = "ntk" in names
        x1 = jnp.asarray(x1)
        sym = x2 is None
        x2 = x1 if sym else jnp.asarray(x2)
        if x1.shape[1:] != x2.shape[1:]:
            raise ValueError(f"x1 and x2 must share trailing shape, got {x1.shape} and {x2.shape}")
        if x1.shape[0] == 0 or x2.shape[0] == 0:
            # an empty batch: an empty kernel, as neural-tangents returns (its trailing shape from a
            # one-input probe), not a ZeroDivisionError from a reshape of zero rows
            probe = self._call(jnp.zeros((1, *x1.shape[1:]), x1.dtype), None, get=names)
            probe = tuple(probe)
            out = [jnp.zeros((x1.shape[0], x2.shape[0], *p.shape[2:]), p.dtype) for p in probe]
            return out[0] if single_get else collections.namedtuple("Kernel", names)(*out)
        if mask_constant is not None and self.trim:
            x1, x2 = self._trim(x1, None if sym else x2, mask_constant)
            x2 = x1 if sym else x2
        plan, single, pair = self._compiled(tuple(x1.shape[1:]), mask_constant, compute_ntk)
        xm1, aux1 = single(x1)
        if sym:
            xm2, aux2 = xm1, aux1
        else:  # X2 trimmed to its own length: its per-input pass at that length (the pair pass reads both)
            single2 = single if x2.shape[1:] == x1.shape[1:] else \
                self._compiled(tuple(x2.shape[1:]), mask_constant, compute_ntk)[1]
            xm2, aux2 = single2(x2)
        n1, n2 = x1.shape[0], x2.shape[0]
        rows = self.rows_for(n1, n2, x1.shape[1:], x1.dtype.itemsize, compute_ntk, x2.shape[1:])
        chunks: list[tuple] = []  # per chunk: ((nngp, ntk) per output)
        for start in range(0, n1, rows):
            offset = jnp.asarray(start, jnp.int32) if sym else None
            if rows < n1:  # the chunk's rows of X1's per-input state, one compiled gather
                xc, auxc = _take_rows(rows)((xm1, aux1), jnp.asarray(start, jnp.int32))
            else:
                xc, auxc = xm1, aux1
            outs = pair(xc, xm2, auxc, aux2, offset)
            valid = min(rows, n1 - start)
            cut = (lambda a: a) if valid == rows else (lambda a: a[:valid])  # noqa: E731
            chunks.append(tuple((cut(k), None if t is None else cut(t)) for k, t in outs))
        kernel = collections.namedtuple("Kernel", names)
        results = []
        for o in range(len(chunks[0])):
            ks = [c[o][0] for c in chunks]
            nngp = ks[0] if len(ks) == 1 else jnp.concatenate(ks)
            ntk = None
            if compute_ntk:
                ts = [c[o][1] for c in chunks]
                ntk = ts[0] if len(ts) == 1 else jnp.concatenate(ts)
            res = {"nngp": nngp, "ntk": ntk}
            results.append(res[names[0]] if single_get else kernel(*(res[g] for g in names)))
        return results if plan_outputs(plan) > 1 else results[0]


def nt_kernel_fn(model: Layer) -> Callable[..., Any]:
    """The reference: neural-tangents' ``kernel_fn`` of ``model.stax()``, jitted, with the same
    call signature as :class:`FastKernelFn`."""
    import jax

    kfn = model.stax()[2]
    jk = jax.jit(kfn, static_argnames=("get", "mask_constant"))

    def call(x1, x2=None, get=("nngp", "ntk"), mask_constant=None, **kwargs):
        get = get if isinstance(get, str) or get is None else tuple(get)
        return jk(x1, x2, get=get, mask_constant=mask_constant, **kwargs)

    return call


def kernel_fn(model: Layer, backend: str = "fast", **options: Any) -> Callable[..., Any]:
    """``kernel_fn(x1, x2=None, get=("nngp", "ntk"), mask_constant=None)`` of ``model`` computed by
    ``backend``: ``"nt"`` (neural-tangents ``stax``, the reference) or ``"fast"``
    (:class:`FastKernelFn`, ``options`` = its keyword arguments)."""
    if backend == "nt":
        if options:
            raise TypeError(f"the nt backend takes no options, got {sorted(options)}")
        return nt_kernel_fn(model)
    if backend == "fast":
        return FastKernelFn(model, **options)
    raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
