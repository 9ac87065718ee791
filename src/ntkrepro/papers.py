"""The one registry of replicated papers.

Everything that lists the papers reads :data:`PAPERS` (in report order): the ledger (claim-id
prefix -> ``ntkrepro.<key>.claims``), the report (one section per paper, prose in
``paper/sections/<key>.tex``), the Snakefile (includes each paper's ``rule_files``) and the
report rule. The top-level config schema lists each key as a required section; a test proves it
equal to this registry (``tests/test_config_schema.py``). This module imports nothing heavy, so the
Snakefile can read it at parse time. Adding a paper: CONTRIBUTING.md, "Adding a paper".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    """A replicated paper.

    ``key`` names its sub-package ``ntkrepro.<key>``, its config section, its schema
    ``workflow/schemas/<key>.schema.yaml`` and its report section ``paper/sections/<key>.tex``;
    ``claim_prefix`` is the letter of its claim ids (``H`` for H1-H6); ``rule_files`` are its
    Snakemake files under ``workflow/rules/``.
    """

    key: str
    authors: str
    year: int
    title: str
    ref: str
    claim_prefix: str
    rule_files: tuple[str, ...]

    @property
    def claims_module(self) -> str:
        """The module registering this paper's criteria."""
        return f"ntkrepro.{self.key}.claims"


PAPERS: dict[str, Paper] = {p.key: p for p in (
    Paper("hron2020", "Hron, Bahri, Sohl-Dickstein, Novak", 2020,
          "Infinite attention: NNGP and NTK for deep attention networks", "arXiv:2006.10540", "H",
          ("hron2020.smk", "hron2020_cifar10.smk", "hron2020_imdb.smk")),
    Paper("arda2026", "Arda, Cayci, Eryilmaz", 2026,
          "Finite-Time Analysis of Gradient Descent for Shallow Transformers", "arXiv:2601.16514", "A",
          ("arda2026.smk",)),
    Paper("hazelden2026", "Hazelden, Driscoll, Shlizerman, Shea-Brown", 2026, "The Global Empirical NTK",
          "arXiv:2605.08746", "G", ("hazelden2026.smk",)),
    Paper("framework", "(seed 000)", 2025, "Neural Tangent Kernels Applied to Transformers", "seed 000", "F",
          ("framework.smk",)),
)}

#: Which module registers the claims with a given id prefix.
CLAIM_MODULES: dict[str, str] = {p.claim_prefix: p.claims_module for p in PAPERS.values()}

if len(CLAIM_MODULES) != len(PAPERS):
    raise ValueError("two papers share a claim-id prefix")
