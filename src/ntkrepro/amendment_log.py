"""The amendment logs are append-only (CLAIMS.md rule 6; issue 28 item 5).

Each paper's ``claims.toml`` keeps, per claim, an amendment log (``[[<id>.amendments]]``: a
criterion changed after results were seen, with the verdict and numbers it had) and corrections of
past entries (``[[<id>.corrections]]``). Neither may be edited once written: a past entry that was
wrong is corrected by a new correction entry, never rewritten.

Two independent checks enforce it:

* **A checksum per entry**, kept in :data:`LOCK_FILE` (``src/ntkrepro/amendment_log.lock.json``):
  ``{paper: {claim: {"amendments": [sha256, ...], "corrections": [sha256, ...]}}}``, each the sha256
  of the entry's canonical JSON (keys sorted). :func:`check` reports a locked entry that changed or
  disappeared, and an entry that is not locked yet. ``python -m ntkrepro.amendment_log lock`` adds
  new entries to the lock and refuses to change an existing checksum.
* **The git history** (:func:`history_problems`, when the checkout has one): every entry, in every
  version of a ``claims.toml`` committed on main's first-parent line since :data:`HISTORY_SINCE`
  (a branch's drafts before its merge are not publications), must equal its current version, so an
  edit cannot hide behind a regenerated lock.

CLI: ``python -m ntkrepro.amendment_log check`` (exit 1 with the problems) / ``lock``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .papers import PAPERS

#: The checksum lock, beside this module.
LOCK_FILE = Path(__file__).with_name("amendment_log.lock.json")
#: The logs that are append-only.
LOGS = ("amendments", "corrections")
#: The first commit from which the git-history check holds: the commit that restored the entries
#: edited before the rule was enforced (their corrections are appended in the claims.toml files).
HISTORY_SINCE = "daed2ab553b24a8dfd72991bd752360c3f87a8db"


def _src() -> Path:
    return Path(__file__).resolve().parent


def claims_file(paper: str, root: Path | None = None) -> Path:
    """The pre-registration file of ``paper`` (under ``root``/src/ntkrepro when a root is given)."""
    return (root / "src" / "ntkrepro" if root is not None else _src()) / paper / "claims.toml"


def entry_sha256(entry: Mapping[str, Any]) -> str:
    """sha256 of an entry's canonical JSON (sorted keys, no whitespace variation)."""
    return hashlib.sha256(json.dumps(entry, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode()).hexdigest()


def logs_of(text: str) -> dict[str, dict[str, list[Mapping[str, Any]]]]:
    """``{claim: {log: [entry, ...]}}`` of one ``claims.toml`` text (claims without entries omitted)."""
    out: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for cid, table in tomllib.loads(text).items():
        if isinstance(table, Mapping):
            logs = {log: list(table.get(log) or []) for log in LOGS}
            if any(logs.values()):
                out[cid] = logs
    return out


def current(root: Path | None = None) -> dict[str, dict[str, dict[str, list[str]]]]:
    """The checksums of every entry now: ``{paper: {claim: {log: [sha256, ...]}}}``."""
    res: dict[str, dict[str, dict[str, list[str]]]] = {}
    for paper in PAPERS:
        path = claims_file(paper, root)
        try:
            logs = logs_of(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:  # else the message names no file
            raise ValueError(f"{path}: not valid TOML ({exc}); fix its syntax (git diff {path.name} shows the "
                             "edit)") from None
        res[paper] = {cid: {log: [entry_sha256(e) for e in entries] for log, entries in v.items()}
                      for cid, v in logs.items()}
    return res


def read_lock(path: Path = LOCK_FILE) -> dict[str, Any]:
    """The lock file's content (``{}`` if it does not exist); a clear error if it is not a JSON object."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a JSON amendment-log lock ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an amendment-log lock must be a JSON object")
    return data


def compare(locked: Mapping[str, Any], now: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(changed, new): locked entries that changed or disappeared, and entries not locked yet."""
    changed, new = [], []
    for paper, claims in locked.items():
        for cid, logs in claims.items():
            for log, shas in logs.items():
                have = now.get(paper, {}).get(cid, {}).get(log, [])
                for i, sha in enumerate(shas):
                    if i >= len(have):
                        changed.append(f"{paper}/claims.toml: {cid} {log} entry {i + 1} was removed")
                    elif have[i] != sha:
                        changed.append(f"{paper}/claims.toml: {cid} {log} entry {i + 1} was edited (a past entry "
                                       f"is never edited: restore it and append a [[{cid}.corrections]] entry)")
    for paper, claims in now.items():
        for cid, logs in claims.items():
            for log, shas in logs.items():
                n_locked = len(locked.get(paper, {}).get(cid, {}).get(log, []))
                new += [f"{paper}/claims.toml: {cid} {log} entry {i + 1} is not locked yet "
                        f"(python -m ntkrepro.amendment_log lock)" for i in range(n_locked, len(shas))]
    return changed, new


def _missing_lock(lock_path: Path) -> str:
    return (f"{lock_path}: the amendment-log lock is missing, so no entry can be checked; restore it from git "
            f"(git checkout -- {lock_path.name} in {lock_path.parent}) rather than locking again, which would accept "
            "every entry as it is now, edited ones included")


def check(root: Path | None = None, lock_path: Path = LOCK_FILE) -> list[str]:
    """Every problem with the logs against the lock (empty: every entry locked and unchanged). A missing
    lock is one problem (not "not locked yet" for every entry, which invites a re-lock over edits)."""
    now = current(root)
    if not Path(lock_path).exists() and any(now.values()):
        return [_missing_lock(Path(lock_path))]
    changed, new = compare(read_lock(lock_path), now)
    return changed + new


def lock(root: Path | None = None, lock_path: Path = LOCK_FILE, *, create: bool = False) -> list[str]:
    """Add the entries not locked yet; refuse (raise) when a locked entry changed, or when the lock is missing
    (unless ``create``: a new lock for logs that have none). Returns what was added."""
    if not create and not Path(lock_path).exists() and any(current(root).values()):
        raise ValueError(_missing_lock(Path(lock_path)))
    locked, now = read_lock(lock_path), current(root)
    changed, new = compare(locked, now)
    if changed:
        raise ValueError("refusing to lock over edited past entries:\n  " + "\n  ".join(changed))
    lock_path.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return new


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def history_problems(root: Path, since: str = HISTORY_SINCE, papers: Iterable[str] = PAPERS) -> list[str]:
    """Entries whose committed text differs from their current text, in every commit from ``since``
    (inclusive) on; ``[]`` when nothing was edited. Needs a git checkout with that commit."""
    problems: list[str] = []
    for paper in papers:
        rel = f"src/ntkrepro/{paper}/claims.toml"
        now = logs_of(claims_file(paper, root).read_text(encoding="utf-8"))
        commits = [since] + _git(root, "log", "--first-parent", "--format=%H", f"{since}..HEAD", "--", rel).split()
        for commit in commits:
            try:
                old = logs_of(_git(root, "show", f"{commit}:{rel}"))
            except (subprocess.CalledProcessError, tomllib.TOMLDecodeError):
                continue
            for cid, logs in old.items():
                for log, entries in logs.items():
                    have = now.get(cid, {}).get(log, [])
                    for i, e in enumerate(entries):
                        if i >= len(have) or entry_sha256(have[i]) != entry_sha256(e):
                            problems.append(f"{rel}: {cid} {log} entry {i + 1} differs from commit {commit[:10]}")
    return sorted(set(problems))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.amendment_log", description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=("check", "lock"))
    args = ap.parse_args(argv)
    try:
        if args.cmd == "lock":
            added = lock()
            print(f"amendment log: {len(added)} new entr{'y' if len(added) == 1 else 'ies'} locked in {LOCK_FILE.name}")
            return 0
        problems = check()
    except ValueError as exc:
        print(f"amendment log: {exc}", file=sys.stderr)
        return 1
    for p in problems:
        print(p, file=sys.stderr)
    print("amendment log ok" if not problems else f"amendment log: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
