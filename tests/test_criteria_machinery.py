"""Shared criterion machinery (ntkrepro.stats decisions, tests, power lines; ledger amendments).

Every decision helper is checked in four directions: the relation holds, is refuted, is
undecided, and an underpowered wide interval around the target, which must never pass.
"""

import dataclasses
import datetime
import json
import tomllib

import numpy as np
import pytest

from ntkrepro import ledger, report
from ntkrepro.ledger import Amendment, ClaimSpec, Evaluation, Verdict, make_entry, verdict_of
from ntkrepro.stats import (Interval, Status, at_least, at_most, bootstrap_slope, combine, equivalence,
                            hierarchical_bootstrap, hierarchical_resample, paired_bootstrap, paired_test_power,
                            permutation_test, power_line, rel_frobenius, sign_test, slope_statistic, spearman,
                            spearman_ci)


# ------------------------------------------------------------------------- one-sided, equivalence
@pytest.mark.parametrize("iv, expected", [
    (Interval(0.3, 0.1, 0.5), Status.HOLDS),          # reproduces
    (Interval(-0.3, -0.5, -0.1), Status.REFUTED),     # refutes
    (Interval(0.05, -0.05, 0.15), Status.UNDECIDED),  # inconclusive
    (Interval(0.3, -2.0, 2.6), Status.UNDECIDED),     # underpowered: wide interval around a positive value
])
def test_at_least_four_directions(iv, expected):
    assert at_least(iv, 0.0) is expected


@pytest.mark.parametrize("iv, expected", [
    (Interval(-0.4, -0.6, -0.2), Status.HOLDS),       # falling is consistent with "does not grow"
    (Interval(0.5, 0.3, 0.7), Status.REFUTED),
    (Interval(0.05, -0.1, 0.2), Status.UNDECIDED),
    (Interval(0.0, -3.0, 3.0), Status.UNDECIDED),
])
def test_at_most_four_directions(iv, expected):
    assert at_most(iv, 0.1) is expected


@pytest.mark.parametrize("iv, expected", [
    (Interval(-0.5, -0.6, -0.4), Status.HOLDS),
    (Interval(-1.0, -1.2, -0.8), Status.REFUTED),
    (Interval(-0.6, -0.8, -0.5), Status.UNDECIDED),
    (Interval(-0.5, -2.0, 1.0), Status.UNDECIDED),    # contains -0.5 but wide: must not pass
])
def test_equivalence_four_directions(iv, expected):
    assert equivalence(iv, -0.65, -0.35) is expected


def test_refutation_margin_differs_from_holding_bound():
    # "A beats B by something": holds above 0, refuted only when below -0.01
    assert at_least(Interval(-0.005, -0.008, -0.002), 0.0, refute_below=-0.01) is Status.UNDECIDED
    assert at_least(Interval(-0.05, -0.08, -0.02), 0.0, refute_below=-0.01) is Status.REFUTED


def test_combine_and_verdict():
    assert combine([Status.HOLDS, "holds"]) is Status.HOLDS
    assert combine([Status.HOLDS, Status.UNDECIDED]) is Status.UNDECIDED
    assert combine([Status.HOLDS, Status.REFUTED, Status.UNDECIDED]) is Status.REFUTED
    assert combine([]) is Status.UNDECIDED
    assert verdict_of(Status.HOLDS) is Verdict.REPRODUCED
    assert verdict_of("refuted") is Verdict.NOT_REPRODUCED
    assert verdict_of(Status.UNDECIDED) is Verdict.INCONCLUSIVE


# ------------------------------------------------------------------------------------ power line
def test_power_line_scales_with_square_of_half_width_ratio():
    pl = power_line("slope", Interval(-0.5, -0.8, -0.2), [-0.65, -0.35], size=4, size_name="seeds")
    assert pl.half_width == pytest.approx(0.3) and pl.needed_half_width == pytest.approx(0.15)
    assert pl.needed == pytest.approx(16.0)          # (0.3 / 0.15)^2 x 4
    assert "seeds ~ 16" in pl.text()


def test_power_line_none_when_decided_and_inf_on_threshold():
    assert power_line("x", Interval(0.3, 0.1, 0.5), [0.0], size=5, size_name="n") is None
    pl = power_line("x", Interval(0.0, -0.1, 0.1), [0.0], size=5, size_name="n")
    assert not np.isfinite(pl.needed) and "no n decides" in pl.text()


@pytest.mark.parametrize("iv, size", [
    (Interval(-0.5, -0.8, -0.2), 4),        # decides at 16: named
    (Interval(-0.36, -0.37, -0.30), 40),    # 36x the run: refused
    (Interval(-0.351, -0.9, 0.2), 4),       # a huge extrapolation
    (Interval(-0.3, -0.6, -0.33), 400),
])
def test_a_power_line_never_names_a_size_at_or_below_the_run_nor_beyond_10x(iv, size):
    """Issue 28 item 4: a power line names a deciding size only in (size, 10 x size]; otherwise it
    says "needs a larger run to tell" and states the range."""
    import re
    from ntkrepro.stats import MAX_EXTRAPOLATION
    pl = power_line("slope", iv, [-0.65, -0.35], size=size, size_name="seeds")
    assert pl is not None
    named = re.findall(r"seeds ~ (\d+)", pl.text())
    if pl.named():
        assert named and size < int(named[0]) <= MAX_EXTRAPOLATION * size + 1
    else:
        assert not named and "needs a larger run to tell" in pl.text()
    for n in named:
        assert int(n) > size
    assert pl.as_dict()["named"] == pl.named()


def test_power_line_examples_named_and_refused():
    assert power_line("s", Interval(-0.5, -0.8, -0.2), [-0.65, -0.35], size=4, size_name="seeds").named()
    far = power_line("s", Interval(-0.351, -0.9, 0.2), [-0.65, -0.35], size=4, size_name="seeds")
    assert not far.named() and "beyond 10x" in far.text() and "measured at 4" in far.text()
    low = paired_test_power(np.array([0.5, 0.6, 0.4, 0.55, 0.45, 0.5, 0.52, 0.48]), "diff")
    assert low.needed < low.size and not low.named() and "needs a larger run to tell" in low.text()


def test_paired_test_power_matches_normal_formula():
    d = np.array([0.1, 0.3, -0.1, 0.2, 0.0, 0.1])
    pl = paired_test_power(d, "diff")
    z = 1.6448536269514722 + 0.8416212335729143
    assert pl.needed == pytest.approx((z * d.std(ddof=1) / d.mean()) ** 2)


# ------------------------------------------------------------------------- resampling and tests
def test_paired_bootstrap_rejects_unpaired_and_is_deterministic():
    with pytest.raises(ValueError, match="same units"):
        paired_bootstrap([1, 0, 1], [1, 0])
    a = paired_bootstrap([1, 1, 0, 1], [0, 1, 0, 0], seed=3)
    assert a == paired_bootstrap([1, 1, 0, 1], [0, 1, 0, 0], seed=3) and a.value == pytest.approx(0.5)


def test_hierarchical_resample_keeps_outer_units_together():
    y = np.arange(3 * 4 * 5, dtype=float).reshape(3, 4, 5)   # every value names its (x, outer) unit
    r = hierarchical_resample(y, np.random.default_rng(0))
    outer_of = y // 5
    assert r.shape == y.shape
    for i in range(3):
        for j in range(4):   # each resampled outer unit draws inner values from one original unit
            assert len(set((r[i, j] // 5).tolist())) == 1
            assert set((r[i, j] // 5).tolist()) <= set(outer_of[i].ravel().tolist())


def test_hierarchical_bootstrap_carries_teacher_variance():
    """With a large between-teacher spread, the hierarchical interval is wider than a seeds-only one."""
    rng = np.random.default_rng(1)
    x = np.array([4.0, 8.0, 16.0, 32.0])
    teacher = rng.normal(0, 0.5, size=(4, 5, 1))             # outer (teacher) effect per T
    y = np.exp(teacher + rng.normal(0, 0.05, size=(4, 5, 6)))  # no true trend in T
    stat = slope_statistic(x)
    h = hierarchical_bootstrap(y, stat, n_boot=400, seed=0)
    seeds_only = bootstrap_slope(x, y.reshape(4, 30), n_boot=400, seed=0, center=np.mean)  # teachers ignored
    assert h.high - h.low > 2 * (seeds_only.high - seeds_only.low)
    assert h.contains(0.0)


def test_sign_test_exact_p_values():
    t = sign_test([1, 2, 3, 4, 5, 6])            # 6 of 6 positive: p = 1/64
    assert t.p_greater == pytest.approx(1 / 64) and t.status is Status.HOLDS
    t = sign_test([-1, -2, -3, -4, -5, -6])
    assert t.p_less == pytest.approx(1 / 64) and t.status is Status.REFUTED
    assert sign_test([1, -1, 2, -2]).status is Status.UNDECIDED
    assert sign_test([1, 2, 3]).status is Status.UNDECIDED   # 3 units can never reach 0.05 (1/8)


def test_permutation_test_exact_and_underpowered():
    t = permutation_test([0.5, 0.4, 0.6, 0.3, 0.7])   # all positive: exact p = 1/32
    assert t.test == "permutation (exact)" and t.p_greater == pytest.approx(1 / 32)
    assert t.status is Status.HOLDS
    assert permutation_test([0.5, -0.4, 0.6, -0.3]).status is Status.UNDECIDED


def test_rel_frobenius_and_spearman():
    assert rel_frobenius(np.eye(2) * 1.1, np.eye(2)) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        rel_frobenius(np.eye(2), np.zeros((2, 2)))
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0) and spearman([1, 1], [2, 3]) == 0.0
    iv = spearman_ci(np.arange(20), np.arange(20) + np.random.default_rng(0).normal(0, 1, 20), n_boot=300)
    assert iv.low > 0.8


# ------------------------------------------------------------------------------ amendment log
_AMEND = Amendment("2026-12-02", "equivalence margin instead of 'CI contains target'",
                   "a wide interval could pass (CLAIMS.md rule 2)", {"default": "reproduced; slope -0.48 [-0.9, -0.1]"})


def test_claimspec_version_must_match_amendments():
    with pytest.raises(ValueError, match="amendment"):
        ClaimSpec("Z1", "framework", "s", "c", version=2)
    ClaimSpec("Z1", "framework", "s", "c", version=2, amendments=(_AMEND,))


def test_preregistration_files_are_well_formed_and_are_every_registered_claim(repo_root):
    specs = ledger.registered_claims()
    for paper in ledger.PAPERS:
        pre = ledger.preregistration(paper)
        assert pre, f"{paper} pre-registers no claim ({ledger.PREREGISTRATION_FILE})"
        for cid, spec in pre.items():
            assert cid in specs, f"{paper} pre-registers {cid}, which no criterion function registers"
            assert spec.paper == paper and spec.statement.strip() and spec.criterion.strip()
            assert spec.version == 1 + len(spec.amendments)
            for a in spec.amendments:
                assert datetime.date.fromisoformat(a.date).isoformat() == a.date
                assert a.change.strip() and a.why.strip()
                assert a.previous and all(k.strip() and v.strip() for k, v in a.previous.items())
    for cid, spec in specs.items():
        pre = ledger.load_claim_spec(spec.paper, cid)
        assert spec.evaluate is not None and dataclasses.replace(spec, evaluate=None) == pre, cid
    # the files are package data, so an installed ntkrepro reads them too
    pyproject = tomllib.loads((repo_root / "pyproject.toml").read_text())
    assert ledger.PREREGISTRATION_FILE in pyproject["tool"]["setuptools"]["package-data"]["*"]
    with pytest.raises(KeyError, match="not pre-registered"):
        ledger.load_claim_spec("framework", "F99")


def test_every_control_says_why_it_is_the_nearest_false_alternative():
    """Issue 28 / CLAIMS.md rule 7: each pre-registered control states why it is the nearest false
    alternative, or (starting "No near miss exists" / "No measured near miss exists") why none is."""
    for paper in ledger.PAPERS:
        for cid, spec in ledger.preregistration(paper).items():
            assert spec.controls, cid
            for c in spec.controls:
                assert len(c.why_nearest.strip()) > 80, (cid, c.name)


_OK = {"date": "2026-12-02", "change": "c", "why": "w"}


@pytest.mark.parametrize("entry, error", [
    ({**_OK, "date": "2026-12-2"}, "ISO date"),
    ({**_OK, "date": "20261202"}, "ISO date"),
    ({"change": "c", "why": "w"}, "keys"),
    ({**_OK, "verdict": "x"}, "keys"),
    ({**_OK, "change": " "}, "change"),
    ({**_OK, "why": ""}, "why"),
    ({**_OK, "previous": {"default": ""}}, "previous"),
])
def test_malformed_amendments_are_rejected(entry, error):
    with pytest.raises(ValueError, match=error):
        ledger._amendment("log", entry)
    assert ledger._amendment("log", _OK) == Amendment("2026-12-02", "c", "w")


@pytest.mark.parametrize("table, error", [
    ({"statement": "s", "criterion": "c"}, "keys"),
    ({"statement": "s", "criterion": "c", "version": 1, "owner": "x"}, "keys"),
    ({"statement": "", "criterion": "c", "version": 1}, "statement"),
    ({"statement": "s", "criterion": "c", "version": "2"}, "version"),
    ({"statement": "s", "criterion": "c", "version": 2}, "amendment"),           # version 2, no amendment
    ({"statement": "s", "criterion": "c", "version": 1, "amendments": [_OK]}, "amendment"),
])
def test_malformed_preregistered_claims_are_rejected(table, error):
    with pytest.raises(ValueError, match=error):
        ledger._claim_spec("claims.toml", "F9", "framework", table)
    spec = ledger._claim_spec("claims.toml", "F9", "framework",
                              {"statement": "s", "criterion": "c", "version": 2, "amendments": [_OK]})
    assert spec == ClaimSpec("F9", "framework", "s", "c", version=2, amendments=(Amendment(**_OK),))


def test_amendment_and_power_appear_in_entry_table_and_report(tmp_path, monkeypatch, repo_root):
    spec = ClaimSpec("F99", "framework", "a statement", "a criterion", version=2, amendments=(_AMEND,))
    iv = Interval(-0.5, -0.8, -0.2)

    @ledger.register(spec)
    def _evaluate(results, scale):
        pl = power_line("slope", iv, [-0.65, -0.35], size=3, size_name="seeds")
        return Evaluation({"slope": iv}, verdict_of(equivalence(iv, -0.65, -0.35)), "wide", power=[pl],
                          parts={"slope": equivalence(iv, -0.65, -0.35)})

    try:
        e = make_entry("F99", {}, scale="smoke")
    finally:
        ledger._REGISTRY.pop("F99")
    assert e["verdict"] == "inconclusive" and e["criterion_version"] == 2
    assert e["amendments"][0]["previous"]["default"].startswith("reproduced")
    assert e["power"][0]["needed"] > 3 and e["parts"] == {"slope": "undecided"}
    json.dumps(e)
    claims = tmp_path / "results" / "claims"
    claims.mkdir(parents=True)
    ledger.write_table([e], claims / "t.csv", claims / "t.md", claims / "claims_table.tex")
    md, details = (claims / "t.md").read_text(), (claims / "t_details.md").read_text()
    assert "v2 (amended 1x after results were seen)" in details and "seeds ~" in details
    assert all(len(line) < 200 for line in md.splitlines())   # one short line per claim (issue 31)
    monkeypatch.chdir(repo_root)
    tex = report.render(repo_root / "paper" / "replication_report.tex.j2", [e], {}, claims / "claims_table.tex",
                        "smoke", tmp_path / "results" / "paper")
    assert "Criterion amended after results were seen" in tex and "Under the previous criterion" in tex
    assert "Power (what would decide it)" in tex and "version 2" in tex


def test_check_flags_inconclusive_without_power(tmp_path):
    base = {"id": "F99", "paper": "framework", "statement": "s", "criterion": "c", "criterion_version": 1,
            "amendments": [], "measured": {"x": 1.0}, "scale": "smoke", "provenance": {}, "stable": None}
    rep0 = lambda v: [{"replicate": 0, "verdict": v, "archives": {}}]  # noqa: E731 -- replicate 0 alone
    (tmp_path / "F99.json").write_text(json.dumps({**base, "verdict": "inconclusive", "power": [],
                                                   "replicates": rep0("inconclusive")}))
    assert ledger.check(tmp_path, ["F99"]) == ["F99: inconclusive without a power line", "F99: no negative control"]
    ctrl = [{"name": "null", "verdict": "not_reproduced", "rejected": True}]
    (tmp_path / "F99.json").write_text(json.dumps({**base, "verdict": "reproduced", "power": [], "controls": ctrl,
                                                   "replicates": rep0("reproduced")}))
    assert ledger.check(tmp_path, ["F99"]) == []


# ------------------------------------------------------------------------------ negative controls
def _claim_with_controls(controls, stored):
    """A throw-away claim F98 whose criterion reproduces iff results["F98_x"]["effect"] > 0 and is
    refuted iff < 0 (undecided at 0), with the given pre-registered controls."""
    spec = ClaimSpec("F98", "framework", "s", "c", controls=tuple(ledger.ControlSpec(n, "w", "y") for n in controls))

    @ledger.register(spec)
    def _evaluate(results, scale):
        x = float(results["F98_x"]["effect"])
        v = ledger.decide(reproduced=x > 0, refuted=x < 0)
        return Evaluation({"effect": x}, v, f"effect {x}", power=[] if x else [
            ledger.PowerLine("effect", 1.0, 0.5, "n", 3, 12)])
    for n in controls:
        ledger.register_control("F98", n)(lambda r, n=n: ledger.stored_control(r, n))
    return {"F98_x": {"effect": 1.0, "controls": stored, "provenance": {"commit": "x"}}}


@pytest.fixture
def clean_f98():
    yield
    ledger._REGISTRY.pop("F98", None)
    for k in [k for k in ledger._CONTROLS if k[0] == "F98"]:
        ledger._CONTROLS.pop(k)


def test_reproduced_needs_every_control_rejected(clean_f98):
    res = _claim_with_controls(["null", "shuffled"], {"null": {"effect": -1.0}, "shuffled": {"effect": -0.5}})
    e = make_entry("F98", res, scale="smoke")
    assert e["verdict"] == "reproduced" == e["criterion_verdict"]
    assert [(c["name"], c["verdict"], c["rejected"]) for c in e["controls"]] == [
        ("null", "not_reproduced", True), ("shuffled", "not_reproduced", True)]
    assert e["controls"][0]["why_fails"] == "y" and e["controls"][0]["measured"] == {"effect": -1.0}
    assert ledger.check_controls(e) == []
    assert ledger.control_text(e) == "null: not_reproduced; shuffled: not_reproduced"


def test_an_undecided_control_does_not_cap_the_claim(clean_f98):
    """Rule 7 (issue 28): ``reproduced`` needs every control *not reproduced*; an inconclusive
    control (a near miss the run cannot tell apart either way) does not cap the claim."""
    res = _claim_with_controls(["null", "shuffled"], {"null": {"effect": -1.0}, "shuffled": {"effect": 0.0}})
    e = make_entry("F98", res, scale="smoke")
    assert e["verdict"] == "reproduced" == e["criterion_verdict"]
    assert [c["verdict"] for c in e["controls"]] == ["not_reproduced", "inconclusive"]
    assert ledger.check_controls(e) == []


def test_a_control_that_passes_too_makes_the_claim_uninformative(clean_f98, tmp_path, repo_root, monkeypatch):
    res = _claim_with_controls(["null", "shuffled"], {"null": {"effect": -1.0}, "shuffled": {"effect": 2.0}})
    e = make_entry("F98", res, scale="smoke")
    assert e["criterion_verdict"] == "reproduced" and e["verdict"] == "inconclusive"
    assert "holds in 'shuffled' too" in e["reason"] and "uninformative at this scale" in e["reason"]
    assert e["controls"][1]["holds"] and not e["controls"][0]["holds"]
    assert e["power"][-1]["quantity"] == "negative control" and e["power"][-1]["needed"] == float("inf")
    assert ledger.check_controls(e) == []     # consistent: capped, not reproduced
    bad = {**e, "verdict": "reproduced"}
    assert "reproduced although a control passes the criterion too" in ledger.check_controls(bad)[0]
    json.dumps(e)
    claims = tmp_path / "results" / "claims"
    claims.mkdir(parents=True)
    ledger.write_table([e], claims / "t.csv", claims / "t.md", claims / "claims_table.tex")
    assert "HOLDS in 1 of 2" in (claims / "claims_table.tex").read_text()
    assert "shuffled: reproduced" in (claims / "t.md").read_text()
    monkeypatch.chdir(repo_root)
    tex = report.render(repo_root / "paper" / "replication_report.tex.j2", [e], {}, claims / "claims_table.tex",
                        "smoke", tmp_path / "results" / "paper")
    assert "Negative controls" in tex and "HOLDS in the control too: uninformative" in tex


def test_a_claim_without_control_is_capped_and_refutations_pass_unchanged(clean_f98):
    res = _claim_with_controls([], {})
    e = make_entry("F98", res, scale="smoke")
    assert e["verdict"] == "inconclusive" and "no negative control" in e["reason"]
    assert ledger.check_controls(e) == ["F98: no negative control"]
    v, reason, cap = ledger.apply_control_rule(Verdict.NOT_REPRODUCED, "r", [])
    assert (v, reason, cap) == (Verdict.NOT_REPRODUCED, "r", None)


def test_missing_control_function_or_payload_is_a_clear_error(clean_f98):
    spec = ClaimSpec("F98", "framework", "s", "c", controls=(ledger.ControlSpec("null", "w", "y"),))
    ledger.register(spec)(lambda r, s: Evaluation({}, Verdict.REPRODUCED, "r"))
    with pytest.raises(KeyError, match=r"control 'null' is pre-registered but no function"):
        make_entry("F98", {"F98_x": {}}, scale="smoke")
    ledger.register_control("F98", "null")(lambda r: ledger.stored_control(r, "null"))
    with pytest.raises(KeyError, match="no results file stores control 'null'"):
        make_entry("F98", {"F98_x": {}}, scale="smoke")


@pytest.mark.parametrize("controls, error", [
    ([{"name": "x", "what": "w"}], "keys"),
    ([{"name": "x", "what": "w", "why_fails": "y"}], "keys"),          # why_nearest is required (issue 28)
    ([{"name": "Bad Name", "what": "w", "why_fails": "y", "why_nearest": "n"}], "identifier"),
    ([{"name": "x", "what": "w", "why_fails": "y", "why_nearest": "n"}] * 2, "repeat"),
    ({"name": "x"}, "controls must be"),
])
def test_malformed_controls_are_rejected(controls, error):
    with pytest.raises(ValueError, match=error):
        ledger._claim_spec("claims.toml", "F9", "framework",
                           {"statement": "s", "criterion": "c", "version": 1, "controls": controls})


def test_every_preregistered_claim_has_a_registered_control():
    """Issue 21: every claim's criterion is shown able to fail on at least one negative control."""
    missing = []
    for cid, spec in ledger.registered_claims().items():
        if not spec.controls:
            missing.append(f"{cid}: no [[{cid}.controls]] in claims.toml")
        for c in spec.controls:
            try:
                ledger.control_function(cid, c.name)
            except KeyError as err:
                missing.append(str(err))
    assert not missing, "\n".join(missing)


# ---- issue 31 item 2: the stored-control registration folded into the ledger ----------------------------
def test_stored_control_keeps_params_only_when_asked_and_never_over_the_payloads():
    res = {"F98_x": {"params": {"n_boot": 7}, "provenance": {"commit": "x"},
                     "controls": {"null": {"effect": -1.0}, "own": {"effect": 2.0, "params": {"n_boot": 3}}}},
           "F98_y": {"params": {"n_boot": 9}, "other": 1}}
    plain = ledger.stored_control(res, "null")
    assert plain["F98_x"] == {"effect": -1.0, "provenance": {"commit": "x"}}
    assert plain["F98_y"] is res["F98_y"]  # a file without the control passes unchanged
    kept = ledger.stored_control(res, "null", keep_params=True)
    assert kept["F98_x"] == {"effect": -1.0, "provenance": {"commit": "x"}, "params": {"n_boot": 7}}
    assert kept["F98_y"] is res["F98_y"]
    assert ledger.stored_control(res, "own", keep_params=True)["F98_x"]["params"] == {"n_boot": 3}


def test_register_stored_control_registers_one_function_per_control(clean_f98):
    res = {"F98_x": {"params": {"p": 1}, "provenance": None, "controls": {"null": {"effect": -1.0}}}}
    plain = ledger.register_stored_control("F98", "null")
    kept = ledger.register_stored_control("F98", "kept", keep_params=True)
    assert ledger._CONTROLS[("F98", "null")] is plain and ledger._CONTROLS[("F98", "kept")] is kept
    assert plain(res) == {"F98_x": {"effect": -1.0, "provenance": None}}
    with pytest.raises(KeyError, match="no results file stores control 'kept'"):
        kept(res)
    res["F98_x"]["controls"]["kept"] = {"effect": 0.5}
    assert kept(res)["F98_x"] == {"effect": 0.5, "provenance": None, "params": {"p": 1}}
    assert plain.__name__ == "stored_control_f98_null" and "'null'" in plain.__doc__
    with pytest.raises(ValueError, match="registered twice"):
        ledger.register_stored_control("F98", "null")  # a second function for the same control
