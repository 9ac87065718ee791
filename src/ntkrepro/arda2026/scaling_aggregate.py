"""A1-A3: the aggregation of the sweeps' shards into per-point summaries, slopes and controls (numpy only).

The ``aggregate_a1/2/3`` functions the workflow's aggregate rule runs (by their old name
``ntkrepro.arda2026.scaling:aggregate_a<k>``: :mod:`ntkrepro.arda2026.scaling` re-exports every name of
this module). Split out of :mod:`ntkrepro.arda2026.scaling` (issue 40: no module over 600 lines); the
computation of the units, whose source the archived decisive cells of A1 hash
(:data:`ntkrepro.decisive_cells.COMPUTE_CODE`), stays there unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ntkrepro import stats
from ntkrepro.arda2026.scaling_tasks import A2_CONTROL_POWER, METRICS_A1, teacher_kinds
from ntkrepro.io import read_json


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
