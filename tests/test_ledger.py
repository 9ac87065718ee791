import json

import pytest

from ntkrepro import ledger
from ntkrepro.ledger import Verdict, decide, make_entry, write_table, check
from ntkrepro.stats import Interval


def test_decide_refuted_wins():
    assert decide(reproduced=True, refuted=True) is Verdict.NOT_REPRODUCED
    assert decide(reproduced=True, refuted=False) is Verdict.REPRODUCED
    assert decide(reproduced=False, refuted=False) is Verdict.INCONCLUSIVE


def test_every_registered_claim_has_text_and_a_known_paper():
    claims = ledger.registered_claims()
    assert {"H1", "H2"} <= set(claims)
    for cid, spec in claims.items():
        assert spec.paper in ledger.PAPERS and spec.statement and spec.criterion and spec.evaluate
        assert ledger.CLAIM_MODULES[cid[0]].startswith(f"ntkrepro.{spec.paper}")


def test_unknown_claim_is_a_clear_error():
    with pytest.raises(KeyError, match="prefix"):
        ledger.get_claim("Z9")


def _fake_h2_rows(slope_spread, slope_dist, last):
    rows = []
    for d in [4, 16, 64, 256, 1024]:
        s = 0.5 * (d / 4) ** slope_spread
        n = 0.05 * (d / 4) ** slope_dist
        rows.append({"d": d, "spread": Interval(s, s * 0.9, s * 1.1).as_dict(),
                     "nngp_distance": Interval(n, n * 0.9, n * 1.1).as_dict()})
    rows[-1]["nngp_distance"] = Interval(last, last * 0.9, last * 1.1).as_dict()
    return rows


def _fake_h2(slope_spread, slope_dist, last=0.01, control_slope=0.02):
    """Fake H2 results with its negative control ``sqrt_scaling`` (d^-1/2 logits): spread and distance
    with log-log slope ``control_slope`` (about 0: no collapse, which the criterion rejects; not exactly 0,
    where a noiseless fit has no interval)."""
    base = {"n_draws": 10, "n_inputs": 2, "seq_len": 4, "d_in": 8, "tied_linear_scaling_distance": 0.1}
    control = {**base, "per_d": _fake_h2_rows(control_slope, control_slope, 0.05 * 256 ** control_slope)}
    return {"H2_average_pooling": {**base, "per_d": _fake_h2_rows(slope_spread, slope_dist, last), "provenance": {},
                                   "controls": {"sqrt_scaling": control}}}


def test_make_entry_has_required_keys_and_is_json():
    e = make_entry("H2", _fake_h2(-0.5, -0.5, last=0.003), scale="smoke", figures=["f.png"])
    for key in ("id", "paper", "statement", "criterion", "measured", "verdict", "scale", "provenance",
                "substitutes", "data", "figures"):
        assert key in e
    assert e["verdict"] == "reproduced" and e["criterion_verdict"] == "reproduced"
    assert [(c["name"], c["verdict"], c["rejected"]) for c in e["controls"]] == [
        ("sqrt_scaling", "not_reproduced", True)]
    json.dumps(e)
    # the same fake whose control collapses too: the criterion does not reject it, the claim is capped
    capped = make_entry("H2", _fake_h2(-0.5, -0.5, last=0.003, control_slope=-0.5), scale="smoke")
    assert capped["criterion_verdict"] == "reproduced" and capped["verdict"] == "inconclusive"


def test_table_and_check(tmp_path):
    e = make_entry("H2", _fake_h2(-0.5, -0.5, last=0.003), scale="smoke")
    (tmp_path / "H2.json").write_text(json.dumps(e))
    write_table([e], tmp_path / "t.csv", tmp_path / "t.md", tmp_path / "t.tex")
    assert "H2" in (tmp_path / "t.md").read_text() and "rowcolor" in (tmp_path / "t.tex").read_text()
    assert check(tmp_path, ["H2"]) == []
    assert check(tmp_path, ["H2", "H1"]) == [f"H1: no ledger entry at {tmp_path / 'H1.json'}"]


def test_tex_escape():
    assert ledger._tex_escape("a_b & 50% $x$", breaks=False) == r"a\_b \& 50\% \$x\$"
    # in cells and text a line may break after "_" and "/" (long identifiers overflowed the table)
    assert ledger._tex_escape("a_b/c & 50%") == r"a\_\allowbreak{}b/\allowbreak{}c \& 50\%"


def test_sign_status():
    from ntkrepro.ledger import sign_status

    assert sign_status(Interval(0.2, 0.1, 0.3)) == "holds"
    assert sign_status(Interval(-0.2, -0.3, -0.1)) == "refuted"
    assert sign_status(Interval(0.0, -0.1, 0.1)) == "undecided"
