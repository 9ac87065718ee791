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

_UNSET = object()


def _needs_neural_tangents(*args: Any, **kwargs: Any) -> Any:
    raise ImportError("this model's stax triple was unpacked while neural-tangents was not installed; "
                      "only the fast backend (ntkrepro.kernels.fast.kernel_fn(model, 'fast')) is available here")


#: What ``init_fn, apply_fn, kernel_fn = stax.serial(...)`` unpacks inside a builder run by
#: :func:`from_stax_builder` where neural-tangents is not installed (the builder's own return value
#: is discarded; the recorded model is the result). Removed from the models when the builder returns.
_PLACEHOLDER_TRIPLE = (_needs_neural_tangents, _needs_neural_tangents, _needs_neural_tangents)


class _Recorder:
    """``stax`` look-alike: ``fast`` layers; ``serial`` also records the models it builds."""

    def __init__(self, nt_available: bool = True) -> None:
        self.models: list[_layers.Layer] = []
        self.nt_available = nt_available

    def serial(self, *layers: _layers.Layer) -> _layers.Layer:
        model = _layers.serial(*layers)
        if not self.nt_available:  # unpacking the model must not build neural-tangents' triple
            object.__setattr__(model, "_stax_triple", _PLACEHOLDER_TRIPLE)
        self.models.append(model)
        return model

    def __getattr__(self, name: str) -> Any:
        if name in _layers.STAX_NAMES:
            return getattr(_layers, name)
        raise NotImplementedError(f"ntkrepro.kernels.fast has no stax.{name}; its layers: {sorted(_layers.STAX_NAMES)}")


def from_stax_builder(builder: Callable[..., Any], *args: Any, **kwargs: Any) -> _layers.Layer:
    """The ``fast`` description of the model ``builder(*args, **kwargs)`` builds with ``stax``."""
    import ntkrepro.nt as nt_module

    recorder = _Recorder(nt_module.available())
    # the module's own attribute, not __getattr__: reading nt_module.stax would import neural-tangents
    saved = vars(nt_module).get("stax", _UNSET)
    nt_module.stax = recorder  # type: ignore[assignment]
    try:
        builder(*args, **kwargs)
    finally:
        if saved is _UNSET:
            del nt_module.stax
        else:
            nt_module.stax = saved
        for m in recorder.models:
            if m.__dict__.get("_stax_triple") is _PLACEHOLDER_TRIPLE:
                del m.__dict__["_stax_triple"]
    if not recorder.models:
        raise ValueError(f"{getattr(builder, '__name__', builder)} built no stax.serial model")
    return recorder.models[-1]
