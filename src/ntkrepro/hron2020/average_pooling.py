r"""H2 -- under :math:`d^{-1}` scaling, attention collapses to global average pooling.

Hron et al. (2020), Sec. 3: with logits :math:`G = \frac{1}{d_\mathrm{in} d}(XW^Q)(XW^K)^\top` and
independent :math:`W^Q, W^K`, each logit is an average of :math:`d` independent zero-mean terms,
so :math:`G = O(d^{-1/2}) \to 0` and :math:`\operatorname{softmax}(G) \to \frac1S \mathbf 1\mathbf 1^\top`:
the layer becomes global average pooling (GAP), whatever the weights' initial variance.

Two measurements, each against the key/query dimension :math:`d`:

* **spread** of the attention weights around uniform,
  :math:`s(d) = \mathbb E\big[S\cdot\operatorname{std}_j A_{ij}\big]` (0 for GAP), expected
  :math:`\propto d^{-1/2}`;
* **NNGP distance** :math:`\lVert K_\mathrm{att}(d) - K_\mathrm{GAP}\rVert_F / \lVert K_\mathrm{GAP}\rVert_F`
  between the NNGP of the network attention :math:`\to` GAP (infinitely many value channels and
  heads, finite :math:`d`) and neural-tangents' analytic NNGP of the GAP network. Given the
  attention matrices the network is linear-Gaussian in the values, so
  :math:`K_\mathrm{att}(x, x') = \mathbb E_A\big[\bar a(x)^\top \tfrac{X X'^\top}{d_\mathrm{in}} \bar a(x')\big]`
  with :math:`\bar a = \frac1S\mathbf 1^\top A` (GAP after attention), estimated over draws of
  :math:`A` shared by all inputs (as in one network).

For contrast we also report neural-tangents' ``linear_scaling=True`` kernel, which *ties*
:math:`W^Q = W^K` to keep non-uniform attention in the limit. The criterion is
:func:`ntkrepro.hron2020.claims.evaluate_h2`.

**Negative control** ``sqrt_scaling`` (stored under ``controls``, same layout, judged by the same
criterion): the same measurements with the standard :math:`d^{-1/2}` logits. Each logit is then a
sum of :math:`d` terms divided by :math:`\sqrt d`, of order one at every :math:`d`: the attention
weights keep a spread that does not shrink, and the layer does not become GAP.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ntkrepro.hron2020.attention import gram_factor, sample_attention_weights
from ntkrepro.nt import stax
from ntkrepro.run import RunContext
from ntkrepro.stats import bootstrap_ci, rel_frobenius


def attention_spread(attn: np.ndarray) -> np.ndarray:
    r"""Per-draw spread :math:`\operatorname{mean}_{n,i} S\cdot\operatorname{std}_j A_{nij}` of ``(draws, N, S, S)``."""
    s = attn.shape[-1]
    return s * attn.std(axis=-1).mean(axis=(1, 2))


def attention_gap_nngp_draws(attn: np.ndarray, x: np.ndarray) -> np.ndarray:
    r"""Per-draw :math:`\bar a_n^\top X_n X_m^\top \bar a_m / d_\mathrm{in}`, shape ``(draws, N, N)``."""
    abar = attn.mean(axis=2)  # (draws, N, S): average over query positions (GAP after attention)
    pooled = np.einsum("dns,nsc->dnc", abar, x)  # (draws, N, d_in)
    return np.einsum("dnc,dmc->dnm", pooled, pooled) / x.shape[-1]


def gap_nngp(x: np.ndarray) -> np.ndarray:
    """Analytic NNGP of Dense -> GlobalAvgPool (neural-tangents), inputs ``(N, S, d_in)``."""
    _, _, kernel_fn = stax.serial(stax.Dense(1, W_std=1.0), stax.GlobalAvgPool())
    return np.asarray(kernel_fn(jnp.asarray(x), None, "nngp"), np.float64)


def tied_linear_scaling_nngp(x: np.ndarray) -> np.ndarray:
    """neural-tangents' analytic NNGP with ``linear_scaling=True`` (tied Q/K) -> GAP, for contrast."""
    _, _, kernel_fn = stax.serial(stax.GlobalSelfAttention(1, 1, 1, 1, linear_scaling=True),
                                  stax.GlobalAvgPool())
    return np.asarray(kernel_fn(jnp.asarray(x), None, "nngp"), np.float64)


def measure_per_d(x: np.ndarray, factor: np.ndarray, k_gap: np.ndarray, params: dict[str, Any], key: jax.Array,
                  ctx: RunContext, *, scaling: str, desc: str) -> list[dict[str, Any]]:
    """Spread and NNGP distance (bootstrap intervals over draws) at every d of ``params["d_values"]``
    with logit scaling ``scaling``; bootstrap seeds as in :func:`run_h2`."""
    seed, d_in, seq_len = int(params["seed"]), int(params["d_in"]), int(params["seq_len"])
    modulus = int(params["d_seed_modulus"])
    rows = []
    for d in ctx.progress(params["d_values"], desc=desc):
        key, sub = jax.random.split(key)
        attn = np.asarray(sample_attention_weights(sub, factor, n_draws=int(params["n_draws"]), d_in=d_in,
                                                   d_k=int(d), scaling=scaling, seq_len=seq_len), np.float64)
        spread = bootstrap_ci(attention_spread(attn), n_boot=int(params["n_boot"]), seed=seed + int(d) % modulus)
        per_draw = attention_gap_nngp_draws(attn, x)
        dist = bootstrap_ci(per_draw, lambda k: rel_frobenius(k.mean(axis=0), k_gap), n_boot=int(params["n_boot"]),
                            seed=seed + 1 + int(d) % modulus)
        rows.append({"d": int(d), "spread": spread.as_dict(), "nngp_distance": dist.as_dict()})
    return rows


def run_h2(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Compute rule ``H2_hron2020_average_pooling``: spread and NNGP distance for each d, under the
    claim's d^-1 logits and, as the negative control ``sqrt_scaling``, under d^-1/2 logits.

    The bootstraps at dimension ``d`` are seeded ``seed + d mod d_seed_modulus`` (spread) and
    ``seed + 1 + d mod d_seed_modulus`` (distance); the control's weight draws use their own key.
    """
    seed, d_in, seq_len, n_inputs = (int(params[k]) for k in ("seed", "d_in", "seq_len", "n_inputs"))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_inputs, seq_len, d_in))
    factor = gram_factor(x.reshape(n_inputs * seq_len, d_in))
    k_gap = gap_nngp(x)
    rows = measure_per_d(x, factor, k_gap, params, jax.random.PRNGKey(seed), ctx, scaling="linear", desc="H2 d")
    control = measure_per_d(x, factor, k_gap, params, jax.random.fold_in(jax.random.PRNGKey(seed), 21), ctx,
                            scaling="sqrt", desc="H2 control: d^-1/2 logits")
    base = {"claim": "H2", "d_in": d_in, "seq_len": seq_len, "n_inputs": n_inputs,
            "n_draws": int(params["n_draws"]),
            "tied_linear_scaling_distance": rel_frobenius(tied_linear_scaling_nngp(x), k_gap)}
    return {**base, "per_d": rows, "controls": {"sqrt_scaling": {**base, "per_d": control}}}
