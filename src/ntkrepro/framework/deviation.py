r"""F2: finite-width deviation of the empirical NTK from the infinite-width NTK vs width.

For the transformer block :class:`~ntkrepro.framework.models.BlockSpec` (softmax attention with
neural-tangents' analytic :math:`d^{-1}` tied-query/key scaling, FFN, optional LayerNorm) we measure

.. math:: \delta(W) = \lVert \Theta_W - \Theta_\infty\rVert_F / \lVert\Theta_\infty\rVert_F

on ``n_inputs`` Gaussian sequences (the full ``(N S) x (N S)`` kernel), for ``n_seeds``
initialisations per width :math:`W` (``n_heads`` fixed, so the head size grows with :math:`W`),
and fit :math:`\delta \propto W^{b}` to the medians over seeds with a bootstrap over seeds.
The paper claims :math:`b = -1`; a single draw's fluctuation is expected at :math:`W^{-1/2}`
(CLT), and the data decide.
"""

from __future__ import annotations

import numpy as np

from ntkrepro.framework import models
from ntkrepro.framework.spectra import gaussian_sequences, relative_frobenius

#: Widths of the paper's table (claim F2).
TABLE_WIDTHS = (256, 512, 2048, 4096)


def block_spec(p: dict, width: int) -> models.BlockSpec:
    """The F2 block at ``width`` from the config section ``p``."""
    return models.BlockSpec(width=width, n_heads=p["n_heads"], attention="SOFTMAX", scaling="linear",
                            layernorm=p["layernorm"], ffn_mult=p["ffn_mult"])


def run_f2(params: dict, ctx) -> dict:
    """Relative deviation of the empirical NTK from the stax NTK for every width and seed."""
    import jax
    import jax.numpy as jnp

    p = dict(params)
    widths = [int(w) for w in p["widths"]]
    x = jnp.asarray(gaussian_sequences(p["seed"], p["n_inputs"], p["seq_len"], p["d_in"]))
    theta_inf = models.infinite_ntk(block_spec(p, widths[0]), x).astype(np.float64)
    key = jax.random.PRNGKey(p["seed"])
    dev = []
    for w in ctx.progress(widths, desc="F2 widths"):
        spec = block_spec(p, w)
        ntk_fn = models.fast_ntk_fn(spec)
        row = []
        for s in range(p["n_seeds"]):
            params_w = models.init_params(spec, jax.random.fold_in(jax.random.fold_in(key, w), s), x)
            row.append(relative_frobenius(np.asarray(ntk_fn(params_w, x), np.float64), theta_inf))
        dev.append(row)
    table = {str(w): float(np.median(r)) for w, r in zip(widths, dev) if w in TABLE_WIDTHS}
    return {"widths": widths, "rel_deviation": dev, "table_median": table,
            "theta_inf_norm": float(np.linalg.norm(theta_inf))}
