"""Figure notebooks are jupytext sources with a parameters cell; the report renders from the ledger."""

import json
from pathlib import Path

import pytest

from ntkrepro import notebooks, report
from ntkrepro.ledger import make_entry, write_table
from ntkrepro.stats import Interval

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("source", sorted((ROOT / "notebooks").glob("*.py")), ids=lambda p: p.name)
def test_every_notebook_has_parameters_and_kernel(source):
    nb = notebooks.to_notebook(source)
    assert nb.metadata["kernelspec"]["name"] == notebooks.KERNEL_NAME
    assert nb.metadata["language_info"]["name"] == "python"
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    for name in ("results", "png", "pdf", "scale"):
        assert f"{name} =" in params.source, f"{source.name}: parameter {name} missing"
    # plotting only: notebooks never call compute entry points
    body = "\n".join(c.source for c in nb.cells)
    assert "ntkrepro.run" not in body and "execute(" not in body


def test_notebook_without_parameters_cell_is_rejected(tmp_path):
    src = tmp_path / "nb.py"
    src.write_text("# %%\nx = 1\n")
    with pytest.raises(ValueError, match="parameters"):
        notebooks.to_notebook(src)


def test_report_renders_ledger_and_figures(tmp_path, monkeypatch):
    rows = [{"d": d, "spread": Interval(0.5 * d**-0.5, 0.4 * d**-0.5, 0.6 * d**-0.5).as_dict(),
             "nngp_distance": Interval(0.05 * d**-0.5, 0.04 * d**-0.5, 0.06 * d**-0.5).as_dict()}
            for d in (4, 16, 64, 256, 1024)]
    res = {"H2_average_pooling": {"per_d": rows, "n_draws": 10, "n_inputs": 2, "seq_len": 4, "d_in": 8,
                                  "tied_linear_scaling_distance": 0.1}}
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
