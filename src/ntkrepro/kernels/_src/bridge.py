"""Run a model builder written against ``from ntkrepro.nt import stax`` so that it describes its
model with :mod:`ntkrepro.kernels.fast` instead, and return that description.

The H4 / H6 builders (``hron2020.cifar10.build_model``, ``hron2020.imdb.build_kernel_fn``) import
``stax`` from :mod:`ntkrepro.nt` inside the function and end with ``stax.serial(...)``. While the
builder runs, :func:`from_stax_builder` points ``ntkrepro.nt.stax`` at a namespace whose layer
constructors are ``fast``'s (same names, same arguments) and records what ``serial`` builds; the
model is what the builder returns (a ``fast`` model, or the ``stax`` triple or ``kernel_fn`` of one
it built). So one description serves both backends without copying
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


def _returned_model(result: Any, built: list[_layers.Layer]) -> _layers.Layer | None:
    """The model ``result`` is: a ``fast`` layer itself, or the ``stax`` triple of a model built
    here, or one of its functions (a builder may return ``stax.serial(...)[2]``, the kernel_fn)."""
    if isinstance(result, _layers.Layer):
        return result
    for model in reversed(built):
        triple = model.__dict__.get("_stax_triple")
        if triple is None:
            continue
        if result is triple or (isinstance(result, (tuple, list)) and len(result) == len(triple)
                                and all(a is b for a, b in zip(result, triple))):
            return model
        if any(result is f for f in triple):
            return model
    return None


def from_stax_builder(builder: Callable[..., Any], *args: Any, **kwargs: Any) -> _layers.Layer:
    """The ``fast`` description of the model ``builder(*args, **kwargs)`` returns, built with
    ``stax``: the ``fast`` model it returns, or the model whose ``stax`` triple (or one of its
    functions, e.g. the ``kernel_fn``) it returns. Anything else is a ``ValueError``."""
    import ntkrepro.nt as nt_module

    recorder = _Recorder()
    saved = nt_module.stax
    nt_module.stax = recorder  # type: ignore[assignment]
    try:
        result = builder(*args, **kwargs)
    finally:
        nt_module.stax = saved
    model = _returned_model(result, recorder.models)
    if model is None:
        raise ValueError(f"{getattr(builder, '__name__', builder)} returned {type(result).__name__}, not a model it "
                         "built with stax.serial (nor that model's init_fn / apply_fn / kernel_fn)")
    return model
