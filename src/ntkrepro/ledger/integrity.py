"""The integrity check (``ledger check``): every entry well-formed and its hash chain intact.

The chain runs results files -> evaluation -> ledger entry (issue 22, item 4): :func:`check_chain` finds
its first break, by file; :func:`check_controls`, :func:`check_replicates` and :func:`check_decisive`
check the entry's own fields; :func:`check` runs them over the DAG's claims.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ntkrepro.io import TamperedFileError, content_sha256, read_json, sha256_file
from ntkrepro.ledger.entries import replicate_summary
from ntkrepro.ledger.files import LedgerFileError, load_results, read_ledger_file
from ntkrepro.ledger.rows import control_text, summary
from ntkrepro.ledger.rules import passes_on_control
from ntkrepro.ledger.specs import NOT_A_CLAIM, Verdict, preregistration


_CHAIN_ADDED = {"figures", "figures_note", "replicates", "stable", "evaluation_sha256", "replicate_entries_sha256",
                "decisive", "decisive_sha256"}


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _broken_link(path: Path, sha: str, missing: str, changed: Callable[[str], str]) -> str | None:
    """One link of the hash chain: ``missing`` if ``path`` is no file, ``changed(<its sha256>)`` if its
    content hash (:func:`ntkrepro.io.content_sha256`) is not the recorded ``sha``, else None."""
    if not path.is_file():
        return missing
    got = content_sha256(path)
    return None if got == sha else changed(got)


def check_chain(claims_dir: Path, e: Mapping[str, Any]) -> list[str]:
    """The first break of the entry's hash chain, by file (``[]`` = intact):

    1. ``<claims>/evaluations/<ID>.json`` exists and has the sha256 the entry recorded
       (``evaluation_sha256``), and every field of the evaluation equals the entry's (an entry whose
       verdict or measured values were edited differs from its evaluation);
    2. every results file the evaluation recorded (``results_sha256``, relative to the results
       folder) exists with that sha256, and a results JSON sealed by ``ntkrepro.run`` is intact;
    3. each replicate entry the headline entry read (``replicate_entries_sha256``) has that sha256
       and an intact chain of its own.
    """
    cid = e.get("id", "?")
    root = claims_dir.parent
    want = e.get("evaluation_sha256")
    if not want:
        return [f"{cid}: the entry records no evaluation_sha256 (written before the hash chain, or by hand): "
                "delete it and rerun snakemake"]
    ev_path = claims_dir / "evaluations" / f"{cid}.json"
    broken = _broken_link(ev_path, want, f"{cid}: its evaluation {ev_path} is missing",
                          lambda got: f"{cid}: {ev_path} has sha256 {got[:12]}..., the entry recorded {want[:12]}...: "
                          "the evaluation changed after the entry was written (edited by hand?); delete both and "
                          "rerun snakemake")
    if broken:
        return [broken]
    try:
        ev = read_ledger_file(ev_path, "evaluation")
    except LedgerFileError as err:
        return [f"{cid}: {err}"]
    for k, v in ev.items():
        if k not in _CHAIN_ADDED and not _same(e.get(k, "<missing>"), v):
            return [f"{cid}: field {k!r} of {claims_dir / (cid + '.json')} differs from its evaluation {ev_path} "
                    "(the entry was edited by hand?); delete the entry and rerun snakemake"]
    hashes = ev.get("results_sha256")
    if not isinstance(hashes, Mapping) or not hashes:
        return [f"{cid}: {ev_path} records no results_sha256 (written before the hash chain): delete it and rerun"]
    for rel, sha in hashes.items():
        p = root / rel
        broken = _broken_link(p, sha, f"{cid}: results file {p} (recorded by {ev_path}) is missing",
                              lambda got: f"{cid}: results file {p} has sha256 {got[:12]}..., its evaluation recorded "
                              f"{sha[:12]}...: it changed after the verdict was computed; rerun snakemake")
        if broken:
            return [broken]
        try:
            load_results([p])  # sealed and intact (an unsealed results file is refused too)
        except (TamperedFileError, LedgerFileError) as err:
            return [f"{cid}: {err}"]
    # the replicate summaries of a headline entry: replicate 0 = the entry itself, the others = the
    # replicate entries it read (verdict, headline, measured, controls); an edited summary is found
    summaries = {r.get("replicate"): r for r in (e.get("replicates") or []) if isinstance(r, Mapping)}
    if summaries and int(e.get("replicate", 0)) == 0:
        if not _same(summaries.get(0), replicate_summary(e)):
            return [f"{cid}: replicates[0] of {claims_dir / (cid + '.json')} differs from the entry's own verdict and "
                    "numbers (edited by hand?); delete the entry and rerun snakemake"]
    for rel, sha in (e.get("replicate_entries_sha256") or {}).items():
        p = root / rel
        broken = _broken_link(p, sha, f"{cid}: replicate entry {p} is missing",
                              lambda got: f"{cid}: replicate entry {p} changed after the headline entry was written; "
                              "rerun snakemake")
        if broken:
            return [broken]
        try:
            rep = read_ledger_file(p, "replicate entry")
            problems = check_chain(p.parent, rep)
        except LedgerFileError as err:
            problems = [str(err)]
        if problems:
            return [f"{cid} (replicate {rel}): {problems[0]}"]
        if not _same(summaries.get(rep.get("replicate")), replicate_summary(rep)):
            return [f"{cid}: replicates[{rep.get('replicate')}] of {claims_dir / (cid + '.json')} differs from the "
                    f"replicate entry {p} (edited by hand?); delete the entry and rerun snakemake"]
    n_read = len(e.get("replicate_entries_sha256") or {})
    if summaries and int(e.get("replicate", 0)) == 0 and len(summaries) != 1 + n_read:
        return [f"{cid}: {len(summaries)} replicate summaries, but the entry read {n_read} replicate entries "
                "(edited by hand?); delete the entry and rerun snakemake"]
    return check_decisive(e)


def check_replicates(e: Mapping[str, Any], n_replicates: int | None = None) -> list[str]:
    """Problems with an entry's ``replicates`` / ``stable`` fields (:func:`attach_replicates`):
    replicates 0..K-1 (K = ``n_replicates`` when given, e.g. from the claims index), replicate 0 =
    the headline verdict, ``stable`` equal to the verdicts' agreement (None with one replicate),
    each replicate's archives recorded."""
    cid = e.get("id", "?")
    reps = e.get("replicates")
    if not isinstance(reps, list) or not reps:
        return [f"{cid}: no replicates field"]
    problems = []
    if n_replicates is None:
        n_replicates = len(reps)
    if [r.get("replicate") for r in reps] != list(range(n_replicates)):
        problems.append(f"{cid}: replicates {[r.get('replicate') for r in reps]}, expected 0..{n_replicates - 1}")
    if reps[0].get("verdict") != e.get("verdict"):
        problems.append(f"{cid}: replicate 0's verdict {reps[0].get('verdict')!r} is not the headline verdict")
    verdicts = {r.get("verdict") for r in reps}
    if verdicts - _verdicts(e):
        problems.append(f"{cid}: bad replicate verdicts {sorted(map(str, verdicts))}")
    want = None if len(reps) == 1 else len(verdicts) == 1
    if e.get("stable", "missing") != want:
        problems.append(f"{cid}: stable is {e.get('stable', 'missing')!r}, the replicates' verdicts say {want!r}")
    data_read = [bool(r.get("archives")) for r in reps]
    if any(data_read) and not all(data_read):
        problems.append(f"{cid}: some replicates do not record the archives they read")
    return problems


def check(claims_dir: Path, expected: Sequence[str], replicates: Mapping[str, int] | None = None,
          chain: bool = False) -> list[str]:
    """Problems with the ledger: missing or unreadable entries, missing keys, bad verdicts, inconsistent
    replicates, (with ``replicates``: claim -> number of replicates, as in the claims index) a number of
    replicates other than the DAG's, and (``chain``; the CLI's ``check`` sets it) the first break of
    each entry's hash chain (:func:`check_chain`). Empty list = fine."""
    problems = []
    required = {"id", "paper", "statement", "criterion", "criterion_version", "amendments", "measured", "verdict",
                "scale", "provenance", "replicates", "stable"}
    for cid in expected:
        p = claims_dir / f"{cid}.json"
        if not p.exists():
            problems.append(f"{cid}: no ledger entry at {p}")
            continue
        try:
            e = read_ledger_file(p, "ledger entry")
        except LedgerFileError as err:
            problems.append(f"{cid}: {err}")
            continue
        if e.get("id") != cid:
            problems.append(f"{cid}: {p} is the entry of {e.get('id')!r}")
            continue
        missing = required - e.keys()
        if missing:
            problems.append(f"{cid}: missing keys {sorted(missing)}")
        if e.get("verdict") not in _verdicts(e):
            problems.append(f"{cid}: bad verdict {e.get('verdict')!r}")
        problems += check_seed_claim(e)
        if not e.get("measured"):
            problems.append(f"{cid}: nothing measured")
        if e.get("verdict") == Verdict.INCONCLUSIVE.value and not e.get("power"):
            problems.append(f"{cid}: inconclusive without a power line")
        problems += check_controls(e)
        if "replicates" in e:
            problems += check_replicates(e, None if replicates is None else int(replicates.get(cid, 1)))
        if chain:
            problems += check_chain(claims_dir, e)
    return problems


def check_controls(e: Mapping[str, Any]) -> list[str]:
    """Problems with an entry's negative controls: at least one, each with its verdict and
    ``rejected`` consistent with it, and the control rule kept (``reproduced`` only when no
    control is ``reproduced``; the same for each replicate that records its controls)."""
    cid = e.get("id", "?")
    controls = e.get("controls")
    if not isinstance(controls, list) or not controls:
        return [f"{cid}: no negative control"]
    problems = []
    for c in controls:
        if c.get("verdict") not in _verdicts(e):
            problems.append(f"{cid}: control {c.get('name')!r} has bad verdict {c.get('verdict')!r}")
        elif bool(c.get("rejected")) != (c["verdict"] == Verdict.NOT_REPRODUCED.value):
            problems.append(f"{cid}: control {c.get('name')!r}: rejected={c.get('rejected')!r} "
                            f"but verdict {c['verdict']}")
    if e.get("verdict") == Verdict.REPRODUCED.value and any(passes_on_control(c, e.get("parts")) for c in controls):
        problems.append(f"{cid}: reproduced although a control passes the criterion too "
                        f"({control_text(e)})")
    for r in e.get("replicates") or []:
        rc = r.get("controls")
        if rc is not None and r.get("verdict") == Verdict.REPRODUCED.value and any(
                c.get("verdict") == Verdict.REPRODUCED.value for c in rc):
            problems.append(f"{cid}: replicate {r.get('replicate')} reproduced although a control passes too")
    return problems


def _verdicts(e: Mapping[str, Any]) -> set[str]:
    """The values an entry's (and its controls' and replicates') ``verdict`` may take: a
    :class:`Verdict`, or only :data:`NOT_A_CLAIM` for a proposition the seed does not state (rule 9)."""
    return {NOT_A_CLAIM} if e.get("seed_claim") is False else {v.value for v in Verdict}


def check_seed_claim(e: Mapping[str, Any]) -> list[str]:
    """CLAIMS.md rule 9 in an entry: a proposition the seed does not state (``seed_claim`` false, with its
    ``not_a_claim`` reason) has verdict :data:`NOT_A_CLAIM` and no criterion verdict, and so do its
    controls; a seed claim never has that verdict; and the entry agrees with the claim's pre-registration
    (a claim cannot be taken out of the count, or put back, by editing its entry)."""
    cid = e.get("id", "?")
    problems = []
    reported = e.get("seed_claim") is False
    if reported and not str(e.get("not_a_claim") or "").strip():
        problems.append(f"{cid}: seed_claim is false but the entry gives no not_a_claim reason")
    if reported and (e.get("verdict") != NOT_A_CLAIM or e.get("criterion_verdict") is not None):
        problems.append(f"{cid}: not a claim of the seed but has verdict {e.get('verdict')!r} / criterion verdict "
                        f"{e.get('criterion_verdict')!r} (rule 9: reported, no verdict)")
    if not reported and e.get("verdict") == NOT_A_CLAIM:
        problems.append(f"{cid}: verdict {NOT_A_CLAIM!r} on an entry that does not say seed_claim = false")
    try:
        spec = preregistration(str(e.get("paper")))[cid]
    except (KeyError, ValueError, FileNotFoundError, ModuleNotFoundError):
        return problems  # an unknown claim is reported elsewhere (the chain, the DAG's list)
    if spec.seed_claim == reported:
        problems.append(f"{cid}: the entry says seed_claim={not reported}, its pre-registration says "
                        f"{spec.seed_claim}: rerun the claim's evaluation")
    return problems


def check_decisive(e: Mapping[str, Any], root: str | Path = ".") -> list[str]:
    """``ledger check`` of an entry's decisive field, its hash chain: the decisive evaluation it copied
    (``decisive_sha256``) is unchanged, the field is that evaluation's summary
    (:func:`ntkrepro.ledger.rows.summary`), and every archived cell the evaluation read is there and
    unchanged (sha256). Whether each archived cell is sealed, in budget and computed by today's code
    (not STALE) is checked above the ledger, by ``python -m ntkrepro.decisive verify --claims-dir``
    (:func:`ntkrepro.decisive.check_entry`): the ledger imports no compute code (issue 40 item 1)."""
    cid = e.get("id", "?")
    want = e.get("decisive_sha256")
    if not want:
        return [f"{cid}: a decisive field without decisive_sha256 (edited by hand?)"] if e.get("decisive") else []
    problems = []
    for rel, sha in dict(want).items():
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
            elif sha256_file(cp) != csha:
                problems.append(f"{cid}: archived cell {cp} changed after the decisive evaluation read it; "
                                "rerun snakemake")
    return problems
