"""Execute a figure notebook (jupytext percent source) with papermill, in the project kernel.

``notebooks/<paper>_<claim>_<name>.py`` is the reviewable source. At run time it is converted to
``.ipynb``, given the kernelspec registered by ``envs/setup.sh`` (``ntkrepro``) and the
``language_info`` papermill needs, then executed with the rule's parameters injected after the
cell tagged ``parameters``. The executed notebook is kept as the rule's log::

    python -m ntkrepro.notebooks notebooks/hron2020_H1_gaussianity.py results/logs/.../H1.ipynb \
        -p results results/hron2020/H1_gaussianity.json -p png ... -p pdf ... -p scale default
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ntkrepro.io import write_json

KERNEL_NAME = "ntkrepro"


def to_notebook(source: Path):
    """Read a jupytext percent script into an nbformat notebook with kernel metadata set."""
    import jupytext

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "ntkrepro (.venv)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    if not any("parameters" in c.metadata.get("tags", []) for c in nb.cells):
        raise ValueError(f"{source}: no cell tagged 'parameters' (add `# %% tags=[\"parameters\"]`)")
    return nb


def execute(source: str | Path, executed: str | Path, parameters: dict[str, Any],
            kernel: str = KERNEL_NAME, meta: str | Path | None = None, caption: str | None = None) -> None:
    """Convert ``source`` and execute it with papermill; the executed notebook goes to ``executed``.

    The executed notebook is written even when a cell fails (papermill's behaviour), which makes
    it the log to read; the exception is re-raised so the Snakemake job fails. On success, ``meta``
    (if given) receives the figure's caption record ``{figure, paper, claim, caption, png, pdf}``
    read by the report.
    """
    import nbformat
    import papermill as pm

    source, executed = Path(source), Path(executed)
    executed.parent.mkdir(parents=True, exist_ok=True)
    tmp_in = executed.with_name(f".{executed.stem}.input.ipynb")
    nbformat.write(to_notebook(source), tmp_in)
    env_cwd = os.getcwd()
    try:
        pm.execute_notebook(str(tmp_in), str(executed), parameters=parameters, kernel_name=kernel,
                            cwd=env_cwd, progress_bar=False, log_output=False)
    finally:
        tmp_in.unlink(missing_ok=True)
    if meta is not None:
        name = Path(str(parameters.get("png", source))).stem
        paper, claim, _ = (name.split("_", 2) + ["", ""])[:3]
        write_json(meta, {"figure": name, "paper": paper, "claim": claim, "caption": caption or "",
                          "png": parameters.get("png"), "pdf": parameters.get("pdf"),
                          "notebook": str(source), "executed": str(executed)})


def _parse_value(v: str) -> Any:
    try:
        return json.loads(v)
    except json.JSONDecodeError:
        return v


def main(argv: Sequence[str] | None = None) -> int:
    """CLI used by the figure rules."""
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.notebooks")
    ap.add_argument("source")
    ap.add_argument("executed")
    ap.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                    help="parameter (VALUE parsed as JSON when possible)")
    ap.add_argument("--params-json", default=None, help="JSON object of parameters")
    ap.add_argument("--meta", default=None, help="where to write the figure's caption record (JSON)")
    ap.add_argument("--caption", default=None)
    args = ap.parse_args(argv)
    params = json.loads(args.params_json) if args.params_json else {}
    params.update({k: _parse_value(v) for k, v in args.p})
    execute(args.source, args.executed, params, meta=args.meta, caption=args.caption)
    return 0


if __name__ == "__main__":
    sys.exit(main())
