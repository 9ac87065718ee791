r"""H3 -- empirical NNGP/NTK of finite attention networks converge to the analytic kernels.

Hron et al. (2020), App. A, compare the empirical kernels of finite networks with the theoretical
ones on the training set through the log of a kernel-matrix distance. Here the network is

    ``Conv(n, 3x3, SAME) -> ReLU -> GlobalSelfAttention(n, n/h, n/h, h heads; d^-1 scaling,
    tied Q/K) -> ReLU -> GlobalAvgPool -> Dense(n_out)``

(neural-tangents ``stax``, NTK parameterisation) with width :math:`n` and :math:`h` heads growing
together. For inputs :math:`X` (CIFAR-10 training images, downsampled and standardised):

* empirical NNGP: :math:`\hat K = \frac1{S}\sum_{s=1}^{S} \frac1{n_\mathrm{out}} f_{\theta_s}(X) f_{\theta_s}(X)^\top`
  over :math:`S` independent initialisations :math:`\theta_s` (readout with ``n_out`` channels);
* empirical NTK: :math:`\hat\Theta = \frac1S\sum_s J_{\theta_s}(X) J_{\theta_s}(X)^\top` (readout
  with one channel, ``nt.empirical_ntk_fn``);
* distance :math:`D = \lVert \hat K - K\rVert_F / \lVert K \rVert_F` against neural-tangents'
  analytic ``kernel_fn`` (same for :math:`\Theta`).

Each width gets ``n_replicates`` independent estimates; the claim's slope is the OLS slope of
:math:`\log \mathrm{median}(D)` on :math:`\log n` with a bootstrap over replicates
(:func:`ntkrepro.stats.bootstrap_slope`). The Monte Carlo error of :math:`S` samples is part of
:math:`D` (it shrinks with width too, since each draw concentrates).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from ntkrepro.ledger import ClaimSpec, Evaluation, Results, decide, register
from ntkrepro.run import RunContext
from ntkrepro.stats import Interval, bootstrap_slope

log = logging.getLogger("ntkrepro.hron2020")


def attention_net(width: int, n_heads: int, arch: Mapping[str, Any], n_out: int = 1):
    """``(init_fn, apply_fn, kernel_fn)`` of the H3 network (module docstring)."""
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
        stax.Dense(n_out, W_std=1.0, b_std=0.0),
    )


def make_estimator(x: np.ndarray, width: int, n_heads: int, arch: Mapping[str, Any], n_samples: int,
                   n_out_nngp: int):
    r"""A jitted ``key -> (K_hat, Theta_hat)``: Monte Carlo over ``n_samples`` initialisations
    (module docstring), compiled once per width and reused for every replicate."""
    import jax
    import jax.numpy as jnp

    from ntkrepro.nt import nt

    init_a, apply_a, _ = attention_net(width, n_heads, arch, n_out_nngp)
    init_b, apply_b, _ = attention_net(width, n_heads, arch, 1)
    ntk_fn = nt.empirical_ntk_fn(apply_b, trace_axes=(-1,), vmap_axes=0)
    xj = jnp.asarray(x)

    def one(k):
        ka, kb = jax.random.split(k)
        _, pa = init_a(ka, xj.shape)
        f = apply_a(pa, xj)
        _, pb = init_b(kb, xj.shape)
        return f @ f.T / f.shape[-1], ntk_fn(xj, None, pb)

    @jax.jit
    def estimate(key):
        nngp, ntk = jax.lax.map(one, jax.random.split(key, n_samples))
        return nngp.mean(axis=0), ntk.mean(axis=0)

    return estimate


def rel_fro(a: np.ndarray, b: np.ndarray) -> float:
    r""":math:`\lVert a - b\rVert_F / \lVert b\rVert_F`."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def run_h3(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Compute rule ``H3_hron2020_kernel_convergence``: distances per width and replicate."""
    import jax

    from ntkrepro.hron2020.cifar10 import load_splits

    widths, heads = [int(w) for w in params["widths"]], [int(h) for h in params["n_heads"]]
    if len(widths) != len(heads):
        raise ValueError("H3: widths and n_heads must have the same length")
    seed = int(params["seed"])
    arch = dict(params["arch"])
    d = load_splits({**params, "n_train": int(params["n_inputs"]), "n_val": 0}, ctx, need_test=False)
    x = d["x_train"]
    kfn = attention_net(8, 1, arch)[2]
    analytic = kfn(x, None, ("nngp", "ntk"))
    k_nngp, k_ntk = np.asarray(analytic.nngp, np.float64), np.asarray(analytic.ntk, np.float64)
    n_out = int(arch.get("n_out", 1))
    key = jax.random.PRNGKey(seed)
    rows = []
    for w, h in ctx.progress(list(zip(widths, heads)), desc="H3 widths"):
        dn, dt = [], []
        estimate = make_estimator(x, w, h, arch, int(params["n_samples"]), n_out)
        for r in range(int(params["n_replicates"])):
            key, sub = jax.random.split(key)
            e_k, e_t = (np.asarray(v, np.float64) for v in estimate(sub))
            dn.append(rel_fro(e_k, k_nngp))
            dt.append(rel_fro(e_t, k_ntk))
        rows.append({"width": w, "n_heads": h, "nngp_distance": dn, "ntk_distance": dt})
        log.info("H3 width %d heads %d: NNGP dist median %.4f, NTK dist median %.4f", w, h, np.median(dn), np.median(dt))
    n_boot = int(params["n_boot"])
    fits = {}
    for g in ("nngp", "ntk"):
        y = np.array([row[f"{g}_distance"] for row in rows])
        fits[g] = bootstrap_slope(np.array(widths, float), y, n_boot=n_boot, seed=seed).as_dict()
    return {"claim": "H3", "image_size": int(params["image_size"]), "n_inputs": int(x.shape[0]),
            "n_samples": int(params["n_samples"]), "n_replicates": int(params["n_replicates"]), "arch": arch,
            "archive": d["archive"].rsplit("/", 1)[-1], "archive_sha256": d["archive_sha256"],
            "per_width": rows, "slopes": fits}


_H3 = ClaimSpec(
    id="H3",
    paper="hron2020",
    statement="Finite networks' empirical NNGP/NTK converge to the analytic kernels as width/heads grow.",
    criterion=("For the NNGP and the NTK separately, fit the OLS slope of log(median over replicates of the relative "
               "Frobenius distance between Monte Carlo empirical and analytic kernel) on log(width), with a 95% "
               "bootstrap CI over replicates. Reproduced iff both slopes' CIs lie wholly below 0. Not reproduced iff "
               "either slope's CI lies wholly at or above 0. Otherwise inconclusive. (neural-tangents' own test "
               "tolerance, 5% at width 1024 / 32 heads / 1024 samples, is reported at the largest width, not required.)"),
)


@register(_H3)
def evaluate_h3(results: Results, scale: str) -> Evaluation:
    """Apply the pre-registered H3 criterion to ``H3_kernel_convergence`` results."""
    r = results["H3_kernel_convergence"]
    rows = sorted(r["per_width"], key=lambda row: row["width"])
    s_n, s_t = Interval.from_dict(r["slopes"]["nngp"]), Interval.from_dict(r["slopes"]["ntk"])
    verdict = decide(reproduced=s_n.below(0.0) and s_t.below(0.0), refuted=s_n.low >= 0.0 or s_t.low >= 0.0)
    last, first = rows[-1], rows[0]
    measured: dict[str, Any] = {"nngp_distance_slope_vs_log_width": s_n, "ntk_distance_slope_vs_log_width": s_t}
    for row in (first, last):
        for g in ("nngp", "ntk"):
            measured[f"{g}_distance_median_at_width_{row['width']}"] = float(np.median(row[f"{g}_distance"]))
    reason = (f"NNGP slope {s_n.value:.3f} [{s_n.low:.3f}, {s_n.high:.3f}], NTK slope {s_t.value:.3f} "
              f"[{s_t.low:.3f}, {s_t.high:.3f}] over widths {first['width']}..{last['width']} "
              f"(heads {first['n_heads']}..{last['n_heads']}); median distances at the largest width: NNGP "
              f"{np.median(last['nngp_distance']):.4f}, NTK {np.median(last['ntk_distance']):.4f} "
              f"(neural-tangents' test tolerance 0.05).")
    subs = []
    if scale != "paper":
        subs.append(f"widths up to {last['width']} with {last['n_heads']} heads, {r['n_samples']} Monte Carlo "
                    f"samples x {r['n_replicates']} replicates, {r['n_inputs']} images at "
                    f"{r['image_size']}x{r['image_size']} (reduced)")
    if "subset" in r["archive"]:
        subs.append("offline CIFAR-10 subset archive")
    return Evaluation(measured=measured, verdict=verdict, reason=reason, substitutes=subs,
                      data=[f"CIFAR-10 training images from {r['archive']} (sha256 {r['archive_sha256']})"])
