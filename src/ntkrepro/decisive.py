"""The decisive tier (issue 29): sizes that decide a claim, run once on some machine and archived.

``config/decisive.yaml`` names, per undecided claim, the size that decides it; ``snakemake decide
--configfile config/decisive.yaml`` computes it in shards (cells) and seals each cell into the committed
``archive/decisive/<CLAIM>/cells/``; ``snakemake all`` re-judges the archived cells with the CURRENT
criterion of the claim.

Two modules (issue 40): :mod:`ntkrepro.decisive_cells` holds the cell records, the plan and their
verification (the compute-code hash, :data:`COMPUTE_CODE`, :data:`ARCHIVED_CONSTANTS`, :func:`cells`,
:func:`verify_cell`, :func:`load_plan`, :func:`check_plan`; re-exported here, so
``decisive.compute_code_hash`` etc. are unchanged); this module is the orchestration above the ledger:
judging the archived cells by the claim's current criterion (:func:`judge`), the check of a ledger
entry's decisive field down to its archived cells (:func:`check_entry`), filling missing cells
(:func:`fill`) and the CLI (``python -m ntkrepro.decisive judge|verify``). The entry's ``decisive``
field, the table cell and the tier table's row are the ledger's (:func:`ntkrepro.ledger.rows.summary`,
:func:`~ntkrepro.ledger.rows.table_cell`, :func:`~ntkrepro.ledger.rows.tier_row`; re-exported here).
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ntkrepro import ledger
import ntkrepro.decisive_cells as _cells
from ntkrepro.decisive_cells import (  # noqa: F401  (re-exported: the cell records' public names, as before the split)
    ARCHIVE, ARCHIVED_CONSTANTS, CODE_SCHEME, COMPUTE_CODE, DECIDE, MAX_FILE_BYTES, RUN_KEYS, ArchiveError, _plain,
    _singular, _source, archived_cells, cell_name, cell_params, cell_path, cells, check_archive, check_plan, check_spec,
    claim_of, entry_plan,
    code_hash_of, code_state, compute_code_hash, compute_constants, compute_constants_hash, is_overlay, load_plan,
    pinned_constants_changed, verify_cell)
from ntkrepro.io import TamperedFileError, canonical_hash, content_sha256, read_json, write_json
from ntkrepro.ledger.rows import (  # noqa: F401  (re-exported: the tier's states, entry field and cell)
    COMPLETE, EMPTY, INCOMPLETE, STALE, TIER, summary, table_cell)
from ntkrepro.papers import CLAIM_MODULES
from ntkrepro.run import execute


class _Ctx:
    """The minimal RunContext the aggregate functions need (``use_data``)."""

    def __init__(self) -> None:
        self.data_files: list[Path] = []

    def use_data(self, p: str | Path) -> Path:
        self.data_files.append(Path(p))
        return Path(p)

    def progress(self, it, desc: str = "", total: int | None = None):
        return it


def _resolve(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _device(prov: Mapping[str, Any]) -> str:
    dev = prov.get("device") or {}
    jax_dev = ",".join(sorted(set(dev.get("jax") or []))) or "?"
    return f"{jax_dev} ({dev.get('cpu') or '?'}, {prov.get('platform', '?').split('-')[0]})"


def judge(claim: str, spec: Mapping[str, Any], archive: str | Path = ARCHIVE, *,
          max_bytes: int = MAX_FILE_BYTES, code_hash: str | None = None) -> dict[str, Any]:
    """The decisive evaluation of ``claim``: verify every archived cell, then apply the claim's CURRENT
    registered criterion (:func:`ntkrepro.ledger.make_evaluation`) to the aggregate of the archived cells.
    ``claim`` is a plan key: a claim id, or ``<CLAIM>.<name>`` for a later plan of the same claim
    (:func:`~ntkrepro.decisive_cells.claim_of`; judged by that claim's criterion, the record's ``plan`` names it).

    - a hand-edited or out-of-budget cell raises (refused, never judged);
    - a STALE cell (computed by other code than today's) is never used: with any stale cell the record's
      ``state`` is ``STALE`` and its verdict is ``None``;
    - an incomplete set (cells of the plan missing) is ``INCOMPLETE``: its ``verdict`` is ``inconclusive``
      (never the criterion's verdict), and the criterion's verdict on the complete groups (e.g. seeds with
      every width) is reported beside it as ``partial``;
    - a complete set is ``complete``: ``verdict`` = the criterion's verdict (controls included).
    """
    planned = cells(spec)
    names = {c["name"] for c in planned}
    checked = [verify_cell(p, claim, max_bytes=max_bytes, code_hash=code_hash) for p in archived_cells(archive, claim)]
    extra = sorted(Path(c["path"]).stem for c in checked if Path(c["path"]).stem not in names)
    if extra:
        raise ArchiveError(f"{claim}: archived cells {extra} are not in the plan of config/decisive.yaml "
                           f"({len(planned)} cells): the archive and the plan disagree")
    for c in checked:
        diff = sorted(k for k in spec["section"]
                      if _plan_value(k, c["data"]["params"].get(k)) != _plan_value(k, spec["section"][k]))
        if diff:  # every cell ran at the plan's sizes
            raise ArchiveError(f"{c['path']}: computed with {diff} other than config/decisive.yaml says")
    stale = [Path(c["path"]).stem for c in checked if c["stale"]]
    current = [c for c in checked if not c["stale"]]
    provs = [c["data"]["provenance"] for c in checked]
    record: dict[str, Any] = {
        "id": claim_of(claim), **({"plan": claim} if claim != claim_of(claim) else {}),
        "tier": TIER, "scale": spec["scale"], "archive": str(Path(archive) / claim),
        # a word for sizes that are neither the default run's nor the paper's (H4: "reduced"), shown in the table
        "settings": spec.get("settings") or spec["scale"],
        "cells_planned": len(planned), "cells_archived": len(checked), "cells_stale": stale,
        "cells_missing": sorted(names - {Path(c["path"]).stem for c in checked}),
        "cells_sha256": {c["path"]: c["sha256"] for c in checked},
        "compute_code_now": code_hash if code_hash is not None else _cells.compute_code_hash(claim),
        "commits": sorted({p["git"]["commit"] for p in provs}),
        "config_hashes": sorted({str(p.get("config_hash")) for p in provs}),
        "dirty": any(bool(p["git"].get("dirty")) for p in provs),
        "devices": sorted({_device(p) for p in provs}),
        "dates": [min((p["created_utc"] for p in provs), default=None),
                  max((p["created_utc"] for p in provs), default=None)],
        "wall_seconds": round(sum(float(c["data"]["wall_seconds"]) for c in checked), 1),
        # process CPU time, summed over the cells that record it (A1's cells record wall time only)
        "cpu_seconds": round(sum(float(c["data"]["cpu_seconds"]) for c in checked
                                 if isinstance(c["data"].get("cpu_seconds"), (int, float))), 1),
        "cells_with_cpu_seconds": sum(isinstance(c["data"].get("cpu_seconds"), (int, float)) for c in checked),
        "section": dict(spec["section"]),
    }
    if not checked:
        return {**record, "state": EMPTY, "verdict": None, "evaluation": None, "partial": None}
    if stale:
        return {**record, "state": STALE, "verdict": None, "evaluation": None, "partial": None,
                "reason": f"{len(stale)} of {len(checked)} archived cells were computed by other code than today's "
                          f"(compute_code != {record['compute_code_now'][:12]}...; "
                          f"{'; '.join(sorted({c['stale_why'] for c in checked if c['stale']}))}): STALE, not used; "
                          "rerun `snakemake decide --configfile config/decisive.yaml` after deleting them"}
    # groups that are complete: the cells sharing the first cell key (e.g. a seed) with every value of the rest
    key0 = _singular(spec["cell"][0])
    by: dict[int, list[dict[str, Any]]] = {}
    present = {Path(c["path"]).stem for c in current}
    for c in planned:
        by.setdefault(c[key0], []).append(c)
    full = [k for k, cs in by.items() if all(c["name"] in present for c in cs)]
    use = [c["path"] for c in current if c["data"]["params"][key0] in full]
    complete = len(current) == len(planned)
    evaluation, no_partial = None, ""
    if len(full) >= 2:
        try:
            evaluation = _evaluate(claim, spec, use, {**spec["section"], spec["cell"][0]: sorted(full)})
        except (ValueError, KeyError) as err:  # e.g. H5: the control's cells are not among the complete groups
            if complete:
                raise
            no_partial = f"; no partial verdict on the complete {key0}s: {err}"
    record["groups_complete"] = {key0: sorted(full)}
    if complete:
        assert evaluation is not None
        return {**record, "state": COMPLETE, "verdict": evaluation["verdict"], "evaluation": evaluation,
                "partial": None, "reason": evaluation["reason"]}
    why = (f"{len(current)} of {len(planned)} cells archived ({len(full)} of {len(by)} {key0}s complete): the "
           f"set is incomplete, so no verdict is drawn from it{no_partial}")
    partial = None if evaluation is None else {
        "criterion_verdict": evaluation["verdict"], "headline": ledger._headline(evaluation),
        "reason": evaluation["reason"], f"{key0}s": sorted(full)}
    return {**record, "state": INCOMPLETE, "verdict": ledger.Verdict.INCONCLUSIVE.value, "evaluation": None,
            "partial": partial, "reason": why}


def _plan_value(key: str, value: Any) -> Any:
    """A section value as the plan compares it: the data section's ``root`` is where the machine that
    computed the cell keeps the shared data (e.g. ``../shared/data`` here, another folder on a GPU machine),
    not part of the size; the archive itself is named and pinned by its sha256. The ``cost`` entry (measured
    rates for the predicted time printed before a cell) is not compared either: a cell computed before a
    re-measurement ran at the same sizes."""
    if key == "data" and isinstance(value, Mapping):
        return {k: v for k, v in value.items() if k != "root"}
    if key == "cost":  # the measured rates a cell's prediction used (decisive_fill.py), not a size of the cell
        return None
    return value


def _evaluate(claim: str, spec: Mapping[str, Any], paths: list[str], section: Mapping[str, Any]) -> dict[str, Any]:
    """Aggregate cell files ``paths`` with the claim's aggregate function and apply its criterion."""
    _import_claims(claim)
    agg = resolve_function(claim, spec, "aggregate_function")({**section, "shard_files": list(paths)}, _Ctx())
    agg["params"] = dict(section)
    results = {spec["results_stem"]: agg}
    return ledger.make_evaluation(claim_of(claim), results, scale=spec["scale"])


def _import_claims(claim: str) -> None:
    if claim[:1] not in CLAIM_MODULES:
        raise ArchiveError(f"no paper with claim prefix {claim[:1]!r}")
    importlib.import_module(CLAIM_MODULES[claim[:1]])




def check_entry(e: Mapping[str, Any], root: str | Path = ".", code_hash: str | None = None) -> list[str]:
    """``ledger check`` on an entry's ``decisive`` field: the decisive evaluation it copied
    (``decisive_sha256``) is unchanged, every archived cell it read is unchanged (sha256), sealed and
    intact (a hand-edited cell is refused), and a cell whose compute code is not today's is labelled
    STALE in the entry (never used under a verdict). Returns the problems ([] = fine)."""
    cid = e.get("id", "?")
    want = e.get("decisive_sha256")
    if not want:
        return []
    path_sha = dict(want)
    problems = []
    for rel, sha in path_sha.items():
        p = Path(root) / rel
        if not p.is_file():
            return [f"{cid}: decisive evaluation {p} is missing"]
        if content_sha256(p) != sha:
            return [f"{cid}: decisive evaluation {p} changed after the entry was written; rerun snakemake"]
        rec = read_json(p)
        if summary(rec) != e.get("decisive"):
            problems.append(f"{cid}: the entry's decisive field differs from {p} (edited by hand?)")
        for cell, csha in (rec.get("cells_sha256") or {}).items():
            cp = Path(root) / cell
            if not cp.is_file():
                problems.append(f"{cid}: archived cell {cp} is missing")
                continue
            try:
                v = verify_cell(cp, rec.get("plan") or cid, code_hash=code_hash)
            except (TamperedFileError, ArchiveError) as err:
                problems.append(f"{cid}: archived cell refused: {err}")
                continue
            if v["sha256"] != csha:
                problems.append(f"{cid}: archived cell {cp} changed after the decisive evaluation read it; "
                                "rerun snakemake")
            if v["stale"] and rec.get("state") != STALE:
                problems.append(f"{cid}: archived cell {cp} is STALE (computed by older code) but the entry "
                                f"uses it ({rec.get('state')}); rerun snakemake")
    return problems


def fill(claim: str, spec: Mapping[str, Any], archive: str | Path = ARCHIVE, *, max_cells: int | None = None,
         only: Sequence[str] | None = None, log=print) -> list[Path]:
    """Compute the missing cells of a ``run`` claim, one after another, each sealed into the archive as
    ``snakemake decide`` writes it (:func:`ntkrepro.run.execute` of the claim's ``cell_function`` on
    :func:`cell_params`, config hash = the section's): the same thing without Snakemake or pyyaml, e.g. on a
    GPU machine given the claim's entry of config/decisive.yaml as a dict. Resumable (an archived cell is
    skipped); each cell is written to a temporary folder first and moved in when complete. ``only``: the names of
    the cells to consider (e.g. two processes filling different cells of one claim side by side); a name that is
    not a cell of the plan is refused. Returns the paths written."""
    check_spec(claim, spec, "the plan given to decisive.fill")
    resolve_function(claim, spec, "cell_function")
    names = [c["name"] for c in cells(spec)]
    if only is not None:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise ArchiveError(f"decisive.claims.{claim}: no cell(s) {unknown} in the plan (cells: {names})")
    if Path(archive).exists() and not Path(archive).is_dir():
        raise ArchiveError(f"archive {archive}: a file, not the archive folder (archive/decisive)")
    written: list[Path] = []
    for c in cells(spec):
        out = cell_path(archive, claim, c["name"])
        if out.exists() or (only is not None and c["name"] not in only):
            continue
        if max_cells is not None and len(written) >= max_cells:
            break
        with tempfile.TemporaryDirectory(prefix=f"decisive-{claim}-") as d:  # outside the archive's cells
            tmp = Path(d) / out.name
            res = execute(spec["cell_function"], cell_params(spec, c), tmp, scale="decisive",
                          config_hash=canonical_hash(spec["section"]))
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(tmp), out)
        written.append(out)
        log(f"{claim} cell {c['name']}: {res['wall_seconds']:.0f} s wall -> {out}")
    return written


def resolve_function(claim: str, spec: Mapping[str, Any], key: str) -> Any:
    """The function ``spec[key]`` names (``cell_function``, ``aggregate_function``), or a refusal naming the key."""
    ref = spec[key]
    try:
        fn = _resolve(ref)
    except (ImportError, AttributeError, ValueError) as err:
        raise ArchiveError(f"decisive.claims.{claim}.{key}: {ref!r} is not a function of the library "
                           f"({type(err).__name__}: {err}); give 'package.module:function'") from None
    if not callable(fn):
        raise ArchiveError(f"decisive.claims.{claim}.{key}: {ref!r} is not a function")
    return fn


def _verify_entries(claims_dir: Path) -> int:
    """``verify --claims-dir``: :func:`check_entry` of every headline ledger entry ``<ID>.json`` in
    ``claims_dir`` with a decisive field; prints each problem; returns how many there were."""
    if not claims_dir.is_dir():
        raise ArchiveError(f"{claims_dir}: no such folder of ledger entries (results/claims)")
    bad = 0
    for p in sorted(claims_dir.glob("*.json")):
        try:
            e = read_json(p)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ArchiveError(f"{p}: not a JSON ledger entry ({err})") from None
        if not (isinstance(e, dict) and e.get("id") == p.stem and "verdict" in e and e.get("decisive_sha256")):
            continue
        problems = check_entry(e)
        for q in problems:
            print(f"PROBLEM {q}", file=sys.stderr)
        if not problems:
            print(f"{p}: decisive field ok")
        bad += len(problems)
    return bad


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``judge CLAIM --out FILE`` (the decisive evaluation of the archived cells) and ``verify``
    (every archived cell: seal, budget, staleness; exit 1 on a refused cell; with ``--claims-dir``, also
    each ledger entry's decisive field down to its archived cells, :func:`check_entry`: exit 1 on a problem)."""
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.decisive")
    sub = ap.add_subparsers(dest="cmd", required=True)
    j = sub.add_parser("judge")
    j.add_argument("claim")
    j.add_argument("--plan", default="config/decisive.yaml")
    j.add_argument("--out", required=True)
    v = sub.add_parser("verify")
    v.add_argument("--plan", default="config/decisive.yaml")
    v.add_argument("--delete-stale", action="store_true",
                   help="delete STALE cells, so that `snakemake decide` recomputes them with today's code")
    v.add_argument("--claims-dir", default=None,
                   help="also check the decisive field of each ledger entry <ID>.json there (results/claims): its "
                        "archived cells sealed, unchanged and not STALE under a verdict (what `ledger check` "
                        "leaves to this command)")
    args = ap.parse_args(argv)
    try:
        plan = load_plan(args.plan)
        check_archive(plan["archive"], plan)
        if args.cmd == "judge":
            spec = plan["claims"].get(args.claim)
            if spec is None:
                raise ArchiveError(f"{args.claim}: not a claim of {args.plan} "
                                   f"(its claims: {', '.join(plan['claims'])})")
            if spec.get("status") != "run":
                raise ArchiveError(f"{args.claim}: {args.plan} plans no archived cells for it "
                                   f"(status {spec.get('status')}"
                                   f"{': ' + str(spec['reason']) if spec.get('reason') else ''}); nothing to judge")
            rec = judge(args.claim, spec, plan["archive"], max_bytes=int(plan["max_file_bytes"]))
            write_json(args.out, rec)
            print(f"{args.claim} decisive: {table_cell({**rec, 'headline': summary(rec)['headline']})}")
            return 0
        bad = 0
        for claim in plan["claims"]:
            for p in archived_cells(plan["archive"], claim):
                try:
                    r = verify_cell(p, claim, max_bytes=int(plan["max_file_bytes"]))
                    print(f"{p}: {'STALE (' + r['stale_why'] + ')' if r['stale'] else 'ok'}")
                    if r["stale"] and args.delete_stale:
                        p.unlink()
                        print(f"{p}: deleted (STALE); `snakemake decide` recomputes it")
                except (TamperedFileError, ArchiveError, OSError) as err:
                    bad += 1
                    print(f"REFUSED {err}", file=sys.stderr)
        if args.claims_dir is not None:
            bad += _verify_entries(Path(args.claims_dir))
        return 1 if bad else 0
    except (TamperedFileError, ArchiveError, OSError) as err:
        print(f"decisive {args.cmd}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

