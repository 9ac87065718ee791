"""The shared layers know no paper (issue 23 item 1): no module of ``ntkrepro.kernels`` or
``ntkrepro.data`` imports a paper package (``ntkrepro.<key>`` for every key of
``ntkrepro.papers.PAPERS``), at module level or inside a function. A static scan of every import
statement (``import a.b``, ``from a import b``, relative imports resolved), so an import hidden in a
function body to dodge an import cycle is caught too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ntkrepro.papers import PAPERS

SRC = Path(__file__).resolve().parents[1] / "src"
SHARED = ("ntkrepro.kernels", "ntkrepro.data")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    """Every module an import statement anywhere in ``path`` names (``from a import b``: ``a`` and
    ``a.b``, as ``b`` may be a sub-module)."""
    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                head = ".".join(base + ([node.module] if node.module else []))
            else:
                head = node.module or ""
            out.add(head)
            out |= {f"{head}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            out.add(str(node.args[0].value))
    return out


def _is_paper(name: str) -> bool:
    return any(name == f"ntkrepro.{k}" or name.startswith(f"ntkrepro.{k}.") for k in PAPERS)


def _shared_files() -> list[Path]:
    files = [p for pkg in SHARED for p in sorted((SRC / pkg.replace(".", "/")).rglob("*.py"))]
    assert len(files) > 10
    return files


@pytest.mark.parametrize("path", _shared_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_shared_modules_import_no_paper(path):
    bad = sorted(m for m in imported_modules(path) if _is_paper(m))
    assert not bad, f"{path.relative_to(SRC)} imports paper package(s) {bad}"


def test_the_scan_sees_function_local_and_relative_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "ntkrepro" / "kernels"
    pkg.mkdir(parents=True)
    f = pkg / "probe.py"
    f.write_text("import os\n\ndef g():\n    from ntkrepro.hron2020.cifar10 import build_model\n"
                 "    from ..arda2026 import model\n    import ntkrepro.hazelden2026.benchmark as b\n")
    monkeypatch.setattr(__import__(__name__), "SRC", tmp_path)
    got = {m for m in imported_modules(f) if _is_paper(m)}
    assert {"ntkrepro.hron2020.cifar10", "ntkrepro.arda2026", "ntkrepro.hazelden2026.benchmark"} <= got
