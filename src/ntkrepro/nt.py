"""The single, TensorFlow-free import of neural-tangents.

neural-tangents 0.6.5 imports ``neural_tangents.experimental`` from its package ``__init__``, and
that sub-package imports TensorFlow (1.9 GB, used only by ``experimental.empirical_tf``). We install
neural-tangents with ``--no-deps`` and register a placeholder for ``neural_tangents.experimental``
before the first import, so ``stax``, ``empirical_*``, ``monte_carlo_kernel_fn``, ``batch`` and
``predict`` work unchanged. Touching anything in ``experimental`` raises a clear ImportError.

Everything else in this project imports neural-tangents through this module::

    from ntkrepro.nt import nt, stax
"""

from __future__ import annotations

import sys
import types


class _ExperimentalUnavailable(types.ModuleType):
    """Placeholder for ``neural_tangents.experimental`` (needs TensorFlow; not installed)."""

    def __getattr__(self, name: str):  # noqa: D105
        if name.startswith("__"):
            raise AttributeError(name)
        raise ImportError(
            f"neural_tangents.experimental.{name} needs TensorFlow, which ntkrepro does not install "
            "(see envs/setup.sh). Use neural_tangents.stax / empirical_* instead."
        )


if "neural_tangents" not in sys.modules:
    sys.modules.setdefault(
        "neural_tangents.experimental", _ExperimentalUnavailable("neural_tangents.experimental")
    )

import neural_tangents as nt  # noqa: E402
from neural_tangents import stax  # noqa: E402

__all__ = ["nt", "stax"]
