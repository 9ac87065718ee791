"""Why F3's part (a) can hold on its shuffled-encoding control (issue 38 item 3): the control's one
permutation is one draw. Reported, not judged; nothing here changes a verdict.

The F3 block is bidirectional and position-wise outside its attention, so its position kernel is
permutation-equivariant, :math:`\\Theta(x_\\pi)=P\\,\\Theta(x)\\,P^\\top`; the Gaussian tokens are i.i.d.
over positions, so :math:`x_\\pi` has the law of :math:`x`. The kernel of the shuffled-encoding control
(tokens :math:`x`, encodings in the order :math:`\\pi`) therefore has the law of :math:`P\\,\\Theta\\,P^\\top`
with :math:`\\Theta` the real run's kernel (with encodings in order), and part (a)'s statistic of the
control is one draw of its distribution over :math:`\\pi`, whose mean is the white share (excess 0) for a
uniform permutation. This script draws ``--draws`` derangements (the control's kind of permutation), applies
each to the real run's per-sequence kernels, and computes part (a)'s statistic exactly as the criterion
does (:func:`ntkrepro.framework.claims.f3_grouped_low_freq` minus the white share): the spread over
permutations, the control's own value and its percentile, and the real run's distance in standard
deviations. ::

    PYTHONPATH=src .venv/bin/python workflow/scripts/f3_permutation_null.py results/framework/F3_position_kernels.npz
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from ntkrepro.framework.claims import f3_group_size, f3_grouped_low_freq, f3_topk, f3_white_share
from ntkrepro.framework.positions import derangement


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernels", help="results/framework/F3_position_kernels.npz of a run")
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with np.load(args.kernels) as d:
        pe, shuffled = np.asarray(d["pe"], float), np.asarray(d["shuffled_pe"], float)
    s = pe.shape[-1]
    cutoff, topk = f3_topk(s)
    white = f3_white_share(s, cutoff)
    g = f3_group_size(pe.shape[0])

    def stat(k: np.ndarray) -> float:
        return float((f3_grouped_low_freq(k, g, topk, cutoff) - white).mean())

    rng = np.random.default_rng(args.seed)
    null = np.array([stat(pe[:, p][:, :, p]) for p in (derangement(rng, s) for _ in range(args.draws))])
    real, control = stat(pe), stat(shuffled)
    print(json.dumps({
        "draws": args.draws, "white_share": white, "group_size": g,
        "real_run": real, "control": control,
        "null_mean": float(null.mean()), "null_sd": float(null.std(ddof=1)),
        "null_2.5%": float(np.quantile(null, 0.025)), "null_97.5%": float(np.quantile(null, 0.975)),
        "control_percentile": float((null < control).mean()),
        "real_run_in_null_sd": float((real - null.mean()) / null.std(ddof=1)),
    }, indent=1))


if __name__ == "__main__":
    main()
