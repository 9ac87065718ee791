"""Issue 38: only the seeds' claims get verdicts (CLAIMS.md rule 9), and no verdict holds by construction.

* A proposition the seed does not state (``seed_claim = false`` in ``claims.toml``) is measured and
  reported, labelled "not a claim of the seed", with no verdict, and is counted nowhere (ledger,
  claims table, README count, report summary).
* Every claim's negative controls are judged by the claim's own criterion, part by part: a
  ``reproduced`` never stands when every judged part also holds on a control (a test per claim).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from ntkrepro import ledger, verdicts
from ntkrepro.ledger import ClaimSpec, ControlSpec, Evaluation, Verdict, make_entry
from ntkrepro.ledger.specs import NOT_A_CLAIM
from ntkrepro.stats import Status

NOT_SEED_CLAIMS = {"G4", "F5"}


# ------------------------------------------------------------------------------ rule 9: not claims
def test_the_seeds_state_19_claims_and_g4_f5_are_reported_only():
    specs = ledger.registered_claims()
    assert {cid for cid, s in specs.items() if not s.seed_claim} == NOT_SEED_CLAIMS
    assert sum(s.seed_claim for s in specs.values()) == 19
    for cid in NOT_SEED_CLAIMS:
        assert "seed" in specs[cid].not_a_claim and specs[cid].amendments[-1].date == "2026-12-06"
        assert "rule 9" in specs[cid].amendments[-1].change
        assert "reproduced" in specs[cid].amendments[-1].previous["default"]  # the old verdict is kept


@pytest.mark.parametrize("table, error", [
    ({"seed_claim": False}, "not_a_claim"),                    # no reason
    ({"seed_claim": False, "not_a_claim": "  "}, "not_a_claim"),
    ({"not_a_claim": "why"}, "not_a_claim"),                   # a seed claim has no reason
    ({"seed_claim": "no", "not_a_claim": "why"}, "seed_claim"),
])
def test_malformed_seed_claim_fields_are_rejected(table, error):
    with pytest.raises(ValueError, match=error):
        ledger._claim_spec("claims.toml", "F9", "framework",
                           {"statement": "s", "criterion": "c", "version": 1, **table})
    spec = ledger._claim_spec("claims.toml", "F9", "framework", {"statement": "s", "criterion": "c", "version": 1,
                                                                 "seed_claim": False, "not_a_claim": "why"})
    assert not spec.seed_claim and spec.not_a_claim == "why"


def _register_f97(seed_claim: bool, effect: float, control_effect: float, parts=None, control_parts=None):
    """A throw-away claim F97 whose criterion reproduces iff effect > 0, with one stored control."""
    spec = ClaimSpec("F97", "framework", "s", "c", seed_claim=seed_claim,
                     not_a_claim="" if seed_claim else "the seed states no such thing",
                     controls=(ControlSpec("null", "w", "y", "n"),))

    @ledger.register(spec)
    def _evaluate(results, scale):
        x = float(results["F97_x"]["effect"])
        p = results["F97_x"].get("parts")
        return Evaluation({"effect": x}, ledger.decide(reproduced=x > 0, refuted=x < 0), f"effect {x}",
                          power=[] if x else [ledger.PowerLine("effect", 1.0, 0.5, "n", 3, 12)],
                          parts={k: Status(v) for k, v in (p or {}).items()})
    ledger.register_control("F97", "null")(lambda r: ledger.stored_control(r, "null"))
    return {"F97_x": {"effect": effect, "parts": parts,
                      "controls": {"null": {"effect": control_effect, "parts": control_parts}},
                      "provenance": {"commit": "x"}}}


@pytest.fixture
def clean_f97():
    yield
    ledger._REGISTRY.pop("F97", None)
    for k in [k for k in ledger._CONTROLS if k[0] == "F97"]:
        ledger._CONTROLS.pop(k)


def test_a_proposition_the_seed_does_not_state_gets_no_verdict(clean_f97, tmp_path, render_report):
    e = make_entry("F97", _register_f97(False, 1.0, -1.0), scale="smoke")
    assert e["verdict"] == NOT_A_CLAIM and e["criterion_verdict"] is None and e["seed_claim"] is False
    assert e["measured"] == {"effect": 1.0} and e["parts"] == {} and e["power"] == []
    assert "not a claim of the seed" in e["reason"] and "the seed states no such thing" in e["reason"]
    c = e["controls"][0]
    assert c["verdict"] == NOT_A_CLAIM and not c["rejected"] and not c["holds"] and c["measured"] == {"effect": -1.0}
    assert e["stable"] is None and e["replicates"][0]["verdict"] == NOT_A_CLAIM
    json.dumps(e)
    assert ledger.check_controls(e) == [] and ledger.check_replicates(e) == []
    # the entry's own fields are consistent; tampering either way is caught
    assert ledger.integrity.check_seed_claim(e) == []
    assert ledger.integrity.check_seed_claim({**e, "verdict": "reproduced"})
    assert ledger.integrity.check_seed_claim({**e, "seed_claim": True})
    assert ledger.integrity.check_seed_claim({**e, "not_a_claim": ""})
    # the table and README cells label it and do not count it
    row = verdicts.summarise([e])[0]
    assert row["default (this run)"] == verdicts.NOT_A_CLAIM_CELL and row["control"] == "null: reported"
    assert ledger.table_rows([e])[0]["verdict"] == "no verdict (not a claim of the seed)"
    tex = render_report([e])
    assert "Of 0 claims" in tex and "reported: not a claim of the seed (no verdict)" in tex
    assert "Measured on the control" in tex and "Criterion on the control" not in tex
    assert "not counted" in tex and "F97" in tex
    table_tex = (tmp_path / "results" / "claims" / "claims_table.tex").read_text()
    assert "reported (1)" in table_tex and "fails" not in table_tex


def test_the_seed_claim_field_must_match_the_preregistration():
    # G1 is a seed claim: an entry that says otherwise (edited to drop it from the count) is flagged
    fake = {"id": "G1", "paper": "hazelden2026", "verdict": NOT_A_CLAIM, "criterion_verdict": None,
            "seed_claim": False, "not_a_claim": "edited"}
    assert any("pre-registration" in p for p in ledger.integrity.check_seed_claim(fake))
    fake = {"id": "G4", "paper": "hazelden2026", "verdict": "reproduced", "criterion_verdict": "reproduced"}
    assert any("pre-registration" in p for p in ledger.integrity.check_seed_claim(fake))
    fake = {"id": "G4", "paper": "hazelden2026", "verdict": NOT_A_CLAIM}
    assert any("does not say seed_claim = false" in p for p in ledger.integrity.check_seed_claim(fake))


def test_count_line_counts_only_the_seeds_claims():
    rows = [{"id": "H1", "default (this run)": "reproduced"},
            {"id": "F4", "default (this run)": "inconclusive (uninformative: holds in a control too)"},
            {"id": "G3", "default (this run)": "not reproduced"},
            {"id": "G4", "default (this run)": verdicts.NOT_A_CLAIM_CELL}]
    line = verdicts.count_line(rows)
    assert line.startswith("3 claims of the seeds: 1 reproduced, 1 not reproduced, 1 inconclusive.")
    assert "not counted" in line and line.endswith("G4.")


def test_readme_counts_19_claims(repo_root):
    text = (repo_root / "README.md").read_text()
    assert "19 claims of the seeds:" in verdicts.readme_section(text)
    rows = json.loads((repo_root / "docs" / "verdicts.json").read_text())["rows"]
    assert {r["id"] for r in rows if r["default (this run)"] == verdicts.NOT_A_CLAIM_CELL} == NOT_SEED_CLAIMS


# ------------------------------------------------------------------ a verdict must be able to fail
def test_a_control_on_which_every_judged_part_holds_caps_the_claim(clean_f97):
    """The criterion says not_reproduced on the control (an extra condition outside its parts), but every
    part the claim was judged by holds there too: the claim is uninformative, not reproduced."""
    res = _register_f97(True, 1.0, -1.0, parts={"a": "holds", "b": "holds"},
                        control_parts={"a": "holds", "b": "holds"})
    e = make_entry("F97", res, scale="smoke")
    assert e["criterion_verdict"] == "reproduced" and e["verdict"] == "inconclusive"
    assert "every judged part holds there" in e["reason"] and ledger.UNINFORMATIVE in e["reason"]
    assert ledger.check_controls(e) == []
    assert ledger.check_controls({**e, "verdict": "reproduced"})
    assert verdicts.summarise([e])[0]["default (this run)"].startswith("inconclusive (uninformative")


def test_a_control_that_fails_one_judged_part_leaves_the_claim_reproduced(clean_f97):
    res = _register_f97(True, 1.0, -1.0, parts={"a": "holds", "b": "holds"},
                        control_parts={"a": "holds", "b": "refuted"})
    e = make_entry("F97", res, scale="smoke")
    assert e["verdict"] == "reproduced" and ledger.check_controls(e) == []


def _real_and_control_split(cid):
    """Results for a stub of ``cid``'s criterion: the real run and each control marked apart."""
    spec = ledger.get_claim(cid)
    return {f"{cid}_stub": {"who": "real", "controls": {c.name: {"who": c.name} for c in spec.controls},
                            "provenance": {"commit": "x"}}}


@pytest.mark.parametrize("cid", sorted(ledger.registered_claims(), key=lambda c: ("HAGF".find(c[0]), int(c[1:]))))
def test_each_claim_judges_its_controls_by_the_same_parts(cid, monkeypatch):
    """A test per claim: every pre-registered control of the claim is judged by the claim's own criterion
    (the same function, so the same parts), and a ``reproduced`` never stands when every judged part also
    holds on a control -- whatever the criterion's overall verdict on that control."""
    spec = ledger.get_claim(cid)
    assert spec.controls, f"{cid}: no negative control"
    calls: list[str] = []

    def stub(results, scale, *, control_verdict):
        who = next(iter(results.values()))["who"]
        calls.append(who)
        parts = {"paper_quantity": Status.HOLDS, "second_part": Status.HOLDS}
        v = Verdict.REPRODUCED if who == "real" else control_verdict
        return Evaluation({"x": 1.0}, v, who, parts=parts,
                          power=[ledger.PowerLine("x", 1.0, 0.5, "n", 3, 12)])

    for name in [c.name for c in spec.controls]:
        monkeypatch.setitem(ledger._CONTROLS, (cid, name), lambda r, n=name: ledger.stored_control(r, n))
    for control_verdict in (Verdict.REPRODUCED, Verdict.NOT_REPRODUCED, Verdict.INCONCLUSIVE):
        calls.clear()
        fake = dataclasses.replace(spec, evaluate=lambda r, s, cv=control_verdict: stub(r, s, control_verdict=cv))
        monkeypatch.setitem(ledger._REGISTRY, cid, fake)
        e = make_entry(cid, _real_and_control_split(cid), scale="smoke")
        assert calls == ["real"] + [c.name for c in spec.controls]          # the same criterion on each control
        assert all(c["parts"] == e["parts"] or not spec.seed_claim for c in e["controls"])
        if spec.seed_claim:
            assert e["criterion_verdict"] == "reproduced" and e["verdict"] == "inconclusive", (cid, control_verdict)
            assert ledger.check_controls(e) == []
        else:
            assert e["verdict"] == NOT_A_CLAIM
