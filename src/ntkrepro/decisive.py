"""The decisive tier (issue 29): sizes that decide a claim, run once on some machine and archived.

``config/decisive.yaml`` names, per undecided claim, the size that decides it; ``snakemake decide
--configfile config/decisive.yaml`` computes it in shards (cells) and seals each cell into the committed
``archive/decisive/<CLAIM>/cells/``; ``snakemake all`` re-judges the archived cells with the CURRENT
criterion of the claim. A cell records the hash of the code that computed it
(:func:`compute_code_hash`: the sources listed in :data:`COMPUTE_CODE`, not the whole import closure,
so that an edit to the statistics or the report does not invalidate hours of archived training); a cell
whose hash differs from today's code is STALE and never used silently.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from collections.abc import Sequence

#: Per claim: the code that computes an archived cell -- whole modules (``"pkg.mod"``) or single
#: functions (``"pkg.mod:name"``). Editing any of them makes the claim's archived cells STALE.
COMPUTE_CODE: dict[str, tuple[str, ...]] = {
    "A1": (
        "ntkrepro.arda2026.model",
        "ntkrepro.arda2026.teacher",
        *(f"ntkrepro.arda2026.scaling:{f}" for f in (
            "run_a1_cell", "run_a1_unit", "run_a1_width_fixed", "width_fixed_stream", "train_student",
            "student_key", "teacher_data", "_make_teacher", "worst_case_linearisation_error", "_ascend_impl",
            "_ascend_jit", "_ascend", "_edge", "linearisation_gap")),
    ),
}


def _source(ref: str) -> str:
    module, _, name = ref.partition(":")
    mod = importlib.import_module(module)
    if not name:
        return inspect.getsource(mod)
    obj = getattr(mod, name)
    return inspect.getsource(inspect.unwrap(obj))


def code_hash_of(refs: Sequence[str]) -> str:
    """SHA-256 over the sources of ``refs`` (each name, then its source text, in the order given)."""
    h = hashlib.sha256()
    for ref in refs:
        h.update(ref.encode() + b"\0" + _source(ref).encode() + b"\0")
    return h.hexdigest()


def compute_code_hash(claim: str) -> str:
    """Hash of the code computing ``claim``'s decisive cells today (:data:`COMPUTE_CODE`)."""
    return code_hash_of(COMPUTE_CODE[claim])
