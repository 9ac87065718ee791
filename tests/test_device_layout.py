"""The device call's layout (issue 40, item 2): the package ``ntkrepro.device`` composes the papers' device
parts, each paper owns its own, and nothing runs in a circle.

* No module of the call (:data:`CALL_MODULES`) is over :data:`MAX_LINES` lines.
* No paper package imports another (every import statement of every ``src/`` file, inside functions too).
* A paper's device parts import no module of ``ntkrepro.device``: the device package imports the papers, not
  the other way round. The only exceptions are the two old command names kept as shims
  (:data:`SHIMS`), which import nothing but the entry point they forward to.
* :mod:`ntkrepro.clock` (the one clock both papers' calibrations use) imports no ntkrepro module.
* The import graph of the call's modules (imports inside functions counted) has no cycle.

A static scan, as ``tests/test_layering.py`` does it."""

from __future__ import annotations

import ast
from pathlib import Path

from ntkrepro.papers import PAPERS

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 600
#: The old names, forwarding to the new entry points (records and notes name them).
SHIMS = {"ntkrepro.hron2020.gpu_run": {"ntkrepro.device.cli"},
         "ntkrepro.hron2020.device_inputs": {"ntkrepro.device.inputs"}}
PAPER_DEVICE = ("ntkrepro.hron2020.device_calibration", "ntkrepro.hron2020.device_cost",
                "ntkrepro.hron2020.device_tiers", "ntkrepro.arda2026.device_cost")


def _name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every ntkrepro module an import statement anywhere in ``path`` names (``from a import b``: ``a.b``
    where that is a module, else ``a``)."""
    mod = _name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            head = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{head}.{a.name}"
                out.add(sub if _file(sub) else head)
    return {m for m in out if m == "ntkrepro" or m.startswith("ntkrepro.")}


def _file(module: str) -> Path | None:
    base = SRC / module.replace(".", "/")
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def _paper(module: str) -> str | None:
    return next((k for k in PAPERS if module == f"ntkrepro.{k}" or module.startswith(f"ntkrepro.{k}.")), None)


CALL_MODULES = sorted({_name(p) for p in (SRC / "ntkrepro" / "device").glob("*.py")}
                      | {"ntkrepro.clock", *PAPER_DEVICE, *SHIMS})


def test_no_module_of_the_call_is_over_600_lines():
    long = {m: n for m in CALL_MODULES if (n := len(_file(m).read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_no_paper_imports_another():
    crossing = []
    for path in sorted((SRC / "ntkrepro").rglob("*.py")):
        own = _paper(_name(path))
        if own is None:
            continue
        crossing += [f"{_name(path)} -> {m}" for m in _imports(path) if _paper(m) not in (None, own)]
    assert not crossing, crossing


def test_the_papers_device_parts_import_no_device_module_and_the_clock_nothing():
    for m in PAPER_DEVICE:
        assert not {i for i in _imports(_file(m)) if i.startswith("ntkrepro.device")}, m
    for m, allowed in SHIMS.items():
        assert _imports(_file(m)) == allowed, m
    assert _imports(_file("ntkrepro.clock")) == set()


def test_the_call_has_no_import_cycle():
    graph = {m: {i for i in _imports(_file(m)) if i in CALL_MODULES and i != m} for m in CALL_MODULES}
    # the package __init__ of an imported module runs first: ntkrepro.device imports nothing
    assert _imports(_file("ntkrepro.device")) == set()
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            assert state.get(n) != 1, " -> ".join([*path, m, n])
            if n not in state:
                visit(n, [*path, m])
        state[m] = 2

    for m in CALL_MODULES:
        if m not in state:
            visit(m, [])
