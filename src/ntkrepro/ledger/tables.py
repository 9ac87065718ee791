"""The claims table rendered from the row model (:mod:`ntkrepro.ledger.rows`): CSV, Markdown (+ details), LaTeX.

:func:`write_table` writes the CSV (every column, :meth:`~ntkrepro.ledger.rows.ClaimRow.csv`), the
Markdown table (one short line per claim, :func:`render` of
:meth:`~ntkrepro.ledger.rows.ClaimRow.markdown` rows, with the count of claims under it) with its
detail file (:func:`details_path`) and the LaTeX ``longtable`` body of the report
(:meth:`~ntkrepro.ledger.rows.ClaimRow.latex`). :func:`render_tiers` renders the decisive tier's rows
(:func:`~ntkrepro.ledger.rows.tier_row`), the README's tier table.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ntkrepro.io import atomic_path
from ntkrepro.ledger.rows import (COLUMNS, NOT_A_CLAIM_CELL, TABLE_COLUMNS, TIER_COLUMNS, ClaimRow, _tex_escape,
                                  summarise, summary_rows, table_rows)

#: The CSV's columns (before issue 40 this module's own tuple; now the row model's).
_TABLE_COLUMNS = TABLE_COLUMNS


def _markdown(columns: Sequence[str], rows: Sequence[Mapping[str, str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r.get(c, "")).replace("|", "/") for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def count_line(rows: Sequence[Mapping[str, str]]) -> str:
    """The count of claims under the table: the seeds' claims with their verdicts; the propositions the
    seeds do not state (:data:`~ntkrepro.ledger.rows.NOT_A_CLAIM_CELL`) are named, never counted
    (CLAIMS.md rule 9)."""
    judged = [r for r in rows if r.get(COLUMNS[1]) != NOT_A_CLAIM_CELL]
    reported = [str(r.get("id")) for r in rows if r.get(COLUMNS[1]) == NOT_A_CLAIM_CELL]
    counts: dict[str, int] = {}
    for r in judged:
        head = str(r.get(COLUMNS[1], "?")).split(" (", 1)[0]
        counts[head] = counts.get(head, 0) + 1
    order = ["reproduced", "not reproduced", "inconclusive"]
    parts = [f"{counts[k]} {k}" for k in order + sorted(set(counts) - set(order)) if counts.get(k)]
    line = f"{len(judged)} claims of the seeds: " + (", ".join(parts) or "none judged") + "."
    if reported:
        line += (f" Reported without a verdict and not counted (not claims of the seeds, CLAIMS.md rule 9): "
                 f"{', '.join(reported)}.")
    return line


def verdict_counts(rows: Sequence[Mapping[str, str]]) -> dict[str, int]:
    """How many of the seeds' claims each default verdict has (``reproduced``, ``not reproduced``,
    ``inconclusive``; "inconclusive (uninformative: ...)" counts as inconclusive); the propositions the
    seeds do not state (:data:`~ntkrepro.ledger.rows.NOT_A_CLAIM_CELL`) are not counted (CLAIMS.md rule 9)."""
    counts = {"reproduced": 0, "not reproduced": 0, "inconclusive": 0}
    for r in rows:
        if r.get(COLUMNS[1]) != NOT_A_CLAIM_CELL:
            head = str(r.get(COLUMNS[1], "?")).split(" (", 1)[0]
            counts[head] = counts.get(head, 0) + 1
    return counts


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _verdict_groups(pairs: Sequence[tuple[str, str]]) -> str:
    """``"A1 and F2 reproduced; A4 inconclusive"`` from (claim, verdict) pairs, verdicts in a fixed order."""
    order = ["reproduced", "not reproduced", "inconclusive"]
    verdicts = order + sorted({v for _, v in pairs} - set(order))
    return "; ".join(f"{_and([c for c, v in pairs if v == k])} {k}" for k in verdicts
                     if any(v == k for _, v in pairs))


def undecided_tiers(tiers: Sequence[Mapping[str, str]]) -> list[tuple[str, str]]:
    """(claim, reason) of every decisive-tier row without a verdict: its run not started, incomplete or STALE
    (the reason names the archived and the planned cells)."""
    out = []
    for t in tiers:
        verdict = str(t.get(TIER_COLUMNS[3], "-"))
        have, _, planned = str(t.get(TIER_COLUMNS[2], "0/0")).partition("/")
        if verdict.startswith("STALE"):
            out.append((t["claim"], f"its archived cells are STALE (computed by older code: {have} of {planned})"))
        elif have.strip() == "0":
            out.append((t["claim"], f"no cell of its decisive run is archived yet (0 of {planned} cells)"))
        elif have != planned or verdict.startswith("INCOMPLETE"):
            out.append((t["claim"], f"its decisive run is incomplete ({have} of {planned} cells archived)"))
    return out


def render_findings(rows: Sequence[Mapping[str, str]], tiers: Sequence[Mapping[str, str]] = (),
                    short: Mapping[str, str] | None = None) -> str:
    """The README's opening sentences, generated from the verdict rows (:func:`~ntkrepro.ledger.rows.summarise`)
    and the decisive tier's rows (:func:`~ntkrepro.ledger.rows.tier_row`): how many of the seeds' claims the
    default run reproduces, refutes and leaves inconclusive; the decisive tier's verdicts; and, for every
    claim whose decisive run has no verdict yet, why (``short``: claim id -> its short name)."""
    short = short or {}
    counts = verdict_counts(rows)
    judged = sum(counts.values())
    reported = [str(r.get("id")) for r in rows if r.get(COLUMNS[1]) == NOT_A_CLAIM_CELL]
    parts = [f"{counts[k]} {k}" for k in counts]
    out = [f"**What it finds.** Of the {judged} claims of the seeds, the default run (2 CPU cores, real data, "
           f"reduced sizes) finds {_and(parts)}"
           + (f"; {_and(reported)} (not claims of the seeds, CLAIMS.md rule 9) are reported without a verdict."
              if reported else ".")]
    order = [str(r.get("id")) for r in rows]  # report order (the table's), not the plan's
    # one verdict per claim: the last of its complete plans in the plan's order, as its ledger entry shows
    # (decisive_cells.entry_plan); a later plan is keyed <CLAIM>.<name> and named beside the claim
    shown: dict[str, Mapping[str, str]] = {}
    for t in tiers:
        if not str(t.get(TIER_COLUMNS[3], "-")).startswith(("INCOMPLETE", "STALE", "-")):
            shown[str(t["claim"]).split(".", 1)[0]] = t
    tiers = sorted(tiers, key=lambda t: order.index(t["claim"].split(".", 1)[0])
                   if t["claim"].split(".", 1)[0] in order else len(order))
    done = [(c if t["claim"] == c else f"{c} (plan {t['claim']})", str(t[TIER_COLUMNS[3]]))
            for c, t in sorted(shown.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))]
    if done:
        out.append(f"The decisive tier (larger runs, archived and judged by today's criteria) has judged "
                   f"{len(done)} of them: {_verdict_groups(done)}.")
    default = {str(r.get("id")): str(r.get(COLUMNS[1], "?")).split(" (", 1)[0] for r in rows}
    open_ = []
    for c, why in undecided_tiers(tiers):
        base = c.split(".", 1)[0]  # a later plan of a claim is keyed <CLAIM>.<name> (decisive_cells.claim_of)
        label = [f"its plan {c}"] if base != c else []
        label += [short[base]] if short.get(base) else []
        label += [f"{default.get(base, '?')} by default"]
        open_.append(f"{base} ({'; '.join(label)}): {why}")
    if open_:
        out.append("Awaiting a decisive verdict: " + "; ".join(open_) + ".")
    return " ".join(out) + "\n"


def render(rows: Sequence[Mapping[str, str]]) -> str:
    """The Markdown table of :func:`~ntkrepro.ledger.rows.summarise`'s rows, with the count of claims
    under it (:func:`count_line`)."""
    return _markdown(COLUMNS, rows) + "\n" + count_line(rows) + "\n"


def render_tiers(tiers: Sequence[Mapping[str, str]]) -> str:
    """The Markdown table of the decisive tier's rows (:func:`~ntkrepro.ledger.rows.tier_row`)."""
    return _markdown(TIER_COLUMNS, tiers)


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
    :func:`render`; the long texts in :func:`details_path`) and a LaTeX ``longtable`` body (the header
    is in the report template)."""
    rows = table_rows(entries)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=TABLE_COLUMNS)
    w.writeheader()
    w.writerows(rows)
    with atomic_path(csv_path) as tmp:
        tmp.write_text(buf.getvalue())
    # one short line per claim (issue 31); the long texts go to the detail file and the report
    with atomic_path(md_path) as tmp:
        tmp.write_text(render(summarise(entries)))
    with atomic_path(details_path(md_path)) as tmp:
        tmp.write_text(_details(rows))
    tex = [ClaimRow.latex(r) for r in rows]
    with atomic_path(tex_path) as tmp:
        tmp.write_text("\n".join(tex) + "\n")


# ---- the report's first page (issue 40 item 5): every claim in one table, and the verdicts per tier ----------

#: The colour of each verdict key of a summary row (:meth:`~ntkrepro.ledger.rows.ClaimRow.summary`).
SUMMARY_COLOUR = {"reproduced": "green!35", "not_reproduced": "red!35", "inconclusive": "yellow!45",
                  "no_verdict": "gray!30", "pending": "orange!25", "none": "white"}
#: The legend's words for each key, in the legend's order.
SUMMARY_LEGEND = {"reproduced": "reproduced", "not_reproduced": "not reproduced", "inconclusive": "inconclusive",
                  "pending": "decisive run not (fully) archived", "no_verdict": "no verdict (not a claim of the seed)",
                  "none": "no decisive tier planned"}


def summary_tex(entries: Sequence[Mapping[str, Any]]) -> str:
    """The rows of the report's one-page summary table, one per entry (:func:`~ntkrepro.ledger.rows.summary_rows`):
    id, short claim, the verdict of each tier on its colour, the headline numbers (the decisive tier's below them
    when it has a verdict)."""
    out = []
    for r in summary_rows(entries):
        head = _tex_escape(r["headline"] or "-")
        if r["decisive_headline"]:
            head += r" \newline \emph{decisive:} " + _tex_escape(r["decisive_headline"])
        out.append(rf"{_tex_escape(r['id'])} & {_tex_escape(r['short'])} & "
                   rf"\cellcolor{{{SUMMARY_COLOUR.get(r['default_key'], 'white')}}}{_tex_escape(r['default'])} & "
                   rf"\cellcolor{{{SUMMARY_COLOUR.get(r['decisive_key'], 'white')}}}{_tex_escape(r['decisive'])} & "
                   rf"{head} \\")
    return "\n".join(out) + "\n"


def tier_counts(entries: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per tier (``default``, ``decisive``), how many entries have each verdict key (summary rows)."""
    out: dict[str, dict[str, int]] = {"default": {}, "decisive": {}}
    for r in summary_rows(entries):
        for tier in out:
            k = r[f"{tier}_key"]
            out[tier][k] = out[tier].get(k, 0) + 1
    return out


def verdict_figure_tex(entries: Sequence[Mapping[str, Any]], step: float = 0.7) -> str:
    """A TikZ picture of the verdicts per tier: one column per claim (report order), one row per tier (default,
    decisive), each cell on its verdict's colour (:data:`SUMMARY_COLOUR`), with a legend of the counts."""
    rows = summary_rows(entries)
    counts = tier_counts(entries)
    lines = [r"\begin{tikzpicture}[x=1cm,y=1cm,font=\scriptsize]"]
    for y, (tier, label) in enumerate((("decisive", "decisive tier"), ("default", "default run"))):
        lines.append(rf"\node[anchor=east] at (-0.1,{y * 0.75 + 0.3:.2f}) {{{label}}};")
        for i, r in enumerate(rows):
            key = r[f"{tier}_key"]
            x = i * step
            lines.append(rf"\filldraw[fill={SUMMARY_COLOUR.get(key, 'white')},draw=gray!60] ({x:.2f},{y * 0.75:.2f}) "
                         rf"rectangle +({step - 0.06:.2f},0.6);")
            lines.append(rf"\node at ({x + (step - 0.06) / 2:.2f},{y * 0.75 + 0.3:.2f}) {{{_tex_escape(r['id'])}}};")
    lines.append(r"\end{tikzpicture}")
    legend = []
    for key, words in SUMMARY_LEGEND.items():
        n = [f"{counts[t].get(key, 0)} {t}" for t in ("default", "decisive") if counts[t].get(key)]
        if n:
            legend.append(rf"\fcolorbox{{gray!60}}{{{SUMMARY_COLOUR[key]}}}{{\strut\hspace{{0.6em}}}} "
                          rf"{_tex_escape(words)} ({', '.join(n)})")
    return "\n".join(lines) + "\n\n\\vspace{0.5ex}\n" + r" \quad ".join(legend) + "\n"
