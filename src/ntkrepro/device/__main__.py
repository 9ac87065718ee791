"""``python -m ntkrepro.device``: the prepared one-device call (:mod:`ntkrepro.device.cli`)."""

import sys

from ntkrepro.device.cli import main

sys.exit(main())
