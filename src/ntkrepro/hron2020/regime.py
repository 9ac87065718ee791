r"""Permuted-label controls, training-draw resampling, learning curves and the regime rule of H4-H6
(issue 21, sections 1-3).

Compute side (used by :mod:`.cifar10`, :mod:`.imdb`, :mod:`.finite_nets`; the kernels are the ones
already computed, so none of this computes a kernel):

* :func:`permuted_labels` -- training labels permuted across the training rows (the negative
  control: the labels carry no information about the inputs, so every model is at chance);
* :func:`training_resample_plan` / :func:`boot_accuracies` -- the *two-way* bootstrap: training rows
  (the training draw) and test points resampled jointly, the model refitted on the resampled rows of
  its already-computed kernel (duplicated rows are harmless: :math:`K + \lambda\bar k I` stays
  positive definite for :math:`\lambda > 0`). The same plan serves every model, so differences
  between models are paired over both draws;
* :func:`learning_curve_plan` / :func:`curve_accuracies` -- test accuracy when the model is refitted
  on random subsets of its training rows (the learning curve in the training count).

Criterion side (used by :mod:`.claims`):

* :func:`centred_interval` -- the two-way bootstrap interval of a statistic, centred on the
  full-data estimate;
* :func:`regime_gate` -- the regime rule: whether the models beat chance (the permuted-label
  control's expected accuracy on a class-balanced test set) by the pre-stated margin, and if not,
  whether any training count up to the paper's could make them;
* :func:`curve_power_line` -- power in the training count from a learning curve, with the verdict
  the predicted size would give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ntkrepro import stats
from ntkrepro.stats import Interval, PowerLine, Status, linear_fit

#: A learning curve is extrapolated at most this factor beyond the largest training count measured;
#: beyond it a power line says "needs a larger run to tell" (issue 28 item 4; ``stats.MAX_EXTRAPOLATION``).
MAX_EXTRAPOLATION = float(getattr(stats, "MAX_EXTRAPOLATION", 10.0))

#: Regime margin: the models' mean accuracy must beat chance (= the permuted-label control's expected
#: accuracy) by this fraction of the chance-to-perfect gap, 1 - 1/C (claims.toml, H4-H6 amendments).
REGIME_FRACTION = 0.25


# --------------------------------------------------------------------------------------------
# compute side

def permuted_labels(labels: np.ndarray, seed: int) -> np.ndarray:
    """``labels`` permuted across rows (seeded): the label marginals are kept, the link to the inputs
    is destroyed."""
    labels = np.asarray(labels)
    return labels[np.random.default_rng(seed).permutation(labels.shape[0])]


def training_resample_plan(n_train: int, n_test: int, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Indices of the two-way bootstrap: ``train`` ``(n_boot, n_train)`` and ``test``
    ``(n_boot, n_test)``, each drawn with replacement."""
    rng = np.random.default_rng(seed)
    return {"train": rng.integers(0, n_train, (n_boot, n_train)), "test": rng.integers(0, n_test, (n_boot, n_test))}


def learning_curve_plan(n_train: int, fractions: Sequence[float], n_draws: int, seed: int,
                        min_size: int = 4) -> list[tuple[int, np.ndarray]]:
    """``(size, rows)`` for each training fraction (< 1: ``n_draws`` random subsets without
    replacement; 1: the full set once). Sizes below ``min_size`` are skipped."""
    rng = np.random.default_rng(seed)
    plan = []
    for f in sorted({float(v) for v in fractions}):
        m = int(round(f * n_train))
        if m < min_size or m > n_train:
            continue
        if m == n_train:
            plan.append((m, np.arange(n_train)))
        else:
            plan += [(m, np.sort(rng.choice(n_train, m, replace=False))) for _ in range(int(n_draws))]
    return plan


def _correct(fit: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], rows: np.ndarray, k_tt: np.ndarray,
             k_st: np.ndarray, y_fit: np.ndarray) -> np.ndarray:
    return fit(k_tt[np.ix_(rows, rows)], k_st[:, rows], y_fit[rows])


def _corrects(predict_correct: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
              rows_list: Sequence[np.ndarray], k_tt: np.ndarray, k_st: np.ndarray, y_fit: np.ndarray,
              correct_many: Callable[[Sequence[np.ndarray]], Sequence[np.ndarray]] | None) -> Sequence[np.ndarray]:
    """0/1 per test point of the model refitted on each ``rows``: one :func:`_correct` per draw, or
    all draws at once through ``correct_many`` (a batched backend,
    :meth:`ntkrepro.kernels.device_regression.DeviceRegression.correct_many`; same numbers)."""
    if correct_many is None:
        return [_correct(predict_correct, rows, k_tt, k_st, y_fit) for rows in rows_list]
    return correct_many(list(rows_list))


def boot_accuracies(predict_correct: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], k_tt: np.ndarray,
                    k_st: np.ndarray, y_fit: np.ndarray, plan: Mapping[str, np.ndarray], *,
                    correct_many: Callable[[Sequence[np.ndarray]], Sequence[np.ndarray]] | None = None) -> list[float]:
    """Test accuracy of one model on each two-way bootstrap draw: refitted on the resampled training
    rows (``predict_correct(k_train_train, k_test_train, y_train) -> 0/1 per test point``, or the
    batched ``correct_many(rows_list)``), scored on the resampled test points."""
    cs = _corrects(predict_correct, plan["train"], k_tt, k_st, y_fit, correct_many)
    return [float(np.mean(np.asarray(c)[te])) for c, te in zip(cs, plan["test"])]


def curve_accuracies(predict_correct: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], k_tt: np.ndarray,
                     k_st: np.ndarray, y_fit: np.ndarray, plan: Sequence[tuple[int, np.ndarray]], *,
                     correct_many: Callable[[Sequence[np.ndarray]], Sequence[np.ndarray]] | None = None) -> list[float]:
    """Test accuracy of one model refitted on each training subset of the learning-curve plan."""
    cs = _corrects(predict_correct, [rows for _, rows in plan], k_tt, k_st, y_fit, correct_many)
    return [float(np.mean(c)) for c in cs]


def two_draws(predict_correct: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], k_tt: np.ndarray,
              k_st: np.ndarray, y_fit: np.ndarray, *, n_boot: int, fractions: Sequence[float], n_draws: int, seed: int,
              min_size: int = 4, correct_many_for: Callable[..., Any] | None = None) -> list[dict[str, Any]]:
    """The ordering control's null pair (issue 28): one model fitted on two disjoint random halves of
    its training rows -- the same model family under two independent training draws of equal size,
    whose true accuracy difference is zero. Each half gets what a real model gets: per-test-point
    correctness, the two-way bootstrap (one half-size plan for both halves, so the pair is paired
    over test points like a real ordering) and the learning curve (``curve_sizes`` recorded).
    ``correct_many_for(k_tt, k_st, y_fit)``: a batched backend's ``correct_many`` for a half (same numbers)."""
    n = int(k_tt.shape[0])
    m = n // 2
    perm = np.random.default_rng(seed).permutation(n)
    plan = training_resample_plan(m, int(k_st.shape[0]), int(n_boot), seed + 1)
    curve = learning_curve_plan(m, fractions, n_draws, seed + 2, min_size=min_size)
    out = []
    for half in (np.sort(perm[:m]), np.sort(perm[m:2 * m])):
        kt, ks, y = k_tt[np.ix_(half, half)], k_st[:, half], y_fit[half]
        ok = np.asarray(predict_correct(kt, ks, y), float)
        many = correct_many_for(kt, ks, y) if correct_many_for is not None else None
        out.append({"n_fit": m, "accuracy": float(ok.mean()), "test_correct": ok.astype(int).tolist(),
                    "boot_accuracy": boot_accuracies(predict_correct, kt, ks, y, plan, correct_many=many),
                    "curve_accuracy": curve_accuracies(predict_correct, kt, ks, y, curve, correct_many=many),
                    "curve_sizes": [int(s) for s, _ in curve]})
    return out


# --------------------------------------------------------------------------------------------
# criterion side

def centred_interval(value: float, boots: Sequence[float] | np.ndarray, *, level: float = 0.95,
                     method: str = "two-way bootstrap (training rows and test points)") -> Interval:
    r"""Interval of a statistic with full-data estimate ``value`` from its bootstrap replicates
    :math:`t_b`: :math:`[v + q_{\alpha/2}(t_b - \bar t),\ v + q_{1-\alpha/2}(t_b - \bar t)]` -- the
    bootstrap's spread, centred on the estimate. (A bootstrap of training rows duplicates rows, which
    lowers every model's accuracy a little; centring removes that shift from the interval.)"""
    t = np.asarray(boots, float)
    dev = t - t.mean()
    a = (1 - level) / 2
    return Interval(float(value), float(value + np.quantile(dev, a)), float(value + np.quantile(dev, 1 - a)), level,
                    f"{method}, {t.size} resamples, centred on the full-data estimate")


@dataclass(frozen=True)
class PredictedPowerLine(PowerLine):
    """A power line whose size comes from a measured learning curve, with the verdict the predicted
    size would give (``predicts``) and how the prediction was made (``basis``)."""

    predicts: str = ""
    basis: str = ""

    def text(self) -> str:
        head = f"{self.quantity}: half-width {self.half_width:.3g} at {self.size_name}={self.size:g}"
        if not np.isfinite(self.needed):
            return f"{head}; {self.predicts} ({self.basis})"
        return (f"{head}; at {self.size_name} ~ {int(np.ceil(self.needed)):d} it is predicted {self.predicts} "
                f"({self.basis})")

    def as_dict(self) -> dict[str, float | str]:
        return {**super().as_dict(), "predicts": self.predicts, "basis": self.basis}


def curve_fit(sizes: Sequence[float], values: Sequence[float]) -> tuple[Interval, Interval] | None:
    """OLS fit of ``values`` on ``log(sizes)`` (slope, intercept with t-intervals); ``None`` with fewer
    than two distinct sizes or three points."""
    x, y = np.log(np.asarray(sizes, float)), np.asarray(values, float)
    if np.unique(x).size < 2 or x.size < 3:
        return None
    fits = linear_fit(x, y)
    # an exact fit (no residual) has a t-interval of width 0, returned as NaN bounds: use the estimate
    return tuple(Interval(f.value, f.value if np.isnan(f.low) else f.low, f.value if np.isnan(f.high) else f.high,
                          f.level, f.method) for f in fits)


def _grid(n_from: float, n_to: float) -> np.ndarray:
    """Candidate sizes strictly above ``n_from`` up to ``n_to`` (a power line never names a size at or
    below the one just run)."""
    g = np.unique(np.round(np.geomspace(n_from, max(n_to, n_from), 400)))
    return g[g > n_from]


def extrapolation_range(sizes: Sequence[float], size: float) -> tuple[float, float, str]:
    """``(largest measured, extrapolation limit, text)``: the learning curve's measured range and the
    largest size a power line may name, :data:`MAX_EXTRAPOLATION` times the largest size measured."""
    largest = float(max(max(float(v) for v in sizes), float(size)))
    limit = MAX_EXTRAPOLATION * largest
    return largest, limit, (f"sizes measured {int(min(float(v) for v in sizes))}..{int(largest)}, "
                            f"extrapolated at most {MAX_EXTRAPOLATION:g}x (to {int(limit)})")


def curve_power_line(quantity: str, iv: Interval, status_of: Callable[[Interval], Status],
                     sizes: Sequence[float], values: Sequence[float], *, size: float, size_name: str,
                     max_size: float, max_name: str) -> PredictedPowerLine:
    r"""Power of an undecided part in the training count, from its learning curve.

    ``values`` are the part's statistic measured at training counts ``sizes`` (random subsets of
    the training rows). Fit :math:`v(n) = a + b\log n` (:func:`curve_fit`); predict the interval at
    :math:`n` as :math:`[v(n) - w, v(n) + w]` with :math:`w` the half-width measured at the full
    training count (the test points are not increased, so their share of :math:`w` stays; this
    ignores the shrinking training-draw share, i.e. it is conservative), apply the part's own
    decision ``status_of`` and return the smallest :math:`n` above the size run, at most
    ``max_size`` and at most :data:`MAX_EXTRAPOLATION` times the largest size measured, that
    decides, with the verdict it gives and the range (sizes measured vs size predicted). If the
    fitted curve already decides at the size run (where the measured interval does not), or no
    size within that range decides while the paper's size lies beyond it, the line says "needs a
    larger run to tell"; if the slope's interval contains 0 (no measured trend), it says so.
    """
    hw = float(max(iv.value - iv.low, iv.high - iv.value))
    fit = curve_fit(sizes, values)
    if fit is None:
        return PredictedPowerLine(quantity, hw, float("nan"), size_name, float(size), float("inf"),
                                  "not predictable", "fewer than two training counts on the learning curve")
    slope, icpt = fit
    largest, limit, rng_txt = extrapolation_range(sizes, size)
    basis = (f"learning curve {values_text(sizes, values)}; fitted slope {slope.value:+.4f} "
             f"[{slope.low:+.4f}, {slope.high:+.4f}] per unit log {size_name}, half-width held at {hw:.3g}; "
             f"{rng_txt}")
    if not (slope.low > 0 or slope.high < 0):
        return PredictedPowerLine(quantity, hw, float("nan"), size_name, float(size), float("inf"),
                                  f"not predicted to be decided by any {size_name}: the learning curve shows no "
                                  "trend (slope interval contains 0)", basis)

    def status_at(n: float) -> Status:
        v = icpt.value + slope.value * np.log(n)
        return status_of(Interval(float(v), float(v - hw), float(v + hw), iv.level, "predicted"))

    if status_at(size) is not Status.UNDECIDED:
        return PredictedPowerLine(quantity, hw, float("nan"), size_name, float(size), float("inf"),
                                  f"needs a larger run to tell: the fitted curve already decides at the {size_name} "
                                  f"run ({size:g}), where the measured interval does not", f"extrapolated; {basis}")
    for n in _grid(size, min(max_size, limit)):
        st = status_at(n)
        if st is not Status.UNDECIDED:
            word = "to hold" if st is Status.HOLDS else "to be refuted (not_reproduced)"
            return PredictedPowerLine(quantity, hw, float("nan"), size_name, float(size), float(n),
                                      f"{word} (size predicted {int(n)})", f"extrapolated; {basis}")
    if max_size > limit:
        return PredictedPowerLine(quantity, hw, float("nan"), size_name, float(size), float("inf"),
                                  f"not decided at any {size_name} up to {MAX_EXTRAPOLATION:g}x the largest measured "
                                  f"({int(limit)}); {max_name} ({max_size:g}) lies beyond: needs a larger run to tell",
                                  f"extrapolated; {basis}")
    return PredictedPowerLine(quantity, hw, float("nan"), size_name, float(size), float("inf"),
                              f"not decided at any {size_name} up to {max_name} ({max_size:g}) at the measured "
                              "test-point half-width", f"extrapolated; {basis}")


def values_text(sizes: Sequence[float], values: Sequence[float]) -> str:
    """Mean value per size, e.g. ``n=25: 0.131, n=50: 0.152``."""
    s, v = np.asarray(sizes, float), np.asarray(values, float)
    return ", ".join(f"{int(n)}: {v[s == n].mean():.3f}" for n in np.unique(s))


@dataclass(frozen=True)
class Regime:
    """Outcome of the regime rule (:func:`regime_gate`).

    ``status``: ``HOLDS`` = informative (the models beat chance by the margin); ``REFUTED`` = the
    models do not learn from the labels (the gain's interval reaches chance, and even the most
    favourable extrapolation of the learning curve stays below the margin at the paper's size);
    ``UNDECIDED`` = not informative at this scale, including models that learn but cannot reach the
    margin along the curve's size (the entry is inconclusive with ``line``)."""

    status: Status
    gain: Interval
    margin: float
    chance: float
    slope: Interval | None
    reason: str
    line: PredictedPowerLine | None


def regime_gate(gain: Interval, *, chance: float, sizes: Sequence[float], gains: Sequence[float], size: float,
                size_name: str, paper_size: float, models: str) -> Regime:
    r"""The regime rule (issue 21, section 3).

    ``gain`` is the models' mean accuracy minus ``chance`` (:math:`1/C`: the expected accuracy of
    the permuted-label control on a class-balanced test set) with its interval; ``gains`` the same
    mean gain on the learning curve at training counts ``sizes`` (same test points). Margin
    :math:`M` = :data:`REGIME_FRACTION` :math:`\times (1 - 1/C)`.

    * informative (``HOLDS``) iff the gain's interval lies wholly above :math:`M`;
    * no learning (``REFUTED``) iff the gain's interval reaches down to chance (lower end
      :math:`\le 0`: the models are not shown to learn anything from the labels) and even the most
      favourable extrapolation -- the gain's upper bound plus the upper bound of the learning-curve
      slope (per unit log size, at least 0) times :math:`\log(N_\text{paper}/n)` -- stays below
      :math:`M` at the paper's size;
    * otherwise not informative at this scale (``UNDECIDED``), with the size at which the fitted
      curve's gain, less the measured half-width, would exceed :math:`M`. Models that do learn (gain
      above chance) but whose curve cannot reach :math:`M` along ``size_name`` are ``UNDECIDED``,
      never ``REFUTED`` (v5 of H5, 2026-12-05): the regime then needs what this run holds fixed
      (e.g. H5's epochs curve at a reduced training set cannot stand for the paper's 50,000 images),
      which says nothing about the paper.
    """
    margin = REGIME_FRACTION * (1.0 - chance)
    fit = curve_fit(sizes, gains)
    slope = fit[0] if fit else None
    curve = values_text(sizes, gains)
    head = (f"{models}: mean accuracy gain over chance ({chance:g}; the permuted-label level) {gain.value:+.3f} "
            f"[{gain.low:+.3f}, {gain.high:+.3f}] vs margin {margin:.3f}")
    if gain.low > margin:
        return Regime(Status.HOLDS, gain, margin, chance, slope, f"{head}: regime informative", None)
    hw = float(max(gain.value - gain.low, gain.high - gain.value))
    up = max(slope.high, 0.0) if slope is not None else float("inf")
    best = gain.high + up * np.log(max(paper_size, size) / size)
    slope_txt = (f"slope {slope.value:+.4f} [{slope.low:+.4f}, {slope.high:+.4f}] per unit log {size_name}"
                 if slope is not None else "slope not measurable")
    if best < margin and gain.low <= 0:
        reason = (f"{head}: the models do not learn from the labels -- learning curve (gain by {size_name}) {curve}, "
                  f"{slope_txt}; even the most favourable extrapolation reaches only {best:+.3f} < {margin:.3f} at "
                  f"the paper's {size_name} {paper_size:g}")
        return Regime(Status.REFUTED, gain, margin, chance, slope, reason, None)
    needed, why_none = float("inf"), f"not informative at any {size_name} the fitted curve reaches"
    if best < margin:  # the models learn (gain above chance) but no extrapolation along size_name reaches M
        why_none = (f"the models learn (gain above chance) but even the most favourable extrapolation reaches only "
                    f"{best:+.3f} < {margin:.3f} at the paper's {size_name} {paper_size:g}: the regime needs what "
                    f"this run holds fixed (e.g. the paper's training set), not more {size_name}; needs a larger run "
                    "to tell")
    elif fit is not None and slope.value > 0:
        largest, limit, rng_txt = extrapolation_range(sizes, size)
        curve += f" ({rng_txt})"
        if fit[1].value + slope.value * np.log(size) - hw > margin:
            why_none = (f"needs a larger run to tell: the fitted curve already clears the margin at the {size_name} "
                        f"run ({size:g}), where the measured gain does not")
        else:
            for n in _grid(size, limit):
                if fit[1].value + slope.value * np.log(n) - hw > margin:
                    needed = float(n)
                    break
            else:
                why_none = (f"not informative within {MAX_EXTRAPOLATION:g}x the largest {size_name} measured "
                            f"({int(limit)}): needs a larger run to tell")
    predicts = "to be informative (the parts are then judged)" if np.isfinite(needed) else why_none
    line = PredictedPowerLine(f"regime not informative at this scale ({models} gain over chance vs margin "
                              f"{margin:.3f})", hw, float("nan"), size_name, float(size), needed, predicts,
                              f"extrapolated; learning curve (gain by {size_name}) {curve}, {slope_txt}")
    reason = (f"regime not informative at this scale: {head}; learning curve (gain by {size_name}) {curve}, "
              f"{slope_txt}; " + (f"informative at {size_name} ~ {int(np.ceil(needed))} (extrapolated)"
                                  if np.isfinite(needed) else why_none))
    return Regime(Status.UNDECIDED, gain, margin, chance, slope, reason, line)


def regime_measured(reg: Regime) -> dict[str, Any]:
    """What the ledger entry records of the regime rule."""
    out: dict[str, Any] = {"regime: models' mean accuracy gain over chance": reg.gain,
                           "regime: margin (fraction of the chance-to-perfect gap)": reg.margin,
                           "regime: chance (permuted-label level)": reg.chance}
    if reg.slope is not None:
        out["regime: learning-curve slope of the gain per unit log size"] = reg.slope
    return out
