"""ntkrepro.data.archive: checksum-verified archive resolution and the restricted unpickler."""

import hashlib
import pickle
import urllib.request

import numpy as np
import pytest

from ntkrepro.data.archive import (ArchiveError, ArchiveSpec, resolve_archive, restricted_loads,
                                   verify_archive)


def _spec(data: bytes, **kw) -> ArchiveSpec:
    return ArchiveSpec(name="toy", filename="toy.tar.gz", url=kw.pop("url", None),
                       sha256=hashlib.sha256(data).hexdigest(), **kw)


def test_local_path_verified(tmp_path):
    data = b"hello archive"
    f = tmp_path / "toy.tar.gz"
    f.write_bytes(data)
    assert resolve_archive(_spec(data), local_path=f, resources_dir=tmp_path / "res") == f


def test_missing_names_path_sha_and_remedy(tmp_path):
    spec = _spec(b"x", url="https://example.invalid/toy.tar.gz")
    with pytest.raises(ArchiveError) as err:
        resolve_archive(spec, local_path=tmp_path / "nope.tar.gz")
    msg = str(err.value)
    assert str(tmp_path / "nope.tar.gz") in msg and spec.sha256 in msg and "To supply it" in msg
    with pytest.raises(ArchiveError, match="download is disabled"):
        resolve_archive(spec, resources_dir=tmp_path / "res")


def test_corrupt_archive_rejected(tmp_path):
    f = tmp_path / "toy.tar.gz"
    f.write_bytes(b"corrupted")
    spec = _spec(b"original")
    with pytest.raises(ArchiveError, match="checksum mismatch") as err:
        verify_archive(f, spec)
    assert spec.sha256 in str(err.value)
    # md5-only specs are checked too
    with pytest.raises(ArchiveError, match="md5"):
        verify_archive(f, ArchiveSpec("toy", "toy.tar.gz", md5=hashlib.md5(b"x").hexdigest()))
    with pytest.raises(ValueError):
        ArchiveSpec("toy", "toy.tar.gz")


def test_resources_dir_copy_used(tmp_path):
    data = b"in resources"
    (tmp_path / "toy.tar.gz").write_bytes(data)
    assert resolve_archive(_spec(data), resources_dir=tmp_path) == tmp_path / "toy.tar.gz"


class _FakeResp:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def read(self, n):
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_download_verified_and_atomic(tmp_path, monkeypatch):
    good = b"official bytes" * 1000
    res = tmp_path / "res"
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: _FakeResp(good))
    p = resolve_archive(_spec(good, url="https://example.invalid/toy.tar.gz"), resources_dir=res, download=True)
    assert p.read_bytes() == good
    # wrong bytes from the server: error, and nothing (not even a temp file) is left behind
    res2 = tmp_path / "res2"
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: _FakeResp(b"tampered"))
    with pytest.raises(ArchiveError, match="checksum mismatch"):
        resolve_archive(_spec(good, url="https://example.invalid/toy.tar.gz"), resources_dir=res2, download=True)
    assert list(res2.iterdir()) == []

    def boom(url, timeout):
        raise OSError("network unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", boom)
    with pytest.raises(ArchiveError, match="download of"):
        resolve_archive(_spec(good, url="https://example.invalid/toy.tar.gz"), resources_dir=res2, download=True)
    assert list(res2.iterdir()) == []


def test_restricted_unpickler_accepts_cifar_like_pickles():
    obj = {b"data": np.arange(12, dtype=np.uint8).reshape(2, 6), b"labels": [1, 2], b"filenames": [b"a", b"b"],
           b"batch_label": b"x"}
    for proto in (2, 4):
        out = restricted_loads(pickle.dumps(obj, protocol=proto))
        assert np.array_equal(out[b"data"], obj[b"data"]) and out[b"labels"] == [1, 2]


class Evil:
    def __reduce__(self):
        import os
        return (os.system, ("echo pwned",))


def test_restricted_unpickler_rejects_globals_and_dtypes():
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):
        restricted_loads(pickle.dumps(Evil()))
    with pytest.raises(pickle.UnpicklingError, match="dtype"):
        restricted_loads(pickle.dumps({b"data": np.zeros(3, np.float64)}))
    with pytest.raises(pickle.UnpicklingError):
        restricted_loads(pickle.dumps({b"x": {1.5}}))


# ---- issue 14, item 10: a download is verified by sha256 or not made at all ---------------------

def test_download_without_sha256_fails_closed(tmp_path, monkeypatch):
    fetched = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: fetched.append(url) or _FakeResp(b"x"))
    spec = ArchiveSpec("toy", "toy.tar.gz", url="https://example.invalid/toy.tar.gz", md5=hashlib.md5(b"x").hexdigest())
    with pytest.raises(ArchiveError, match="without a sha256"):
        resolve_archive(spec, resources_dir=tmp_path / "res", download=True)
    assert fetched == [] and not (tmp_path / "res").exists()


def test_download_flag_must_be_a_real_boolean(tmp_path):
    spec = _spec(b"x", url="https://example.invalid/toy.tar.gz")
    with pytest.raises(ValueError, match="true or false"):
        resolve_archive(spec, resources_dir=tmp_path / "res", download="no")


@pytest.mark.parametrize("kw,needle", [({"sha256": 12345}, "sha256"), ({"sha256": "abc"}, "sha256"),
                                       ({"md5": "z" * 32}, "md5")])
def test_malformed_checksums_are_rejected_early(kw, needle):
    with pytest.raises(ValueError, match=needle):
        ArchiveSpec("toy", "toy.tar.gz", **kw)


def test_upper_case_checksum_accepted():
    data = b"abc"
    spec = ArchiveSpec("toy", "toy.tar.gz", sha256=hashlib.sha256(data).hexdigest().upper())
    assert spec.sha256 == hashlib.sha256(data).hexdigest()
