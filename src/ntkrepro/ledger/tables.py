"""The claims table: one row per ledger entry, written as CSV, Markdown (+ details) and LaTeX.

:func:`table_rows` turns entries into cells (:func:`control_text`, :func:`stability_text`,
:func:`decisive_text`, the headline numbers); :func:`write_table` writes the CSV (every column), the
Markdown table (one short line per claim, :mod:`ntkrepro.verdicts`) with its detail file
(:func:`details_path`) and the LaTeX ``longtable`` body of the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ntkrepro.io import atomic_path
from ntkrepro.ledger.specs import NOT_A_CLAIM, NOT_A_CLAIM_LABEL, Verdict
from ntkrepro.papers import PAPERS


_TABLE_COLUMNS = ("id", "paper", "statement", "verdict", "control", "stable", "scale", "headline", "criterion",
                  "power", "substitutes", "decisive")

def _g(x: Any) -> str:
    """``x`` with 3 significant digits if it is a number, else as text (``None`` -> ``None``)."""
    return f"{x:.3g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _headline(entry: Mapping[str, Any], max_items: int = 2) -> str:
    parts = []
    for name, val in list((entry.get("measured") or {}).items())[:max_items]:
        if isinstance(val, Mapping) and "value" in val:
            parts.append(f"{name} = {_g(val['value'])} [{_g(val.get('ci_low'))}, {_g(val.get('ci_high'))}]")
        elif isinstance(val, Mapping) and "p_greater" in val and "p_less" in val:
            # a one-sided test (ntkrepro.stats.OneSidedTest.as_dict): its statistic and both p-values
            stat = val.get("mean_difference", val.get("statistic"))
            parts.append(f"{name} = {_g(stat)} (p> {_g(val['p_greater'])}, "
                         f"p< {_g(val['p_less'])}, {val.get('test', 'test')}, n {val.get('n')})")
        elif isinstance(val, float):
            parts.append(f"{name} = {val:.3g}")
        else:
            parts.append(f"{name} = {val}")
    return "; ".join(parts)


def control_text(entry: Mapping[str, Any]) -> str:
    """The claims table's "control" cell: each control's name and the criterion's verdict on it,
    ``none`` when the claim has no control."""
    controls = entry.get("controls") or []
    if not controls:
        return "none"
    return "; ".join(f"{c['name']}: {'reported' if c['verdict'] == NOT_A_CLAIM else c['verdict']}" for c in controls)


def stability_text(entry: Mapping[str, Any]) -> str:
    """The claims table's "stable across replicates" cell: ``yes (K)``, ``FRAGILE`` with every
    replicate's verdict and headline numbers, or ``n/a (1 replicate)``."""
    reps = entry.get("replicates") or []
    stable = entry.get("stable")
    if stable is None or len(reps) < 2:
        return "n/a (1 replicate)"
    if stable:
        return f"yes ({len(reps)} replicates)"
    return "FRAGILE: " + " / ".join(f"r{r['replicate']} {r['verdict']} ({r['headline']})" for r in reps)


def decisive_text(entry: Mapping[str, Any]) -> str:
    """The claims table's "decisive run (archived: device, date, commit)" cell ("-": none archived)."""
    d = entry.get("decisive")
    return d.get("cell", "-") if isinstance(d, Mapping) else "-"


def table_rows(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One row per ledger entry, in report order (papers as in :data:`PAPERS`, then claim number)."""
    rows = []
    order = list(PAPERS)
    for e in sorted(entries, key=lambda e: (order.index(e["paper"]), int(e["id"][1:]))):
        n_am = len(e.get("amendments", []))
        crit = f"v{e.get('criterion_version', 1)}" + (f" (amended {n_am}x after results were seen)" if n_am else "")
        verdict = f"no verdict ({NOT_A_CLAIM_LABEL})" if e["verdict"] == NOT_A_CLAIM else e["verdict"]
        rows.append({"id": e["id"], "paper": e["paper"], "statement": e["statement"], "verdict": verdict,
                     "control": control_text(e),
                     "stable": stability_text(e),
                     "scale": e["scale"],
                     "headline": _headline(e), "criterion": crit,
                     "power": " | ".join(p["text"] for p in e.get("power", [])),
                     "substitutes": "; ".join(e.get("substitutes", [])),
                     "decisive": decisive_text(e)})
    return rows


def _tex_escape(s: str, breaks: bool = True) -> str:
    """LaTeX-escape ``s``. With ``breaks``, a line may break after "_" and "/" (long identifiers
    and paths in narrow table cells); titles and PDF strings take ``breaks=False``."""
    repl = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
            "_": r"\_\allowbreak{}" if breaks else r"\_", "/": r"/\allowbreak{}" if breaks else "/",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
            "<": r"\textless{}", ">": r"\textgreater{}"}
    return "".join(repl.get(c, c) for c in s)


def _stable_short(cell: str) -> str:
    """The LaTeX table's short form of a "stable" cell (the fragile numbers are in the report text)."""
    if cell.startswith("FRAGILE"):
        # verdicts only ("r0 inconclusive / r1 reproduced"): the numbers are in the claim's subsection
        reps = cell.split(": ", 1)[1].split(" / r")
        return "fragile: " + " / r".join(r.split(" (", 1)[0] for r in reps)
    return cell


def _control_short(cell: str) -> str:
    """The LaTeX table's short form of a "control" cell: ``fails (N)`` when no control passes the
    criterion, otherwise how many pass ("holds in k of N": uninformative; details in the claim's
    subsection)."""
    if cell == "none":
        return "none"
    verdicts = [c.rsplit(": ", 1)[1] for c in cell.split("; ")]
    if all(v == "reported" for v in verdicts):  # a proposition the seed does not state: nothing judged
        return f"reported ({len(verdicts)})"
    holds = sum(v == Verdict.REPRODUCED.value for v in verdicts)
    return (f"fails ({len(verdicts)})" if not holds else f"HOLDS in {holds} of {len(verdicts)}")


def _decisive_short(cell: str) -> str:
    """The LaTeX table's short form of a "decisive" cell (:func:`ntkrepro.verdicts.decisive_short`)."""
    from ntkrepro.verdicts import decisive_short

    return decisive_short(cell)


def details_path(md_path: Path) -> Path:
    """The per-claim detail file written beside the Markdown claims table."""
    return md_path.with_name(md_path.stem + "_details.md")


def _details(rows: Sequence[Mapping[str, str]]) -> str:
    """The long texts of the claims table, one section per claim: statement, verdict, headline,
    controls, replicates, criterion version, power lines and substitutes."""
    out = ["# Claims: the details behind claims_table.md", ""]
    for r in rows:
        out += [f"## {r['id']} ({r['paper']}): {r['verdict']}", "", r["statement"], "",
                f"- headline: {r['headline'] or '-'}", f"- controls: {r['control']}", f"- replicates: {r['stable']}",
                f"- decisive tier: {r['decisive']}", f"- criterion: {r['criterion']}", f"- scale: {r['scale']}"]
        if r["power"]:
            out += ["- power (what would decide it):"] + [f"  - {t.strip()}" for t in r["power"].split(" | ")]
        if r["substitutes"]:
            out += [f"- substitutes: {r['substitutes']}"]
        out.append("")
    return "\n".join(out)


def write_table(entries: Sequence[Mapping[str, Any]], csv_path: Path, md_path: Path, tex_path: Path) -> None:
    """Write the aggregate claims table as CSV (every column), Markdown (one short line per claim,
    :mod:`ntkrepro.verdicts`; the long texts in :func:`details_path`) and a LaTeX ``longtable`` body
    (the header is in the report template)."""
    import csv
    import io

    rows = table_rows(entries)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=_TABLE_COLUMNS)
    w.writeheader()
    w.writerows(rows)
    with atomic_path(csv_path) as tmp:
        tmp.write_text(buf.getvalue())
    from ntkrepro import verdicts

    # one short line per claim (issue 31); the long texts go to the detail file and the report
    with atomic_path(md_path) as tmp:
        tmp.write_text(verdicts.render(verdicts.summarise(entries)))
    with atomic_path(details_path(md_path)) as tmp:
        tmp.write_text(_details(rows))
    colour = {"reproduced": "green!15", "not_reproduced": "red!15", "inconclusive": "yellow!20"}
    tex = [rf"\rowcolor{{{colour.get(r['verdict'], 'white')}}} {_tex_escape(r['id'])} & "
           rf"{_tex_escape(r['statement'])} & "
           rf"{_tex_escape(r['verdict'].replace('_', ' '))} & {_tex_escape(_decisive_short(r['decisive']))} & "
           rf"{_tex_escape(_control_short(r['control']))} & "
           rf"{_tex_escape(_stable_short(r['stable']))} & "
           rf"{_tex_escape(r['scale'])} & "
           rf"{_tex_escape(r['headline'])} & {_tex_escape(r['criterion'].split(' ')[0] + ('*' if 'amended' in r['criterion'] else ''))} \\"
           for r in rows]
    with atomic_path(tex_path) as tmp:
        tmp.write_text("\n".join(tex) + "\n")
