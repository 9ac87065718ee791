"""The power line of an undecided entry (rule 5): :class:`PowerLine`, :class:`NotePowerLine`,
:func:`mean_t_interval`, :func:`power_line`, :data:`MAX_EXTRAPOLATION`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from ntkrepro.stats.intervals import Interval


# --------------------------------------------------------------------------------------------
# Power line (rule 5)


#: A power line extrapolates from one run's variance; beyond this factor over the size just run it
#: refuses to name a size and says "needs a larger run to tell" (issue 28 item 4).
MAX_EXTRAPOLATION = 10.0


@dataclass(frozen=True)
class PowerLine:
    r"""What an undecided interval reached and the size at which the same criterion would decide.

    With half-width :math:`w` at size :math:`n` and :math:`w \propto n^{-\gamma}` (:math:`\gamma=1/2`
    for means over seeds, examples or draws), the criterion decides once :math:`w` falls below the
    distance :math:`\delta` from the point estimate to the nearest threshold the interval straddles:
    :math:`n^\ast = n\,(w/\delta)^{1/\gamma}`. ``needed`` is ``inf`` when the point estimate sits on
    a threshold (no size decides).

    A power line never names a size at or below the one just run, and never one beyond
    :data:`MAX_EXTRAPOLATION` times it (:meth:`named`): where :math:`n^\ast \le n` (a skewed
    interval straddles a threshold that the variance alone says this size should clear) or
    :math:`n^\ast > 10n`, the text says "needs a larger run to tell" and states the range
    (size measured vs size extrapolated) instead of a size.
    """

    quantity: str
    half_width: float
    needed_half_width: float
    size_name: str
    size: float
    needed: float

    def named(self) -> bool:
        """Whether the line names ``needed`` as the deciding size: finite, above the size just run,
        and within :data:`MAX_EXTRAPOLATION` times it."""
        return bool(np.isfinite(self.needed) and self.size < self.needed <= MAX_EXTRAPOLATION * self.size)

    def _tail(self) -> str:
        """The clause after the half-width: the deciding size, or why none is named."""
        if self.needed <= self.size:
            return (f"needs <= {self.needed_half_width:.3g}; the interval is skewed across the threshold, so the "
                    f"measured variance cannot say which {self.size_name} decides: needs a larger run to tell "
                    f"(more than {self.size_name}={self.size:g})")
        if self.needed > MAX_EXTRAPOLATION * self.size:
            return (f"needs <= {self.needed_half_width:.3g}, beyond {MAX_EXTRAPOLATION:g}x the {self.size_name} run "
                    f"(measured at {self.size:g}; the variance extrapolates to ~{int(np.ceil(self.needed)):d}, "
                    f"too far to trust): needs a larger run to tell")
        return (f"needs <= {self.needed_half_width:.3g}, i.e. {self.size_name} ~ {int(np.ceil(self.needed)):d} "
                f"at the measured variance")

    def text(self) -> str:
        """One line for the ledger and the report."""
        if not np.isfinite(self.needed):
            return (f"{self.quantity}: half-width {self.half_width:.3g}; the point estimate lies on a threshold, "
                    f"so no {self.size_name} decides it")
        return f"{self.quantity}: half-width {self.half_width:.3g} at {self.size_name}={self.size:g}; {self._tail()}"

    def as_dict(self) -> dict[str, float | str]:
        return {"quantity": self.quantity, "half_width": float(self.half_width),
                "needed_half_width": float(self.needed_half_width), "size_name": self.size_name,
                "size": float(self.size), "needed": float(self.needed), "named": self.named(),
                "text": self.text()}


@dataclass(frozen=True)
class NotePowerLine(PowerLine):
    """A power line whose undecided part is not a sample-size question (no size of the design decides it,
    too many runs diverged, ...): its text is the quantity and the ``note`` saying why."""

    note: str = ""

    def text(self) -> str:
        return f"{self.quantity}: {self.note}"


def mean_t_interval(values: Sequence[float] | np.ndarray, level: float = 0.95, *, unit: str = "seed",
                    method: str | None = None) -> Interval:
    r"""Mean of independent values with the Student-t interval :math:`\bar v \pm t_{n-1}\, s/\sqrt n`
    (symmetric about the mean, so it contains it; infinite for fewer than two values)."""
    v = np.asarray(values, float)
    m = float(v.mean())
    if v.size < 2:
        return Interval(m, -np.inf, np.inf, level, f"single {unit}: no interval")
    half = float(_st.t.ppf((1 + level) / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return Interval(m, m - half, m + half, level, method or f"t-interval over {v.size} {unit}s")


def power_line(quantity: str, iv: Interval, thresholds: Sequence[float], *, size: float, size_name: str,
               rate: float = 0.5) -> PowerLine | None:
    r"""Power line of ``iv`` against the criterion's ``thresholds``; ``None`` if no threshold is straddled.

    The needed half-width is :math:`\delta = \min_t |\hat v - t|` over the thresholds :math:`t` inside
    :math:`[\ell, h]`; the half-width is the larger of :math:`\hat v-\ell` and :math:`h-\hat v` (a
    percentile interval can be skewed). ``rate`` is :math:`\gamma` in :math:`w\propto n^{-\gamma}`.
    """
    inside = [t for t in thresholds if iv.low <= t <= iv.high]
    if not inside:
        return None
    hw = float(max(iv.value - iv.low, iv.high - iv.value))
    delta = float(min(abs(iv.value - t) for t in inside))
    needed = size * (hw / delta) ** (1.0 / rate) if delta > 0 and hw > 0 else float("inf")
    return PowerLine(quantity, hw, delta, size_name, float(size), float(needed))
