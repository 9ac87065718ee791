r"""Benchmark: projected-GD training steps/s of the project's step vs a plain PyTorch-autograd step.

The step (Arda et al. at the authors' sizes: m = 256 heads, n = 5000 inputs, d = 8, T = 16, full batch,
tanh, projection onto the balls around init) is timed in one process for

* ``project`` -- :func:`ntkrepro.arda2026.model.gd_step` (closed-form Lemma-1 gradients, chunked over
  inputs, ``jax.jit`` with the parameters donated), the step every A claim trains with;
* ``torch_autograd`` -- :class:`ntkrepro.arda2026.torch_reference.AutogradStep` (einsum forward,
  ``loss.backward()``, in-place SGD, projection) with one PyTorch thread per available core (set
  explicitly: Snakemake exports ``OMP_NUM_THREADS`` = the rule's threads), and
  ``torch_autograd_1thread`` -- the same with ``torch.set_num_threads(1)`` (on a shared, loaded
  machine one thread is often faster: no waiting on a descheduled OpenMP worker). XLA runs the
  project's step with its own thread pool over all cores.

The variants run interleaved (``repeats`` rounds, each variant ``steps`` steps per round, after a
warm-up step that also compiles), so all see the same machine load; best-of and median are reported,
as wall seconds and as process CPU seconds per step, with the minor page faults per step and the load
average before and after. ``speedup`` is the project's median steps/s over the faster torch variant's
median (the conservative one). Before timing, the two implementations' loss and gradients are
compared at the same parameters (``agreement``; fp32, relative to the largest entry).

**Bytes moved per step** are counted per executed operation as operand bytes read plus result bytes
written (no cache model): for the project's step from XLA's HLO cost analysis of the compiled step on
one chunk times the number of chunks (XLA counts a loop body once), for the PyTorch step by counting
every ATen kernel (forward and backward) under a ``TorchDispatchMode``. Also measured in the same run:
the memory bandwidth of this machine (``copy`` and ``triad`` :math:`a = b + s c` on arrays of
``bandwidth_mib`` MiB, beyond the caches) and the bandwidth of the same triad on cache-resident
512-KiB arrays (the size of one chunk block). ``fraction_of_memory_bandwidth`` = bytes/step x
steps/s / triad bandwidth. The analytic byte count of the project's step is in
:mod:`ntkrepro.arda2026.model` (section "training step").
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ntkrepro.arda2026 import model
from ntkrepro.arda2026.teacher import sample_inputs
from ntkrepro.arda2026.torch_reference import AutogradStep


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on every platform
        return os.cpu_count() or 1


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return []


def memory_bandwidth(mib: float, repeats: int = 7) -> dict[str, Any]:
    r"""Measured bandwidth in bytes/s: ``copy`` :math:`a = b` (:math:`2S` bytes) and ``triad``
    :math:`a = b + 3c` (:math:`3S` bytes, STREAM convention) on float32 arrays of ``S = mib`` MiB, with
    1 thread and with one thread per core; best of ``repeats`` timings, each over >= 512 MiB.
    ``copy`` / ``triad`` are the larger of the two thread counts (what this machine gave at the time)."""
    import torch

    default = torch.get_num_threads()
    k = max(1, int(mib * 2**20) // 4)
    a, b, c = torch.zeros(k), torch.ones(k), torch.full((k,), 2.0)
    inner = max(1, 2**27 // k)
    per_threads: dict[str, dict[str, float]] = {}
    try:
        for threads in sorted({1, _cores()}):
            torch.set_num_threads(threads)
            row = {}
            for name, fn, nbytes in (("copy", lambda: a.copy_(b), 2),
                                     ("triad", lambda: torch.add(b, c, alpha=3.0, out=a), 3)):
                fn()
                best = float("inf")
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    for _ in range(inner):
                        fn()
                    best = min(best, (time.perf_counter() - t0) / inner)
                row[name] = nbytes * 4 * k / best
            per_threads[str(threads)] = row
    finally:
        torch.set_num_threads(default)
    return {"copy": max(r["copy"] for r in per_threads.values()),
            "triad": max(r["triad"] for r in per_threads.values()), "by_threads": per_threads, "array_mib": mib}


def torch_step_bytes(step: Callable[[], Any]) -> int:
    """Bytes read + written by every ATen kernel that ``step()`` runs (views count 0, in-place ops read and write)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def nbytes(x) -> int:
        return x.numel() * x.element_size() if isinstance(x, torch.Tensor) else 0

    class Counter(TorchDispatchMode):
        total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if not getattr(func, "is_view", False):
                flat = list(args) + list(kwargs.values())
                flat = [y for x in flat for y in (x if isinstance(x, (list, tuple)) else [x])]
                outs = out if isinstance(out, (list, tuple)) else [out]
                Counter.total += sum(nbytes(x) for x in flat) + sum(nbytes(x) for x in outs)
            return out

    with Counter():
        step()
    return int(Counter.total)


def project_step_bytes(m: int, n: int, d: int, T: int, chunk: int, dtype=None) -> dict[str, float]:
    """XLA cost analysis of the project's step: operand + result bytes and flops, per chunk x chunks."""
    import jax
    import jax.numpy as jnp


    dtype = dtype or jnp.float32
    p0 = model.init_params(jax.random.PRNGKey(0), m, d, dtype)
    one = model.prepare_batch(jnp.ones((chunk, d, T), dtype), jnp.zeros(chunk, dtype), m, chunk)
    fn = jax.jit(lambda p, q0, b: model.gd_step(p, q0, b, 0.1, 1.0)[0])
    ca = fn.lower(p0, p0, one).compile().cost_analysis()
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    k = -(-n // chunk)
    return {"bytes": float(ca.get("bytes accessed", float("nan"))) * k,
            "flops": float(ca.get("flops", float("nan"))) * k, "chunks": k}


def _summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    return {"steps_per_s_best": 1.0 / min(walls), "steps_per_s_median": 1.0 / statistics.median(walls),
            "wall_s_per_step_min": min(walls), "wall_s_per_step_median": statistics.median(walls),
            "cpu_s_per_step_min": min(cpus), "cpu_s_per_step_median": statistics.median(cpus)}


def benchmark_size(m: int, n: int, d: int, T: int, *, steps: int, repeats: int, bandwidth: float,
                   seed: int = 0) -> dict[str, Any]:
    """All variants at one size, interleaved; speed-ups, bytes/step and bandwidth fractions."""
    import jax
    import jax.numpy as jnp
    import torch


    X = sample_inputs(jax.random.PRNGKey(seed), n, d, T)
    y = jnp.asarray(0.05 * np.random.default_rng(seed).normal(size=n), jnp.float32)  # authors' label scale
    p0 = model.init_params(jax.random.PRNGKey(seed + 1), m, d)
    lr, rho = 1.75 / np.sqrt(4000), 3.0  # A1's step size and radius
    chunk = model.chunk_size(n, m, T)
    batch = model.prepare_batch(X, y, m, chunk)
    jstep = jax.jit(lambda p, q0, b: model.gd_step(p, q0, b, lr, rho), donate_argnums=0)
    state = {"p": jax.tree_util.tree_map(jnp.array, p0)}

    def project():
        state["p"], loss = jstep(state["p"], p0, batch)
        return loss

    ref = AutogradStep(p0.W, p0.U, p0.c, X, y, lr=lr, rho=rho)
    default, cores = torch.get_num_threads(), _cores()

    def torch_threads(k: int) -> Callable[[], float]:
        def step() -> float:
            torch.set_num_threads(k)
            try:
                return ref.step()
            finally:
                torch.set_num_threads(default)
        return step

    torch_all, torch_1thread = torch_threads(cores), torch_threads(1)

    # agreement before timing: loss and gradients at the same parameters (one step from init, so the
    # residuals are not just -y), then the loss of one step of each
    q = model.gd_step(p0, p0, batch, lr, rho)[0]
    ref_q = AutogradStep(q.W, q.U, q.c, X, y, lr=lr, rho=rho)
    loss_t, g_t = ref_q.grads()
    loss_p, g_p = jax.jit(model.loss_and_grad_batch)(q, batch)
    agree = {"loss_rel_diff": abs(float(loss_p) - loss_t) / max(abs(loss_t), 1e-30),
             "grad_max_rel_diff": max(float(np.max(np.abs(np.asarray(a) - b.numpy()))
                                            / max(float(b.abs().max()), 1e-30))
                                      for a, b in zip(g_p, g_t))}
    del ref_q
    loss_p, loss_t = float(jax.block_until_ready(project())), ref.step()
    agree["first_step_loss_rel_diff"] = abs(loss_p - loss_t) / max(abs(loss_t), 1e-30)
    torch_1thread()  # warm-up of both thread settings
    torch_all()

    variants = {"project": lambda: jax.block_until_ready(project()), "torch_autograd": torch_all,
                "torch_autograd_1thread": torch_1thread}
    walls = {k: [] for k in variants}
    cpus = {k: [] for k in variants}
    faults = {k: [] for k in variants}
    load_before = _load()
    for _ in range(repeats):
        for name, fn in variants.items():
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(steps):
                fn()
            walls[name].append((time.perf_counter() - t0) / steps)
            cpus[name].append((time.process_time() - c0) / steps)
            faults[name].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / steps)
    load_after = _load()
    res = {name: {**_summary(walls[name], cpus[name]),
                  "minor_page_faults_per_step_median": statistics.median(faults[name])}
           for name in variants}

    pbytes = project_step_bytes(m, n, d, T, chunk)
    n_par = m * d * d + m * d + m
    res["project"].update(bytes_per_step=pbytes["bytes"], flops_per_step=pbytes["flops"], chunk=chunk,
                          n_chunks=pbytes["chunks"], bytes_per_step_analytic=model.step_bytes(m, n, d, T),
                          # inputs and labels read once, parameters and init read, parameters written
                          compulsory_bytes_per_step=4 * (n * T * d + 2 * n + 3 * n_par))
    tbytes = torch_step_bytes(torch_1thread)
    for name in ("torch_autograd", "torch_autograd_1thread"):
        res[name]["bytes_per_step"] = float(tbytes)
    for r in res.values():
        for stat in ("best", "median"):
            r[f"fraction_of_memory_bandwidth_{stat}"] = r["bytes_per_step"] * r[f"steps_per_s_{stat}"] / bandwidth
    speed = {}
    for base in ("torch_autograd", "torch_autograd_1thread"):
        speed[base] = {
            "wall_best": res["project"]["steps_per_s_best"] / res[base]["steps_per_s_best"],
            "wall_median": res["project"]["steps_per_s_median"] / res[base]["steps_per_s_median"],
            "cpu_median": res[base]["cpu_s_per_step_median"] / res["project"]["cpu_s_per_step_median"],
        }
    headline = min(s["wall_median"] for s in speed.values())
    return {"m": m, "n": n, "d": d, "T": T, "steps_timed": steps, "repeats": repeats, "lr": float(lr), "rho": rho,
            "variants": res, "speedup_vs": speed,
            "speedup": headline,
            "speedup_definition": "project median steps/s over the faster (by median) of the two torch-autograd "
                                  "variants' median steps/s, measured interleaved in one process",
            "agreement": agree, "loadavg_before": load_before, "loadavg_after": load_after,
            "torch_threads": {"torch_autograd": cores, "torch_autograd_1thread": 1, "process_default": default}}


def run_throughput(params: dict, ctx) -> dict:
    """Benchmark every configured size; see the module docstring. Config: ``sizes``, ``steps``, ``repeats``,
    ``bandwidth_mib``."""
    import jax
    import torch

    bw_mem = memory_bandwidth(float(params["bandwidth_mib"]))
    bw_cache = memory_bandwidth(0.5)  # one (chunk, T, m) block of the project's step
    sizes = [benchmark_size(int(s["m"]), int(s["n"]), int(s["d"]), int(s["T"]), steps=int(params["steps"]),
                            repeats=int(params["repeats"]), bandwidth=bw_mem["triad"]) for s in params["sizes"]]
    for s in sizes:
        for r in s["variants"].values():
            r["fraction_of_cache_bandwidth_median"] = r["bytes_per_step"] * r["steps_per_s_median"] / bw_cache["triad"]
        p = s["variants"]["project"]
        p["compulsory_fraction_of_memory_bandwidth_median"] = (p["compulsory_bytes_per_step"] * p["steps_per_s_median"]
                                                               / bw_mem["triad"])
    return {"sizes": sizes, "memory_bandwidth_bytes_per_s": bw_mem, "cache_bandwidth_bytes_per_s": bw_cache,
            "bandwidth_array_mib": float(params["bandwidth_mib"]), "device": str(jax.devices()[0]),
            "cpu_count": _cores(), "torch_version": torch.__version__, "jax_version": jax.__version__,
            "target": "project step >= 2x the plain PyTorch-autograd step at m=256, n=5000, d=8, T=16 (issue 13.5)",
            "meets_target": all(s["speedup"] >= 2.0 for s in sizes
                                if (s["m"], s["n"], s["d"], s["T"]) == (256, 5000, 8, 16))
            if any((s["m"], s["n"], s["d"], s["T"]) == (256, 5000, 8, 16) for s in sizes) else None}
