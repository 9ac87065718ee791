r"""Benchmark: throughput of the CIFAR-10 attention kernels (rule `H4_hron2020_kernel_throughput`).

For each family (default: GAP and the Struct attention kernel) at a given image size
(:math:`S = s^2` positions), the jitted neural-tangents ``kernel_fn`` is timed on an
:math:`n\times n` block of real CIFAR-10 images (after one warm-up call that compiles it):

* **pairs/s** :math:`= n^2 / t`;
* **achieved FLOP/s** :math:`= F / t`, with :math:`F` the floating-point operation count XLA's cost
  analysis reports for the compiled kernel computation (all contractions, dominated by the
  :math:`O(S^3)`-per-pair attention and the 4-D spatial convolutions of the covariance);
* the machine's **dense matmul FLOP/s**, measured in the same run on a :math:`m\times m` float32
  ``jnp.dot`` (:math:`2m^3` FLOPs), and the ratio of the two (issue target: :math:`\ge 0.5` for
  the attention kernel at :math:`S\ge 64`).

Timings are the minimum over ``repeats`` runs (less sensitive to other load on the machine).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from ntkrepro.run import RunContext


def _best_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def matmul_flops(m: int, repeats: int) -> float:
    """Dense float32 matmul FLOP/s on this machine: :math:`2m^3 / t`."""
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.PRNGKey(0), (m, m), jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (m, m), jnp.float32)
    f = jax.jit(jnp.dot)
    f(a, b).block_until_ready()
    return 2.0 * m ** 3 / _best_time(lambda: f(a, b).block_until_ready(), repeats)


def run_cifar10_kernel_throughput(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Benchmark rule ``H4_hron2020_kernel_throughput`` (see module docstring)."""
    import jax

    from ntkrepro.hron2020.cifar10 import build_model, load_splits

    b = params["benchmark"]
    n, repeats, size = int(b["n"]), int(b["repeats"]), int(b["image_size"])
    d = load_splits({**params, "n_train": n, "n_val": 0, "image_size": size}, ctx, need_test=False)
    x = jax.numpy.asarray(d["x_train"])
    peak = matmul_flops(int(b.get("matmul_size", 1024)), repeats)
    rows = []
    for fam in b["families"]:
        kfn = build_model(fam, int(b["depth"]), dict(params["arch"]))[2]
        jk = jax.jit(lambda a, c, _k=kfn: _k(a, c, ("nngp", "ntk")))
        compiled = jk.lower(x, x).compile()
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        flops = float(cost.get("flops", float("nan"))) if cost else float("nan")
        jax.block_until_ready(jk(x, x))
        t = _best_time(lambda: jax.block_until_ready(jk(x, x)), repeats)
        rows.append({"family": fam, "depth": int(b["depth"]), "positions": size * size, "n": n, "seconds": t,
                     "pairs_per_second": n * n / t, "xla_flops": flops, "achieved_flops_per_second": flops / t,
                     "fraction_of_matmul": flops / t / peak})
    att = [r for r in rows if r["family"] in ("vanilla", "struct", "residual")]
    return {"benchmark": "hron2020_kernel_throughput", "matmul_flops_per_second": peak,
            "matmul_size": int(b.get("matmul_size", 1024)), "cpu_count": os.cpu_count(),
            "devices": [str(dev) for dev in jax.devices()], "rows": rows,
            "target": "attention kernel at S >= 64 reaches >= 50% of matmul FLOP/s",
            "target_met": bool(att) and all(r["fraction_of_matmul"] >= 0.5 for r in att if r["positions"] >= 64)
            if any(r["positions"] >= 64 for r in att) else None}
