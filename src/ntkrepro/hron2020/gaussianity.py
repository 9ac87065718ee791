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

**The scale mixture's kurtosis** (the theory's prediction, :func:`scale_mixture_kurtosis`). Given
the softmax row :math:`a` and :math:`\chi^2_{d_v}` (:func:`~ntkrepro.hron2020.attention.sample_head_terms`),
one head's term is :math:`\mathcal N(0, \chi^2_{d_v}\, q)` with :math:`q = \lVert L^\top a\rVert^2`,
so :math:`\kappa_1 = 3\big[(1 + 2/d_v)\,\mathbb E q^2 / (\mathbb E q)^2 - 1\big]`, computed from draws
of the attention row alone (independent of the output draws). The H1 criterion's 1-head part
decides between this prediction and the Gaussian's 0 at their midpoint.

**Negative controls** (stored under ``controls``, same layout, judged by the same criterion):
``gaussian_draws`` -- at every head count, Gaussian draws with the measured variance (one head
is then not a scale mixture); ``shared_heads`` -- the layer whose heads share one weight draw,
i.e. :math:`\sqrt H` times a one-head output (the heads are not independent, so the kurtosis
does not fall as :math:`\kappa_1/H`; its 1-head row is the real one, the others fresh draws).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from scipy import special, stats

from ntkrepro.hron2020.attention import SCALINGS, gram_factor, sample_outputs
from ntkrepro.io import write_npz
from ntkrepro.run import RunContext
from ntkrepro.stats import Interval, bootstrap_ci

#: Blocks of draws resampled by the kurtosis bootstrap (at most; at least 10 draws per block).
N_BLOCKS = 1000
#: Attention-row draws behind the scale mixture's predicted kurtosis (in MIXTURE_CHUNKS chunks; its
#: Monte Carlo standard error is recorded, about 1% of the value).
MIXTURE_DRAWS = 1 << 18
MIXTURE_CHUNKS = 8


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


def _mixture_q(rng: np.random.Generator, factor: np.ndarray, *, n: int, d_in: int, d_k: int,
               position: int = 0) -> np.ndarray:
    r""":math:`q = \lVert L^\top a\rVert^2` for ``n`` draws of the softmax row :math:`a` of one
    :math:`d^{-1/2}` head at ``position`` (the law of :func:`~ntkrepro.hron2020.attention.sample_head_terms`)."""
    factor = np.asarray(factor, np.float64)
    chi_k = rng.chisquare(d_k, n)
    h = rng.standard_normal((n, factor.shape[1]))
    scale = np.linalg.norm(factor[position]) * np.sqrt(chi_k) / (d_in * d_k ** SCALINGS["sqrt"])
    attn = special.softmax(scale[:, None] * (h @ factor.T), axis=-1)
    return np.sum((attn @ factor) ** 2, axis=-1)


def scale_mixture_kurtosis(seed: int | Sequence[int], factor: np.ndarray, *, d_in: int, d_k: int, d_v: int,
                           n: int = MIXTURE_DRAWS, chunks: int = MIXTURE_CHUNKS) -> dict[str, float]:
    r"""Predicted 1-head excess kurtosis of the scale mixture (module docstring),
    :math:`3[(1+2/d_v)\,\mathbb E q^2/(\mathbb E q)^2 - 1]`, from ``n`` attention-row draws (numpy
    generator ``seed``); ``se`` is the standard error from the spread of the estimate over ``chunks``
    equal chunks."""
    rng = np.random.default_rng(seed)
    m = n // chunks
    moments = np.array([[q.mean(), (q ** 2).mean()] for q in
                        (_mixture_q(rng, factor, n=m, d_in=d_in, d_k=d_k) for _ in range(chunks))])

    def kappa(mom):
        return 3.0 * ((1.0 + 2.0 / d_v) * mom[1] / mom[0] ** 2 - 1.0)

    per_chunk = [kappa(row) for row in moments]
    return {"value": float(kappa(moments.mean(axis=0))), "se": float(np.std(per_chunk, ddof=1) / np.sqrt(chunks)),
            "n_draws": int(m * chunks)}


def head_row(h: int, draws: np.ndarray, *, n_boot: int, ks_draws: int, seed: int) -> dict[str, Any]:
    """One head count's row of the H1 results: kurtosis (bootstrap interval and replicates) and KS
    distance (bootstrap interval, on the first ``ks_draws`` draws) of ``draws``."""
    kurt, reps = kurtosis_bootstrap(draws, n_boot=n_boot, seed=seed + h)
    ks = bootstrap_ci(draws[:ks_draws], ks_to_gaussian, n_boot=max(100, n_boot // 5), seed=seed + h)
    return {"heads": int(h), "n_draws": int(draws.size), "variance": float(np.var(draws)), "kurtosis": kurt.as_dict(),
            "kurtosis_boot": reps.tolist(), "ks": ks.as_dict()}


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
    distance per head count; the scale mixture's predicted 1-head kurtosis; and the negative
    controls ``gaussian_draws`` and ``shared_heads`` in the same layout (module docstring)."""
    d, seq_len, seed = int(params["d"]), int(params["seq_len"]), int(params["seed"])
    n_boot, ks_draws = int(params["n_boot"]), int(params["ks_draws"])
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((seq_len, d))  # fixed inputs, one sequence of seq_len tokens
    factor = gram_factor(x)
    key = jax.random.PRNGKey(seed)
    rows, samples, one_head = [], {}, None
    plan = [(int(h), int(n)) for h, n in zip(params["heads"], draws_per_head(params))]
    for h, n in ctx.progress(plan, desc="H1 heads"):
        key, sub = jax.random.split(key)
        draws = sample_outputs(sub, factor, n_draws=n, n_heads=h, d_in=d, d_k=d, d_v=d, scaling="sqrt")
        rows.append(head_row(h, draws, n_boot=n_boot, ks_draws=ks_draws, seed=seed))
        samples[f"heads_{h}"] = draws[:ks_draws].astype(np.float32)
        if h == 1:
            one_head = draws
    ks_n = min(ks_draws, min(r["n_draws"] for r in rows))
    null = ks_null_quantile(ks_n, int(params["n_null"]), seed + 1)
    write_npz(ctx.outputs["samples"], samples, provenance=ctx.provenance())
    # the theory's prediction for these inputs, from attention rows alone (its own key)
    mixture = scale_mixture_kurtosis([seed, 1], factor, d_in=d, d_k=d, d_v=d)
    base = {"claim": "H1", "d": d, "seq_len": seq_len, "n_draws": [r["n_draws"] for r in rows],
            "ks_draws": ks_n, "ks_null_95": null, "scale_mixture_kurtosis_1_head": mixture}
    # negative controls: Gaussian draws of the measured variance; heads sharing one weight draw
    g_rng = np.random.default_rng([seed, 21])
    gauss = [head_row(r["heads"], np.sqrt(r["variance"]) * g_rng.standard_normal(r["n_draws"]), n_boot=n_boot,
                      ks_draws=ks_draws, seed=seed) for r in rows]
    c_key = jax.random.fold_in(jax.random.PRNGKey(seed), 2)
    shared = []
    for h, n in ctx.progress(plan, desc="H1 control: shared heads"):
        if h == 1 and one_head is not None:
            shared.append(rows[[r["heads"] for r in rows].index(1)])  # one head: the layer itself
            continue
        c_key, sub = jax.random.split(c_key)
        one = sample_outputs(sub, factor, n_draws=n, n_heads=1, d_in=d, d_k=d, d_v=d, scaling="sqrt")
        shared.append(head_row(h, np.sqrt(h) * one, n_boot=n_boot, ks_draws=ks_draws, seed=seed))
    return {**base, "per_heads": rows,
            "controls": {"gaussian_draws": {**base, "per_heads": gauss},
                         "shared_heads": {**base, "per_heads": shared}}}
