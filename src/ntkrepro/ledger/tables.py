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
from ntkrepro.ledger.rows import COLUMNS, NOT_A_CLAIM_CELL, TABLE_COLUMNS, TIER_COLUMNS, ClaimRow, summarise, table_rows

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
