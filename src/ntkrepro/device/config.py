"""Where the device call finds the repository, its configuration and its data.

The device machine has no pyyaml: config/default.yaml's and config/paper.yaml's sections the call needs,
and config/decisive.yaml's plan, travel as JSON snapshots beside them (:data:`PARAMS_SNAPSHOT`,
:data:`DECISIVE_SNAPSHOT`), written on the CPU by ``python -m ntkrepro.device --write-params-snapshot``
(a test checks they equal the YAML). Where pyyaml is importable the YAML is read itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ntkrepro import decisive

REPO = Path(__file__).resolve().parents[3]
#: config/default.yaml's ``hron2020: H4:``, ``H5:`` and ``H6:`` sections and ``data:`` section, config/paper.yaml's
#: ``arda2026: A1:`` and ``teacher:``, as JSON (the GPU machine has no pyyaml). Regenerate:
#: ``python -m ntkrepro.device --write-params-snapshot``.
PARAMS_SNAPSHOT = REPO / "config" / "gpu_h4_default.json"
#: config/decisive.yaml's ``decisive`` section as JSON (the GPU machine has no pyyaml), written beside
#: :data:`PARAMS_SNAPSHOT` by ``--write-params-snapshot``.
DECISIVE_SNAPSHOT = REPO / "config" / "gpu_decisive_plan.json"


def _yaml_sections(yaml) -> dict[str, Any]:
    cfg = yaml.safe_load((REPO / "config" / "default.yaml").read_text())
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    return {"H4": cfg["hron2020"]["H4"], "H5": cfg["hron2020"]["H5"], "H6": cfg["hron2020"]["H6"],
            "data": cfg["data"], "A1": paper["arda2026"]["A1"], "teacher": paper["arda2026"]["teacher"]}


def config_sections() -> dict[str, Any]:
    """``{"H4", "H5", "H6", "data"}`` of config/default.yaml and ``{"A1", "teacher"}`` of
    config/paper.yaml (pyyaml if installed, else the snapshot)."""
    try:
        import yaml  # optional: the device machine has none (then the snapshot)
    except ImportError:
        return json.loads(PARAMS_SNAPSHOT.read_text())
    return _yaml_sections(yaml)


def default_data_root() -> Path:
    """``../shared/data`` beside the repository, else ``shared/data`` inside it."""
    for root in (REPO.parent / "shared" / "data", REPO / "shared" / "data"):
        if root.is_dir():
            return root
    return REPO.parent / "shared" / "data"


def decisive_plan() -> dict[str, Any]:
    """config/decisive.yaml's ``decisive`` section (pyyaml if installed, else :data:`DECISIVE_SNAPSHOT`)."""
    try:
        import yaml  # noqa: F401  (optional: the device machine has none; decisive.load_plan needs it)
    except ImportError:
        return json.loads(DECISIVE_SNAPSHOT.read_text())
    return decisive.load_plan(REPO / "config" / "decisive.yaml")


def write_params_snapshot() -> Path:
    """Rewrite :data:`PARAMS_SNAPSHOT` and :data:`DECISIVE_SNAPSHOT` from the YAML (needs pyyaml)."""
    import yaml  # the CPU side's pinned environment has it; the device machine never writes snapshots

    snap = _yaml_sections(yaml)
    PARAMS_SNAPSHOT.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
    plan = decisive.load_plan(REPO / "config" / "decisive.yaml")
    DECISIVE_SNAPSHOT.write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n")
    return PARAMS_SNAPSHOT
