r"""F3: eigenstructure of the infinite-width NTK over positions, with and without sinusoidal encodings.

For each Gaussian-token sequence :math:`x_a` the position kernel :math:`\Theta(x_a, x_a)_{st}`
(:math:`S\times S`, neural-tangents ``kernel_fn``) of the bidirectional block
(:func:`block_spec`) is computed for three variants: with sinusoidal encodings added to the inputs
(``pe``), without (``no_pe``), and the same block with its attention sub-layer removed, with
encodings (``no_attention_pe``, the no-coupling baseline); the block without attention and without
encodings (``no_attention_no_pe``, reported); and for the negative controls (issue 28, the nearest false
alternative of each stated property): the block whose attention pattern is the identity, i.e. the value
and output projections applied position-wise, with encodings (``positionwise_pe``: attention's
parameters, no coupling between positions), and the block with the same sinusoidal encodings assigned
to the positions in a fixed random order (``shuffled_pe``: positions tagged, no relative-position
order). The criteria
(:func:`ntkrepro.framework.claims.evaluate_f3`) read the per-sequence kernels from the ``.npz``.
"""

from __future__ import annotations

import numpy as np

from ntkrepro.framework import models
from ntkrepro.framework import spectra as sp
from ntkrepro.io import write_npz


def block_spec(p: dict, attention: str = "SOFTMAX") -> models.BlockSpec:
    """The bidirectional F3 block (infinite width; ``width`` only names the finite twin)."""
    return models.BlockSpec(width=p["n_heads"] * 8, n_heads=p["n_heads"], attention=attention, scaling="linear",
                            layernorm=p["layernorm"], ffn_mult=1)


def position_kernels_inf(spec: models.BlockSpec, x: np.ndarray, chunk: int = 8) -> np.ndarray:
    """Infinite-width position kernels :math:`\\Theta(x_a, x_a)` for every sequence, ``(N, S, S)``."""
    import jax.numpy as jnp

    kfn = spec.kernel_fn()
    out = []
    for i in range(0, x.shape[0], chunk):
        xc = jnp.asarray(x[i:i + chunk])
        out.append(sp.position_kernels(np.asarray(kfn(xc, None, "ntk"), np.float64)))
    return np.concatenate(out)


def derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly drawn permutation of ``n`` positions with no fixed point (rejection: redraw until none)."""
    while True:
        perm = rng.permutation(n)
        if n < 2 or not np.any(perm == np.arange(n)):
            return perm


def shuffled_positions(seed: int, seq_len: int) -> np.ndarray:
    """The fixed random order of positions of the ``shuffled_pe`` control: a permutation drawn from
    ``seed`` with no fixed point (a derangement: every position gets another position's encoding)."""
    return derangement(np.random.default_rng([int(seed), 28]), seq_len)


def run_f3(params: dict, ctx) -> dict:
    """Position kernels of the three variants; spectra and Fourier content of the mean kernels."""
    p = dict(params)
    x = sp.gaussian_sequences(p["seed"], p["n_seq"], p["seq_len"], p["d_in"])
    x_pe = models.make_inputs(x, True, base=p["pe_base"], scale=p["pe_scale"])
    shuffle = shuffled_positions(p["seed"], p["seq_len"])
    x_shuffled = x + (x_pe - x)[:, shuffle]          # the same encoding rows, positions in a fixed random order
    variants = {
        "pe": position_kernels_inf(block_spec(p), x_pe),
        "no_pe": position_kernels_inf(block_spec(p), x),
        "no_attention_pe": position_kernels_inf(block_spec(p, "NONE"), x_pe),
        "no_attention_no_pe": position_kernels_inf(block_spec(p, "NONE"), x),
        # F3's negative controls (claims.toml, issue 28)
        "positionwise_pe": position_kernels_inf(block_spec(p, "POSITIONWISE"), x_pe),
        "shuffled_pe": position_kernels_inf(block_spec(p), x_shuffled),
    }
    write_npz(ctx.outputs["kernels"], variants, provenance=ctx.provenance())
    S = p["seq_len"]
    cutoff = max(1, S // 8)
    summary = {}
    for name, k in variants.items():
        evals, evecs = sp.eigh_desc(k.mean(0))
        summary[name] = {
            "eigenvalues": evals.tolist(),
            "effective_rank": sp.effective_rank(evals),
            "eigvec_centroid": sp.spectral_centroid(evecs).tolist(),
            "eigvec_low_freq_share": sp.low_freq_fraction(evecs, cutoff).tolist(),
            "top_eigvecs": evecs[:, :4].T.tolist(),
            "top_eigvec_energy": sp.spectrum_energy(evecs[:, :4]).T.tolist(),
            "distance_profile": sp.distance_profile(k.mean(0)).tolist(),
            "offdiag_fraction_mean": float(sp.offdiag_fraction(k).mean()),
            "mean_kernel": k.mean(0).tolist(),
        }
    return {"variants": summary, "low_freq_cutoff": cutoff, "shuffled_positions": shuffle.tolist(),
            "white_low_freq_share": sp.white_low_freq_fraction(S, cutoff)}
