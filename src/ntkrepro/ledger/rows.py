"""A claim's record as every table shows it: one row model and every cell formatter (issue 40 item 1).

:class:`ClaimRow` is the row of one ledger entry; each of its cells is formatted here, once, and
rendered by :mod:`ntkrepro.ledger.tables` to CSV (:meth:`ClaimRow.csv`: every column, long texts),
Markdown (:meth:`ClaimRow.markdown`: one short line per claim, the README's and
``claims_table.md``'s table, :data:`COLUMNS`) and LaTeX (:meth:`ClaimRow.latex`: the report's
``longtable`` cells). The decisive tier's part of the record is here too: the entry's ``decisive``
field (:func:`summary` of a :func:`ntkrepro.decisive.judge` record), its table cell
(:func:`table_cell`, shortened by :func:`decisive_short`) and the row of the tier table
(:func:`tier_row`). :mod:`ntkrepro.decisive` and :mod:`ntkrepro.verdicts` are clients above the
ledger: they call these, the ledger never calls them.

The long and the short forms word some facts differently (``x = 0.5 [0.4, 0.6]`` in the CSV and
the report, ``x 0.5 [0.4, 0.6]`` in the README): both are kept as they were, in this one place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ntkrepro.ledger.specs import NOT_A_CLAIM, NOT_A_CLAIM_LABEL, Verdict, preregistration
from ntkrepro.papers import PAPERS

#: The CSV claims table's columns (:meth:`ClaimRow.csv`).
TABLE_COLUMNS = ("id", "paper", "statement", "verdict", "control", "stable", "scale", "headline", "criterion",
                 "power", "substitutes", "decisive")
#: The Markdown verdict table's columns (:meth:`ClaimRow.markdown`; the README and docs/verdicts.json).
COLUMNS = ("id", "default (this run)", "decisive run (archived: device, date, commit)", "headline (95 % interval)",
           "control", "stable", "scale")
#: The decisive tier table's columns (:func:`tier_row`).
TIER_COLUMNS = ("claim", "decisive tier (config/decisive.yaml)", "archived cells", "verdict (current criteria)",
                "headline (95 % interval)", "device", "computed (UTC dates)", "time (sum over cells)", "commits")
#: The longest headline cell of the Markdown table; longer ones are cut at a word boundary (the full
#: numbers are in the report).
MAX_HEADLINE = 70
#: The Markdown verdict cell of a proposition the seed does not state (CLAIMS.md rule 9: reported, no
#: verdict, not counted); :data:`~ntkrepro.ledger.specs.NOT_A_CLAIM` in the entry.
NOT_A_CLAIM_CELL = "no verdict: not a claim of the seed"

#: The decisive tier's name in the ledger entry, table and report.
TIER = "decisive"
#: States of an archived claim (the table's "decisive run" column leads with them).
COMPLETE, INCOMPLETE, STALE, EMPTY = "complete", "INCOMPLETE", "STALE", "none"


# ---- numbers --------------------------------------------------------------------------------------

def _g(x: Any) -> str:
    """``x`` with 3 significant digits if it is a number, else as text (``None`` -> ``None``)."""
    return f"{x:.3g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _short(text: str, limit: int = MAX_HEADLINE) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


# ---- the long cells (CSV, details file, report) -----------------------------------------------------

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


def control_text(entry: Mapping[str, Any]) -> str:
    """The claims table's "control" cell: each control's name and the criterion's verdict on it,
    ``none`` when the claim has no control."""
    controls = entry.get("controls") or []
    if not controls:
        return "none"
    return "; ".join(f"{c['name']}: {'reported' if c['verdict'] == NOT_A_CLAIM else c['verdict']}" for c in controls)


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


def decisive_text(entry: Mapping[str, Any]) -> str:
    """The claims table's "decisive run (archived: device, date, commit)" cell ("-": none archived)."""
    d = entry.get("decisive")
    return d.get("cell", "-") if isinstance(d, Mapping) else "-"


def criterion_text(entry: Mapping[str, Any]) -> str:
    """The claims table's "criterion" cell: its version, and how often it was amended after results were seen."""
    n_am = len(entry.get("amendments", []))
    return f"v{entry.get('criterion_version', 1)}" + (f" (amended {n_am}x after results were seen)" if n_am else "")


# ---- the short cells (the Markdown verdict table: README, claims_table.md) ----------------------------

def headline(entry: Mapping[str, Any]) -> str:
    """The first measured interval of the entry, ``name value [low, high]`` (else its first measured value)."""
    measured = entry.get("measured") or {}
    for name, val in measured.items():
        if isinstance(val, Mapping) and "value" in val:
            return f"{name} {_g(val['value'])} [{_g(val.get('ci_low'))}, {_g(val.get('ci_high'))}]"
    for name, val in measured.items():
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            return f"{name} {_g(val)}"
    return ""


def verdict_cell(entry: Mapping[str, Any]) -> str:
    """The Markdown table's "default (this run)" cell: the verdict, "uninformative" when a control passes too."""
    v = str(entry.get("verdict", "?"))
    if v == NOT_A_CLAIM:
        return NOT_A_CLAIM_CELL
    if v == "inconclusive" and entry.get("criterion_verdict") == "reproduced" and (any(
            c.get("verdict") == "reproduced" for c in entry.get("controls") or []) or any(
            p.get("quantity") == "negative control" and "uninformative" in str(p.get("text"))
            for p in entry.get("power") or [] if isinstance(p, Mapping))):
        return "inconclusive (uninformative: holds in a control too)"
    return v.replace("_", " ")


def controls_cell(entry: Mapping[str, Any]) -> str:
    """The Markdown table's "control" cell (verdicts with spaces; ``none`` without a control)."""
    controls = entry.get("controls") or []
    if not controls:
        return "none"
    return "; ".join(f"{c.get('name')}: "
                     + ("reported" if c.get("verdict") == NOT_A_CLAIM else str(c.get('verdict', '?')).replace('_', ' '))
                     for c in controls)


def replicates_cell(entry: Mapping[str, Any]) -> str:
    """The Markdown table's "stable" cell: ``run once``, ``stable (K)`` or ``FRAGILE`` with the verdicts."""
    reps = entry.get("replicates") or []
    if len(reps) < 2:
        return "run once"
    if entry.get("stable"):
        return f"stable ({len(reps)})"
    return "FRAGILE: " + " / ".join(f"r{r.get('replicate')} {str(r.get('verdict')).replace('_', ' ')}" for r in reps)


def decisive_short(cell: str) -> str:
    """The short form of a decisive-tier cell (:func:`table_cell`): the state or verdict, the settings
    when they are not the paper's (e.g. A4's 256 seeds at the default settings), the date and the
    commit (device and numbers are in the report under the claim)."""
    if not cell or cell == "-":
        return "-"
    head = cell.split(" (", 1)[0]
    labels = []
    plan = re.search(r" of plan (\S+)", cell)  # a later plan of the claim (decisive_cells.entry_plan) says which
    if plan:
        labels.append(f"plan {plan.group(1)}")
    at = re.search(r" at the (\w+) settings", cell)  # a decisive run not at the paper's settings says so
    if at:
        labels.append(f"{at.group(1)} settings")
    if labels:
        head += f" [{', '.join(labels)}]"
    m = re.search(r"archived: (.*?), (\d{4}-\d\d-\d\d|\?), ([0-9a-f,]+( dirty)?)\)", cell)
    # commits joined with ", " so that a narrow column (the report's) can break between them
    return head if not m else f"{head} ({device_short(m.group(1))}, {m.group(2)}, {m.group(3).replace(',', ', ')})"


def device_short(devices: str) -> str:
    """``"cpu:cpu (x86_64, Linux)"`` -> ``"CPU"``, ``"gpu:NVIDIA H200 (x86_64, Linux)"`` -> ``"NVIDIA H200"``:
    the kind of each device of a decisive run (``; ``-separated), without the host description."""
    out = []
    for dev in devices.split("; "):
        name = dev.split(" (", 1)[0].strip()
        platform, _, kind = name.partition(":")
        short = "CPU" if platform.lower() == "cpu" else (kind or platform or "?")
        if short not in out:
            out.append(short)
    return "; ".join(out) or "?"


def decisive_cell(entry: Mapping[str, Any]) -> str:
    """The Markdown table's "decisive run" cell: :func:`decisive_short` of the entry's tier cell (an
    entry written before the cell was recorded: its verdict, device, date and commit)."""
    dec = entry.get("decisive")
    if not isinstance(dec, Mapping):
        return "-"
    if dec.get("cell"):
        return decisive_short(str(dec["cell"]))
    if dec.get("verdict"):
        where = ", ".join(str(dec[k]) for k in ("device", "date", "commit") if dec.get(k))
        return f"{str(dec['verdict']).replace('_', ' ')}" + (f" ({where})" if where else "") + (
            " STALE" if dec.get("stale") else "")
    return "-"


# ---- the LaTeX cells (the report's claims table) -----------------------------------------------------

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
    if all(v == "reported" for v in verdicts):  # a proposition the seed does not state: nothing judged
        return f"reported ({len(verdicts)})"
    holds = sum(v == Verdict.REPRODUCED.value for v in verdicts)
    return (f"fails ({len(verdicts)})" if not holds else f"HOLDS in {holds} of {len(verdicts)}")


def _decisive_short(cell: str) -> str:
    """The LaTeX table's short form of a "decisive" cell (:func:`decisive_short`)."""
    return decisive_short(cell)


#: The LaTeX table's row colour per verdict.
_TEX_COLOUR = {"reproduced": "green!15", "not_reproduced": "red!15", "inconclusive": "yellow!20"}


# ---- the row model ------------------------------------------------------------------------------------

def report_order(entries: Sequence[Mapping[str, Any]], *, strict: bool = True) -> list[Mapping[str, Any]]:
    """``entries`` in report order: papers as in :data:`~ntkrepro.papers.PAPERS`, then claim number.
    ``strict``: an entry of an unregistered paper raises (the claims table); else it goes last (the
    summary of whatever entries a folder holds)."""
    order = list(PAPERS)
    if strict:
        return sorted(entries, key=lambda e: (order.index(e["paper"]), int(e["id"][1:])))
    return sorted(entries, key=lambda e: (order.index(e["paper"]) if e.get("paper") in order else 99,
                                          int(str(e["id"])[1:])))


class ClaimRow:
    """One claim's row: the ledger entry and each of its cells, in the three renderings."""

    def __init__(self, entry: Mapping[str, Any]) -> None:
        self.entry = entry

    def csv(self) -> dict[str, str]:
        """Every column (:data:`TABLE_COLUMNS`), long texts: the CSV, the details file, the LaTeX source."""
        e = self.entry
        verdict = f"no verdict ({NOT_A_CLAIM_LABEL})" if e["verdict"] == NOT_A_CLAIM else e["verdict"]
        return {"id": e["id"], "paper": e["paper"], "statement": e["statement"], "verdict": verdict,
                "control": control_text(e),
                "stable": stability_text(e),
                "scale": e["scale"],
                "headline": _headline(e), "criterion": criterion_text(e),
                "power": " | ".join(p["text"] for p in e.get("power", [])),
                "substitutes": "; ".join(e.get("substitutes", [])),
                "decisive": decisive_text(e)}

    def markdown(self) -> dict[str, str]:
        """The short cells (:data:`COLUMNS`): one line per claim, the README's verdict table."""
        e = self.entry
        return {"id": str(e["id"]), "default (this run)": verdict_cell(e),
                "decisive run (archived: device, date, commit)": decisive_cell(e),
                "headline (95 % interval)": _short(headline(e)), "control": controls_cell(e),
                "stable": replicates_cell(e), "scale": str(e.get("scale", "?"))}

    @staticmethod
    def latex(row: Mapping[str, str]) -> str:
        """The report's ``longtable`` line of a :meth:`csv` row (short forms of its long cells)."""
        r = row
        return (rf"\rowcolor{{{_TEX_COLOUR.get(r['verdict'], 'white')}}} {_tex_escape(r['id'])} & "
                rf"{_tex_escape(r['statement'])} & "
                rf"{_tex_escape(r['verdict'].replace('_', ' '))} & {_tex_escape(_decisive_short(r['decisive']))} & "
                rf"{_tex_escape(_control_short(r['control']))} & "
                rf"{_tex_escape(_stable_short(r['stable']))} & "
                rf"{_tex_escape(r['scale'])} & "
                rf"{_tex_escape(r['headline'])} & "
                rf"{_tex_escape(r['criterion'].split(' ')[0] + ('*' if 'amended' in r['criterion'] else ''))} \\")

    def summary(self) -> dict[str, str]:
        """The report's one-page summary row (issue 40 item 5): the claim's short name, its verdict in each tier
        (the default run's, the decisive tier's) with a key for its colour, and the headline numbers."""
        e = self.entry
        default, default_key = default_tier(e)
        dec, dec_key = decisive_tier(e)
        d = e.get("decisive")
        dec_head = str(d.get("headline") or "") if isinstance(d, Mapping) and d.get("state") == COMPLETE else ""
        return {"id": str(e["id"]), "short": short_name(e), "default": default, "default_key": default_key,
                "decisive": dec, "decisive_key": dec_key, "headline": _short(headline(e), MAX_SUMMARY_HEADLINE),
                "decisive_headline": _short(dec_head.split("; ", 1)[0].replace(" = ", " "), MAX_SUMMARY_HEADLINE)}


#: The longest headline of the report's summary table (cut at a word boundary; the numbers are under the claim).
MAX_SUMMARY_HEADLINE = 64
#: The longest short name of a claim without one (the statement, cut at a word boundary).
MAX_SHORT_NAME = 50


def short_name(entry: Mapping[str, Any]) -> str:
    """The claim's short name (``short`` in its paper's claims.toml, :attr:`~ntkrepro.ledger.specs.ClaimSpec.short`);
    a claim without one (or of no registered paper): its statement, cut to :data:`MAX_SHORT_NAME` characters."""
    try:
        spec = preregistration(str(entry.get("paper")))[str(entry.get("id"))]
    except (KeyError, ValueError, FileNotFoundError):
        spec = None
    return (spec.short if spec is not None and spec.short else
            _short(" ".join(str(entry.get("statement", "")).split()), MAX_SHORT_NAME))


def default_tier(entry: Mapping[str, Any]) -> tuple[str, str]:
    """(label, key) of the default run's verdict: the verdict, "uninformative" when a control passes too, "no
    verdict" for a proposition the seed does not state; the key (a :class:`Verdict` value or ``"no_verdict"``)
    picks the colour."""
    v = str(entry.get("verdict", "?"))
    if v == NOT_A_CLAIM:
        return "no verdict (not a claim)", "no_verdict"
    cell = verdict_cell(entry)
    return ("inconclusive (uninformative)" if cell.startswith("inconclusive (uninformative") else cell), v


def decisive_tier(entry: Mapping[str, Any]) -> tuple[str, str]:
    """(label, key) of the decisive tier's verdict from the entry's ``decisive`` field: the verdict of a complete
    archive; ``none archived (0/4)``, ``incomplete (3/8)`` or ``STALE`` (key ``"pending"``: no verdict yet); ``-`` (key
    ``"none"``) when the claim has no decisive tier."""
    d = entry.get("decisive")
    if not isinstance(d, Mapping):
        return "-", "none"
    n = f"{d.get('cells_archived') or 0}/{d.get('cells_planned') or '?'}"
    state = d.get("state")
    if state == COMPLETE and d.get("verdict"):
        return str(d["verdict"]).replace("_", " "), str(d["verdict"])
    if state == STALE:
        return f"STALE ({n})", "pending"
    if state == INCOMPLETE:
        return f"incomplete ({n})", "pending"
    return f"none archived ({n})", "pending"


def summary_rows(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One summary row per entry (:meth:`ClaimRow.summary`), in report order (an unregistered paper's last)."""
    return [ClaimRow(e).summary() for e in report_order(entries, strict=False)]


def table_rows(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One CSV row per ledger entry (:meth:`ClaimRow.csv`), in report order (:func:`report_order`)."""
    return [ClaimRow(e).csv() for e in report_order(entries)]


def summarise(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One Markdown row per entry (:meth:`ClaimRow.markdown`), in report order (an entry of an
    unregistered paper last)."""
    return [ClaimRow(e).markdown() for e in report_order(entries, strict=False)]


# ---- the decisive tier: the entry's field, its cell, the tier table's row -------------------------------

def summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's ``decisive`` field from a :func:`ntkrepro.decisive.judge` record: the state, the verdict
    (None when STALE or nothing is archived), where and when it was computed, the headline numbers, and
    the reason."""
    ev = record.get("evaluation")
    out = {k: record.get(k) for k in ("tier", "plan", "state", "verdict", "scale", "settings", "archive",
                                      "cells_planned", "cells_archived", "cells_stale", "commits", "config_hashes",
                                      "dirty", "devices", "dates", "wall_seconds", "cpu_seconds",
                                      "cells_with_cpu_seconds", "reason", "partial")}
    out["headline"] = _headline(ev) if ev else ""
    out["controls"] = control_text(ev) if ev else ""
    out["criterion_version"] = ev.get("criterion_version") if ev else None
    out["cell"] = table_cell({**record, "headline": out["headline"]})
    # short keys for one-line readers (ntkrepro.verdicts on main: device, date, commit, stale)
    out["device"] = "; ".join(record.get("devices") or [])
    out["date"] = ((record.get("dates") or [None, None])[1] or "")[:10]
    out["commit"] = ",".join(c[:7] for c in record.get("commits") or [])
    out["stale"] = record.get("state") == STALE
    out["incomplete"] = record.get("state") == INCOMPLETE
    return out


def table_cell(record: Mapping[str, Any] | None) -> str:
    """The claims table's "decisive run (archived: device, date, commit)" cell of a judge record."""
    if not record or record.get("state") in (None, EMPTY):
        return "-"
    commits = ",".join(c[:7] for c in record.get("commits") or []) + (" dirty" if record.get("dirty") else "")
    dates = record.get("dates") or [None, None]
    day = (dates[1] or "?")[:10]
    where = f"archived: {'; '.join(record.get('devices') or ['?'])}, {day}, {commits}"
    n = f"{record.get('cells_archived')}/{record.get('cells_planned')} cells"
    if record.get("plan"):  # a later plan of the claim (decisive_cells.entry_plan), e.g. H3.dk
        n += f" of plan {record['plan']}"
    if record.get("scale") not in (None, "paper"):  # e.g. A4: the default run's settings at its power line's seeds
        n += f" at the {record.get('settings') or record['scale']} settings"
    if record["state"] == STALE:
        return f"STALE ({len(record.get('cells_stale') or [])} cells computed by older code; not used; {where})"
    if record["state"] == INCOMPLETE:
        part = record.get("partial")
        groups = (len(next(v for k, v in part.items() if k.endswith("s") and isinstance(v, list)))
                  if part else 0)
        extra = f"; partial, not a verdict: {part['criterion_verdict']} on {groups} complete groups" if part else ""
        return f"inconclusive: INCOMPLETE ({n}{extra}; {where})"
    ev_head = record.get("headline") or ""
    return f"{record['verdict']} ({n}; {where})" + (f"; {ev_head}" if ev_head else "")


def _hours(seconds: float | None) -> str:
    return "-" if not seconds else (f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min")


def tier_row(claim: str, spec: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, str]:
    """One row of the decisive tier's table from a :func:`ntkrepro.decisive.judge` record: what was planned,
    how much is archived, the verdict by today's criterion, on which device, when, and how long the
    archived cells took (wall time as run, CPU time where the cells record it)."""
    settings = ("the paper's settings" if spec.get("scale") == "paper"
                else f"the {spec.get('settings') or spec.get('scale')} settings")
    state = record.get("state")
    verdict = {COMPLETE: str(record.get("verdict")).replace("_", " "), INCOMPLETE: "INCOMPLETE: no verdict yet",
               STALE: "STALE: not used"}.get(state, "-")
    dates = [d[:10] for d in record.get("dates") or [] if d]
    when = "-" if not dates else (dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}")
    time = f"{_hours(record.get('wall_seconds'))} wall"
    n_cpu, n = record.get("cells_with_cpu_seconds") or 0, record.get("cells_archived") or 0
    if n_cpu:
        time += f", {_hours(record.get('cpu_seconds'))} CPU" + ("" if n_cpu == n else f" ({n_cpu} of {n} cells)")
    per = " × ".join(str(k).rstrip("s") for k in spec.get("cell") or [])
    return {"claim": claim, "decisive tier (config/decisive.yaml)":
            f"{record.get('cells_planned')} cells{f' ({per})' if per else ''} at {settings}",
            "archived cells": f"{n}/{record.get('cells_planned')}", "verdict (current criteria)": verdict,
            # the complete set's first measured interval; an incomplete set shows none (it is not a verdict)
            "headline (95 % interval)": _short(headline(record.get("evaluation") or {})) or "-"
            if state == COMPLETE else "-",
            "device": device_short("; ".join(record.get("devices") or [])) if n else "-", "computed (UTC dates)": when,
            "time (sum over cells)": time if n else "-",
            "commits": ", ".join(c[:7] for c in record.get("commits") or []) or "-"}
