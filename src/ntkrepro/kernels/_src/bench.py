r"""Generic timing and FLOP helpers for the fast backend (no model of any paper here: the
benchmarks of a paper's models live with the paper, e.g. :mod:`ntkrepro.hron2020.benchmark`).

* :func:`flop_count` -- analytic FLOPs per input pair of the fast backend (defined in
  :mod:`ntkrepro.kernels.fast`'s docstring);
* :func:`matmul_flops` -- the machine's dense float32 matmul FLOP/s (:math:`2m^3/t`);
* :func:`compare_backends` -- neural-tangents ``kernel_fn`` vs the fast backend on one block:
  both compiled (timed separately), checked against each other, then timed ``repeats`` times
  *interleaved* (nt, fast, nt, fast, ...: both see the same machine load); per backend wall and CPU
  seconds, pairs/s best-of and median, XLA's buffer bytes (arguments + outputs + temporaries; for
  the fast backend the largest of its per-layer computations, which run one at a time), speed-ups,
  the fast backend's achieved FLOP/s as a fraction of matmul, and the attention contraction timed
  alone (the attention layers' pair updates on one row chunk, :meth:`FastKernelFn.profile_layers`).
  Wall-clock and CPU-time (``time.process_time``) rates are both given: on a shared CPU the wall
  rates are lower bounds;
* :func:`measure_fast` -- the fast backend alone on one block (seconds per pair, chunk memory);
* :func:`block_pairs` -- input pairs a blocked kernel computes;
* :func:`mc_attention_benchmark` -- the d^-1/2 Monte Carlo attention layer (``linear_scaling=False``,
  :mod:`.attention_mc`): standard error vs draws, entries per second, fraction of matmul.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ntkrepro.kernels._src.engine import FastKernelFn, iter_leaves, nt_kernel_fn
from ntkrepro.kernels._src.layers import Conv, GlobalSelfAttention, Layer
from ntkrepro.kernels.blocks import block_grid


def _flops(leaf: Layer, plan, nk: int, plan2=None) -> tuple[float, float]:
    """FLOPs per pair of one leaf; ``plan2``: the leaf's plan for :math:`X_2` at another length (sequences
    trimmed per side): :math:`S_1 S_2` entries, attention :math:`2 S_1 S_2 (S_1 + S_2)` per kernel."""
    plan2 = plan if plan2 is None else plan2
    if isinstance(leaf, Conv):
        taps = float(np.prod(leaf.filter_shape))
        s, s2 = float(np.prod(plan.out_shape)), float(np.prod(plan2.out_shape))
        return nk * taps * (s * s2 if plan.in_mode == "full" else s), 0.0
    if isinstance(leaf, GlobalSelfAttention) and not leaf.linear_scaling:
        from ntkrepro.kernels._src.attention_mc import flops_per_pair

        f = flops_per_pair(leaf, int(np.prod(plan.in_shape)), nk == 2)
        return f, f
    if isinstance(leaf, GlobalSelfAttention):
        s, s2 = float(np.prod(plan.in_shape)), float(np.prod(plan2.in_shape))
        f = nk * (2 * s * s2 * (s + s2) if plan.out_mode == "full" else 2 * s ** 3 + 2 * s * s)
        return f, f
    return 0.0, 0.0


def flop_count(model: Layer, in_shape: tuple[int, ...], compute_ntk: bool = True,
               in_shape2: tuple[int, ...] | None = None) -> dict[str, float]:
    r"""Analytic FLOPs per input pair of the fast backend (``fast`` module docstring): the input
    covariance :math:`2C\cdot S^2` (full) or :math:`2C\cdot S` (diagonal), conv taps, attention
    products; elementwise layers 0. ``{"total", "attention"}``. ``in_shape2``: :math:`X_2`'s input
    shape where it differs (sequences trimmed per side: :math:`S_1 S_2` in place of :math:`S^2`)."""
    kf = FastKernelFn(model)
    plan = kf.plan(in_shape)
    plan2 = plan if in_shape2 is None else kf.plan(in_shape2)
    nk = 2 if compute_ntk else 1
    s0 = float(np.prod(in_shape[:-1])) if len(in_shape) > 1 else 1.0
    s02 = s0 if in_shape2 is None else (float(np.prod(in_shape2[:-1])) if len(in_shape2) > 1 else 1.0)
    total = 2.0 * in_shape[-1] * (s0 * s02 if plan.in_mode == "full" else s0)
    att = 0.0
    for (leaf, pl), (_, pl2) in zip(iter_leaves(model, plan), iter_leaves(model, plan2)):
        f, a = _flops(leaf, pl, nk, pl2)
        total += f
        att += a
    return {"total": total, "attention": att}


def matmul_flops(m: int, repeats: int) -> dict[str, float]:
    """Dense float32 ``m x m`` matmul: FLOP/s = :math:`2m^3/t`, best and median wall, best CPU."""
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.PRNGKey(0), (m, m), jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (m, m), jnp.float32)
    f = jax.jit(jnp.dot)
    f(a, b).block_until_ready()
    wall, cpu = [], []
    for _ in range(max(1, repeats)):
        t0, c0 = time.perf_counter(), time.process_time()
        f(a, b).block_until_ready()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    fl = 2.0 * m ** 3
    return {"size": m, "best": fl / min(wall), "median": fl / statistics.median(wall), "cpu_best": fl / min(cpu)}


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of ``fn()`` (its result blocked on)."""
    import jax

    t0, c0 = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn())
    return time.perf_counter() - t0, time.process_time() - c0


def summary(wall: list[float], cpu: list[float], pairs: int) -> dict[str, Any]:
    """Seconds and pairs/s (best, median, CPU best) of repeated runs over ``pairs`` pairs."""
    return {"seconds": wall, "cpu_seconds": cpu, "pairs_per_second_best": pairs / min(wall),
            "pairs_per_second_median": pairs / statistics.median(wall),
            "pairs_per_cpu_second_best": pairs / min(cpu)}


def _chunk_memory(prof: list[dict[str, Any]]) -> int:
    """The largest per-layer XLA buffers of a profile (0 if every layer ran without a computation)."""
    return max((r["memory_bytes"] or 0 for r in prof), default=0)


def compare_backends(model: Layer, x1: Any, x2: Any, *, mask_constant: float | None, repeats: int,
                     peak: Mapping[str, float]) -> dict[str, Any]:
    """neural-tangents vs the fast backend on the block ``x1 x x2`` (NNGP + NTK; module docstring).
    ``peak``: a :func:`matmul_flops` result (the FLOP/s fractions are relative to ``peak["best"]``)."""
    import jax

    mc = mask_constant
    get = ("nngp", "ntk")
    load_before = os.getloadavg()
    k_nt = nt_kernel_fn(model)
    k_fast = FastKernelFn(model)
    runs = {"nt": (lambda: tuple(k_nt(x1, x2, get, mask_constant=mc))),
            "fast": (lambda: tuple(k_fast(x1, x2, get, mask_constant=mc)))}
    compile_s = {b: timed(f)[0] for b, f in runs.items()}
    ref, got = runs["nt"](), runs["fast"]()
    diff = {g: float(np.max(np.abs(np.asarray(b, np.float64) - np.asarray(a, np.float64)))
                     / np.max(np.abs(np.asarray(a, np.float64)))) for g, a, b in zip(get, ref, got)}
    times: dict[str, tuple[list[float], list[float]]] = {b: ([], []) for b in runs}
    for _ in range(max(1, repeats)):
        for b, f in runs.items():
            w, c = timed(f)
            times[b][0].append(w)
            times[b][1].append(c)
    n1, n2 = int(x1.shape[0]), int(x2.shape[0])
    pairs = n1 * n2
    out: dict[str, Any] = {"array_shape": list(x1.shape), "n1": n1, "n2": n2, "pairs": pairs,
                           "max_rel_diff_fast_vs_nt": diff, "compile_plus_first_call_seconds": compile_s}
    for b in runs:
        out[b] = summary(*times[b], pairs)
    nt_mem = jax.jit(model.stax()[2], static_argnames=("get", "mask_constant")).lower(
        x1, x2, get=get, mask_constant=mc).compile().memory_analysis()
    out["nt"]["memory_bytes"] = (int(nt_mem.argument_size_in_bytes + nt_mem.output_size_in_bytes
                                     + nt_mem.temp_size_in_bytes) if nt_mem is not None else None)
    prof = k_fast.profile_layers(x1, x2, get, mask_constant=mc, repeats=max(2, repeats))
    out["fast"]["rows_per_chunk"] = k_fast.rows_for(n1, n2, x1.shape[1:], 4, True)
    out["fast"]["memory_bytes"] = _chunk_memory(prof)
    out["fast"]["layers"] = prof
    out["speedup_best"] = out["fast"]["pairs_per_second_best"] / out["nt"]["pairs_per_second_best"]
    out["speedup_median"] = out["fast"]["pairs_per_second_median"] / out["nt"]["pairs_per_second_median"]
    out["speedup_cpu_best"] = out["fast"]["pairs_per_cpu_second_best"] / out["nt"]["pairs_per_cpu_second_best"]
    # FLOPs of the work the fast backend does: on the trimmed arrays when an all-masked tail was
    # dropped, so that achieved FLOP/s stays a rate of real arithmetic
    t1, t2 = (x1, x2) if mc is None else k_fast._trim(x1, x2, mc)  # each side at its own length
    shapes = [tuple(t1.shape[1:]), tuple((t1 if t2 is None else t2).shape[1:])]
    shape = shapes[0]
    fl = flop_count(model, shape, in_shape2=shapes[1])
    out["flops_per_pair"] = {**fl, "input_shape": list(shape), "input_shape2": list(shapes[1])}
    best_fast, best_cpu = min(times["fast"][0]), min(times["fast"][1])
    out["fast"]["flops_per_second"] = fl["total"] * pairs / best_fast
    out["fast"]["fraction_of_matmul"] = out["fast"]["flops_per_second"] / peak["best"]
    att = [r for r in prof if "GlobalSelfAttention" in r["layer"].split("+")]
    if att and fl["attention"] > 0:
        a_wall = sum(r["wall_s"] for r in att)
        a_cpu = sum(r["cpu_s"] for r in att)
        a_pairs = att[0]["pairs"]
        out["attention"] = {
            "flops_per_pair": fl["attention"], "pairs_timed": a_pairs, "seconds_best": a_wall, "cpu_seconds_best": a_cpu,
            "flops_per_second": fl["attention"] * a_pairs / a_wall,
            "fraction_of_matmul": fl["attention"] * a_pairs / a_wall / peak["best"],
            "fraction_of_matmul_cpu": fl["attention"] * a_pairs / a_cpu / peak["cpu_best"]}
    out["fast"]["fraction_of_matmul_cpu"] = fl["total"] * pairs / best_cpu / peak["cpu_best"]
    out["load_average_before"], out["load_average_after"] = list(load_before), list(os.getloadavg())
    return out


def measure_fast(model: Layer, x1: Any, x2: Any, mask_constant: float | None, repeats: int) -> dict[str, Any]:
    """Fast backend on the block ``x1 x x2`` (NNGP + NTK): compile, then best-of-``repeats`` wall
    and CPU seconds per pair; the largest per-layer buffers of one chunk (bytes)."""
    kf = FastKernelFn(model)
    get = ("nngp", "ntk")
    compile_s = timed(lambda: tuple(kf(x1, x2, get, mask_constant=mask_constant)))[0]
    wall, cpu = [], []
    for _ in range(max(1, repeats)):
        w, c = timed(lambda: tuple(kf(x1, x2, get, mask_constant=mask_constant)))
        wall.append(w)
        cpu.append(c)
    # per-layer buffers need one XLA computation per layer (the default at the paper's sizes)
    prof = FastKernelFn(model, split_layers=True).profile_layers(x1, x2, get, mask_constant=mask_constant, repeats=1)
    pairs = x1.shape[0] * x2.shape[0]
    return {"block": [int(x1.shape[0]), int(x2.shape[0])], "compile_plus_first_call_seconds": compile_s,
            "seconds_per_pair": min(wall) / pairs, "cpu_seconds_per_pair": min(cpu) / pairs,
            "rows_per_chunk": kf.rows_for(x1.shape[0], x2.shape[0], x1.shape[1:], 4, True),
            "chunk_memory_bytes": _chunk_memory(prof)}


def block_pairs(n1: int, n2: int | None, block_size: int) -> int:
    """Input pairs computed for an ``n1 x n2`` kernel in blocks (``n2=None``: symmetric ``K(X, X)``,
    upper block triangle)."""
    sym = n2 is None
    n2v = n1 if sym else n2
    total = 0
    for i, j in block_grid(n1, n2v, block_size, sym):
        total += min(block_size, n1 - i * block_size) * min(block_size, n2v - j * block_size)
    return total


def mc_attention_benchmark(samples: tuple[int, ...] = (16, 64, 256), *, n: int = 6, s: int = 8, d: int = 8,
                           replicates: int = 8, mechanism: str = "SOFTMAX", qk_std: float = 1.5, repeats: int = 3,
                           matmul_size: int = 256, seed: int = 0) -> dict[str, Any]:
    r"""The d^-1/2 Monte Carlo attention layer (``GlobalSelfAttention(linear_scaling=False)``,
    :mod:`.attention_mc`) on one symmetric block of ``n`` random sequences of ``s`` positions and
    ``d`` channels (the layer on the inputs' kernel :math:`x_s\cdot y_t/d`; NNGP and NTK, float32),
    for each draw count in ``samples``: the per-entry standard error of one run (the standard
    deviation over ``replicates`` seeds, one compilation vmapped over the seeds), as its median
    over entries relative to the kernel's root-mean-square entry; the best-of-``repeats`` wall and
    CPU seconds of one run (compiled); entries (:math:`n^2S^2` per kernel) per second; achieved
    FLOP/s (:func:`.attention_mc.flops_per_pair`) as a fraction of a float32 matmul
    (:func:`matmul_flops`). ``fitted_slope``: the log-log slope of the error against draws (-1/2
    expected). The machine may be shared: ``load_average`` is recorded, wall rates are lower bounds."""
    import jax
    import jax.numpy as jnp

    from ntkrepro.kernels._src.attention_mc import flops_per_pair, pair_mc

    load_before = os.getloadavg()
    x = np.random.default_rng(seed).standard_normal((n, s, d)).astype(np.float32)
    k = jnp.asarray(np.einsum("xsc,ytc->xyst", x, x) / d)
    c = jnp.asarray(np.einsum("xsc,xtc->xst", x, x) / d)
    peak = matmul_flops(matmul_size, repeats)
    rows = []
    for n_draws in samples:
        layer = GlobalSelfAttention(1, 1, 1, 1, linear_scaling=False, attention_mechanism=mechanism,
                                    W_query_std=qk_std, mc_samples=int(n_draws))

        def run(key, layer=layer):
            return pair_mc(layer, c, c, None, None, k, k, True, "full", key)

        keys = jnp.stack([jax.random.PRNGKey(seed + i) for i in range(replicates)])
        reps = jax.jit(jax.vmap(run))(keys)
        one = jax.jit(run)
        key0 = jax.random.PRNGKey(seed)
        compile_s = timed(lambda: one(key0))[0]
        wall, cpu = [], []
        for _ in range(max(1, repeats)):
            w, cs = timed(lambda: one(key0))
            wall.append(w)
            cpu.append(cs)
        entries = 2 * n * n * s * s  # NNGP and NTK
        row: dict[str, Any] = {"samples": int(n_draws), "compile_plus_first_call_seconds": compile_s,
                               "seconds_best": min(wall), "cpu_seconds_best": min(cpu),
                               "entries_per_second": entries / min(wall), "entries_per_cpu_second": entries / min(cpu)}
        for name, r in zip(("nngp", "ntk"), reps):
            r = np.asarray(r, np.float64)
            sd = r.std(axis=0, ddof=1)
            row[name + "_relative_se_median"] = float(np.median(sd) / np.sqrt(np.mean(r.mean(axis=0) ** 2)))
        fl = flops_per_pair(layer, s, True) * n * n
        row["flops_per_second"] = fl / min(wall)
        row["fraction_of_matmul"] = row["flops_per_second"] / peak["best"]
        row["fraction_of_matmul_cpu"] = fl / min(cpu) / peak["cpu_best"]
        rows.append(row)
    slope = {g: float(np.polyfit(np.log([r["samples"] for r in rows]),
                                 np.log([r[g + "_relative_se_median"] for r in rows]), 1)[0])
             for g in ("nngp", "ntk")} if len(rows) > 1 else None
    return {"case": {"n": n, "positions": s, "channels": d, "mechanism": mechanism, "qk_std": qk_std,
                     "replicates": replicates, "dtype": "float32"},
            "rows": rows, "fitted_slope": slope, "matmul": peak,
            "load_average_before": list(load_before), "load_average_after": list(os.getloadavg())}
