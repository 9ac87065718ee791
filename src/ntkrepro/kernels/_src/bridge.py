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

_UNSET = object()


def _needs_neural_tangents(*args: Any, **kwargs: Any) -> Any:
    raise ImportError("this model's stax triple was unpacked while neural-tangents was not installed; "
                      "only the fast backend (ntkrepro.kernels.fast.kernel_fn(model, 'fast')) is available here")


class _PlaceholderTriple(tuple):
    """What ``init_fn, apply_fn, kernel_fn = stax.serial(...)`` unpacks inside a builder run by
    :func:`from_stax_builder` where neural-tangents is not installed: three distinct functions per
    model (so that what the builder returns -- the triple or one of its functions -- identifies the
    model) that raise if called. Removed from the models when the builder returns."""

    placeholder = True

    def __new__(cls) -> "_PlaceholderTriple":
        def init_fn(*a: Any, **k: Any) -> Any:
            return _needs_neural_tangents()

        def apply_fn(*a: Any, **k: Any) -> Any:
            return _needs_neural_tangents()

        def kernel_fn(*a: Any, **k: Any) -> Any:
            return _needs_neural_tangents()

        return super().__new__(cls, (init_fn, apply_fn, kernel_fn))


class _Recorder:
    """``stax`` look-alike: ``fast`` layers; ``serial`` also records the models it builds."""

    def __init__(self, nt_available: bool = True) -> None:
        self.models: list[_layers.Layer] = []
        self.nt_available = nt_available

    def serial(self, *layers: _layers.Layer) -> _layers.Layer:
        model = _layers.serial(*layers)
        if not self.nt_available:  # unpacking the model must not build neural-tangents' triple
            object.__setattr__(model, "_stax_triple", _PlaceholderTriple())
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
    import ntkrepro.nt as nt_module  # here: neural-tangents is optional for the fast kernels

    recorder = _Recorder(nt_module.available())
    # the module's own attribute, not __getattr__: reading nt_module.stax would import neural-tangents
    saved = vars(nt_module).get("stax", _UNSET)
    nt_module.stax = recorder  # type: ignore[assignment]
    try:
        result = builder(*args, **kwargs)
    finally:
        if saved is _UNSET:
            del nt_module.stax
        else:
            nt_module.stax = saved
    model = _returned_model(result, recorder.models)
    for m in recorder.models:
        if getattr(m.__dict__.get("_stax_triple"), "placeholder", False):
            del m.__dict__["_stax_triple"]
    if model is None:
        raise ValueError(f"{getattr(builder, '__name__', builder)} returned {type(result).__name__}, not a model it "
                         "built with stax.serial (nor that model's init_fn / apply_fn / kernel_fn)")
    return model
