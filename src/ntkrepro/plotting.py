"""One seaborn theme for every figure, and a saver that writes PNG + PDF with provenance."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from ntkrepro.io import atomic_path  # noqa: E402

#: Colour per verdict, shared by figures and the report.
VERDICT_COLOURS = {"reproduced": "#2a9d4b", "not_reproduced": "#c0392b", "inconclusive": "#d4a017"}


def set_theme() -> None:
    """The project's single plotting theme (seaborn ``whitegrid``, paper context, colour-blind palette)."""
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.1,
                  rc={"figure.dpi": 110, "savefig.dpi": 200, "savefig.bbox": "tight",
                      "axes.titlesize": "medium", "pdf.fonttype": 42})


def scale_label(scale: str, substitutes: list[str] | None = None) -> str:
    """Footer text labelling the scale and any substitute (data subset, reduced size, ...)."""
    txt = f"scale: {scale}"
    if scale != "paper":
        txt += " (reduced size)"
    if substitutes:
        txt += " | substitutes: " + "; ".join(substitutes)
    return txt


def save_figure(fig: plt.Figure, png: str | Path, pdf: str | Path, *, scale: str,
                provenance: Mapping[str, Any] | None = None, substitutes: list[str] | None = None) -> None:
    """Label ``fig`` with its scale/substitutes and write it atomically as PNG and PDF.

    Provenance goes into the PNG text chunk ``ntkrepro:provenance`` and the PDF ``Subject``.
    """
    fig.text(0.99, 0.005, scale_label(scale, substitutes), ha="right", va="bottom", fontsize=7,
             color="0.35", wrap=True)
    prov = json.dumps(dict(provenance or {}), sort_keys=True, default=str)
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", metadata={"ntkrepro:provenance": prov})
    with atomic_path(pdf) as tmp:
        fig.savefig(tmp, format="pdf", metadata={"Subject": prov[:60000], "Creator": "ntkrepro"})
