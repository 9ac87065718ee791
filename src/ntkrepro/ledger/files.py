"""Reading and hashing the ledger's files: results files, evaluations, entries.

:func:`load_results` reads results files (``.json`` / ``.npz``, sealed by ``ntkrepro.run``);
:func:`read_ledger_file` reads an evaluation, entry or index; :func:`file_hashes` records the sha256
links of the hash chain (:mod:`ntkrepro.ledger.integrity` verifies them). A bad file raises
:class:`LedgerFileError` naming the file and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ntkrepro.io import (SEAL_KEY, TamperedFileError, check_npz_seal, check_seal, content_sha256, read_json,
                         read_npz)


class LedgerFileError(ValueError):
    """A ledger, evaluation or results file that is missing, unreadable or not what it should be."""


class ClaimLookupError(ValueError):
    """A claim id that no paper registers."""


def read_ledger_file(path: str | Path, what: str = "ledger file") -> dict[str, Any]:
    """Read a JSON file of the ledger, raising :class:`LedgerFileError` naming the file and the fix
    (instead of a raw traceback) if it is missing, truncated, not JSON or not an object."""
    p = Path(path)
    try:
        data = read_json(p)
    except FileNotFoundError:
        raise LedgerFileError(f"{what} {p} does not exist (run snakemake to make it)") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise LedgerFileError(f"{what} {p} cannot be read as JSON ({err}); it is truncated or was edited: "
                              "delete it and rerun snakemake") from None
    if not isinstance(data, dict):
        raise LedgerFileError(f"{what} {p} holds a JSON {type(data).__name__}, not an object: delete it and "
                              "rerun snakemake")
    return data


def results_root(evaluation_path: str | Path) -> Path:
    """The results folder of an evaluation at ``<results>/claims/evaluations/<ID>.json``."""
    return Path(evaluation_path).parent.parent.parent


def file_hashes(paths: Sequence[str | Path], root: str | Path) -> dict[str, str]:
    """``{path relative to root: sha256}`` of ``paths`` (``root``: the results folder), each the hash of
    the file's canonical content (:func:`ntkrepro.io.content_sha256`: whitespace and key order of a
    JSON file do not count, so reformatting a file is no false alarm, an edited value is found)."""
    return {os.path.relpath(Path(p), Path(root)): content_sha256(p) for p in paths}


def load_results(paths: Sequence[str | Path]) -> dict[str, dict[str, Any]]:
    """Load results files (``.json`` or ``.npz``) keyed by file stem. A JSON results file sealed by
    ``ntkrepro.run`` (:func:`ntkrepro.io.seal`) whose content changed since is refused
    (:class:`~ntkrepro.io.TamperedFileError`, naming the file)."""
    out: dict[str, dict[str, Any]] = {}
    for p in map(Path, paths):
        if p.suffix == ".json":
            try:
                out[p.stem] = read_json(p)
            except (UnicodeDecodeError, ValueError) as err:
                raise LedgerFileError(f"results file {p} is not JSON text ({type(err).__name__}: "
                                      f"{str(err)[:120]}); delete it and rerun snakemake") from None
            if not isinstance(out[p.stem], dict):
                raise LedgerFileError(f"results file {p} holds a JSON {type(out[p.stem]).__name__}, not an object")
            if not check_seal(out[p.stem], p):
                raise TamperedFileError(f"{p}: carries no seal (provenance.{SEAL_KEY}); every results file "
                                        "ntkrepro.run writes is sealed, so this one was written or edited by hand. "
                                        "Delete it and rerun snakemake to recompute it")
        elif p.suffix == ".npz":
            try:
                arrays, prov = read_npz(p)
            except Exception as err:  # noqa: BLE001 (zip, pickle or format errors: name the file)
                raise LedgerFileError(f"results file {p} cannot be read as .npz ({type(err).__name__}: "
                                      f"{str(err)[:120]}); delete it and rerun snakemake") from None
            if not check_npz_seal(arrays, prov, p):
                raise TamperedFileError(f"{p}: carries no seal (provenance.{SEAL_KEY}); an .npz results file "
                                        "without one was not written by the current pipeline. Delete it and rerun "
                                        "snakemake")
            out[p.stem] = {**arrays, "provenance": prov}
        else:
            raise LedgerFileError(f"unsupported results file {p} (a results file is .json or .npz)")
    return out
