"""ntkrepro.data.imdb: reading the official aclImdb layout from a tar archive, safely."""

import hashlib
import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from ntkrepro.data import imdb
from ntkrepro.data.archive import ArchiveError

SUBSET = Path(__file__).resolve().parents[1] / "../shared/data/aclImdb-subset.tar.gz"
SUBSET_SHA256 = "946775c79fc88d7450a8575a03076f4d670a576d556e5e2f4608218b59ef44f4"


def _add(tar, name, data=b"", kind=tarfile.REGTYPE, linkname=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def make_archive(path, n_per=4, extra=()):
    """A tiny archive in the official layout: n_per reviews per split and label, plus extras."""
    with tarfile.open(path, "w:gz") as tar:
        _add(tar, "aclImdb/README", b"readme")
        _add(tar, "aclImdb/train/unsup/0_0.txt", b"unlabelled")
        _add(tar, "aclImdb/train/labeledBow.feat", b"0 0:1")
        for split in ("train", "test"):
            for folder, ratings in (("pos", (7, 8, 9, 10)), ("neg", (1, 2, 3, 4))):
                for i in range(n_per):
                    r = ratings[i % 4]
                    _add(tar, f"aclImdb/{split}/{folder}/{i}_{r}.txt",
                         f"{folder} review {i} of {split}<br />Rated {r}.".encode())
        for args in extra:
            _add(tar, *args)
    return Path(path)


def test_reads_official_layout_and_ignores_other_members(tmp_path):
    p = make_archive(tmp_path / "aclImdb_v1.tar.gz")
    revs = imdb.read_reviews(p)
    assert {k: len(v) for k, v in revs.items()} == {"train": 8, "test": 8}
    r = revs["train"][-1]
    assert r.label == 1 and r.split == "train" and r.rating >= 7 and r.text.startswith("pos review")
    assert [x.label for x in revs["test"]] == [0] * 4 + [1] * 4  # sorted by (label, id)


def test_resolve_verifies_checksum(tmp_path):
    p = make_archive(tmp_path / "a.tar.gz")
    sha = hashlib.sha256(p.read_bytes()).hexdigest()
    assert imdb.resolve({"archive": str(p), "sha256": sha}) == p
    with pytest.raises(ArchiveError, match="checksum"):
        imdb.resolve({"archive": str(p), "sha256": "f" * 64})
    with pytest.raises(ArchiveError, match="not found"):
        imdb.resolve({"archive": str(tmp_path / "missing.tar.gz"), "sha256": sha})
    with pytest.raises(ArchiveError, match="download is disabled"):
        imdb.resolve({"archive": None, "md5": imdb.OFFICIAL_MD5, "resources_dir": str(tmp_path / "res")})
    assert not (tmp_path / "res" / "aclImdb_v1.tar.gz").exists()


@pytest.mark.parametrize("bad", ["../evil.txt", "/etc/passwd", "aclImdb/train/pos/../../../x_9.txt"])
def test_path_traversal_member_is_refused(tmp_path, bad):
    p = make_archive(tmp_path / "a.tar.gz", extra=[(bad, b"x")])
    with pytest.raises(ArchiveError, match="unsafe member"):
        imdb.read_reviews(p)


def test_symlink_review_and_inconsistent_rating_are_refused(tmp_path):
    p = make_archive(tmp_path / "a.tar.gz", extra=[("aclImdb/test/pos/99_9.txt", b"", tarfile.SYMTYPE, "/etc/passwd")])
    with pytest.raises(ArchiveError, match="not a regular file"):
        imdb.read_reviews(p)
    p = make_archive(tmp_path / "b.tar.gz", extra=[("aclImdb/test/pos/99_2.txt", b"bad")])
    with pytest.raises(ArchiveError, match="inconsistent"):
        imdb.read_reviews(p)


def test_corrupt_or_wrong_archive(tmp_path):
    p = tmp_path / "junk.tar.gz"
    p.write_bytes(b"not a tar at all" * 10)
    with pytest.raises(ArchiveError, match="not a readable"):
        imdb.read_reviews(p)
    q = tmp_path / "empty.tar.gz"
    with tarfile.open(q, "w:gz") as tar:
        _add(tar, "something/else.txt", b"x")
    with pytest.raises(ArchiveError, match="aclImdb layout"):
        imdb.read_reviews(q)


def test_split_protocol_is_balanced_disjoint_and_deterministic(tmp_path):
    p = make_archive(tmp_path / "a.tar.gz", n_per=12)
    revs = imdb.read_reviews(p)
    a = imdb.split_protocol(revs, n_train=8, n_valid=4, n_test=6, seed=3)
    b = imdb.split_protocol(revs, n_train=8, n_valid=4, n_test=6, seed=3)
    c = imdb.split_protocol(revs, n_train=8, n_valid=4, n_test=6, seed=4)
    assert a == b and a != c
    for k, n in (("train", 8), ("valid", 4), ("test", 6)):
        assert len(a[k]) == n and sum(r.label for r in a[k]) == n // 2
    ids = lambda s: {(r.label, r.id) for r in s}  # noqa: E731
    assert not ids(a["train"]) & ids(a["valid"])
    assert all(r.split == "test" for r in a["test"])
    np.testing.assert_array_equal(imdb.targets(a["test"]).ravel(), [r.label - 0.5 for r in a["test"]])
    with pytest.raises(ValueError, match="needed"):
        imdb.split_protocol(revs, n_train=20, n_valid=8, n_test=4, seed=0)
    with pytest.raises(ValueError, match="even"):
        imdb.split_protocol(revs, n_train=7, n_valid=4, n_test=4, seed=0)


@pytest.mark.skipif(not SUBSET.exists(), reason="offline IMDb subset not available")
def test_offline_subset_archive():
    p = imdb.resolve({"archive": str(SUBSET), "sha256": SUBSET_SHA256})
    revs = imdb.read_reviews(p)
    assert {k: len(v) for k, v in revs.items()} == {"train": 5000, "test": 2000}
    for s in ("train", "test"):
        assert sum(r.label for r in revs[s]) == len(revs[s]) // 2
    sub = imdb.split_protocol(revs, n_train=3200, n_valid=1600, n_test=1600, seed=0)  # the paper's protocol fits
    assert len(sub["train"]) == 3200


# ---- issue 14: the same member rule as CIFAR-10, corrupt archives, config values, pins ----------

@pytest.mark.parametrize("member", [
    ("aclImdb/train/unsup/5_0.txt", b"", tarfile.SYMTYPE, "/etc/passwd"),      # a link the loader would skip
    ("aclImdb/test/neg/7_1.txt", b"", tarfile.LNKTYPE, "aclImdb/test/neg/0_1.txt"),
    ("aclImdb/fifo", b"", tarfile.FIFOTYPE, ""),
])
def test_any_link_or_special_member_refuses_the_archive(tmp_path, member):
    p = make_archive(tmp_path / "a.tar.gz", extra=[member])
    with pytest.raises(ArchiveError, match="not a regular file"):
        imdb.read_reviews(p)


def test_duplicate_review_member_is_refused(tmp_path):
    p = make_archive(tmp_path / "a.tar.gz", extra=[("aclImdb/test/pos/0_7.txt", b"second copy")])
    with pytest.raises(ArchiveError, match="occurs twice|duplicate"):
        imdb.read_reviews(p)


def test_corrupt_archive_with_matching_checksum(tmp_path):
    p = make_archive(tmp_path / "a.tar.gz", n_per=40)
    raw = p.read_bytes()
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(raw[: len(raw) // 2])
    sha = hashlib.sha256(bad.read_bytes()).hexdigest()
    q = imdb.resolve({"archive": str(bad), "sha256": sha, "download": False})
    with pytest.raises(ArchiveError, match="corrupt although its checksum matched"):
        imdb.read_reviews(q)


@pytest.mark.parametrize("cfg,needle", [
    ({"archive": None, "sha256": None, "download": "no"}, "download"),
    ({"archive": "x.tar.gz", "sha256": 12345}, "sha256"),
    ({"archive": "x.tar.gz", "sha265": "a" * 64, "sha256": "a" * 64}, "sha265"),
])
def test_bad_config_values_are_rejected(tmp_path, cfg, needle):
    with pytest.raises(ValueError, match=needle):
        imdb.resolve({**cfg, "resources_dir": str(tmp_path / "res")})
    assert not (tmp_path / "res").exists()


def test_official_archive_sha256_is_pinned():
    spec = imdb.archive_spec({"archive": None, "sha256": None})
    assert spec.sha256 == "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"
    assert spec.md5 == imdb.OFFICIAL_MD5 and spec.url == imdb.OFFICIAL_URL
    assert imdb.archive_spec({"archive": "subset.tar.gz", "sha256": SUBSET_SHA256}).url is None
