"""Fill a decisive claim's missing cells one at a time and commit each as it is archived (issue 37, item 3).

    .venv/bin/python workflow/scripts/decisive_fill.py H4 [--max-cells N] [--cell NAME ...] [--commit]
        [--plan config/decisive.yaml]

Before each cell it prints the cell's predicted cost when the plan states one (H4: ``section.cost``,
``ntkrepro.hron2020.h4_decisive.predict_seconds``); after it, the measured CPU and wall time and
measured / predicted. With ``--commit`` each archived cell is committed alone (``git add`` of the cell
file only), so an interrupted session loses at most the cell in flight; ``snakemake decide`` is the
Snakemake / SLURM way to compute the same cells. Run it at low priority beside other work:
``nice -n 19 .venv/bin/python workflow/scripts/decisive_fill.py H4 --commit``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from ntkrepro import decisive
from ntkrepro.hron2020 import h4_decisive, h6_decisive
from ntkrepro.kernels.allocator import keep_freed_memory
from ntkrepro.io import read_json


#: Claims whose plan states a measured ``cost`` entry, and the function that predicts a cell's CPU seconds.
PREDICTORS = {"H4": h4_decisive.predict_seconds, "H6": h6_decisive.predict_seconds}


def _predict(claim: str, spec: dict, cell: dict) -> dict | None:
    sec = spec["section"]
    if claim not in PREDICTORS or not sec.get("cost"):
        return None
    return PREDICTORS[claim](sec, sec["part_specs"][int(cell["part"])], sec["cost"])


def _commit(path: Path, msg: str, tries: int = 10) -> None:
    """``git add`` + ``git commit`` of the cell file alone, retried while another git command holds the index."""
    for i in range(tries):
        add = subprocess.run(["git", "add", str(path)], capture_output=True, text=True)
        com = subprocess.run(["git", "commit", "-q", "-m", msg, "--", str(path)], capture_output=True, text=True)
        if add.returncode == 0 and com.returncode == 0:
            return
        time.sleep(5 * (i + 1))
    print(f"could not commit {path}: {add.stderr}{com.stderr}; it is archived, commit it by hand", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("claim")
    ap.add_argument("--plan", default="config/decisive.yaml")
    ap.add_argument("--max-cells", type=int, default=None)
    ap.add_argument("--cell", action="append", default=None, metavar="NAME",
                    help="fill only this cell (repeatable): two processes can fill different cells side by side")
    ap.add_argument("--commit", action="store_true", help="git-commit each archived cell as it is written")
    args = ap.parse_args(argv)
    plan = decisive.load_plan(args.plan)
    if args.claim not in plan["claims"]:
        print(f"{args.plan}: no claim {args.claim!r} (claims: {sorted(plan['claims'])})", file=sys.stderr)
        return 2
    spec = plan["claims"][args.claim]
    # no page faults per freed XLA buffer: 21 % -> 1.5 % system time in the H4 fill (ntkrepro.kernels.allocator)
    print(f"allocator: {keep_freed_memory() or 'unchanged (not glibc)'}", flush=True)
    if spec.get("status") != "run":
        print(f"{args.plan}: {args.claim} has status {spec.get('status')!r}, not 'run': nothing to compute",
              file=sys.stderr)
        return 2
    names = [c["name"] for c in decisive.cells(spec)]
    unknown = sorted(set(args.cell or ()) - set(names))
    if unknown:
        print(f"{args.plan}: {args.claim} has no cell(s) {unknown} (cells: {names})", file=sys.stderr)
        return 2
    done = 0
    for cell in decisive.cells(spec):
        out = decisive.cell_path(plan["archive"], args.claim, cell["name"])
        if out.exists() or (args.cell is not None and cell["name"] not in args.cell):
            continue
        if args.max_cells is not None and done >= args.max_cells:
            break
        pred = _predict(args.claim, spec, cell)
        print(f"{args.claim} {cell['name']}: predicted {pred}" if pred else f"{args.claim} {cell['name']}: computing",
              flush=True)
        (path,) = decisive.fill(args.claim, spec, plan["archive"], max_cells=1, only=[cell["name"]])
        data = read_json(path)
        cpu, wall = float(data.get("cpu_seconds") or 0), float(data["wall_seconds"])
        ratio = f", measured/predicted CPU {cpu / pred['total_cpu_s']:.2f}" if pred else ""
        print(f"{args.claim} {cell['name']}: {cpu:.0f} CPU-s, {wall:.0f} s wall{ratio} -> {path}", flush=True)
        if args.commit:
            msg = (f"archive/decisive {args.claim} ({args.plan}): cell {cell['name']}, {wall:.0f} s wall, "
                   f"{cpu:.0f} CPU-s{ratio} (nice {os.nice(0)}, {os.cpu_count()}-core CPU shared with other work)")
            _commit(path, msg)
        done += 1
    print(f"{args.claim}: {done} cell(s) computed; {len(decisive.archived_cells(plan['archive'], args.claim))}/"
          f"{len(decisive.cells(spec))} archived", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
