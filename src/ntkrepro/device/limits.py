"""What comes back from a device call, and how: one ``.tar.gz`` per finished tier, the call's record
rewritten atomically, at most :data:`MAX_FILES` files of at most :data:`MAX_FILE_BYTES` bytes under the
output folder, no folder below it (:func:`check_outputs`); :func:`unpack` on the CPU side."""

from __future__ import annotations

import json
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

#: What comes back from the device: files, bytes per file (everything under ``--out``).
MAX_FILES, MAX_FILE_BYTES = 8, 16 * 2 ** 20


def write_json_atomic(path: Path, obj: Any) -> None:
    """``obj`` as JSON at ``path`` (written beside it, then renamed: a cut-off never leaves half a file)."""
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)


def bundle(folder: Path, archive: Path) -> int:
    """``folder``'s files as one ``.tar.gz`` at ``archive`` (written beside it, then renamed); its size."""
    tmp = archive.with_name(f".{archive.name}.part")
    with tarfile.open(tmp, "w:gz") as tf:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                tf.add(f, arcname=str(f.relative_to(folder)))
    size = tmp.stat().st_size
    if size > MAX_FILE_BYTES:
        tmp.unlink()
        raise ValueError(f"{archive.name} would be {size} bytes > {MAX_FILE_BYTES}: it would not come back")
    os.replace(tmp, archive)
    return size


def check_outputs(out: Path) -> list[str]:
    """What would not come back from the device (empty when everything does): more than
    :data:`MAX_FILES` files, a file over :data:`MAX_FILE_BYTES`, a folder deeper than two below ``out``."""
    problems = []
    files = [p for p in Path(out).rglob("*") if p.is_file()]
    if len(files) > MAX_FILES:
        problems.append(f"{len(files)} files > {MAX_FILES}")
    for p in files:
        if p.stat().st_size > MAX_FILE_BYTES:
            problems.append(f"{p.name}: {p.stat().st_size} bytes > {MAX_FILE_BYTES}")
        if len(p.relative_to(out).parts) > 3:
            problems.append(f"{p.relative_to(out)} is more than two folders below the output folder")
    return problems


def unpack(out: Path) -> dict[str, Path]:
    """Every tier archive under ``out`` unpacked into ``out/<tier>/`` (the CPU side); ``{tier: folder}``."""
    got = {}
    for arc in sorted(Path(out).glob("*.tar.gz")):
        name = arc.name[: -len(".tar.gz")]
        dest = Path(out) / name
        dest.mkdir(exist_ok=True)
        with tarfile.open(arc, "r:gz") as tf:
            tf.extractall(dest, filter="data") if sys.version_info >= (3, 12) else tf.extractall(dest)  # noqa: S202
        got[name] = dest
    return got
