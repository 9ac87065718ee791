"""``python -m ntkrepro.device``: the device call's command line (the package docstring, :mod:`ntkrepro.device`).

``--write-params-snapshot`` rewrites the JSON snapshots of the configuration the device machine reads
(:mod:`ntkrepro.device.config`); otherwise the arguments are checked before anything runs, then
:func:`ntkrepro.device.call.run`. ``python -m ntkrepro.hron2020.gpu_run`` (the old name) runs this too."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ntkrepro import device
from ntkrepro.clock import CLOCK
from ntkrepro.device.call import run
from ntkrepro.device.config import DECISIVE_SNAPSHOT, PARAMS_SNAPSHOT, default_data_root, write_params_snapshot
from ntkrepro.device.plan import PLANS


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.device", description=device.__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results-gpu", help="output folder (one archive per finished tier + gpu_run.json)")
    ap.add_argument("--budget-s", type=float, default=480.0, help="wall seconds for the whole call (8 min)")
    ap.add_argument("--data-root", default=None, help="folder of the CIFAR-10 archive (default: ../shared/data, "
                    "else shared/data in the repository)")
    ap.add_argument("--cache", default=None, help="kernel-block and compilation caches (default: a temporary folder)")
    ap.add_argument("--tiers", choices=tuple(PLANS), default="gpu", help="the plan (PLANS); smoke, smoke-h4: CPU-sized "
                    "tiers (tests)")
    ap.add_argument("--regression-backend", choices=("jax", "scipy"), default="jax",
                    help="H4's kernel regressions: the default JAX device (jax) or the host (scipy)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="the clock of the calibration and of "
                    "the tiers' measured times: wall (the device) or cpu (this process's CPU time; the CI tests on a "
                    "shared CPU, single-threaded); the budget is wall time either way")
    ap.add_argument("--archive", default=None, help="the decisive archive whose cells the A1 / H5 tiers skip "
                    "(default: the repository's archive/decisive for --tiers gpu, none for the smoke plans)")
    ap.add_argument("--write-params-snapshot", action="store_true",
                    help=f"rewrite {PARAMS_SNAPSHOT.name} and {DECISIVE_SNAPSHOT.name} and exit")
    args = ap.parse_args(argv)
    if not (np.isfinite(args.budget_s) and args.budget_s > 0):
        ap.error(f"--budget-s must be a positive number of seconds, got {args.budget_s!r}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        ap.error(f"--out {out} is a file, not a folder: give a results folder (e.g. results-gpu)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".gpu_run_write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        ap.error(f"--out {out}: cannot write there ({err.strerror or err})")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if args.write_params_snapshot:
        print(write_params_snapshot(), DECISIVE_SNAPSHOT)
        return 0
    CLOCK["name"] = args.clock
    data_root = Path(args.data_root) if args.data_root else default_data_root()
    if not data_root.is_dir():  # else a traceback ending in the CIFAR loader's ArchiveError, after the set-up
        ap.error(f"--data-root {data_root}: no such folder; give the folder holding the data archives "
                 "(device-inputs, prepared by `python -m ntkrepro.device.inputs`, or ../shared/data)")
    run(Path(args.out), args.budget_s, data_root, args.tiers,
        cache=Path(args.cache) if args.cache else None, regression_backend=args.regression_backend,
        archive=Path(args.archive) if args.archive else "repo")
    return 0

