r"""The d^-1/2 softmax attention kernel by Monte Carlo (``GlobalSelfAttention(linear_scaling=False,
mc_samples=N)``, :mod:`ntkrepro.kernels._src.attention_mc`; issue 41): the numbers nobody has.
**An extension beyond the four papers** (no claim of the ledger rests on it; no verdict).

Rule ``mc_attention_benchmark`` (``snakemake benchmarks``, not part of ``all``), :func:`run_mc_attention_benchmark`:

``error_speed``
    :func:`ntkrepro.kernels._src.bench.mc_attention_benchmark` per case (random sequences; the layer
    alone on the inputs' kernel): the median per-entry standard error relative to the kernel's RMS
    entry against the draw count :math:`N` (from independent seeds; fitted log-log slope, -1/2
    expected), entries (NNGP + NTK) per second, achieved FLOP/s as a fraction of this machine's
    float32 matmul. Wall-clock and CPU-time rates both (the machine may be shared).

``accuracy``
    Kernel regression test accuracy of the **same architecture** at :math:`d^{-1}` (neural-tangents'
    ``linear_scaling=True``: closed form, tied query/key weights) and at :math:`d^{-1/2}` (Monte Carlo,
    independent query/key weights) against :math:`N`, softmax attention, no positional embedding
    (the Monte Carlo layer has none):

    * CIFAR-10 at ``image_size`` (8x8: 64 positions), Hron et al.'s H4 ``vanilla`` family at depth 1
      (``Conv(3x3) -> Relu -> GlobalSelfAttention -> Flatten -> Dense(10)``, the ``hron2020.H4.arch``
      section, ``attention_mechanism`` replaced by ``SOFTMAX``), one-hot targets, 10 classes;
    * IMDb, H6's ``struct`` family at depth 1 *without its positional embedding*
      (``Conv(9, VALID) -> Relu -> GlobalSelfAttention -> Relu -> GlobalAvgPool -> Dense(1)``),
      reviews truncated to ``seq_len`` tokens (GloVe 50-d, masked padding), :math:`\pm 0.5` targets.
      ``W_qk_std`` (query and key weights, both scalings) is a parameter per dataset: with H6's 1.0
      the logits of these small-variance text features are so small that both kernels are close to
      uniform attention (measured: within 1 % of each other), so the comparison says nothing.

    The :math:`N`-draw kernels: ``replicates`` runs of ``base_samples`` draws each with independent
    seeds (:func:`ntkrepro.kernels._src.mc_replicates.with_seed`); the kernel at :math:`N = m\cdot`
    ``base_samples`` is the mean of the first :math:`m` runs (:math:`m = 1, 2, 4, \dots`), which has
    the distribution of one run of :math:`N` draws (every run's draws are swap-closed pairs of iid
    normals), so one sweep costs ``replicates x base_samples`` draws, not the sum over :math:`N`. Per
    :math:`N`: the relative Frobenius distance of the train kernel to the largest-:math:`N` kernel and
    its relative per-entry standard error (spread of the runs / :math:`\sqrt m`); the ridge
    :math:`\lambda` (of ``diag_reg_grid``) by leave-one-out accuracy on the training set (closed form,
    no validation split: every kernel entry computed goes into the fit); test accuracy with a
    bootstrap interval over test points, and the paired bootstrap interval of the difference
    (Monte Carlo :math:`d^{-1/2}` minus :math:`d^{-1}`) on the same test points, with the fraction
    of test points on which exactly one of the two is right (what sets that interval's width;
    ``difference_at_largest_n`` repeats the largest :math:`N`'s); as a diagnostic (never a
    selection), the test accuracy of every kernel at every ridge of the grid it can use
    (``by_diag_reg``) and the paired difference at the same ridge
    (``difference_to_d_inverse_at_same_diag_reg``): the two leave-one-out selections may choose
    different ridges (a Monte Carlo kernel with a negative eigenvalue cannot use the small ones);
    the Cholesky jitter actually added (the Monte Carlo
    kernel is not guaranteed positive semi-definite). NNGP and NTK. Wall and CPU seconds of every
    kernel.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ntkrepro.kernels.inference import accuracy, accuracy_with_ci, kernel_regression, predicted_classes
from ntkrepro.stats import paired_bootstrap

KERNELS = ("nngp", "ntk")
#: Bytes of the Monte Carlo layer's per-draw arrays per row chunk (sets the engine's ``rows``).
MC_ROW_BUDGET = 64 * 2 ** 20


# --------------------------------------------------------------------------------------------
# the models: the same architecture at d^-1 (closed form) and d^-1/2 (Monte Carlo)


def _attention(fast, width: int, qk_std: float, v_std: float, mc_samples: int | None, seed: int):
    kw: dict[str, Any] = dict(attention_mechanism="SOFTMAX", W_query_std=qk_std, W_key_std=qk_std,
                              W_value_std=v_std, W_out_std=1.0, b_std=None)
    if mc_samples is None:
        return fast.GlobalSelfAttention(width, width, width, 1, linear_scaling=True, **kw)
    return fast.GlobalSelfAttention(width, width, width, 1, linear_scaling=False, mc_samples=int(mc_samples),
                                    mc_seed=int(seed), **kw)


def cifar_model(arch: Mapping[str, Any], mc_samples: int | None, seed: int = 0, qk_std: float | None = None):
    """H4 ``vanilla`` at depth 1 with softmax attention (module docstring); ``mc_samples=None``: the
    d^-1 kernel (``linear_scaling=True``), else the Monte Carlo d^-1/2 kernel."""
    from ntkrepro.hron2020.cifar10 import _conv_stack
    from ntkrepro.kernels import fast

    width = int(arch.get("width", 64))
    qk = float(arch.get("W_qk_std", 1.0)) if qk_std is None else float(qk_std)
    att = _attention(fast, width, qk, float(arch.get("W_std", 1.0)), mc_samples, seed)
    return fast.serial(*_conv_stack(fast, 1, arch), att, fast.Flatten(), fast.Dense(10, W_std=1.0, b_std=0.0))


def imdb_model(filter_size: int, mc_samples: int | None, seed: int = 0, qk_std: float = 1.0):
    """H6 ``struct`` at depth 1 without the positional embedding, softmax attention (module
    docstring; neural-tangents' layer defaults, as H6, but ``W_query_std = W_key_std = qk_std``)."""
    from ntkrepro.kernels import fast

    att = _attention(fast, 1, float(qk_std), 1.0, mc_samples, seed)
    return fast.serial(fast.Conv(1, (int(filter_size),), strides=(1,), padding="VALID"), fast.Relu(), att,
                       fast.Relu(), fast.GlobalAvgPool(), fast.Dense(1))


# --------------------------------------------------------------------------------------------
# kernels and regression


def _rows(x: np.ndarray, n2: int) -> int:
    """Row chunk so that one draw's arrays of the Monte Carlo layer (~24 S x S per pair) fit
    :data:`MC_ROW_BUDGET`."""
    s = int(np.prod(x.shape[1:-1]))
    return int(max(1, min(x.shape[0], MC_ROW_BUDGET // max(1, n2 * 24 * s * s * 4))))


def compute_kernels(model, x_train: np.ndarray, x_test: np.ndarray, mask_constant: float | None) -> dict[str, Any]:
    """NNGP and NTK train-train and test-train of ``model`` (fast backend), float64 copies, with
    wall and CPU seconds."""
    from ntkrepro.kernels import fast

    kf = fast.FastKernelFn(model, rows=_rows(x_train, x_train.shape[0]))
    t0, c0 = time.perf_counter(), time.process_time()
    ktt = kf(x_train, None, KERNELS, mask_constant=mask_constant)
    kst = kf(x_test, x_train, KERNELS, mask_constant=mask_constant)
    out = {f"{g}_train": np.asarray(getattr(ktt, g), np.float64) for g in KERNELS}
    out.update({f"{g}_test": np.asarray(getattr(kst, g), np.float64) for g in KERNELS})
    out["seconds"], out["cpu_seconds"] = time.perf_counter() - t0, time.process_time() - c0
    return out


def loo_select(k: np.ndarray, y: np.ndarray, grid: Sequence[float]) -> tuple[float, list[dict[str, float]]]:
    r""":math:`\lambda` of ``grid`` with the best leave-one-out accuracy of kernel ridge regression on
    the training set (ties: lower LOO MSE, then the smaller :math:`\lambda`). Closed form: with
    :math:`A = (K + \lambda\bar kI)^{-1}` the LOO prediction of :math:`i` is :math:`y_i - (AY)_i/A_{ii}`
    (:math:`\bar k` the mean diagonal, as :func:`ntkrepro.kernels.inference.kernel_regression`).
    A :math:`\lambda` whose matrix is not positive definite is skipped."""
    y2 = y.reshape(len(y), -1).astype(np.float64)
    kbar = float(np.mean(np.diag(k)))
    scores = []
    for lam in grid:
        m = k + float(lam) * kbar * np.eye(len(k))
        try:
            np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            continue
        a = np.linalg.inv(m)
        pred = y2 - (a @ y2) / np.diag(a)[:, None]
        pred = pred if y.ndim == 2 else pred[:, 0]
        scores.append({"diag_reg": float(lam), "loo_accuracy": accuracy(pred, y),
                       "loo_mse": float(np.mean((pred.reshape(len(y), -1) - y2) ** 2))})
    if not scores:
        raise ValueError("no diag_reg of the grid gives a positive definite training kernel")
    best = min(scores, key=lambda s: (-s["loo_accuracy"], s["loo_mse"], s["diag_reg"]))
    return best["diag_reg"], scores


def _correct(pred: np.ndarray, y_test: np.ndarray) -> np.ndarray:
    """Per test point: 1.0 where the predicted class is the label, else 0.0."""
    y = np.asarray(y_test)
    lab = np.argmax(y, axis=1) if (y.ndim == 2 and y.shape[1] > 1) else (y.reshape(-1) > 0).astype(int)
    return (np.asarray(predicted_classes(pred)).reshape(-1).astype(int) == lab).astype(float)


def fit(k_train: np.ndarray, k_test: np.ndarray, y_train: np.ndarray, y_test: np.ndarray, grid: Sequence[float],
        n_boot: int, seed: int) -> dict[str, Any]:
    """LOO-selected ridge, then test predictions: accuracy with a bootstrap interval, per-point
    correctness (for paired comparisons), jitter. ``by_diag_reg``: a diagnostic, never used to
    choose: the test accuracy (and per-point correctness) at every ridge of ``grid`` whose matrix
    is positive definite, so that a difference between two kernels can be told apart from a
    difference between the ridges their leave-one-out selections chose."""
    lam, scores = loo_select(k_train, y_train, grid)
    pred, jitter = kernel_regression(k_train, k_test, y_train, lam, return_jitter=True)
    ci = accuracy_with_ci(pred, y_test, n_boot=n_boot, seed=seed)
    correct = _correct(pred, y_test)
    if not np.isclose(correct.mean(), ci.value):  # the paired differences use these per-point results
        raise AssertionError(f"per-point correctness {correct.mean()} disagrees with the accuracy {ci.value}")
    by = {}
    for s in scores:  # the ridges loo_select could use (positive definite)
        p_l, j_l = kernel_regression(k_train, k_test, y_train, s["diag_reg"], return_jitter=True)
        c_l = _correct(p_l, y_test)
        by[s["diag_reg"]] = {"diag_reg": s["diag_reg"], "loo_accuracy": s["loo_accuracy"],
                             "test_accuracy": float(c_l.mean()), "jitter": float(j_l), "correct": c_l}
    return {"diag_reg": lam, "loo": scores, "jitter": float(jitter), "test_accuracy": ci.value,
            "test_accuracy_ci": [ci.low, ci.high], "correct": correct, "by_diag_reg": by}


def _public(by: Mapping[float, Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "correct"} for r in by.values()]


def accuracy_sweep(name: str, model_fn, data: Mapping[str, Any], *, base_samples: int, replicates: int,
                   grid: Sequence[float], n_boot: int, seed: int, mask_constant: float | None = None,
                   progress=lambda it, desc: it) -> dict[str, Any]:
    """One dataset (module docstring): the d^-1 kernel, then ``replicates`` Monte Carlo runs of
    ``base_samples`` draws, fits at :math:`N = m\\cdot` ``base_samples``, :math:`m = 1, 2, 4, \\dots`."""
    from ntkrepro.kernels._src.mc_replicates import with_seed

    xt, xs, yt, ys = data["x_train"], data["x_test"], data["y_train"], data["y_test"]
    lin = compute_kernels(model_fn(None), xt, xs, mask_constant)
    mc_model = model_fn(int(base_samples), seed)
    runs = [compute_kernels(with_seed(mc_model, r), xt, xs, mask_constant)
            for r in progress(range(int(replicates)), desc=f"{name}: Monte Carlo runs")]
    out: dict[str, Any] = {"dataset": name, "n_train": int(len(yt)), "n_test": int(len(ys)),
                           "input_shape": list(xt.shape[1:]), "base_samples": int(base_samples),
                           "replicates": int(replicates),
                           "seconds": {"d^-1": lin["seconds"], "monte_carlo_per_run": [r["seconds"] for r in runs]},
                           "cpu_seconds": {"d^-1": lin["cpu_seconds"],
                                           "monte_carlo_per_run": [r["cpu_seconds"] for r in runs]}}
    ms = [m for m in (2 ** i for i in range(32)) if m <= replicates]
    for g in KERNELS:
        ref_fit = fit(lin[f"{g}_train"], lin[f"{g}_test"], yt, ys, grid, n_boot, seed)
        stack = {part: np.stack([r[f"{g}_{part}"] for r in runs]) for part in ("train", "test")}
        full = stack["train"].mean(0)
        rows = []
        for m in ms:
            ktr, kte = stack["train"][:m].mean(0), stack["test"][:m].mean(0)
            f = fit(ktr, kte, yt, ys, grid, n_boot, seed)
            row = {"samples": m * int(base_samples), "runs": m, "diag_reg": f["diag_reg"], "jitter": f["jitter"],
                   "test_accuracy": f["test_accuracy"], "test_accuracy_ci": f["test_accuracy_ci"],
                   "relative_distance_to_largest_n": (float(np.linalg.norm(ktr - full) / np.linalg.norm(full))
                                                      if m < ms[-1] else 0.0),
                   "min_eigenvalue_relative": float(np.linalg.eigvalsh((ktr + ktr.T) / 2)[0]
                                                    / np.mean(np.diag(ktr)))}
            if m >= 2:
                se = stack["train"][:m].std(0, ddof=1) / np.sqrt(m)
                row["relative_se_median"] = float(np.median(se) / np.sqrt(np.mean(ktr ** 2)))
            d = paired_bootstrap(f["correct"], ref_fit["correct"], n_boot=n_boot, seed=seed)
            row["difference_to_d_inverse"] = {"value": d.value, "ci": [d.low, d.high],
                                              "discordant_fraction": float(np.mean(f["correct"] != ref_fit["correct"]))}
            # diagnostic (not a selection): both kernels at the same ridge, each ridge both can use
            row["by_diag_reg"] = _public(f["by_diag_reg"])
            same = []
            for lam_, r_ in f["by_diag_reg"].items():
                if lam_ in ref_fit["by_diag_reg"]:
                    dl = paired_bootstrap(r_["correct"], ref_fit["by_diag_reg"][lam_]["correct"], n_boot=n_boot,
                                          seed=seed)
                    same.append({"diag_reg": lam_, "value": dl.value, "ci": [dl.low, dl.high]})
            row["difference_to_d_inverse_at_same_diag_reg"] = same
            rows.append(row)
        mc_vs_lin = float(np.linalg.norm(full - lin[f"{g}_train"]) / np.linalg.norm(lin[f"{g}_train"]))
        out[g] = {"d_inverse": {**{k: v for k, v in ref_fit.items() if k not in ("correct", "loo", "by_diag_reg")},
                                "by_diag_reg": _public(ref_fit["by_diag_reg"])},
                  "monte_carlo": rows, "relative_distance_mc_largest_n_to_d_inverse": mc_vs_lin,
                  # the headline: Monte Carlo d^-1/2 (largest N) minus d^-1, paired over the test points
                  "difference_at_largest_n": {"samples": rows[-1]["samples"], **rows[-1]["difference_to_d_inverse"]}}
    return out


# --------------------------------------------------------------------------------------------
# data


def cifar_data(params: Mapping[str, Any], ctx) -> dict[str, Any]:
    """Class-balanced CIFAR-10 train / test subsets at ``image_size`` (H4's loader), one-hot targets."""
    from ntkrepro.hron2020.cifar10 import load_splits
    from ntkrepro.kernels.inference import one_hot

    d = load_splits({**params, "n_val": 0}, ctx, need_test=True)
    return {"x_train": d["x_train"], "x_test": d["x_test"], "y_train": one_hot(d["y_train"], 10),
            "y_test": one_hot(d["y_test"], 10), "archive_sha256": d["archive_sha256"]}


def imdb_data(params: Mapping[str, Any], ctx) -> dict[str, Any]:
    """Balanced IMDb train / test subsets: H6's loader with its final-table draw (``final``: no
    validation split; drawn with seed ``seed + 1000``)."""
    from ntkrepro.hron2020.imdb import _prepare

    # the mask margin of this model (one VALID convolution on its path): H6's mask_margin
    p = {**params, "cnn_depths": [1], "attention_layers": [1]}
    d = _prepare(p, ctx, final={"n_train": int(params["n_train"]), "n_test": int(params["n_test"])})
    return {"x_train": d["x"]["train"], "x_test": d["x"]["test"], "y_train": d["y"]["train"],
            "y_test": d["y"]["test"], "archive_sha256": d["archive_sha256"], "stats": d["stats"]}


# --------------------------------------------------------------------------------------------
# the rule


def run_mc_attention_benchmark(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Rule ``mc_attention_benchmark`` (module docstring). ``params``: ``error_speed`` (a list of
    cases: ``n``, ``positions``, ``channels``, ``samples``, ``replicates``, ``repeats``, ``qk_std``),
    ``matmul_size``, ``accuracy`` (``base_samples``, ``replicates``, ``diag_reg_grid``, ``n_boot``,
    ``seed``, ``cifar10`` and ``imdb`` sizes), ``h4`` (the H4 section with ``data``), ``h6`` (the H6
    parameters with ``imdb`` and ``glove``)."""
    import jax

    from ntkrepro.kernels._src.bench import mc_attention_benchmark

    load_before = os.getloadavg()
    err = []
    for case in ctx.progress(list(params["error_speed"]), desc="Monte Carlo layer: error and speed"):
        err.append(mc_attention_benchmark(tuple(int(n) for n in case["samples"]), n=int(case["n"]),
                                          s=int(case["positions"]), d=int(case.get("channels", 8)),
                                          replicates=int(case.get("replicates", 8)),
                                          qk_std=float(case.get("qk_std", 1.5)), repeats=int(case.get("repeats", 3)),
                                          matmul_size=int(params.get("matmul_size", 512))))
    acc = params["accuracy"]
    common = dict(base_samples=int(acc["base_samples"]), replicates=int(acc["replicates"]),
                  grid=[float(g) for g in acc["diag_reg_grid"]], n_boot=int(acc["n_boot"]), seed=int(acc["seed"]),
                  progress=ctx.progress)
    h4 = dict(params["h4"])
    c = acc["cifar10"]
    cdata = cifar_data({**h4, "image_size": int(c["image_size"]), "n_train": int(c["n_train"]),
                        "n_test": int(c["n_test"]), "seed": int(acc["seed"])}, ctx)
    arch = dict(h4["arch"])
    cqk = float(c.get("W_qk_std", arch.get("W_qk_std", 1.0)))
    cifar = accuracy_sweep("cifar10", lambda n, seed=0: cifar_model(arch, n, seed, cqk), cdata, **common)
    cifar["W_qk_std"] = cqk
    cifar["archive_sha256"] = cdata["archive_sha256"]
    cifar["model"] = ("H4 vanilla, depth 1: Conv(3x3, SAME) -> Relu -> GlobalSelfAttention(SOFTMAX, 1 head, "
                      "no positional embedding) -> Flatten -> Dense(10)")
    h6 = dict(params["h6"])
    i = acc["imdb"]
    idata = imdb_data({**h6, "seq_len": int(i["seq_len"]), "n_train": int(i["n_train"]), "n_test": int(i["n_test"]),
                       "seed": int(acc["seed"])}, ctx)
    iqk = float(i.get("W_qk_std", 1.0))
    imdb = accuracy_sweep("imdb", lambda n, seed=0: imdb_model(int(h6["filter_size"]), n, seed, iqk), idata,
                          mask_constant=float(h6["mask_constant"]), **common)
    imdb["W_qk_std"] = iqk
    imdb["archive_sha256"], imdb["text_stats"] = idata["archive_sha256"], idata["stats"]
    imdb["model"] = ("H6 struct without positional embedding, depth 1: Conv(9, VALID) -> Relu -> "
                     "GlobalSelfAttention(SOFTMAX, 1 head) -> Relu -> GlobalAvgPool -> Dense(1)")
    return {"benchmark": "mc_attention_d_half", "extension": True,
            "label": "extension beyond the four papers (issue 41): no claim, no verdict",
            "scale": ctx.scale, "error_speed": err, "accuracy": {"cifar10": cifar, "imdb": imdb},
            "cpu_count": os.cpu_count(), "devices": [str(d) for d in jax.devices()],
            "load_average_before": list(load_before), "load_average_after": list(os.getloadavg())}
