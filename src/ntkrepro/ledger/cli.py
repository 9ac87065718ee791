"""The command line, ``python -m ntkrepro.ledger``: ``evaluate``, ``entry``, ``table``, ``check``.

The workflow's ledger rules (``workflow/rules/ledger.smk``) call these; each wraps one function of the
package and turns a bad file into a one-line error naming it (exit 1) and an unknown claim into exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ntkrepro.io import TamperedFileError, content_sha256, write_json
from ntkrepro.ledger.entries import attach_decisive, entry_from_evaluation
from ntkrepro.ledger.evaluate import EVALUATE_SCALES, make_evaluation
from ntkrepro.ledger.files import (ClaimLookupError, LedgerFileError, file_hashes, load_results, read_ledger_file,
                                  results_root)
from ntkrepro.ledger.integrity import check, check_chain, check_controls, check_replicates
from ntkrepro.ledger.registry import get_claim, registered_claims
from ntkrepro.ledger.tables import write_table


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``evaluate`` (one claim's criterion), ``entry`` (its ledger entry), ``table`` (aggregate), ``check``
    (CI)."""
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.ledger",
                                 description="The claims ledger: pre-registered criteria, verdicts and the "
                                             "aggregate claims table.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("evaluate", help="apply one claim's criterion and write its evaluation")
    v.add_argument("claim")
    v.add_argument("--results", nargs="+", required=True)
    v.add_argument("--scale", required=True, choices=EVALUATE_SCALES,
                   help="smoke/default/paper (the config's scale) or gpu (results of ntkrepro.hron2020.gpu_run)")
    v.add_argument("--config-hash", default=None)
    v.add_argument("--out", required=True)
    v.add_argument("--replicate", type=int, default=0, help="replicate index of this run (0: the headline run)")
    e = sub.add_parser("entry", help="write a claim's ledger entry: its evaluation plus its figures")
    e.add_argument("claim")
    e.add_argument("--evaluation", required=True, help="the claim's evaluation (from `evaluate`)")
    e.add_argument("--figures", nargs="*", default=[])
    e.add_argument("--out", required=True)
    e.add_argument("--replicate-entries", nargs="*", default=[],
                   help="ledger entries of replicates 1.. of this claim (headline entry only)")
    e.add_argument("--decisive", nargs="*", default=[],
                   help="the claim's decisive evaluation (archived decisive tier judged now; ntkrepro.decisive)")
    t = sub.add_parser("table", help="aggregate ledger entries into the claims table")
    t.add_argument("entries", nargs="+")
    t.add_argument("--csv", required=True)
    t.add_argument("--md", required=True)
    t.add_argument("--tex", required=True)
    t.add_argument("--index", required=True, help="where to write the JSON list of the DAG's claims")
    t.add_argument("--expected", nargs="+", required=True, help="claim ids registered in the DAG")
    t.add_argument("--replicates", type=int, default=1, help="replicates per replicated claim (config replicates)")
    t.add_argument("--replicated", nargs="*", default=[], help="claim ids run with replicates")
    c = sub.add_parser("check", help="verify every claim in the DAG has a valid ledger entry")
    c.add_argument("--claims-dir", default="results/claims")
    c.add_argument("--pdf", nargs="*", default=[])
    args = ap.parse_args(argv)
    if args.cmd == "evaluate" and args.replicate < 0:
        ap.error(f"--replicate {args.replicate}: a replicate index is 0 (the headline run) or 1, 2, ...")
    for opt in ("out", "csv", "md", "tex", "index"):
        target = getattr(args, opt, None)
        above = next((q for q in Path(target).parents if q.exists() and not q.is_dir()), None) if target else None
        if above is not None:  # else a NotADirectoryError traceback when it is written
            ap.error(f"--{opt} {target}: {above} is a file, not a folder; give a path below a folder")
        if target and Path(target).is_dir():
            ap.error(f"--{opt} {target} is a directory; give a file path")

    try:
        return _run(ap, args)
    except (LedgerFileError, TamperedFileError) as err:
        print(f"ledger {args.cmd}: {err}", file=sys.stderr)
        return 1
    except ClaimLookupError as err:
        print(f"ledger {args.cmd}: {err}", file=sys.stderr)
        return 2


def _run(ap: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.cmd == "evaluate":
        try:
            get_claim(args.claim)
        except KeyError as err:
            why = err.args[0] if err.args else err
            raise ClaimLookupError(f"unknown claim {args.claim!r} ({why}); registered claims: "
                                   f"{', '.join(registered_claims())}") from None
        missing = [p for p in args.results if not Path(p).is_file()]
        if missing:
            raise LedgerFileError(f"results file(s) {', '.join(missing)} do not exist (run snakemake to make them)")
        results = load_results(args.results)
        for stem, r in results.items():
            ran = (r.get("provenance") or {}).get("scale") if isinstance(r.get("provenance"), Mapping) else None
            if ran is not None and ran != args.scale:
                raise LedgerFileError(f"results file of {stem} was computed at scale {ran!r}, not --scale "
                                      f"{args.scale}: judge it at --scale {ran}")
        try:
            evaluation = make_evaluation(args.claim, results, scale=args.scale,
                                         config_hash=args.config_hash, replicate=args.replicate,
                                         results_sha256=file_hashes(args.results, results_root(args.out)))
        except (KeyError, IndexError, TypeError) as err:
            raise LedgerFileError(f"results {', '.join(map(str, args.results))} do not hold what claim {args.claim}'s "
                                  f"criterion reads ({type(err).__name__}: {err}); are they the results of "
                                  f"{args.claim}? Its rule's results are listed in the claim map") from None
        write_json(args.out, evaluation)
        print(f"{args.claim} (replicate {args.replicate}): {evaluation['verdict']} -- {evaluation['reason']}")
    elif args.cmd == "entry":
        evaluation = read_ledger_file(args.evaluation, "evaluation")
        if evaluation.get("id") != args.claim:
            print(f"{args.evaluation} is the evaluation of {evaluation.get('id')!r}, not {args.claim}", file=sys.stderr)
            return 1
        if int(evaluation.get("replicate", 0)) != 0 and args.replicate_entries:
            ap.error("--replicate-entries belongs to the headline entry (replicate 0)")
        entry = entry_from_evaluation(evaluation, args.figures,
                                      [read_ledger_file(p, "replicate entry") for p in args.replicate_entries])
        # the hash chain (check_chain): the evaluation this entry copies, and the replicate entries it read
        root = Path(args.out).parent.parent
        entry["evaluation_sha256"] = content_sha256(args.evaluation)
        if args.replicate_entries:
            entry["replicate_entries_sha256"] = file_hashes(args.replicate_entries, root)
        attach_decisive(entry, args.decisive)
        write_json(args.out, entry)
        print(f"{args.claim} (replicate {entry['replicate']}): {entry['verdict']}"
              + ("" if entry.get("stable") is None else f" [stable across replicates: {entry['stable']}]"))
    elif args.cmd == "table":
        entries = [read_ledger_file(p, "ledger entry") for p in args.entries]
        seen: dict[str, str] = {}
        for p, e in zip(args.entries, entries):
            if not isinstance(e.get("id"), str):
                raise LedgerFileError(f"ledger entry {p} has no claim id: delete it and rerun snakemake")
            if e["id"] in seen:
                raise LedgerFileError(f"claim {e['id']} is given twice ({seen[e['id']]} and {p}); "
                                      "give each ledger entry once")
            seen[e["id"]] = p
        # the table (and the report built from it) holds only entries that pass `ledger check`: an
        # entry edited by hand, or resting on an edited evaluation or results file, stops the build here
        problems = [q for p, e in zip(args.entries, entries)
                    for q in check_controls(e) + check_replicates(e) + check_chain(Path(p).parent, e)]
        if problems:
            for q in problems:
                print("LEDGER:", q, file=sys.stderr)
            raise LedgerFileError(f"{len(problems)} problem(s) in the ledger entries (above, by file) failed the "
                                  "ledger check; no claims table is written from unchecked entries")
        write_table(entries, Path(args.csv), Path(args.md), Path(args.tex))
        got = {e["id"] for e in entries}
        if set(args.expected) != got:
            print(f"ledger entries {sorted(got)} differ from the DAG's claims {sorted(args.expected)}",
                  file=sys.stderr)
            return 1
        write_json(args.index, {"claims": sorted(args.expected),
                                "replicates": {c: (args.replicates if c in args.replicated else 1)
                                               for c in sorted(args.expected)}})
    elif args.cmd == "check":
        claims_dir = Path(args.claims_dir)
        index = claims_dir / "index.json"
        if not index.exists():
            print(f"no claims index at {index}", file=sys.stderr)
            return 1
        idx = read_ledger_file(index, "claims index")
        expected = idx.get("claims")
        if not isinstance(expected, list) or not all(isinstance(c, str) for c in expected):
            raise LedgerFileError(f"claims index {index} has no list of claim ids: rerun snakemake")
        if not expected:
            raise LedgerFileError(f"claims index {index} lists no claims (\"claims\": []): the DAG registers claims, "
                                  "so the index was edited or written by hand; delete it and rerun snakemake")
        # the index is not trusted for which claims there are (issue 39): the registry says which claims exist,
        # and every registered claim with an entry or evaluation in this folder must be listed
        registry = registered_claims()
        problems = [f"claims index {index} lists {c}, which no paper registers: delete the index and rerun snakemake"
                    for c in expected if c not in registry]
        for c in sorted(set(registry) - set(expected)):
            traces = [p for p in (claims_dir / f"{c}.json", claims_dir / "evaluations" / f"{c}.json") if p.is_file()]
            if traces:
                problems.append(f"{traces[0]}: the ledger holds claim {c}, but the claims index {index} does not list "
                                "it (the index edited?); delete the index and rerun snakemake, which rewrites it")
        problems += check(claims_dir, expected, idx.get("replicates"), chain=True)
        problems += [f"missing report {p}" for p in args.pdf if not Path(p).is_file()]
        for p in problems:
            print("LEDGER:", p, file=sys.stderr)
        if problems:
            return 1
        absent = sorted(set(registry) - set(expected))
        print(f"ledger ok: {len(expected)} claims ({', '.join(expected)})"
              + (f"; {len(absent)} registered claims not in this ledger: {', '.join(absent)}" if absent else ""))
    return 0
