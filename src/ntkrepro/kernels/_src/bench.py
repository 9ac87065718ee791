r"""Benchmark: neural-tangents ``kernel_fn`` vs the fast backend, side by side on the same blocks.

For each case (an H4 or H6 model, an input size, an :math:`n_1\times n_2` block of random inputs)
both backends are compiled (timed separately), checked against each other on the block, then timed
``repeats`` times *interleaved* (nt, fast, nt, fast, ...: both see the same machine load). Reported
per backend: wall and CPU seconds of every run, pairs/s best-of and median, XLA's buffer bytes
(arguments + outputs + temporaries; for the fast backend the largest of its per-layer computations,
which run one at a time); and the speed-ups best/best and median/median. The machine's load average
is recorded before and after each case.

FLOP/s: the fast backend's analytic FLOPs (:func:`flop_count`, defined in ``fast``'s module
docstring) over its best time, as a fraction of the dense float32 matmul FLOP/s measured in the
same run (:func:`matmul_flops`, best of ``repeats``, :math:`2m^3` FLOPs). The attention contraction
is also timed alone: the attention layer's pair update on one row chunk (the per-layer profile of
:meth:`FastKernelFn.profile_layers`), its FLOPs over its best time. Both wall-clock and CPU-time
(``time.process_time``) rates are given: on a shared CPU the wall rates are lower bounds.

Inputs are random (standard normal images; Gaussian 50-d "word vectors" with every review at the
full length followed by ``(filter_size - 1)/2`` masked positions): kernel cost does not depend on
the values.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ntkrepro.kernels._src.bridge import from_stax_builder
from ntkrepro.kernels._src.engine import FastKernelFn, iter_leaves, nt_kernel_fn
from ntkrepro.kernels._src.layers import Conv, GlobalSelfAttention, Layer

TARGETS = {"cifar S=64": 10.0, "imdb L=500": 10.0, "cifar S=256": 5.0, "attention_fraction_of_matmul": 0.30}

#: Cases per scale: (dataset, family, depth, size (image side or review length), block n).
#: ``imdb``: every review at the full length (the worst case); ``imdb-short``: the same array length
#: with reviews of 100-250 tokens (a block of a length-sorted set; the fast backend drops the
#: all-masked tail exactly, neural-tangents computes the whole array).
CASES: dict[str, list[tuple[str, str, int, int, int]]] = {
    "smoke": [("cifar", "struct", 1, 4, 4), ("imdb", "struct", 1, 16, 3)],
    "default": [("cifar", f, 1, 8, 16) for f in ("struct", "vanilla", "residual", "gap")]
    + [("cifar", "struct", 2, 8, 16)]
    + [("cifar", f, 1, 16, 6) for f in ("struct", "vanilla", "residual", "gap")]
    + [("imdb", "struct", 1, 128, 8), ("imdb", "struct", 1, 500, 5), ("imdb-short", "struct", 1, 500, 5)],
}
CASES["paper"] = CASES["default"]


def _flops(leaf: Layer, plan, nk: int) -> tuple[float, float]:
    if isinstance(leaf, Conv):
        taps = float(np.prod(leaf.filter_shape))
        s = float(np.prod(plan.out_shape))
        return nk * taps * (s * s if plan.in_mode == "full" else s), 0.0
    if isinstance(leaf, GlobalSelfAttention):
        s = float(np.prod(plan.in_shape))
        f = nk * (4 * s ** 3 if plan.out_mode == "full" else 2 * s ** 3 + 2 * s * s)
        return f, f
    return 0.0, 0.0


def flop_count(model: Layer, in_shape: tuple[int, ...], compute_ntk: bool = True) -> dict[str, float]:
    r"""Analytic FLOPs per input pair of the fast backend (``fast`` module docstring): the input
    covariance :math:`2C\cdot S^2` (full) or :math:`2C\cdot S` (diagonal), conv taps, attention
    products; elementwise layers 0. ``{"total", "attention"}``."""
    kf = FastKernelFn(model)
    plan = kf.plan(in_shape)
    nk = 2 if compute_ntk else 1
    s0 = float(np.prod(in_shape[:-1])) if len(in_shape) > 1 else 1.0
    total = 2.0 * in_shape[-1] * (s0 * s0 if plan.in_mode == "full" else s0)
    att = 0.0
    for leaf, pl in iter_leaves(model, plan):
        f, a = _flops(leaf, pl, nk)
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
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        f(a, b).block_until_ready()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    fl = 2.0 * m ** 3
    return {"size": m, "best": fl / min(wall), "median": fl / statistics.median(wall), "cpu_best": fl / min(cpu)}


def h4_model(family: str, depth: int, arch: Mapping[str, Any]) -> Layer:
    """The H4 model, as ``hron2020.cifar10.build_model`` describes it."""
    from ntkrepro.hron2020.cifar10 import build_model

    return from_stax_builder(build_model, family, depth, dict(arch))


def h6_model(family: str, depth: int, filter_size: int, W_pos_emb_std: float) -> Layer:
    """The H6 model, as ``hron2020.imdb.build_kernel_fn`` describes it."""
    from ntkrepro.hron2020.imdb import build_kernel_fn

    return from_stax_builder(build_kernel_fn, family, depth, filter_size=filter_size, W_pos_emb_std=W_pos_emb_std)


def _inputs(dataset: str, size: int, n: int, seed: int, h6: Mapping[str, Any]) -> tuple[np.ndarray, float | None]:
    rng = np.random.default_rng(seed)
    if dataset == "cifar":
        return rng.standard_normal((n, size, size, 3)).astype(np.float32), None
    c = float(h6["mask_constant"])
    margin = (int(h6["filter_size"]) - 1) // 2
    x = rng.standard_normal((n, size + margin, 50)).astype(np.float32)
    lengths = rng.integers(100, 251, n) if dataset == "imdb-short" else np.full(n, size)
    for i, ln in enumerate(lengths):
        x[i, ln:] = c
    return x, c


def _time(fn: Callable[[], Any]) -> tuple[float, float]:
    import jax

    t0, c0 = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn())
    return time.perf_counter() - t0, time.process_time() - c0


def _summary(wall: list[float], cpu: list[float], pairs: int) -> dict[str, Any]:
    return {"seconds": wall, "cpu_seconds": cpu, "pairs_per_second_best": pairs / min(wall),
            "pairs_per_second_median": pairs / statistics.median(wall),
            "pairs_per_cpu_second_best": pairs / min(cpu)}


def run_case(dataset: str, family: str, depth: int, size: int, n: int, *, arch: Mapping[str, Any],
             h6: Mapping[str, Any], repeats: int, peak: Mapping[str, float], seed: int = 0) -> dict[str, Any]:
    """One benchmark case (module docstring)."""
    import jax

    if dataset == "cifar":
        model = h4_model(family, depth, arch)
        label = f"cifar {family} depth {depth} S={size * size}"
    else:
        model = h6_model(family, depth, int(h6["filter_size"]), float(h6["W_pos_emb_std"]))
        label = f"{dataset} {family} depth {depth} L={size}"
    x1, mc = _inputs(dataset, size, n, seed, h6)
    x2, _ = _inputs(dataset, size, n, seed + 1, h6)
    get = ("nngp", "ntk")
    load_before = os.getloadavg()
    k_nt = nt_kernel_fn(model)
    k_fast = FastKernelFn(model)
    runs = {"nt": (lambda: tuple(k_nt(x1, x2, get, mask_constant=mc))),
            "fast": (lambda: tuple(k_fast(x1, x2, get, mask_constant=mc)))}
    compile_s = {b: _time(f)[0] for b, f in runs.items()}
    ref, got = runs["nt"](), runs["fast"]()
    diff = {g: float(np.max(np.abs(np.asarray(b, np.float64) - np.asarray(a, np.float64)))
                     / np.max(np.abs(np.asarray(a, np.float64)))) for g, a, b in zip(get, ref, got)}
    times: dict[str, tuple[list[float], list[float]]] = {b: ([], []) for b in runs}
    for _ in range(repeats):
        for b, f in runs.items():
            w, c = _time(f)
            times[b][0].append(w)
            times[b][1].append(c)
    pairs = n * n
    out: dict[str, Any] = {"case": label, "dataset": dataset, "family": family, "depth": depth,
                           "positions" if dataset == "cifar" else "length": size * size if dataset == "cifar" else size,
                           "array_shape": list(x1.shape), "n1": n, "n2": n, "pairs": pairs,
                           "max_rel_diff_fast_vs_nt": diff, "compile_plus_first_call_seconds": compile_s}
    for b in runs:
        out[b] = _summary(*times[b], pairs)
    nt_mem = jax.jit(model.stax()[2], static_argnames=("get", "mask_constant")).lower(
        x1, x2, get=get, mask_constant=mc).compile().memory_analysis()
    out["nt"]["memory_bytes"] = (int(nt_mem.argument_size_in_bytes + nt_mem.output_size_in_bytes
                                     + nt_mem.temp_size_in_bytes) if nt_mem is not None else None)
    prof = k_fast.profile_layers(x1, x2, get, mask_constant=mc, repeats=max(2, repeats))
    out["fast"]["rows_per_chunk"] = k_fast.rows_for(n, n, x1.shape[1:], 4, True)
    out["fast"]["memory_bytes"] = max((r["memory_bytes"] or 0) for r in prof)
    out["fast"]["layers"] = prof
    out["speedup_best"] = out["fast"]["pairs_per_second_best"] / out["nt"]["pairs_per_second_best"]
    out["speedup_median"] = out["fast"]["pairs_per_second_median"] / out["nt"]["pairs_per_second_median"]
    out["speedup_cpu_best"] = out["fast"]["pairs_per_cpu_second_best"] / out["nt"]["pairs_per_cpu_second_best"]
    # FLOPs of the work the fast backend does: on the trimmed arrays when an all-masked tail was
    # dropped (imdb-short), so that achieved FLOP/s stays a rate of real arithmetic
    shape = tuple(x1.shape[1:]) if mc is None else tuple(k_fast._trim(x1, x2, mc)[0].shape[1:])
    fl = flop_count(model, shape)
    out["flops_per_pair"] = {**fl, "input_shape": list(shape)}
    best_fast, best_cpu = min(times["fast"][0]), min(times["fast"][1])
    out["fast"]["flops_per_second"] = fl["total"] * pairs / best_fast
    out["fast"]["fraction_of_matmul"] = out["fast"]["flops_per_second"] / peak["best"]
    att = [r for r in prof if r["layer"] == "GlobalSelfAttention"]
    if att and fl["attention"] > 0:
        per_layer = fl["attention"] / len(att)
        a_wall = sum(r["wall_s"] for r in att)
        a_cpu = sum(r["cpu_s"] for r in att)
        a_pairs = att[0]["pairs"]
        out["attention"] = {
            "flops_per_pair": fl["attention"], "pairs_timed": a_pairs, "seconds_best": a_wall, "cpu_seconds_best": a_cpu,
            "flops_per_second": per_layer * len(att) * a_pairs / a_wall,
            "fraction_of_matmul": per_layer * len(att) * a_pairs / a_wall / peak["best"],
            "fraction_of_matmul_cpu": per_layer * len(att) * a_pairs / a_cpu / peak["cpu_best"]}
    out["fast"]["fraction_of_matmul_cpu"] = fl["total"] * pairs / best_cpu / peak["cpu_best"]
    out["load_average_before"], out["load_average_after"] = list(load_before), list(os.getloadavg())
    return out


def run_benchmark(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Rule ``fast_kernels_benchmark``: every case of :data:`CASES` for the run's scale (or
    ``params["cases"]``), both backends interleaved, with the matmul reference (module docstring).
    ``params``: ``h4_arch`` (the H4 ``arch`` section), ``h6`` (``filter_size``, ``W_pos_emb_std``,
    ``mask_constant``), optional ``repeats`` (default 3), ``matmul_size`` (1024), ``cases``."""
    import jax

    repeats = int(params.get("repeats", 3))
    cases = [tuple(c) for c in params.get("cases") or CASES.get(ctx.scale, CASES["default"])]
    peak_before = matmul_flops(int(params.get("matmul_size", 1024)), max(3, repeats))
    rows = []
    for case in ctx.progress(cases, desc="fast kernels benchmark"):
        rows.append(run_case(*case, arch=params["h4_arch"], h6=params["h6"], repeats=repeats, peak=peak_before))
    peak_after = matmul_flops(int(params.get("matmul_size", 1024)), max(3, repeats))
    peak = max(peak_before, peak_after, key=lambda p: p["best"])
    for r in rows:  # fractions against the better of the two matmul measurements
        r["fast"]["fraction_of_matmul"] = r["fast"]["flops_per_second"] / peak["best"]
        if "attention" in r:
            a = r["attention"]
            a["fraction_of_matmul"] = a["flops_per_second"] / peak["best"]
    targets = {}
    for r in rows:
        key = (f"cifar S={r['positions']}" if r["dataset"] == "cifar" else f"{r['dataset']} L={r['length']}")
        if key in TARGETS and r["family"] != "gap":
            targets.setdefault(key, []).append({"case": r["case"], "speedup_median": r["speedup_median"],
                                                "speedup_best": r["speedup_best"], "target": TARGETS[key],
                                                "met_median": r["speedup_median"] >= TARGETS[key]})
    att = [{"case": r["case"], "fraction": r["attention"]["fraction_of_matmul"],
            "fraction_cpu": r["attention"]["fraction_of_matmul_cpu"],
            "met": r["attention"]["fraction_of_matmul"] >= TARGETS["attention_fraction_of_matmul"]}
           for r in rows if "attention" in r]
    return {"benchmark": "fast_kernels_vs_neural_tangents", "scale": ctx.scale, "repeats": repeats,
            "matmul_flops_per_second": peak, "matmul_before": peak_before, "matmul_after": peak_after,
            "cpu_count": os.cpu_count(), "devices": [str(d) for d in jax.devices()],
            "inputs": "random (see ntkrepro.kernels._src.bench docstring)", "cases": rows,
            "targets": {"speedup": targets, "attention_fraction_of_matmul": att}}
