r"""H3's second decisive plan (issue 38 item 3, ``config/decisive.yaml`` ``H3.dk``): key/query dimension growing
with width, and the empirical NNGP with its readout integrated exactly.

The first decisive plan (``H3``: :func:`ntkrepro.hron2020.convergence.run_h3_cell`, widths 1024-4096 with
heads 32-128, i.e. 32 channels per head) came out inconclusive: the NTK distance falls, the NNGP distance
levels off near 0.05. Two things differ from the analytic limit there:

1. the key/query dimension :math:`d_k` (``n_chan_key`` of ``stax.GlobalSelfAttention``) stays 32, while
   neural-tangents' ``kernel_fn`` is the limit as the heads AND the key/query dimension grow (under the
   :math:`d^{-1}` scaling the logits converge to a constant only as :math:`d_k \to \infty`);
2. the empirical NNGP :math:`\frac1S\sum_s \frac1{n_\mathrm{out}} f_s f_s^\top` projects the last hidden
   features :math:`\phi` (GAP output, width :math:`n`) on :math:`S\,n_\mathrm{out}` = 16 x 64 random readout
   directions: a Monte Carlo error of the readout that does NOT shrink with the width (given :math:`\phi`,
   :math:`\mathrm{Var}[(f f^\top)_{ab}]/n_\mathrm{out}` is of the order of :math:`K_{ab}^2/n_\mathrm{out}`
   at every width).

Measured before this plan (2026-12-06, shared 2-core CPU under load, 6 replicates of 16 samples at width
1024, 32 heads, :math:`d_k = 32`): NNGP distance median 0.077 with 64 readout channels, 0.028 with 1024,
0.016 with the readout integrated; at :math:`d_k` = 8 / 32 / 128 (readout integrated) 0.019 / 0.016 / 0.026,
no trend within the noise. So the plateau of the first plan is the readout's Monte Carlo floor, not (at
this resolution) a :math:`d_k` bias. This plan removes the floor and keeps the network inside the limit:

* the network is :func:`~ntkrepro.hron2020.convergence.attention_net` at a FIXED head count (32, as in
  neural-tangents' own test), so the per-head key/query and value dimensions grow with the width,
  :math:`d_k = d_v = n/32` (32 / 64 / 128 at widths 1024 / 2048 / 4096): the same parameter count per width
  as the first plan (:math:`n \cdot d_k \cdot h = n^2`);
* the empirical NNGP per initialisation is :math:`\hat K_s = \sigma_w^2\,\phi_s \phi_s^\top / n`, the exact
  expectation of :math:`f f^\top / n_\mathrm{out}` over the readout (``Dense(n_out, W_std=sigma_w, b_std=0)``)
  given the hidden features (:func:`feature_net`: the network without its readout); the same finite
  network's NNGP, estimated without the readout's Monte Carlo error. The empirical NTK is unchanged
  (one-channel readout, ``nt.empirical_ntk_fn``; its readout block is already exact).

Inputs, analytic kernels, the 3 %-off control, the replicate loop and the cell layout are the first
plan's (:func:`~ntkrepro.hron2020.convergence._setup`, ``_replicates``, ``_heads``,
:func:`~ntkrepro.hron2020.convergence.aggregate_h3`), judged by H3's unchanged criterion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ntkrepro.run import RunContext

#: This plan's key in config/decisive.yaml and in ntkrepro.decisive_cells.COMPUTE_CODE (archive/decisive/H3.dk/).
PLAN = "H3.dk"
#: Recorded in each cell's ``base``: how the empirical NNGP was estimated.
NNGP_ESTIMATOR = "readout integrated exactly: sigma_w^2 phi phi^T / n per initialisation (n_out -> infinity)"


def feature_net(width: int, n_heads: int, arch: Mapping[str, Any]):
    """``(init_fn, apply_fn, kernel_fn)`` of :func:`~ntkrepro.hron2020.convergence.attention_net` without its
    readout ``Dense``: the hidden features :math:`\\phi` (GAP output, ``width`` channels). Its parameters are
    the first five of ``attention_net``'s (tested equal: ``tests/test_h3_decisive.py``)."""
    from ntkrepro.nt import stax

    if width % n_heads:
        raise ValueError(f"width {width} must be a multiple of n_heads {n_heads}")
    per_head = width // n_heads
    return stax.serial(
        stax.Conv(width, (3, 3), padding="SAME", W_std=float(arch.get("W_std", 2 ** 0.5)),
                  b_std=float(arch.get("b_std", 0.05))),
        stax.Relu(),
        stax.GlobalSelfAttention(width, per_head, per_head, n_heads, linear_scaling=True,
                                 attention_mechanism=str(arch.get("attention_mechanism", "SOFTMAX"))),
        stax.Relu(),
        stax.GlobalAvgPool(),
    )


def make_estimator_exact_readout(x: np.ndarray, width: int, n_heads: int, arch: Mapping[str, Any], n_samples: int):
    r"""A jitted ``key -> (K_hat, Theta_hat)`` over ``n_samples`` initialisations: the NNGP with the readout
    integrated exactly (:math:`\sigma_w^2 \phi\phi^\top/n`, module docstring), the NTK as
    :func:`~ntkrepro.hron2020.convergence.make_estimator` (an independent one-channel network)."""
    import jax
    import jax.numpy as jnp

    from ntkrepro.hron2020.convergence import attention_net
    from ntkrepro.nt import nt

    init_a, apply_a, _ = feature_net(width, n_heads, arch)
    init_b, apply_b, _ = attention_net(width, n_heads, arch, 1)
    w2 = float(arch.get("readout_W_std", 1.0)) ** 2
    ntk_fn = nt.empirical_ntk_fn(apply_b, trace_axes=(-1,), vmap_axes=0)
    xj = jnp.asarray(x)

    def one(k):
        ka, kb = jax.random.split(k)
        _, pa = init_a(ka, xj.shape)
        phi = apply_a(pa, xj)
        _, pb = init_b(kb, xj.shape)
        return w2 * (phi @ phi.T) / phi.shape[-1], ntk_fn(xj, None, pb)

    @jax.jit
    def estimate(key):
        nngp, ntk = jax.lax.map(one, jax.random.split(key, n_samples))
        return nngp.mean(axis=0), ntk.mean(axis=0)

    return estimate


def run_h3dk_cell(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Decisive cell of ``H3.dk`` (config/decisive.yaml: ``cell: [widths, chunks]``): ``replicates_per_chunk``
    independent estimates at one ``width`` (its heads from ``n_heads``; key/query and value dimension
    ``width / heads``), NNGP with the readout integrated (:func:`make_estimator_exact_readout`). Keys from
    ``fold_in(PRNGKey(seed), 1000 * width + chunk)`` as the first plan's; the record has the first plan's
    layout (:func:`~ntkrepro.hron2020.convergence.aggregate_h3` assembles it) and ``claim`` H3."""
    import time

    import jax

    from ntkrepro import decisive
    from ntkrepro.hron2020.convergence import _heads, _replicates, _setup

    width, chunk = int(params["width"]), int(params["chunk"])
    heads = _heads(params)
    if len(params["chunks"]) * int(params["replicates_per_chunk"]) != int(params["n_replicates"]):
        raise ValueError(f"H3.dk cell: {len(params['chunks'])} chunks x replicates_per_chunk "
                         f"{params['replicates_per_chunk']} != n_replicates {params['n_replicates']}")
    if width not in heads:
        raise ValueError(f"H3.dk cell: width {width} is not one of widths {sorted(heads)}")
    if "n_out" in params["arch"]:
        raise ValueError("H3.dk: the NNGP readout is integrated exactly; arch.n_out has no meaning here")
    t0 = time.process_time()
    setup = _setup(params, ctx)
    arch = setup["base"]["arch"]
    estimate = make_estimator_exact_readout(setup["x"], width, heads[width], arch, int(params["n_samples"]))
    key = jax.random.fold_in(jax.random.PRNGKey(int(params["seed"])), 1000 * width + chunk)
    _, dist = _replicates(estimate, key, int(params["replicates_per_chunk"]), setup)
    base = {k: v for k, v in setup["base"].items() if k != "n_replicates"}
    base["nngp_estimator"] = NNGP_ESTIMATOR
    base["key_dims"] = {str(w): w // h for w, h in sorted(heads.items())}
    return {"claim": "H3", "plan": PLAN, "cell": {"width": width, "chunk": chunk}, "n_heads": heads[width],
            "n_key": width // heads[width], "base": base, "analytic_offset": setup["offset"], **dist,
            "cpu_seconds": round(time.process_time() - t0, 2), "compute_code": decisive.compute_code_hash(PLAN)}
