"""A raw-scale power-law fit with a bootstrap interval, and the crossed (two-way) bootstrap with its power
lines: :func:`powerlaw_wls_fit`, :func:`crossed_bootstrap`, :class:`CrossedPowerLine`,
:func:`crossed_power_lines`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ntkrepro.stats.intervals import Interval, bootstrap_ci
from ntkrepro.stats.power import PowerLine


# --------------------------------------------------------------------------------------------
# A raw-scale power-law fit with a bootstrap interval; a crossed (two-way) bootstrap


def powerlaw_wls_fit(x: Sequence[float], y: Sequence[float], y_boot: np.ndarray, *,
                     sigma: Sequence[float] | None = None, level: float = 0.95,
                     b_range: tuple[float, float] = (-4.0, 2.0), b_step: float = 1e-3) -> tuple[Interval, Interval]:
    r"""Weighted least squares :math:`y \approx a\,x^{b}` on the *raw* values of ``y``, with a
    bootstrap interval; returns ``(b, a)``.

    Minimises :math:`S(a, b) = \sum_i w_i (y_i - a x_i^b)^2` with :math:`w_i = \sigma_i^{-2}`. For
    fixed :math:`b` the best :math:`a` is :math:`a(b) = \sum_i w_i y_i x_i^b / \sum_i w_i x_i^{2b}`,
    so :math:`S` is profiled over a grid of :math:`b` in ``b_range`` (step ``b_step``; an estimate on
    the grid's edge means the data ask for a law outside it). Because :math:`y` is fitted directly,
    values near or below 0 (e.g. a small excess kurtosis estimated negative in a sample) enter as
    measured, with their own uncertainty, instead of being dropped or logged.

    ``y_boot`` (shape ``(B, n)``) holds bootstrap replicates of ``y`` -- each row one resample of
    all the data behind ``y``; each row is refitted with the same weights and the interval is the
    percentile interval of the refitted :math:`b` (and :math:`a`). ``sigma`` defaults to the
    standard deviations of the columns of ``y_boot``.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    yb = np.asarray(y_boot, float)
    if np.any(x <= 0):
        raise ValueError("power-law fit needs positive x")
    if yb.ndim != 2 or yb.shape[1] != x.size or y.shape != x.shape:
        raise ValueError(f"y_boot must have shape (B, {x.size}), got {yb.shape}")
    s = yb.std(axis=0, ddof=1) if sigma is None else np.asarray(sigma, float)
    if np.any(~np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("sigma must be positive and finite")
    w = 1.0 / s**2
    grid = np.arange(b_range[0], b_range[1] + b_step / 2, b_step)
    xb = x[None, :] ** grid[:, None]                     # (G, n)
    den = (w * xb**2).sum(axis=1)                         # (G,)

    def fit(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        bs, as_ = [], []
        for chunk in np.array_split(rows, max(1, int(np.ceil(rows.shape[0] / 256)))):
            num = (chunk * w) @ xb.T                      # (c, G)
            j = np.argmax(num**2 / den, axis=1)           # min S  <=>  max num^2 / den
            bs.append(grid[j])
            as_.append(num[np.arange(chunk.shape[0]), j] / den[j])
        return np.concatenate(bs), np.concatenate(as_)

    (b0,), (a0,) = fit(y[None, :])
    bb, ab = fit(yb)
    q = ((1 - level) / 2, (1 + level) / 2)
    method = f"weighted LS on raw values, b profiled on [{b_range[0]:g}, {b_range[1]:g}], bootstrap ({yb.shape[0]})"
    return (Interval(float(b0), float(np.quantile(bb, q[0])), float(np.quantile(bb, q[1])), level, method),
            Interval(float(a0), float(np.quantile(ab, q[0])), float(np.quantile(ab, q[1])), level, method))


def crossed_bootstrap(y: np.ndarray, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> Interval:
    r"""Grand mean of ``y`` (``n_rows x n_cols``) with a bootstrap resampling rows *and* columns.

    For a crossed design -- e.g. model families (rows) evaluated on the same validation points
    (columns) -- each replicate draws rows :math:`I` and columns :math:`J` independently with
    replacement and takes :math:`\overline{y_{IJ}}`, so both sources of variation enter the
    percentile interval (the two-way bootstrap; slightly conservative).
    """
    y = np.asarray(y, float)
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError("a crossed bootstrap needs at least two rows and two columns")
    n_r, n_c = y.shape
    rng = np.random.default_rng(seed)
    rows = np.stack([np.bincount(rng.integers(0, n_r, n_r), minlength=n_r) for _ in range(n_boot)]) / n_r
    cols = np.stack([np.bincount(rng.integers(0, n_c, n_c), minlength=n_c) for _ in range(n_boot)]) / n_c
    boots = np.einsum("br,rc,bc->b", rows, y, cols)
    a = (1 - level) / 2
    return Interval(float(y.mean()), float(np.quantile(boots, a)), float(np.quantile(boots, 1 - a)), level,
                    f"crossed bootstrap (rows x columns = {n_r} x {n_c}), {n_boot} resamples")


@dataclass(frozen=True)
class CrossedPowerLine(PowerLine):
    """The power line of one factor of a crossed (rows x columns) mean, the other factor held at its size."""

    other: str = ""
    share: float = 1.0

    def text(self) -> str:
        head = (f"{self.quantity}: half-width {self.half_width:.3g} at {self.size_name}={self.size:g} "
                f"({self.other}; {self.size_name} carry {100 * self.share:.0f}% of the variance)")
        if not np.isfinite(self.needed):
            return (f"{head}; needs <= {self.needed_half_width:.3g}, which no number of {self.size_name} reaches: "
                    f"the rest of the variance alone is wider")
        return f"{head}; {self._tail()}"


def crossed_power_lines(quantity: str, y: np.ndarray, iv: Interval, thresholds: Sequence[float], *,
                        row_name: str, col_name: str, n_boot: int = 2000, level: float = 0.95,
                        seed: int = 0) -> list[PowerLine]:
    r"""Power lines, one per factor, of a :func:`crossed_bootstrap` interval ``iv`` of ``y`` (rows x columns).

    A crossed mean's variance has a row and a column part; adding rows shrinks only the first. The parts
    are split by the one-way bootstrap half-widths :math:`w_r` (of the row means) and :math:`w_c` (of
    the column means): share :math:`p_r = w_r^2/(w_r^2+w_c^2)`. With the measured half-width :math:`w`
    and the distance :math:`\delta` to the straddled threshold, :math:`n_r` rows decide at
    :math:`n_r^\ast = n_r\,p_r w^2/(\delta^2-(1-p_r)w^2)`, and no number of rows does when
    :math:`(1-p_r)w^2 \ge \delta^2`; likewise for columns. Empty if no threshold is straddled.
    """
    inside = [t for t in thresholds if iv.low <= t <= iv.high]
    if not inside:
        return []
    y = np.asarray(y, float)
    hw = float(max(iv.value - iv.low, iv.high - iv.value))
    delta = float(min(abs(iv.value - t) for t in inside))
    b = dict(n_boot=n_boot, level=level, seed=seed)
    w_r = bootstrap_ci(y.mean(axis=1), **b).half_width
    w_c = bootstrap_ci(y.mean(axis=0), **b).half_width
    total = w_r ** 2 + w_c ** 2
    share_r = w_r ** 2 / total if total > 0 else 0.5
    lines: list[PowerLine] = []
    for name, n, share, other, n_other in ((row_name, y.shape[0], share_r, col_name, y.shape[1]),
                                           (col_name, y.shape[1], 1.0 - share_r, row_name, y.shape[0])):
        rest = (1.0 - share) * hw ** 2
        needed = n * share * hw ** 2 / (delta ** 2 - rest) if delta ** 2 > rest and share > 0 else float("inf")
        lines.append(CrossedPowerLine(quantity, hw, delta, name, float(n), float(needed),
                                      other=f"{other} held at {n_other}", share=float(share)))
    return lines
