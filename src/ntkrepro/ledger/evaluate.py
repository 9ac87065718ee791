"""Evaluation: a claim's registered criterion applied once to its results, controls and rules included.

:func:`make_evaluation` applies the criterion, judges each negative control by the same criterion
(:func:`evaluate_control`), applies the NaN and control rules (:mod:`ntkrepro.ledger.rules`) and
assembles the evaluation ``results/claims/evaluations/<ID>.json`` (a JSON-able dict, with provenance).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ntkrepro import provenance as _prov
from ntkrepro.ledger.registry import control_function, get_claim
from ntkrepro.ledger.rules import apply_control_rule, apply_nan_rule
from ntkrepro.ledger.specs import NOT_A_CLAIM, NOT_A_CLAIM_LABEL, ClaimSpec, ControlSpec, Results, Verdict
from ntkrepro.ledger.rows import _headline
from ntkrepro.papers import PAPERS
from ntkrepro.stats import Status


#: The scales a run can have (config ``scale``; workflow/schemas/config.schema.yaml).
SCALES = ("smoke", "default", "paper")
#: The scales ``ledger evaluate`` judges: the config scales, and ``gpu``: the results of
#: ``ntkrepro.hron2020.gpu_run`` (its pre-declared one-GPU tiers, recorded as scale ``gpu`` in the
#: results' provenance). The GPU tiers are below the papers' sizes, so a criterion judges them as a
#: reduced scale: every ``scale != "paper"`` branch applies and the entry lists the reductions.
EVALUATE_SCALES = (*SCALES, "gpu")


def _jsonable(obj: Any) -> Any:
    """``obj`` with every :class:`~ntkrepro.stats.Interval` (anything with ``as_dict``), numpy scalar
    and array replaced by plain JSON values (dicts, lists and tuples recursively)."""
    if hasattr(obj, "as_dict"):
        return obj.as_dict()
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "tolist"):  # numpy array or scalar
        return _jsonable(obj.tolist())
    return obj


def evaluate_control(spec: ClaimSpec, control: ControlSpec, results: Results, scale: str) -> dict[str, Any]:
    """Apply the claim's own criterion to the results of one of its negative controls: what the
    control is, why the claim must fail there, the criterion's verdict on it, its reason and
    headline numbers, ``rejected`` (the criterion says ``not_reproduced`` on the control) and
    ``holds`` (it says ``reproduced`` there: the control passes, which caps the claim)."""
    assert spec.evaluate is not None
    cres = control_function(spec.id, control.name)(results)
    cev = spec.evaluate(cres, scale)
    if not isinstance(cev.verdict, Verdict):
        raise TypeError("criterion must return a Verdict")
    measured = {k: (v.as_dict() if hasattr(v, "as_dict") else v) for k, v in cev.measured.items()}
    verdict, reason, nan_cap = apply_nan_rule(cev.verdict, cev.reason, measured)  # a NaN control is never rejected
    return {**control.as_dict(), "verdict": verdict.value, "rejected": verdict is Verdict.NOT_REPRODUCED,
            **({"nan": nan_cap["text"]} if nan_cap else {}),
            "holds": verdict is Verdict.REPRODUCED,
            "reason": reason, "headline": _headline({"measured": measured}),
            "measured": _jsonable(measured), "parts": {k: Status(v).value for k, v in cev.parts.items()}}


def reported_not_judged(spec: ClaimSpec, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that make an evaluation of a proposition the seed does not state (``spec.seed_claim``
    false; CLAIMS.md rule 9) a report without a verdict: ``verdict`` :data:`NOT_A_CLAIM`, no criterion
    verdict, parts or power, the reason naming why it is not a claim; the measured values, controls'
    measurements and figure data are kept, and the controls carry no verdict either (``rejected`` and
    ``holds`` false)."""
    controls = [{**c, "verdict": NOT_A_CLAIM, "rejected": False, "holds": False, "parts": {},
                 "reason": f"{NOT_A_CLAIM_LABEL}: measured and reported, no verdict"}
                for c in entry.get("controls") or []]
    return {"verdict": NOT_A_CLAIM, "criterion_verdict": None, "seed_claim": False,
            "not_a_claim": spec.not_a_claim, "parts": {}, "power": [], "controls": controls,
            "reason": f"reported: {NOT_A_CLAIM_LABEL} ({spec.not_a_claim}); measured with its figure, no verdict "
                      "and not counted among the claims (CLAIMS.md rule 9)"}


def make_evaluation(claim_id: str, results: Results, *, scale: str, config_hash: str | None = None,
                    replicate: int = 0, results_sha256: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Apply the registered criterion once and assemble the claim's evaluation (a JSON-able dict).

    This is the ledger entry without its ``figures`` list: the figure notebooks read it, and
    :func:`entry_from_evaluation` adds the figures afterwards. ``replicate`` is the replicate index
    (:mod:`ntkrepro.replicates`; 0 = the configured run). ``results_sha256`` (``{path relative to the
    results folder: sha256}`` of the results files read, :func:`file_hashes`) is recorded as the first
    link of the hash chain that ``ledger check`` verifies.
    """
    if scale not in EVALUATE_SCALES:
        raise ValueError(f"unknown scale {scale!r}; one of {', '.join(EVALUATE_SCALES)}")
    spec = get_claim(claim_id)
    assert spec.evaluate is not None
    ev = spec.evaluate(results, scale)
    if not isinstance(ev.verdict, Verdict):
        raise TypeError("criterion must return a Verdict")
    measured = {k: (v.as_dict() if hasattr(v, "as_dict") else v) for k, v in ev.measured.items()}
    controls = [evaluate_control(spec, c, results, scale) for c in spec.controls]
    verdict, reason, nan_cap = apply_nan_rule(ev.verdict, ev.reason, measured)
    verdict, reason, cap = apply_control_rule(verdict, reason, controls, ev.parts)
    voided = [c for c in controls if c.get("nan")]
    if verdict is Verdict.REPRODUCED and voided:
        # the control's refutation rested on a NaN (apply_nan_rule): nothing shows the criterion could fail
        text = "; ".join(f"control '{c['name']}': {c['nan']}" for c in voided)
        nan_cap = {"quantity": "negative control", "half_width": float("nan"), "needed_half_width": float("nan"),
                   "size_name": "none", "size": float("nan"), "needed": float("inf"),
                   "text": f"capped at inconclusive: {text}"}
        verdict, reason = Verdict.INCONCLUSIVE, f"{reason} [{nan_cap['text']}; the criterion alone says reproduced]"
    power = [p.as_dict() for p in ev.power] if verdict is Verdict.INCONCLUSIVE else []
    power += [c for c in (nan_cap, cap) if c is not None]
    paper = PAPERS[spec.paper]
    entry = {
        "id": spec.id,
        "paper": spec.paper,
        "paper_ref": f"{paper.authors} ({paper.year}), {paper.title}, {paper.ref}",
        "statement": spec.statement,
        "paper_sentence": spec.paper_sentence(),
        "criterion": spec.criterion,
        "criterion_version": spec.version,
        "amendments": [a.as_dict() for a in spec.amendments],
        "amendment_corrections": [c.as_dict() for c in spec.corrections],
        "measured": measured,
        "verdict": verdict.value,
        "criterion_verdict": ev.verdict.value,
        "reason": reason,
        "controls": controls,
        "parts": {k: Status(v).value for k, v in ev.parts.items()},
        "power": power,
        "scale": scale,
        "substitutes": list(ev.substitutes),
        "data": list(ev.data),
        "figure_data": _jsonable(ev.figure),
        "results_provenance": {k: r.get("provenance") for k, r in results.items()},
        "provenance": _prov.collect(config_hash=config_hash, scale=scale),
        "replicate": int(replicate),
    }
    if not spec.seed_claim:
        entry.update(reported_not_judged(spec, entry))
    if results_sha256 is not None:
        entry["results_sha256"] = dict(sorted(results_sha256.items()))
    return entry
