"""The criterion and control registries: which function judges each claim, which produces each control.

A paper's ``claims`` module registers its criteria (:func:`register`) and its negative controls
(:func:`register_control`, or :func:`register_stored_control` for a control the compute rule stored
beside the real run) at import; :func:`get_claim` imports the module of a claim's paper on demand. The two
registries (``_REGISTRY``, ``_CONTROLS``) are module-level dicts, one object each for the whole process
(:mod:`ntkrepro.ledger` re-exports these same objects). :func:`stored_control` and :func:`one_result` are
how criteria and controls read a claim's results.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from ntkrepro.ledger.specs import ClaimSpec, Evaluation, Results
from ntkrepro.papers import CLAIM_MODULES, PAPERS


_REGISTRY: dict[str, ClaimSpec] = {}


def register(spec: ClaimSpec) -> Callable[[Callable[[Results, str], Evaluation]], Callable[[Results, str], Evaluation]]:
    """Decorator registering ``fn`` as the criterion of ``spec`` (ids are unique)."""
    if spec.paper not in PAPERS:
        raise ValueError(f"unknown paper {spec.paper!r}")

    def deco(fn: Callable[[Results, str], Evaluation]) -> Callable[[Results, str], Evaluation]:
        if spec.id in _REGISTRY and _REGISTRY[spec.id].evaluate is not fn:
            raise ValueError(f"claim {spec.id} registered twice")
        _REGISTRY[spec.id] = dataclasses.replace(spec, evaluate=fn, amendments=tuple(spec.amendments),
                                                 controls=tuple(spec.controls), corrections=tuple(spec.corrections))
        return fn

    return deco


#: A control function: the claim's results -> the control's results, in the same layout, so that
#: the claim's own criterion function can judge them.
ControlFn = Callable[[Results], Results]
_CONTROLS: dict[tuple[str, str], ControlFn] = {}


def register_control(claim_id: str, name: str) -> Callable[[ControlFn], ControlFn]:
    """Decorator registering ``fn`` as the results of negative control ``name`` of ``claim_id``
    (pre-registered as ``[[<claim_id>.controls]]`` with that name in the paper's ``claims.toml``).

    ``fn(results)`` gets the claim's results (as the criterion does) and returns the control's
    results in the same layout; :func:`make_evaluation` applies the claim's criterion to them. Most
    controls are computed by the compute rule beside the real run and stored under
    ``results[<stem>]["controls"][name]`` (:func:`stored_control` reads them); a control derived
    from the measured numbers (a permutation, a synthetic alternative law) is computed here.
    """
    def deco(fn: ControlFn) -> ControlFn:
        key = (claim_id, name)
        if key in _CONTROLS and _CONTROLS[key] is not fn:
            raise ValueError(f"control {name!r} of claim {claim_id} registered twice")
        _CONTROLS[key] = fn
        return fn

    return deco


def stored_control(results: Results, name: str, *, keep_params: bool = False) -> dict[str, Any]:
    """The control's results as stored by the compute rule: every results file that holds
    ``controls[name]`` is replaced by that payload (provenance kept; with ``keep_params``, the file's
    ``params`` too, where the payload has none: the bootstrap sizes and seeds a criterion reads there),
    the others pass unchanged. A clear error if no results file stores the control."""
    out: dict[str, Any] = {}
    found = False
    for stem, r in results.items():
        ctrl = (r.get("controls") or {}).get(name) if isinstance(r, Mapping) else None
        if ctrl is None:
            out[stem] = r
        else:
            found = True
            out[stem] = {**ctrl, "provenance": r.get("provenance")}
            if keep_params and "params" in r and "params" not in ctrl:
                out[stem]["params"] = r["params"]
    if not found:
        raise KeyError(f"no results file stores control {name!r} (results: {sorted(results)}); rerun the "
                       "claim's compute rule with the current code")
    return out


def register_stored_control(claim_id: str, name: str, *, keep_params: bool = False) -> ControlFn:
    """Register, as negative control ``name`` of ``claim_id``, the results its compute rule stored beside the
    real run (:func:`stored_control`, with ``keep_params`` as given); returns the control function. One line
    per control in a paper's ``claims`` module in place of a function whose body only calls
    :func:`stored_control`."""
    def control(results: Results) -> Results:
        return stored_control(results, name, keep_params=keep_params)

    control.__name__ = control.__qualname__ = f"stored_control_{claim_id.lower()}_{name}"
    control.__doc__ = (f"Negative control {name!r} of claim {claim_id}: the results its compute rule stored "
                       f"(:func:`stored_control`{', params kept' if keep_params else ''}).")
    return register_control(claim_id, name)(control)


def control_function(claim_id: str, name: str) -> ControlFn:
    """The registered control function (a clear error naming the claim and control otherwise)."""
    get_claim(claim_id)
    try:
        return _CONTROLS[(claim_id, name)]
    except KeyError:
        raise KeyError(f"claim {claim_id}: control {name!r} is pre-registered but no function is registered "
                       f"for it (@register_control({claim_id!r}, {name!r}) in {CLAIM_MODULES[claim_id[:1]]})") from None


def get_claim(claim_id: str) -> ClaimSpec:
    """Look up a registered claim, importing its paper's ``claims`` module on demand."""
    if claim_id not in _REGISTRY:
        module = CLAIM_MODULES.get(claim_id[:1])
        if module is None:
            raise KeyError(f"no paper registers claims with prefix {claim_id[:1]!r}")
        importlib.import_module(module)
    try:
        return _REGISTRY[claim_id]
    except KeyError:
        raise KeyError(f"claim {claim_id} is not registered in {CLAIM_MODULES[claim_id[:1]]}") from None


def registered_claims() -> dict[str, ClaimSpec]:
    """All claims whose paper modules import cleanly."""
    for module in CLAIM_MODULES.values():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
    return dict(sorted(_REGISTRY.items()))


def one_result(results: Results, prefix: str) -> Mapping[str, Any]:
    """The single results file whose stem starts with ``prefix`` (a clear error otherwise)."""
    keys = [k for k in results if k.startswith(prefix)]
    if len(keys) != 1:
        raise KeyError(f"expected exactly one results file starting with {prefix!r}, got {sorted(results)}")
    return results[keys[0]]
