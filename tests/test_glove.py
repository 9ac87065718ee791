"""ntkrepro.data.glove: GloVe 6B 50d from the wheel, and the official zip/txt as alternative source."""

import hashlib
import re
import zipfile

import numpy as np
import pytest

from ntkrepro.data import glove
from ntkrepro.data.archive import ArchiveError

# First values of two GloVe 6B 50d vectors (glove.6B.50d.txt, lines 1 and "movie").
THE_HEAD = [0.418, 0.24968, -0.41242, 0.1217, 0.34527]


def test_wheel_vectors_and_unknown_words():
    v = glove.load_vectors(["the", "movie", "qqqzzzunknownword"], {"source": "wheel", "dim": 50})
    assert set(v) == {"the", "movie"}
    assert v["the"].shape == (50,) and v["the"].dtype == np.float32
    np.testing.assert_allclose(v["the"][:5], THE_HEAD, rtol=1e-6)
    assert not np.allclose(v["the"], v["movie"])


def test_wheel_rejects_other_dims():
    with pytest.raises(glove.GloveError, match="50-d"):
        glove.load_vectors(["the"], {"source": "wheel", "dim": 100})


def test_bad_source():
    with pytest.raises(glove.GloveError, match="source"):
        glove.load_vectors(["the"], {"source": "http"})
    with pytest.raises(glove.GloveError, match="path"):
        glove.load_vectors(["the"], {"source": "zip"})


def _official_zip(tmp_path, words):
    ref = glove.load_vectors(words, {"source": "wheel"})
    txt = tmp_path / "glove.6B.50d.txt"
    glove.write_text_file(ref, txt)
    zpath = tmp_path / "glove.6B.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.write(txt, "glove.6B.50d.txt")
    return ref, txt, zpath


def test_zip_and_txt_sources_match_the_wheel(tmp_path):
    words = ["the", "good", "bad", "film"]
    ref, txt, zpath = _official_zip(tmp_path, words)
    sha = hashlib.sha256(zpath.read_bytes()).hexdigest()
    for cfg in ({"source": "zip", "path": str(zpath), "sha256": sha},
                {"source": "zip", "path": str(txt), "sha256": _sha(txt)}):
        got = glove.load_vectors(words + ["notaword123"], cfg)
        assert set(got) == set(words)
        for w in words:
            np.testing.assert_allclose(got[w], ref[w], atol=1e-5)


def test_zip_checksum_mismatch_and_missing_file(tmp_path):
    _, _, zpath = _official_zip(tmp_path, ["the"])
    with pytest.raises(ArchiveError, match="checksum"):
        glove.load_vectors(["the"], {"source": "zip", "path": str(zpath), "sha256": "0" * 64})
    md5 = hashlib.md5(zpath.read_bytes()).hexdigest()
    ok = {"source": "zip", "path": str(zpath), "sha256": _sha(zpath)}
    assert set(glove.load_vectors(["the"], {**ok, "md5": md5})) == {"the"}
    with pytest.raises(ArchiveError, match="checksum"):
        glove.load_vectors(["the"], {**ok, "md5": "0" * 32})
    with pytest.raises(glove.GloveError, match="not found"):
        glove.load_vectors(["the"], {**ok, "path": str(tmp_path / "nope.zip")})


def test_zip_wrong_member_or_dim(tmp_path):
    bad = tmp_path / "g.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("glove.6B.100d.txt", "the 1 2\n")
    with pytest.raises(glove.GloveError, match="no member"):
        glove.load_vectors(["the"], {"source": "zip", "path": str(bad), "sha256": _sha(bad)})
    txt = tmp_path / "short.txt"
    txt.write_text("the 1 2 3\n")
    with pytest.raises(glove.GloveError, match="expected 50"):
        glove.load_vectors(["the"], {"source": "zip", "path": str(txt), "sha256": _sha(txt)})


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_unverified_file_fails_closed(tmp_path):
    """Issue 14, item 10: an extracted .txt without a sha256 is refused (it used to be a warning),
    even with an md5; a zip without a sha256 is checked against the pinned official sha256, which a
    home-made zip does not match."""
    _, txt, zpath = _official_zip(tmp_path, ["the"])
    for cfg in ({"source": "zip", "path": str(txt)},
                {"source": "zip", "path": str(txt), "md5": hashlib.md5(txt.read_bytes()).hexdigest()}):
        with pytest.raises(glove.GloveError, match="no sha256"):
            glove.load_vectors(["the"], cfg)
    for cfg in ({"source": "zip", "path": str(zpath)},
                {"source": "zip", "path": str(zpath), "md5": hashlib.md5(zpath.read_bytes()).hexdigest()}):
        with pytest.raises(ArchiveError, match=glove.OFFICIAL_ZIP_SHA256[:16]):
            glove.load_vectors(["the"], cfg)


def test_official_zip_sha256_is_pinned():
    """The pin is the official archive's sha256 (hex, 64 digits), not a placeholder."""
    assert re.fullmatch(r"[0-9a-f]{64}", glove.OFFICIAL_ZIP_SHA256)
    assert glove.OFFICIAL_ZIP_SHA256.startswith("617afb2f") and glove.OFFICIAL_ZIP_SHA256.endswith("9cbcf2fb")


def test_corrupt_file_with_matching_checksum(tmp_path):
    """Issue 14, item 7: a damaged copy whose own sha256 the user gave -> GloveError, not a raw
    UnicodeDecodeError / BadZipFile."""
    txt = tmp_path / "glove.6B.50d.txt"
    txt.write_bytes(b"the " + b"\xff\xfe\x00garbage" * 20 + b"\n")
    with pytest.raises(glove.GloveError, match="corrupt although its checksum matched"):
        glove.load_vectors(["the"], {"source": "zip", "path": str(txt), "sha256": _sha(txt)})
    _, _, zpath = _official_zip(tmp_path, ["the", "good"])
    raw = bytearray(zpath.read_bytes())
    raw[60:90] = b"\x00" * 30  # inside the compressed member
    zpath.write_bytes(bytes(raw))
    with pytest.raises(glove.GloveError, match="corrupt although its checksum matched"):
        glove.load_vectors(["the"], {"source": "zip", "path": str(zpath), "sha256": _sha(zpath)})


@pytest.mark.parametrize("cfg,needle", [
    ({"source": "wheel", "dim": 50, "sha265": "0" * 64}, "sha265"),
    ({"source": "zip", "path": "x.zip", "sha256": 12345}, "sha256"),
    ({"source": "wheel", "dim": "50"}, "dim"),
])
def test_bad_config_values_rejected(cfg, needle):
    with pytest.raises((ValueError, glove.GloveError), match=needle):
        glove.load_vectors(["the"], cfg)
