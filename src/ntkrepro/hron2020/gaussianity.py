r"""H1 -- single-head attention is non-Gaussian at initialisation; many heads are Gaussian.

Hron et al. (2020), Fig. 1: under the standard :math:`d^{-1/2}` scaling, the output of one
attention head at initialisation is a *scale mixture* of Gaussians (conditionally Gaussian given
the random attention weights :math:`\operatorname{softmax}(G)`), hence heavy-tailed:

.. math::  f \mid G \sim \mathcal N\big(0, \sigma^2(G)\big), \qquad
           \kappa(f) = 3\,\frac{\operatorname{Var}\sigma^2(G)}{(\mathbb E\sigma^2(G))^2} > 0,

while a sum over :math:`H` independent heads has excess kurtosis :math:`\kappa/H \to 0`.

We draw the output (position 0, channel 0) of :func:`ntkrepro.hron2020.attention.nt_attention_layer`
for fixed inputs over ``n_draws`` weight draws with the exact sampler
:func:`~ntkrepro.hron2020.attention.sample_outputs`, for each head count, and measure the excess
kurtosis and the Kolmogorov-Smirnov distance to :math:`\mathcal N(0, \hat\sigma^2)` (bootstrap
CIs). The KS null level is the 95th percentile of the same statistic on Gaussian samples of the
same size (variance estimated too, i.e. Lilliefors).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from scipy import special, stats

from ntkrepro.hron2020.attention import gram_factor, sample_outputs
from ntkrepro.io import write_npz
from ntkrepro.ledger import ClaimSpec, Evaluation, Results, decide, register
from ntkrepro.run import RunContext
from ntkrepro.stats import Interval, bootstrap_ci


def excess_kurtosis(x: np.ndarray, axis: int = -1) -> np.ndarray:
    r"""Fisher excess kurtosis :math:`\mathbb E[(x-\mu)^4]/\sigma^4 - 3` (biased moments)."""
    return stats.kurtosis(x, axis=axis, fisher=True, bias=True)


def ks_to_gaussian(x: np.ndarray) -> float:
    r"""KS distance :math:`\sup_t |F_n(t) - \Phi(t/\hat\sigma)|` to the zero-mean Gaussian of equal variance."""
    x = np.sort(np.asarray(x, np.float64))
    n = x.size
    cdf = special.ndtr(x / np.sqrt(np.mean(x**2)))
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - cdf), np.max(cdf - (i - 1) / n)))


def ks_null_quantile(n: int, reps: int, seed: int, q: float = 0.95) -> float:
    """``q``-quantile of :func:`ks_to_gaussian` on ``reps`` Gaussian samples of size ``n``."""
    rng = np.random.default_rng(seed)
    return float(np.quantile([ks_to_gaussian(rng.standard_normal(n)) for _ in range(reps)], q))


def run_h1(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Compute rule ``H1_hron2020_gaussianity``: draws, kurtosis and KS distance per head count."""
    d, seq_len, seed = int(params["d"]), int(params["seq_len"]), int(params["seed"])
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((seq_len, d))  # fixed inputs, one sequence of seq_len tokens
    factor = gram_factor(x)
    key = jax.random.PRNGKey(seed)
    rows, samples = [], {}
    for h in ctx.progress(params["heads"], desc="H1 heads"):
        key, sub = jax.random.split(key)
        draws = np.asarray(sample_outputs(sub, factor, n_draws=int(params["n_draws"]), n_heads=int(h),
                                          d_in=d, d_k=d, d_v=d, scaling="sqrt"), np.float64)
        kurt = bootstrap_ci(draws, excess_kurtosis, n_boot=int(params["n_boot"]), seed=seed + h)
        ks = bootstrap_ci(draws, ks_to_gaussian, n_boot=max(100, int(params["n_boot"]) // 5), seed=seed + h)
        rows.append({"heads": int(h), "variance": float(np.var(draws)), "kurtosis": kurt.as_dict(),
                     "ks": ks.as_dict()})
        samples[f"heads_{h}"] = draws.astype(np.float32)
    null = ks_null_quantile(int(params["n_draws"]), int(params["n_null"]), seed + 1)
    write_npz(ctx.outputs["samples"], samples, provenance=ctx.provenance())
    return {"claim": "H1", "d": d, "seq_len": seq_len, "n_draws": int(params["n_draws"]),
            "ks_null_95": null, "per_heads": rows}


_H1 = ClaimSpec(
    id="H1",
    paper="hron2020",
    statement=("At initialisation under d^-1/2 scaling, single-head attention output is non-Gaussian "
               "(a scale mixture) at d=1000; with many heads (100) it matches a Gaussian."),
    criterion=("Over n_draws weight draws of one output coordinate: reproduced iff (a) 1 head: excess "
               "kurtosis 95% bootstrap CI > 0 and KS distance to N(0, var) above the 95% Gaussian null "
               "level; (b) most heads: KS distance <= the null level and kurtosis CI contains 0 or lies "
               "below 0.1 x the 1-head kurtosis; (c) kurtosis CI at most heads lies wholly below the "
               "1-head CI. Not reproduced iff the 1-head kurtosis CI lies wholly below 0.05 (one head "
               "demonstrably near-Gaussian), or the "
               "most-heads kurtosis CI lies above half the 1-head kurtosis, or the most-heads KS "
               "distance exceeds twice the null level. Otherwise inconclusive."),
)


@register(_H1)
def evaluate_h1(results: Results, scale: str) -> Evaluation:
    """Apply the pre-registered H1 criterion to ``H1_gaussianity`` results."""
    r = results["H1_gaussianity"]
    rows = sorted(r["per_heads"], key=lambda row: row["heads"])
    one, most = rows[0], rows[-1]
    if one["heads"] != 1:
        raise ValueError("H1 needs the head sweep to include 1 head")
    k1, km = Interval.from_dict(one["kurtosis"]), Interval.from_dict(most["kurtosis"])
    ks1, ksm = one["ks"]["value"], most["ks"]["value"]
    null = r["ks_null_95"]
    nongauss_one = k1.above(0.0) and ks1 > null
    gauss_most = ksm <= null and (km.contains(0.0) or km.below(0.1 * k1.value))
    decreasing = km.high < k1.low
    refuted = (k1.high < 0.05) or (km.low > 0.5 * k1.value) or (ksm > 2 * null)
    verdict = decide(reproduced=nongauss_one and gauss_most and decreasing, refuted=refuted)
    reason = (f"1 head: kurtosis {k1.value:.3f} [{k1.low:.3f}, {k1.high:.3f}], KS {ks1:.4f} vs null {null:.4f}; "
              f"{most['heads']} heads: kurtosis {km.value:.4f} [{km.low:.4f}, {km.high:.4f}], KS {ksm:.4f}.")
    subs = [] if scale == "paper" else [f"n_draws={r['n_draws']} weight draws per head count (reduced)"]
    return Evaluation(
        measured={"kurtosis_1_head": k1, f"kurtosis_{most['heads']}_heads": km, "ks_1_head": Interval.from_dict(one["ks"]),
                  f"ks_{most['heads']}_heads": Interval.from_dict(most["ks"]), "ks_null_95": null,
                  "kurtosis_by_heads": {str(row["heads"]): row["kurtosis"]["value"] for row in rows}},
        verdict=verdict, reason=reason, substitutes=subs,
        data=[f"synthetic Gaussian inputs: {r['seq_len']} tokens x d={r['d']}"])
