r"""H1 -- single-head attention is non-Gaussian at initialisation; many heads are Gaussian.

Hron et al. (2020), Fig. 1: under the standard :math:`d^{-1/2}` scaling, the output of one
attention head at initialisation is a *scale mixture* of Gaussians (conditionally Gaussian given
the random attention weights :math:`\operatorname{softmax}(G)`), hence heavy-tailed:

.. math::  f \mid G \sim \mathcal N\big(0, \sigma^2(G)\big), \qquad
           \kappa_1 = 3\,\frac{\operatorname{Var}\sigma^2(G)}{(\mathbb E\sigma^2(G))^2} > 0 .

The :math:`H` heads of a layer are i.i.d. given the inputs and the output is their normalised sum,
so its excess kurtosis obeys the **heads law**

.. math::  \kappa_H = \kappa_1 / H

(fourth cumulants add, variances add). We draw the output (position 0, channel 0) of
:func:`ntkrepro.hron2020.attention.nt_attention_layer` for fixed inputs over independent weight
draws at each head count with the exact sampler :func:`~ntkrepro.hron2020.attention.sample_outputs`
and measure the excess kurtosis with a bootstrap over blocks of draws (whose replicates the H1
criterion refits, :func:`ntkrepro.hron2020.claims.evaluate_h1`), and, as a description, the
Kolmogorov-Smirnov distance to :math:`\mathcal N(0, \hat\sigma^2)` on the first ``ks_draws`` draws
against the 95th percentile of the same statistic on Gaussian samples of that size (variance
estimated too, i.e. Lilliefors).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from scipy import special, stats

from ntkrepro.hron2020.attention import gram_factor, sample_outputs
from ntkrepro.io import write_npz
from ntkrepro.run import RunContext
from ntkrepro.stats import Interval, bootstrap_ci

#: Blocks of draws resampled by the kurtosis bootstrap (at most; at least 10 draws per block).
N_BLOCKS = 1000


def excess_kurtosis(x: np.ndarray, axis: int = -1) -> np.ndarray:
    r"""Fisher excess kurtosis :math:`\mathbb E[(x-\mu)^4]/\sigma^4 - 3` (biased moments)."""
    return stats.kurtosis(x, axis=axis, fisher=True, bias=True)


def power_sums(x: np.ndarray, n_blocks: int) -> np.ndarray:
    r"""Per-block sums :math:`(n_b, \sum x, \sum x^2, \sum x^3, \sum x^4)` of ``x`` split into ``n_blocks``
    consecutive blocks, shape ``(n_blocks, 5)`` (float64)."""
    x = np.asarray(x, np.float64)
    return np.stack([np.array([b.size, b.sum(), (b**2).sum(), (b**3).sum(), (b**4).sum()])
                     for b in np.array_split(x, n_blocks)])


def kurtosis_from_sums(s: np.ndarray) -> np.ndarray:
    r"""Excess kurtosis (biased moments, as :func:`excess_kurtosis`) from power sums ``(..., 5)``:
    with :math:`\mu = S_1/n`, :math:`m_2 = S_2/n-\mu^2`,
    :math:`m_4 = S_4/n - 4\mu S_3/n + 6\mu^2 S_2/n - 3\mu^4`, :math:`\kappa = m_4/m_2^2 - 3`."""
    n, s1, s2, s3, s4 = (s[..., i] for i in range(5))
    mu = s1 / n
    m2 = s2 / n - mu**2
    m4 = s4 / n - 4 * mu * s3 / n + 6 * mu**2 * s2 / n - 3 * mu**4
    return m4 / m2**2 - 3.0


def kurtosis_bootstrap(x: np.ndarray, *, n_boot: int, seed: int, level: float = 0.95,
                       n_blocks: int = N_BLOCKS) -> tuple[Interval, np.ndarray]:
    r"""Excess kurtosis of i.i.d. draws ``x`` with a bootstrap over blocks of draws.

    The draws are split into ``min(n_blocks, len(x) // 10)`` consecutive blocks (i.i.d. draws make
    i.i.d. blocks); each replicate resamples blocks with replacement and recomputes the kurtosis
    from the pooled power sums (:func:`kurtosis_from_sums`). Returns the percentile interval and
    the ``n_boot`` replicates.
    """
    nb = max(2, min(n_blocks, np.asarray(x).size // 10))
    sums = power_sums(x, nb)
    rng = np.random.default_rng(seed)
    counts = np.stack([np.bincount(rng.integers(0, nb, nb), minlength=nb) for _ in range(n_boot)])
    reps = kurtosis_from_sums(counts.astype(np.float64) @ sums)
    a = (1 - level) / 2
    iv = Interval(float(kurtosis_from_sums(sums.sum(axis=0))), float(np.quantile(reps, a)),
                  float(np.quantile(reps, 1 - a)), level,
                  f"bootstrap over {nb} blocks of draws, {n_boot} resamples")
    return iv, reps


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


def draws_per_head(params: dict[str, Any]) -> list[int]:
    """``n_draws`` of the config: one integer for every head count, or one per head count."""
    heads, n = list(params["heads"]), params["n_draws"]
    if isinstance(n, (list, tuple)):
        if len(n) != len(heads):
            raise ValueError(f"H1: n_draws has {len(n)} entries for {len(heads)} head counts")
        return [int(v) for v in n]
    return [int(n)] * len(heads)


def run_h1(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Compute rule ``H1_hron2020_gaussianity``: draws, kurtosis (with bootstrap replicates) and KS
    distance per head count."""
    d, seq_len, seed = int(params["d"]), int(params["seq_len"]), int(params["seed"])
    n_boot, ks_draws = int(params["n_boot"]), int(params["ks_draws"])
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((seq_len, d))  # fixed inputs, one sequence of seq_len tokens
    factor = gram_factor(x)
    key = jax.random.PRNGKey(seed)
    rows, samples = [], {}
    for h, n in ctx.progress(list(zip(params["heads"], draws_per_head(params))), desc="H1 heads"):
        h = int(h)
        key, sub = jax.random.split(key)
        draws = sample_outputs(sub, factor, n_draws=n, n_heads=h, d_in=d, d_k=d, d_v=d, scaling="sqrt")
        kurt, reps = kurtosis_bootstrap(draws, n_boot=n_boot, seed=seed + h)
        first = draws[:ks_draws]
        ks = bootstrap_ci(first, ks_to_gaussian, n_boot=max(100, n_boot // 5), seed=seed + h)
        rows.append({"heads": h, "n_draws": int(n), "variance": float(np.var(draws)), "kurtosis": kurt.as_dict(),
                     "kurtosis_boot": reps.tolist(), "ks": ks.as_dict()})
        samples[f"heads_{h}"] = first.astype(np.float32)
    ks_n = min(ks_draws, min(r["n_draws"] for r in rows))
    null = ks_null_quantile(ks_n, int(params["n_null"]), seed + 1)
    write_npz(ctx.outputs["samples"], samples, provenance=ctx.provenance())
    return {"claim": "H1", "d": d, "seq_len": seq_len, "n_draws": [r["n_draws"] for r in rows],
            "ks_draws": ks_n, "ks_null_95": null, "per_heads": rows}
