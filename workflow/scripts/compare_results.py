"""Compare two result trees (e.g. the smoke DAG before and after a refactoring), provenance aside.

    python workflow/scripts/compare_results.py OLD/results NEW/results

Every JSON, npz, CSV, Markdown, TeX and TSV file under both trees is compared; logs, per-rule
timings (``benchmarks/rules``) and the kernel caches (keyed on the code, so they differ by design)
are skipped. JSON is compared value by value without its provenance, timing and content-hash fields
(a file's hash changes with its provenance); npz arrays bitwise (NaN equal to NaN); other files byte
for byte. Prints one line per differing file with its first differences, and exits 1 if any file
differs or exists on one side only (issue 40: "every verdict, number and the smoke DAG output
unchanged").
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

#: JSON keys that record where, when and by which code a file was made, not what it says.
IGNORED_KEYS = frozenset({"provenance", "__provenance__", "created_utc", "executed", "timing", "timings",
                          "results_provenance", "results_sha256", "content_sha256", "evaluation_sha256",
                          "decisive_sha256", "replicate_entries_sha256", "cells_sha256"})
SKIPPED = ("/logs/", "/benchmarks/rules/", "/cache/")  # at any depth (replicates/r1/... too)
COMPARED = ("json", "npz", "csv", "md", "tex", "tsv")


def strip(obj):
    """``obj`` without :data:`IGNORED_KEYS` and ``*seconds*`` timings, at any depth."""
    if isinstance(obj, dict):
        return {k: strip(v) for k, v in obj.items() if k not in IGNORED_KEYS and "seconds" not in k}
    if isinstance(obj, list):
        return [strip(v) for v in obj]
    return obj


def differences(a, b, path: str = "") -> list[str]:
    """Paths at which two stripped JSON values differ, with both values."""
    if type(a) is not type(b):
        return [f"{path}: {type(a).__name__} vs {type(b).__name__}"]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only {'new' if k not in a else 'old'}")
            else:
                out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if a != b and not (isinstance(a, float) and a != a and b != b):
        return [f"{path}: {str(a)[:80]!r} vs {str(b)[:80]!r}"]
    return []


def compare_file(a: Path, b: Path) -> list[str]:
    """Differences between two files of the same relative path."""
    if a.suffix == ".json":
        return differences(strip(json.loads(a.read_text())), strip(json.loads(b.read_text())))
    if a.suffix == ".npz":
        with np.load(a, allow_pickle=False) as x, np.load(b, allow_pickle=False) as y:
            keys = (set(x.files) | set(y.files)) - IGNORED_KEYS
            return [f"array {k!r}" for k in sorted(keys) if k not in x.files or k not in y.files
                    or not np.array_equal(x[k], y[k], equal_nan=x[k].dtype.kind in "fc")]
    return [] if a.read_bytes() == b.read_bytes() else ["contents differ"]


def compare_trees(old: Path, new: Path) -> dict[str, list[str]]:
    """``{relative path: differences}`` for every compared file that differs or exists on one side."""
    def files(root: Path) -> set[str]:
        rel = (p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.suffix[1:] in COMPARED)
        return {r for r in rel if not any(s in f"/{r}" for s in SKIPPED)}

    fo, fn = files(old), files(new)
    out = {f: ["only in the new tree"] for f in fn - fo}
    out.update({f: ["only in the old tree"] for f in fo - fn})
    for f in sorted(fo & fn):
        d = compare_file(old / f, new / f)
        if d:
            out[f] = d
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    old, new = map(Path, argv)
    for root in (old, new):
        if not root.is_dir():
            print(f"compare_results: {root} is not a directory", file=sys.stderr)
            return 2
    diff = compare_trees(old, new)
    for f, lines in diff.items():
        print(f"DIFF {f}")
        for line in lines[:8]:
            print(f"    {line}")
    n = sum(1 for _ in old.rglob("*"))
    print(f"{len(diff)} file(s) differ (provenance, timings and content hashes aside); {n} paths in {old}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
