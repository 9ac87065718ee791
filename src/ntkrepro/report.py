"""Build the LaTeX replication report from the ledger, the figures and per-paper prose.

``paper/replication_report.tex.j2`` (Jinja2 with LaTeX-safe delimiters ``<< >>`` / ``<% %>``) is
rendered with: the papers, each paper's hand-written section ``paper/sections/<paper>.tex``, its
claims' ledger entries and its figures; the aggregate claims table comes from
``results/claims/claims_table.tex``. The first page is a summary of every claim from the same ledger entries
and row model (:func:`ntkrepro.ledger.tables.summary_tex`: id, short name, the verdict of each tier, headline
with its interval) and a figure of the verdicts per tier (:func:`ntkrepro.ledger.tables.verdict_figure_tex`).
``latexmk -pdf`` then builds the PDF. Without a LaTeX
toolchain the build stops with a message naming what to install.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ntkrepro.io import atomic_path, read_json
from ntkrepro.ledger import PAPERS, _tex_escape
from ntkrepro.ledger.tables import summary_tex, verdict_figure_tex
from ntkrepro.ledger.specs import NOT_A_CLAIM

INSTALL_HINT = (
    "No LaTeX toolchain found (need `latexmk` and `pdflatex`). Install one, e.g. on Debian/Ubuntu:\n"
    "  apt-get install -y latexmk texlive-latex-base texlive-latex-recommended texlive-latex-extra\n"
    "or on macOS: brew install --cask mactex-no-gui. Then rerun snakemake."
)


def latex_available() -> bool:
    """True if ``latexmk`` and ``pdflatex`` are on PATH."""
    return shutil.which("latexmk") is not None and shutil.which("pdflatex") is not None


def _fmt_measured(val: Any) -> str:
    if isinstance(val, Mapping) and "value" in val:
        return f"{val['value']:.4g} [{val['ci_low']:.4g}, {val['ci_high']:.4g}]"
    if isinstance(val, float):
        return f"{val:.4g}"
    return str(val)


def render(template: Path, entries: Sequence[Mapping[str, Any]], figures: Mapping[str, Mapping[str, Any]],
           table_tex: Path, scale: str, out_dir: Path) -> str:
    """Render the report source; figure paths are made relative to ``out_dir``."""
    import jinja2

    env = jinja2.Environment(block_start_string="<%", block_end_string="%>", variable_start_string="<<",
                             variable_end_string=">>", comment_start_string="<#", comment_end_string="#>",
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             loader=jinja2.FileSystemLoader(str(template.parent)))
    env.filters["tex"] = lambda s: _tex_escape(str(s))
    env.filters["tex_title"] = lambda s: _tex_escape(str(s), breaks=False)
    env.filters["measured"] = _fmt_measured
    env.filters["short_hash"] = lambda s: str(s)[:7]  # a 40-hex commit cannot break across lines
    root = Path.cwd()
    papers = []
    for key, paper in PAPERS.items():
        claims = sorted((e for e in entries if e["paper"] == key), key=lambda e: int(e["id"][1:]))
        figs = []
        for name, f in sorted(figures.items()):
            if f["paper"] == key:
                pdf = Path(os.path.relpath(root / f"{Path(table_tex).parents[1]}/figures/{name}.pdf", out_dir))
                figs.append({"name": name, "claim": f["claim"], "caption": f["caption"], "path": pdf.as_posix()})
        section = root / "paper" / "sections" / f"{key}.tex"
        papers.append({"key": key, "paper": paper, "claims": claims, "figures": figs,
                       "section": os.path.relpath(section, out_dir)})
    # only the seeds' claims are counted (CLAIMS.md rule 9): a proposition the seed does not state is
    # reported under its paper with its numbers and figure, without a verdict, and named here
    not_claims = sorted((e["id"] for e in entries if e["verdict"] == NOT_A_CLAIM), key=_claim_key)
    judged = [e for e in entries if e["verdict"] != NOT_A_CLAIM]
    counts = {v: sum(e["verdict"] == v for e in judged) for v in ("reproduced", "not_reproduced", "inconclusive")}
    # replicates (ntkrepro.ledger.attach_replicates): stable / fragile / run once
    stability = {"stable": sorted((e["id"] for e in judged if e.get("stable") is True), key=_claim_key),
                 "fragile": sorted((e["id"] for e in judged if e.get("stable") is False), key=_claim_key),
                 "single": sorted((e["id"] for e in judged if e.get("stable") is None), key=_claim_key)}
    return env.get_template(template.name).render(
        papers=papers, scale=scale, counts=counts, n_claims=len(judged), not_claims=not_claims,
        not_a_claim=NOT_A_CLAIM, stability=stability,
        table=Path(table_tex).read_text(),
        # the first page (issue 40 item 5): every claim in one table, and the verdicts per tier, from the ledger
        summary=summary_tex(entries), verdict_figure=verdict_figure_tex(entries))


def _claim_key(cid: str) -> tuple[int, int]:
    return ("HAGF".find(cid[:1]), int(cid[1:]))


def build_pdf(tex: Path, pdf: Path) -> None:
    """Run latexmk on ``tex``; the PDF is moved atomically onto ``pdf``."""
    if not latex_available():
        raise SystemExit(INSTALL_HINT)
    cmd = ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error",
           f"-jobname={pdf.stem}.build", tex.name]
    proc = subprocess.run(cmd, cwd=tex.parent, capture_output=True, text=True)
    sys.stderr.write(proc.stdout[-20000:])
    if proc.returncode != 0:
        raise SystemExit(f"latexmk failed on {tex} (see the log above / {tex.parent}/{pdf.stem}.build.log)")
    with atomic_path(pdf) as tmp:
        shutil.copyfile(tex.parent / f"{pdf.stem}.build.pdf", tmp)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI used by the ``replication_report`` rule."""
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.report")
    ap.add_argument("--template", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--entries", nargs="+", required=True)
    ap.add_argument("--captions", nargs="*", default=[], help="figure caption records (results/figures/*.json)")
    ap.add_argument("--scale", required=True)
    ap.add_argument("--tex", required=True)
    ap.add_argument("--pdf", required=True)
    args = ap.parse_args(argv)
    if not latex_available():  # fail before doing anything, with the fix
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    tex, pdf = Path(args.tex), Path(args.pdf)
    figures = {(m := read_json(p))["figure"]: m for p in args.captions}
    source = render(Path(args.template), [read_json(p) for p in args.entries], figures,
                    Path(args.table), args.scale, tex.parent.resolve())
    with atomic_path(tex) as tmp:
        tmp.write_text(source)
    build_pdf(tex, pdf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
