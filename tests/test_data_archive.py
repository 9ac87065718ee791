"""ntkrepro.data.archive: checksum-verified archive resolution and the restricted unpickler."""

import hashlib
import http.server
import pickle
import socket
import subprocess
import sys
import threading

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


# ---- downloads (issue 16 item 7: through pooch), served from localhost, never the internet ------

class _Handler(http.server.BaseHTTPRequestHandler):
    """``/good`` serves ``server.body``; ``/flaky`` fails its first request (500), then serves it;
    anything else is a 404. Every request path is recorded in ``server.hits``."""

    def do_GET(self):  # noqa: N802
        self.server.hits.append(self.path)
        if self.path == "/flaky" and self.server.hits.count("/flaky") == 1:
            self.send_error(500)
            return
        if self.path not in ("/good", "/flaky"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *a):
        pass


@pytest.fixture
def server(monkeypatch):
    """A localhost HTTP server in a thread; proxies off, pooch's retry waits skipped."""
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    pooch = pytest.importorskip("pooch")
    monkeypatch.setattr(pooch.core.time, "sleep", lambda s: None)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.hits, srv.body = [], b"official bytes" * 1000
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_download_verified_and_atomic(tmp_path, server):
    good = server.body
    res = tmp_path / "res"
    p = resolve_archive(_spec(good, url=server.url + "/good"), resources_dir=res, download=True)
    assert p == res / "toy.tar.gz" and p.read_bytes() == good
    assert [f.name for f in res.iterdir()] == ["toy.tar.gz"]  # no temp dir left behind
    assert server.hits == ["/good"]


def test_download_hash_mismatch_names_both_and_leaves_nothing(tmp_path, server):
    pinned = _spec(b"what the loader pinned", url=server.url + "/good")
    res = tmp_path / "res"
    with pytest.raises(ArchiveError, match="checksum mismatch") as err:
        resolve_archive(pinned, resources_dir=res, download=True)
    msg = str(err.value)
    assert pinned.sha256 in msg and hashlib.sha256(server.body).hexdigest() in msg
    assert "To supply it" in msg
    assert list(res.iterdir()) == []  # neither the archive nor a temp file
    assert server.hits == ["/good"] * 4  # a mismatch is retried too (1 + DOWNLOAD_RETRIES)


def test_download_retries_a_failed_request(tmp_path, server):
    res = tmp_path / "res"
    p = resolve_archive(_spec(server.body, url=server.url + "/flaky"), resources_dir=res, download=True)
    assert p.read_bytes() == server.body and server.hits == ["/flaky", "/flaky"]


def test_download_http_error_and_refused_connection(tmp_path, server):
    res = tmp_path / "res"
    with pytest.raises(ArchiveError, match="download of .*/missing.* failed") as err:
        resolve_archive(_spec(server.body, url=server.url + "/missing"), resources_dir=res, download=True)
    assert "404" in str(err.value) and "To supply it" in str(err.value)
    assert str(res / "toy.tar.gz") in str(err.value)  # where to put the file by hand
    assert list(res.iterdir()) == [] and server.hits == ["/missing"] * 4
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ArchiveError, match="download of .* failed"):
        resolve_archive(_spec(server.body, url=f"http://127.0.0.1:{port}/toy.tar.gz"), resources_dir=res,
                        download=True, timeout=5)
    assert list(res.iterdir()) == []


def test_download_md5_checked_after_pooch(tmp_path, server):
    """pooch checks sha256; a declared md5 that does not match still keeps the file out of place."""
    spec = ArchiveSpec("toy", "toy.tar.gz", url=server.url + "/good",
                       sha256=hashlib.sha256(server.body).hexdigest(), md5=hashlib.md5(b"other").hexdigest())
    res = tmp_path / "res"
    with pytest.raises(ArchiveError, match="checksum mismatch.*md5"):
        resolve_archive(spec, resources_dir=res, download=True)
    assert list(res.iterdir()) == []


def test_importing_the_data_modules_does_not_import_pooch():
    code = ("import sys, ntkrepro.data.archive, ntkrepro.data.cifar10, ntkrepro.data.imdb, "
            "ntkrepro.data.glove; assert 'pooch' not in sys.modules, 'pooch imported eagerly'")
    subprocess.run([sys.executable, "-c", code], check=True)


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

def test_download_without_sha256_fails_closed(tmp_path, server):
    spec = ArchiveSpec("toy", "toy.tar.gz", url=server.url + "/good", md5=hashlib.md5(server.body).hexdigest())
    with pytest.raises(ArchiveError, match="without a sha256"):
        resolve_archive(spec, resources_dir=tmp_path / "res", download=True)
    assert server.hits == [] and not (tmp_path / "res").exists()


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
