"""The single, TensorFlow-free import of neural-tangents.

neural-tangents 0.6.5 imports ``neural_tangents.experimental`` from its package ``__init__``, and
that sub-package imports TensorFlow (1.9 GB, used only by ``experimental.empirical_tf``). We install
neural-tangents with ``--no-deps`` and register a placeholder for ``neural_tangents.experimental``
before the first import, so ``stax``, ``empirical_*``, ``monte_carlo_kernel_fn``, ``batch`` and
``predict`` work unchanged. Touching anything in ``experimental`` raises a clear ImportError.

Everything else in this project imports neural-tangents through this module::

    from ntkrepro.nt import nt, stax

``nt`` and ``stax`` are imported on first access (module ``__getattr__``), so ``import ntkrepro.nt``
itself works without neural-tangents: the fast backend (:mod:`ntkrepro.kernels.fast`) points
``ntkrepro.nt.stax`` at its own layers while a model builder runs
(:func:`ntkrepro.kernels.fast.from_stax_builder`) and never touches neural-tangents, which is
archived and pins jax 0.5.3. Only the ``nt`` backend (the reference) and the tests comparing with it
need neural-tangents; :func:`available` says whether it is installed.
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

def available() -> bool:
    """Whether neural-tangents can be imported here (without importing it)."""
    import importlib.util

    if "neural_tangents" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("neural_tangents") is not None
    except (ImportError, ValueError):
        return False


def __getattr__(name: str):
    """``nt`` / ``stax``: neural-tangents, imported now (ImportError when it is not installed)."""
    if name not in ("nt", "stax"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import neural_tangents
        from neural_tangents import stax
    except ImportError as e:
        raise ImportError(f"ntkrepro.nt.{name} needs neural-tangents (0.6.5, with jax 0.5.3; envs/setup.sh), "
                          f"which is not importable here ({e}). The fast kernel backend "
                          "(kernel_backend: fast, ntkrepro.kernels.fast) does not need it.") from e
    globals().update(nt=neural_tangents, stax=stax)
    return globals()[name]


__all__ = ["available", "nt", "stax"]
