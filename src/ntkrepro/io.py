"""Atomic, provenance-carrying file I/O shared by every compute rule.

Every writer here writes to a temporary file in the destination folder and ``os.replace``-s it
into place, so no reader -- a notebook, a later job, anyone outside Snakemake -- ever sees a
half-written file, even from a job killed mid-write. (Snakemake itself deletes a failed job's
outputs and marks a killed job's as incomplete; atomic replacement covers the reads in between.)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

PathLike = str | os.PathLike[str]


@contextlib.contextmanager
def atomic_path(path: PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it onto ``path`` only if the block succeeds."""
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix or dest.suffix, dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp creates 0600; outputs are ordinary files
        os.replace(tmp_path, dest)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def to_jsonable(obj: Any) -> Any:
    """Convert numpy / jax scalars and arrays (recursively) into plain JSON types."""
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__array__") and not isinstance(obj, (str, bytes)):
        arr = np.asarray(obj)
        return arr.item() if arr.ndim == 0 else arr.tolist()
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        return obj.item()
    return obj


def write_json(path: PathLike, data: Mapping[str, Any]) -> None:
    """Write ``data`` as indented JSON, atomically (NaN is written as ``NaN`` and read back)."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(to_jsonable(data), indent=2, sort_keys=False) + "\n")


def read_json(path: PathLike) -> dict[str, Any]:
    """Read a JSON file written by :func:`write_json`."""
    return json.loads(Path(path).read_text())


def npz_content_hash(arrays: Mapping[str, Any], provenance: Mapping[str, Any] | None) -> str:
    """Canonical SHA-256 of an ``.npz``'s content: every array's name, dtype, shape and bytes (in
    name order) and the provenance without its seal -- independent of the zip container's layout."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(np.asarray(arrays[k]))
        h.update(json.dumps([k, a.dtype.str, list(a.shape)]).encode())
        h.update(hashlib.sha256(a.tobytes()).digest())
    prov = {k: v for k, v in (provenance or {}).items() if k != SEAL_KEY}
    h.update(canonical_hash(prov).encode())
    return h.hexdigest()


def write_npz(path: PathLike, arrays: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> None:
    """Write arrays to ``.npz`` atomically; provenance is stored as a JSON string ``__provenance__``,
    sealed (``provenance[SEAL_KEY]`` = :func:`npz_content_hash`) so that an edit is found where the
    file is read (:func:`check_npz_seal`)."""
    payload = {k: np.asarray(v) for k, v in arrays.items()}
    if provenance is not None:
        prov = dict(to_jsonable(provenance))
        prov[SEAL_KEY] = npz_content_hash(payload, prov)
        payload["__provenance__"] = np.asarray(json.dumps(prov))
    with atomic_path(path, suffix=".npz") as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **payload)


def read_npz(path: PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any] | None]:
    """Read an ``.npz`` written by :func:`write_npz` (no pickles allowed) -> (arrays, provenance)."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k != "__provenance__"}
        prov = json.loads(str(data["__provenance__"])) if "__provenance__" in data.files else None
    return arrays, prov


def sha256_file(path: PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


#: Provenance key of a results file's own content hash (:func:`seal`, :func:`check_seal`).
SEAL_KEY = "content_sha256"


class TamperedFileError(ValueError):
    """A file's content no longer matches the hash recorded when the pipeline wrote it."""


def _unsealed(data: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(data)
    prov = out.get("provenance")
    if isinstance(prov, Mapping):
        out["provenance"] = {k: v for k, v in prov.items() if k != SEAL_KEY}
    return out


def seal(data: dict[str, Any]) -> dict[str, Any]:
    """Record in ``data["provenance"][SEAL_KEY]`` the canonical hash of ``data`` without that key (in
    place; returns ``data``). ``ntkrepro.run`` seals every results file it writes, so that a hand
    edit (which Snakemake would take for a new input) is refused where the file is read."""
    data.setdefault("provenance", {})
    data["provenance"][SEAL_KEY] = canonical_hash(_unsealed(data))
    return data


def check_seal(data: Mapping[str, Any], path: PathLike) -> bool:
    """True if ``data`` (read from ``path``) is sealed and intact, False if it carries no seal; raises
    :class:`TamperedFileError`, naming the file and the fix, if its content changed after sealing."""
    prov = data.get("provenance")
    want = prov.get(SEAL_KEY) if isinstance(prov, Mapping) else None
    if want is None:
        return False
    got = canonical_hash(_unsealed(data))
    if got != want:
        raise TamperedFileError(
            f"{path}: its content changed after the pipeline wrote it (provenance.{SEAL_KEY} {want[:12]}..., "
            f"content now {got[:12]}...); a hand-edited results file is not a result. Delete it and rerun "
            "snakemake to recompute it")
    return True


def check_npz_seal(arrays: Mapping[str, Any], provenance: Mapping[str, Any] | None, path: PathLike) -> bool:
    """:func:`check_seal` for an ``.npz`` read by :func:`read_npz`: True if sealed and intact, False
    if it carries no seal; :class:`TamperedFileError`, naming the file, if its content changed."""
    want = provenance.get(SEAL_KEY) if isinstance(provenance, Mapping) else None
    if want is None:
        return False
    got = npz_content_hash(arrays, provenance)
    if got != want:
        raise TamperedFileError(
            f"{path}: its arrays or provenance changed after the pipeline wrote it (provenance.{SEAL_KEY} "
            f"{str(want)[:12]}..., content now {got[:12]}...); a hand-edited results file is not a result. Delete "
            "it and rerun snakemake to recompute it")
    return True


def content_sha256(path: PathLike) -> str:
    """SHA-256 of a file's *content*, the same whatever its formatting: a JSON file's canonical form
    (:func:`canonical_hash`: whitespace and key order do not count), an ``.npz``'s arrays and
    provenance (:func:`npz_content_hash`), any other file's bytes. A JSON file that does not parse
    is hashed by its bytes (so it differs from any recorded canonical hash)."""
    p = Path(path)
    if p.suffix == ".json":
        try:
            return canonical_hash(read_json(p))
        except (UnicodeDecodeError, ValueError):
            return sha256_file(p)
    if p.suffix == ".npz":
        try:
            arrays, prov = read_npz(p)
        except Exception:  # noqa: BLE001 (not an npz: hash its bytes)
            return sha256_file(p)
        return npz_content_hash(arrays, prov)
    return sha256_file(p)


def canonical_hash(obj: Any) -> str:
    """SHA-256 of the canonical (sorted-key, compact) JSON encoding of ``obj``."""
    blob = json.dumps(to_jsonable(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()
