"""Figure notebooks are jupytext sources with a parameters cell; the report renders from the ledger."""

import ast
import re
from pathlib import Path

import pytest

from ntkrepro import notebooks, report
from ntkrepro.ledger import make_entry, write_table
from ntkrepro.stats import Interval

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
#: Notebooks another branch of issue 16 rewrites (helper "fast": H4/H6 substitutes from facts).
#: Notebooks that plot the results file alone (no criterion output shown), so take no ``evaluation``.
_RESULTS_ONLY = {"hron2020_H4_cifar10_kernels.py", "hron2020_H6_imdb.py",
                 "extension_mc_attention.py"}  # issue 41: a benchmark figure, no claim

#: Modules a figure notebook must not import: criteria (``ntkrepro.<paper>.claims``, the ledger),
#: statistics (``ntkrepro.stats``, ``scipy.stats``, ``statsmodels``) and compute entry points.
_FORBIDDEN_MODULE = re.compile(r"^(ntkrepro\.(stats|ledger|run)|ntkrepro\.\w+\.claims|scipy\.stats|statsmodels)(\.|$)")


def forbidden_imports(source: str) -> list[str]:
    """Imports in ``source`` (Python) of a criterion, a statistics function or a compute entry point:
    a module matching ``_FORBIDDEN_MODULE``, or any imported name ``evaluate_*``."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if _FORBIDDEN_MODULE.match(a.name)]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            names = [a.name for a in node.names]
            if _FORBIDDEN_MODULE.match(mod) or (mod == "ntkrepro" and {"stats", "ledger", "run"} & set(names)) \
                    or (mod == "scipy" and "stats" in names):
                bad.append(f"{mod}: {', '.join(names)}")
            bad += [f"{mod}.{n}" for n in names if n.startswith("evaluate")]
    return bad


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_imports_no_criterion_or_statistics(source):
    """Notebooks plot only: the claim's evaluation (verdict, intervals, substitutes, figure_data) is
    computed once by ``ntkrepro.ledger evaluate`` and read from the ``evaluation`` parameter."""
    assert forbidden_imports(source.read_text()) == []


@pytest.mark.parametrize("snippet", ["from ntkrepro.stats import bootstrap_ci", "import ntkrepro.stats as st",
                                     "from ntkrepro.hron2020.claims import h3_slope",
                                     "from ntkrepro.framework.claims import F2_MARGIN",
                                     "from ntkrepro.framework.training import evaluate_f6", "from scipy import stats",
                                     "from scipy.stats import norm", "from ntkrepro import ledger"])
def test_forbidden_imports_are_found(snippet):
    assert forbidden_imports(f"import numpy as np\n{snippet}\n") != []


def test_plotting_imports_are_allowed():
    assert forbidden_imports("from ntkrepro.plotting import load_claim_inputs, save_figure\n"
                             "from ntkrepro.io import read_npz\nfrom scipy.special import ndtri\n") == []


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_has_parameters_and_kernel(source):
    nb = notebooks.to_notebook(source)
    assert nb.metadata["kernelspec"]["name"] == notebooks.KERNEL_NAME
    assert nb.metadata["language_info"]["name"] == "python"
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assigned = {t.id for node in ast.walk(ast.parse(params.source)) if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    needed = {"results", "png", "pdf", "scale"} | (set() if source.name in _RESULTS_ONLY else {"evaluation"})
    assert needed <= assigned, f"{source.name}: parameters {sorted(needed - assigned)} missing"


def test_notebook_without_parameters_cell_is_rejected(tmp_path):
    src = tmp_path / "nb.py"
    src.write_text("# %%\nx = 1\n")
    with pytest.raises(ValueError, match="parameters"):
        notebooks.to_notebook(src)


def test_report_renders_ledger_and_figures(tmp_path, monkeypatch):
    res = {"H2_average_pooling": _h2_results()}
    entry = make_entry("H2", res, scale="smoke")
    claims = tmp_path / "results" / "claims"
    claims.mkdir(parents=True)
    write_table([entry], claims / "t.csv", claims / "t.md", claims / "claims_table.tex")
    monkeypatch.chdir(ROOT)
    tex = report.render(ROOT / "paper" / "replication_report.tex.j2", [entry],
                        {"hron2020_H2_average_pooling": {"paper": "hron2020", "claim": "H2", "caption": "50% & x"}},
                        claims / "claims_table.tex", "smoke", tmp_path / "results" / "paper")
    assert r"\section{Hron" in tex and "Claim H2" in tex and r"50\% \& x" in tex
    assert "hron2020_H2_average_pooling.pdf" in tex and "reproduced" in tex
    assert tex.count(r"\section{") == 4  # one section per paper


def test_missing_latex_names_what_to_install(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(report.shutil, "which", lambda name: None)
    rc = report.main(["--template", "x", "--table", "x", "--entries", "x", "--captions", "--scale",
                      "smoke", "--tex", str(tmp_path / "r.tex"), "--pdf", str(tmp_path / "r.pdf")])
    assert rc == 2 and "latexmk" in capsys.readouterr().err
    assert not (tmp_path / "r.pdf").exists()


# ---- issue 16 item 8: the ledger CLI and report.build_pdf ----------------------------------------

def _h2_results():
    """Fake H2 results where the claim holds (slopes -1/2), with the sqrt_scaling control (slopes about 0:
    no collapse, rejected by the criterion)."""
    def rows(p):
        return [{"d": d, "spread": Interval(0.5 * d**p, 0.4 * d**p, 0.6 * d**p).as_dict(),
                 "nngp_distance": Interval(0.05 * d**p, 0.04 * d**p, 0.06 * d**p).as_dict()}
                for d in (4, 16, 64, 256, 1024)]

    base = {"n_draws": 10, "n_inputs": 2, "seq_len": 4, "d_in": 8, "tied_linear_scaling_distance": 0.1}
    return {**base, "per_d": rows(-0.5), "controls": {"sqrt_scaling": {**base, "per_d": rows(0.02)}}}


def test_ledger_cli_evaluate_entry_table_check(tmp_path, capsys):
    from ntkrepro import ledger
    from ntkrepro.io import read_json, write_json

    from ntkrepro.io import seal

    res = tmp_path / "H2_average_pooling.json"
    write_json(res, seal(_h2_results()))  # sealed, as ntkrepro.run writes it
    claims = tmp_path / "claims"
    ev = claims / "evaluations" / "H2.json"
    assert ledger.main(["evaluate", "H2", "--results", str(res), "--scale", "smoke", "--out", str(ev)]) == 0
    assert ledger.main(["entry", "H2", "--evaluation", str(ev), "--figures", "f.png",
                        "--out", str(claims / "H2.json")]) == 0
    e, v = read_json(claims / "H2.json"), read_json(ev)
    assert e["figures"] == ["f.png"] and "figures" not in v
    assert (e["verdict"], e["measured"], e["substitutes"]) == (v["verdict"], v["measured"], v["substitutes"])
    assert v["figure_data"]["log_log_intercept"].keys() == {"spread", "nngp_distance"}
    # an evaluation of another claim is refused
    assert ledger.main(["entry", "H3", "--evaluation", str(ev), "--out", str(claims / "H3.json")]) == 1
    out = {k: str(claims / f"t.{k}") for k in ("csv", "md", "tex")}
    table = ["table", str(claims / "H2.json"), "--csv", out["csv"], "--md", out["md"], "--tex", out["tex"],
             "--index", str(claims / "index.json")]
    assert ledger.main(table + ["--expected", "H2", "H3"]) == 1  # the DAG expects a claim with no entry
    assert ledger.main(table + ["--expected", "H2"]) == 0
    csv = Path(out["csv"]).read_text().splitlines()
    assert csv[0].startswith("id,paper,statement,verdict,control,stable") and len(csv) == 2
    assert "global average pooling" in csv[1]
    assert r"\rowcolor" in Path(out["tex"]).read_text()
    assert read_json(claims / "index.json") == {"claims": ["H2"], "replicates": {"H2": 1}}
    assert ledger.main(["check", "--claims-dir", str(claims)]) == 0
    write_json(claims / "H2.json", {**e, "verdict": "maybe"})
    capsys.readouterr()
    assert ledger.main(["check", "--claims-dir", str(claims)]) == 1
    assert "bad verdict 'maybe'" in capsys.readouterr().err
    (claims / "H2.json").unlink()
    assert ledger.main(["check", "--claims-dir", str(claims)]) == 1


@pytest.mark.skipif(not report.latex_available(), reason="no LaTeX toolchain")
def test_build_pdf_writes_a_pdf_or_fails_naming_the_log(tmp_path):
    tex = tmp_path / "ok.tex"
    tex.write_text("\\documentclass{article}\\begin{document}Hello\\end{document}\n")
    report.build_pdf(tex, tmp_path / "out" / "ok.pdf")
    assert (tmp_path / "out" / "ok.pdf").read_bytes()[:5] == b"%PDF-"
    bad = tmp_path / "bad.tex"
    bad.write_text("\\documentclass{article}\\begin{document}\\undefinedmacro\\end{document}\n")
    with pytest.raises(SystemExit, match="latexmk failed"):
        report.build_pdf(bad, tmp_path / "bad.pdf")
    assert not (tmp_path / "bad.pdf").exists()


def test_report_opens_each_claim_with_the_papers_sentence(render_report):
    from ntkrepro.ledger import get_claim

    entry = make_entry("H2", {"H2_average_pooling": _h2_results()}, scale="smoke")
    assert entry["paper_sentence"].startswith('Paper, Sec. 3: "Under d^-1 scaling')
    assert get_claim("H2").paper_sentence() == entry["paper_sentence"]
    tex = render_report([entry])
    sub = tex[tex.index("Claim H2"):]
    assert sub.index("Under d\\textasciicircum{}-1 scaling") < sub.index("Statement.")
    assert "\\endhead" in tex and "continued on the next page" in tex and "claim (statement)" in tex


def test_paper_sentence_comes_from_quote_criterion_or_statement():
    from ntkrepro.ledger import ClaimSpec

    assert ClaimSpec("X1", "hron2020", "s", "c", quote="Q").paper_sentence() == "Q"
    assert (ClaimSpec("X1", "hron2020", "s", 'Paper, Sec. 2: "a b c" then more').paper_sentence()
            == 'Paper, Sec. 2: "a b c"')
    assert (ClaimSpec("X1", "hron2020", "the model's loss 'is flat over all the lags' (Fig. 2)", "c").paper_sentence()
            == '"is flat over all the lags"')
    assert ClaimSpec("X1", "hron2020", "the transformer's loss is flat while the RNN's grows",
                     "c").paper_sentence() == ""
