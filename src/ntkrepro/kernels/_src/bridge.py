"""Run a model builder written against ``from ntkrepro.nt import stax`` so that it describes its
model with :mod:`ntkrepro.kernels.fast` instead, and return that description.

The H4 / H6 builders (``hron2020.cifar10.build_model``, ``hron2020.imdb.build_kernel_fn``) import
``stax`` from :mod:`ntkrepro.nt` inside the function and end with ``stax.serial(...)``. While the
builder runs, :func:`from_stax_builder` points ``ntkrepro.nt.stax`` at a namespace whose layer
constructors are ``fast``'s (same names, same arguments) and records what ``serial`` builds; the
outermost (last) ``serial`` is the model. So one description serves both backends without copying
the builder. Once a builder imports ``fast`` itself (``from ntkrepro.kernels import fast as stax``)
this bridge is not needed; it keeps working on such builders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ntkrepro.kernels._src import layers as _layers


class _Recorder:
    """``stax`` look-alike: ``fast`` layers; ``serial`` also records the models it builds."""

    def __init__(self) -> None:
        self.models: list[_layers.Layer] = []

    def serial(self, *layers: _layers.Layer) -> _layers.Layer:
        model = _layers.serial(*layers)
        self.models.append(model)
        return model

    def __getattr__(self, name: str) -> Any:
        if name in _layers.STAX_NAMES:
            return getattr(_layers, name)
        raise NotImplementedError(f"ntkrepro.kernels.fast has no stax.{name}; its layers: {sorted(_layers.STAX_NAMES)}")


def from_stax_builder(builder: Callable[..., Any], *args: Any, **kwargs: Any) -> _layers.Layer:
    """The ``fast`` description of the model ``builder(*args, **kwargs)`` builds with ``stax``."""
    import ntkrepro.nt as nt_module

    recorder = _Recorder()
    saved = nt_module.stax
    nt_module.stax = recorder  # type: ignore[assignment]
    try:
        builder(*args, **kwargs)
    finally:
        nt_module.stax = saved
    if not recorder.models:
        raise ValueError(f"{getattr(builder, '__name__', builder)} built no stax.serial model")
    return recorder.models[-1]
