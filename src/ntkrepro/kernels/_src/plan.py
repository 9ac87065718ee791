r"""Paper-scale cost plan of the kernel compute rules (H4, H6) from measured fast-backend throughput.

For every model a kernel rule computes at ``config/paper.yaml`` (H4: each family at each swept or
final depth, every kernel of ``cifar10.KERNEL_PAIRS``, as the shard rules fan them out; H6: every
model of ``imdb.model_grid`` on the selection protocol plus the final table of each family), this
module

1. counts the input pairs exactly (:func:`ntkrepro.kernels.blocks.block_grid` at the configured
   ``block_size``: symmetric kernels compute their upper block triangle, diagonal blocks whole);
2. **measures** the fast backend on a small block of random inputs *at the paper's input size*
   (32x32 images, S = 1024 positions; reviews at the full paper length 500 + margin, every review
   full, the worst case): best-of-``repeats`` wall and CPU seconds per pair, NNGP and NTK. Kernel
   cost is independent of the input values, and time per pair is constant in :math:`n` (blocks of
   pairs; the per-input pass, :math:`O(n S^3)`, is included in the measured block and is a smaller
   share at larger :math:`n`), so pairs x (seconds per pair) scales the measurement to any :math:`n`;
3. estimates hours on this CPU (pairs x measured CPU-seconds per pair / cores, i.e. all cores busy)
   and on one GPU: analytic FLOPs (:func:`ntkrepro.kernels.fast.flop_count`) over an **assumed**
   sustained rate ``gpu_flops`` x the fraction of this CPU's matmul peak the model reached here
   (``gpu_peak_flops`` and the rule are stated in the output; an estimate, not a measurement);
4. peak memory: the largest per-layer XLA buffers of one chunk of pairs (measured,
   :meth:`FastKernelFn.profile_layers`) and the assembled kernel matrices the regression holds
   (:math:`n_1 n_2` x itemsize x kernels; for H4 the train+validation kernel of the final refit);
5. the SLURM jobs: H4 ``n_shards`` shard jobs + 1 assembly job (``n_shards = 0``: 1 job); H6 1 job.

Other compute rules (H1-H3, H5, the other papers) are not kernel computations of this backend and
are not estimated here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ntkrepro.kernels._src.bench import flop_count, h4_model, h6_model, matmul_flops
from ntkrepro.kernels._src.engine import FastKernelFn

#: Default assumed sustained float32 FLOP/s of "one modern GPU" (an H100-class card's fp32 CUDA-core
#: peak, ~60 TFLOP/s; tensor-core TF32 is faster but changes the arithmetic).
GPU_PEAK_FLOPS = 60e12


def block_pairs(n1: int, n2: int | None, block_size: int) -> int:
    """Input pairs computed for an ``n1 x n2`` kernel in blocks (``n2=None``: symmetric ``K(X, X)``,
    upper block triangle)."""
    from ntkrepro.kernels.blocks import block_grid

    sym = n2 is None
    n2v = n1 if sym else n2
    total = 0
    for i, j in block_grid(n1, n2v, block_size, sym):
        total += min(block_size, n1 - i * block_size) * min(block_size, n2v - j * block_size)
    return total


def h4_jobs(p: Mapping[str, Any]) -> list[dict[str, Any]]:
    """H4 at config ``p``: per (family, depth) the pairs of every kernel of ``KERNEL_PAIRS`` (what
    the shard rules compute: all depths, swept and final)."""
    from ntkrepro.hron2020.cifar10 import KERNEL_PAIRS

    n = {"train": int(p["n_train"]), "val": int(p["n_val"]), "test": int(p["n_test"])}
    depths = sorted({int(d) for d in p["depths"]} | {int(d) for d in dict(p.get("final_depth") or {}).values()})
    b = int(p["block_size"])
    pairs = sum(block_pairs(n[r], None if c is None else n[c], b) for r, c in KERNEL_PAIRS.values())
    return [{"rule": "H4_hron2020_kernel_shard", "family": f, "depth": d, "pairs": pairs, "kernels": 2}
            for f in p["families"] for d in depths]


def h6_jobs(p: Mapping[str, Any]) -> list[dict[str, Any]]:
    """H6 at config ``p``: every model's train x train and (valid + test) x train kernels (NNGP and
    NTK), and, with ``final``, each family's final-table kernels (one kernel; the family's deepest
    configured depth, the costliest the selection can pick)."""
    from ntkrepro.hron2020.imdb import model_grid

    b = int(p["block_size"])
    nt, ne = int(p["n_train"]), int(p["n_valid"]) + int(p["n_test"])
    sel = block_pairs(nt, None, b) + block_pairs(ne, nt, b)
    out = [{"rule": "H6_hron2020_imdb", "family": f, "depth": d, "pairs": sel, "kernels": 2}
           for f, d in model_grid(p)]
    fin = p.get("final")
    if fin:
        fpairs = block_pairs(int(fin["n_train"]), None, b) + block_pairs(int(fin["n_test"]), int(fin["n_train"]), b)
        deepest: dict[str, int] = {}
        for f, d in model_grid(p):
            deepest[f] = max(d, deepest.get(f, d))
        out += [{"rule": "H6_hron2020_imdb (final table)", "family": f, "depth": d, "pairs": fpairs, "kernels": 1}
                for f, d in deepest.items()]
    return out


def measure(model, x1: np.ndarray, x2: np.ndarray, mask_constant: float | None, repeats: int) -> dict[str, Any]:
    """Fast backend on the block ``x1 x x2`` (NNGP + NTK): compile, then best-of-``repeats`` wall
    and CPU seconds; the largest per-layer buffers of one chunk (bytes)."""
    import jax

    kf = FastKernelFn(model)
    get = ("nngp", "ntk")
    t0 = time.perf_counter()
    jax.block_until_ready(tuple(kf(x1, x2, get, mask_constant=mask_constant)))
    compile_s = time.perf_counter() - t0
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(tuple(kf(x1, x2, get, mask_constant=mask_constant)))
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    # per-layer buffers need one XLA computation per layer (the default at the paper's sizes)
    prof = FastKernelFn(model, split_layers=True).profile_layers(x1, x2, get, mask_constant=mask_constant, repeats=1)
    pairs = x1.shape[0] * x2.shape[0]
    return {"block": [int(x1.shape[0]), int(x2.shape[0])], "compile_plus_first_call_seconds": compile_s,
            "seconds_per_pair": min(wall) / pairs, "cpu_seconds_per_pair": min(cpu) / pairs,
            "rows_per_chunk": kf.rows_for(x1.shape[0], x2.shape[0], x1.shape[1:], 4, True),
            "chunk_memory_bytes": max((r["memory_bytes"] or 0) for r in prof)}


def _inputs(kind: str, shape: tuple[int, ...], n: int, seed: int, mask_constant: float | None,
            margin: int = 0) -> np.ndarray:
    """Random inputs; reviews (``imdb``) at the full length followed by ``margin`` masked positions."""
    x = np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)
    if kind == "imdb" and margin:
        x[:, shape[0] - margin:] = mask_constant
    return x


def run_paper_scale_plan(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Rule ``paper_scale_plan``: the plan (module docstring) for the ``h4`` / ``h6`` sections of
    ``config/paper.yaml`` in ``params``; ``n`` (inputs per side of the timed block, default 2),
    ``repeats`` (2), ``gpu_peak_flops`` (:data:`GPU_PEAK_FLOPS`), ``cpu_cores`` (this machine's).
    Writes the Markdown table to the extra output ``markdown``."""
    from ntkrepro.hron2020.imdb import mask_margin

    h4, h6 = params["h4"], params["h6"]
    n, repeats = int(params.get("n", 2)), int(params.get("repeats", 2))
    gpu = float(params.get("gpu_peak_flops", GPU_PEAK_FLOPS))
    cores = int(params.get("cpu_cores") or os.cpu_count() or 1)
    peak = matmul_flops(int(params.get("matmul_size", 1024)), 3)
    side = int(h4["image_size"])
    margin = mask_margin(h6)
    l6 = int(h6["seq_len"]) + margin
    rows, measured = [], {}
    jobs = [("cifar", j) for j in h4_jobs(h4)] + [("imdb", j) for j in h6_jobs(h6)]
    for kind, job in ctx.progress(jobs, desc="paper-scale plan"):
        key = (kind, job["family"], job["depth"])
        if kind == "cifar":
            model, shape, mc = h4_model(job["family"], job["depth"], h4["arch"]), (side, side, 3), None
        else:
            model = h6_model(job["family"], job["depth"], int(h6["filter_size"]), float(h6["W_pos_emb_std"]))
            shape, mc = (l6, 50), float(h6["mask_constant"])
        if key not in measured:
            m = measure(model, _inputs(kind, shape, n, 1, mc, margin), _inputs(kind, shape, n, 2, mc, margin), mc,
                        repeats)
            fl = flop_count(model, shape)
            m["flops_per_pair"] = fl["total"]
            m["fraction_of_cpu_matmul"] = fl["total"] / m["seconds_per_pair"] / peak["best"]
            measured[key] = m
        m = measured[key]
        frac = max(min(m["fraction_of_cpu_matmul"], 1.0), 1e-3)
        kscale = job["kernels"] / 2  # measured with NNGP + NTK; one kernel costs about half
        row = {**job, "input_shape": list(shape), "cpu_seconds_per_pair": m["cpu_seconds_per_pair"],
               "flops": m["flops_per_pair"] * job["pairs"] * kscale,
               "cpu_hours": job["pairs"] * m["cpu_seconds_per_pair"] * kscale / cores / 3600,
               "gpu_hours": m["flops_per_pair"] * job["pairs"] * kscale / (gpu * frac) / 3600,
               "chunk_memory_bytes": m["chunk_memory_bytes"], "fraction_of_cpu_matmul": m["fraction_of_cpu_matmul"]}
        rows.append(row)
    itemsize = 4 if str(h4.get("dtype", "float32")) == "float32" else 8
    n_full = int(h4["n_train"]) + int(h4["n_val"])
    shards = int(h4.get("n_shards", 0))
    summary = {}
    for rule_prefix, jobs_n, kmat in (
            ("H4", shards + 1 if shards else 1, n_full * n_full * itemsize * 2 + int(h4["n_test"]) * n_full * itemsize),
            ("H6", 1, (max(int(h6["final"]["n_train"]), int(h6["final"]["n_test"])) if h6.get("final") else
                       int(h6["n_train"]) + int(h6["n_valid"]) + int(h6["n_test"])) ** 2 * itemsize * 2)):
        rr = [r for r in rows if r["rule"].startswith(rule_prefix)]
        summary[rule_prefix] = {"pairs": int(sum(r["pairs"] for r in rr)), "flops": sum(r["flops"] for r in rr),
                                "cpu_hours": sum(r["cpu_hours"] for r in rr),
                                "gpu_hours": sum(r["gpu_hours"] for r in rr),
                                "peak_chunk_memory_bytes": max(r["chunk_memory_bytes"] for r in rr),
                                "kernel_matrix_bytes": int(kmat), "slurm_jobs": jobs_n,
                                "gpu_hours_per_job": sum(r["gpu_hours"] for r in rr) / jobs_n}
    out = {"plan": "paper_scale_kernel_rules", "config": "config/paper.yaml", "cpu_cores": cores,
           "cpu_matmul_flops_per_second": peak, "gpu_peak_flops_assumed": gpu,
           "gpu_rule": ("GPU hours = analytic FLOPs / (assumed GPU fp32 peak x the fraction of the CPU's matmul "
                        "peak this model reached here); an estimate, not a measurement"),
           "timed_block": n, "measured": {f"{k[0]} {k[1]} depth {k[2]}": v for k, v in measured.items()},
           "rows": rows, "summary": summary, "n_shards_h4": shards}
    if ctx.outputs.get("markdown"):
        from ntkrepro.io import atomic_path

        with atomic_path(ctx.outputs["markdown"]) as tmp:
            tmp.write_text(markdown(out))
    return out


def _bytes(b: float) -> str:
    return f"{b / 2 ** 30:.1f} GiB" if b >= 2 ** 30 else f"{b / 2 ** 20:.0f} MiB"


def markdown(plan: Mapping[str, Any]) -> str:
    """The plan as a Markdown page (``results/benchmarks/paper_scale_plan.md``)."""
    lines = ["# Paper-scale plan of the kernel rules (config/paper.yaml)", "",
             "Generated by rule `paper_scale_plan` (`ntkrepro.kernels._src.plan`) from the fast backend timed on "
             f"{plan['timed_block']}x{plan['timed_block']} blocks at the paper's input sizes on this machine "
             f"({plan['cpu_cores']} cores, dense fp32 matmul {plan['cpu_matmul_flops_per_second']['best'] / 1e9:.0f} "
             "GFLOP/s). CPU hours assume all cores busy. " + plan["gpu_rule"] +
             f"; assumed GPU fp32 peak {plan['gpu_peak_flops_assumed'] / 1e12:.0f} TFLOP/s.", "",
             "| rule | jobs (SLURM) | pairs | FLOPs | CPU hours | GPU hours (total / per job) | peak chunk memory | "
             "kernel matrices held |", "|---|---|---|---|---|---|---|---|"]
    for k, s in plan["summary"].items():
        lines.append(f"| {k} | {s['slurm_jobs']} | {s['pairs']:.3g} | {s['flops']:.3g} | {s['cpu_hours']:.3g} | "
                     f"{s['gpu_hours']:.3g} / {s['gpu_hours_per_job']:.3g} | {_bytes(s['peak_chunk_memory_bytes'])} | "
                     f"{_bytes(s['kernel_matrix_bytes'])} |")
    lines += ["", "Per model:", "", "| rule | family | depth | input | pairs | CPU s/pair (measured) | "
              "fraction of CPU matmul | CPU hours | GPU hours |", "|---|---|---|---|---|---|---|---|---|"]
    for r in plan["rows"]:
        lines.append(f"| {r['rule']} | {r['family']} | {r['depth']} | {'x'.join(map(str, r['input_shape']))} | "
                     f"{r['pairs']:.3g} | {r['cpu_seconds_per_pair']:.3g} | {r['fraction_of_cpu_matmul']:.2f} | "
                     f"{r['cpu_hours']:.3g} | {r['gpu_hours']:.3g} |")
    return "\n".join(lines) + "\n"
