"""The report opens with a one-page summary of every claim and a figure of the verdicts per tier (issue 40 item 5).

Both are generated from the ledger entries by the one row model (:meth:`ntkrepro.ledger.rows.ClaimRow.summary`,
:func:`ntkrepro.ledger.tables.summary_tex`, :func:`ntkrepro.ledger.tables.verdict_figure_tex`). The entries here
are made from the committed snapshot ``docs/verdicts.json`` (the default run's and the decisive tier's verdicts
and headlines of all 21 entries), so the page is checked at its real size: every claim has one row, each short
name is short, and with LaTeX the whole table and the figure fit on page 1.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from ntkrepro import report
from ntkrepro.ledger import write_table
from ntkrepro.ledger.rows import summary_rows
from ntkrepro.ledger.specs import MAX_SHORT, NOT_A_CLAIM, preregistration
from ntkrepro.ledger.tables import SUMMARY_COLOUR, summary_tex, tier_counts, verdict_figure_tex
from ntkrepro.papers import PAPERS

ROOT = Path(__file__).resolve().parents[1]
_PAPER = {p.claim_prefix: k for k, p in PAPERS.items()}


def _measured(headline: str) -> dict:
    m = re.fullmatch(r"(.*) (\S+) \[(\S+), (\S+)\]", headline)
    if m:
        return {m.group(1): {"value": float(m.group(2)), "ci_low": float(m.group(3)), "ci_high": float(m.group(4))}}
    name, _, value = headline.rpartition(" ")
    return {name: float(value)}


def snapshot_entries() -> list[dict]:
    """Ledger entries with the verdicts, decisive states and headlines of docs/verdicts.json (all 21 entries)."""
    summary = json.loads((ROOT / "docs" / "verdicts.json").read_text())
    # the plan each entry shows (decisive_cells.entry_plan): the claim's last complete plan, else its own
    tiers = {}
    for t in summary["tiers"]:
        cid, (have, planned) = t["claim"].split(".", 1)[0], t["archived cells"].split("/")
        if t["claim"] == cid and cid not in tiers or have == planned != "0":
            tiers[cid] = t
    out = []
    for row in summary["rows"]:
        cid = row["id"]
        paper = _PAPER[cid[0]]
        spec = preregistration(paper)[cid]
        default = row["default (this run)"]
        verdict = NOT_A_CLAIM if default.startswith("no verdict") else default.split(" (", 1)[0].replace(" ", "_")
        e = {"id": cid, "paper": paper, "statement": spec.statement, "criterion": spec.criterion,
             "criterion_version": spec.version, "amendments": [], "reason": "made from docs/verdicts.json",
             "controls": [], "power": [], "substitutes": [], "measured": _measured(row["headline (95 % interval)"]),
             "scale": "default", "verdict": verdict, "criterion_verdict": verdict, "stable": True}
        if cid in tiers:
            t = tiers[cid]
            have, planned = (int(v) for v in t["archived cells"].split("/"))
            state = ("complete" if have == planned else "INCOMPLETE" if have else "none")
            head = t["headline (95 % interval)"]
            e["decisive"] = {"state": state, "cells_archived": have, "cells_planned": planned, "scale": "default",
                             "archive": "archive/decisive", "devices": ["cpu:cpu"], "dates": ["2026-12-06"],
                             "commits": ["0000000"], "wall_seconds": 1.0, "reason": "", "partial": None,
                             "verdict": t["verdict (current criteria)"].replace(" ", "_") if state == "complete"
                             else None,
                             # the long form of the judge record's headline: "name = value [low, high]"
                             "headline": re.sub(r" (\S+ \[\S+, \S+\])$", r" = \1", head) if head != "-" else ""}
        out.append(e)
    return out


def test_one_summary_row_per_claim_in_report_order():
    entries = snapshot_entries()
    rows = summary_rows(entries)
    assert [r["id"] for r in rows] == [e["id"] for e in entries]  # docs/verdicts.json is in report order
    assert len(rows) == 21 and summary_tex(entries).count(r"\\" + "\n") == 21
    for r in rows:
        assert r["short"] and len(r["short"]) <= MAX_SHORT and "\n" not in r["short"], r
    by_id = {r["id"]: r for r in rows}
    assert by_id["A1"]["default"] == "inconclusive" and by_id["A1"]["decisive"] == "reproduced"
    assert by_id["A1"]["decisive_headline"].startswith("slope_min_train_loss -0.508 [-0.549, -0.468]")
    # pending tiers by their archived / planned cells (the counts grow as cells are archived)
    tiers = {t["claim"]: t for t in json.loads((ROOT / "docs" / "verdicts.json").read_text())["tiers"]}
    for cid in ("H4", "H6"):
        have, planned = tiers[cid]["archived cells"].split("/")
        if have != planned:
            label = "incomplete" if int(have) else "none archived"
            assert by_id[cid]["decisive"] == f"{label} ({have}/{planned})", (cid, by_id[cid])
    assert by_id["G4"]["default"] == "no verdict (not a claim)" and by_id["H1"]["decisive"] == "-"
    assert by_id["F4"]["default"] == "inconclusive (uninformative)" or by_id["F4"]["default"] == "inconclusive"


def test_every_claim_has_a_short_name_in_its_claims_toml():
    for paper in PAPERS:
        for cid, spec in preregistration(paper).items():
            assert spec.short and len(spec.short) <= MAX_SHORT, (cid, spec.short)


def test_the_figure_counts_the_verdicts_per_tier():
    entries = snapshot_entries()
    counts = tier_counts(entries)
    # the default column counted from the snapshot's strings themselves (not through the entries)
    rows = json.loads((ROOT / "docs" / "verdicts.json").read_text())["rows"]
    words = [r["default (this run)"].split(" (", 1)[0] for r in rows]
    n_rep, n_inc = words.count("reproduced"), words.count("inconclusive")
    n_none = sum(w.startswith("no verdict") for w in words)
    assert n_rep + n_inc + n_none + words.count("not reproduced") == 21 and n_none == 2
    assert counts["default"] == {k: v for k, v in (("reproduced", n_rep), ("inconclusive", n_inc),
                                                   ("not_reproduced", words.count("not reproduced")),
                                                   ("no_verdict", n_none)) if v}
    # pending: G3 (planned at the authors' conditions, no cell yet); H3 by its plan H3.dk; H6 complete (inconclusive)
    assert counts["decisive"] == {"none": 13, "reproduced": 3, "inconclusive": 3, "not_reproduced": 1, "pending": 1}
    fig = verdict_figure_tex(entries)
    assert fig.count(r"\filldraw") == 2 * 21 and set(re.findall(r"fill=([^,]+),", fig)) <= set(SUMMARY_COLOUR.values())
    assert f"reproduced ({n_rep} default, 3 decisive)" in fig and f"({n_inc} default, 3 decisive)" in fig


def _render(tmp_path, monkeypatch, entries) -> str:
    claims = tmp_path / "results" / "claims"
    claims.mkdir(parents=True, exist_ok=True)
    write_table(entries, claims / "t.csv", claims / "t.md", claims / "claims_table.tex")
    monkeypatch.chdir(ROOT)
    return report.render(ROOT / "paper" / "replication_report.tex.j2", entries, {}, claims / "claims_table.tex",
                         "default", tmp_path / "results" / "paper")


def test_the_report_opens_with_the_summary(tmp_path, monkeypatch):
    tex = _render(tmp_path, monkeypatch, snapshot_entries())
    body = tex[tex.index(r"\begin{document}"):]
    first = body[:body.index(r"\clearpage")]
    assert r"\section*{Summary: every claim, both tiers}" in first and r"\begin{tikzpicture}" in first
    assert all(f"\n{e['id']} & " in first for e in snapshot_entries())
    assert body.index(r"\section*{Claims table}") > body.index(r"\clearpage")  # the long table follows


@pytest.mark.skipif(not report.latex_available(), reason="no LaTeX toolchain")
def test_the_summary_fits_on_page_one(tmp_path, monkeypatch):
    """Compiled (pdflatex, twice for the labels): the summary table and the figure end on page 1."""
    out = tmp_path / "results" / "paper"
    out.mkdir(parents=True)
    tex = _render(tmp_path, monkeypatch, snapshot_entries())
    (out / "r.tex").write_text(tex)
    for _ in range(2):
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "r.tex"], cwd=out,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-3000:]
    aux = (out / "r.aux").read_text()
    pages = dict(re.findall(r"\\newlabel\{(summary-table-end|summary-end|fig:verdicts-per-tier)\}\{\{[^}]*\}\{(\d+)\}",
                            aux))
    assert pages == {"summary-table-end": "1", "summary-end": "1", "fig:verdicts-per-tier": "1"}, aux[:2000]
    assert "Overfull" not in (out / "r.log").read_text()
