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


def shares(parts: dict) -> dict[str, float]:
    """Trace shares of each part and the Frobenius share of the attention part."""
    K = sum(np.asarray(v, np.float64) for v in parts.values())
    tr = float(np.trace(K))
    if not tr > 0:
        raise ValueError("NTK trace must be positive")
    out = {f"{k}_share": float(np.trace(np.asarray(v, np.float64)) / tr) for k, v in parts.items()}
    out["attention_frob_share"] = float(np.linalg.norm(np.asarray(parts["attention"], np.float64)) / np.linalg.norm(K))
    return out


def run_a5(params: dict, ctx) -> dict:
    """Shares of the NTK parts for every width and seed (one job: it is cheap)."""
    import jax

    from ntkrepro.arda2026.model import init_params, ntk_parts

    _parts = jax.jit(ntk_parts)
    from ntkrepro.arda2026.teacher import sample_inputs

    names = ("attention_share", "value_share", "output_share", "attention_frob_share")
    vals = {k: np.zeros((len(params["widths"]), len(params["seeds"]))) for k in names}
    for i, m in enumerate(ctx.progress(params["widths"], desc="A5 widths")):
        for j, seed in enumerate(params["seeds"]):
            key = jax.random.fold_in(jax.random.PRNGKey(int(seed)), int(m))
            X = sample_inputs(jax.random.fold_in(jax.random.fold_in(key, int(params["data_seed"])), 7919),
                              int(params["n_inputs"]), int(params["d"]), int(params["T"]))
            p = init_params(key, int(m), int(params["d"]))
            sh = shares({k: np.asarray(v) for k, v in _parts(p, X).items()})
            for k in names:
                vals[k][i, j] = sh[k]
    out: dict[str, Any] = {"widths": list(params["widths"]), "seeds": list(params["seeds"]), "metrics": {}}
    nb = int(params["n_boot"])
    for k in names:
        v = vals[k]
        per_width = [stats.bootstrap_ci(v[i], n_boot=nb, seed=i).as_dict() for i in range(v.shape[0])]
        out["metrics"][k] = {"values": v.tolist(), "mean": v.mean(axis=1).tolist(), "ci": per_width}
    out["attention_slope"] = stats.bootstrap_slope(np.array(params["widths"], float), vals["attention_share"],
                                                   log=True, n_boot=nb, center=np.mean).as_dict()
    return out
