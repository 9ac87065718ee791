"""The claims ledger: pre-registered criteria, verdicts and the aggregate claims table.

Each claim of ``CLAIMS.md`` is pre-registered in its paper's sub-package *before* any run: its
statement, criterion text, criterion version and amendment log in ``<paper>/claims.toml``
(:data:`PREREGISTRATION_FILE`), the function applying the criterion beside it in
``<paper>/claims.py``::

    @register(load_claim_spec("hron2020", "H1"))
    def evaluate_h1(results: Results, scale: str) -> Evaluation: ...

Each criterion function is unit-tested on synthetic numbers in both directions. The criterion is
applied once per claim:
``python -m ntkrepro.ledger evaluate H1 ...`` loads the claim's results files, applies the function
and writes the evaluation ``results/claims/evaluations/H1.json`` (keys ``id, paper, statement,
criterion, measured, verdict, scale, substitutes, data, figure_data, provenance``). The figure
notebooks read that file (they never call a criterion), then ``python -m ntkrepro.ledger entry H1
--evaluation ... --figures ...`` adds the figure list and writes ``results/claims/H1.json``, so the
DAG is results -> evaluation -> figures -> entry, without a cycle. ``python -m ntkrepro.ledger
table`` aggregates all entries (CSV, Markdown, LaTeX).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import enum
import functools
import importlib
import importlib.resources
import json
import re
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ntkrepro import provenance as _prov
import os

from ntkrepro.io import (SEAL_KEY, TamperedFileError, atomic_path, check_npz_seal, check_seal, content_sha256,
                         read_json, read_npz, write_json)
from ntkrepro.papers import CLAIM_MODULES, PAPERS, Paper  # noqa: F401  (the one paper registry, re-exported)
from ntkrepro.stats import Interval, PowerLine, Status, at_least


class Verdict(str, enum.Enum):
    """Outcome of a pre-registered criterion."""

    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not_reproduced"
    INCONCLUSIVE = "inconclusive"


@dataclass
class Evaluation:
    """What a criterion returns: measured values with uncertainty, the verdict and why.

    ``power`` holds one :class:`~ntkrepro.stats.PowerLine` per undecided part of an
    ``inconclusive`` verdict (CLAIMS.md rule 5): the half-width reached and the size at which the
    same criterion would decide. ``parts`` names each part of a multi-part criterion with its
    :class:`~ntkrepro.stats.Status`. ``figure`` holds what the claim's figure draws beyond
    ``measured`` and the results file -- criterion thresholds, fitted lines, per-point intervals --
    so that the notebook plots numbers computed here, once, and never recomputes a statistic.
    """

    measured: dict[str, Interval | float | int | str | list]
    verdict: Verdict
    reason: str
    substitutes: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    power: list[PowerLine] = field(default_factory=list)
    parts: dict[str, Status] = field(default_factory=dict)
    figure: dict[str, Any] = field(default_factory=dict)


#: A claim's results, keyed by the stem of each results file (``H1_gaussianity.json`` -> ``H1_gaussianity``).
Results = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Amendment:
    """A change to a criterion made after results of it were seen (CLAIMS.md rule 6).

    ``previous`` maps each scale where the old criterion ran to its verdict and headline numbers
    there (e.g. ``{"default": "not_reproduced; slope -0.52 [-0.64, -0.45]"}``).
    """

    date: str
    change: str
    why: str
    previous: Mapping[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"date": self.date, "change": self.change, "why": self.why, "previous": dict(self.previous)}


@dataclass(frozen=True)
class Correction:
    """A correction of a past amendment entry (the amendment log is append-only: a past entry is
    never edited; what it should have said is appended here). ``amendment`` is the 1-based index of
    the corrected entry in the claim's amendment log, ``correction`` what is corrected or added."""

    date: str
    amendment: int
    correction: str
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {"date": self.date, "amendment": self.amendment, "correction": self.correction, "why": self.why}


@dataclass(frozen=True)
class ControlSpec:
    """A negative control of a claim, pre-registered in ``claims.toml`` beside the criterion.

    A control is the **nearest false alternative** a sceptical reader would propose (CLAIMS.md
    rule 7): a run in which the paper's claim is false, but only just, measured like the real run
    and judged by **the same criterion function**. ``what`` says what the control is,
    ``why_fails`` why the claim must fail there, ``why_nearest`` why no nearer false alternative
    exists (or, starting "No near miss exists", why the control is a coarser one). The function
    producing the control's results is registered with :func:`register_control` under
    ``(claim id, name)``.
    """

    name: str
    what: str
    why_fails: str
    why_nearest: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "what": self.what, "why_fails": self.why_fails,
                "why_nearest": self.why_nearest}


@dataclass(frozen=True)
class ClaimSpec:
    """A claim and its pre-registered criterion (text); ``evaluate`` applies it to results.

    ``version`` counts criterion versions (1 = as first registered); every later version carries an
    :class:`Amendment` in ``amendments``, oldest first, so ``version == 1 + len(amendments)``. The
    papers' claims are read from their pre-registration files (:func:`load_claim_spec`).
    """

    id: str
    paper: str
    statement: str
    criterion: str
    evaluate: Callable[[Results, str], Evaluation] | None = None
    version: int = 1
    amendments: tuple[Amendment, ...] = ()
    quote: str = ""
    controls: tuple[ControlSpec, ...] = ()
    corrections: tuple[Correction, ...] = ()

    def paper_sentence(self) -> str:
        """The paper's sentence the claim tests: ``quote`` if given; else the quoted passage the
        criterion opens with, with its location (``Paper, Sec. 3: "..."``); else the first quoted
        passage (20 characters or more, in double quotes or in single quotes that are not
        apostrophes) of the statement; else ""."""
        if self.quote:
            return self.quote
        m = re.match(r'\s*(Paper[^:"]*:\s*)?"([^"]+)"', self.criterion)
        if m:
            return f'{(m.group(1) or "").strip()} "{m.group(2)}"'.strip()
        m = re.search(r'"([^"]{20,})"|(?:^|(?<=[\s(:]))\'([^\']{20,})\'(?=[\s).,;:]|$)', self.statement)
        return f'"{m.group(1) or m.group(2)}"' if m else ""

    def __post_init__(self) -> None:
        if self.version != 1 + len(self.amendments):
            raise ValueError(f"claim {self.id}: criterion version {self.version} needs {self.version - 1} "
                             f"amendment(s), has {len(self.amendments)}")
        names = [c.name for c in self.controls]
        if len(set(names)) != len(names):
            raise ValueError(f"claim {self.id}: control names repeat: {names}")
        for c in self.corrections:
            if not 1 <= c.amendment <= len(self.amendments):
                raise ValueError(f"claim {self.id}: a correction names amendment {c.amendment}, which does not "
                                 f"exist (the log has {len(self.amendments)})")


#: Each paper's pre-registration, ``src/ntkrepro/<paper>/claims.toml`` (package data): one table
#: ``[<claim id>]`` per claim with ``statement``, ``criterion``, ``version``, optionally ``quote``,
#: and its amendment log, one ``[[<claim id>.amendments]]`` table per :class:`Amendment`, oldest
#: first, each with ``date`` (ISO), ``change``, ``why`` and ``[<claim id>.amendments.previous]``
#: (scale -> the previous criterion's verdict and headline numbers there); and its negative controls,
#: one ``[[<claim id>.controls]]`` table per :class:`ControlSpec` with ``name`` (an identifier),
#: ``what``, ``why_fails`` and ``why_nearest``; and corrections of past amendment entries (which are
#: never edited), one ``[[<claim id>.corrections]]`` table per :class:`Correction`. Both logs are
#: append-only: :mod:`ntkrepro.amendment_log` holds a checksum per entry and a test compares them.
PREREGISTRATION_FILE = "claims.toml"
_CLAIM_KEYS = {"statement", "criterion", "version", "quote", "amendments", "controls", "corrections"}
_AMENDMENT_KEYS = {"date", "change", "why", "previous"}
_CONTROL_KEYS = {"name", "what", "why_fails", "why_nearest"}
_CONTROL_OPTIONAL: set[str] = set()


def _text(where: str, table: Mapping[str, Any], key: str) -> str:
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {key} must be a non-empty string")
    return value


def _keys(where: str, table: Any, required: set[str], allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(table, Mapping) or not required <= set(table) or set(table) - allowed:
        found = sorted(table) if isinstance(table, Mapping) else repr(table)
        raise ValueError(f"{where}: keys {found}, expected {sorted(required)} and optionally "
                         f"{sorted(allowed - required)}")
    return table


def _iso_date(where: str, date: Any) -> str:
    """``date`` if it is an ISO date string (YYYY-MM-DD), else a ValueError naming ``where``."""
    try:
        iso = isinstance(date, str) and datetime.date.fromisoformat(date).isoformat() == date
    except ValueError:
        iso = False
    if not iso:
        raise ValueError(f"{where}: date {date!r} is not an ISO date (YYYY-MM-DD, quoted)")
    return date


def _amendment(where: str, entry: Any) -> Amendment:
    """One entry of an amendment log, checked: an ISO date (YYYY-MM-DD, a quoted string), a
    non-empty ``change`` and ``why``, and ``previous`` (optional) mapping scales to non-empty text."""
    entry = _keys(where, entry, {"date", "change", "why"}, _AMENDMENT_KEYS)
    date = _iso_date(where, entry["date"])
    previous = entry.get("previous", {})
    if not isinstance(previous, Mapping) or not all(isinstance(v, str) and v.strip() for v in previous.values()):
        raise ValueError(f"{where}: previous must map scales to non-empty strings")
    return Amendment(date, _text(where, entry, "change"), _text(where, entry, "why"), dict(previous))


def _correction(where: str, entry: Any) -> Correction:
    """One correction of a past amendment entry, checked: ISO date, 1-based ``amendment`` index,
    non-empty ``correction`` and ``why``."""
    entry = _keys(where, entry, {"date", "amendment", "correction", "why"}, {"date", "amendment", "correction", "why"})
    date = _iso_date(where, entry["date"])
    index = entry["amendment"]
    if not isinstance(index, int) or isinstance(index, bool) or index < 1:
        raise ValueError(f"{where}: amendment must be the 1-based index of an amendment entry, got {index!r}")
    return Correction(date, index, _text(where, entry, "correction"), _text(where, entry, "why"))


def _control(where: str, entry: Any) -> ControlSpec:
    """One negative control of a pre-registration file, checked: ``name`` an identifier, non-empty
    ``what`` and ``why_fails``."""
    entry = _keys(where, entry, _CONTROL_KEYS, _CONTROL_KEYS | _CONTROL_OPTIONAL)
    name = _text(where, entry, "name")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"{where}: control name {name!r} must be a lower-case identifier")
    return ControlSpec(name, _text(where, entry, "what"), _text(where, entry, "why_fails"),
                       _text(where, entry, "why_nearest"))


def _claim_spec(where: str, claim_id: str, paper: str, table: Any) -> ClaimSpec:
    """One claim of a pre-registration file, checked (:class:`ClaimSpec` checks the version)."""
    table = _keys(where, table, {"statement", "criterion", "version"}, _CLAIM_KEYS)
    version, amendments, quote = table["version"], table.get("amendments", []), table.get("quote", "")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"{where}: version must be a whole number >= 1, got {version!r}")
    if not isinstance(amendments, list):
        raise ValueError(f"{where}: amendments must be [[{claim_id}.amendments]] tables")
    if not isinstance(quote, str):
        raise ValueError(f"{where}: quote must be a string")
    controls = table.get("controls", [])
    if not isinstance(controls, list):
        raise ValueError(f"{where}: controls must be [[{claim_id}.controls]] tables")
    corrections = table.get("corrections", [])
    if not isinstance(corrections, list):
        raise ValueError(f"{where}: corrections must be [[{claim_id}.corrections]] tables")
    return ClaimSpec(claim_id, paper, _text(where, table, "statement"), _text(where, table, "criterion"),
                     version=version, quote=quote,
                     amendments=tuple(_amendment(f"{where}, amendment {i + 1}", a) for i, a in enumerate(amendments)),
                     controls=tuple(_control(f"{where}, control {i + 1}", c) for i, c in enumerate(controls)),
                     corrections=tuple(_correction(f"{where}, correction {i + 1}", c)
                                       for i, c in enumerate(corrections)))


@functools.cache
def preregistration(paper: str) -> dict[str, ClaimSpec]:
    """The claims pre-registered for ``paper`` in its :data:`PREREGISTRATION_FILE`, in file order:
    claim id -> :class:`ClaimSpec` (without ``evaluate``; :func:`register` adds it). Every claim id
    must carry the paper's prefix; every field is checked."""
    if paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r}")
    res = importlib.resources.files(f"ntkrepro.{paper}").joinpath(PREREGISTRATION_FILE)
    where = f"ntkrepro/{paper}/{PREREGISTRATION_FILE}"
    if not res.is_file():
        raise FileNotFoundError(f"{where}: no pre-registration file")
    specs: dict[str, ClaimSpec] = {}
    for claim_id, table in tomllib.loads(res.read_text(encoding="utf-8")).items():
        if not re.fullmatch(rf"{PAPERS[paper].claim_prefix}\d+", claim_id):
            raise ValueError(f"{where}: {claim_id!r} is not a claim id of {paper}")
        specs[claim_id] = _claim_spec(f"{where}, {claim_id}", claim_id, paper, table)
    return specs


def load_claim_spec(paper: str, claim_id: str) -> ClaimSpec:
    """The :class:`ClaimSpec` of ``claim_id`` as pre-registered in ``paper``'s
    :data:`PREREGISTRATION_FILE`, for ``@register(load_claim_spec(PAPER, "X1"))``."""
    try:
        return preregistration(paper)[claim_id]
    except KeyError:
        raise KeyError(f"claim {claim_id} is not pre-registered in ntkrepro/{paper}/{PREREGISTRATION_FILE}") from None


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


def stored_control(results: Results, name: str) -> dict[str, Any]:
    """The control's results as stored by the compute rule: every results file that holds
    ``controls[name]`` is replaced by that payload (provenance kept), the others pass unchanged.
    A clear error if no results file stores the control."""
    out: dict[str, Any] = {}
    found = False
    for stem, r in results.items():
        ctrl = (r.get("controls") or {}).get(name) if isinstance(r, Mapping) else None
        if ctrl is None:
            out[stem] = r
        else:
            found = True
            out[stem] = {**ctrl, "provenance": r.get("provenance")}
    if not found:
        raise KeyError(f"no results file stores control {name!r} (results: {sorted(results)}); rerun the "
                       "claim's compute rule with the current code")
    return out


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


def decide(*, reproduced: bool, refuted: bool) -> Verdict:
    """Map two pre-registered conditions to a verdict (``refuted`` wins over ``reproduced``)."""
    if refuted:
        return Verdict.NOT_REPRODUCED
    if reproduced:
        return Verdict.REPRODUCED
    return Verdict.INCONCLUSIVE


def one_result(results: Results, prefix: str) -> Mapping[str, Any]:
    """The single results file whose stem starts with ``prefix`` (a clear error otherwise)."""
    keys = [k for k in results if k.startswith(prefix)]
    if len(keys) != 1:
        raise KeyError(f"expected exactly one results file starting with {prefix!r}, got {sorted(results)}")
    return results[keys[0]]


def sign_status(diff: Interval) -> Status:
    """``holds`` if the CI of a difference A - B lies wholly above 0, ``refuted`` if wholly below, else ``undecided``."""
    return at_least(diff, 0.0)


def verdict_of(status: Status | str) -> Verdict:
    """The verdict of a criterion whose parts were combined into one :class:`~ntkrepro.stats.Status`."""
    st = Status(status)
    return decide(reproduced=st is Status.HOLDS, refuted=st is Status.REFUTED)


#: The scales a run can have (config ``scale``; workflow/schemas/config.schema.yaml).
SCALES = ("smoke", "default", "paper")
#: The scales ``ledger evaluate`` judges: the config scales, and ``gpu``: the results of
#: ``ntkrepro.hron2020.gpu_run`` (its pre-declared one-GPU tiers, recorded as scale ``gpu`` in the
#: results' provenance). The GPU tiers are below the papers' sizes, so a criterion judges them as a
#: reduced scale: every ``scale != "paper"`` branch applies and the entry lists the reductions.
EVALUATE_SCALES = (*SCALES, "gpu")


def load_results(paths: Sequence[str | Path]) -> dict[str, dict[str, Any]]:
    """Load results files (``.json`` or ``.npz``) keyed by file stem. A JSON results file sealed by
    ``ntkrepro.run`` (:func:`ntkrepro.io.seal`) whose content changed since is refused
    (:class:`~ntkrepro.io.TamperedFileError`, naming the file)."""
    out: dict[str, dict[str, Any]] = {}
    for p in map(Path, paths):
        if p.suffix == ".json":
            try:
                out[p.stem] = read_json(p)
            except (UnicodeDecodeError, ValueError) as err:
                raise LedgerFileError(f"results file {p} is not JSON text ({type(err).__name__}: "
                                      f"{str(err)[:120]}); delete it and rerun snakemake") from None
            if not isinstance(out[p.stem], dict):
                raise LedgerFileError(f"results file {p} holds a JSON {type(out[p.stem]).__name__}, not an object")
            if not check_seal(out[p.stem], p):
                raise TamperedFileError(f"{p}: carries no seal (provenance.{SEAL_KEY}); every results file "
                                        "ntkrepro.run writes is sealed, so this one was written or edited by hand. "
                                        "Delete it and rerun snakemake to recompute it")
        elif p.suffix == ".npz":
            try:
                arrays, prov = read_npz(p)
            except Exception as err:  # noqa: BLE001 (zip, pickle or format errors: name the file)
                raise LedgerFileError(f"results file {p} cannot be read as .npz ({type(err).__name__}: "
                                      f"{str(err)[:120]}); delete it and rerun snakemake") from None
            if not check_npz_seal(arrays, prov, p):
                raise TamperedFileError(f"{p}: carries no seal (provenance.{SEAL_KEY}); an .npz results file "
                                        "without one was not written by the current pipeline. Delete it and rerun "
                                        "snakemake")
            out[p.stem] = {**arrays, "provenance": prov}
        else:
            raise LedgerFileError(f"unsupported results file {p} (a results file is .json or .npz)")
    return out


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


#: The reason an entry gives when the real run and a control both pass (CLAIMS.md rule 8).
UNINFORMATIVE = "uninformative at this scale"


def apply_control_rule(verdict: Verdict, reason: str, controls: Sequence[Mapping[str, Any]]
                       ) -> tuple[Verdict, str, dict[str, Any] | None]:
    """The control rule (CLAIMS.md rule 7): ``reproduced`` needs every negative control of the claim
    to come out **not** ``reproduced`` under the same criterion (``not_reproduced`` or
    ``inconclusive``). When the real run and a control both pass, the claim holds in the nearest
    false alternative too, so the run cannot tell them apart: the verdict is ``inconclusive`` with
    the reason "holds in <control> too: uninformative at this scale" (rule 8), and the cap is
    returned as a power-line record (``needed`` = inf: no sample size of this design decides it).
    A claim without any control is capped the same way. ``not_reproduced`` and ``inconclusive``
    pass unchanged. Returns (verdict, reason, cap record or None)."""
    if verdict is not Verdict.REPRODUCED:
        return verdict, reason, None
    if not controls:
        why = "no negative control is registered, so nothing shows that the criterion could have failed"
        text = f"capped at inconclusive by the control rule: {why}"
    else:
        passing = [c for c in controls if c.get("verdict") == Verdict.REPRODUCED.value]
        if not passing:
            return verdict, reason, None
        why = "; ".join(f"holds in '{c['name']}' too ({c.get('headline', '')})" for c in passing)
        text = f"{why}: {UNINFORMATIVE}"
    cap = {"quantity": "negative control", "half_width": float("nan"), "needed_half_width": float("nan"),
           "size_name": "none", "size": float("nan"), "needed": float("inf"), "text": text}
    return Verdict.INCONCLUSIVE, f"{reason} [{text}; the criterion alone says reproduced]", cap


def control_text(entry: Mapping[str, Any]) -> str:
    """The claims table's "control" cell: each control's name and the criterion's verdict on it,
    ``none`` when the claim has no control."""
    controls = entry.get("controls") or []
    if not controls:
        return "none"
    return "; ".join(f"{c['name']}: {c['verdict']}" for c in controls)


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
    verdict, reason, cap = apply_control_rule(verdict, reason, controls)
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
    if results_sha256 is not None:
        entry["results_sha256"] = dict(sorted(results_sha256.items()))
    return entry


# --------------------------------------------------------------------------------------------
# Replicates (ntkrepro.replicates): the same criterion on independent seeds and data slices


#: Suffixes of the DAG's own intermediate files (shard results), which are not data archives.
_INTERMEDIATE_SUFFIXES = (".json", ".npz")


def archives_read(entry: Mapping[str, Any]) -> dict[str, str]:
    """``{path: sha256}`` of every data archive (CIFAR-10, IMDb, GloVe, ...) the entry's results
    files declare they read (their provenance ``data``), without the DAG's own intermediate files
    (shard results ``.json`` / ``.npz``). Empty for a claim that reads no data."""
    out: dict[str, str] = {}
    for prov in (entry.get("results_provenance") or {}).values():
        out.update((k, v) for k, v in ((prov or {}).get("data") or {}).items()
                   if not str(k).endswith(_INTERMEDIATE_SUFFIXES))
    return dict(sorted(out.items()))


def replicate_summary(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What a replicate contributes to the headline entry: its index, verdict, headline numbers,
    measured values and the archives (sha256) it read."""
    return {"replicate": int(entry.get("replicate", 0)), "verdict": entry["verdict"], "headline": _headline(entry),
            "measured": entry["measured"], "archives": archives_read(entry),
            "controls": [{k: c.get(k) for k in ("name", "verdict", "rejected", "headline")}
                         for c in entry.get("controls") or []]}


def attach_replicates(entry: dict[str, Any], replicates: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Add ``replicates`` (replicate 0 = ``entry`` itself, then ``replicates`` by index) and ``stable``
    to the headline entry. ``stable`` is true when every replicate reached the same verdict, false
    when any differ (the claim is *fragile*), ``None`` with replicate 0 alone. The headline verdict
    stays replicate 0's."""
    for r in replicates:
        if r["id"] != entry["id"]:
            raise ValueError(f"replicate entry of {r['id']} given for {entry['id']}")
        if int(r.get("replicate", 0)) < 1:
            raise ValueError(f"{entry['id']}: a replicate entry must have replicate >= 1, got {r.get('replicate')}")
    idx = [int(r["replicate"]) for r in replicates]
    if len(set(idx)) != len(idx):
        raise ValueError(f"{entry['id']}: replicate indices repeat: {idx}")
    reps = [replicate_summary(entry)] + [replicate_summary(r) for r in sorted(replicates, key=lambda r: r["replicate"])]
    entry["replicates"] = reps
    entry["stable"] = None if len(reps) == 1 else len({r["verdict"] for r in reps}) == 1
    return entry


def stability_text(entry: Mapping[str, Any]) -> str:
    """The claims table's "stable across replicates" cell: ``yes (K)``, ``FRAGILE`` with every
    replicate's verdict and headline numbers, or ``n/a (1 replicate)``."""
    reps = entry.get("replicates") or []
    stable = entry.get("stable")
    if stable is None or len(reps) < 2:
        return "n/a (1 replicate)"
    if stable:
        return f"yes ({len(reps)} replicates)"
    return "FRAGILE: " + " / ".join(f"r{r['replicate']} {r['verdict']} ({r['headline']})" for r in reps)


def entry_from_evaluation(evaluation: Mapping[str, Any], figures: Sequence[str] = (),
                          replicates: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The ledger entry: the claim's evaluation (:func:`make_evaluation`) plus its figure files and,
    for the headline entry (replicate 0), its replicates' entries (:func:`attach_replicates`). A
    replicate's entry (replicate >= 1) has no figures and says so in ``figures_note``."""
    entry = dict(evaluation)
    entry["figures"] = list(figures)
    replicate = int(entry.get("replicate", 0))
    if replicate == 0:
        attach_replicates(entry, replicates)
    elif replicates:
        raise ValueError(f"{entry['id']}: replicate entries belong to the headline entry (replicate 0)")
    else:
        entry["figures_note"] = f"replicate {replicate}: no figure drawn (replicates run the compute chain only)"
    return entry


def make_entry(claim_id: str, results: Results, *, scale: str, figures: Sequence[str] = (),
               config_hash: str | None = None, replicate: int = 0,
               replicates: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Apply the registered criterion and assemble the ledger entry (a JSON-able dict) in one step."""
    evaluation = make_evaluation(claim_id, results, scale=scale, config_hash=config_hash, replicate=replicate)
    return entry_from_evaluation(evaluation, figures, replicates)


# --------------------------------------------------------------------------------------------
# The decisive tier (issue 29; ntkrepro.decisive): the archived decisive run judged now, beside this run


def attach_decisive(entry: dict[str, Any], paths: Sequence[str | Path]) -> dict[str, Any]:
    """Copy the claim's decisive evaluation (:func:`ntkrepro.decisive.judge`, at most one file) into the
    entry's ``decisive`` field (:func:`ntkrepro.decisive.summary`) and record its sha256 (hash chain)."""
    if not paths:
        return entry
    if len(paths) != 1:
        raise LedgerFileError(f"{entry.get('id')}: one decisive evaluation expected, got {len(paths)}")
    from ntkrepro import decisive

    rec = read_ledger_file(paths[0], "decisive evaluation")
    if rec.get("id") != entry.get("id"):
        raise LedgerFileError(f"{paths[0]} is the decisive evaluation of {rec.get('id')!r}, not {entry.get('id')}")
    entry["decisive"] = decisive.summary(rec)
    entry["decisive_sha256"] = {str(paths[0]): content_sha256(paths[0])}
    return entry


def check_decisive(e: Mapping[str, Any]) -> list[str]:
    """``ledger check`` of an entry's decisive field (:func:`ntkrepro.decisive.check_entry`)."""
    if not e.get("decisive_sha256"):
        return [f"{e.get('id')}: a decisive field without decisive_sha256 (edited by hand?)"] if e.get("decisive") else []
    from ntkrepro import decisive

    return decisive.check_entry(e)


def decisive_text(entry: Mapping[str, Any]) -> str:
    """The claims table's "decisive run (archived: device, date, commit)" cell ("-": none archived)."""
    d = entry.get("decisive")
    return d.get("cell", "-") if isinstance(d, Mapping) else "-"


# --------------------------------------------------------------------------------------------
# Aggregate table

_TABLE_COLUMNS = ("id", "paper", "statement", "verdict", "control", "stable", "scale", "headline", "criterion",
                  "power", "substitutes", "decisive")

def _g(x: Any) -> str:
    """``x`` with 3 significant digits if it is a number, else as text (``None`` -> ``None``)."""
    return f"{x:.3g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _headline(entry: Mapping[str, Any], max_items: int = 2) -> str:
    parts = []
    for name, val in list((entry.get("measured") or {}).items())[:max_items]:
        if isinstance(val, Mapping) and "value" in val:
            parts.append(f"{name} = {_g(val['value'])} [{_g(val.get('ci_low'))}, {_g(val.get('ci_high'))}]")
        elif isinstance(val, Mapping) and "p_greater" in val and "p_less" in val:
            # a one-sided test (ntkrepro.stats.OneSidedTest.as_dict): its statistic and both p-values
            stat = val.get("mean_difference", val.get("statistic"))
            parts.append(f"{name} = {_g(stat)} (p> {_g(val['p_greater'])}, "
                         f"p< {_g(val['p_less'])}, {val.get('test', 'test')}, n {val.get('n')})")
        elif isinstance(val, float):
            parts.append(f"{name} = {val:.3g}")
        else:
            parts.append(f"{name} = {val}")
    return "; ".join(parts)


def table_rows(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One row per ledger entry, in report order (papers as in :data:`PAPERS`, then claim number)."""
    rows = []
    order = list(PAPERS)
    for e in sorted(entries, key=lambda e: (order.index(e["paper"]), int(e["id"][1:]))):
        n_am = len(e.get("amendments", []))
        crit = f"v{e.get('criterion_version', 1)}" + (f" (amended {n_am}x after results were seen)" if n_am else "")
        rows.append({"id": e["id"], "paper": e["paper"], "statement": e["statement"], "verdict": e["verdict"],
                     "control": control_text(e),
                     "stable": stability_text(e),
                     "scale": e["scale"],
                     "headline": _headline(e), "criterion": crit,
                     "power": " | ".join(p["text"] for p in e.get("power", [])),
                     "substitutes": "; ".join(e.get("substitutes", [])),
                     "decisive": decisive_text(e)})
    return rows


def _tex_escape(s: str, breaks: bool = True) -> str:
    """LaTeX-escape ``s``. With ``breaks``, a line may break after "_" and "/" (long identifiers
    and paths in narrow table cells); titles and PDF strings take ``breaks=False``."""
    repl = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
            "_": r"\_\allowbreak{}" if breaks else r"\_", "/": r"/\allowbreak{}" if breaks else "/",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
            "<": r"\textless{}", ">": r"\textgreater{}"}
    return "".join(repl.get(c, c) for c in s)


def _stable_short(cell: str) -> str:
    """The LaTeX table's short form of a "stable" cell (the fragile numbers are in the report text)."""
    if cell.startswith("FRAGILE"):
        # verdicts only ("r0 inconclusive / r1 reproduced"): the numbers are in the claim's subsection
        reps = cell.split(": ", 1)[1].split(" / r")
        return "fragile: " + " / r".join(r.split(" (", 1)[0] for r in reps)
    return cell


def _control_short(cell: str) -> str:
    """The LaTeX table's short form of a "control" cell: ``fails (N)`` when no control passes the
    criterion, otherwise how many pass ("holds in k of N": uninformative; details in the claim's
    subsection)."""
    if cell == "none":
        return "none"
    verdicts = [c.rsplit(": ", 1)[1] for c in cell.split("; ")]
    holds = sum(v == Verdict.REPRODUCED.value for v in verdicts)
    return (f"fails ({len(verdicts)})" if not holds else f"HOLDS in {holds} of {len(verdicts)}")


def _decisive_short(cell: str) -> str:
    """The LaTeX table's short form of a "decisive" cell (:func:`ntkrepro.verdicts.decisive_short`)."""
    from ntkrepro.verdicts import decisive_short

    return decisive_short(cell)


def details_path(md_path: Path) -> Path:
    """The per-claim detail file written beside the Markdown claims table."""
    return md_path.with_name(md_path.stem + "_details.md")


def _details(rows: Sequence[Mapping[str, str]]) -> str:
    """The long texts of the claims table, one section per claim: statement, verdict, headline,
    controls, replicates, criterion version, power lines and substitutes."""
    out = ["# Claims: the details behind claims_table.md", ""]
    for r in rows:
        out += [f"## {r['id']} ({r['paper']}): {r['verdict']}", "", r["statement"], "",
                f"- headline: {r['headline'] or '-'}", f"- controls: {r['control']}", f"- replicates: {r['stable']}",
                f"- decisive tier: {r['decisive']}", f"- criterion: {r['criterion']}", f"- scale: {r['scale']}"]
        if r["power"]:
            out += ["- power (what would decide it):"] + [f"  - {t.strip()}" for t in r["power"].split(" | ")]
        if r["substitutes"]:
            out += [f"- substitutes: {r['substitutes']}"]
        out.append("")
    return "\n".join(out)


def write_table(entries: Sequence[Mapping[str, Any]], csv_path: Path, md_path: Path, tex_path: Path) -> None:
    """Write the aggregate claims table as CSV (every column), Markdown (one short line per claim,
    :mod:`ntkrepro.verdicts`; the long texts in :func:`details_path`) and a LaTeX ``longtable`` body
    (the header is in the report template)."""
    import csv
    import io

    rows = table_rows(entries)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=_TABLE_COLUMNS)
    w.writeheader()
    w.writerows(rows)
    with atomic_path(csv_path) as tmp:
        tmp.write_text(buf.getvalue())
    from ntkrepro import verdicts

    # one short line per claim (issue 31); the long texts go to the detail file and the report
    with atomic_path(md_path) as tmp:
        tmp.write_text(verdicts.render(verdicts.summarise(entries)))
    with atomic_path(details_path(md_path)) as tmp:
        tmp.write_text(_details(rows))
    colour = {"reproduced": "green!15", "not_reproduced": "red!15", "inconclusive": "yellow!20"}
    tex = [rf"\rowcolor{{{colour.get(r['verdict'], 'white')}}} {_tex_escape(r['id'])} & "
           rf"{_tex_escape(r['statement'])} & "
           rf"{_tex_escape(r['verdict'].replace('_', ' '))} & {_tex_escape(_decisive_short(r['decisive']))} & "
           rf"{_tex_escape(_control_short(r['control']))} & "
           rf"{_tex_escape(_stable_short(r['stable']))} & "
           rf"{_tex_escape(r['scale'])} & "
           rf"{_tex_escape(r['headline'])} & {_tex_escape(r['criterion'].split(' ')[0] + ('*' if 'amended' in r['criterion'] else ''))} \\"
           for r in rows]
    with atomic_path(tex_path) as tmp:
        tmp.write_text("\n".join(tex) + "\n")


# --------------------------------------------------------------------------------------------
# Hash chain: results files -> evaluation -> ledger entry (issue 22, item 4)


class LedgerFileError(ValueError):
    """A ledger, evaluation or results file that is missing, unreadable or not what it should be."""


class ClaimLookupError(ValueError):
    """A claim id that no paper registers."""


def read_ledger_file(path: str | Path, what: str = "ledger file") -> dict[str, Any]:
    """Read a JSON file of the ledger, raising :class:`LedgerFileError` naming the file and the fix
    (instead of a raw traceback) if it is missing, truncated, not JSON or not an object."""
    p = Path(path)
    try:
        data = read_json(p)
    except FileNotFoundError:
        raise LedgerFileError(f"{what} {p} does not exist (run snakemake to make it)") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise LedgerFileError(f"{what} {p} cannot be read as JSON ({err}); it is truncated or was edited: "
                              "delete it and rerun snakemake") from None
    if not isinstance(data, dict):
        raise LedgerFileError(f"{what} {p} holds a JSON {type(data).__name__}, not an object: delete it and "
                              "rerun snakemake")
    return data


def results_root(evaluation_path: str | Path) -> Path:
    """The results folder of an evaluation at ``<results>/claims/evaluations/<ID>.json``."""
    return Path(evaluation_path).parent.parent.parent


def file_hashes(paths: Sequence[str | Path], root: str | Path) -> dict[str, str]:
    """``{path relative to root: sha256}`` of ``paths`` (``root``: the results folder), each the hash of
    the file's canonical content (:func:`ntkrepro.io.content_sha256`: whitespace and key order of a
    JSON file do not count, so reformatting a file is no false alarm, an edited value is found)."""
    return {os.path.relpath(Path(p), Path(root)): content_sha256(p) for p in paths}


_CHAIN_ADDED = {"figures", "figures_note", "replicates", "stable", "evaluation_sha256", "replicate_entries_sha256",
                "decisive", "decisive_sha256"}


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def check_chain(claims_dir: Path, e: Mapping[str, Any]) -> list[str]:
    """The first break of the entry's hash chain, by file (``[]`` = intact):

    1. ``<claims>/evaluations/<ID>.json`` exists and has the sha256 the entry recorded
       (``evaluation_sha256``), and every field of the evaluation equals the entry's (an entry whose
       verdict or measured values were edited differs from its evaluation);
    2. every results file the evaluation recorded (``results_sha256``, relative to the results
       folder) exists with that sha256, and a results JSON sealed by ``ntkrepro.run`` is intact;
    3. each replicate entry the headline entry read (``replicate_entries_sha256``) has that sha256
       and an intact chain of its own.
    """
    cid = e.get("id", "?")
    root = claims_dir.parent
    want = e.get("evaluation_sha256")
    if not want:
        return [f"{cid}: the entry records no evaluation_sha256 (written before the hash chain, or by hand): "
                "delete it and rerun snakemake"]
    ev_path = claims_dir / "evaluations" / f"{cid}.json"
    if not ev_path.is_file():
        return [f"{cid}: its evaluation {ev_path} is missing"]
    got = content_sha256(ev_path)
    if got != want:
        return [f"{cid}: {ev_path} has sha256 {got[:12]}..., the entry recorded {want[:12]}...: the evaluation "
                "changed after the entry was written (edited by hand?); delete both and rerun snakemake"]
    try:
        ev = read_ledger_file(ev_path, "evaluation")
    except LedgerFileError as err:
        return [f"{cid}: {err}"]
    for k, v in ev.items():
        if k not in _CHAIN_ADDED and not _same(e.get(k, "<missing>"), v):
            return [f"{cid}: field {k!r} of {claims_dir / (cid + '.json')} differs from its evaluation {ev_path} "
                    "(the entry was edited by hand?); delete the entry and rerun snakemake"]
    hashes = ev.get("results_sha256")
    if not isinstance(hashes, Mapping) or not hashes:
        return [f"{cid}: {ev_path} records no results_sha256 (written before the hash chain): delete it and rerun"]
    for rel, sha in hashes.items():
        p = root / rel
        if not p.is_file():
            return [f"{cid}: results file {p} (recorded by {ev_path}) is missing"]
        got = content_sha256(p)
        if got != sha:
            return [f"{cid}: results file {p} has sha256 {got[:12]}..., its evaluation recorded {sha[:12]}...: "
                    "it changed after the verdict was computed; rerun snakemake"]
        try:
            load_results([p])  # sealed and intact (an unsealed results file is refused too)
        except (TamperedFileError, LedgerFileError) as err:
            return [f"{cid}: {err}"]
    # the replicate summaries of a headline entry: replicate 0 = the entry itself, the others = the
    # replicate entries it read (verdict, headline, measured, controls); an edited summary is found
    summaries = {r.get("replicate"): r for r in (e.get("replicates") or []) if isinstance(r, Mapping)}
    if summaries and int(e.get("replicate", 0)) == 0:
        if not _same(summaries.get(0), replicate_summary(e)):
            return [f"{cid}: replicates[0] of {claims_dir / (cid + '.json')} differs from the entry's own verdict and "
                    "numbers (edited by hand?); delete the entry and rerun snakemake"]
    for rel, sha in (e.get("replicate_entries_sha256") or {}).items():
        p = root / rel
        if not p.is_file():
            return [f"{cid}: replicate entry {p} is missing"]
        if content_sha256(p) != sha:
            return [f"{cid}: replicate entry {p} changed after the headline entry was written; rerun snakemake"]
        try:
            rep = read_ledger_file(p, "replicate entry")
            problems = check_chain(p.parent, rep)
        except LedgerFileError as err:
            problems = [str(err)]
        if problems:
            return [f"{cid} (replicate {rel}): {problems[0]}"]
        if not _same(summaries.get(rep.get("replicate")), replicate_summary(rep)):
            return [f"{cid}: replicates[{rep.get('replicate')}] of {claims_dir / (cid + '.json')} differs from the "
                    f"replicate entry {p} (edited by hand?); delete the entry and rerun snakemake"]
    n_read = len(e.get("replicate_entries_sha256") or {})
    if summaries and int(e.get("replicate", 0)) == 0 and len(summaries) != 1 + n_read:
        return [f"{cid}: {len(summaries)} replicate summaries, but the entry read {n_read} replicate entries "
                "(edited by hand?); delete the entry and rerun snakemake"]
    return check_decisive(e)


def check_replicates(e: Mapping[str, Any], n_replicates: int | None = None) -> list[str]:
    """Problems with an entry's ``replicates`` / ``stable`` fields (:func:`attach_replicates`):
    replicates 0..K-1 (K = ``n_replicates`` when given, e.g. from the claims index), replicate 0 =
    the headline verdict, ``stable`` equal to the verdicts' agreement (None with one replicate),
    each replicate's archives recorded."""
    cid = e.get("id", "?")
    reps = e.get("replicates")
    if not isinstance(reps, list) or not reps:
        return [f"{cid}: no replicates field"]
    problems = []
    if n_replicates is None:
        n_replicates = len(reps)
    if [r.get("replicate") for r in reps] != list(range(n_replicates)):
        problems.append(f"{cid}: replicates {[r.get('replicate') for r in reps]}, expected 0..{n_replicates - 1}")
    if reps[0].get("verdict") != e.get("verdict"):
        problems.append(f"{cid}: replicate 0's verdict {reps[0].get('verdict')!r} is not the headline verdict")
    verdicts = {r.get("verdict") for r in reps}
    if verdicts - {v.value for v in Verdict}:
        problems.append(f"{cid}: bad replicate verdicts {sorted(map(str, verdicts))}")
    want = None if len(reps) == 1 else len(verdicts) == 1
    if e.get("stable", "missing") != want:
        problems.append(f"{cid}: stable is {e.get('stable', 'missing')!r}, the replicates' verdicts say {want!r}")
    data_read = [bool(r.get("archives")) for r in reps]
    if any(data_read) and not all(data_read):
        problems.append(f"{cid}: some replicates do not record the archives they read")
    return problems


def check(claims_dir: Path, expected: Sequence[str], replicates: Mapping[str, int] | None = None,
          chain: bool = False) -> list[str]:
    """Problems with the ledger: missing or unreadable entries, missing keys, bad verdicts, inconsistent
    replicates, (with ``replicates``: claim -> number of replicates, as in the claims index) a number of
    replicates other than the DAG's, and (``chain``; the CLI's ``check`` sets it) the first break of
    each entry's hash chain (:func:`check_chain`). Empty list = fine."""
    problems = []
    required = {"id", "paper", "statement", "criterion", "criterion_version", "amendments", "measured", "verdict",
                "scale", "provenance", "replicates", "stable"}
    for cid in expected:
        p = claims_dir / f"{cid}.json"
        if not p.exists():
            problems.append(f"{cid}: no ledger entry at {p}")
            continue
        try:
            e = read_ledger_file(p, "ledger entry")
        except LedgerFileError as err:
            problems.append(f"{cid}: {err}")
            continue
        if e.get("id") != cid:
            problems.append(f"{cid}: {p} is the entry of {e.get('id')!r}")
            continue
        missing = required - e.keys()
        if missing:
            problems.append(f"{cid}: missing keys {sorted(missing)}")
        if e.get("verdict") not in {v.value for v in Verdict}:
            problems.append(f"{cid}: bad verdict {e.get('verdict')!r}")
        if not e.get("measured"):
            problems.append(f"{cid}: nothing measured")
        if e.get("verdict") == Verdict.INCONCLUSIVE.value and not e.get("power"):
            problems.append(f"{cid}: inconclusive without a power line")
        problems += check_controls(e)
        if "replicates" in e:
            problems += check_replicates(e, None if replicates is None else int(replicates.get(cid, 1)))
        if chain:
            problems += check_chain(claims_dir, e)
    return problems


def check_controls(e: Mapping[str, Any]) -> list[str]:
    """Problems with an entry's negative controls: at least one, each with its verdict and
    ``rejected`` consistent with it, and the control rule kept (``reproduced`` only when no
    control is ``reproduced``; the same for each replicate that records its controls)."""
    cid = e.get("id", "?")
    controls = e.get("controls")
    if not isinstance(controls, list) or not controls:
        return [f"{cid}: no negative control"]
    problems = []
    for c in controls:
        if c.get("verdict") not in {v.value for v in Verdict}:
            problems.append(f"{cid}: control {c.get('name')!r} has bad verdict {c.get('verdict')!r}")
        elif bool(c.get("rejected")) != (c["verdict"] == Verdict.NOT_REPRODUCED.value):
            problems.append(f"{cid}: control {c.get('name')!r}: rejected={c.get('rejected')!r} but verdict {c['verdict']}")
    if e.get("verdict") == Verdict.REPRODUCED.value and any(c.get("verdict") == Verdict.REPRODUCED.value
                                                             for c in controls):
        problems.append(f"{cid}: reproduced although a control passes the criterion too "
                        f"({control_text(e)})")
    for r in e.get("replicates") or []:
        rc = r.get("controls")
        if rc is not None and r.get("verdict") == Verdict.REPRODUCED.value and any(
                c.get("verdict") == Verdict.REPRODUCED.value for c in rc):
            problems.append(f"{cid}: replicate {r.get('replicate')} reproduced although a control passes too")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``evaluate`` (one claim's criterion), ``entry`` (its ledger entry), ``table`` (aggregate), ``check`` (CI)."""
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.ledger", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("evaluate", help="apply one claim's criterion and write its evaluation")
    v.add_argument("claim")
    v.add_argument("--results", nargs="+", required=True)
    v.add_argument("--scale", required=True, choices=EVALUATE_SCALES,
                   help="smoke/default/paper (the config's scale) or gpu (results of ntkrepro.hron2020.gpu_run)")
    v.add_argument("--config-hash", default=None)
    v.add_argument("--out", required=True)
    v.add_argument("--replicate", type=int, default=0, help="replicate index of this run (0: the headline run)")
    e = sub.add_parser("entry", help="write a claim's ledger entry: its evaluation plus its figures")
    e.add_argument("claim")
    e.add_argument("--evaluation", required=True, help="the claim's evaluation (from `evaluate`)")
    e.add_argument("--figures", nargs="*", default=[])
    e.add_argument("--out", required=True)
    e.add_argument("--replicate-entries", nargs="*", default=[],
                   help="ledger entries of replicates 1.. of this claim (headline entry only)")
    e.add_argument("--decisive", nargs="*", default=[],
                   help="the claim's decisive evaluation (archived decisive tier judged now; ntkrepro.decisive)")
    t = sub.add_parser("table", help="aggregate ledger entries into the claims table")
    t.add_argument("entries", nargs="+")
    t.add_argument("--csv", required=True)
    t.add_argument("--md", required=True)
    t.add_argument("--tex", required=True)
    t.add_argument("--index", required=True, help="where to write the JSON list of the DAG's claims")
    t.add_argument("--expected", nargs="+", required=True, help="claim ids registered in the DAG")
    t.add_argument("--replicates", type=int, default=1, help="replicates per replicated claim (config replicates)")
    t.add_argument("--replicated", nargs="*", default=[], help="claim ids run with replicates")
    c = sub.add_parser("check", help="verify every claim in the DAG has a valid ledger entry")
    c.add_argument("--claims-dir", default="results/claims")
    c.add_argument("--pdf", nargs="*", default=[])
    args = ap.parse_args(argv)

    try:
        return _run(ap, args)
    except (LedgerFileError, TamperedFileError) as err:
        print(f"ledger {args.cmd}: {err}", file=sys.stderr)
        return 1
    except ClaimLookupError as err:
        print(f"ledger {args.cmd}: {err}", file=sys.stderr)
        return 2


def _run(ap: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.cmd == "evaluate":
        try:
            get_claim(args.claim)
        except KeyError as err:
            raise ClaimLookupError(f"unknown claim {args.claim!r} ({err.args[0] if err.args else err}); registered claims: "
                                   f"{', '.join(registered_claims())}") from None
        missing = [p for p in args.results if not Path(p).is_file()]
        if missing:
            raise LedgerFileError(f"results file(s) {', '.join(missing)} do not exist (run snakemake to make them)")
        results = load_results(args.results)
        for stem, r in results.items():
            ran = (r.get("provenance") or {}).get("scale") if isinstance(r.get("provenance"), Mapping) else None
            if ran is not None and ran != args.scale:
                raise LedgerFileError(f"results file of {stem} was computed at scale {ran!r}, not --scale "
                                      f"{args.scale}: judge it at --scale {ran}")
        try:
            evaluation = make_evaluation(args.claim, results, scale=args.scale,
                                         config_hash=args.config_hash, replicate=args.replicate,
                                         results_sha256=file_hashes(args.results, results_root(args.out)))
        except (KeyError, IndexError, TypeError) as err:
            raise LedgerFileError(f"results {', '.join(map(str, args.results))} do not hold what claim {args.claim}'s "
                                  f"criterion reads ({type(err).__name__}: {err}); are they the results of "
                                  f"{args.claim}? Its rule's results are listed in the claim map") from None
        write_json(args.out, evaluation)
        print(f"{args.claim} (replicate {args.replicate}): {evaluation['verdict']} -- {evaluation['reason']}")
    elif args.cmd == "entry":
        evaluation = read_ledger_file(args.evaluation, "evaluation")
        if evaluation.get("id") != args.claim:
            print(f"{args.evaluation} is the evaluation of {evaluation.get('id')!r}, not {args.claim}", file=sys.stderr)
            return 1
        if int(evaluation.get("replicate", 0)) != 0 and args.replicate_entries:
            ap.error("--replicate-entries belongs to the headline entry (replicate 0)")
        entry = entry_from_evaluation(evaluation, args.figures,
                                      [read_ledger_file(p, "replicate entry") for p in args.replicate_entries])
        # the hash chain (check_chain): the evaluation this entry copies, and the replicate entries it read
        root = Path(args.out).parent.parent
        entry["evaluation_sha256"] = content_sha256(args.evaluation)
        if args.replicate_entries:
            entry["replicate_entries_sha256"] = file_hashes(args.replicate_entries, root)
        attach_decisive(entry, args.decisive)
        write_json(args.out, entry)
        print(f"{args.claim} (replicate {entry['replicate']}): {entry['verdict']}"
              + ("" if entry.get("stable") is None else f" [stable across replicates: {entry['stable']}]"))
    elif args.cmd == "table":
        entries = [read_ledger_file(p, "ledger entry") for p in args.entries]
        seen: dict[str, str] = {}
        for p, e in zip(args.entries, entries):
            if not isinstance(e.get("id"), str):
                raise LedgerFileError(f"ledger entry {p} has no claim id: delete it and rerun snakemake")
            if e["id"] in seen:
                raise LedgerFileError(f"claim {e['id']} is given twice ({seen[e['id']]} and {p}); "
                                      "give each ledger entry once")
            seen[e["id"]] = p
        # the table (and the report built from it) holds only entries that pass `ledger check`: an
        # entry edited by hand, or resting on an edited evaluation or results file, stops the build here
        problems = [q for p, e in zip(args.entries, entries)
                    for q in check_controls(e) + check_replicates(e) + check_chain(Path(p).parent, e)]
        if problems:
            for q in problems:
                print("LEDGER:", q, file=sys.stderr)
            raise LedgerFileError(f"{len(problems)} problem(s) in the ledger entries (above, by file) failed the "
                                  "ledger check; no claims table is written from unchecked entries")
        write_table(entries, Path(args.csv), Path(args.md), Path(args.tex))
        got = {e["id"] for e in entries}
        if set(args.expected) != got:
            print(f"ledger entries {sorted(got)} differ from the DAG's claims {sorted(args.expected)}",
                  file=sys.stderr)
            return 1
        write_json(args.index, {"claims": sorted(args.expected),
                                "replicates": {c: (args.replicates if c in args.replicated else 1)
                                               for c in sorted(args.expected)}})
    elif args.cmd == "check":
        claims_dir = Path(args.claims_dir)
        index = claims_dir / "index.json"
        if not index.exists():
            print(f"no claims index at {index}", file=sys.stderr)
            return 1
        idx = read_ledger_file(index, "claims index")
        expected = idx.get("claims")
        if not isinstance(expected, list) or not all(isinstance(c, str) for c in expected):
            raise LedgerFileError(f"claims index {index} has no list of claim ids: rerun snakemake")
        if not expected:
            raise LedgerFileError(f"claims index {index} lists no claims (\"claims\": []): the DAG registers claims, "
                                  "so the index was edited or written by hand; delete it and rerun snakemake")
        problems = check(claims_dir, expected, idx.get("replicates"), chain=True)
        problems += [f"missing report {p}" for p in args.pdf if not Path(p).is_file()]
        for p in problems:
            print("LEDGER:", p, file=sys.stderr)
        if problems:
            return 1
        print(f"ledger ok: {len(expected)} claims ({', '.join(expected)})")
    return 0


if __name__ == "__main__":
    # Run the CLI of the imported module (not of __main__), so claims register into one registry.
    from ntkrepro.ledger import main as _main

    sys.exit(_main())
