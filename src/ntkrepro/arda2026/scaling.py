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

from ntkrepro import stats
from ntkrepro.io import read_json

# Imports inside functions (issue 40): those left in a function listed in
# ntkrepro.decisive_cells.COMPUTE_CODE stay there, as its source is hashed into the archived decisive cells
# (A1); the other imports of model, teacher and indrnn are local too because they load JAX, and the Snakefile
# imports this module at every parse (workflow/rules/arda2026.smk: sweeps.n_shards): import jax took 4.5 s,
# import ntkrepro.arda2026.model 6.1 s against 3.4 s for this module (measured 2026-12-06, 2 cores).

METRICS_A1 = ("min_train_loss", "approx_error", "lin_error")
#: A2's negative control: m*(n) made to grow like n^0.4 (the growth the v2 band [-0.5, 0.5] accepted).
A2_CONTROL_POWER = 0.4
POINT = {"A1": "m", "A2": "n", "A3": "T"}


# ------------------------------------------------------------------------------------------
# Task lists (pure Python: also used by the Snakefile to name shard outputs)

def seed_groups(seeds: Sequence[int], per_group: int) -> list[list[int]]:
    """Split ``seeds`` into consecutive groups of ``per_group``."""
    if per_group < 1:
        raise ValueError("seeds_per_job must be >= 1")
    seeds = list(seeds)
    return [seeds[i:i + per_group] for i in range(0, len(seeds), per_group)]


def teacher_kinds(section: Mapping[str, Any]) -> list[str]:
    """The headline teacher kind (``teacher.kind``, the verdict's) followed by ``compare_kinds``."""
    head = section["teacher"]["kind"]
    return [head] + [k for k in section.get("compare_kinds", []) if k != head]


def tasks(section: Mapping[str, Any], claim: str) -> list[dict[str, Any]]:
    """All tasks of claim ``A1`` (kind x seed group, every width), ``A2`` (kind x seed group, every
    n and width) or ``A3`` (T x kind x teacher group, every student seed)."""
    kinds = teacher_kinds(section)
    if claim in ("A1", "A2"):
        groups = seed_groups(section["seeds"], section["seeds_per_job"])
        return [{"kind": k, "seeds": g} for k in kinds for g in groups]
    if claim == "A3":
        groups = seed_groups(section["teacher_seeds"], section["teachers_per_job"])
        return [{"T": int(T), "kind": k, "teachers": g} for T in section["T_values"] for k in kinds for g in groups]
    raise ValueError(f"unknown claim {claim!r}")


def n_shards(section: Mapping[str, Any], claim: str) -> int:
    """Number of shard jobs: ``section['jobs']`` capped at the number of tasks."""
    return max(1, min(int(section["jobs"]), len(tasks(section, claim))))


def balance(items: Sequence[Any], costs: Sequence[float], K: int) -> list[list[Any]]:
    """Deterministic longest-processing-time split of ``items`` into ``K`` groups of similar total cost.

    Each group keeps the original order of its items.
    """
    if K < 1:
        raise ValueError("K must be >= 1")
    order = sorted(range(len(items)), key=lambda i: (-costs[i], i))
    load = [0.0] * K
    groups: list[list[int]] = [[] for _ in range(K)]
    for i in order:
        k = min(range(K), key=lambda j: (load[j], j))
        groups[k].append(i)
        load[k] += costs[i] + 1e-9
    return [[items[i] for i in sorted(g)] for g in groups]


def _task_cost(section: Mapping[str, Any], task: Mapping[str, Any], claim: str) -> float:
    """Relative cost of a task (training work ~ n m T per step; a constant for start-up and compiles)."""
    if claim == "A1":
        if task["kind"] != section["teacher"]["kind"]:
            return sum(section["widths"]) * len(task["seeds"]) + 8.0
        # the verdict's teacher: linearisation search, and the width_fixed control (min width at every column)
        width_units = sum(section["widths"]) + len(section["widths"]) * min(section["widths"])
        return 1.3 * width_units * len(task["seeds"]) + 8.0
    if claim == "A2":
        return float(len(task["seeds"])) + 1.0
    rnn = len(section.get("indrnn_seeds", [])) if task["kind"] == section["teacher"]["kind"] else 0
    return float(task["T"]) * len(task["teachers"]) * (len(section["seeds"]) + rnn) + 8.0


def shard_tasks(section: Mapping[str, Any], claim: str, shard: int) -> list[dict[str, Any]]:
    """The tasks of shard ``shard`` (cost-balanced over :func:`n_shards` shards)."""
    K = n_shards(section, claim)
    if not 0 <= shard < K:
        raise ValueError(f"shard {shard} out of range for {K} shards")
    ts = tasks(section, claim)
    return balance(ts, [_task_cost(section, t, claim) for t in ts], K)[shard]


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


# ------------------------------------------------------------------------------------------
# Aggregation (numpy only)

def collect(shards: Sequence[Mapping[str, Any]], point: str, metric: str) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """``(points, values[point, seed], seeds)`` from shard ``tasks`` rows holding per-seed lists (A4's
    format); every point needs the same seeds."""
    by_point: dict[int, dict[int, float]] = {}
    for sh in shards:
        for row in sh["tasks"]:
            for s, v in zip(row["seeds"], row[metric]):
                by_point.setdefault(int(row[point]), {})[int(s)] = float(v)
    if not by_point:
        raise ValueError(f"no results for metric {metric!r}")
    pts = sorted(by_point)
    seeds = sorted(by_point[pts[0]])
    for p in pts:
        if sorted(by_point[p]) != seeds:
            raise ValueError(f"{point}={p}: seeds {sorted(by_point[p])} differ from {seeds}")
    vals = np.array([[by_point[p][s] for s in seeds] for p in pts])
    return np.array(pts, float), vals, seeds


def _rows(shards: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [r for sh in shards for r in sh["rows"]]


def grid(rows: Sequence[Mapping[str, Any]], axes: Sequence[str], metric: str) -> tuple[list[list[int]], np.ndarray]:
    """``(levels per axis, values[axis0, axis1, ...])`` from unit rows; every cell must be present once."""
    levels = [sorted({int(r[a]) for r in rows if metric in r}) for a in axes]
    out = np.full([len(v) for v in levels], np.nan)
    for r in rows:
        if metric not in r:
            continue
        idx = tuple(lv.index(int(r[a])) for lv, a in zip(levels, axes))
        if not np.isnan(out[idx]):
            raise ValueError(f"duplicate result for {dict(zip(axes, idx))} ({metric})")
        out[idx] = float(r[metric])
    if not levels or np.isnan(out).any():
        raise ValueError(f"missing results for metric {metric!r} on the grid {axes}")
    return levels, out


def t_interval(values: Sequence[float], level: float = 0.95, method: str = "") -> stats.Interval:
    r"""Mean with a Student-t interval :math:`\bar v\pm t_{k-1}\,s/\sqrt k` over ``k`` independent units."""
    from scipy import stats as st

    v = np.asarray(values, float)
    if v.size < 2:
        raise ValueError("a t-interval needs at least two units")
    half = st.t.ppf((1 + level) / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return stats.Interval(float(v.mean()), float(v.mean() - half), float(v.mean() + half), level,
                          method or f"t-interval over {v.size} units")


def per_unit_slope(x: np.ndarray, vals: np.ndarray, what: str = "seeds") -> stats.Interval:
    r"""Mean over units of each unit's OLS slope of :math:`\log v` vs :math:`\log x`, t-interval over units.

    ``vals`` has shape ``(len(x), n_units)``; a unit (a teacher draw with its student) is shared by
    all ``x``, so its slope is computed within the unit and the units are independent.
    """
    lx = np.log(np.asarray(x, float))
    slopes = np.polyfit(lx, np.log(np.asarray(vals, float)), 1)[0]
    return t_interval(slopes, method=f"mean of per-unit log-log OLS slopes, t-interval over {vals.shape[1]} {what}")


def summarise(x: np.ndarray, vals: np.ndarray, *, n_boot: int, seed: int = 0, paired: bool = False) -> dict[str, Any]:
    """Per-point median, mean with 95 % t-interval over units, and log-log slopes.

    ``slope``: with ``paired`` (units shared across ``x``, e.g. A1's teacher draws) the
    :func:`per_unit_slope`; otherwise :func:`ntkrepro.stats.bootstrap_slope` (units resampled
    independently at every point, fit to medians). ``slope_medians`` is the OLS fit to the medians
    (Fig. 1's estimator) with its t-interval.
    """
    k = vals.shape[1]
    mean = vals.mean(axis=1)
    if k > 1:
        from scipy import stats as st

        half = st.t.ppf(0.975, k - 1) * vals.std(axis=1, ddof=1) / math.sqrt(k)
    else:
        half = np.full_like(mean, np.nan)
    med = np.median(vals, axis=1)
    out: dict[str, Any] = {"x": x.tolist(), "median": med.tolist(), "mean": mean.tolist(),
                           "ci_low": (mean - half).tolist(), "ci_high": (mean + half).tolist(),
                           "values": vals.tolist()}
    if np.all(vals > 0) and x.size >= 2:
        if k >= 2:
            out["slope"] = (per_unit_slope(x, vals) if paired else
                            stats.bootstrap_slope(x, vals, log=True, n_boot=n_boot, seed=seed)).as_dict()
        if x.size >= 3:
            slope, icpt = stats.powerlaw_fit(x, med)
            out["slope_medians"] = slope.as_dict()
            out["intercept_medians"] = icpt.as_dict()
    return out


def _a1_summary(rows: Sequence[Mapping[str, Any]], kinds: Sequence[str], params: Mapping[str, Any],
                metrics: Sequence[str]) -> dict[str, Any]:
    """A1 per teacher kind (``kinds``, the verdict's first) on unit ``rows``: per-width medians, mean
    +-95 % CI, per-unit slopes, fits to medians."""
    out: dict[str, Any] = {"kinds": {}, "headline_kind": kinds[0]}
    lin_rows = [r for r in rows if "lin_error" in r]
    grids: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()  # (widths, seeds) of every metric's grid
    for kind in kinds:
        kr = [r for r in rows if r["kind"] == kind]
        res: dict[str, Any] = {"metrics": {}}
        for metric in metrics:
            src = lin_rows if metric == "lin_error" else kr
            (widths, seeds), vals = grid(src, ("m", "seed"), metric)
            grids.add((tuple(widths), tuple(seeds)))
            res["metrics"][metric] = summarise(np.array(widths, float), vals, n_boot=int(params["n_boot"]), paired=True)
        res["label_stats"] = {str(r["seed"]): r["label_stats"] for r in kr if "label_stats" in r}
        res["mean_y2"] = float(np.mean([v["mean_y2"] for v in res["label_stats"].values()])) \
            if res["label_stats"] else float("nan")
        res["seeds"] = seeds
        out["kinds"][kind] = res
    if len(grids) != 1:  # one (widths, seeds) grid for every metric and kind, so the recorded one is everyone's
        raise ValueError(f"A1 metrics were computed on different (widths, seeds) grids: {sorted(grids)}")
    out["widths"], out["seeds"] = (list(v) for v in grids.pop())
    return out


def aggregate_a1(params: dict, ctx) -> dict:
    """A1 per teacher kind: per-width medians, mean +-95 % CI, per-unit slopes, fits to medians; and the
    negative control ``width_fixed`` (:func:`run_a1_width_fixed`, verdict's teacher) in the same layout."""
    rows = _rows([read_json(ctx.use_data(p)) for p in params["shard_files"]])
    real = [r for r in rows if "control" not in r]
    out = _a1_summary(real, teacher_kinds(params), params,
                      (*METRICS_A1, "final_train_loss", "initial_loss", "val_loss"))
    head = params["teacher"]["kind"]
    ctrl = [r for r in rows if r.get("control") == "width_fixed"]
    if ctrl:
        c = _a1_summary(ctrl, [head], params, (*METRICS_A1, "final_train_loss", "initial_loss"))
        c["kinds"][head]["label_stats"] = out["kinds"][head]["label_stats"]
        c["kinds"][head]["mean_y2"] = out["kinds"][head]["mean_y2"]
        c["width_used"] = int(ctrl[0]["width_used"])
        out["controls"] = {"width_fixed": c}
    return out


def width_for_target(x: np.ndarray, med: np.ndarray, target: float) -> float:
    r"""Width at which the power law fitted to ``(x, med)`` reaches ``target``:
    :math:`m^\ast = \exp((\log\varepsilon - \log C)/b)` (requires a decreasing fit, :math:`b<0`)."""
    b, a = np.polyfit(np.log(x), np.log(med), 1)
    if b >= 0:
        return float("inf")
    return float(math.exp((math.log(target) - a) / b))


def growth_fits(n: np.ndarray, mstar: np.ndarray) -> dict[str, float]:
    r"""Fit :math:`m^\ast = a\log n + b` and :math:`m^\ast = C n^p` (least squares in :math:`m^\ast`).

    Returns both residual sums of squares (in :math:`m^\ast`, comparable; two parameters each) and
    the exponent :math:`p`.
    """
    from scipy.optimize import curve_fit

    a, b = np.polyfit(np.log(n), mstar, 1)
    rss_log = float(np.sum((a * np.log(n) + b - mstar) ** 2))
    p0, c0 = np.polyfit(np.log(n), np.log(mstar), 1)
    try:
        (C, p), _ = curve_fit(lambda x, C, p: C * x**p, n, mstar, p0=(math.exp(c0), p0), maxfev=20000)
    except RuntimeError:
        C, p = math.exp(c0), p0
    rss_pow = float(np.sum((C * n**p - mstar) ** 2))
    return {"log_a": float(a), "log_b": float(b), "rss_log": rss_log, "pow_C": float(C), "pow_p": float(p),
            "rss_pow": rss_pow, "p_loglog": float(p0)}


def relative_curvature(n: np.ndarray, mstar: np.ndarray) -> float:
    r"""Relative curvature of :math:`m^\ast` in :math:`u = \log n` at the centre of the range:
    :math:`\kappa = 2c_2/c_0` from the least-squares quadratic :math:`m^\ast = c_0 + c_1 u + c_2 u^2`
    (:math:`u` centred on the mean of :math:`\log n`; at least three n).

    Any log law :math:`a\log n + b` is linear in :math:`u`, so :math:`\kappa = 0` whatever ``a`` and
    ``b``; a power law :math:`Cn^p` has :math:`m^{\ast\prime\prime}/m^\ast = p^2` at every
    :math:`u`, so :math:`\kappa \approx p^2` (exactly :math:`(2\cosh(ph)-2)/h^2 \ge p^2` for three
    points spaced :math:`h` in :math:`u`). It separates the two laws where the log-log exponent
    cannot: at these n a log law's own local exponent :math:`a/m^\ast` is 0.1-0.3.
    """
    u = np.log(np.asarray(n, float))
    u = u - u.mean()
    m = np.asarray(mstar, float)
    if u.size < 3:
        raise ValueError("the curvature needs at least three n values")
    c2, _c1, c0 = np.polyfit(u, m, 2)
    return float(2.0 * c2 / c0) if c0 > 0 else float("nan")


def power_growth_errors(ns: Sequence[int], widths: Sequence[int], err: np.ndarray, p: float) -> np.ndarray:
    r"""A2's negative control: the measured errors ``err[n, width, unit]`` rescaled by one constant per
    n so that the point estimate of :math:`m^\ast(n)` (target and per-n fits of
    :func:`sample_size_analysis`) becomes :math:`m^\ast(n_{min})\,(n/n_{min})^p`, a power law; the
    teacher-draw noise of the measured errors is kept (the bootstrap resamples them as for the claim).

    With :math:`\log \mathrm{med}_n(m) = a_n + b_n\log m` the scale is :math:`\log s_n = \log
    \varepsilon - a_n - b_n \log M_n` (:math:`M_n` the wanted width); it needs :math:`b_n < 0`.
    """
    x = np.log(np.asarray(widths, float))
    nn = np.asarray(ns, float)
    med = np.median(err, axis=2)
    fits = [np.polyfit(x, np.log(med[i]), 1) for i in range(len(ns))]
    b0, a0 = fits[0]
    target = a0 + b0 * float(np.mean(x))  # log target: median error at n_min, geometric middle width
    if any(b >= 0 for b, _ in fits):
        raise ValueError("the power-growth control needs errors that fall with width at every n")
    m0 = math.exp((target - a0) / b0)
    out = np.array(err, float, copy=True)
    for i, (b, a) in enumerate(fits):
        log_want = math.log(m0) + p * math.log(nn[i] / nn[0])
        out[i] *= math.exp(target - a - b * log_want)
    return out


def sample_size_analysis(ns: Sequence[int], widths: Sequence[int], err: np.ndarray, n_boot: int, *, seed: int,
                         level: float = 0.95) -> dict[str, Any]:
    r"""A2 on an error array ``err[n, width, unit]``: target, :math:`m^\ast(n)`, fits and intervals.

    Target (pre-registered): the median approximation error at the smallest n and the geometric
    middle width. :math:`m^\ast(n)` from the per-n power law of median error vs width. Bootstrap
    over units (teacher draws with their width-m draws), resampled jointly for all n and widths,
    ``n_boot`` resamples from ``numpy.random.default_rng(seed)``; percentile intervals at ``level``
    (quantiles :math:`(1-\ell)/2` and :math:`(1+\ell)/2` of the valid resamples).
    """
    x = np.array(widths, float)
    nn = np.array(ns, float)
    m_mid = math.exp(np.mean(np.log(x)))
    med = np.median(err, axis=2)
    b0, a0 = np.polyfit(np.log(x), np.log(med[0]), 1)
    target = float(math.exp(a0 + b0 * math.log(m_mid)))

    def mstar_of(e):
        md = np.median(e, axis=2)
        return np.array([width_for_target(x, md[i], target) for i in range(len(ns))])

    mstar = mstar_of(err)
    fits = growth_fits(nn, mstar)
    rng = np.random.default_rng(seed)
    q = round((1 - level) / 2, 12)  # 0.025 exactly for level 0.95
    boot_p, boot_a, boot_better, boot_k = [], [], [], []
    n_units = err.shape[2]
    for _ in range(int(n_boot)):
        idx = rng.integers(0, n_units, n_units)
        ms = mstar_of(err[:, :, idx])
        if not np.all(np.isfinite(ms)) or np.any(ms <= 0):
            continue
        f = growth_fits(nn, ms)
        boot_p.append(f["p_loglog"])
        boot_a.append(f["log_a"])
        boot_better.append(f["rss_log"] <= f["rss_pow"])
        boot_k.append(relative_curvature(nn, ms))

    def interval(v, pt, what):
        if not v:
            return stats.Interval(pt, -math.inf, math.inf, level, f"no valid bootstrap resample, {what}")
        return stats.Interval(pt, float(np.quantile(v, q)), float(np.quantile(v, 1 - q)), level,
                              f"bootstrap over units ({len(v)} valid of {n_boot}), {what}")

    return {
        "n_values": list(ns), "widths": list(widths), "target_error": target, "target_width": m_mid,
        "median_error": med.tolist(), "errors": err.tolist(), "m_star": mstar.tolist(), "fits": fits,
        "exponent_p": interval(boot_p, fits["p_loglog"], "log-log slope of m* vs n").as_dict(),
        "log_coef_a": interval(boot_a, fits["log_a"], "a in m* = a log n + b").as_dict(),
        "curvature": interval(boot_k, relative_curvature(nn, mstar),
                              "relative curvature 2 c2 / c0 of m* vs centred log n").as_dict(),
        "frac_boot_log_better": float(np.mean(boot_better)) if boot_better else float("nan"),
        "n_boot_valid": len(boot_p), "n_units": n_units,
        "error_slope_vs_m": [per_unit_slope(x, err[i], "teacher draws").as_dict() for i in range(len(ns))],
    }


def aggregate_a2(params: dict, ctx) -> dict:
    r"""A2 per teacher kind: width :math:`m^\ast(n)` needed for the target approximation error."""
    shards = [read_json(ctx.use_data(p)) for p in params["shard_files"]]
    rows = _rows(shards)
    out: dict[str, Any] = {"kinds": {}, "headline_kind": params["teacher"]["kind"]}
    labels: dict[str, Any] = {}
    for sh in shards:
        labels.update(sh.get("label_stats", {}))
    for kind in teacher_kinds(params):
        (ns, widths, seeds), err = grid([r for r in rows if r["kind"] == kind], ("n", "m", "seed"), "approx_error")
        res = sample_size_analysis(ns, widths, err, int(params["n_boot"]), seed=int(params["boot_seed"]))
        res["seeds"] = seeds
        res["label_stats"] = {k.split(":", 1)[1]: v for k, v in labels.items() if k.startswith(kind + ":")}
        out["kinds"][kind] = res
        if kind == out["headline_kind"]:  # negative control: the same errors rescaled to a power-law m*(n)
            pc = float(params.get("control_power", A2_CONTROL_POWER))
            c = sample_size_analysis(ns, widths, power_growth_errors(ns, widths, err, pc), int(params["n_boot"]),
                                     seed=int(params["boot_seed"]))
            c.update(seeds=seeds, label_stats=res["label_stats"], control_power=pc)
            out["controls"] = {"power_growth": {"kinds": {kind: c}, "headline_kind": kind}}
    return out


A3_METRICS = ("min_train_loss", "final_train_loss", "normalised_loss", "initial_loss", "loss_over_initial")


def a3_summary(rows: Sequence[Mapping[str, Any]], nb: int) -> dict[str, Any]:
    """A3 on the unit rows of one teacher kind and one model: every metric of :data:`A3_METRICS` on the
    grid (T, teacher, seed) with per-T hierarchical-bootstrap intervals and the slope vs T, and the
    label variance vs T. ``loss_over_initial`` = min training loss / initial loss of each unit."""
    rows = [{**r, "loss_over_initial": r["min_train_loss"] / r["initial_loss"]} for r in rows]
    res: dict[str, Any] = {"metrics": {}}
    for metric in A3_METRICS:
        (Ts, teachers, seeds), y = grid(rows, ("T", "teacher", "seed"), metric)
        x = np.array(Ts, float)
        iv = stats.hierarchical_bootstrap(y, stats.slope_statistic(x, center=np.mean), n_boot=nb)
        per_T = [stats.hierarchical_bootstrap(y[i][None], lambda v: float(np.mean(v)), n_boot=nb, seed=i)
                 for i in range(len(Ts))]
        res["metrics"][metric] = {
            "x": Ts, "values": y.tolist(), "mean": y.mean(axis=(1, 2)).tolist(),
            "median": np.median(y.reshape(len(Ts), -1), axis=1).tolist(),
            "ci_low": [p.low for p in per_T], "ci_high": [p.high for p in per_T],
            "teacher_means": y.mean(axis=2).tolist(), "slope": iv.as_dict(),
        }
    var = {(int(r["T"]), int(r["teacher"])): r["label_stats"]["var"] for r in rows}
    lv = np.array([[var[(T, t)] for t in teachers] for T in Ts])
    res["label_var"] = lv.tolist()
    res["slope_label_var"] = stats.hierarchical_bootstrap(lv[..., None], stats.slope_statistic(x, center=np.mean),
                                                           n_boot=nb).as_dict()
    res["T_values"], res["teachers"], res["seeds"] = Ts, teachers, seeds
    return res


def untrained_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A3's negative control ``untrained``: every unit's loss replaced by its loss before training (the
    initial model, measured in the same run), so the loss falls with T exactly as the labels shrink."""
    return [{**r, "min_train_loss": r["initial_loss"], "final_train_loss": r["initial_loss"],
             "normalised_loss": r["initial_loss"] / r["label_stats"]["var"]} for r in rows]


def aggregate_a3(params: dict, ctx) -> dict:
    r"""A3 per teacher kind: loss vs T on the grid (T, teacher, seed), hierarchical-bootstrap slopes.

    ``slope_abs``: log-log slope of the mean absolute min training loss vs T, interval by
    :func:`ntkrepro.stats.hierarchical_bootstrap` (teachers, then seeds within teachers, at every
    T). ``slope_normalised``: the same for loss / variance of the teacher's training labels
    (description). ``slope_label_var``: the label variance itself vs T (one value per teacher).
    Negative controls (verdict's teacher, same layout): ``untrained`` (:func:`untrained_rows`) and
    ``indrnn`` (the IndRNN trained on the same data with the same projected GD, ``indrnn_seeds``).
    """
    rows = _rows([read_json(ctx.use_data(p)) for p in params["shard_files"]])
    nb = int(params["n_boot"])
    head = params["teacher"]["kind"]
    out: dict[str, Any] = {"kinds": {}, "headline_kind": head, "m": params["m"],
                           "n": params["n"], "steps": params["steps"]}
    controls: dict[str, Any] = {}
    for kind in teacher_kinds(params):
        kr = [r for r in rows if r["kind"] == kind and r.get("model", "transformer") == "transformer"]
        rnn = [r for r in rows if r["kind"] == kind and r.get("model") == "indrnn"]
        res = a3_summary(kr, nb)
        if rnn:  # the IndRNN contrast, summarised like the transformer (the negative control ``indrnn``)
            r_rnn = a3_summary(rnn, nb)
            mt = r_rnn["metrics"]["min_train_loss"]
            res["indrnn"] = {"x": mt["x"], "values": mt["values"], "mean": mt["mean"], "slope": mt["slope"]}
            if kind == head:
                controls["indrnn"] = {"kinds": {kind: r_rnn}, "headline_kind": kind, "m": params["m"],
                                      "n": params["n"], "steps": params["steps"], "model": "indrnn"}
        if kind == head:
            controls["untrained"] = {"kinds": {kind: a3_summary(untrained_rows(kr), nb)}, "headline_kind": kind,
                                     "m": params["m"], "n": params["n"], "steps": 0, "model": "untrained"}
        out["kinds"][kind] = res
    out["controls"] = controls
    return out
