r"""A1-A3: width scaling (three metrics), width needed vs n, and T-independence.

A **task** is one sweep point (a width ``m``, a sample size ``n`` or a sequence length ``T``) and
a group of seeds. Shard ``k`` of ``K`` runs tasks ``k, k+K, ...`` of :func:`tasks` (one Snakemake
job per shard; with ``K`` = number of tasks, one job per (sweep point, seed group)). The seed
controls the student initialisation and the worst-case search; the data and the teacher are fixed
by ``teacher.seed`` (nested in ``n``).

Metrics for a task (per seed):

* ``train_loss`` -- :math:`\frac1{n_{tr}}\sum_j (f(X_j;\theta(S)) - y_j)^2` after ``steps`` steps of
  projected GD with step size :math:`\eta = \text{step\_size\_coef}/\sqrt{S}` (authors:
  :math:`1.75/\sqrt{4000}`) and radius :math:`\rho`.
* ``approx_error`` -- :math:`\max_j |\hat f_m(X_j) - f^\star(X_j)|` over the training inputs
  (width-m linearised model at the transported parameters, :mod:`.teacher`).
* ``lin_error`` -- :math:`\frac1{n_{tr}}\sum_j |f(X_j;\theta(0)+\delta) - f(X_j;\theta(0)) -
  \langle\nabla f(X_j;\theta(0)),\delta\rangle|` at the worst perturbation :math:`\delta` found on
  the ball's edge (every block of every head at radius :math:`\rho/\sqrt m`) by
  ``lin_search_steps`` steps of normalised gradient ascent of the mean squared gap from a random
  edge point (the largest mean gap seen is reported).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ntkrepro import stats

METRICS_A1 = ("train_loss", "approx_error", "lin_error")


# ------------------------------------------------------------------------------------------
# Task lists (pure Python: also used by the Snakefile to name shard outputs)

def seed_groups(seeds: Sequence[int], per_group: int) -> list[list[int]]:
    """Split ``seeds`` into consecutive groups of ``per_group``."""
    if per_group < 1:
        raise ValueError("seeds_per_job must be >= 1")
    seeds = list(seeds)
    return [seeds[i:i + per_group] for i in range(0, len(seeds), per_group)]


def tasks(section: Mapping[str, Any], claim: str) -> list[dict[str, Any]]:
    """All (sweep point, seed group) tasks of claim ``A1`` (widths), ``A2`` (n) or ``A3`` (T)."""
    key = {"A1": "widths", "A2": "n_values", "A3": "T_values"}[claim]
    points = list(section[key])
    groups = seed_groups(section["seeds"], section["seeds_per_job"])
    out = []
    for p, g in itertools.product(points, groups):
        t = {"m": section.get("m"), "n": section.get("n"), "T": section.get("T"), "seeds": g}
        t[{"A1": "m", "A2": "n", "A3": "T"}[claim]] = p
        out.append(t)
    return out


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


def _task_cost(task: Mapping[str, Any], claim: str) -> float:
    """Relative cost of a task (work ~ n m T per step; a constant for start-up and compiles)."""
    point = {"A1": "m", "A2": "n", "A3": "T"}[claim]
    return float(task[point]) * len(task["seeds"]) + 8.0


def shard_tasks(section: Mapping[str, Any], claim: str, shard: int) -> list[dict[str, Any]]:
    """The tasks of shard ``shard`` (cost-balanced over :func:`n_shards` shards)."""
    K = n_shards(section, claim)
    if not 0 <= shard < K:
        raise ValueError(f"shard {shard} out of range for {K} shards")
    ts = tasks(section, claim)
    return balance(ts, [_task_cost(t, claim) for t in ts], K)[shard]


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


def _ascend(params0, delta, X, rho, steps):
    global _ASCEND_JIT
    if _ASCEND_JIT is None:
        import jax

        _ASCEND_JIT = jax.jit(_ascend_impl, static_argnames=("steps",))
    return _ASCEND_JIT(params0, delta, X, rho, steps=steps)


_ASCEND_JIT = None


_DATA_CACHE: dict[tuple, dict] = {}


def _dataset(section: Mapping[str, Any], n: int, T: int) -> dict:
    from ntkrepro.arda2026.teacher import make_dataset

    t = section["teacher"]
    k = (n, section["d"], T, t["R"], t["nu"], t["n_mc"], t["seed"])
    if k not in _DATA_CACHE:
        _DATA_CACHE[k] = make_dataset(t["seed"], n, section["d"], T, t["R"], t["nu"], t["n_mc"])
    return _DATA_CACHE[k]


def evaluate_task(section: Mapping[str, Any], task: Mapping[str, Any], *, train: bool,
                  linearisation: bool) -> dict[str, Any]:
    """Metrics of one task for each of its seeds (see module doc)."""
    import jax
    import jax.numpy as jnp

    from ntkrepro.arda2026 import model
    from ntkrepro.arda2026.teacher import transport_prediction

    n, m, T = int(task["n"]), int(task["m"]), int(task["T"])
    data = _dataset(section, n, T)
    X, y = data["X_train"], data["y_train"]
    rho = float(section["rho"])
    out: dict[str, Any] = {"n": n, "m": m, "T": T, "seeds": list(task["seeds"]), "n_train": int(X.shape[0]),
                           "label_std": float(jnp.std(y))}
    per_seed: dict[str, list[float]] = {"approx_error": []}
    if train:
        per_seed |= {"train_loss": [], "val_loss": [], "initial_loss": []}
    if linearisation:
        per_seed["lin_error"] = []
    for seed in task["seeds"]:
        key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(int(seed)), m), T)
        kinit, klin = jax.random.split(key)
        p0 = model.init_params(kinit, m, section["d"])
        fhat = transport_prediction(p0.W, p0.U, data["teacher"], X)
        per_seed["approx_error"].append(float(jnp.max(jnp.abs(fhat - y))))
        if train:
            steps = int(section["steps"])
            lr = float(section["step_size_coef"]) / math.sqrt(steps)
            p, losses = model.train(p0, X, y, steps=steps, lr=lr, rho=rho)
            per_seed["initial_loss"].append(float(losses[0]))
            per_seed["train_loss"].append(float(model.mse(p, X, y)))
            per_seed["val_loss"].append(float(model.mse(p, data["X_val"], data["y_val"])))
        if linearisation:
            per_seed["lin_error"].append(
                worst_case_linearisation_error(klin, p0, X, rho, int(section["lin_search_steps"])))
    out.update(per_seed)
    return out


def _run_shard(params: dict, ctx, claim: str, train: bool, linearisation: bool) -> dict:
    shard = int(params["shard"])
    todo = shard_tasks(params, claim, shard)
    rows = [evaluate_task(params, t, train=train, linearisation=linearisation)
            for t in ctx.progress(todo, desc=f"{claim} shard {shard}")]
    return {"claim": claim, "shard": shard, "n_shards": n_shards(params, claim), "tasks": rows}


def run_a1_shard(params: dict, ctx) -> dict:
    """A1 shard: train loss, approximation and linearisation errors at each width of the shard."""
    return _run_shard(params, ctx, "A1", train=True, linearisation=True)


def run_a2_shard(params: dict, ctx) -> dict:
    """A2 shard: approximation error (max over the n training inputs) at every width, for its n."""
    shard = int(params["shard"])
    rows = []
    for t in ctx.progress(shard_tasks(params, "A2", shard), desc=f"A2 shard {shard}"):
        for m in params["widths"]:
            rows.append(evaluate_task(params, {**t, "m": m}, train=False, linearisation=False))
    return {"claim": "A2", "shard": shard, "n_shards": n_shards(params, "A2"), "tasks": rows}


def run_a3_shard(params: dict, ctx) -> dict:
    """A3 shard: training loss after projected GD at each sequence length T of the shard."""
    return _run_shard(params, ctx, "A3", train=True, linearisation=False)


# ------------------------------------------------------------------------------------------
# Aggregation (numpy only)

def collect(shards: Sequence[Mapping[str, Any]], point: str, metric: str) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """``(points, values[point, seed], seeds)`` from shard results; every point needs the same seeds."""
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


def summarise(x: np.ndarray, vals: np.ndarray, *, n_boot: int, seed: int = 0) -> dict[str, Any]:
    """Per-point median, mean with 95 % t-interval over seeds, and the log-log slope of medians.

    The slope interval is :func:`ntkrepro.stats.bootstrap_slope` (seeds resampled at every point);
    ``slope_ols`` is the OLS t-interval of the fit to the medians.
    """
    from scipy import stats as st

    k = vals.shape[1]
    mean = vals.mean(axis=1)
    if k > 1:
        half = st.t.ppf(0.975, k - 1) * vals.std(axis=1, ddof=1) / math.sqrt(k)
    else:
        half = np.full_like(mean, np.nan)
    out: dict[str, Any] = {"x": x.tolist(), "median": np.median(vals, axis=1).tolist(), "mean": mean.tolist(),
                           "ci_low": (mean - half).tolist(), "ci_high": (mean + half).tolist(),
                           "values": vals.tolist()}
    if np.all(vals > 0) and x.size >= 2:
        if k >= 2:
            out["slope"] = stats.bootstrap_slope(x, vals, log=True, n_boot=n_boot, seed=seed).as_dict()
        if x.size >= 3:
            slope, icpt = stats.powerlaw_fit(x, np.median(vals, axis=1))
            out["slope_ols"] = slope.as_dict()
            out["intercept_ols"] = icpt.as_dict()
    return out


def aggregate_a1(params: dict, ctx) -> dict:
    """A1: per-metric medians, mean +-95 % CI and fitted log-log slopes vs width."""
    from ntkrepro.io import read_json

    shards = [read_json(ctx.use_data(p)) for p in params["shard_files"]]
    out: dict[str, Any] = {"metrics": {}}
    for metric in METRICS_A1:
        x, vals, seeds = collect(shards, "m", metric)
        out["metrics"][metric] = summarise(x, vals, n_boot=int(params["n_boot"]))
    out["seeds"] = seeds
    out["widths"] = x.tolist()
    out["initial_loss"] = collect(shards, "m", "initial_loss")[1].mean().item()
    out["label_std"] = shards[0]["tasks"][0]["label_std"]
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


def aggregate_a2(params: dict, ctx) -> dict:
    r"""A2: width :math:`m^\ast(n)` needed for the target approximation error, and its growth in n.

    Target (pre-registered): the median approximation error at the smallest n and the geometric
    middle width of the grid. :math:`m^\ast(n)` from the per-n power law of median error vs width.
    Bootstrap over seeds (resampled jointly for all n, since the seed fixes the initialisation).
    """
    from ntkrepro.io import read_json

    shards = [read_json(ctx.use_data(p)) for p in params["shard_files"]]
    rows = [r for sh in shards for r in sh["tasks"]]
    ns = sorted({int(r["n"]) for r in rows})
    widths = sorted({int(r["m"]) for r in rows})
    seeds = sorted(int(s) for s in rows[0]["seeds"])
    seeds = sorted({int(s) for r in rows for s in r["seeds"]})
    err = np.full((len(ns), len(widths), len(seeds)), np.nan)
    for r in rows:
        for s, v in zip(r["seeds"], r["approx_error"]):
            err[ns.index(int(r["n"])), widths.index(int(r["m"])), seeds.index(int(s))] = v
    if np.isnan(err).any():
        raise ValueError("A2: missing (n, width, seed) results")
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
    rng = np.random.default_rng(0)
    boot_p, boot_a, boot_better = [], [], []
    for _ in range(int(params["n_boot"])):
        idx = rng.integers(0, len(seeds), len(seeds))
        ms = mstar_of(err[:, :, idx])
        if not np.all(np.isfinite(ms)) or np.any(ms <= 0):
            continue
        f = growth_fits(nn, ms)
        boot_p.append(f["p_loglog"])
        boot_a.append(f["log_a"])
        boot_better.append(f["rss_log"] <= f["rss_pow"])
    interval = lambda v, pt, what: stats.Interval(pt, float(np.quantile(v, 0.025)), float(np.quantile(v, 0.975)),  # noqa: E731
                                                  0.95, f"bootstrap over seeds ({len(v)}), {what}")
    return {
        "n_values": ns, "widths": widths, "seeds": seeds, "target_error": target, "target_width": m_mid,
        "median_error": med.tolist(), "errors": err.tolist(), "m_star": mstar.tolist(), "fits": fits,
        "exponent_p": interval(boot_p, fits["p_loglog"], "log-log slope of m* vs n").as_dict(),
        "log_coef_a": interval(boot_a, fits["log_a"], "a in m* = a log n + b").as_dict(),
        "frac_boot_log_better": float(np.mean(boot_better)) if boot_better else float("nan"),
        "n_boot_valid": len(boot_p),
        "error_slope_vs_m": [stats.bootstrap_slope(x, err[i], n_boot=int(params["n_boot"])).as_dict()
                             for i in range(len(ns))],
    }


def aggregate_a3(params: dict, ctx) -> dict:
    """A3: training loss vs sequence length T; log-log slope with bootstrap CI over seeds."""
    from ntkrepro.io import read_json

    shards = [read_json(ctx.use_data(p)) for p in params["shard_files"]]
    out: dict[str, Any] = {"metrics": {}}
    for metric in ("train_loss", "initial_loss", "approx_error"):
        x, vals, seeds = collect(shards, "T", metric)
        out["metrics"][metric] = summarise(x, vals, n_boot=int(params["n_boot"]))
    out["seeds"] = seeds
    out["T_values"] = x.tolist()
    out["m"] = params["m"]
    out["n"] = params["n"]
    return out
