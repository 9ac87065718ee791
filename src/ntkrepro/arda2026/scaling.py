r"""A1-A3: width scaling (three metrics), width needed vs n, and the dependence on T.

**Teachers.** Every sweep runs on the teacher of :mod:`.teacher` named by ``teacher.kind``
(``authors``: the authors' construction with diagonal logits, which produced Fig. 1; ``paper``:
full :math:`W_k`), and optionally on the kinds in the claim's ``compare_kinds`` beside it (the
same teacher draws with the other logits). A teacher draw is an integer seed; as in the authors'
scripts, **A1 and A2 redraw the teacher with every seed** (seed :math:`s` = teacher :math:`s` =
student initialisation :math:`s`), so the seed is the unit (teacher and init) and is resampled as
a whole. **A3** has ``teacher_seeds`` x ``seeds``: every (T, teacher) is its own teacher draw and
the student seeds are nested in it (hierarchical bootstrap).

A **task** is one group of units of one claim; shard ``k`` of ``K`` runs its cost-balanced
share of :func:`tasks` (one Snakemake job per shard).

Metrics (per unit):

* ``min_train_loss`` -- :math:`\min_{k\le S}\frac1{n_{tr}}\sum_j (f(X_j;\theta(k)) - y_j)^2` over
  ``steps`` = :math:`S` steps of projected GD with step size :math:`\eta =
  \text{step\_size\_coef}/\sqrt S` (authors: :math:`1.75/\sqrt{4000}`) and radius :math:`\rho`
  (the authors' ``min_train_loss``, Fig. 1); ``final_train_loss`` is :math:`\mathcal L(\theta(S))`.
* ``approx_error`` -- :math:`\max_j |\hat f_m(X_j) - y(X_j)|` over all ``n`` inputs (the
  authors' ``max_absolute_dist``), :math:`\hat f_m` the width-m transported linear model
  (:func:`.teacher.width_m_prediction`).
* ``lin_error`` -- :math:`\frac1{n_{tr}}\sum_j |f(X_j;\theta(0)+\delta) - f(X_j;\theta(0)) -
  \langle\nabla f(X_j;\theta(0)),\delta\rangle|` at the worst perturbation :math:`\delta` found on
  the ball's edge (every block of every head at radius :math:`\rho/\sqrt m`) by
  ``lin_search_steps`` steps of normalised gradient ascent of the mean squared gap from a random
  edge point (the largest mean gap seen is reported). It does not involve the labels, so it is
  computed once per unit (on the first teacher kind's training inputs, which all kinds share).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

# The task lists and the aggregation live in their own modules (issue 40: no module over 600 lines); every
# name is re-exported here, so ``scaling.<name>`` and the rules' ``ntkrepro.arda2026.scaling:aggregate_a1``
# still work. The computation below stays here: the archived decisive cells of A1 hash its functions under
# this module's name (ntkrepro.decisive_cells.COMPUTE_CODE).
from ntkrepro.arda2026.scaling_aggregate import (  # noqa: F401
    A3_METRICS, _a1_summary, _rows, a3_summary, aggregate_a1, aggregate_a2, aggregate_a3, collect, grid,
    growth_fits, per_unit_slope, power_growth_errors, relative_curvature, sample_size_analysis, summarise,
    t_interval, untrained_rows, width_for_target)
from ntkrepro.arda2026.scaling_tasks import (  # noqa: F401
    A2_CONTROL_POWER, METRICS_A1, POINT, _task_cost, balance, n_shards, seed_groups, shard_tasks, tasks,
    teacher_kinds)

# Imports inside functions (issue 40): those left in a function listed in
# ntkrepro.decisive_cells.COMPUTE_CODE stay there, as its source is hashed into the archived decisive cells
# (A1); the other imports of model, teacher and indrnn are local too because they load JAX, and the Snakefile
# imports this module at every parse (workflow/rules/arda2026.smk: sweeps.n_shards): import jax took 4.5 s,
# import ntkrepro.arda2026.model 6.1 s against 3.4 s for this module (measured 2026-12-06, 2 cores).


# ------------------------------------------------------------------------------------------
# Computation (JAX imported lazily so that the aggregation step starts fast)

def _edge(delta, m: int, rho: float):
    """Put every block of every head on the edge of its ball (radius rho/sqrt(m))."""
    import jax.numpy as jnp

    from ntkrepro.arda2026.model import Params

    r = rho / jnp.sqrt(m)
    nW = jnp.sqrt(jnp.sum(delta.W**2, axis=(1, 2)))[:, None, None]
    nU = jnp.sqrt(jnp.sum(delta.U**2, axis=1))[:, None]
    c = jnp.where(delta.c >= 0, r, -r)
    return Params(r * delta.W / jnp.maximum(nW, 1e-30), r * delta.U / jnp.maximum(nU, 1e-30), c)


def linearisation_gap(params0, delta, X):
    r""":math:`f(\theta_0+\delta) - f(\theta_0) - \langle\nabla f(\theta_0), \delta\rangle` per input."""
    import jax

    from ntkrepro.arda2026.model import forward, linear_term

    moved = jax.tree_util.tree_map(lambda a, b: a + b, params0, delta)
    return forward(moved, X) - forward(params0, X) - linear_term(params0, delta, X)


def worst_case_linearisation_error(key, params0, X, rho: float, steps: int) -> float:
    """Largest mean |gap| found by normalised gradient ascent on the edge (see module doc)."""
    import jax

    from ntkrepro.arda2026.model import Params

    m, d = params0.U.shape
    kW, kU, kc = jax.random.split(key, 3)
    delta = _edge(Params(jax.random.normal(kW, (m, d, d)), jax.random.normal(kU, (m, d)),
                         jax.random.normal(kc, (m,))), m, rho)
    return float(_ascend(params0, delta, X, rho, steps))


def _ascend_impl(params0, delta, X, rho, steps):
    import jax
    import jax.numpy as jnp

    from ntkrepro.arda2026.model import Params

    m = params0.c.shape[0]
    r = rho / jnp.sqrt(m)

    def objective(dl):
        return jnp.mean(linearisation_gap(params0, dl, X) ** 2)

    def body(carry, _):
        dl, best = carry
        gap = jnp.mean(jnp.abs(linearisation_gap(params0, dl, X)))
        g = jax.grad(objective)(dl)
        nW = jnp.sqrt(jnp.sum(g.W**2, axis=(1, 2)))[:, None, None]
        nU = jnp.sqrt(jnp.sum(g.U**2, axis=1))[:, None]
        step = Params(0.5 * r * g.W / jnp.maximum(nW, 1e-30), 0.5 * r * g.U / jnp.maximum(nU, 1e-30),
                      0.5 * r * jnp.sign(g.c))
        dl = _edge(jax.tree_util.tree_map(lambda a, b: a + b, dl, step), m, rho)
        return (dl, jnp.maximum(best, gap)), None

    (dl, best), _ = jax.lax.scan(body, (delta, jnp.asarray(0.0, X.dtype)), None, length=steps)
    final = jnp.mean(jnp.abs(linearisation_gap(params0, dl, X)))
    return jnp.maximum(best, final)


@functools.cache
def _ascend_jit():
    """The jitted worst-case ascent (compiled once per process, on first use)."""
    import jax

    return jax.jit(_ascend_impl, static_argnames=("steps",))


def _ascend(params0, delta, X, rho, steps):
    return _ascend_jit()(params0, delta, X, rho, steps=steps)


@functools.cache
def _make_teacher(seed: int, n: int, d: int, T: int, R: int, nu: float, n_mc: int, kind: str) -> dict:
    """:func:`ntkrepro.arda2026.teacher.make_teacher`, memoised per process (units of a shard share teachers)."""
    from ntkrepro.arda2026.teacher import make_teacher

    return make_teacher(seed, n, d, T, R=R, nu=nu, n_mc=n_mc, kind=kind)


def teacher_data(section: Mapping[str, Any], seed: int, n: int, T: int, kind: str) -> dict:
    """Teacher ``seed`` of ``kind`` on ``n`` inputs of length ``T`` (cached per process)."""
    t = section["teacher"]
    return _make_teacher(int(seed), int(n), int(section["d"]), int(T), int(t["R"]), float(t["nu"]), int(t["n_mc"]),
                         kind)


def student_key(seed: int, m: int, T: int, teacher: int | None = None):
    """JAX key of the student initialisation (and worst-case search) of a unit."""
    import jax

    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(int(seed)), int(m)), int(T))
    return key if teacher is None else jax.random.fold_in(key, 1_000 + int(teacher))


def train_student(section: Mapping[str, Any], p0, X, y) -> dict[str, float]:
    """Projected GD from ``p0`` (``steps``, :math:`\\eta = c/\\sqrt S`, ``rho``); min / final / initial loss."""
    import jax.numpy as jnp

    from ntkrepro.arda2026 import model

    steps = int(section["steps"])
    lr = float(section["step_size_coef"]) / math.sqrt(steps)
    p, losses = model.train(p0, jnp.asarray(X), jnp.asarray(y), steps=steps, lr=lr, rho=float(section["rho"]))
    final = float(model.mse(p, jnp.asarray(X), jnp.asarray(y)))
    losses = np.asarray(losses, np.float64)
    return {"min_train_loss": float(min(np.min(losses), final)), "final_train_loss": final,
            "initial_loss": float(losses[0]), "params": p}


def run_a1_unit(section: Mapping[str, Any], kind: str, seed: int, *, linearisation: bool,
                widths: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """All widths of one A1 unit (teacher ``seed`` of ``kind``, student seed ``seed``); ``widths``: only
    these columns of ``section["widths"]`` (the decisive tier's one-width shards; same rows as the full unit)."""
    import jax
    import jax.numpy as jnp

    from ntkrepro.arda2026 import model
    from ntkrepro.arda2026.teacher import width_m_prediction

    n, T, d = int(section["n"]), int(section["T"]), int(section["d"])
    D = teacher_data(section, seed, n, T, kind)
    rows = []
    for m in (section["widths"] if widths is None else widths):
        kinit, klin = jax.random.split(student_key(seed, m, T))
        p0 = model.init_params(kinit, int(m), d)
        fhat = width_m_prediction(seed, int(m), D["X"], D["teacher"])
        row: dict[str, Any] = {"kind": kind, "seed": int(seed), "m": int(m), "n": n, "T": T,
                               "n_train": int(D["X_train"].shape[0]), "label_stats": D["label_stats"],
                               "approx_error": float(np.max(np.abs(fhat - D["y"])))}
        tr = train_student(section, p0, D["X_train"], D["y_train"])
        row.update({k: v for k, v in tr.items() if k != "params"})
        row["val_loss"] = float(model.mse(tr["params"], jnp.asarray(D["X_val"]), jnp.asarray(D["y_val"])))
        if linearisation:
            row["lin_error"] = worst_case_linearisation_error(klin, p0, jnp.asarray(D["X_train"]),
                                                              float(section["rho"]), int(section["lin_search_steps"]))
        rows.append(row)
    if linearisation:  # the negative control runs beside the verdict's teacher only
        rows += run_a1_width_fixed(section, kind, seed, D, columns=widths)
    return rows


def width_fixed_stream(seed: int, column: int) -> int:
    """Seed of the width-``min(widths)`` draws of the ``width_fixed`` control at width column ``column``
    (independent of :func:`.teacher.approx_stream` and of every teacher stream)."""
    return 1_000_000 * (int(seed) + 1) + 500_000 + int(column)


def run_a1_width_fixed(section: Mapping[str, Any], kind: str, seed: int, D: Mapping[str, Any],
                       columns: Sequence[int] | None = None) -> list[dict[str, Any]]:
    r"""A1's negative control ``width_fixed``: at every width column m, a model of the SMALLEST width
    :math:`m_0` with its own initialisation, its own :math:`m_0` draws for the approximation error and
    its own worst-case search, trained like the real units. Its errors cannot depend on the column's m
    (only the draws change), so the per-seed slopes vs m have mean 0 up to draw noise."""
    import jax
    import jax.numpy as jnp

    from ntkrepro.arda2026 import model
    from ntkrepro.arda2026.teacher import transport_mean

    T, d, m0 = int(section["T"]), int(section["d"]), int(min(section["widths"]))
    rows = []
    for m in (section["widths"] if columns is None else columns):
        kinit, klin = jax.random.split(jax.random.fold_in(student_key(seed, m, T), 2))
        p0 = model.init_params(kinit, m0, d)
        fhat = transport_mean(width_fixed_stream(seed, int(m)), m0, D["X"], D["teacher"],
                              dtype=np.asarray(D["X"]).dtype)
        row: dict[str, Any] = {"kind": kind, "control": "width_fixed", "seed": int(seed), "m": int(m),
                               "width_used": m0, "approx_error": float(np.max(np.abs(fhat - D["y"])))}
        tr = train_student(section, p0, D["X_train"], D["y_train"])
        row.update({k: v for k, v in tr.items() if k != "params"})
        row["lin_error"] = worst_case_linearisation_error(klin, p0, jnp.asarray(D["X_train"]),
                                                          float(section["rho"]), int(section["lin_search_steps"]))
        rows.append(row)
    return rows


def run_a1_shard(params: dict, ctx) -> dict:
    """A1 shard: min training loss, approximation and linearisation errors at every width, per unit."""
    shard = int(params["shard"])
    head = params["teacher"]["kind"]
    rows = []
    for t in ctx.progress(shard_tasks(params, "A1", shard), desc=f"A1 shard {shard}"):
        for s in t["seeds"]:
            rows += run_a1_unit(params, t["kind"], s, linearisation=t["kind"] == head)
    return {"claim": "A1", "shard": shard, "n_shards": n_shards(params, "A1"), "rows": rows}


def run_a1_cell(params: dict, ctx) -> dict:
    """A1 decisive-tier shard (ntkrepro.decisive): one seed at one width of the verdict's teacher, the
    real unit with its linearisation search and the ``width_fixed`` control at that column -- the rows
    :func:`run_a1_unit` writes for that (seed, width), so the cells of a seed aggregate like a unit."""
    from ntkrepro import decisive

    seed, m = int(params["seed"]), int(params["width"])
    if m not in [int(w) for w in params["widths"]]:
        raise ValueError(f"width {m} is not one of the sweep's widths {params['widths']}")
    rows = run_a1_unit(params, params["teacher"]["kind"], seed, linearisation=True, widths=[m])
    return {"claim": "A1", "cell": {"seed": seed, "width": m}, "rows": rows,
            "compute_code": decisive.compute_code_hash("A1")}


def run_a2_unit(section: Mapping[str, Any], kind: str, seed: int) -> list[dict[str, Any]]:
    """Approximation error of teacher ``seed`` at every width, on the nested first-n inputs, every n.

    The teacher is drawn once on ``max(n_values)`` inputs; the inputs in the teacher's permutation
    order are nested in n (the teacher does not change with n).
    """
    from ntkrepro.arda2026.teacher import width_m_prediction

    ns = sorted(int(v) for v in section["n_values"])
    T = int(section["T"])
    D = teacher_data(section, seed, ns[-1], T, kind)
    X, y = D["X"][D["order"]], D["y"][D["order"]]
    rows = []
    for m in section["widths"]:
        err = np.abs(width_m_prediction(seed, int(m), X, D["teacher"]) - y)
        for n in ns:
            rows.append({"kind": kind, "seed": int(seed), "m": int(m), "n": n, "T": T,
                         "approx_error": float(err[:n].max())})
    return rows


def run_a2_shard(params: dict, ctx) -> dict:
    """A2 shard: approximation error (max over the first n inputs) at every width and n, per unit."""
    shard = int(params["shard"])
    n_max = max(int(v) for v in params["n_values"])
    rows, label = [], {}
    for t in ctx.progress(shard_tasks(params, "A2", shard), desc=f"A2 shard {shard}"):
        for s in t["seeds"]:
            rows += run_a2_unit(params, t["kind"], s)
            label[f"{t['kind']}:{s}"] = teacher_data(params, s, n_max, int(params["T"]), t["kind"])["label_stats"]
    return {"claim": "A2", "shard": shard, "n_shards": n_shards(params, "A2"), "rows": rows, "label_stats": label}


def run_a3_teacher(section: Mapping[str, Any], kind: str, T: int, teacher_seed: int) -> list[dict[str, Any]]:
    """Every student seed trained on teacher ``teacher_seed`` at sequence length ``T``."""
    from ntkrepro.arda2026 import model

    n, m, d = int(section["n"]), int(section["m"]), int(section["d"])
    D = teacher_data(section, teacher_seed, n, T, kind)
    st = D["label_stats"]
    rows = []
    for s in section["seeds"]:
        p0 = model.init_params(student_key(s, m, T, teacher=teacher_seed), m, d)
        tr = train_student(section, p0, D["X_train"], D["y_train"])
        rows.append({"kind": kind, "T": int(T), "teacher": int(teacher_seed), "seed": int(s), "m": m, "n": n,
                     "label_stats": st, **{k: v for k, v in tr.items() if k != "params"},
                     "normalised_loss": tr["min_train_loss"] / st["var"]})
    for s in (section.get("indrnn_seeds", []) if kind == section["teacher"]["kind"] else []):  # A3's control
        rows.append({"kind": kind, "model": "indrnn", "T": int(T), "teacher": int(teacher_seed), "seed": int(s),
                     "m": m, "n": n, "label_stats": st, **train_indrnn_student(section, s, T, teacher_seed, D)})
    return rows


def train_indrnn_student(section: Mapping[str, Any], seed: int, T: int, teacher_seed: int, D: dict) -> dict[str, float]:
    """The IndRNN contrast of A3 (abstract: recurrent nets' error "can grow exponentially with T"): a width-m
    IndRNN (:mod:`.indrnn`, pairwise-symmetric init) trained on the same data with the same projected GD."""
    import jax
    import jax.numpy as jnp

    from ntkrepro.arda2026.indrnn import indrnn_mse, init_indrnn, train_indrnn

    m, d, steps = int(section["m"]), int(section["d"]), int(section["steps"])
    key = jax.random.fold_in(student_key(seed, m, T, teacher=teacher_seed), 17)
    p0 = init_indrnn(key, m, d)
    X, y = jnp.asarray(D["X_train"]), jnp.asarray(D["y_train"])
    p, losses = train_indrnn(p0, X, y, steps=steps, lr=float(section["step_size_coef"]) / math.sqrt(steps),
                             rho=float(section["rho"]))
    final = float(indrnn_mse(p, X, y))
    losses = np.asarray(losses, np.float64)
    mn = float(np.nanmin(np.append(losses, final))) if np.isfinite(losses).any() else float("inf")
    return {"min_train_loss": mn, "final_train_loss": final, "initial_loss": float(losses[0]),
            "normalised_loss": mn / D["label_stats"]["var"]}


def run_a3_shard(params: dict, ctx) -> dict:
    """A3 shard: min training loss after projected GD for its (T, kind, teacher group) tasks."""
    shard = int(params["shard"])
    rows = []
    for t in ctx.progress(shard_tasks(params, "A3", shard), desc=f"A3 shard {shard}"):
        for tch in t["teachers"]:
            rows += run_a3_teacher(params, t["kind"], t["T"], tch)
    return {"claim": "A3", "shard": shard, "n_shards": n_shards(params, "A3"), "rows": rows}
