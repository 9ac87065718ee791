"""Run a library compute function for a Snakemake rule and write its results with provenance.

Rules call::

    python -m ntkrepro.run ntkrepro.hron2020.gaussianity:run_h1 \
        --params '<json of the claim's config section>' --scale default --config-hash <sha> \
        --code-hash <sha> --out results/hron2020/H1_gaussianity.json [--out-extra name=path ...]

A compute function has the signature ``fn(params: dict, ctx: RunContext) -> dict`` and returns
a JSON-able results dict; the runner adds ``provenance`` (with the checksums of every data file
the function declared through ``ctx.use_data``) and writes it atomically. Functions that produce
big arrays write them through ``ctx.outputs`` with :func:`ntkrepro.io.write_npz`.

Code provenance: the runner hashes the source that runs (the function's module and every
``ntkrepro`` module it imports, :func:`ntkrepro.provenance.source_hash`) and records it as
``provenance.code = {"sha256", "modules", "package_root"}``. ``--code-hash`` is the hash the
workflow computed from its own ``src/`` when it scheduled the job; a mismatch means the code
that would run is not the code the DAG was keyed on: if the imported package is a different
installation than the workflow's ``src/`` (a stale, non-editable install) the run is refused
(:class:`CodeMismatchError`); if it is the same folder, the source was edited after Snakemake
started -- the run goes on with a warning, records the hash of the code that actually ran, and
the next ``snakemake`` invocation reruns the job because the command's hash changed.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

try:
    from tqdm.auto import tqdm
except ImportError:  # a bare environment (jax, numpy, scipy only: the GPU script's): no progress bars
    def tqdm(iterable, **_):  # type: ignore[no-redef]
        return iterable

from ntkrepro import provenance as _prov
from ntkrepro.kernels.allocator import keep_freed_memory
from ntkrepro.io import PathLike, seal, to_jsonable, write_json

T = TypeVar("T")
log = logging.getLogger("ntkrepro")


class CodeMismatchError(RuntimeError):
    """The imported ntkrepro is another installation whose source differs from the workflow's."""


class StillRunningError(RuntimeError):
    """Another live process is computing the same output (e.g. an orphan of a killed Snakemake)."""


@contextlib.contextmanager
def output_lock(out: PathLike):
    """Hold an exclusive ``flock`` on ``.<out name>.running`` beside ``out`` while computing it.

    After ``kill -9`` of Snakemake itself, the jobs it started keep running as orphans and the next
    ``snakemake`` is not locked out; a relaunched job would then compute the same output twice,
    concurrently. With this lock the relaunched job stops at once, naming the orphan's pid. The lock
    dies with its process (no stale lock after a crash); where the file system has no ``flock``
    (some network file systems) the run goes on unlocked.
    """
    import fcntl

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = out.with_name(f".{out.name}.running")
    fh = open(lock, "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            pid = fh.read().strip() or "?"
            raise StillRunningError(
                f"{out}: another process (pid {pid}) is still computing this output -- an orphan of a killed "
                f"snakemake? Wait for it to finish or stop it (kill {pid}), then rerun snakemake") from None
        except OSError as err:
            if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            log.warning("%s: no file lock on this file system (%s); not guarding against a concurrent run", lock, err)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
    finally:
        fh.close()


def code_record(spec: str) -> dict[str, Any]:
    """``{"sha256", "modules", "package_root"}`` of the source that running ``spec`` imports."""
    module = spec.partition(":")[0]
    closure = _prov.module_closure(["ntkrepro.run", module])
    return {"sha256": _prov.source_hash(["ntkrepro.run", module]), "modules": sorted(closure),
            "package_root": str(_prov.PACKAGE_ROOT)}


def check_code(record: dict[str, Any], expected: str | None, workdir: PathLike | None = None) -> None:
    """Compare the running code's hash with the workflow's (see the module docstring)."""
    if expected is None or record["sha256"] == expected:
        return
    workflow_src = (Path(workdir) if workdir is not None else Path.cwd()) / "src" / "ntkrepro"
    same = workflow_src.exists() and workflow_src.resolve() == Path(record["package_root"]).resolve()
    msg = (f"source hash of the code about to run ({record['sha256'][:12]}, from {record['package_root']}) "
           f"differs from the hash the workflow scheduled ({expected[:12]}, from {workflow_src})")
    if not same:
        raise CodeMismatchError(msg + "; the imported ntkrepro is another installation -- reinstall it "
                                "from this repository (pip install -e .) or run from its checkout")
    log.warning("%s: the source was edited after snakemake started; the results record the hash of "
                "the code that ran, and the next snakemake run reruns this job", msg)


@dataclass
class RunContext:
    """What a compute function gets besides its parameters."""

    scale: str
    config_hash: str | None = None
    outputs: dict[str, Path] = field(default_factory=dict)
    data_files: list[Path] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def use_data(self, path: PathLike) -> Path:
        """Declare a data file this run reads (its sha256 goes into the provenance)."""
        p = Path(path)
        self.data_files.append(p)
        return p

    def progress(self, iterable: Iterable[T], desc: str, total: int | None = None) -> Iterable[T]:
        """A tqdm progress bar on stderr (Snakemake's log), with rate and ETA."""
        return tqdm(iterable, desc=desc, total=total, file=sys.stderr, mininterval=2.0, smoothing=0.1,
                    dynamic_ncols=False, ncols=100)

    def provenance(self, **extra: Any) -> dict[str, Any]:
        """Provenance record for an artifact written now by this run."""
        return _prov.collect(config_hash=self.config_hash, section=self.params, scale=self.scale,
                             data=self.data_files, extra=extra or None)


def resolve(spec: str) -> Callable[[dict[str, Any], RunContext], dict[str, Any]]:
    """``"package.module:function"`` -> the function."""
    module, _, name = spec.partition(":")
    if not name:
        raise ValueError(f"expected 'module:function', got {spec!r}")
    return getattr(importlib.import_module(module), name)


def execute(spec: str, params: dict[str, Any], out: PathLike, *, scale: str,
            config_hash: str | None = None, outputs: dict[str, Path] | None = None,
            code_hash: str | None = None) -> dict[str, Any]:
    """Run ``spec`` with ``params`` and write its results (plus provenance) to ``out``.

    ``code_hash``: the source hash the workflow expects (:func:`check_code`).
    """
    with output_lock(out):
        return _execute(spec, params, out, scale=scale, config_hash=config_hash, outputs=outputs,
                        code_hash=code_hash)


def _execute(spec: str, params: dict[str, Any], out: PathLike, *, scale: str, config_hash: str | None,
             outputs: dict[str, Path] | None, code_hash: str | None) -> dict[str, Any]:
    code = code_record(spec)
    check_code(code, code_hash)
    fn = resolve(spec)
    ctx = RunContext(scale=scale, config_hash=config_hash, outputs=dict(outputs or {}), params=params)
    t0 = time.perf_counter()
    results = fn(params, ctx)
    results = dict(results)
    results.setdefault("params", params)
    results["wall_seconds"] = round(time.perf_counter() - t0, 3)
    results["provenance"] = ctx.provenance(function=spec, code=code)
    write_json(out, seal(to_jsonable(results)))  # sealed: a later hand edit is refused (ntkrepro.io.seal)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point used by the Snakemake compute rules."""
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.run")
    ap.add_argument("function", help="module:function")
    ap.add_argument("--params", required=True, help="JSON object")
    ap.add_argument("--scale", required=True)
    ap.add_argument("--config-hash", default=None)
    ap.add_argument("--code-hash", default=None, help="source hash the workflow scheduled (checked)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--out-extra", nargs="*", default=[], help="name=path of further outputs")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    # before any array is allocated: no page faults per freed buffer (ntkrepro.kernels.allocator)
    log.info("allocator: %s", keep_freed_memory() or "unchanged (not glibc)")
    outputs = {}
    for item in args.out_extra:
        name, _, path = item.partition("=")
        outputs[name] = Path(path)
    res = execute(args.function, json.loads(args.params), args.out, scale=args.scale,
                  config_hash=args.config_hash, outputs=outputs, code_hash=args.code_hash)
    log.info("%s finished in %.1f s -> %s", args.function, res["wall_seconds"], args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
