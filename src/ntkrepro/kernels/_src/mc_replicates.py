r"""Per-entry standard errors of a whole model's kernel with Monte Carlo attention layers
(:mod:`.attention_mc`): the model rerun with independent seeds. Above the engine (it runs
:class:`~.engine.FastKernelFn`), so the layer modules below it import none of this."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ntkrepro.kernels._src.attention import GlobalSelfAttention
from ntkrepro.kernels._src.engine import FastKernelFn

# ------------------------------------------------------------------------------------------------
# replicate seeds: per-entry standard errors of a whole model's kernel


def _map_mc_layers(model: Any, fn) -> Any:
    """``model`` with every Monte Carlo attention layer ``l`` replaced by ``fn(l)`` (through
    ``serial`` / ``parallel``)."""
    layers = getattr(model, "layers", None)
    if layers is not None:
        return type(model)(tuple(_map_mc_layers(l, fn) for l in layers))
    if isinstance(model, GlobalSelfAttention) and not model.linear_scaling:
        new = fn(model)
        object.__setattr__(new, "_stax_kwargs", model.stax_kwargs())
        return new
    return model


def mc_layers(model: Any) -> list[Any]:
    """The Monte Carlo attention layers of ``model``."""
    found: list[Any] = []
    _map_mc_layers(model, lambda l: found.append(l) or l)
    return found


def with_seed(model: Any, replicate: int) -> Any:
    """``model`` with each Monte Carlo layer's ``mc_seed`` replaced by a seed derived from it and
    ``replicate`` (replicate 0 is ``model`` itself; different replicates draw independently)."""
    if replicate == 0:
        return model
    return _map_mc_layers(model, lambda l: dataclasses.replace(
        l, mc_seed=int(np.random.SeedSequence([int(l.mc_seed), int(replicate)]).generate_state(1)[0])))


def mc_kernel(model: Any, x1: Any, x2: Any | None = None, get: str | Sequence[str] = ("nngp", "ntk"), *,
              replicates: int = 4, mask_constant: float | None = None, **options: Any) -> dict[str, Any]:
    r"""The fast kernel of ``model`` (with Monte Carlo attention layers) and its per-entry standard
    error, from ``replicates`` independent seeds (:func:`with_seed`; replicate 0 is ``model``'s own
    seeds). Returns ``{g: mean, g + "_se": standard error of that mean, g + "_replicates": the
    stacked replicates}`` for each ``g`` in ``get``: the mean over replicates has ``replicates x
    mc_samples`` draws per layer; the standard error is the sample standard deviation over
    replicates over :math:`\sqrt{\text{replicates}}` -- of the whole model's kernel, layers after
    the attention included (for a model that is linear in the attention layer's output this is the
    standard error of a single run with ``replicates x mc_samples`` draws). ``options``: those of
    :class:`~ntkrepro.kernels._src.engine.FastKernelFn`."""
    if replicates < 2:
        raise ValueError(f"a standard error needs replicates >= 2, got {replicates}")
    if not mc_layers(model):
        raise ValueError("model has no Monte Carlo attention layer (GlobalSelfAttention(linear_scaling=False))")
    names = (get,) if isinstance(get, str) else tuple(get)
    runs = []
    for r in range(replicates):
        out = FastKernelFn(with_seed(model, r), **options)(x1, x2, names, mask_constant=mask_constant)
        runs.append({g: np.asarray(getattr(out, g)) for g in names})
    res: dict[str, Any] = {}
    for g in names:
        st = np.stack([r[g] for r in runs])
        res[g] = st.mean(axis=0)
        res[g + "_se"] = st.std(axis=0, ddof=1) / np.sqrt(replicates)
        res[g + "_replicates"] = st
    return res
