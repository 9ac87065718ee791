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


def load_claim_inputs(results: Sequence[str | Path],
                      evaluation: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
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


#: Footer font sizes (points) and the gap (points) kept between the footer and the figure's content.
FOOTER_FONTSIZE = 7
VERDICT_FONTSIZE = 8
FOOTER_GAP_PT = 4.0


def _wrap_footer(text: str, width_in: float, fontsize: float) -> str:
    """``text`` wrapped to the figure width (an average glyph is ~0.55 em wide)."""
    import textwrap

    chars = max(40, int(width_in * 72 / (0.55 * fontsize)) - 4)
    return "\n".join(textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=False)) or text


def _content_bottom(fig: plt.Figure, renderer: Any, exclude: Sequence[Any]) -> float:
    """Lowest pixel (display coordinates) reached by any axes -- tick labels, axis labels, legends
    included -- or figure text other than ``exclude``."""
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
    boxes += [t.get_window_extent(renderer) for t in fig.texts if t not in exclude and t.get_text()]
    if getattr(fig, "_suptitle", None) is not None:
        boxes.append(fig._suptitle.get_window_extent(renderer))
    boxes = [b for b in boxes if b is not None and b.height > 0]
    return min(b.y0 for b in boxes) if boxes else fig.bbox.y1


def reserve_footer(fig: plt.Figure, footer: Sequence[Any]) -> float:
    """Make room below the figure's content for the ``footer`` texts (placed at the bottom edge):
    if the content reaches into the footer's band, the figure grows by the missing height and every
    axes and figure text moves up by it, so no footer text overlaps an axis, label or legend.
    Returns the height added, in inches (0 if the layout already had room)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    if fig.get_layout_engine() is not None:
        fig.set_layout_engine("none")   # freeze the positions just computed
    top = max(t.get_window_extent(renderer).y1 for t in footer)
    need_px = top + FOOTER_GAP_PT * fig.dpi / 72 - _content_bottom(fig, renderer, footer)
    if need_px <= 0:
        return 0.0
    w, h = fig.get_size_inches()
    dh = need_px / fig.dpi
    new_h = h + dh
    moved = [t for t in fig.texts if t not in footer]
    if getattr(fig, "_suptitle", None) is not None and fig._suptitle not in moved:
        moved.append(fig._suptitle)
    fig.set_size_inches(w, new_h, forward=False)
    for ax in fig.axes:
        pos = ax.get_position()
        ax.set_position([pos.x0, (pos.y0 * h + dh) / new_h, pos.width, pos.height * h / new_h])
    for t in moved:
        if t.get_transform() == fig.transFigure:
            x, y = t.get_position()
            t.set_position((x, (y * h + dh) / new_h))
    for t in footer:    # footer texts keep their distance from the bottom edge, in inches
        x, y = t.get_position()
        t.set_position((x, y * h / new_h))
    return dh


def footer_overlaps(fig: plt.Figure, footer: Sequence[Any]) -> list[str]:
    """Which axes or figure texts the ``footer`` texts overlap (empty list = none), after drawing."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for t in footer:
        fb = t.get_window_extent(renderer)
        for i, ax in enumerate(fig.axes):
            ab = ax.get_tightbbox(renderer)
            if ab is not None and ab.overlaps(fb):
                out.append(f"footer {t.get_text()[:30]!r} overlaps axes {i} ({ax.get_title()[:30]!r})")
        for o in fig.texts:
            if o not in footer and o.get_text() and o.get_window_extent(renderer).overlaps(fb):
                out.append(f"footer {t.get_text()[:30]!r} overlaps text {o.get_text()[:30]!r}")
    return out


def save_figure(fig: plt.Figure, png: str | Path, pdf: str | Path, *, scale: str,
                provenance: Mapping[str, Any] | None = None, substitutes: list[str] | None = None,
                verdict: str | None = None) -> None:
    """Label ``fig`` with its scale/substitutes (and the claim's ``verdict``, in its colour of
    :data:`VERDICT_COLOURS`) in a footer whose space is reserved below the content
    (:func:`reserve_footer`; a footer that still overlaps raises), and write it atomically as PNG
    and PDF.

    Provenance goes into the PNG text chunk ``ntkrepro:provenance`` and the PDF ``Subject``.
    """
    w, h = fig.get_size_inches()
    pad = 2.0 / 72 / h
    label = _wrap_footer(scale_label(scale, substitutes), w * (0.70 if verdict is not None else 0.98), FOOTER_FONTSIZE)
    footer = [fig.text(0.99, pad, label, ha="right", va="bottom", fontsize=FOOTER_FONTSIZE, color="0.35",
                       linespacing=1.15)]
    if verdict is not None:
        # a proposition the seed does not state (ntkrepro.ledger.NOT_A_CLAIM, CLAIMS.md rule 9) has no verdict
        text = ("reported: not a claim of the seed" if verdict == "not_a_claim"
                else f"verdict: {verdict.replace('_', ' ')}")
        footer.append(fig.text(0.01, pad, text, ha="left", va="bottom",
                               fontsize=VERDICT_FONTSIZE, weight="bold", color=VERDICT_COLOURS.get(verdict, "0.2")))
    reserve_footer(fig, footer)
    overlaps = footer_overlaps(fig, footer)
    if overlaps:
        raise RuntimeError(f"figure {Path(png).name}: the footer overlaps the figure's content: {overlaps}")
    prov = json.dumps(dict(provenance or {}), sort_keys=True, default=str)
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", metadata={"ntkrepro:provenance": prov})
    with atomic_path(pdf) as tmp:
        fig.savefig(tmp, format="pdf", metadata={"Subject": prov[:60000], "Creator": "ntkrepro"})
