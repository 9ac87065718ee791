"""The decisive tiers' runner (H5, A1): the cells of config/decisive.yaml's entries not yet archived
(:func:`ntkrepro.device.plan.pending_cells`), one at a time, each only if its prediction fits the time left,
each sealed as ``ntkrepro.decisive.fill`` seals it into the tier's tarball (a cut-off keeps every finished
cell); and the commit a sealed cell records where the device's copy has no ``.git``
(:func:`provenance_commit`). Which code a cell runs is the plan's ``cell_function`` (the paper's own)."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ntkrepro import decisive, provenance
from ntkrepro.clock import now
from ntkrepro.device.limits import bundle, write_json_atomic
from ntkrepro.device.plan import MARGIN
from ntkrepro.io import canonical_hash
from ntkrepro.run import execute

log = logging.getLogger(__name__)


def provenance_commit() -> str | None:
    """Why a sealed cell could not carry its commit (None: it can). ``decisive.verify_cell`` refuses a cell
    without one; where this copy of the repository has no ``.git`` (a device call may send only the working
    tree), the caller declares the commit it sent: ``NTKREPRO_GIT_COMMIT=<sha>`` (and
    ``NTKREPRO_GIT_DIRTY=1`` if the tree had uncommitted changes), recorded with ``"declared": true``."""
    if provenance.git_state().get("commit"):
        return None
    sha = os.environ.get("NTKREPRO_GIT_COMMIT", "").strip()
    if not (len(sha) == 40 and all(ch in "0123456789abcdef" for ch in sha.lower())):
        return ("no git commit here (no .git in this copy) and no NTKREPRO_GIT_COMMIT=<40-hex sha> declared: "
                "decisive.verify refuses a cell without its commit")
    state = {"commit": sha.lower(), "dirty": os.environ.get("NTKREPRO_GIT_DIRTY", "") not in ("", "0"),
             "declared": True}
    provenance.git_state = lambda root=None: dict(state)  # what provenance.collect records in every cell
    return None


def run_cells_tier(name: str, claim: str, spec: Mapping[str, Any], section: Mapping[str, Any],
                   todo: Sequence[Mapping[str, Any]], pred: Mapping[str, Any], out_stage: Path, tarball: Path,
                   archive_rel: str, seconds_left: Callable[[], float]) -> dict[str, Any]:
    """The decisive cells ``todo`` of ``claim``, one at a time, each only if its predicted time x
    :data:`MARGIN` fits ``seconds_left()`` (else this and the later cells are left, recorded): each sealed as
    ``decisive.fill`` seals it (``execute`` of the entry's ``cell_function`` on ``decisive.cell_params`` with
    ``section``, scale ``decisive``, config hash = the plan section's) into
    ``<out_stage>/<archive_rel>/<claim>/cells/<cell>.json``, then the tier's tarball rewritten with the
    tier's throughput so far (a cut-off keeps every finished cell)."""
    cells_dir = out_stage / archive_rel / claim / "cells"
    cells_dir.mkdir(parents=True, exist_ok=True)
    run_spec = {**spec, "section": dict(section)}
    config_hash = canonical_hash(spec["section"])  # the plan's section, as `snakemake decide` and fill hash it
    rec: dict[str, Any] = {"claim": claim, "tier": name, "cell_function": spec["cell_function"],
                           "archive": f"{archive_rel}/{claim}/cells", "archived_before": pred["archived_before"],
                           "cells": {}, "cells_left": {}}
    t0 = now()
    for k, c in enumerate(todo):
        p_cell = pred["cells"][c["name"]]
        left = seconds_left()
        if p_cell * MARGIN > left:
            why = f"predicted {p_cell:.0f} s x {MARGIN} > {left:.0f} s left"
            rec["cells_left"] = {x["name"]: why if j == 0 else "after a cell that did not fit"
                                 for j, x in enumerate(todo[k:])}
            log.info("%s cell %s not run: %s", claim, c["name"], why)
            break
        c0 = now()
        with tempfile.TemporaryDirectory(prefix=f"decisive-{claim}-") as d:
            tmp = Path(d) / f"{c['name']}.json"
            res = execute(spec["cell_function"], decisive.cell_params(run_spec, c), tmp, scale="decisive",
                          config_hash=config_hash)
            shutil.move(str(tmp), cells_dir / tmp.name)
        measured = now() - c0
        rec["cells"][c["name"]] = {"predicted_s": p_cell, "measured_s": measured, "wall_seconds": res["wall_seconds"],
                                   "measured_over_predicted": measured / p_cell if p_cell > 0 else None}
        rec["measured_s"] = now() - t0
        write_json_atomic(out_stage / f"{name}_throughput.json", {**rec, "status": "running"})
        bundle(out_stage, tarball)
        log.info("%s cell %s: %.1f s (predicted %.1f s)", claim, c["name"], measured, p_cell)
    rec["measured_s"] = now() - t0
    rec["n_cells"] = len(rec["cells"])
    # what the tier ran, predicted (the budget check's numbers; the cells not run are not counted)
    rec["predicted_run_s"] = sum(v["predicted_s"] for v in rec["cells"].values())
    return rec

