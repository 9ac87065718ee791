"""Ledger entries: an evaluation plus its figures, its replicates (``stable``) and its decisive tier.

:func:`entry_from_evaluation` makes the entry ``results/claims/<ID>.json`` from the claim's evaluation;
the headline entry (replicate 0) carries every replicate's summary and ``stable``
(:func:`attach_replicates`; :mod:`ntkrepro.replicates`) and the archived decisive run judged now
(:func:`attach_decisive`; judged by :mod:`ntkrepro.decisive`, summarised by
:func:`ntkrepro.ledger.rows.summary`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ntkrepro.io import content_sha256
from ntkrepro.ledger.evaluate import make_evaluation
from ntkrepro.ledger.files import LedgerFileError, read_ledger_file
from ntkrepro.ledger.specs import Results
from ntkrepro.ledger.rows import _headline, summary


#: Suffixes of the DAG's own intermediate files (shard results), which are not data archives.
_INTERMEDIATE_SUFFIXES = (".json", ".npz")


def archives_read(entry: Mapping[str, Any]) -> dict[str, str]:
    """``{path: sha256}`` of every data archive (CIFAR-10, IMDb, GloVe, ...) the entry's results
    files declare they read (their provenance ``data``), without the DAG's own intermediate files
    (shard results ``.json`` / ``.npz``). Empty for a claim that reads no data."""
    out: dict[str, str] = {}
    for prov in (entry.get("results_provenance") or {}).values():
        out.update((k, v) for k, v in ((prov or {}).get("data") or {}).items()
                   if not str(k).endswith(_INTERMEDIATE_SUFFIXES))
    return dict(sorted(out.items()))


def replicate_summary(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What a replicate contributes to the headline entry: its index, verdict, headline numbers,
    measured values and the archives (sha256) it read."""
    return {"replicate": int(entry.get("replicate", 0)), "verdict": entry["verdict"], "headline": _headline(entry),
            "measured": entry["measured"], "archives": archives_read(entry),
            "controls": [{k: c.get(k) for k in ("name", "verdict", "rejected", "headline")}
                         for c in entry.get("controls") or []]}


def attach_replicates(entry: dict[str, Any], replicates: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Add ``replicates`` (replicate 0 = ``entry`` itself, then ``replicates`` by index) and ``stable``
    to the headline entry. ``stable`` is true when every replicate reached the same verdict, false
    when any differ (the claim is *fragile*), ``None`` with replicate 0 alone. The headline verdict
    stays replicate 0's."""
    for r in replicates:
        if r["id"] != entry["id"]:
            raise ValueError(f"replicate entry of {r['id']} given for {entry['id']}")
        if int(r.get("replicate", 0)) < 1:
            raise ValueError(f"{entry['id']}: a replicate entry must have replicate >= 1, got {r.get('replicate')}")
    idx = [int(r["replicate"]) for r in replicates]
    if len(set(idx)) != len(idx):
        raise ValueError(f"{entry['id']}: replicate indices repeat: {idx}")
    reps = [replicate_summary(entry)] + [replicate_summary(r) for r in sorted(replicates, key=lambda r: r["replicate"])]
    entry["replicates"] = reps
    entry["stable"] = None if len(reps) == 1 else len({r["verdict"] for r in reps}) == 1
    return entry


def entry_from_evaluation(evaluation: Mapping[str, Any], figures: Sequence[str] = (),
                          replicates: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The ledger entry: the claim's evaluation (:func:`make_evaluation`) plus its figure files and,
    for the headline entry (replicate 0), its replicates' entries (:func:`attach_replicates`). A
    replicate's entry (replicate >= 1) has no figures and says so in ``figures_note``."""
    entry = dict(evaluation)
    entry["figures"] = list(figures)
    replicate = int(entry.get("replicate", 0))
    if replicate == 0:
        attach_replicates(entry, replicates)
    elif replicates:
        raise ValueError(f"{entry['id']}: replicate entries belong to the headline entry (replicate 0)")
    else:
        entry["figures_note"] = f"replicate {replicate}: no figure drawn (replicates run the compute chain only)"
    return entry


def make_entry(claim_id: str, results: Results, *, scale: str, figures: Sequence[str] = (),
               config_hash: str | None = None, replicate: int = 0,
               replicates: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Apply the registered criterion and assemble the ledger entry (a JSON-able dict) in one step."""
    evaluation = make_evaluation(claim_id, results, scale=scale, config_hash=config_hash, replicate=replicate)
    return entry_from_evaluation(evaluation, figures, replicates)


# --------------------------------------------------------------------------------------------
# The decisive tier (issue 29): the archived decisive run judged now (ntkrepro.decisive), beside this run


def attach_decisive(entry: dict[str, Any], paths: Sequence[str | Path]) -> dict[str, Any]:
    """Copy the claim's decisive evaluation (:func:`ntkrepro.decisive.judge`, at most one file) into the
    entry's ``decisive`` field (:func:`ntkrepro.ledger.rows.summary`) and record its sha256 (hash chain)."""
    if not paths:
        return entry
    if len(paths) != 1:
        raise LedgerFileError(f"{entry.get('id')}: one decisive evaluation expected, got {len(paths)}")
    rec = read_ledger_file(paths[0], "decisive evaluation")
    if rec.get("id") != entry.get("id"):
        raise LedgerFileError(f"{paths[0]} is the decisive evaluation of {rec.get('id')!r}, not {entry.get('id')}")
    entry["decisive"] = summary(rec)
    entry["decisive_sha256"] = {str(paths[0]): content_sha256(paths[0])}
    return entry
