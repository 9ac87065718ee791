"""What a claim is: its pre-registered specification and what its criterion returns.

The types every other module of :mod:`ntkrepro.ledger` speaks in (:class:`Verdict`, :class:`Evaluation`,
:data:`Results`, :class:`ClaimSpec` with its :class:`Amendment`, :class:`Correction` and
:class:`ControlSpec` entries) and the reading of each paper's pre-registration file
``<paper>/claims.toml`` (:data:`PREREGISTRATION_FILE`, :func:`preregistration`, :func:`load_claim_spec`),
every field checked.
"""

from __future__ import annotations

import datetime
import enum
import functools
import importlib.resources
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ntkrepro.papers import PAPERS
from ntkrepro.stats import Interval, PowerLine, Status


class Verdict(str, enum.Enum):
    """Outcome of a pre-registered criterion."""

    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not_reproduced"
    INCONCLUSIVE = "inconclusive"


#: The ``verdict`` field of an entry whose proposition the seed does not state (CLAIMS.md rule 9): it is
#: measured and reported, with its figure, but gets **no verdict** and is not counted among the claims.
#: Deliberately not a :class:`Verdict` member: no rule, count or control cap can mistake it for one.
NOT_A_CLAIM = "not_a_claim"
#: How tables, the README and the report label such an entry.
NOT_A_CLAIM_LABEL = "not a claim of the seed"


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
    #: False for a proposition the seed does not state (CLAIMS.md rule 9): ``not_a_claim`` says why;
    #: its entry is reported without a verdict (:data:`NOT_A_CLAIM`) and not counted.
    seed_claim: bool = True
    not_a_claim: str = ""
    #: A short name of the claim (at most :data:`MAX_SHORT` characters, one line): the report's one-page
    #: summary table and the README's findings (issue 40 item 5); not part of the criterion.
    short: str = ""

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
        if self.seed_claim == bool(self.not_a_claim.strip()):
            raise ValueError(f"claim {self.id}: seed_claim = false needs a not_a_claim reason (and only it has one)")
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
#: append-only: :mod:`ntkrepro.amendment_log` holds a checksum per entry and a test compares them. A
#: proposition the seed does not state carries ``seed_claim = false`` and ``not_a_claim`` (why; CLAIMS.md
#: rule 9): its entry is measured and reported without a verdict.
PREREGISTRATION_FILE = "claims.toml"
#: The longest short name of a claim (``short`` in claims.toml, :attr:`ClaimSpec.short`).
MAX_SHORT = 50
_CLAIM_KEYS = {"statement", "criterion", "version", "quote", "amendments", "controls", "corrections",
               "seed_claim", "not_a_claim", "short"}
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
    short = table.get("short", "")
    if not isinstance(short, str) or "\n" in short or len(short) > MAX_SHORT:
        raise ValueError(f"{where}: short must be one line of at most {MAX_SHORT} characters, got {short!r}")
    seed_claim, not_a_claim = table.get("seed_claim", True), table.get("not_a_claim", "")
    if not isinstance(seed_claim, bool) or not isinstance(not_a_claim, str):
        raise ValueError(f"{where}: seed_claim must be true/false and not_a_claim a string")
    if seed_claim == bool(not_a_claim.strip()):
        raise ValueError(f"{where}: seed_claim = false needs a non-empty not_a_claim (why the seed does not state "
                         "it; CLAIMS.md rule 9), and a seed claim has none")
    return ClaimSpec(claim_id, paper, _text(where, table, "statement"), _text(where, table, "criterion"),
                     version=version, quote=quote, seed_claim=seed_claim, not_a_claim=not_a_claim, short=short,
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
