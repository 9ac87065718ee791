"""The verdict rules, the same for every claim: two conditions -> a verdict, the NaN rule, the control rule.

:func:`decide`, :func:`verdict_of` and :func:`sign_status` map a criterion's conditions to a
:class:`~ntkrepro.ledger.specs.Verdict`; :func:`apply_nan_rule` (a NaN is never evidence) and
:func:`apply_control_rule` (``reproduced`` needs every negative control not ``reproduced``; CLAIMS.md
rules 7 and 8) cap the criterion's own verdict in :func:`ntkrepro.ledger.evaluate.make_evaluation`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ntkrepro.ledger.specs import Verdict
from ntkrepro.stats import Interval, Status, at_least


def decide(*, reproduced: bool, refuted: bool) -> Verdict:
    """Map two pre-registered conditions to a verdict (``refuted`` wins over ``reproduced``)."""
    if refuted:
        return Verdict.NOT_REPRODUCED
    if reproduced:
        return Verdict.REPRODUCED
    return Verdict.INCONCLUSIVE


def sign_status(diff: Interval) -> Status:
    """``holds`` if the CI of a difference A - B lies wholly above 0, ``refuted`` if wholly below, else
    ``undecided``."""
    return at_least(diff, 0.0)


def verdict_of(status: Status | str) -> Verdict:
    """The verdict of a criterion whose parts were combined into one :class:`~ntkrepro.stats.Status`."""
    st = Status(status)
    return decide(reproduced=st is Status.HOLDS, refuted=st is Status.REFUTED)


def nan_paths(obj: Any, prefix: str = "") -> list[str]:
    """Dotted paths (list items as ``[i]``) of every NaN number in ``obj`` (mappings, lists, objects
    with ``as_dict``, numpy values). Infinities are not listed: an interval [-inf, inf] is a stated
    "no interval", a NaN is a computation that failed."""
    if hasattr(obj, "as_dict"):
        obj = obj.as_dict()
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        obj = obj.tolist()
    if isinstance(obj, bool) or obj is None:
        return []
    if isinstance(obj, float):
        return [prefix or "<value>"] if obj != obj else []
    if isinstance(obj, Mapping):
        return [p for k, v in obj.items() for p in nan_paths(v, f"{prefix}.{k}" if prefix else str(k))]
    if isinstance(obj, (list, tuple)):
        return [p for i, v in enumerate(obj) for p in nan_paths(v, f"{prefix}[{i}]")]
    return []


#: The reason an entry gives when a NaN in a measured value stopped a refutation (issue 32).
NAN_NOT_EVIDENCE = "a NaN is a failed computation, not evidence"


def apply_nan_rule(verdict: Verdict, reason: str, measured: Mapping[str, Any]
                   ) -> tuple[Verdict, str, dict[str, Any] | None]:
    """The NaN rule, the same for every criterion and every control: a ``not_reproduced`` whose
    measured values hold a NaN anywhere is ``inconclusive``, with the reason naming the values (a
    failed computation never counts as a refutation, and a control with a NaN is never
    ``rejected``). Returns (verdict, reason, power-line record or None)."""
    bad = nan_paths(measured)
    if verdict is not Verdict.NOT_REPRODUCED or not bad:
        return verdict, reason, None
    names = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
    text = f"measured {names} is NaN: {NAN_NOT_EVIDENCE}; rerun the computation that produced it"
    rec = {"quantity": "non-finite measured value", "half_width": float("nan"), "needed_half_width": float("nan"),
           "size_name": "none", "size": float("nan"), "needed": float("inf"), "text": text}
    return Verdict.INCONCLUSIVE, f"{reason} [{text}; the criterion alone says not_reproduced]", rec


#: The reason an entry gives when the real run and a control both pass (CLAIMS.md rule 8).
UNINFORMATIVE = "uninformative at this scale"


def passes_on_control(control: Mapping[str, Any], parts: Mapping[str, Any] | None = None) -> bool:
    """Whether a negative control passes what the claim was judged on: the criterion says
    ``reproduced`` on it, or (issue 38) every part the real run was judged by (``parts``, names ->
    :class:`~ntkrepro.stats.Status`) holds on the control too -- the control is judged by the same
    parts, so a verdict cannot rest on a condition outside them (a part the paper does not state, a
    validity check) to make the control fail."""
    if control.get("verdict") == Verdict.REPRODUCED.value:
        return True
    judged = {k: Status(v).value for k, v in (parts or {}).items()}
    cparts = {k: Status(v).value for k, v in (control.get("parts") or {}).items()}
    return bool(judged) and all(cparts.get(k) == Status.HOLDS.value for k in judged)


def apply_control_rule(verdict: Verdict, reason: str, controls: Sequence[Mapping[str, Any]],
                       parts: Mapping[str, Any] | None = None) -> tuple[Verdict, str, dict[str, Any] | None]:
    """The control rule (CLAIMS.md rule 7): ``reproduced`` needs every negative control of the claim
    to come out **not** ``reproduced`` under the same criterion (``not_reproduced`` or
    ``inconclusive``). When the real run and a control both pass, the claim holds in the nearest
    false alternative too, so the run cannot tell them apart: the verdict is ``inconclusive`` with
    the reason "holds in <control> too: uninformative at this scale" (rule 8), and the cap is
    returned as a power-line record (``needed`` = inf: no sample size of this design decides it).
    A claim without any control is capped the same way. ``not_reproduced`` and ``inconclusive``
    pass unchanged. With the real run's ``parts``, a control on which every one of those parts holds
    counts as passing even when the criterion's overall verdict on it is not ``reproduced``
    (:func:`passes_on_control`). Returns (verdict, reason, cap record or None)."""
    if verdict is not Verdict.REPRODUCED:
        return verdict, reason, None
    if not controls:
        why = "no negative control is registered, so nothing shows that the criterion could have failed"
        text = f"capped at inconclusive by the control rule: {why}"
    else:
        passing = [c for c in controls if passes_on_control(c, parts)]
        if not passing:
            return verdict, reason, None
        why = "; ".join(f"holds in '{c['name']}' too ({c.get('headline', '')}"
                        + ("" if c.get("verdict") == Verdict.REPRODUCED.value else
                           f"; every judged part holds there, criterion verdict {c.get('verdict')}") + ")"
                        for c in passing)
        text = f"{why}: {UNINFORMATIVE}"
    cap = {"quantity": "negative control", "half_width": float("nan"), "needed_half_width": float("nan"),
           "size_name": "none", "size": float("nan"), "needed": float("inf"), "text": text}
    return Verdict.INCONCLUSIVE, f"{reason} [{text}; the criterion alone says reproduced]", cap
