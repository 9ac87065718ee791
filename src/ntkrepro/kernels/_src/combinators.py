r"""Combinators and branches: ``Identity``, ``FanOut``, ``FanInSum``, ``serial``, ``parallel``
(neural-tangents ``stax/linear.py: Identity``, ``stax/branching.py``, ``stax/combinators.py``).

``FanOut(n)`` copies the state to :math:`n` branches; ``parallel`` applies layer :math:`i` to branch
:math:`i`; ``FanInSum`` of jointly Gaussian, mean-zero branches with independent output weights is

.. math:: K' = \sum_b K_b,\qquad \Theta' = \sum_b \Theta_b,\qquad C' = \sum_b C_b,

which needs every branch Gaussian and all of the same shape (neural-tangents refuses the rest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp

from ntkrepro.kernels._src.base import Info, Layer, Pair, Plan, Single, _nt_stax, convert_pair, convert_single, max_mode


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
class FanOut(Layer):
    """``stax.FanOut(num)``: ``num`` copies of the state (each in the mode its branch needs)."""

    num: int

    def _build_stax(self):
        stax = _nt_stax()
        return stax.FanOut(self.num)

    def out_shape(self, shape):
        return (shape,) * self.num

    def info(self, i):
        return (i,) * self.num

    def need(self, out_mode, in_shape):
        return max_mode(*out_mode)

    def single(self, st, plan):
        return tuple(convert_single(st, plan.in_mode, m) for m in plan.out_mode), None

    def pair(self, p, aux1, aux2, plan):
        return tuple(convert_pair(p, plan.in_mode, m) for m in plan.out_mode)

    def fuses_into_previous(self, plan):
        """A ``FanOut`` that reduces the state for some branch (e.g. to its diagonal) and hands it on unchanged
        to at most one: no array comes out of the fused computation twice (each would be a copy)."""
        return len(set(plan.out_mode)) == self.num and any(m != plan.in_mode for m in plan.out_mode)


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

    def info(self, infos):
        shapes = [(i.shape, i.channels) for i in infos]
        if any(s != shapes[0] for s in shapes):
            raise ValueError(f"FanInSum: all shapes should be equal, got (spatial shape, channels) {shapes}")
        gaussian = all(i.gaussian for i in infos)
        if not gaussian and len(infos) != 1:  # the sum of non-Gaussian branches needs their means
            raise NotImplementedError("fast backend (as neural-tangents): FanInSum needs every branch mean-zero "
                                      f"Gaussian, got Gaussian = {[i.gaussian for i in infos]}")
        return Info(infos[0].shape, infos[0].channels, gaussian)

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

    def info(self, i):
        for l in self.layers:
            i = l.info(i)
        return i

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
        for i, j in self._runs(plan):
            if j == i + 1:
                p = self.layers[i].pair_with(run, p, aux1[i], aux2[i], plan.children[i])
            else:  # a leaf and the cheap leaves after it (Layer.fuses_into_previous): one computation
                leaf, leaf_plan = self._fused(i, j, plan)
                p = run(leaf, p, tuple(aux1[i:j]), tuple(aux2[i:j]), leaf_plan)
        return p

    def _runs(self, plan) -> list[tuple[int, int]]:
        """``[(i, j)]``: the layers ``i .. j-1`` run together: a leaf that is not itself cheap, followed by the
        cheap leaves after it. Cheap leaves that open a ``serial`` run one by one: in a computation of their own
        (``Conv(1x1) -> FanOut`` apart from the ReLU before them) they measured 6-9 % slower than apart."""
        runs, i, n = [], 0, len(self.layers)
        while i < n:
            j = i + 1
            if _is_leaf(self.layers[i]) and not self.layers[i].fuses_into_previous(plan.children[i]):
                while j < n and _is_leaf(self.layers[j]) and self.layers[j].fuses_into_previous(plan.children[j]):
                    j += 1
            runs.append((i, j))
            i = j
        return runs

    def _fused(self, i: int, j: int, plan: Plan):
        """The :class:`Fused` leaf of layers ``i .. j-1`` (one object per run and plan: the engine caches its
        compiled computation by the leaf's identity) and its plan."""
        cache = self.__dict__.setdefault("_fused_cache", {})
        key = (i, j, plan)
        if key not in cache:
            kids = plan.children[i:j]
            cache[key] = (Fused(self.layers[i:j]),
                          Plan(kids[0].in_shape, kids[-1].out_shape, kids[0].in_mode, kids[-1].out_mode, kids))
        return cache[key]

    def __repr__(self):
        return "serial(" + ", ".join(map(repr, self.layers)) + ")"


def _is_leaf(layer: Layer) -> bool:
    return getattr(layer, "layers", None) is None


class Fused(Layer):
    """Consecutive leaves of a ``serial`` evaluated as one leaf of the per-pair pass: a leaf and the cheap maps
    after it (:meth:`Layer.fuses_into_previous`), so that the engine compiles them into one XLA computation and
    the pair arrays are not written and read again between them (the Residual family's ``Relu -> Conv(1x1) ->
    FanOut``). Its plan's children are the members' plans; ``aux`` the members' tuple. The same numbers as the
    members one after another (it calls their ``pair``).

    **A closing ``FanOut``'s reduced branches from the reduced input** (:meth:`_reduced_branch`): where every
    member before the ``FanOut`` computes a branch's mode (e.g. the diagonal) from that mode of its input
    (:meth:`Layer.plan`), the branch is the members run on the reduced input, not the reduction of their full
    output. Each entry is the same arithmetic on the same numbers; what changes is XLA's schedule: read from the
    full output, the diagonal made the ReLU's output an array with two consumers (the 1x1 conv's affine map and
    the diagonal, which XLA moved ahead of the affine map), so the ReLU wrote its output and the affine map ran as
    a second pass over it. Measured 2026-12-07 (Residual depth 1, S = 64, whole calls interleaved, nothing else
    running): the fused leaf 7.1 -> 3.1 ms per 1,024 pairs, whole call 0.86-0.96x (64 x 64 blocks; four paired runs
    of 10-12 calls) and 0.93x (16 x 16; 40-60 calls); kernels bit-identical."""

    def __init__(self, layers: Sequence[Layer]):
        self.members = tuple(layers)

    def pair(self, p, aux1, aux2, plan):
        p_in = p
        for l, pl, a1, a2 in zip(self.members, plan.children, aux1, aux2):
            p = l.pair(p, a1, a2, pl)
        if isinstance(self.members[-1], FanOut) and isinstance(p_in, Pair):
            # the FanOut's own reductions of the full output stay unused where a reduced branch replaces them
            # (XLA drops them); see the class docstring
            fan = plan.children[-1]
            reduced = [None if m == fan.in_mode else self._reduced_branch(p_in, m, aux1, aux2, plan)
                       for m in fan.out_mode]
            p = tuple(o if r is None else r for o, r in zip(p, reduced))
        return p

    def _reduced_branch(self, p: Pair, mode: str, aux1, aux2, plan: Plan) -> Pair | None:
        """The members before the closing ``FanOut`` on ``p`` reduced to ``mode``, each under its own plan for
        ``mode`` (:meth:`Layer.plan`); None where a member needs more than ``mode`` of its input (e.g. attention,
        whose diagonal needs the whole covariance)."""
        plans = [l.plan(pl.in_shape, mode) for l, pl in zip(self.members[:-1], plan.children[:-1])]
        if any(pl.in_mode != mode or pl.out_mode != mode for pl in plans):
            return None
        r = convert_pair(p, plan.children[0].in_mode, mode)
        for l, pl, a1, a2 in zip(self.members[:-1], plans, aux1, aux2):
            r = l.pair(r, a1, a2, pl)
        return r

    def __repr__(self):
        return "fused(" + ", ".join(map(repr, self.members)) + ")"


class _Parallel(Layer):
    """``stax.parallel(*layers)``: layer ``i`` applied to branch ``i``."""

    def __init__(self, layers: Sequence[Layer]):
        self.layers = tuple(layers)

    def _build_stax(self):
        stax = _nt_stax()
        return stax.parallel(*[l.stax() for l in self.layers])

    def out_shape(self, shape):
        return tuple(l.out_shape(s) for l, s in zip(self.layers, shape))

    def info(self, infos):
        if len(infos) != len(self.layers):
            raise ValueError(f"parallel of {len(self.layers)} layers on {len(infos)} branches")
        return tuple(l.info(i) for l, i in zip(self.layers, infos))

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
