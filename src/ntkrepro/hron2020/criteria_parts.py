"""Measurements the H3-H5 criteria are built from: H3's log-log slope and where its line reaches a level,
the regime rule's verdict (H4-H6), the models' gain over chance, H4's depth contrast, H5's paired differences.

Split out of :mod:`ntkrepro.hron2020.claims` (issue 40: no module over 600 lines), which re-exports every
name, so ``claims.h3_slope`` etc. still work; the criteria themselves (``evaluate_h<k>``, their thresholds)
stay there. Numpy only, as the criteria.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import ntkrepro.stats as _stats
from ntkrepro.hron2020.regime import Regime, centred_interval
from ntkrepro.ledger import Verdict, verdict_of
from ntkrepro.stats import Interval, PowerLine, Status, combine, linear_fit


def h3_slope(rows: Sequence[Mapping[str, Any]], kernel: str) -> Interval:
    r"""OLS slope of :math:`\log D` on :math:`\log(\text{width})` over every (width, replicate) estimate
    :math:`D` of ``kernel`` (``"nngp"``/``"ntk"``), with its t-interval (:func:`ntkrepro.stats.linear_fit`)."""
    x = [np.log(row["width"]) for row in rows for _ in row[f"{kernel}_distance"]]
    y = [np.log(v) for row in rows for v in row[f"{kernel}_distance"]]
    slope, _ = linear_fit(x, y)
    return Interval(slope.value, slope.low, slope.high, slope.level,
                    f"OLS t-interval over {len(y)} independent (width, replicate) estimates")


def h3_width_reaching(rows: Sequence[Mapping[str, Any]], kernel: str, slope: Interval, level: float) -> str:
    r"""Where the fitted line :math:`\log D = c + b\log w` (:func:`h3_slope`; :math:`c` the mean
    residual) reaches ``level``: a width above the largest run and at most
    ``stats.MAX_EXTRAPOLATION`` (10) times it, else "needs a larger run to tell" (issue 28 item 4)."""
    factor = float(getattr(_stats, "MAX_EXTRAPOLATION", 10.0))
    largest = float(max(row["width"] for row in rows))
    c = float(np.mean([np.log(v) - slope.value * np.log(row["width"])
                       for row in rows for v in row[f"{kernel}_distance"]]))
    if float(np.exp(c + slope.value * np.log(largest))) <= level:
        return f"or below width {int(largest)} (measured)"
    if slope.value >= 0:
        return "no width (the fitted line does not fall)"
    w = float(np.exp((np.log(level) - c) / slope.value))
    if w > factor * largest:
        return (f"a width beyond {factor:g}x the largest run ({int(largest)}; the line extrapolates to ~{int(w)}): "
                "needs a larger run to tell")
    return f"width ~ {int(np.ceil(w))} (extrapolated from widths {int(rows[0]['width'])}..{int(largest)})"


#: Name of the ``parts`` entry of the regime rule (H4-H6).
REGIME_PART = "regime: models beat chance by the margin"


def apply_regime(parts: dict[str, Status], reg: Regime, body: str, power: list[PowerLine]
                 ) -> tuple[Verdict, str, list[PowerLine]]:
    """The verdict with the regime rule (claims.toml, H4-H6): the models do not learn (``REFUTED``)
    -> not reproduced; not informative at this scale (``UNDECIDED``) -> inconclusive whatever the
    orderings say, with the regime's power line (learning curve, informative size) first; informative
    -> the orderings decide (every part, the regime included, combined)."""
    parts[REGIME_PART] = reg.status
    if reg.status is Status.REFUTED:
        return Verdict.NOT_REPRODUCED, f"not reproduced at this scale: {reg.reason}. {body}", []
    if reg.status is Status.UNDECIDED:
        return Verdict.INCONCLUSIVE, f"{reg.reason}. {body}", [reg.line, *power] if reg.line else power
    return verdict_of(combine(list(parts.values()))), f"{body} {reg.reason}.", power


def _require_resampling(rows: Sequence[Mapping[str, Any]], r: Mapping[str, Any], claim: str) -> Mapping[str, Any]:
    if "train_resample" not in r or any("boot_accuracy" not in x or "curve_accuracy" not in x for x in rows):
        raise ValueError(f"{claim} results lack the training-draw bootstrap and learning curve (issue 21): results "
                         "of older code; rerun the compute rule")
    return r["train_resample"]


def model_gain(rows: Sequence[Mapping[str, Any]], rs: Mapping[str, Any], value_of) -> tuple[Interval, list, list]:
    """The models' mean accuracy gain over chance: point (``value_of(row)`` = full-data test accuracy),
    two-way bootstrap interval, and the learning curve (sizes, mean gains)."""
    chance = float(rs["chance"])
    point = float(np.mean([value_of(x) for x in rows])) - chance
    boots = np.mean([x["boot_accuracy"] for x in rows], axis=0) - chance
    curve = np.mean([x["curve_accuracy"] for x in rows], axis=0) - chance
    return centred_interval(point, boots), list(rs["curve_sizes"]), curve.tolist()


def h4_depth_contrast(sweep: Sequence[Mapping[str, Any]], depths: Sequence[int], families: Sequence[str],
                      ) -> np.ndarray:
    r"""Per (family, validation image) contrast of correctness between shallow and deep preceding depths.

    For family :math:`f`, kernel :math:`g` and validation image :math:`i`, with :math:`c_{f,g,D,i}
    \in\{0,1\}` the correctness at depth :math:`D` (at that depth's validation-selected diag_reg):
    :math:`\Delta_{f,i} = \operatorname{mean}_g\big[\operatorname{mean}_{D\in\text{two smallest}} c_{f,g,D,i}
    - \operatorname{mean}_{D\,\text{deeper}} c_{f,g,D,i}\big]`. Returns the ``(n_families, n_val)`` array;
    its mean is the shallow-minus-deep validation-accuracy difference.
    """
    ds = sorted(int(v) for v in depths)
    small, deep = ds[:2], ds[2:]
    out = []
    for f in families:
        per_kernel = []
        for g in sorted({row["kernel"] for row in sweep if row["family"] == f}):
            c = {int(row["depth"]): np.asarray(row["val_correct"], float) for row in sweep
                 if row["family"] == f and row["kernel"] == g}
            per_kernel.append(np.mean([c[D] for D in small], axis=0) - np.mean([c[D] for D in deep], axis=0))
        out.append(np.mean(per_kernel, axis=0))
    return np.array(out)


def h5_paired_differences(runs: Sequence[Mapping[str, Any]], better: Mapping[str, str], worse: Mapping[str, str],
                          over: str) -> np.ndarray:
    """Validation-accuracy differences ``better - worse`` over the units (``over`` value, seed): runs
    that share the seed and the value of ``over`` (the factor held fixed)."""
    def pick(cond: Mapping[str, str]) -> dict[tuple[Any, int], float]:
        return {(x[over], int(x["seed"])): float(x["val_accuracy"]) for x in runs
                if all(x[k] == v for k, v in cond.items())}

    a, b = pick(better), pick(worse)
    keys = sorted(set(a) & set(b))
    if len(keys) < 2:
        raise ValueError(f"fewer than two paired units for {dict(better)} vs {dict(worse)}")
    return np.array([a[k] - b[k] for k in keys])
