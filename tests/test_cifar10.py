"""ntkrepro.data.cifar10: official layout, checksum first, restricted pickles, preprocessing."""

import hashlib
import io
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest

from ntkrepro.data.archive import ArchiveError
from ntkrepro.data.cifar10 import (archive_spec, balanced_subset, downsample, load_cifar10, preprocess,
                                   resolve_cifar10, standardize)

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
SUBSET = {"archive": "cifar-10-python-subset.tar.gz",
          "sha256": "5a851443c8aa3ac5f03e321688fcdcc6bfe88afb73aed1de7be00c509e5389d8"}


def _batch(n, seed):
    rng = np.random.default_rng(seed)
    return {b"batch_label": b"x", b"labels": [int(v) for v in rng.integers(0, 10, n)],
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"filenames": [b"f"] * n}


def _make_archive(path, batches, extra=None):
    with tarfile.open(path, "w:gz") as tar:
        items = {f"cifar-10-batches-py/data_batch_{i + 1}": b for i, b in enumerate(batches[:5])}
        items["cifar-10-batches-py/test_batch"] = batches[5]
        items["cifar-10-batches-py/batches.meta"] = {b"label_names": [b"c%d" % i for i in range(10)]}
        items.update(extra or {})
        for name, obj in items.items():
            blob = obj if isinstance(obj, bytes) else pickle.dumps(obj, protocol=2)
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_fake_archive_layout_and_orientation(tmp_path):
    batches = [_batch(4, i) for i in range(6)]
    sha = _make_archive(tmp_path / "c.tar.gz", batches)
    p = resolve_cifar10({"archive": "c.tar.gz", "sha256": sha}, tmp_path)
    d = load_cifar10(p)
    assert d.train_x.shape == (20, 32, 32, 3) and d.test_x.shape == (4, 32, 32, 3)
    raw = batches[0][b"data"][1]
    # channel c of pixel (i, j) is raw[c * 1024 + i * 32 + j]
    assert d.train_x[1, 2, 5, 0] == raw[0 * 1024 + 2 * 32 + 5]
    assert d.train_x[1, 2, 5, 2] == raw[2 * 1024 + 2 * 32 + 5]
    assert list(d.train_y[:4]) == batches[0][b"labels"] and d.label_names[3] == "c3"


def test_checksum_checked_before_unpickling(tmp_path):
    sha = _make_archive(tmp_path / "c.tar.gz", [_batch(2, i) for i in range(6)])
    with pytest.raises(ArchiveError, match="checksum mismatch"):
        resolve_cifar10({"archive": "c.tar.gz", "sha256": "0" * 64}, tmp_path)
    with pytest.raises(ArchiveError, match="not found") as err:
        resolve_cifar10({"archive": "cifar-10-python.tar.gz"}, tmp_path, resources_dir=tmp_path / "res")
    assert "c58f30108f718f92721af3b95e74349a" in str(err.value) and "cs.toronto.edu" in str(err.value)
    assert sha


class Evil:
    def __reduce__(self):
        return (eval, ("1+1",))


def test_malicious_pickle_rejected(tmp_path):
    batches = [_batch(2, i) for i in range(6)]
    batches[5] = {b"data": Evil(), b"labels": [1, 2]}
    _make_archive(tmp_path / "c.tar.gz", batches)
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):
        load_cifar10(tmp_path / "c.tar.gz")


def test_bad_layout(tmp_path):
    batches = [_batch(2, i) for i in range(6)]
    batches[0] = {b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}
    _make_archive(tmp_path / "c.tar.gz", batches)
    with pytest.raises(ArchiveError, match="3072"):
        load_cifar10(tmp_path / "c.tar.gz")
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(ArchiveError, match="cannot open"):
        load_cifar10(tmp_path / "junk.tar.gz")


def test_preprocessing():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 8, 8, 3))
    d = downsample(x, 4)
    assert d.shape == (3, 4, 4, 3)
    np.testing.assert_allclose(d[1, 2, 3], x[1, 4:6, 6:8].mean(axis=(0, 1)))
    with pytest.raises(ValueError):
        downsample(x, 3)
    s = standardize(x)
    np.testing.assert_allclose(s.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(s.std(-1), 1, atol=1e-9)
    grey = np.full((1, 32, 32, 3), 77, np.uint8)
    assert np.all(preprocess(grey, 8) == 0)  # zero std -> 0, not NaN


def test_balanced_subset():
    labels = np.repeat(np.arange(10), 20)
    idx = balanced_subset(labels, 50, seed=1)
    assert np.all(np.bincount(labels[idx]) == 5)
    assert np.array_equal(idx, balanced_subset(labels, 50, seed=1))
    val = balanced_subset(labels, 30, seed=2, exclude=idx)
    assert not set(idx) & set(val)
    with pytest.raises(ValueError):
        balanced_subset(labels, 500, seed=0)


@pytest.mark.skipif(not (SHARED / SUBSET["archive"]).exists(), reason="offline CIFAR-10 subset not present")
def test_real_subset():
    d = load_cifar10(resolve_cifar10(SUBSET, SHARED))
    assert d.train_x.shape == (5000, 32, 32, 3) and d.test_x.shape == (2000, 32, 32, 3)
    assert np.all(np.bincount(d.train_y) == 500) and d.label_names[0] == "airplane"
    assert archive_spec(SUBSET).sha256 == SUBSET["sha256"]


# ---- issue 14: one member rule for every tar loader, corrupt archives, config values, pins ------

def _link_archive(path, kind):
    """Official layout, but data_batch_2 is a link to data_batch_1 (10,000 images read twice)."""
    batches = [_batch(3, i) for i in range(6)]
    with tarfile.open(path, "w:gz") as tar:
        for name, obj in [("cifar-10-batches-py/data_batch_1", batches[0])] + [
                (f"cifar-10-batches-py/data_batch_{i + 1}", batches[i]) for i in range(2, 5)] + [
                ("cifar-10-batches-py/test_batch", batches[5])]:
            blob = pickle.dumps(obj, protocol=2)
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_2")
        info.type = kind
        info.linkname = "data_batch_1" if kind == tarfile.SYMTYPE else "cifar-10-batches-py/data_batch_1"
        tar.addfile(info)
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE])
def test_link_member_is_refused_even_with_matching_checksum(tmp_path, kind):
    sha = _link_archive(tmp_path / "c.tar.gz", kind)
    p = resolve_cifar10({"archive": "c.tar.gz", "sha256": sha, "download": False}, tmp_path)
    with pytest.raises(ArchiveError, match="not a regular file"):
        load_cifar10(p)


@pytest.mark.parametrize("bad", ["../evil", "/etc/passwd", "cifar-10-batches-py/../../x", "C:evil"])
def test_unsafe_member_name_is_refused(tmp_path, bad):
    _make_archive(tmp_path / "c.tar.gz", [_batch(2, i) for i in range(6)], extra={bad: b"x"})
    with pytest.raises(ArchiveError, match="unsafe member"):
        load_cifar10(tmp_path / "c.tar.gz")


def test_duplicate_member_is_refused(tmp_path):
    batches = [_batch(2, i) for i in range(6)]
    _make_archive(tmp_path / "c.tar.gz", batches)
    with tarfile.open(tmp_path / "c.tar.gz", "r:gz") as tar:
        items = [(m, tar.extractfile(m).read()) for m in tar]
    with tarfile.open(tmp_path / "d.tar.gz", "w:gz") as tar:
        for m, blob in items + [items[0]]:
            tar.addfile(m, io.BytesIO(blob))
    with pytest.raises(ArchiveError, match="occurs twice"):
        load_cifar10(tmp_path / "d.tar.gz")


def test_corrupt_archive_with_matching_checksum(tmp_path):
    """A user's own damaged copy (its sha256 supplied): ArchiveError naming the problem, not a raw
    EOFError / zlib.error / UnpicklingError."""
    _make_archive(tmp_path / "c.tar.gz", [_batch(50, i) for i in range(6)])
    raw = (tmp_path / "c.tar.gz").read_bytes()
    (tmp_path / "trunc.tar.gz").write_bytes(raw[: len(raw) // 2])          # truncated download
    flipped = bytearray(raw)
    flipped[len(raw) // 2: len(raw) // 2 + 64] = bytes(64)                  # damaged in the middle
    (tmp_path / "flip.tar.gz").write_bytes(bytes(flipped))
    _make_archive(tmp_path / "pick.tar.gz", [_batch(2, i) for i in range(6)],
                  extra={"cifar-10-batches-py/data_batch_3": pickle.dumps(_batch(2, 9), protocol=2)[:40]})
    for name in ("trunc.tar.gz", "flip.tar.gz", "pick.tar.gz"):
        sha = hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        p = resolve_cifar10({"archive": name, "sha256": sha, "download": False}, tmp_path)
        with pytest.raises(ArchiveError, match="corrupt although its checksum matched|cannot open"):
            load_cifar10(p)


def test_missing_archive_names_the_data_root_path_tried(tmp_path):
    root, res = tmp_path / "shared-data", tmp_path / "res"
    with pytest.raises(ArchiveError, match="not found") as err:
        resolve_cifar10({"archive": "cifar-10-python-subset.tar.gz", "sha256": "a" * 64, "download": False},
                        root, resources_dir=res)
    msg = str(err.value)
    assert str(root / "cifar-10-python-subset.tar.gz") in msg and str(res / "cifar-10-python-subset.tar.gz") in msg


@pytest.mark.parametrize("cfg,needle", [
    ({"archive": "c.tar.gz", "sha256": 12345}, "sha256"),
    ({"archive": "c.tar.gz", "sha265": "a" * 64, "sha256": "a" * 64}, "sha265"),
    ({"archive": "c.tar.gz", "sha256": "a" * 64, "download": "no"}, "download"),
    ({"archive": "c.tar.gz", "sha256": "a" * 64, "download": "false"}, "download"),
    ({"archive": "c.tar.gz", "sha256": "xyz"}, "sha256"),
])
def test_bad_config_values_are_rejected(tmp_path, cfg, needle):
    """`download: "no"` used to enable downloading; `sha256: 12345` failed late; `sha265` was ignored."""
    with pytest.raises(ValueError, match=needle):
        resolve_cifar10(cfg, tmp_path, resources_dir=tmp_path / "res")


def test_official_archive_sha256_is_pinned():
    spec = archive_spec({"archive": "cifar-10-python.tar.gz", "sha256": None, "md5": None})
    assert spec.sha256 == "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
    assert spec.md5 == "c58f30108f718f92721af3b95e74349a" and spec.url.startswith("https://www.cs.toronto.edu/")
    # a non-official file name gets no pin and no URL
    assert archive_spec({"archive": "mine.tar.gz", "sha256": "a" * 64}).url is None


# ---- issue 22, item 6 and messages: no hung loader, normalised member paths, duplicate data, clear refusals

def test_shared_reference_pickle_is_checked_quickly(tmp_path):
    """A 236-byte batches.meta of shared references (x = [x, x], forty deep) used to hang the
    plain-data check for days (it walked the graph as a tree of 2**40 nodes)."""
    import time

    x = []
    for _ in range(40):
        x = [x, x]
    blob = pickle.dumps({b"label_names": x}, protocol=2)
    assert len(blob) < 400
    _make_archive(tmp_path / "c.tar.gz", [_batch(2, i) for i in range(6)],
                  extra={"cifar-10-batches-py/batches.meta": blob})
    t0 = time.perf_counter()
    try:
        load_cifar10(tmp_path / "c.tar.gz")
    except Exception:  # noqa: BLE001 -- refusing is fine too; hanging is not
        pass
    assert time.perf_counter() - t0 < 10


def test_plain_data_check_caps_the_node_count():
    from ntkrepro.data.archive import RefusedPickle, check_plain

    with pytest.raises(RefusedPickle, match="more than 100 containers"):
        check_plain([[i] for i in range(200)], max_nodes=100)
    check_plain([[i] for i in range(50)], max_nodes=100)


def test_member_paths_are_normalised_before_the_duplicate_check(tmp_path):
    batches = [_batch(2, i) for i in range(6)]
    _make_archive(tmp_path / "c.tar.gz", batches,
                  extra={"cifar-10-batches-py/./data_batch_1": pickle.dumps(_batch(2, 9), protocol=2)})
    with pytest.raises(ArchiveError, match="occurs twice"):
        load_cifar10(tmp_path / "c.tar.gz")


def test_byte_identical_duplicate_batch_is_refused(tmp_path):
    batches = [_batch(3, i) for i in range(6)]
    batches[1] = batches[0]
    _make_archive(tmp_path / "c.tar.gz", batches)
    with pytest.raises(ArchiveError, match="data_batch_1 and cifar-10-batches-py/data_batch_2 are byte-identical"):
        load_cifar10(tmp_path / "c.tar.gz")


def test_duplicate_images_are_refused(tmp_path):
    batches = [_batch(3, i) for i in range(6)]
    b = dict(batches[2])
    b[b"data"] = batches[2][b"data"].copy()
    b[b"data"][1] = batches[0][b"data"][0]  # one image copied into another batch (not identical batches)
    batches[2] = b
    _make_archive(tmp_path / "c.tar.gz", batches)
    with pytest.raises(ArchiveError, match="1 of 18 images are byte-identical copies"):
        load_cifar10(tmp_path / "c.tar.gz")


def test_refused_pickle_names_archive_and_member(tmp_path):
    batches = [_batch(2, i) for i in range(6)]
    batches[5] = {b"data": Evil(), b"labels": [1, 2]}
    _make_archive(tmp_path / "c.tar.gz", batches)
    with pytest.raises(pickle.UnpicklingError, match=r"c\.tar\.gz:cifar-10-batches-py/test_batch: .*not allowed"):
        load_cifar10(tmp_path / "c.tar.gz")


@pytest.mark.parametrize("bad", [".", ".."])
def test_archive_naming_no_file_says_so(tmp_path, bad):
    with pytest.raises(ValueError, match="data.cifar10.archive: .* names no file"):
        resolve_cifar10({"archive": bad, "sha256": "a" * 64}, tmp_path, resources_dir=tmp_path / "res")
