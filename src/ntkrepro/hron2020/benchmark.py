r"""Benchmarks of Hron et al.'s kernel models (H4 CIFAR-10, H6 IMDb): both backends, and the
paper-scale plan of the kernel rules. Generic timing / FLOP helpers are in
:mod:`ntkrepro.kernels._src.bench` (the shared kernel layer knows no paper; this module does).

Three rules (``snakemake benchmarks``, none part of ``all``):

``fast_kernels_benchmark`` (:func:`run_benchmark`)
    (``sweeps``: H4's six families from one sweep model against the six models one by one,
    :func:`run_sweep_case`.)
    neural-tangents ``kernel_fn`` vs ``ntkrepro.kernels.fast`` side by side on the same blocks of
    random inputs (:func:`ntkrepro.kernels._src.bench.compare_backends`: compiled, checked against
    each other, timed interleaved; pairs/s, memory, speed-ups, FLOP/s vs dense matmul, the attention
    contraction alone). Cases per scale in :data:`CASES`; random inputs (standard normal images;
    Gaussian 50-d "word vectors", every review at the full length followed by
    ``(filter_size - 1)/2`` masked positions): kernel cost does not depend on the values.

``H4_hron2020_kernel_throughput`` (:func:`run_cifar10_kernel_throughput`)
    per family (default GAP and Struct) at ``benchmark.image_size``, on an :math:`n\times n` block of
    real CIFAR-10 images, after one warm-up call that compiles, **each backend** timed best of
    ``repeats``: pairs/s :math:`= n^2/t`; achieved FLOP/s :math:`= F/t` with :math:`F` XLA's cost
    analysis of the compiled neural-tangents computation (``nt``) or the fast backend's analytic
    count (``fast``: :func:`~ntkrepro.kernels.fast.flop_count`; it runs one computation per layer,
    so no single XLA count exists); the machine's dense matmul FLOP/s (:math:`2m^3/t`) and the ratio
    (target: :math:`\ge 0.5` for the attention kernel at :math:`S\ge 64`).

``paper_scale_plan`` (:func:`run_paper_scale_plan`)
    For every model a kernel rule computes at ``config/paper.yaml`` (H4: each family at each swept
    or final depth, every kernel of ``cifar10.KERNEL_PAIRS``, as the shard rules fan them out; H6:
    every model of ``imdb.model_grid`` plus the final table of each family):

    1. counts the input pairs exactly (:func:`~ntkrepro.kernels._src.bench.block_pairs` at the
       configured ``block_size``: symmetric kernels compute their upper block triangle);
    2. **measures** the fast backend on a small block of random inputs *at the paper's input size*
       (32x32 images; reviews at the full paper length 500 + margin, every review full, the worst
       case): best-of-``repeats`` wall and CPU seconds per pair, NNGP and NTK. Kernel cost is
       independent of the input values and time per pair is constant in :math:`n`, so pairs x
       (seconds per pair) scales the measurement to any :math:`n`;
    3. estimates hours on this CPU (pairs x measured CPU-seconds per pair / cores) and on one GPU:
       analytic FLOPs over an **assumed** sustained rate ``gpu_peak_flops`` x the fraction of this
       CPU's matmul peak the model reached here (an estimate, not a measurement);
    4. peak memory: the largest per-layer XLA buffers of one chunk of pairs (measured) and the
       assembled kernel matrices the regression holds;
    5. the SLURM jobs: H4 ``n_shards`` shard jobs + 1 assembly job (``n_shards = 0``: 1 job); H6 1 job.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ntkrepro.data import imdb, text
from ntkrepro.hron2020.cifar10 import FAMILIES, KERNEL_PAIRS, build_model, build_sweep_model, load_splits
from ntkrepro.hron2020.imdb import build_kernel_fn, mask_margin, model_grid
from ntkrepro.io import atomic_path
from ntkrepro.kernels._src.bench import (block_pairs, compare_backends, flop_count, matmul_flops, measure_fast,
                                         timed)
from ntkrepro.kernels.fast import FastKernelFn, Layer, from_stax_builder, nt_kernel_fn

#: Speed-up targets (median over the interleaved repeats) and fractions of the matmul bound: issue 36's
#: done-when (every CIFAR family at S = 64 >= 15x, the whole attention model >= 0.4 of the matmul bound,
#: IMDb at L = 500 >= 10x); S = 256 and the attention contraction alone keep the earlier targets.
TARGETS = {"cifar S=64": 15.0, "imdb L=500": 10.0, "cifar S=256": 5.0, "attention_fraction_of_matmul": 0.30,
           "whole_model_fraction_of_matmul S=64": 0.4}

#: Cases of ``fast_kernels_benchmark`` per scale: (dataset, family, depth, size (image side or
#: review length), block n). ``imdb``: every review at the full length (the worst case);
#: ``imdb-short``: the same array length with reviews of 100-250 tokens (a block of a
#: length-sorted set; the fast backend drops the all-masked tail exactly, neural-tangents computes
#: the whole array).
CASES: dict[str, list[tuple[str, str, int, int, int]]] = {
    "smoke": [("cifar", "struct", 1, 4, 4), ("imdb", "struct", 1, 16, 3)],
    "default": [("cifar", f, 1, 8, 16) for f in ("struct", "vanilla", "residual", "gap")]
    + [("cifar", "struct", 2, 8, 16)]
    # 64 x 64 blocks: the fast pair pass runs in row chunks (CPU memory budget), as on the decisive tier's blocks
    + [("cifar", f, 1, 8, 64) for f in ("struct", "vanilla", "residual")]
    + [("cifar", f, 1, 16, 6) for f in ("struct", "vanilla", "residual", "gap")]
    + [("imdb", "struct", 1, 128, 8), ("imdb", "struct", 1, 500, 5), ("imdb-short", "struct", 1, 500, 5)],
}
CASES["paper"] = CASES["default"]

#: H4 sweep-model cases per scale: (depth, image side, block n). One ``cifar10.build_sweep_model`` (the
#: conv stack once, every family's readout) against the six families' models one by one (issue 36).
SWEEP_CASES: dict[str, list[tuple[int, int, int]]] = {"smoke": [(1, 4, 4)], "default": [(1, 8, 16), (2, 8, 16)]}
SWEEP_CASES["paper"] = SWEEP_CASES["default"]

#: Real-length IMDb cases per scale (issue 36 item 2): (family, depth, review length cap L, reviews per side,
#: block size). Review lengths drawn from the IMDb subset's tokenised reviews (capped at L), inputs random.
LENGTH_CASES: dict[str, list[tuple[str, int, int, int, int]]] = {
    "smoke": [("struct", 1, 32, 6, 3)], "default": [("struct", 1, 500, 64, 16)]}
LENGTH_CASES["paper"] = LENGTH_CASES["default"]

#: Default assumed sustained float32 FLOP/s of "one modern GPU" (an H100-class card's fp32 CUDA-core
#: peak, ~60 TFLOP/s; tensor-core TF32 is faster but changes the arithmetic).
GPU_PEAK_FLOPS = 60e12


# --------------------------------------------------------------------------------------------
# the models


def h4_model(family: str, depth: int, arch: Mapping[str, Any]) -> Layer:
    """The H4 model, as ``hron2020.cifar10.build_model`` describes it."""
    return from_stax_builder(build_model, family, depth, dict(arch))


def h6_model(family: str, depth: int, filter_size: int, W_pos_emb_std: float) -> Layer:
    """The H6 model, as ``hron2020.imdb.build_kernel_fn`` describes it."""
    return from_stax_builder(build_kernel_fn, family, depth, filter_size=filter_size, W_pos_emb_std=W_pos_emb_std)


# --------------------------------------------------------------------------------------------
# fast_kernels_benchmark


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


def run_case(dataset: str, family: str, depth: int, size: int, n: int, *, arch: Mapping[str, Any],
             h6: Mapping[str, Any], repeats: int, peak: Mapping[str, float], seed: int = 0) -> dict[str, Any]:
    """One case of :data:`CASES` (module docstring)."""
    if dataset == "cifar":
        model = h4_model(family, depth, arch)
        label = f"cifar {family} depth {depth} S={size * size}" + ("" if n <= 16 else f" block {n}x{n}")
    else:
        model = h6_model(family, depth, int(h6["filter_size"]), float(h6["W_pos_emb_std"]))
        label = f"{dataset} {family} depth {depth} L={size}"
    x1, mc = _inputs(dataset, size, n, seed, h6)
    x2, _ = _inputs(dataset, size, n, seed + 1, h6)
    head = {"case": label, "dataset": dataset, "family": family, "depth": depth,
            "positions" if dataset == "cifar" else "length": size * size if dataset == "cifar" else size}
    return {**head, **compare_backends(model, x1, x2, mask_constant=mc, repeats=repeats, peak=peak)}


def run_sweep_case(depth: int, size: int, n: int, *, arch: Mapping[str, Any], repeats: int, seed: int = 0
                   ) -> dict[str, Any]:
    """H4's six families at ``depth`` on one ``n x n`` block of random ``size x size`` images: the sweep
    model (:func:`ntkrepro.hron2020.cifar10.build_sweep_model`, what the decisive tier computes) against
    the sum of the six models' times, fast backend and neural-tangents, best of ``repeats`` each; and
    the largest relative difference of any family's kernel from neural-tangents'."""
    rng = np.random.default_rng(seed)
    x1 = rng.standard_normal((n, size, size, 3)).astype(np.float32)
    x2 = rng.standard_normal((n, size, size, 3)).astype(np.float32)
    get = ("nngp", "ntk")
    sweep = FastKernelFn(build_sweep_model(FAMILIES, depth, dict(arch)))
    outs = sweep(x1, x2, get)

    def best(fn):
        fn()  # compile
        runs = [timed(fn) for _ in range(max(1, repeats))]
        return min(w for w, _ in runs), min(c for _, c in runs)

    t_sweep = best(lambda: [tuple(k) for k in sweep(x1, x2, get)])
    t_nt, t_fast, diff = [0.0, 0.0], [0.0, 0.0], 0.0
    for fam, out in zip(FAMILIES, outs):
        model = h4_model(fam, depth, arch)
        nt, one = nt_kernel_fn(model), FastKernelFn(model)
        for acc, fn in ((t_nt, lambda: tuple(nt(x1, x2, get))), (t_fast, lambda: tuple(one(x1, x2, get)))):
            w, c = best(fn)
            acc[0] += w
            acc[1] += c
        ref = nt(x1, x2, get)
        for g in get:
            a, b = np.asarray(getattr(out, g), np.float64), np.asarray(getattr(ref, g), np.float64)
            diff = max(diff, float(np.max(np.abs(a - b)) / np.max(np.abs(b))))
    pairs = n * n
    return {"case": f"cifar sweep depth {depth} S={size * size}", "depth": depth, "positions": size * size,
            "families": list(FAMILIES), "pairs": pairs,
            "sweep_pairs_per_second": pairs / t_sweep[0], "sweep_cpu_us_per_pair": 1e6 * t_sweep[1] / pairs,
            "fast_models_pairs_per_second": pairs / t_fast[0], "fast_models_cpu_us_per_pair": 1e6 * t_fast[1] / pairs,
            "nt_models_pairs_per_second": pairs / t_nt[0], "nt_models_cpu_us_per_pair": 1e6 * t_nt[1] / pairs,
            "speedup_vs_nt_models": t_nt[0] / t_sweep[0], "speedup_vs_fast_models": t_fast[0] / t_sweep[0],
            "max_rel_diff_vs_nt": diff}


def review_lengths(imdb_cfg: Mapping[str, Any], seq_len: int, ctx=None) -> np.ndarray:
    """Token counts (capped at ``seq_len``) of every review of the configured IMDb archive, tokenised as H6
    tokenises (:func:`ntkrepro.data.text.tokenize`): the length distribution the H6 kernels meet."""
    path = imdb.resolve(imdb_cfg)
    if ctx is not None:
        ctx.use_data(path)
    reviews = imdb.read_reviews(path)
    return np.array([min(len(text.tokenize(r.text)), int(seq_len)) for v in reviews.values() for r in v])


def run_length_case(family: str, depth: int, seq_len: int, n: int, block: int, *, lengths: np.ndarray,
                    h6: Mapping[str, Any], repeats: int, seed: int = 0, nt_blocks: int = 2) -> dict[str, Any]:
    r"""H6's kernel on reviews of the real length distribution, as the H6 runs compute it (issue 36 item 2).

    Two sets of ``n`` reviews whose lengths are drawn from ``lengths`` (word vectors random: cost does not
    depend on them), each padded to ``seq_len`` + the model's margin with the mask constant and sorted by
    length, cut into blocks of ``block`` (:func:`ntkrepro.kernels.blocks.compute_kernel_blocks_sorted`'s
    layout). The fast backend computes every block pair, each block at its own length (its exact trimming of
    the tail masked in every review of a side: a pair of blocks at lengths :math:`l_1, l_2` computes
    :math:`l_1\times l_2` position pairs): its time is the sum. neural-tangents computes the whole
    padded array whatever the lengths, so its time per pair is the same on every block pair: it is timed on
    ``nt_blocks`` block pairs (the shortest and the longest, the same blocks the fast backend computes,
    compared entry by entry) and its time for all pairs is that per-pair time :math:`\times n^2`
    (extrapolated, labelled). Speed-ups per repeat, median and best over ``repeats``."""
    rng = np.random.default_rng(seed)
    mc = float(h6["mask_constant"])
    margin = (int(h6["filter_size"]) - 1) // 2  # as _inputs: the masked margin after the longest review
    lengths = np.asarray(lengths)

    def draw() -> tuple[np.ndarray, np.ndarray]:
        ln = rng.choice(lengths, n, replace=False)
        x = rng.standard_normal((n, seq_len + margin, 50)).astype(np.float32)
        for i, k in enumerate(ln):
            x[i, k:] = mc
        o = np.argsort(ln, kind="stable")
        return x[o], ln[o]

    (x1, l1), (x2, l2) = draw(), draw()
    model = h6_model(family, depth, int(h6["filter_size"]), float(h6["W_pos_emb_std"]))
    fast, nt = FastKernelFn(model), nt_kernel_fn(model)
    get = ("nngp", "ntk")
    cuts = [slice(i, min(i + block, n)) for i in range(0, n, block)]
    grid = [(a, b) for a in cuts for b in cuts]
    picks = [grid[0], grid[-1]][:max(1, nt_blocks)]

    def fast_all():
        return [tuple(fast(x1[a], x2[b], get, mask_constant=mc)) for a, b in grid]

    def nt_picks():
        return [tuple(nt(x1[a], x2[b], get, mask_constant=mc)) for a, b in picks]

    compile_s = {"fast": timed(fast_all)[0], "nt": timed(nt_picks)[0]}  # one compilation per length bucket
    ref, got = nt_picks(), [tuple(fast(x1[a], x2[b], get, mask_constant=mc)) for a, b in picks]
    diff = {g: max(float(np.max(np.abs(np.asarray(f[i], np.float64) - np.asarray(r[i], np.float64)))
                         / np.max(np.abs(np.asarray(r[i], np.float64)))) for r, f in zip(ref, got))
            for i, g in enumerate(get)}
    nt_pairs = sum((a.stop - a.start) * (b.stop - b.start) for a, b in picks)
    t_fast, t_nt = [], []
    for _ in range(max(1, repeats)):  # interleaved, so that a change of machine load hits both
        t_fast.append(timed(fast_all)[0])
        t_nt.append(timed(nt_picks)[0] / nt_pairs * n * n)
    speedups = [a / b for a, b in zip(t_nt, t_fast)]
    kept = [tuple(int(y.shape[1]) for y in fast._trim(x1[a], x2[b], mc)) for a, b in grid]
    return {"case": f"imdb-real {family} depth {depth} L={seq_len}", "dataset": "imdb-real", "family": family,
            "depth": depth, "length": seq_len, "n1": n, "n2": n, "pairs": n * n, "block": block,
            "review_lengths": {"subset_reviews": int(lengths.size), "median": float(np.median(lengths)),
                               "mean": float(np.mean(lengths)), "fraction_at_cap": float(np.mean(lengths >= seq_len)),
                               "drawn_mean": float(np.mean(np.concatenate([l1, l2])))},
            "array_length": int(x1.shape[1]), "computed_lengths": [list(k) for k in kept],
            "computed_lengths_mean": float(np.mean(kept)),
            "computed_longer_length_mean": float(np.mean([max(k) for k in kept])),
            "computed_position_pairs_fraction": float(np.mean([a * b for a, b in kept])) / int(x1.shape[1]) ** 2,
            "fast": {"seconds": t_fast, "pairs_per_second_median": n * n / float(np.median(t_fast)),
                     "pairs_per_second_best": n * n / min(t_fast)},
            "nt": {"seconds_extrapolated": t_nt, "pairs_timed": nt_pairs, "blocks_timed": len(picks),
                   "pairs_per_second_median": n * n / float(np.median(t_nt)),
                   "pairs_per_second_best": n * n / min(t_nt)},
            "compile_plus_first_call_seconds": compile_s, "max_rel_diff_fast_vs_nt": diff,
            "speedup_median": float(np.median(speedups)), "speedup_best": max(speedups), "speedups": speedups}


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
        if key in TARGETS and (r["family"] != "gap" or key == "cifar S=64"):  # issue 36: every family at S = 64
            targets.setdefault(key, []).append({"case": r["case"], "speedup_median": r["speedup_median"],
                                                "speedup_best": r["speedup_best"], "target": TARGETS[key],
                                                "met_median": r["speedup_median"] >= TARGETS[key]})
    att = [{"case": r["case"], "fraction": r["attention"]["fraction_of_matmul"],
            "fraction_cpu": r["attention"]["fraction_of_matmul_cpu"],
            "met": r["attention"]["fraction_of_matmul"] >= TARGETS["attention_fraction_of_matmul"]}
           for r in rows if "attention" in r]
    whole = TARGETS["whole_model_fraction_of_matmul S=64"]
    whole_rows = [{"case": r["case"], "fraction": r["fast"]["fraction_of_matmul"],
                   "fraction_cpu": r["fast"].get("fraction_of_matmul_cpu"), "target": whole,
                   "met": r["fast"]["fraction_of_matmul"] >= whole}
                  for r in rows if r["dataset"] == "cifar" and r.get("positions") == 64
                  and r["family"] in ("vanilla", "struct", "residual")]
    sweeps = [run_sweep_case(*c, arch=params["h4_arch"], repeats=repeats)
              for c in ctx.progress(SWEEP_CASES.get(ctx.scale, SWEEP_CASES["default"]), desc="H4 sweep model")]
    real = []
    length_cases = [tuple(c) for c in params.get("length_cases", LENGTH_CASES.get(ctx.scale, LENGTH_CASES["default"]))]
    if length_cases and params["h6"].get("imdb"):
        lens = {}
        for fam, dep, L, n, blk in ctx.progress(length_cases, desc="IMDb real lengths"):
            if L not in lens:
                lens[L] = review_lengths(params["h6"]["imdb"], L, ctx)
            real.append(run_length_case(fam, dep, L, n, blk, lengths=lens[L], h6=params["h6"], repeats=repeats))
    for r in real:
        key = f"imdb L={r['length']}"
        targets.setdefault(f"imdb real lengths L={r['length']}", []).append(
            {"case": r["case"], "speedup_median": r["speedup_median"], "speedup_best": r["speedup_best"],
             "target": TARGETS.get(key, 10.0), "met_median": r["speedup_median"] >= TARGETS.get(key, 10.0)})
    return {"benchmark": "fast_kernels_vs_neural_tangents", "scale": ctx.scale, "repeats": repeats, "sweeps": sweeps,
            "real_length_cases": real,
            "matmul_flops_per_second": peak, "matmul_before": peak_before, "matmul_after": peak_after,
            "cpu_count": os.cpu_count(), "devices": [str(d) for d in jax.devices()],
            "inputs": "random (see ntkrepro.hron2020.benchmark docstring)", "cases": rows,
            "targets": {"speedup": targets, "attention_fraction_of_matmul": att,
                        "whole_model_fraction_of_matmul": whole_rows}}


# --------------------------------------------------------------------------------------------
# H4_hron2020_kernel_throughput


def _best(fn, repeats: int) -> float:
    return min(timed(fn)[0] for _ in range(max(1, repeats)))


def run_cifar10_kernel_throughput(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Rule ``H4_hron2020_kernel_throughput``: both backends per family on real CIFAR-10 images
    (module docstring). ``rows``: one per (family, backend)."""
    import jax


    b = params["benchmark"]
    n, repeats, size = int(b["n"]), int(b["repeats"]), int(b["image_size"])
    d = load_splits({**params, "n_train": n, "n_val": 0, "image_size": size}, ctx, need_test=False)
    x = jax.numpy.asarray(d["x_train"])
    peak = matmul_flops(int(b.get("matmul_size", 1024)), repeats)["best"]
    get = ("nngp", "ntk")
    rows = []
    for fam in b["families"]:
        model = h4_model(fam, int(b["depth"]), dict(params["arch"]))
        k_fn = model.stax()[2]
        jk = jax.jit(lambda a, c, _k=k_fn: _k(a, c, get))
        cost = jk.lower(x, x).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        kf = FastKernelFn(model)
        backends = {"nt": (lambda: jk(x, x), float(cost.get("flops", float("nan"))) if cost else float("nan"),
                           "xla_cost_analysis"),
                    "fast": (lambda: tuple(kf(x, x, get)), flop_count(model, tuple(x.shape[1:]))["total"] * n * n,
                             "analytic (kernels.fast.flop_count)")}
        ref = {k: np.asarray(v, np.float64) for k, v in zip(get, jax.block_until_ready(jk(x, x)))}
        for name, (fn, flops, source) in backends.items():
            out = jax.block_until_ready(fn())  # compiles
            t = _best(fn, repeats)
            row = {"family": fam, "backend": name, "depth": int(b["depth"]), "positions": size * size, "n": n,
                   "seconds": t, "pairs_per_second": n * n / t, "flops": flops, "flops_source": source,
                   "achieved_flops_per_second": flops / t, "fraction_of_matmul": flops / t / peak}
            if name == "fast":
                row["max_rel_diff_vs_nt"] = {g: float(np.max(np.abs(np.asarray(o, np.float64) - ref[g]))
                                                      / np.max(np.abs(ref[g]))) for g, o in zip(get, out)}
            rows.append(row)
    att = [r for r in rows if r["family"] in ("vanilla", "struct", "residual") and r["positions"] >= 64]
    return {"benchmark": "hron2020_kernel_throughput", "matmul_flops_per_second": peak,
            "matmul_size": int(b.get("matmul_size", 1024)), "cpu_count": os.cpu_count(),
            "devices": [str(dev) for dev in jax.devices()], "rows": rows,
            "target": "attention kernel at S >= 64 reaches >= 50% of matmul FLOP/s",
            "target_met": {be: (all(r["fraction_of_matmul"] >= 0.5 for r in att if r["backend"] == be) if att else None)
                           for be in ("nt", "fast")}}


# --------------------------------------------------------------------------------------------
# paper_scale_plan


def h4_jobs(p: Mapping[str, Any]) -> list[dict[str, Any]]:
    """H4 at config ``p``: per (family, depth) the pairs of every kernel of ``KERNEL_PAIRS`` (what
    the shard rules compute: all depths, swept and final)."""
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


def _plan_inputs(kind: str, shape: tuple[int, ...], n: int, seed: int, mask_constant: float | None,
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
            m = measure_fast(model, _plan_inputs(kind, shape, n, 1, mc, margin),
                             _plan_inputs(kind, shape, n, 2, mc, margin), mc, repeats)
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
        with atomic_path(ctx.outputs["markdown"]) as tmp:
            tmp.write_text(markdown(out))
    return out


def _bytes(b: float) -> str:
    return f"{b / 2 ** 30:.1f} GiB" if b >= 2 ** 30 else f"{b / 2 ** 20:.0f} MiB"


def markdown(plan: Mapping[str, Any]) -> str:
    """The plan as a Markdown page (``results/benchmarks/paper_scale_plan.md``)."""
    lines = ["# Paper-scale plan of the kernel rules (config/paper.yaml)", "",
             "Generated by rule `paper_scale_plan` (`ntkrepro.hron2020.benchmark`) from the fast backend timed on "
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
