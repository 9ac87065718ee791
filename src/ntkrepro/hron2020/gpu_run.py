"""The old name of the prepared one-device call, kept so that ``python -m ntkrepro.hron2020.gpu_run ...``
(in records -- ``gpu_run.json`` names it --, notes and older commands) still runs it. The call is the package
:mod:`ntkrepro.device` (issue 40): ``python -m ntkrepro.device ...`` takes the same arguments. Nothing else
lives here; Hron et al.'s own device parts are ``device_calibration``, ``device_cost`` and ``device_tiers``."""

from __future__ import annotations

import sys

from ntkrepro.device.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
