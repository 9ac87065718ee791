r"""A5: the attention (W) part of the transformer's empirical NTK at initialisation, vs width.

For inputs :math:`X_1..X_N` (Gaussian tokens rescaled to norm :math:`\le 1`, drawn afresh for every
(seed, width), so the seed interval covers the data draw as well as the initialisation) and a
width-m pairwise-symmetric initialisation, :func:`ntkrepro.arda2026.model.ntk_parts` gives
:math:`K = K_c + K_U + K_W`. The **attention share** is

.. math::  s_W = \operatorname{tr} K_W / \operatorname{tr} K

(the fraction of the mean squared gradient norm carried by :math:`W`), reported with the value
and output shares, and the Frobenius share :math:`\lVert K_W\rVert_F / \lVert K\rVert_F`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ntkrepro import stats
from ntkrepro.arda2026.model import init_params, ntk_parts
from ntkrepro.arda2026.teacher import sample_inputs


def shares(parts: dict) -> dict[str, float]:
    """Trace shares of each part and the Frobenius share of the attention part."""
    K = sum(np.asarray(v, np.float64) for v in parts.values())
    tr = float(np.trace(K))
    if not tr > 0:
        raise ValueError("NTK trace must be positive")
    out = {f"{k}_share": float(np.trace(np.asarray(v, np.float64)) / tr) for k, v in parts.items()}
    out["attention_frob_share"] = float(np.linalg.norm(np.asarray(parts["attention"], np.float64)) / np.linalg.norm(K))
    return out


def frozen_attention_parts(parts: dict) -> dict:
    """The NTK parts of A5's negative control ``attention_frozen``: the model evaluated with
    :math:`W = 0` (uniform attention) and :math:`W` frozen, i.e. not a parameter, so its part is 0."""
    out = {k: np.asarray(v, np.float64) for k, v in parts.items()}
    out["attention"] = np.zeros_like(out["attention"])
    return out


def _summary(widths, seeds, vals: dict, nb: int) -> dict[str, Any]:
    out: dict[str, Any] = {"widths": list(widths), "seeds": list(seeds), "metrics": {}}
    for k, v in vals.items():
        per_width = [stats.bootstrap_ci(v[i], n_boot=nb, seed=i).as_dict() for i in range(v.shape[0])]
        out["metrics"][k] = {"values": v.tolist(), "mean": v.mean(axis=1).tolist(), "ci": per_width}
    a = vals["attention_share"]
    if np.all(a > 0):
        out["attention_slope"] = stats.bootstrap_slope(np.array(widths, float), a, log=True, n_boot=nb,
                                                       center=np.mean).as_dict()
    else:  # a share that is 0 has no log-log slope; the share itself does not move with width
        out["attention_slope"] = stats.bootstrap_slope(np.array(widths, float), a, log=False, n_boot=nb,
                                                       center=np.mean).as_dict()
        out["attention_slope"]["method"] += " (share not positive: slope of the share vs width, not log-log)"
    return out


def run_a5(params: dict, ctx) -> dict:
    """Shares of the NTK parts for every width and seed (one job: it is cheap), and the negative
    control ``attention_frozen`` (W = 0 and frozen) on the same inputs."""
    import jax
    import jax.numpy as jnp


    _parts = jax.jit(ntk_parts)
    names = ("attention_share", "value_share", "output_share", "attention_frob_share")
    vals = {k: np.zeros((len(params["widths"]), len(params["seeds"]))) for k in names}
    ctrl = {k: np.zeros_like(v) for k, v in vals.items()}
    for i, m in enumerate(ctx.progress(params["widths"], desc="A5 widths")):
        for j, seed in enumerate(params["seeds"]):
            key = jax.random.fold_in(jax.random.PRNGKey(int(seed)), int(m))
            X = sample_inputs(jax.random.fold_in(jax.random.fold_in(key, int(params["data_seed"])), 7919),
                              int(params["n_inputs"]), int(params["d"]), int(params["T"]))
            p = init_params(key, int(m), int(params["d"]))
            sh = shares({k: np.asarray(v) for k, v in _parts(p, X).items()})
            p0 = p._replace(W=jnp.zeros_like(p.W))
            shc = shares(frozen_attention_parts(_parts(p0, X)))
            for k in names:
                vals[k][i, j] = sh[k]
                ctrl[k][i, j] = shc[k]
    nb = int(params["n_boot"])
    out = _summary(params["widths"], params["seeds"], vals, nb)
    out["controls"] = {"attention_frozen": _summary(params["widths"], params["seeds"], ctrl, nb)}
    return out
