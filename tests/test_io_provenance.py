import json
import sys

import numpy as np
import pytest

from ntkrepro import provenance
from ntkrepro.io import atomic_path, canonical_hash, read_json, read_npz, sha256_file, write_json, write_npz


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    dest = tmp_path / "out.json"
    with pytest.raises(RuntimeError):
        with atomic_path(dest) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("boom")
    assert not dest.exists()
    assert list(tmp_path.iterdir()) == []


def test_json_roundtrip_numpy(tmp_path):
    write_json(tmp_path / "a.json", {"x": np.float32(1.5), "v": np.arange(3), "nested": {"k": np.int64(2)}})
    assert read_json(tmp_path / "a.json") == {"x": 1.5, "v": [0, 1, 2], "nested": {"k": 2}}


def test_npz_roundtrip_with_provenance_and_no_pickle(tmp_path):
    write_npz(tmp_path / "a.npz", {"k": np.eye(2)}, provenance={"git": {"commit": "x"}})
    arrays, prov = read_npz(tmp_path / "a.npz")
    np.testing.assert_array_equal(arrays["k"], np.eye(2))
    assert {k: v for k, v in prov.items() if k != "content_sha256"} == {"git": {"commit": "x"}}
    assert len(prov["content_sha256"]) == 64  # sealed (issue 32)


def test_canonical_hash_ignores_key_order():
    assert canonical_hash({"a": 1, "b": [1, 2]}) == canonical_hash({"b": [1, 2], "a": 1})
    assert canonical_hash({"a": 1}) != canonical_hash({"a": 2})


def test_provenance_has_required_fields(tmp_path):
    f = tmp_path / "data.bin"
    f.write_bytes(b"abc")
    rec = provenance.collect(config_hash="h", section={"n": 1}, scale="smoke", data=[f])
    for key in ("git", "config_hash", "section_hash", "packages", "device", "data", "created_utc"):
        assert key in rec
    assert rec["git"]["commit"] is None or len(rec["git"]["commit"]) == 40
    assert rec["data"][str(f)] == sha256_file(f) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    from importlib.metadata import version

    assert rec["packages"]["jax"] == version("jax") and rec["packages"]["neural-tangents"] == version("neural-tangents")
    json.dumps(rec)


def test_cpu_description_names_the_model_and_the_vector_extensions(tmp_path):
    # a two-processor /proc/cpuinfo, generated: the first processor's model and flags are recorded
    text = ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU @ 2.60GHz\n"
            "flags\t\t: fpu sse2 avx2 fma avx512f amx_tile avx512_bf16\n\n"
            "processor\t: 1\nmodel name\t: Other CPU\nflags\t\t: fpu\n")
    parsed = provenance.parse_cpuinfo(text)
    assert parsed == {"cpu_model": "Test CPU @ 2.60GHz", "cpu_features": ["avx2", "fma", "avx512f", "avx512_bf16",
                                                                          "amx_tile"]}
    assert provenance.parse_cpuinfo("") == {}
    f = tmp_path / "cpuinfo"
    f.write_text(text)
    rec = provenance.cpu_description(f)
    assert rec["cpu_model"] == "Test CPU @ 2.60GHz" and rec["cpu_count"] >= 1
    # no /proc/cpuinfo (macOS): the platform's name, never an error
    assert provenance.cpu_description(tmp_path / "absent")["cpu_model"]
    # every provenance record carries the CPU it ran on
    dev = provenance.collect(scale="smoke")["device"]
    assert {"cpu", "cpu_model", "cpu_count"} <= set(dev)


def test_atomic_outputs_have_ordinary_permissions(tmp_path):
    import os
    import stat

    write_json(tmp_path / "p.json", {"a": 1})
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "p.json").stat().st_mode) == 0o666 & ~umask


# ---- issue 14: code fingerprints (what reruns, what a cache is keyed on) -----------------------

def _package(tmp_path):
    """A tiny ntkrepro-like package: a -> b (relative, inside a function), b -> c, d alone."""
    root = tmp_path / "ntkrepro"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text('"""pkg"""\n')
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "a.py").write_text("def f():\n    from .b import g\n    return g()\n")
    (root / "sub" / "b.py").write_text("from ntkrepro import c\n\ndef g():\n    return c.x\n")
    (root / "c.py").write_text("x = 1\n")
    (root / "d.py").write_text("y = 2\n")
    return root


def test_module_closure_follows_relative_and_nested_imports(tmp_path):
    root = _package(tmp_path)
    closure = provenance.module_closure(["ntkrepro.sub.a"], root)
    assert set(closure) == {"ntkrepro", "ntkrepro.sub", "ntkrepro.sub.a", "ntkrepro.sub.b", "ntkrepro.c"}
    with pytest.raises(ModuleNotFoundError):
        provenance.module_closure(["ntkrepro.nope"], root)


def test_source_hash_changes_with_the_closure_only(tmp_path):
    root = _package(tmp_path)
    h0 = provenance.source_hash(["ntkrepro.sub.a"], root)
    (root / "d.py").write_text("y = 3\n")  # not imported by a
    assert provenance.source_hash(["ntkrepro.sub.a"], root) == h0
    (root / "c.py").write_text("x = 1  # a comment\n")  # imported transitively
    h1 = provenance.source_hash(["ntkrepro.sub.a"], root)
    assert h1 != h0
    (root / "c.py").write_text("x = 1\n")  # content, not mtime
    assert provenance.source_hash(["ntkrepro.sub.a"], root) == h0


def test_source_hash_covers_data_files_without_parsing_them(tmp_path):
    root = _package(tmp_path)
    data = root / "sub" / "claims.toml"
    data.write_text('[A1]\nversion = 2\n[[A1.amendments]]\ndate = 2026-12-02\n')  # TOML, not Python
    h0 = provenance.source_hash(["ntkrepro.sub.a"], root, files=[data])
    assert provenance.module_closure(["ntkrepro.sub.a"], root, files=[data]) == provenance.module_closure(
        ["ntkrepro.sub.a"], root)
    assert h0 != provenance.source_hash(["ntkrepro.sub.a"], root)
    data.write_text('[A1]\nversion = 3\n[[A1.amendments]]\ndate = 2026-12-02\n')
    assert provenance.source_hash(["ntkrepro.sub.a"], root, files=[data]) != h0


def test_real_closure_of_a_compute_module():
    closure = provenance.module_closure(["ntkrepro.run", "ntkrepro.hron2020.gaussianity"])
    assert {"ntkrepro.hron2020.gaussianity", "ntkrepro.hron2020.attention", "ntkrepro.nt", "ntkrepro.stats",
            "ntkrepro.run", "ntkrepro.hron2020"} <= set(closure)
    assert not any(m.startswith(("ntkrepro.arda2026", "ntkrepro.framework")) for m in closure)


def test_kernel_code_fingerprint_fields():
    fp = provenance.kernel_code_fingerprint()
    assert fp["backend"] == "neural-tangents" and len(fp["source_sha256"]) == 64
    assert set(fp["packages"]) == {"ntkrepro", "jax", "jaxlib", "neural-tangents"}
    assert provenance.kernel_code_fingerprint("fast")["source_sha256"] == fp["source_sha256"]


def test_runner_records_and_checks_the_code(tmp_path, caplog):
    import logging

    from ntkrepro import run

    rec = run.code_record("ntkrepro.hron2020.gaussianity:run_h1")
    assert rec["sha256"] == provenance.source_hash(["ntkrepro.run", "ntkrepro.hron2020.gaussianity"])
    assert "ntkrepro.hron2020.attention" in rec["modules"]
    run.check_code(rec, rec["sha256"])  # the scheduled code: fine
    run.check_code(rec, None)  # called outside the workflow: nothing to compare
    repo = provenance.PACKAGE_ROOT.parents[1]
    with caplog.at_level(logging.WARNING, logger="ntkrepro"):
        run.check_code(rec, "0" * 64, workdir=repo)  # same checkout, edited after scheduling: warn
    assert "edited after snakemake started" in caplog.text
    with pytest.raises(run.CodeMismatchError, match="another installation"):
        run.check_code(rec, "0" * 64, workdir=tmp_path)  # the imported package is not the workflow's


def test_execute_writes_code_provenance(tmp_path, monkeypatch):
    from ntkrepro import run

    mod = type(sys)("ntkrepro_fake_compute")
    mod.fn = lambda params, ctx: {"x": params["a"] + 1}
    monkeypatch.setitem(sys.modules, "ntkrepro_fake_compute", mod)
    monkeypatch.setattr(run, "code_record", lambda spec: {"sha256": "f" * 64, "modules": [], "package_root": "/"})
    res = run.execute("ntkrepro_fake_compute:fn", {"a": 1}, tmp_path / "r.json", scale="smoke", code_hash="f" * 64)
    assert res["x"] == 2 and read_json(tmp_path / "r.json")["provenance"]["code"]["sha256"] == "f" * 64


def test_git_state_detects_a_dirty_tree(tmp_path):
    """Provenance records whether tracked files differ from the commit (issue 16 item 8)."""
    import subprocess

    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "f.txt").write_text("a")
    subprocess.run(git + ["add", "f.txt"], cwd=tmp_path, check=True)
    subprocess.run(git + ["commit", "-qm", "x"], cwd=tmp_path, check=True)
    state = provenance.git_state.__wrapped__  # uncached
    clean = state(str(tmp_path))
    assert clean["dirty"] is False and len(clean["commit"]) == 40
    (tmp_path / "untracked.txt").write_text("new")
    assert state(str(tmp_path))["dirty"] is False  # untracked files do not change the code that ran
    (tmp_path / "f.txt").write_text("b")
    assert state(str(tmp_path)) == {"commit": clean["commit"], "dirty": True}
