"""H5's decisive tier (issue 29 item 2; config/decisive.yaml H5, ntkrepro.hron2020.finite_nets.run_h5_cell):
the pre-stated size, (seed, LayerNorm) cells that assemble into run_h5's results and are judged by H5's
current criterion exactly as the default path, and stale / hand-edited / incomplete H5 archives."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from ntkrepro import decisive, ledger
from ntkrepro.hron2020 import finite_nets as h5
from ntkrepro.io import SEAL_KEY, TamperedFileError, read_json, seal, to_jsonable, write_json
from ntkrepro.run import RunContext, execute

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared" / "data"
DATA = {"root": str(SHARED), "archive": "cifar-10-python-subset.tar.gz",
        "sha256": "5a851443c8aa3ac5f03e321688fcdcc6bfe88afb73aed1de7be00c509e5389d8", "download": False}
needs_data = pytest.mark.skipif(not (SHARED / DATA["archive"]).exists(), reason="offline CIFAR-10 subset missing")


def _plan_h5():
    return decisive.load_plan(ROOT / "config/decisive.yaml")["claims"]["H5"]


def test_h5_plan_is_the_default_run_at_the_learning_curves_epochs():
    h = _plan_h5()
    s = h["section"]
    cfg = yaml.safe_load((ROOT / "config/default.yaml").read_text())
    for k, v in cfg["hron2020"]["H5"].items():
        if k != "epochs":
            assert s[k] == v, k
    assert s["data"] == {"root": cfg["data"]["root"], **cfg["data"]["cifar10"]}  # as the H5 rule passes it
    assert 150 <= s["epochs"] <= 250 and s["epochs"] == 250 and len(s["seeds"]) >= 5
    assert h["scale"] == "default" and h["status"] == "run"
    assert s["lns"] == list(range(len(s["layer_norms"])))
    names = [c["name"] for c in decisive.cells(h)]
    assert len(names) == 15 and names[:2] == ["seed00_ln0", "seed00_ln1"]


TINY = {"image_size": 4, "n_train": 100, "n_val": 50, "d_model": 8, "n_heads": 2, "n_pos_emb": 4, "epochs": 3,
        "batch_size": 50, "learning_rate": 1e-3, "mechanisms": ["softmax", "relu", "identity"],
        "layer_norms": ["none", "per_head", "output"], "seeds": [0, 1], "n_control_runs": 1, "curve_val": 20,
        "lns": [0, 1, 2], "data": DATA}


def _spec(**kw):
    spec = copy.deepcopy(_plan_h5())
    spec["section"] = copy.deepcopy({**TINY, **kw})
    return spec


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Six tiny cells through ntkrepro.run (sealed, as `snakemake decide` writes them) and run_h5 on the
    same section (the default path)."""
    if not (SHARED / DATA["archive"]).exists():
        pytest.skip("offline CIFAR-10 subset missing")
    arch = tmp_path_factory.mktemp("h5") / "archive"
    spec = _spec()
    for c in decisive.cells(spec):
        execute(spec["cell_function"], decisive.cell_params(spec, c), decisive.cell_path(arch, "H5", c["name"]),
                scale="decisive")
    ref = h5.run_h5({k: v for k, v in TINY.items() if k != "lns"}, RunContext(scale="default"))
    return arch, ref


def _copy(arch, tmp_path):
    dst = tmp_path / "archive"
    shutil.copytree(arch, dst)
    return dst


@needs_data
def test_h5_cells_are_run_h5_and_judged_like_the_default_path(tiny):
    arch, ref = tiny
    spec = _spec()
    cell = read_json(decisive.cell_path(arch, "H5", "seed00_ln2"))
    assert cell["cell"] == {"seed": 0, "ln": 2, "layer_norm": "output"} and len(cell["runs"]) == 3
    assert len(cell["control_runs"]) == 3  # the first seed carries the permuted-label control
    assert read_json(decisive.cell_path(arch, "H5", "seed01_ln0"))["control_runs"] == []
    assert cell["compute_code"] == decisive.compute_code_hash("H5") and cell["cpu_seconds"] > 0
    # the cells assembled = run_h5's results, run for run (same data, run seeds, control permutation)
    agg = h5.aggregate_h5({**TINY, "shard_files": [str(p) for p in decisive.archived_cells(arch, "H5")]},
                          RunContext(scale="default"))
    assert json.loads(json.dumps(agg)) == json.loads(json.dumps(ref))
    rec = decisive.judge("H5", spec, arch)
    assert rec["state"] == decisive.COMPLETE and rec["cells_archived"] == 6
    ev = ledger.make_evaluation("H5", {"H5_finite_attention": {**ref, "params": TINY}}, scale="default")
    ev, got = json.loads(json.dumps(ev)), json.loads(json.dumps(rec["evaluation"]))
    assert got["measured"] == ev["measured"] and got["reason"] == ev["reason"]
    assert got["verdict"] == ev["verdict"] == rec["verdict"]
    assert [c["verdict"] for c in got["controls"]] == [c["verdict"] for c in ev["controls"]] and got["controls"]


@needs_data
def test_h5_stale_and_hand_edited_cells(tiny, tmp_path):
    arch = _copy(tiny[0], tmp_path)
    spec = _spec()
    rec = decisive.judge("H5", spec, arch, code_hash="0" * 64)
    assert rec["state"] == decisive.STALE and rec["verdict"] is None and len(rec["cells_stale"]) == 6
    p = decisive.cell_path(arch, "H5", "seed01_ln1")
    data = read_json(p)
    data["runs"][2]["val_accuracy"] = 0.99  # identity + per-head LN "wins", typed in
    write_json(p, data)
    with pytest.raises(TamperedFileError, match="seed01_ln1"):
        decisive.judge("H5", spec, arch)


def _reseal(p, edit):
    d = read_json(p)
    edit(d)
    del d["provenance"][SEAL_KEY]
    write_json(p, seal(to_jsonable(d)))


@needs_data
def test_h5_cell_from_another_data_folder_is_accepted_another_archive_is_not(tiny, tmp_path):
    """A GPU machine keeps the shared data elsewhere: the data section's root is not part of the plan's size,
    the archive's name and sha256 are."""
    arch = _copy(tiny[0], tmp_path)
    p = decisive.cell_path(arch, "H5", "seed01_ln2")
    _reseal(p, lambda d: d["params"]["data"].update(root="/elsewhere/shared/data"))
    assert decisive.judge("H5", _spec(), arch)["state"] == decisive.COMPLETE
    _reseal(p, lambda d: d["params"]["data"].update(sha256="0" * 64))
    with pytest.raises(decisive.ArchiveError, match="data"):
        decisive.judge("H5", _spec(), arch)


@needs_data
def test_h5_incomplete_archive_without_the_control_seed_draws_no_verdict(tiny, tmp_path):
    """Three seeds planned, seed 0 (the control's) incomplete: the complete seeds 1, 2 lack the control,
    so no partial verdict is drawn (and the judge does not fail)."""
    arch = _copy(tiny[0], tmp_path)
    spec = _spec(seeds=[0, 1, 2])
    for ln in range(3):  # a third seed: seed 1's cells relabelled (sealed again; the data is synthetic here)
        d = read_json(decisive.cell_path(arch, "H5", f"seed01_ln{ln}"))
        for r in d["runs"]:
            r["seed"] = 2
        d["cell"]["seed"] = d["params"]["seed"] = 2
        del d["provenance"][SEAL_KEY]
        write_json(decisive.cell_path(arch, "H5", f"seed02_ln{ln}"), seal(to_jsonable(d)))
    for name in [f"seed{s:02d}_ln{ln}" for s in (0, 1, 2) for ln in range(3)]:  # every cell of the 3-seed plan
        p = decisive.cell_path(arch, "H5", name)
        d = read_json(p)
        d["params"]["seeds"] = [0, 1, 2]
        del d["provenance"][SEAL_KEY]
        write_json(p, seal(to_jsonable(d)))
    decisive.cell_path(arch, "H5", "seed00_ln1").unlink()
    rec = decisive.judge("H5", spec, arch)
    assert rec["state"] == decisive.INCOMPLETE and rec["verdict"] == "inconclusive" and rec["partial"] is None
    assert rec["groups_complete"] == {"seed": [1, 2]} and "no partial verdict" in rec["reason"]
    assert "permuted_labels" in rec["reason"]


def test_h5_cell_and_aggregate_refuse_bad_input(tmp_path):
    with pytest.raises(ValueError, match="not one of the plan's seeds"):
        h5.h5_cell_runs(TINY, 7, "none")
    with pytest.raises(ValueError, match="LayerNorm"):
        h5.h5_cell_runs(TINY, 0, "pre")
    with pytest.raises(ValueError, match="index into layer_norms"):
        h5.run_h5_cell({**TINY, "seed": 0, "ln": 3}, RunContext(scale="smoke"))
    base = {"mechanisms": ["softmax"], "layer_norms": ["none", "output"], "epochs": 3}
    run = lambda ln, s: {"mechanism": "softmax", "layer_norm": ln, "seed": s}  # noqa: E731
    write_json(tmp_path / "a.json", {"base": base, "runs": [run("none", 0), run("output", 0)], "control_runs": []})
    write_json(tmp_path / "b.json", {"base": base, "runs": [run("none", 1)], "control_runs": []})
    with pytest.raises(ValueError, match="exactly once"):
        h5.aggregate_h5({"shard_files": [str(tmp_path / "a.json"), str(tmp_path / "b.json")]},
                        RunContext(scale="smoke"))
    write_json(tmp_path / "b.json", {"base": {**base, "epochs": 250}, "runs": [run("none", 1), run("output", 1)],
                                     "control_runs": []})
    with pytest.raises(ValueError, match="epochs"):
        h5.aggregate_h5({"shard_files": [str(tmp_path / "a.json"), str(tmp_path / "b.json")]},
                        RunContext(scale="smoke"))


def test_h5n_plan_is_the_first_plan_at_ten_times_the_images(tmp_path):
    """Issue 37 item 5: H5's second plan (config/decisive.yaml ``H5.n``) changes only the training images (10,000
    from the 20k subset), the epochs (60) and the cell function (the first one wrapped, recorded as plan H5.n with
    its own compute-code hash, so H5's archived cells stay current); its cells verify and judge under H5.n."""
    plan = decisive.load_plan(ROOT / "config" / "decisive.yaml")
    first, second = plan["claims"]["H5"], plan["claims"]["H5.n"]
    diff = {k for k in first["section"] if first["section"][k] != second["section"].get(k)}
    assert diff == {"n_train", "epochs", "data"} and second["section"]["n_train"] == 10000
    assert second["section"]["data"]["archive"] == "cifar-10-python-subset-20k.tar.gz"
    assert second["cell_function"].endswith(":run_h5n_cell") and second["aggregate_function"] == first[
        "aggregate_function"]
    assert decisive.compute_code_hash("H5.n") != decisive.compute_code_hash("H5")
    if not (SHARED / DATA["archive"]).exists():
        pytest.skip("offline CIFAR-10 subset missing")
    spec = {**copy.deepcopy(second), "section": {**TINY, "seeds": [0], "lns": [0]}}
    arch = tmp_path / "archive"
    for c in decisive.cells(spec):
        execute(spec["cell_function"], decisive.cell_params(spec, c), decisive.cell_path(arch, "H5.n", c["name"]),
                scale="decisive")
    (p,) = decisive.archived_cells(arch, "H5.n")
    cell = read_json(p)
    assert cell["plan"] == "H5.n" and cell["claim"] == "H5"
    assert cell["compute_code"] == decisive.compute_code_hash("H5.n")
    assert not decisive.verify_cell(p, "H5.n", code_hash=decisive.compute_code_hash("H5.n"))["stale"]
