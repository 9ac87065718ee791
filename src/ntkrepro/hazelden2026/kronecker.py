r"""The Kronecker core :math:`\mathcal K` of the Global empirical NTK, computed two independent ways.

Hazelden et al. (2026) write the model state :math:`h` as the solution of a global implicit
constraint :math:`F(h, \theta) = 0`; the GeNTK is :math:`\Theta = \mathcal P \mathcal K \mathcal P^*`
with :math:`\mathcal K = D_\theta F\, D_\theta F^*` (parameter -> state, at fixed state) and
:math:`\mathcal P = (D_h F)^{-1}` (state -> state).

For a *weight site* -- a weight :math:`W \in \mathbb R^{m\times n}` used as :math:`y = W v (+ b)`
at every (sample, time) point :math:`a = (s, t)` -- the state entering :math:`F` is the
pre-activation :math:`y_a`, and :math:`\partial y_{a,i}/\partial W_{kl} = \delta_{ik} v_{a,l}`, so

.. math::

    \mathcal K_W[(a,i),(a',j)] = \sum_{k,l} \frac{\partial y_{a,i}}{\partial W_{kl}}
    \frac{\partial y_{a',j}}{\partial W_{kl}} = (v_a \cdot v_{a'})\,\delta_{ij},
    \qquad \mathcal K_W = (V V^\top) \otimes I_m

(the Kronecker-core theorem). A bias is the site with :math:`v \equiv 1`; with ``include_bias``
the site variable is :math:`[v, 1]` and the core of :math:`(W, b)` is :math:`([V, 1][V, 1]^\top) \otimes I_m`.

Two computations, compared on a block of rows (selected (sample, time) points x selected output
units) because the full :math:`\mathcal K` of a large layer does not fit in memory:

* :func:`forward_core` -- **forward pass only**: record :math:`V` with a forward hook and form
  :math:`(V_S V_S^\top) \otimes I_U`.
* :func:`autodiff_core` -- **autodiff**: run the model with each site's input detached (so the
  graph from :math:`W` to :math:`y` is the *partial* derivative :math:`D_\theta F` at fixed
  state), take the Jacobian rows :math:`J_{(a,i)} = \partial y_{a,i} / \partial (W, b)` with
  batched vector-Jacobian products (one-hot cotangents), and contract
  :math:`\mathcal K = J J^\top`. Nothing of the Kronecker structure is used.

Sites are any ``nn.Linear`` modules (:func:`linear_sites` picks them by name).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ntkrepro.stats import effective_rank  # noqa: F401  (shared implementation, re-exported)


@dataclass
class SiteRecord:
    """What a forward pass leaves at one weight site: input :math:`v` and output :math:`y` (rows = (sample, time))."""

    name: str
    module: nn.Linear
    inputs: list[torch.Tensor] = field(default_factory=list)
    outputs: list[torch.Tensor] = field(default_factory=list)

    @property
    def v(self) -> torch.Tensor:
        """Weight-site variables, all uses stacked: shape (N, n_in)."""
        return torch.cat([x.reshape(-1, x.shape[-1]) for x in self.inputs], 0)

    @property
    def y(self) -> torch.Tensor:
        """Pre-activation outputs, all uses stacked: shape (N, n_out)."""
        return torch.cat([x.reshape(-1, x.shape[-1]) for x in self.outputs], 0)


def linear_sites(model: nn.Module, pattern: str = ".*") -> dict[str, nn.Linear]:
    """All ``nn.Linear`` submodules whose qualified name matches ``pattern`` (regex, ``re.search``)."""
    rx = re.compile(pattern)
    sites = {n: m for n, m in model.named_modules() if isinstance(m, nn.Linear) and rx.search(n)}
    if not sites:
        raise ValueError(f"no nn.Linear weight site matches {pattern!r}")
    return sites


@contextlib.contextmanager
def record_sites(sites: Mapping[str, nn.Linear], *, detach_inputs: bool = False,
                 keep_outputs: bool = False, attach_inputs: bool = False) -> Iterator[dict[str, SiteRecord]]:
    """Register forward hooks on ``sites``; yields ``{name: SiteRecord}`` filled by forward passes.

    With ``detach_inputs`` the site's input is replaced by a detached copy *before* the layer runs
    (values unchanged), so that autodiff from the site's output back to its weight sees only the
    direct dependence :math:`y = W v + b` -- the partial derivative :math:`D_\theta F` at fixed state.
    Recorded inputs are detached unless ``attach_inputs`` (then they stay in the autodiff graph, so
    that a function of the weight-site variables can be differentiated w.r.t. the parameters).
    """
    records = {name: SiteRecord(name, mod) for name, mod in sites.items()}
    handles = []
    for name, mod in sites.items():
        if not isinstance(mod, nn.Linear):
            raise TypeError(f"weight site {name} is {type(mod).__name__}, expected nn.Linear")
        rec = records[name]

        def pre(module, args, rec=rec):
            (x,) = args
            if detach_inputs:
                x = x.detach()
                rec.inputs.append(x)
                return (x,)
            rec.inputs.append(x if attach_inputs else x.detach())
            return None

        def post(module, args, out, rec=rec):
            if keep_outputs:
                rec.outputs.append(out)

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    try:
        yield records
    finally:
        for h in handles:
            h.remove()


def site_variables(v: torch.Tensor, include_bias: bool) -> torch.Tensor:
    """:math:`[v, 1]` when the bias is part of the site, else :math:`v`."""
    if include_bias:
        return torch.cat([v, torch.ones(v.shape[0], 1, dtype=v.dtype, device=v.device)], 1)
    return v


def forward_core(v: torch.Tensor, rows: torch.Tensor, units: Sequence[int], *,
                 include_bias: bool = False) -> torch.Tensor:
    r"""Forward-pass Kronecker core on the block (rows x units): :math:`(V_S V_S^\top) \otimes I_U`.

    Returns the matrix indexed by ``(a, i)`` with ``a`` in ``rows`` (slow index) and ``i`` in
    ``units`` (fast index), i.e. shape ``(len(rows)*len(units),)*2``.
    """
    vs = site_variables(v[rows], include_bias)
    gram = vs @ vs.T
    eye = torch.eye(len(units), dtype=v.dtype, device=v.device)
    return torch.kron(gram, eye)


def autodiff_core(y: torch.Tensor, module: nn.Linear, rows: torch.Tensor, units: Sequence[int], *,
                  include_bias: bool = False, chunk: int = 0) -> torch.Tensor:
    r"""Autodiff Kronecker core on the same block: :math:`J J^\top`,
    :math:`J_{(a,i)} = \partial y_{a,i}/\partial\theta_W`.

    ``y`` is the site's output tensor (N, n_out) still attached to the graph in which the site's
    input was detached (:func:`record_sites` with ``detach_inputs=True``); the Jacobian rows are
    batched vector-Jacobian products with one-hot cotangents, flattened over the weight (and bias).
    """
    params = [module.weight] + ([module.bias] if include_bias and module.bias is not None else [])
    if include_bias and module.bias is None:
        raise ValueError("include_bias=True but the site has no bias")
    pairs = [(int(a), int(i)) for a in rows for i in units]
    n_par = sum(p.numel() for p in params)
    if chunk <= 0:  # automatic: keep one chunk of Jacobian rows under ~64 MB
        chunk = max(1, min(256, (64 << 20) // (n_par * y.element_size())))
    jac = torch.empty(len(pairs), n_par, dtype=y.dtype, device=y.device)
    for start in range(0, len(pairs), chunk):
        block = pairs[start:start + chunk]
        cot = torch.zeros((len(block),) + tuple(y.shape), dtype=y.dtype, device=y.device)
        idx = torch.tensor(block, dtype=torch.long).reshape(-1, 2)
        cot[torch.arange(len(block)), idx[:, 0], idx[:, 1]] = 1.0
        grads = torch.autograd.grad(y, params, grad_outputs=cot, retain_graph=True, is_grads_batched=True)
        off = 0
        for g in grads:
            n = g[0].numel()
            jac[start:start + len(block), off:off + n] = g.reshape(len(block), -1)
            off += n
        del grads, cot
    return jac @ jac.T


def spread(n: int, k: int) -> list[int]:
    """``k`` indices spread evenly over ``range(n)`` (first and last included); all if ``k >= n``."""
    if k >= n:
        return list(range(n))
    if k < 1:
        raise ValueError("need at least one index")
    return sorted({int(round(x)) for x in np.linspace(0, n - 1, k)})


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    r""":math:`\lVert a - b\rVert_F / \lVert b\rVert_F`."""
    denom = torch.linalg.norm(b)
    if denom == 0:
        raise ValueError("reference core is zero")
    return float(torch.linalg.norm(a - b) / denom)


def compare_sites(model: nn.Module, forward: Callable[[nn.Module], object], sites: Mapping[str, nn.Linear],
                  *, rows: torch.Tensor | None = None, units: Mapping[str, Sequence[int]] | int | None = None,
                  include_bias: bool = True, chunk: int = 0, progress=None) -> dict[str, dict]:
    r"""For every site, the relative error between :func:`forward_core` and :func:`autodiff_core`.

    ``forward(model)`` runs one forward pass. Pass 1 (no autodiff): records :math:`V` under
    ``torch.no_grad``. Pass 2: inputs detached, outputs kept, Jacobian rows by autodiff.
    ``rows`` selects (sample, time) points (default: all); ``units`` selects output units (an int
    ``k`` means the first ``k``; default: all).
    """
    with torch.no_grad(), record_sites(sites) as rec_fwd:
        forward(model)
    with torch.enable_grad(), record_sites(sites, detach_inputs=True, keep_outputs=True) as rec_ad:
        forward(model)
    out = {}
    items = list(sites.items())
    for name, mod in (progress(items, desc="sites") if progress else items):
        v = rec_fwd[name].v
        y = rec_ad[name].y
        if v.shape[0] != y.shape[0]:
            raise RuntimeError(f"site {name}: forward and autodiff passes saw different numbers of uses")
        r = torch.arange(v.shape[0]) if rows is None else rows
        n_out = mod.out_features
        if units is None:
            u = list(range(n_out))
        elif isinstance(units, int):
            u = spread(n_out, units)
        else:
            u = list(units[name])
        bias = include_bias and mod.bias is not None
        k_fwd = forward_core(v, r, u, include_bias=bias)
        k_ad = autodiff_core(y, mod, r, u, include_bias=bias, chunk=chunk)
        # negative control: the same core built from row-permuted site variables (must NOT match)
        perm = torch.randperm(len(r), generator=torch.Generator().manual_seed(0))
        k_ctl = forward_core(v[r][perm], torch.arange(len(r)), u, include_bias=bias)
        # near-miss control: the core without the bias's constant-1 site variable, (V V^T) (x) I (sites with a bias)
        nobias = relative_error(forward_core(v, r, u, include_bias=False), k_ad) if bias else None
        out[name] = {"rel_error": relative_error(k_fwd, k_ad), "control_rel_error": relative_error(k_ctl, k_ad),
                     "nobias_rel_error": nobias,
                     "n_rows": int(len(r)), "n_units": len(u),
                     "n_in": int(mod.in_features), "n_out": int(n_out), "bias": bool(bias),
                     "core_norm": float(torch.linalg.norm(k_ad))}
        del k_fwd, k_ad, k_ctl, y
        rec_ad[name].outputs.clear()
    return out
