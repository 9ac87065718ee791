"""The claims ledger: pre-registered criteria, verdicts and the aggregate claims table.

Each claim of ``CLAIMS.md`` is pre-registered in its paper's sub-package *before* any run: its
statement, criterion text, criterion version and amendment log in ``<paper>/claims.toml``
(:data:`PREREGISTRATION_FILE`), the function applying the criterion beside it in
``<paper>/claims.py``::

    @register(load_claim_spec("hron2020", "H1"))
    def evaluate_h1(results: Results, scale: str) -> Evaluation: ...

Each criterion function is unit-tested on synthetic numbers in both directions. The criterion is
applied once per claim:
``python -m ntkrepro.ledger evaluate H1 ...`` loads the claim's results files, applies the function
and writes the evaluation ``results/claims/evaluations/H1.json`` (keys ``id, paper, statement,
criterion, measured, verdict, scale, substitutes, data, figure_data, provenance``). The figure
notebooks read that file (they never call a criterion), then ``python -m ntkrepro.ledger entry H1
--evaluation ... --figures ...`` adds the figure list and writes ``results/claims/H1.json``, so the
DAG is results -> evaluation -> figures -> entry, without a cycle. ``python -m ntkrepro.ledger
table`` aggregates all entries (CSV, Markdown, LaTeX).

The map: this package is the public face; each module holds one concern, and each imports only the
ones above it in this list (none imports a paper package, :mod:`ntkrepro.decisive` or
:mod:`ntkrepro.verdicts`: those two are clients above the ledger, which owns a claim's record and its
rendering; ``tests/test_layering.py``):

==========================================  =====================================================
module                                      concern
==========================================  =====================================================
:mod:`ntkrepro.ledger.specs`                what a claim is: :class:`Verdict`, :class:`Evaluation`,
                                            :data:`Results`, :class:`ClaimSpec` (with
                                            :class:`Amendment`, :class:`Correction`,
                                            :class:`ControlSpec`), read and checked from
                                            ``<paper>/claims.toml`` (:func:`load_claim_spec`);
                                            :data:`NOT_A_CLAIM`, the entry of a proposition the
                                            seed does not state (CLAIMS.md rule 9)
:mod:`ntkrepro.ledger.registry`             the criterion and control registries (:func:`register`,
                                            :func:`register_control`,
                                            :func:`register_stored_control`, :func:`get_claim`) and how
                                            criteria read results (:func:`one_result`,
                                            :func:`stored_control`)
:mod:`ntkrepro.ledger.rules`                the verdict rules: :func:`decide`, :func:`verdict_of`,
                                            the NaN rule (:func:`apply_nan_rule`) and the control
                                            rule (:func:`apply_control_rule`)
:mod:`ntkrepro.ledger.files`                reading and hashing results files, evaluations and
                                            entries (:func:`load_results`, :func:`read_ledger_file`,
                                            :func:`file_hashes`, :class:`LedgerFileError`)
:mod:`ntkrepro.ledger.rows`                 a claim's record as the tables show it: the one row
                                            model (:class:`~ntkrepro.ledger.rows.ClaimRow`,
                                            :func:`table_rows`, :func:`summarise`) and every cell
                                            formatter (long: CSV and report; short: Markdown and
                                            README; LaTeX), and the decisive tier's entry field,
                                            cell and tier-table row (:func:`summary`,
                                            :func:`table_cell`, :func:`tier_row`)
:mod:`ntkrepro.ledger.tables`               the claims table rendered from the rows: CSV, Markdown
                                            (+ details, :func:`render`), LaTeX, the tier table
                                            (:func:`write_table`, :func:`render_tiers`)
:mod:`ntkrepro.ledger.evaluate`             one claim's criterion and controls applied once
                                            (:func:`make_evaluation`)
:mod:`ntkrepro.ledger.entries`              the ledger entry: figures, replicates and ``stable``,
                                            the decisive tier (:func:`entry_from_evaluation`)
:mod:`ntkrepro.ledger.integrity`            ``ledger check``: the entries' fields and the hash chain
                                            results -> evaluation -> entry (:func:`check`)
:mod:`ntkrepro.ledger.cli`                  ``python -m ntkrepro.ledger evaluate|entry|table|check``
                                            (:func:`main`)
==========================================  =====================================================

Every name below is importable from ``ntkrepro.ledger`` as before the split (the registries
``_REGISTRY`` and ``_CONTROLS`` are the very dicts of :mod:`ntkrepro.ledger.registry`).
"""

from __future__ import annotations

from ntkrepro.ledger.specs import (  # noqa: F401  (_amendment, _claim_spec: tested directly)
    NOT_A_CLAIM, NOT_A_CLAIM_LABEL, PREREGISTRATION_FILE, Amendment, ClaimSpec, ControlSpec, Correction, Evaluation,
    Results, Verdict, _amendment, _claim_spec, load_claim_spec, preregistration)
from ntkrepro.ledger.registry import (  # noqa: F401  (the registries: one object each, shared)
    _CONTROLS, _REGISTRY, ControlFn, control_function, get_claim, one_result, register, register_control,
    register_stored_control, registered_claims, stored_control)
from ntkrepro.ledger.rules import (NAN_NOT_EVIDENCE, UNINFORMATIVE, apply_control_rule, apply_nan_rule, decide,
                                   nan_paths, passes_on_control, sign_status, verdict_of)
from ntkrepro.ledger.files import (ClaimLookupError, LedgerFileError, file_hashes, load_results, read_ledger_file,
                                   results_root)
from ntkrepro.ledger.rows import (  # noqa: F401  (_headline: ntkrepro.decisive; the _*short: tested directly)
    COLUMNS, COMPLETE, EMPTY, INCOMPLETE, NOT_A_CLAIM_CELL, STALE, TIER, TIER_COLUMNS, ClaimRow, _control_short,
    _decisive_short, _headline, _stable_short, _tex_escape, control_text, decisive_short, decisive_text, device_short,
    headline, stability_text, summarise, summary, table_cell, table_rows, tier_row)
from ntkrepro.ledger.tables import count_line, details_path, render, render_tiers, write_table
from ntkrepro.ledger.evaluate import EVALUATE_SCALES, SCALES, evaluate_control, make_evaluation
from ntkrepro.ledger.entries import (archives_read, attach_decisive, attach_replicates, entry_from_evaluation,
                                     make_entry, replicate_summary)
from ntkrepro.ledger.integrity import (check, check_chain, check_controls, check_decisive, check_replicates,
                                       check_seed_claim)
from ntkrepro.ledger.cli import main

from ntkrepro.papers import CLAIM_MODULES, PAPERS, Paper  # noqa: F401  (the one paper registry, re-exported)
from ntkrepro.stats import Interval, PowerLine, Status  # noqa: F401  (re-exported as before the split)

__all__ = [
    # specs
    "Verdict", "NOT_A_CLAIM", "NOT_A_CLAIM_LABEL", "Evaluation", "Results", "Amendment", "Correction", "ControlSpec",
    "ClaimSpec",
    "PREREGISTRATION_FILE", "preregistration", "load_claim_spec",
    # registry
    "register", "ControlFn", "register_control", "register_stored_control", "stored_control", "control_function",
    "get_claim", "registered_claims", "one_result",
    # rules
    "decide", "sign_status", "verdict_of", "nan_paths", "NAN_NOT_EVIDENCE", "apply_nan_rule", "UNINFORMATIVE",
    "apply_control_rule", "passes_on_control",
    # files
    "LedgerFileError", "ClaimLookupError", "read_ledger_file", "load_results", "results_root", "file_hashes",
    # rows
    "ClaimRow", "COLUMNS", "TIER_COLUMNS", "NOT_A_CLAIM_CELL", "TIER", "COMPLETE", "INCOMPLETE", "STALE", "EMPTY",
    "control_text", "stability_text", "decisive_text", "headline", "decisive_short", "device_short", "table_rows",
    "summarise", "summary", "table_cell", "tier_row",
    # tables
    "details_path", "write_table", "render", "count_line", "render_tiers",
    # evaluate
    "SCALES", "EVALUATE_SCALES", "evaluate_control", "make_evaluation",
    # entries
    "archives_read", "replicate_summary", "attach_replicates", "entry_from_evaluation", "make_entry",
    "attach_decisive",
    # integrity
    "check_chain", "check_replicates", "check", "check_controls", "check_decisive", "check_seed_claim",
    # cli
    "main",
    # re-exported
    "CLAIM_MODULES", "PAPERS", "Paper", "Interval", "PowerLine", "Status",
]
