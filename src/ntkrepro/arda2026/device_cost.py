"""Arda et al.'s A1 on the device: the cost model of a decisive A1 cell (``scaling.run_a1_cell``, the paper's
settings, one seed at one width with its ``width_fixed`` column): :func:`calibrate_a1` times one teacher and,
at the smallest and largest width, a few projected-GD and worst-case-search steps (compile, then timed, on
:data:`ntkrepro.clock.CLOCK`); :func:`predict_a1_cells` multiplies them by each cell's steps. The cells run
through the generic decisive runner (:func:`ntkrepro.device.cells.run_cells_tier`); :mod:`ntkrepro.device`
composes this model with Hron et al.'s (:mod:`ntkrepro.hron2020.device_cost`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ntkrepro.arda2026 import model, scaling
from ntkrepro.clock import now, timed


def interp_width(m: float, pts: Mapping[int, float]) -> float:
    """Seconds at width ``m``, linear between the smallest and the largest probed width."""
    xs = sorted(pts)
    if len(xs) == 1:
        return pts[xs[0]]
    lo, hi = xs[0], xs[-1]
    return pts[lo] + (pts[hi] - pts[lo]) * (m - lo) / (hi - lo)


def predict_a1_cells(section: Mapping[str, Any], cells: Sequence[Mapping[str, Any]], cal: Mapping[str, Any],
                     compiled: set[int] | None = None) -> dict[str, dict[str, float]]:
    """Predicted seconds of each A1 cell (``run_a1_cell``, in the order given): the teacher of its seed
    (built once per seed and process: cached), ``steps`` projected-GD steps and ``lin_search_steps``
    worst-case steps at its width and the same at the smallest width (its ``width_fixed`` control column),
    and one compilation per width and process (``compiled``: widths compiled before). Step times
    interpolated linearly in the width between the calibration's probes."""
    steps, lin = int(section["steps"]), int(section["lin_search_steps"])
    m0 = min(int(m) for m in section["widths"])
    ts = {int(k): v for k, v in cal["step_s"].items()}
    ta = {int(k): v for k, v in cal["ascent_step_s"].items()}
    tc = {int(k): v for k, v in cal["compile_s"].items()}
    seen, done = set(), set(compiled or ())
    out = {}
    for c in cells:
        m, seed = int(c["width"]), int(c["seed"])
        parts = {"teacher": 0.0 if seed in seen else cal["teacher_s"],
                 "train": steps * (interp_width(m, ts) + interp_width(m0, ts)),
                 "ascent": lin * (interp_width(m, ta) + interp_width(m0, ta)),
                 "compile": sum(interp_width(w, tc) for w in {m, m0} - done)}
        parts["total"] = sum(parts.values())
        seen.add(seed)
        done |= {m, m0}
        out[c["name"]] = parts
    return out


def calibrate_a1(sec: Mapping[str, Any], probe_steps: int = 20, probe_lin: int = 4) -> dict[str, Any]:
    """A1: one teacher (of the first task), and at the smallest and largest width ``probe_steps``
    projected-GD steps and ``probe_lin`` worst-case-search steps (first call: compile; second: timed)."""
    t = scaling.tasks(sec, "A1")[0]
    n, T, d = int(sec["n"]), int(sec["T"]), int(sec["d"])
    D, t_first = timed(scaling.teacher_data, sec, t["seeds"][0], n, T, t["kind"])  # compiles
    _, t_teacher = timed(scaling.teacher_data, sec, 10_000_019, n, T, t["kind"])  # a seed no task uses
    scaling._make_teacher.cache_clear()  # the run builds every teacher (counted)
    X, y = jnp.asarray(D["X_train"]), jnp.asarray(D["y_train"])
    lr = float(sec["step_size_coef"]) / math.sqrt(int(sec["steps"]))
    step_s, ascent_s, compile_s = {}, {}, {}
    for m in sorted({min(int(v) for v in sec["widths"]), max(int(v) for v in sec["widths"])}):
        p0 = model.init_params(jax.random.PRNGKey(0), m, d)
        tt, ta = [], []
        for _ in range(2):
            t0 = now()
            p, losses = model.train(p0, X, y, steps=probe_steps, lr=lr, rho=float(sec["rho"]))
            np.asarray(losses)
            tt.append(now() - t0)
            t0 = now()
            scaling.worst_case_linearisation_error(jax.random.PRNGKey(1), p0, X, float(sec["rho"]), probe_lin)
            ta.append(now() - t0)
        step_s[m], ascent_s[m] = tt[1] / probe_steps, ta[1] / probe_lin
        compile_s[m] = max(tt[0] - tt[1], 0.0) + max(ta[0] - ta[1], 0.0)
    return {"teacher_s": t_teacher, "teacher_first_s": t_first, "step_s": step_s, "ascent_step_s": ascent_s,
            "compile_s": compile_s, "probe_steps": probe_steps, "probe_lin": probe_lin}

