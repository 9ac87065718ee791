"""The README's verdict table is generated from a ledger snapshot and cannot go stale (issue 31)."""
from __future__ import annotations

import json

import pytest

from ntkrepro import verdicts


def _entry(cid, verdict, *, crit=None, controls=(), reps=None, stable=True, decisive=None):
    e = {"id": cid, "paper": "framework", "verdict": verdict, "criterion_verdict": crit or verdict, "scale": "default",
         "measured": {"slope": {"value": -0.5, "ci_low": -0.6, "ci_high": -0.4}, "note": "x" * 500},
         "controls": [{"name": n, "verdict": v} for n, v in controls], "stable": stable}
    if reps:
        e["replicates"] = [{"replicate": i, "verdict": v} for i, v in enumerate(reps)]
    if decisive:
        e["decisive"] = decisive
    return e


def test_readme_verdict_table_matches_the_committed_snapshot(repo_root):
    rows = json.loads((repo_root / "docs" / "verdicts.json").read_text())["rows"]
    readme = verdicts.readme_section((repo_root / "README.md").read_text())
    assert readme == verdicts.render(rows), (
        "README's verdict table differs from docs/verdicts.json: run "
        "`.venv/bin/python -m ntkrepro.verdicts --sync-readme docs/verdicts.json README.md`")
    assert len(rows) == 21 and {r["id"] for r in rows} >= {"H1", "A1", "G1", "F1"}


def test_rows_are_short_and_say_why_a_verdict_is_uninformative():
    rows = verdicts.summarise([
        _entry("F2", "reproduced", controls=[("single_draw", "not_reproduced")], reps=["reproduced", "reproduced"]),
        _entry("F1", "inconclusive", crit="reproduced", controls=[("untrained", "reproduced")],
               reps=["inconclusive", "reproduced"], stable=False,
               decisive={"verdict": "reproduced", "device": "cpu", "date": "2026-12-04", "commit": "abc", "stale": True}),
    ])
    assert [r["id"] for r in rows] == ["F1", "F2"]
    assert rows[0]["default (this run)"].startswith("inconclusive (uninformative")
    assert rows[0]["stable"] == "FRAGILE: r0 inconclusive / r1 reproduced"
    dec = rows[0]["decisive run (archived: device, date, commit)"]
    assert dec.endswith("STALE") and "cpu, 2026-12-04, abc" in dec
    assert rows[1]["headline (95 % interval)"] == "slope -0.5 [-0.6, -0.4]" and rows[1]["stable"] == "stable (2)"
    assert verdicts.decisive_short("inconclusive: INCOMPLETE (15/60 cells; archived: cpu, 2026-12-04, 0299db7)") \
        == "inconclusive: INCOMPLETE (2026-12-04, 0299db7)"
    assert verdicts.decisive_short("inconclusive: INCOMPLETE (17/60 cells; archived: cpu, 2026-12-05, 0299db7,1fbcaa1)") \
        == "inconclusive: INCOMPLETE (2026-12-05, 0299db7, 1fbcaa1)"  # breakable in the report's narrow column
    # a decisive run at settings other than the paper's says so in the short form too (A4: the default's)
    assert verdicts.decisive_short("reproduced (32/32 cells at the default settings; archived: cpu, 2026-12-05, "
                                   "1b3fbd2); delta 0.1 [0.05, 0.2]") == "reproduced [default settings] (2026-12-05, 1b3fbd2)"
    table = verdicts.render(rows)
    assert all(len(line) < 240 for line in table.splitlines())


def test_sync_refuses_what_is_not_a_verdict_table(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"a\n{verdicts.BEGIN}\nold\n{verdicts.END}\nb\n")
    with pytest.raises(ValueError, match="not a verdict table"):
        verdicts.sync_readme(readme, readme.read_text())
    table = verdicts.render(verdicts.summarise([_entry("F1", "reproduced")]))
    verdicts.sync_readme(readme, table)
    assert verdicts.readme_section(readme.read_text()) == table and readme.read_text().startswith("a\n")
    (tmp_path / "no_markers.md").write_text("nothing")
    with pytest.raises(ValueError, match="no marker"):
        verdicts.sync_readme(tmp_path / "no_markers.md", table)
