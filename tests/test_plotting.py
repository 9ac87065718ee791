"""Figure footers never overlap the figure's content (issue 23 item 5)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from ntkrepro import plotting  # noqa: E402

_LONG = ["n = 400 training sequences and 4 seeds (paper: 5000 and 20)", "GD steps 1200 (paper: 4000-5000)",
         "teacher draws as seeds; widths up to 512 (paper: 4096)", "CIFAR-10 subset of 100/100/300 images at 8x8"]


def _a1_like(rows=2):
    """The layout that overlapped in A1: a grid with x labels at the bottom and a 3 % footer band."""
    fig, axes = plt.subplots(rows, 3, figsize=(13, 3.7 * rows), squeeze=False)
    for ax in axes.flat:
        ax.plot([1, 2, 3], [3, 1, 2], label="a curve")
        ax.set_xlabel("width m")
        ax.legend(loc="lower left")
    fig.suptitle("Width scaling")
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    return fig


def test_the_detector_sees_an_overlapping_footer():
    fig = _a1_like()
    t = fig.text(0.99, 0.005, plotting.scale_label("default", _LONG * 4), ha="right", va="bottom", fontsize=7,
                 wrap=True)
    assert plotting.footer_overlaps(fig, [t])      # what save_figure did before: the text ran into the labels
    plt.close(fig)


@pytest.mark.parametrize("rows, subs, verdict", [(1, [], "reproduced"), (2, _LONG, "not_reproduced"),
                                                 (3, _LONG * 3, None)])
def test_save_figure_reserves_the_footer(tmp_path, rows, subs, verdict):
    fig = _a1_like(rows)
    h0 = fig.get_size_inches()[1]
    plotting.save_figure(fig, tmp_path / "f.png", tmp_path / "f.pdf", scale="default", substitutes=subs,
                         verdict=verdict)   # raises if any footer text overlaps
    footer = [t for t in fig.texts if t.get_text().startswith(("scale:", "verdict:"))]
    assert len(footer) == 1 + (verdict is not None)
    assert plotting.footer_overlaps(fig, footer) == []
    assert fig.get_size_inches()[1] >= h0
    assert (tmp_path / "f.png").stat().st_size > 0 and (tmp_path / "f.pdf").stat().st_size > 0
    plt.close(fig)
