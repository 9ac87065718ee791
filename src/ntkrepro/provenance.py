"""Provenance attached to every artifact: code, config, packages, device and data fingerprints.

A provenance record is a plain dict::

    {"git": {"commit", "dirty"}, "config_hash", "section_hash", "scale", "packages": {...},
     "device": {"jax": [...], "torch": ...}, "data": {path: sha256}, "python", "platform",
     "created_utc"}

``created_utc`` is the only field that differs between two identical runs; ledger comparisons
ignore it.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata as md
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ntkrepro.io import PathLike, sha256_file

#: Packages whose versions are recorded in every provenance record.
TRACKED_PACKAGES: tuple[str, ...] = (
    "ntkrepro", "jax", "jaxlib", "neural-tangents", "flax", "optax", "torch", "numpy", "scipy",
    "transformers", "snakemake", "papermill", "seaborn", "matplotlib",
)

_REPO_ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=1)
def git_state(root: str | None = None) -> dict[str, Any]:
    """Commit hash and dirty flag of the repository holding this package (None outside git)."""
    cwd = root or str(_REPO_ROOT)
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                                text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                                capture_output=True, text=True, check=True).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, str | None]:
    """Installed versions of :data:`TRACKED_PACKAGES` (None if absent)."""
    out: dict[str, str | None] = {}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def device_info() -> dict[str, Any]:
    """Accelerators seen by JAX and torch (only for libraries already imported by the caller)."""
    info: dict[str, Any] = {}
    if "jax" in sys.modules:
        import jax

        info["jax"] = [f"{d.platform}:{getattr(d, 'device_kind', '')}" for d in jax.devices()]
    if "torch" in sys.modules:
        import torch

        info["torch"] = (f"cuda:{torch.cuda.get_device_name(0)}" if torch.cuda.is_available()
                         else "cpu")
    info["cpu"] = platform.processor() or platform.machine()
    return info


@functools.lru_cache(maxsize=64)
def _cached_sha(path: str, mtime_ns: int, size: int) -> str:
    return sha256_file(path)


def data_checksums(paths: Iterable[PathLike]) -> dict[str, str]:
    """SHA-256 of each data file (cached per path/mtime/size within a process)."""
    out = {}
    for p in paths:
        st = Path(p).stat()
        out[str(p)] = _cached_sha(str(p), st.st_mtime_ns, st.st_size)
    return out


def collect(*, config_hash: str | None = None, section: Mapping[str, Any] | None = None,
            scale: str | None = None, data: Iterable[PathLike] = (),
            extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Build a provenance record for an artifact produced now, in this process."""
    from ntkrepro.io import canonical_hash

    rec: dict[str, Any] = {
        "git": git_state(),
        "config_hash": config_hash,
        "section_hash": canonical_hash(section) if section is not None else None,
        "scale": scale,
        "packages": package_versions(),
        "device": device_info(),
        "data": data_checksums(data),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if extra:
        rec.update(extra)
    return rec
