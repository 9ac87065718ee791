r"""The attention layer of Hron et al. (2020) and an exact sampler of it at initialisation.

The layer is neural-tangents' ``stax.GlobalSelfAttention`` (NTK parameterisation). For inputs
:math:`X \in \mathbb{R}^{S\times d_\mathrm{in}}` and head :math:`h`,

.. math::

    G_h = \frac{\sigma_{QK}}{d_\mathrm{in}\, d_k^{\,p}} (X W^Q_h)(X W^K_h)^\top, \qquad
    f(X) = \frac{\sigma_{OV}}{\sqrt{d_v H d_\mathrm{in}}}
           \big[\operatorname{softmax}(G_1) X W^V_1, \dots, \operatorname{softmax}(G_H) X W^V_H\big] W^O

with all weights i.i.d. :math:`\mathcal N(0,1)`; :math:`p = 1/2` is the standard
:math:`d^{-1/2}` scaling (``linear_scaling=False``), :math:`p = 1` the :math:`d^{-1}` scaling.

**Exact sampler.** For fixed inputs, only a few random quantities matter, and each can be drawn
directly with its exact law (no :math:`d\times d` weight matrix is ever formed):

* :math:`X W \overset{d}{=} L Z` with :math:`L L^\top = X X^\top` (rank :math:`r`) and
  :math:`Z \in \mathbb R^{r\times d_k}` i.i.d. normal, so
  :math:`(XW^Q)(XW^K)^\top \overset{d}{=} L\,(Z_Q Z_K^\top)\,L^\top`.
* :math:`Z_Q Z_K^\top \overset{d}{=} Z' B^\top` where :math:`Z'\in\mathbb R^{r\times r}` is
  i.i.d. normal and :math:`B B^\top \sim \mathrm{Wishart}_r(d_k, I)` is drawn by Bartlett's
  decomposition (:math:`B_{ii}^2 \sim \chi^2_{d_k-i+1}`, :math:`B_{i>j} \sim \mathcal N(0,1)`):
  given :math:`Z_K`, the rows of :math:`Z_Q Z_K^\top` are independent
  :math:`\mathcal N(0, Z_K^\top Z_K)`.
* One output channel of head :math:`h` is :math:`a^\top X W^V_h w_h` with
  :math:`w_h \in \mathbb R^{d_v}` the head's block of :math:`W^O`; given :math:`w_h`,
  :math:`X W^V_h w_h \overset{d}{=} \lVert w_h\rVert\, L g`, :math:`g\sim\mathcal N(0, I_r)`, and
  :math:`\lVert w_h\rVert^2 \sim \chi^2_{d_v}`.

So a draw costs :math:`O(r^2 + S r)` per head instead of :math:`O(S d_\mathrm{in} d_k)`, which
makes :math:`d = 1000` (and far beyond) with thousands of draws cheap. One output position needs
only one row of the logits, whose law is simpler still: :math:`L_p Z_Q Z_K^\top \overset{d}{=}
\lVert L_p\rVert \sqrt{\chi^2_{d_k}}\, h^\top`, :math:`h\sim\mathcal N(0, I_r)`
(:func:`sample_head_terms`) -- two chi-square and :math:`2r` normal variates per head.
``tests/test_hron2020_attention.py`` checks the sampler against neural-tangents' ``apply_fn`` in distribution.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ntkrepro.nt import stax

SCALINGS = {"sqrt": 0.5, "linear": 1.0}


def nt_attention_layer(n_chan_out: int, d_k: int, d_v: int, n_heads: int, *, scaling: str = "sqrt",
                       attention_mechanism: str = "SOFTMAX"):
    r"""neural-tangents ``GlobalSelfAttention`` with :math:`d_k^{-p}` logit scaling, untied Q/K.

    ``scaling="sqrt"`` is the standard layer (``linear_scaling=False``). ``scaling="linear"``
    divides the logits by :math:`d_k` with *independent* query and key weights (Hron et al., Sec. 3),
    realised as ``linear_scaling=False`` with :math:`\sigma_Q\sigma_K = d_k^{-1/2}`; this is the
    variant whose attention weights collapse to uniform. (neural-tangents' own
    ``linear_scaling=True`` ties :math:`W^Q = W^K` precisely to avoid that collapse.)
    """
    std = d_k ** -0.25 if scaling == "linear" else 1.0
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {sorted(SCALINGS)}, got {scaling!r}")
    return stax.GlobalSelfAttention(n_chan_out, d_k, d_v, n_heads, linear_scaling=False,
                                    W_query_std=std, W_key_std=std,
                                    attention_mechanism=attention_mechanism)


def gram_factor(x: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    r"""A factor :math:`L` (:math:`S\times r`) with :math:`L L^\top = X X^\top`, :math:`r` = rank."""
    gram = np.asarray(x, np.float64) @ np.asarray(x, np.float64).T
    evals, evecs = np.linalg.eigh(gram)
    keep = evals > tol * max(evals.max(), 1.0)
    return (evecs[:, keep] * np.sqrt(evals[keep])).astype(np.float32)


def _bartlett(key: jax.Array, r: int, dof: int) -> jax.Array:
    r"""Lower-triangular :math:`B` with :math:`B B^\top \sim \mathrm{Wishart}_r(\mathrm{dof}, I)`."""
    k_chi, k_norm = jax.random.split(key)
    dofs = dof - jnp.arange(r)
    diag = jnp.sqrt(2.0 * jax.random.gamma(k_chi, dofs / 2.0))
    lower = jnp.tril(jax.random.normal(k_norm, (r, r)), -1)
    return lower + jnp.diag(diag)


def sample_logit_products(key: jax.Array, r: int, d_k: int) -> jax.Array:
    r"""One draw of :math:`Z_Q Z_K^\top` (:math:`r\times r`), :math:`Z_Q, Z_K \in \mathbb R^{r\times d_k}`."""
    return _logit_products(key, r, d_k, direct=d_k < r)


def _logit_products(key: jax.Array, r: int, d_k, *, direct: bool) -> jax.Array:
    """:func:`sample_logit_products`; ``direct`` (``d_k < r``, ``d_k`` a Python int: it sets shapes) draws
    the factors, otherwise Bartlett's decomposition, where ``d_k`` may be a traced integer (one
    compilation serves every ``d_k >= r``)."""
    k1, k2 = jax.random.split(key)
    if direct:  # Wishart is singular; draw the factors directly (cheap when d_k is small)
        return jax.random.normal(k1, (r, d_k)) @ jax.random.normal(k2, (r, d_k)).T
    return jax.random.normal(k1, (r, r)) @ _bartlett(k2, r, d_k).T


def sample_logits(key: jax.Array, factor: jax.Array, d_in: int, d_k: int, scaling: str,
                  qk_std: float = 1.0) -> jax.Array:
    r"""One head's logits :math:`G` (:math:`S\times S`) for inputs with Gram factor ``factor``."""
    r = factor.shape[1]
    prod = sample_logit_products(key, r, d_k)
    norm = d_in * d_k ** SCALINGS[scaling]
    return qk_std / norm * factor @ prod @ factor.T


def sample_head_terms(key: jax.Array, factor: jax.Array, *, n: int, d_in: int, d_k: int, d_v: int,
                      scaling: str = "sqrt", position: int = 0) -> jax.Array:
    r"""``n`` i.i.d. draws of one head's (unnormalised) contribution to output channel 0 at ``position``.

    Only row :math:`p` = ``position`` of the logits enters, and it has a closed law (module
    docstring): with :math:`u^\top = L_p Z_Q \sim \mathcal N(0, \lVert L_p\rVert^2 I_{d_k})` and,
    given :math:`u`, :math:`Z_K u \sim \mathcal N(0, \lVert u\rVert^2 I_r)`,

    .. math::  G_{p,:} \overset{d}{=} \frac{\sigma_{QK}}{d_\mathrm{in} d_k^{\,p}}\,\lVert L_p\rVert
               \sqrt{\chi^2_{d_k}}\;(L h)^\top, \qquad h \sim \mathcal N(0, I_r),

    and the head's term is :math:`t = \sqrt{\chi^2_{d_v}}\; \operatorname{softmax}(G_{p,:})\, L g`
    with :math:`g \sim \mathcal N(0, I_r)` (all independent). Cost :math:`O(S r)` per draw: two
    chi-square and :math:`2r` normal variates. The layer's output with :math:`H` heads is
    :math:`\sum_{h=1}^H t_h / \sqrt{d_v H d_\mathrm{in}}` (:func:`sample_outputs`).
    """
    return _head_terms(key, factor, n=n, d_in=d_in, d_k=d_k, d_v=d_v, scaling=scaling, position=position)


@partial(jax.jit, static_argnames=("n", "d_in", "d_k", "d_v", "scaling", "position"))
def _head_terms(key, factor, *, n, d_in, d_k, d_v, scaling, position):
    k_chi_k, k_chi_v, k_h, k_g = jax.random.split(key, 4)
    chi_k = 2.0 * jax.random.gamma(k_chi_k, d_k / 2.0, (n,))
    chi_v = 2.0 * jax.random.gamma(k_chi_v, d_v / 2.0, (n,))
    r = factor.shape[1]
    h = jax.random.normal(k_h, (n, r))
    g = jax.random.normal(k_g, (n, r))
    scale = jnp.linalg.norm(factor[position]) * jnp.sqrt(chi_k) / (d_in * d_k ** SCALINGS[scaling])
    attn = jax.nn.softmax(scale[:, None] * (h @ factor.T), axis=-1)      # (n, S): row p of softmax(G)
    return jnp.sqrt(chi_v) * jnp.einsum("ns,ns->n", attn, g @ factor.T)


def sample_outputs(key: jax.Array, factor: jax.Array, *, n_draws: int, n_heads: int, d_in: int,
                   d_k: int, d_v: int, scaling: str = "sqrt", position: int = 0,
                   chunk: int = 1 << 18) -> np.ndarray:
    r"""``n_draws`` i.i.d. draws of output channel 0 at ``position`` of the layer at initialisation.

    Implements :math:`f_{p,0} = \frac{1}{\sqrt{d_v H d_\mathrm{in}}}\sum_{h=1}^{H} t_h` with the
    i.i.d. head terms :math:`t_h` of :func:`sample_head_terms` (:math:`\sigma_{QK}=\sigma_{OV}=1`).
    The head terms are drawn in chunks of ``chunk`` (one compilation serves every head count);
    returns a float64 numpy array.
    """
    total = int(n_draws) * int(n_heads)
    keys = jax.random.split(key, -(-total // chunk))
    terms = np.concatenate([np.asarray(sample_head_terms(k, factor, n=chunk, d_in=d_in, d_k=d_k, d_v=d_v,
                                                         scaling=scaling, position=position), np.float64)
                            for k in keys])[:total]
    return terms.reshape(int(n_draws), int(n_heads)).sum(axis=1) / np.sqrt(d_v * n_heads * d_in)


def sample_attention_weights(key: jax.Array, factor: jax.Array, *, n_draws: int, d_in: int, d_k: int,
                             scaling: str, seq_len: int) -> jax.Array:
    r"""Draws of the softmax attention matrices of one head, shape ``(n_draws, N, S, S)``.

    ``factor`` is the Gram factor of all :math:`N S` tokens of :math:`N` sequences of length
    ``seq_len`` stacked together, so one draw shares :math:`W^Q, W^K` across sequences (as a
    network does); logits are only formed within a sequence. The logits are those of
    :func:`sample_logits`; ``d_k`` (when :math:`d_k \ge r`) and the scale enter the compiled
    function as arguments, so one compilation serves every such ``d_k`` and both scalings.
    """
    r = int(factor.shape[1])
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {sorted(SCALINGS)}, got {scaling!r}")
    direct = int(d_k) < r
    coef = np.float32(1.0 / (d_in * d_k ** SCALINGS[scaling]))   # sample_logits' qk_std / norm (qk_std = 1)
    return _attention_weights(key, factor, jnp.int32(d_k), coef, n_draws=int(n_draws), seq_len=int(seq_len),
                              direct_dk=int(d_k) if direct else 0)


@partial(jax.jit, static_argnames=("n_draws", "seq_len", "direct_dk"))
def _attention_weights(key, factor, d_k, coef, *, n_draws, seq_len, direct_dk):
    n_seq = factor.shape[0] // seq_len
    r = factor.shape[1]

    def one_draw(k: jax.Array) -> jax.Array:
        prod = _logit_products(k, r, direct_dk if direct_dk else d_k, direct=bool(direct_dk))
        logits = coef * factor @ prod @ factor.T
        blocks = logits.reshape(n_seq, seq_len, n_seq, seq_len)
        within = jnp.stack([blocks[i, :, i, :] for i in range(n_seq)])
        return jax.nn.softmax(within, axis=-1)

    return jax.lax.map(one_draw, jax.random.split(key, n_draws), batch_size=64)
