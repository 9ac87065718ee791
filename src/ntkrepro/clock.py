"""The clock of the device call's calibrations and measured times (:mod:`ntkrepro.device`).

``wall`` (the device, the default) or ``cpu`` (this process's CPU time: on a shared, loaded CPU what the
neighbours take does not count; the CI tests run single-threaded and use it), set once by the call's
``--clock``. The budget is always wall time. A module of its own, below the paper packages: each paper's
device cost model (``ntkrepro.hron2020.device_calibration``, ``ntkrepro.arda2026.device_cost``) times its
probes with it, and :mod:`ntkrepro.device`, which composes them, sets it. Imports nothing of ntkrepro."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

#: ``{"name": "wall" | "cpu"}`` (a dict, so that every importer sees the call's choice).
CLOCK = {"name": "wall"}


def now() -> float:
    """Seconds on the :data:`CLOCK` (process CPU time or ``perf_counter``)."""
    return time.process_time() if CLOCK["name"] == "cpu" else time.perf_counter()


def timed(fn, *args, **kwargs) -> tuple[Any, float]:
    """``(fn(*args, **kwargs), seconds on the clock)``."""
    t0 = now()
    out = fn(*args, **kwargs)
    return out, now() - t0


def median_timed(fn, *args, **kwargs) -> float:
    """The median of 3 timed calls (a loaded machine's stray delays do not move it)."""
    return float(np.median([timed(fn, *args, **kwargs)[1] for _ in range(3)]))
