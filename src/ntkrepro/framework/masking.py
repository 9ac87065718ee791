r"""F5: NTK of GPT-style (causal) vs BERT-style (bidirectional) attention.

neural-tangents' ``GlobalSelfAttention`` has no causal mask, so both kernels are *empirical* NTKs
of the finite flax block (:mod:`ntkrepro.framework.models`) at one width, with the **same weights**
(the mask has no parameters), which makes the comparison paired. For each seed and sequence the
position kernel :math:`\Theta(x_a, x_a)` (:math:`S\times S`) gives an eigenvalue spectrum and an
entropy effective rank; the infinite-width bidirectional kernel (stax) is the reference. The same
sequences serve every seed (a crossed design). For the negative control, each seed also gets a second,
independent bidirectional initialisation (``eff_rank_bidirectional_other_seed``).
"""

from __future__ import annotations

import numpy as np

from ntkrepro.framework import models
from ntkrepro.framework import spectra as sp


def block_spec(p: dict, causal: bool) -> models.BlockSpec:
    return models.BlockSpec(width=p["width"], n_heads=p["n_heads"], attention="SOFTMAX", scaling="linear",
                            layernorm=p["layernorm"], ffn_mult=1, causal=causal)


def run_f5(params: dict, ctx) -> dict:
    """Effective ranks and spectra of causal vs bidirectional position kernels per (seed, sequence)."""
    import jax
    import jax.numpy as jnp

    p = dict(params)
    x = sp.gaussian_sequences(p["seed"], p["n_seq"], p["seq_len"], p["d_in"])
    x = jnp.asarray(models.make_inputs(x, p["pos_enc"]))
    fns = {c: models.fast_position_ntk_fn(block_spec(p, c)) for c in (True, False)}
    key = jax.random.PRNGKey(p["seed"])
    ranks = {True: [], False: []}
    other = []
    mean_k = {True: 0.0, False: 0.0}
    n = p["n_seeds"]
    for s in ctx.progress(range(n), desc="F5 seeds"):
        params_s = models.init_params(block_spec(p, False), jax.random.fold_in(key, s), x)
        for c, fn in fns.items():
            pk = np.asarray(fn(params_s, x), np.float64)
            ranks[c].append([sp.effective_rank(np.linalg.eigvalsh(k)) for k in pk])
            mean_k[c] = mean_k[c] + pk.mean(0) / n
        # negative control (claims.toml): a second bidirectional model, an independent initialisation
        params_o = models.init_params(block_spec(p, False), jax.random.fold_in(key, n + s), x)
        other.append([sp.effective_rank(np.linalg.eigvalsh(k))
                      for k in np.asarray(fns[False](params_o, x), np.float64)])
    inf_pk = sp.position_kernels(models.infinite_ntk(block_spec(p, False), x).astype(np.float64))
    inf_ranks = [sp.effective_rank(np.linalg.eigvalsh(k)) for k in inf_pk]
    out = {
        "eff_rank_causal": ranks[True],
        "eff_rank_bidirectional": ranks[False],
        "eff_rank_bidirectional_infinite": inf_ranks,
        "eff_rank_bidirectional_other_seed": other,
        "mean_eigenvalues": {name: sp.eigh_desc(mean_k[c])[0].tolist()
                             for name, c in (("causal", True), ("bidirectional", False))},
        "mean_eigenvalues_bidirectional_infinite": sp.eigh_desc(inf_pk.mean(0))[0].tolist(),
        "mean_kernel": {name: np.asarray(mean_k[c]).tolist()
                        for name, c in (("causal", True), ("bidirectional", False))},
        "mean_kernel_bidirectional_infinite": inf_pk.mean(0).tolist(),
        "bidirectional_finite_vs_infinite_rel": sp.relative_frobenius(mean_k[False], inf_pk.mean(0)),
    }
    return out
