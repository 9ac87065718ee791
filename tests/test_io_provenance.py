import json

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
    assert prov == {"git": {"commit": "x"}}


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
    assert rec["packages"]["jax"] == "0.5.3" and rec["packages"]["neural-tangents"] == "0.6.5"
    json.dumps(rec)


def test_atomic_outputs_have_ordinary_permissions(tmp_path):
    import os
    import stat

    write_json(tmp_path / "p.json", {"a": 1})
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "p.json").stat().st_mode) == 0o666 & ~umask
