"""Provenance attached to every artifact: code, config, packages, device and data fingerprints.

A provenance record is a plain dict::

    {"git": {"commit", "dirty"}, "config_hash", "section_hash", "scale", "packages": {...},
     "device": {"jax": [...], "torch": ...}, "data": {path: sha256}, "python", "platform",
     "created_utc"}

``created_utc`` is the only field that differs between two identical runs; ledger comparisons
ignore it.

Code fingerprints (:func:`module_closure`, :func:`source_hash`, :func:`kernel_code_fingerprint`):
the source of a module and of every ``ntkrepro`` module it imports (statically, anywhere in the
file, including imports inside functions, plus the ``__init__`` of every enclosing package) is
hashed, so that results and cached kernels are keyed on the code that computes them. The
Snakemake compute rules embed this hash in their command line (``--code-hash``), so a changed
module reruns exactly the rules whose closure contains it.

Config inheritance (:func:`missing_keys`): a ``--configfile`` must set every key of
``config/default.yaml`` itself; the Snakefile refuses a file that would silently inherit
default-scale values under another scale's name.
"""

from __future__ import annotations

import ast
import datetime as _dt
import functools
import hashlib
import importlib.metadata as md
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ntkrepro.io import PathLike, canonical_hash, sha256_file
from ntkrepro.precision import MATMUL_PRECISION

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
        # float32 matmul precision: the fast kernels' (enforced by ntkrepro.kernels.numerics; the
        # constant lives in the neutral ntkrepro.precision, so provenance imports nothing of kernels)
        # and JAX's global default outside them (None: the backend's, TF32 on tensor-core GPUs)
        info["matmul_precision"] = {"fast_kernels": MATMUL_PRECISION,
                                    "jax_default": jax.config.jax_default_matmul_precision}
    if "torch" in sys.modules:
        import torch

        info["torch"] = (f"cuda:{torch.cuda.get_device_name(0)}" if torch.cuda.is_available()
                         else "cpu")
    info["cpu"] = platform.processor() or platform.machine()
    info.update(cpu_description())
    return info


#: CPU features recorded in provenance (:func:`cpu_description`): the vector and matrix extensions that
#: decide which GEMM and elementwise kernels XLA and torch run, hence every speed measured here.
CPU_FEATURES: tuple[str, ...] = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16")


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """``cpu_model`` (the first ``model name``) and ``cpu_features`` (those of :data:`CPU_FEATURES` in the
    first ``flags`` line) of a Linux ``/proc/cpuinfo`` text; absent fields are left out."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep:
            continue
        if key == "model name" and "cpu_model" not in out:
            out["cpu_model"] = value.strip()
        elif key == "flags" and "cpu_features" not in out:
            flags = set(value.split())
            out["cpu_features"] = [f for f in CPU_FEATURES if f in flags]
    return out


@functools.lru_cache(maxsize=1)
def cpu_description(cpuinfo: PathLike = "/proc/cpuinfo") -> dict[str, Any]:
    """The CPU a result was computed on: ``cpu_model``, ``cpu_features`` (:func:`parse_cpuinfo`; Linux only)
    and ``cpu_count`` (logical CPUs). Benchmarks and decisive cells' CPU times are comparable only on the
    same model and features: the fast-kernel benchmark of 2026-12-07 ran on a 2-core Xeon with AVX-512 and
    AMX at a 1024 matmul of 264-311 GFLOP/s, the earlier runs at 193-198 on a CPU they did not record, and
    the speed-ups over neural-tangents differed by up to 2x between them (docs/kernels.md, "On another CPU")."""
    out: dict[str, Any] = {"cpu_count": os.cpu_count()}
    try:
        out.update(parse_cpuinfo(Path(cpuinfo).read_text(errors="replace")))
    except OSError:  # no /proc (macOS, Windows): the platform's own name
        out["cpu_model"] = platform.processor() or platform.machine()
    return out


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


# --------------------------------------------------------------------------------------------
# Code fingerprints

#: The package's own source folder (``src/ntkrepro`` in an editable install).
PACKAGE_ROOT = Path(__file__).resolve().parent
_PACKAGE = "ntkrepro"


def _module_file(module: str, root: Path) -> Path | None:
    """``ntkrepro.a.b`` -> ``root/a/b.py`` or ``root/a/b/__init__.py`` (None if neither exists)."""
    parts = module.split(".")
    if parts[0] != _PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for cand in (base.with_suffix(".py") if parts[1:] else None, base / "__init__.py"):
        if cand is not None and cand.is_file():
            return cand
    return None


@functools.lru_cache(maxsize=1024)
def _imports_of(path: str, mtime_ns: int, size: int, module: str, is_pkg: bool) -> tuple[str, ...]:
    """Every ``ntkrepro`` module name a file imports (absolute or relative, at any nesting level).

    ``from X import y`` yields ``X`` and ``X.y`` (``y`` may be a submodule; names that are not
    modules are dropped later because no file exists for them).
    """
    tree = ast.parse(Path(path).read_bytes(), filename=path)
    package = module if is_pkg else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names if a.name != "*")
    return tuple(sorted(m for m in out if m == _PACKAGE or m.startswith(_PACKAGE + ".")))


def _file_imports(path: Path, module: str) -> tuple[str, ...]:
    st = path.stat()
    return _imports_of(str(path), st.st_mtime_ns, st.st_size, module, path.name == "__init__.py")


def module_closure(modules: Iterable[str], root: PathLike | None = None,
                   files: Iterable[PathLike] = ()) -> dict[str, Path]:
    """The ``ntkrepro`` modules that importing ``modules`` (and running ``files``) can execute.

    Returns ``{module name: source file}`` for the modules themselves, every ``ntkrepro`` module
    they import (transitively, found by parsing the source, not by importing it) and the
    ``__init__.py`` of each enclosing package. ``root`` is the ``ntkrepro`` package folder whose
    source is read (default: the imported package, :data:`PACKAGE_ROOT`); ``files`` are extra
    files: the ``ntkrepro`` imports of Python scripts (``.py``, e.g. jupytext notebooks) are
    followed, other files (data, e.g. a paper's ``claims.toml``) import nothing. A requested
    module that has no source file raises ``ModuleNotFoundError``.
    """
    rootp = Path(root) if root is not None else PACKAGE_ROOT
    todo: list[str] = []
    for m in modules:
        if _module_file(m, rootp) is None:
            raise ModuleNotFoundError(f"no source for {m!r} under {rootp}")
        todo.append(m)
    for f in map(Path, files):
        if f.suffix == ".py":
            todo.extend(_imports_of(str(f), f.stat().st_mtime_ns, f.stat().st_size, "__main__", False))
    found: dict[str, Path] = {}
    while todo:
        m = todo.pop()
        if m in found:
            continue
        path = _module_file(m, rootp)
        if path is None:  # a name imported from a module, not a module itself
            continue
        found[m] = path
        parts = m.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(_file_imports(path, m))
    return dict(sorted(found.items()))


def package_files(packages: Iterable[str], root: PathLike | None = None) -> dict[str, Path]:
    """Every ``.py`` file of each (sub)package or module in ``packages`` (no import following)."""
    rootp = Path(root) if root is not None else PACKAGE_ROOT
    out: dict[str, Path] = {}
    for name in packages:
        path = _module_file(name, rootp)
        if path is None:
            raise ModuleNotFoundError(f"no source for {name!r} under {rootp}")
        if path.name == "__init__.py":
            for f in sorted(path.parent.rglob("*.py")):
                rel = f.relative_to(rootp).with_suffix("")
                parts = [p for p in rel.parts if p != "__init__"]
                out[".".join([_PACKAGE, *parts])] = f
        else:
            out[name] = path
        for i in range(1, len(name.split("."))):
            parent = ".".join(name.split(".")[:i])
            out.setdefault(parent, _module_file(parent, rootp))  # type: ignore[arg-type]
    return dict(sorted(out.items()))


def hash_sources(files: Mapping[str, PathLike]) -> str:
    """SHA-256 over ``(module name, sha256 of its source bytes)`` pairs, in name order."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{sha256_file(files[name])}\n".encode())
    return h.hexdigest()


def source_hash(modules: Iterable[str], root: PathLike | None = None, files: Iterable[PathLike] = ()) -> str:
    """Hash of the source of ``modules`` and of every ``ntkrepro`` module they import
    (:func:`module_closure`), plus the bytes of ``files`` themselves (scripts or data)."""
    files = [Path(f) for f in files]
    h = hashlib.sha256(hash_sources(module_closure(modules, root, files)).encode())
    for f in files:
        h.update(f"{f.name}\0{sha256_file(f)}\n".encode())
    return h.hexdigest()


#: Modules whose source determines a kernel built through ``ntkrepro.kernels.blocks`` by
#: default: the one neural-tangents import, the kernel machinery, the matmul precision the fast
#: kernels enforce (:mod:`ntkrepro.precision`), and the Hron et al. package that builds the kernel
#: functions (whole packages, so every kernel builder is covered).
DEFAULT_KERNEL_MODULES: tuple[str, ...] = ("ntkrepro.nt", "ntkrepro.kernels", "ntkrepro.precision",
                                           "ntkrepro.hron2020")

#: Packages whose versions change what a kernel evaluates to.
KERNEL_PACKAGES: tuple[str, ...] = ("ntkrepro", "jax", "jaxlib", "neural-tangents")


def kernel_code_fingerprint(backend: str = "neural-tangents",
                            modules: Iterable[str] = DEFAULT_KERNEL_MODULES,
                            root: PathLike | None = None) -> dict[str, Any]:
    """What identifies the code computing a kernel: backend name, versions, source hash.

    ``{"backend", "packages": {ntkrepro, jax, jaxlib, neural-tangents: version},
    "modules": [...], "source_sha256"}``; the source hash covers every ``.py`` file of the
    (sub)packages ``modules`` (:func:`package_files`). Imports are deliberately not followed
    (the Hron package imports the criterion machinery, whose edits do not change a kernel);
    a caller whose kernel function is built elsewhere passes that module in ``modules``.
    """
    mods = tuple(modules)
    files = package_files(mods, root)
    versions = package_versions()
    return {
        "backend": str(backend),
        "packages": {k: versions.get(k) for k in KERNEL_PACKAGES},
        "modules": sorted(mods),
        "source_sha256": hash_sources(files),
    }


# --------------------------------------------------------------------------------------------
# Config inheritance

def missing_keys(reference: Mapping[str, Any], given: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys of ``reference`` (nested dicts followed) that ``given`` does not set.

    A key whose reference value is a dict and which ``given`` sets to a non-dict (e.g. ``null``)
    counts as set (the schema then judges it).
    """
    out: list[str] = []
    for k, v in reference.items():
        name = f"{prefix}{k}"
        if k not in given:
            out.append(name)
        elif isinstance(v, Mapping) and isinstance(given[k], Mapping):
            out.extend(missing_keys(v, given[k], name + "."))
    return out


def _merge(into: dict[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive dict update, as Snakemake merges config files."""
    for k, v in new.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = dict(v) if isinstance(v, Mapping) else v
    return into


def configfiles_missing_keys(configfiles: Iterable[PathLike], overrides: Mapping[str, Any] | None,
                             reference: PathLike) -> list[str]:
    """Keys of the ``reference`` config (``config/default.yaml``) that the ``--configfile`` files
    (merged in order) and the ``--config`` ``overrides`` do not set. No files: nothing is
    inherited (the run *is* the reference scale), so ``[]``."""
    import yaml

    files = list(configfiles)
    if not files:
        return []
    given: dict[str, Any] = {}
    for f in files:
        _merge(given, yaml.safe_load(Path(f).read_text()) or {})
    _merge(given, dict(overrides or {}))
    return missing_keys(yaml.safe_load(Path(reference).read_text()) or {}, given)
