"""The old name of the device call's input preparation, kept so that ``python -m
ntkrepro.hron2020.device_inputs ...`` (in records -- the manifest and a skipped H6 tier name it --, notes and
older commands) still runs it. The module is :mod:`ntkrepro.device.inputs` (issue 40): ``python -m
ntkrepro.device.inputs ...`` takes the same arguments."""

from __future__ import annotations

import sys

from ntkrepro.device.inputs import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
