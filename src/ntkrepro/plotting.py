"""One seaborn theme for every figure, the loader of a figure's inputs, and a saver that writes
PNG + PDF with provenance, the scale, the substitutes and the verdict of the claim's evaluation.

Figure notebooks plot only: they read the results files and the claim's evaluation (written by
``python -m ntkrepro.ledger evaluate``: verdict, measured intervals, substitutes, ``figure_data``)
through :func:`load_claim_inputs` and never call a criterion or a statistics function."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from ntkrepro.io import atomic_path, read_json  # noqa: E402

#: Colour per verdict, used by :func:`save_figure`'s verdict label.
VERDICT_COLOURS = {"reproduced": "#2a9d4b", "not_reproduced": "#c0392b", "inconclusive": "#d4a017"}


def set_theme() -> None:
    """The project's single plotting theme (seaborn ``whitegrid``, paper context, colour-blind palette)."""
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.1,
                  rc={"figure.dpi": 110, "savefig.dpi": 200, "savefig.bbox": "tight",
                      "axes.titlesize": "medium", "pdf.fonttype": 42})


def load_claim_inputs(results: Sequence[str | Path], evaluation: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Set the theme; return the JSON results files among ``results`` (in order) and the evaluation.

    ``evaluation`` is the claim's evaluation (``results/claims/evaluations/<ID>.json``): the
    ledger entry less its figure list, with ``verdict``, ``measured`` (intervals as
    ``{value, ci_low, ci_high}``), ``substitutes`` and ``figure_data``.
    """
    set_theme()
    return [read_json(p) for p in results if str(p).endswith(".json")], read_json(evaluation)


def interval_text(iv: Mapping[str, Any], digits: int = 2) -> str:
    """``"v [lo, hi]"`` for an interval as stored in an evaluation (``{value, ci_low, ci_high}``)."""
    return f"{iv['value']:.{digits}f} [{iv['ci_low']:.{digits}f}, {iv['ci_high']:.{digits}f}]"


def scale_label(scale: str, substitutes: list[str] | None = None) -> str:
    """Footer text labelling the scale and any substitute (data subset, reduced size, ...)."""
    txt = f"scale: {scale}"
    if scale != "paper":
        txt += " (reduced size)"
    if substitutes:
        txt += " | substitutes: " + "; ".join(substitutes)
    return txt


def save_figure(fig: plt.Figure, png: str | Path, pdf: str | Path, *, scale: str,
                provenance: Mapping[str, Any] | None = None, substitutes: list[str] | None = None,
                verdict: str | None = None) -> None:
    """Label ``fig`` with its scale/substitutes (and the claim's ``verdict``, in its colour of
    :data:`VERDICT_COLOURS`) and write it atomically as PNG and PDF.

    Provenance goes into the PNG text chunk ``ntkrepro:provenance`` and the PDF ``Subject``.
    """
    fig.text(0.99, 0.005, scale_label(scale, substitutes), ha="right", va="bottom", fontsize=7,
             color="0.35", wrap=True)
    if verdict is not None:
        fig.text(0.01, 0.005, f"verdict: {verdict.replace('_', ' ')}", ha="left", va="bottom", fontsize=8,
                 weight="bold", color=VERDICT_COLOURS.get(verdict, "0.2"))
    prov = json.dumps(dict(provenance or {}), sort_keys=True, default=str)
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", metadata={"ntkrepro:provenance": prov})
    with atomic_path(pdf) as tmp:
        fig.savefig(tmp, format="pdf", metadata={"Subject": prov[:60000], "Creator": "ntkrepro"})
