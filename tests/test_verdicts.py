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
    tiers = json.loads((repo_root / "docs" / "verdicts.json").read_text()).get("tiers")
    assert tiers, "docs/verdicts.json has no decisive-tier rows: run `python -m ntkrepro.verdicts --refresh-decisive`"
    assert verdicts.readme_section((repo_root / "README.md").read_text(), verdicts.TIERS_BEGIN,
                                   verdicts.TIERS_END) == verdicts.render_tiers(tiers)


def test_the_committed_decisive_column_is_what_the_archive_gives_today(repo_root, monkeypatch):
    """docs/verdicts.json's decisive column and tier table equal a re-judgement of the committed archive by
    today's criteria (so an archive cell added without refreshing the snapshot fails here)."""
    from ntkrepro import decisive

    monkeypatch.chdir(repo_root)
    summary = json.loads((repo_root / "docs" / "verdicts.json").read_text())
    fresh = verdicts.refresh_decisive(summary, decisive.load_plan(), decisive.ARCHIVE)
    assert fresh["tiers"] == summary["tiers"], (
        "the archive changed since docs/verdicts.json was refreshed: run `.venv/bin/python -m ntkrepro.verdicts "
        "--refresh-decisive docs/verdicts.json` and `--sync-readme docs/verdicts.json README.md`")
    assert fresh["rows"] == summary["rows"]


def test_refresh_replaces_only_the_decisive_column_and_states_time_and_device():
    plan = {"claims": {
        "A1": {"cell": ["seeds", "widths"], "scale": "paper"},
        "A4": {"cell": ["chunks"], "scale": "default"},
        "H4": {"status": "gpu_only"}}}
    records = {
        "A1": {"state": "complete", "verdict": "not_reproduced", "cells_planned": 4, "cells_archived": 4,
               "devices": ["cpu:cpu (x86_64, Linux)"], "dates": ["2026-12-04T01:00:00", "2026-12-05T02:00:00"],
               "commits": ["0123456789", "abcdef0123"], "wall_seconds": 7300.0, "cpu_seconds": 0.0,
               "cells_with_cpu_seconds": 0, "scale": "paper",
               "evaluation": {"measured": {"slope": {"value": -0.1, "ci_low": -0.2, "ci_high": 0.0}}}},
        "A4": {"state": "INCOMPLETE", "verdict": "inconclusive", "cells_planned": 2, "cells_archived": 1,
               "devices": ["gpu:NVIDIA H200 (x86_64, Linux)"], "dates": ["2026-12-06T00:00:00"] * 2,
               "commits": ["fedcba9876"], "wall_seconds": 90.0, "cpu_seconds": 80.0, "cells_with_cpu_seconds": 1,
               "scale": "default"}}
    summary = {"rows": verdicts.summarise([_entry("A1", "inconclusive"), _entry("F1", "reproduced")])}
    summary["rows"][0]["id"] = "A1"
    out = verdicts.refresh_decisive(summary, plan, "unused", judge=lambda c, spec, archive: records[c])
    a1 = next(r for r in out["rows"] if r["id"] == "A1")
    assert a1[verdicts.COLUMNS[2]] == "not_reproduced (CPU, 2026-12-05, 0123456, abcdef0)"
    assert {k: v for k, v in a1.items() if k != verdicts.COLUMNS[2]} == {
        k: v for k, v in summary["rows"][0].items() if k != verdicts.COLUMNS[2]}
    t1, t4 = out["tiers"]
    assert t1["verdict (current criteria)"] == "not reproduced" and t1["archived cells"] == "4/4"
    assert t1["time (sum over cells)"] == "2.0 h wall" and t1["device"] == "CPU"
    assert t1["computed (UTC dates)"] == "2026-12-04 to 2026-12-05"
    assert t1["decisive tier (config/decisive.yaml)"] == "4 cells (seed × width) at the paper's settings"
    assert t1["headline (95 % interval)"] == "slope -0.1 [-0.2, 0]"
    assert t4["verdict (current criteria)"] == "INCOMPLETE: no verdict yet" and t4["device"] == "NVIDIA H200"
    assert t4["headline (95 % interval)"] == "-"  # an incomplete set's numbers are not shown as a verdict
    assert t4["time (sum over cells)"] == "2 min wall, 1 min CPU"
    assert [t["claim"] for t in out["tiers"]] == ["A1", "A4"]  # H4 has no cells to judge


def test_rows_are_short_and_say_why_a_verdict_is_uninformative():
    rows = verdicts.summarise([
        _entry("F2", "reproduced", controls=[("single_draw", "not_reproduced")], reps=["reproduced", "reproduced"]),
        _entry("F1", "inconclusive", crit="reproduced", controls=[("untrained", "reproduced")],
               reps=["inconclusive", "reproduced"], stable=False,
               decisive={"verdict": "reproduced", "device": "cpu", "date": "2026-12-04", "commit": "abc",
                         "stale": True}),
    ])
    assert [r["id"] for r in rows] == ["F1", "F2"]
    assert rows[0]["default (this run)"].startswith("inconclusive (uninformative")
    assert rows[0]["stable"] == "FRAGILE: r0 inconclusive / r1 reproduced"
    dec = rows[0]["decisive run (archived: device, date, commit)"]
    assert dec.endswith("STALE") and "cpu, 2026-12-04, abc" in dec
    assert rows[1]["headline (95 % interval)"] == "slope -0.5 [-0.6, -0.4]" and rows[1]["stable"] == "stable (2)"
    assert verdicts.decisive_short("inconclusive: INCOMPLETE (15/60 cells; archived: cpu, 2026-12-04, 0299db7)") \
        == "inconclusive: INCOMPLETE (CPU, 2026-12-04, 0299db7)"
    # breakable in the report's narrow column
    assert verdicts.decisive_short("inconclusive: INCOMPLETE (17/60 cells; archived: cpu, 2026-12-05, "
                                   "0299db7,1fbcaa1)") \
        == "inconclusive: INCOMPLETE (CPU, 2026-12-05, 0299db7, 1fbcaa1)"
    # a decisive run at settings other than the paper's says so in the short form too (A4: the default's)
    assert verdicts.decisive_short("reproduced (32/32 cells at the default settings; archived: cpu, 2026-12-05, "
                                   "1b3fbd2); delta 0.1 [0.05, 0.2]") \
        == "reproduced [default settings] (CPU, 2026-12-05, 1b3fbd2)"
    # the device is named (the column says "device, date, commit"), without the host description
    assert verdicts.decisive_short("reproduced (60/60 cells; archived: cpu:cpu (x86_64, Linux); gpu:NVIDIA H200 "
                                   "(x86_64, Linux), 2026-12-06, abcdef1)") \
        == "reproduced (CPU; NVIDIA H200, 2026-12-06, abcdef1)"
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
    with pytest.raises(ValueError, match="decisive-tier"):
        verdicts.sync_readme(readme, table, tiers="| id |")
    tiers = verdicts.render_tiers([{"claim": "A1"}])
    with pytest.raises(ValueError, match="no marker"):  # a README without the tier markers is refused, unchanged
        verdicts.sync_readme(readme, table, tiers=tiers)
    assert verdicts.readme_section(readme.read_text()) == table
    (tmp_path / "no_markers.md").write_text("nothing")
    with pytest.raises(ValueError, match="no marker"):
        verdicts.sync_readme(tmp_path / "no_markers.md", table)


# ---- issue 40 item 5: the README opens with findings generated from the same snapshot ----------------------

def _sentences(text: str) -> list[str]:
    import re

    return [s for s in re.split(r"(?<=\.) (?=[A-Z*])", text.strip()) if s]


def test_readme_opens_with_the_findings_of_the_snapshot(repo_root):
    import re

    text = (repo_root / "README.md").read_text()
    summary = json.loads((repo_root / "docs" / "verdicts.json").read_text())
    sec = verdicts.readme_section(text, verdicts.FINDINGS_BEGIN, verdicts.FINDINGS_END)
    assert sec == verdicts.findings(summary), (
        "README's findings differ from docs/verdicts.json: run "
        "`.venv/bin/python -m ntkrepro.verdicts --sync-readme docs/verdicts.json README.md`")
    # they open the README: only the title is above them
    assert text.index(verdicts.FINDINGS_BEGIN) < text.index("\n\n", text.index("\n") + 1) + 2
    assert 2 <= len(_sentences(sec)) <= 3, _sentences(sec)
    # the counts are the snapshot's: 19 claims of the seeds (G4 and F5 named, not counted; CLAIMS.md rule 9)
    rows = summary["rows"]
    judged = [r["default (this run)"].split(" (", 1)[0] for r in rows
              if r["default (this run)"] != verdicts.NOT_A_CLAIM_CELL]
    m = re.search(r"Of the (\d+) claims of the seeds, .*? finds (\d+) reproduced, (\d+) not reproduced and "
                  r"(\d+) inconclusive", sec)
    assert m, sec
    assert [int(g) for g in m.groups()] == [len(judged), judged.count("reproduced"), judged.count("not reproduced"),
                                            judged.count("inconclusive")]
    assert len(judged) == 19 and "G4 and F5 (not claims of the seeds" in sec
    # the decisive tier: every complete tier's verdict is named, and each claim awaiting its run with why
    tiers = {t["claim"]: t for t in summary["tiers"]}
    complete = [c for c, t in tiers.items() if t["archived cells"].split("/")[0] == t["archived cells"].split("/")[1]]
    # one verdict per claim: its last complete plan (decisive_cells.entry_plan), named "H3 (plan H3.dk)"
    shown = {c.split(".", 1)[0]: c for c in complete}
    m = re.search(r"has judged (\d+) of them: (.*?)\.(?: |$)", sec)
    assert m and int(m.group(1)) == len(shown), sec
    for base, c in shown.items():
        name = base if c == base else f"{base} (plan {c})"
        assert re.search(rf"\b{re.escape(name)}[^;]* {re.escape(tiers[c]['verdict (current criteria)'])}\b",
                         m.group(2)), (c, sec)
    rest = re.sub(r"\b\S+ \(plan [^)]*\)", "", m.group(2))
    for c in set(complete) - set(shown.values()):  # a plan superseded by a later complete one is not named there
        assert not re.search(rf"\b{re.escape(c)}\b", rest), (c, sec)
    for c in set(tiers) - set(complete):
        have, planned = tiers[c]["archived cells"].split("/")
        named = f"{c} (" if "." not in c else f"{c.split('.')[0]} (its plan {c};"  # a later plan: <CLAIM>.<name>
        assert named in sec and f"({have} of {planned} cells" in sec, (c, sec)
    assert "H4 not reproduced" in sec and "H6 and A4 inconclusive" in sec


def test_sync_readme_is_idempotent(tmp_path, repo_root):
    import shutil

    readme = tmp_path / "README.md"
    shutil.copy(repo_root / "README.md", readme)
    summary = str(repo_root / "docs" / "verdicts.json")
    assert verdicts.main(["--sync-readme", summary, str(readme)]) == 0
    once = readme.read_text()
    assert once == (repo_root / "README.md").read_text()
    assert verdicts.main(["--sync-readme", summary, str(readme)]) == 0
    assert readme.read_text() == once


def test_the_readme_stays_a_front_door(repo_root):
    """At most 220 lines; the two commands (run everything, run the tests) and the claim map stay in it."""
    from ntkrepro import claim_map

    text = (repo_root / "README.md").read_text()
    assert len(text.splitlines()) <= 220
    assert ".venv/bin/snakemake all --profile profiles/local" in text and ".venv/bin/pytest" in text
    assert claim_map.readme_section(text)


def test_findings_of_a_made_up_snapshot():
    rows = [{"id": "H1", "default (this run)": "reproduced"},
            {"id": "H2", "default (this run)": "not reproduced"},
            {"id": "H3", "default (this run)": "inconclusive (uninformative: holds in a control too)"},
            {"id": "H4", "default (this run)": "inconclusive"},
            {"id": "G4", "default (this run)": verdicts.NOT_A_CLAIM_CELL}]
    tiers = [{"claim": "H4", "archived cells": "2/2", "verdict (current criteria)": "STALE: not used"},
             {"claim": "H3", "archived cells": "4/4", "verdict (current criteria)": "reproduced"},
             {"claim": "H2", "archived cells": "1/4", "verdict (current criteria)": "INCOMPLETE: no verdict yet"}]
    text = verdicts.render_findings(rows, tiers, {"H2": "short name"})
    assert "Of the 4 claims of the seeds" in text and "finds 1 reproduced, 1 not reproduced and 2 inconclusive" in text
    assert "G4 (not claims of the seeds" in text and "has judged 1 of them: H3 reproduced." in text
    assert "H2 (short name; not reproduced by default): its decisive run is incomplete (1 of 4 cells archived)" in text
    assert "H4 (inconclusive by default): its archived cells are STALE" in text
    assert len(_sentences(verdicts.render_findings(rows[:1]))) == 1  # no tier: one sentence
    # a claim's later plan (keyed <CLAIM>.<name>) is named by its claim, with the claim's short name and verdict
    later = tiers + [{"claim": "H2.dk", "archived cells": "0/6", "verdict (current criteria)": "-"}]
    text = verdicts.render_findings(rows, later, {"H2": "short name"})
    assert ("H2 (its plan H2.dk; short name; not reproduced by default): no cell of its decisive run is archived yet"
            in text)
    assert "?" not in text
