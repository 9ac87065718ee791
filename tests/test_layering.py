"""No import runs back up the layers (issue 23 item 1, issue 31 item 2).

* The shared layers know no paper: no module of ``ntkrepro.kernels``, ``ntkrepro.data``,
  ``ntkrepro.ledger``, ``ntkrepro.provenance``, ``ntkrepro.io``, ``ntkrepro.stats`` or
  ``ntkrepro.precision`` imports a paper package (``ntkrepro.<key>`` for every key of
  ``ntkrepro.papers.PAPERS``).
* The bottom layer (:data:`BOTTOM`: ``io``, ``stats``, ``precision``, ``provenance``) imports
  nothing above it: only other bottom modules (and the bare ``ntkrepro`` package). E.g. provenance
  records the fast kernels' matmul precision from the neutral ``ntkrepro.precision``, not from
  ``ntkrepro.kernels``.
* The ledger is a package of one concern per module (issue 31 item 1): no module of
  ``ntkrepro.ledger`` is over :data:`MAX_LEDGER_LINES` lines, each imports only the ledger modules
  above it in :data:`LEDGER_ORDER` (no cycle), the package docstring (the map) names every module,
  and every name other code imported from the single ``ledger.py`` is still importable from
  ``ntkrepro.ledger`` (the registries as the one shared object).

A static scan of every import statement (``import a.b``, ``from a import b``, relative imports
resolved, ``importlib.import_module("...")`` with a literal name), at module level or inside a
function, so an import hidden in a function body to dodge an import cycle is caught too. (The
ledger's import of each paper's claims module by a name read from ``ntkrepro.papers`` is dynamic
and not an arrow in the source.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ntkrepro.papers import PAPERS

SRC = Path(__file__).resolve().parents[1] / "src"
SHARED = ("ntkrepro.kernels", "ntkrepro.data", "ntkrepro.ledger", "ntkrepro.provenance", "ntkrepro.io",
          "ntkrepro.stats", "ntkrepro.precision")
#: The bottom layer: these import no other ``ntkrepro`` module than each other.
BOTTOM = ("ntkrepro.io", "ntkrepro.stats", "ntkrepro.precision", "ntkrepro.provenance")


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


def _files(modules) -> list[Path]:
    """The source files of ``modules`` (a module ``a/b.py`` or every file of a package ``a/b/``)."""
    out: list[Path] = []
    for name in modules:
        base = SRC / name.replace(".", "/")
        if base.is_dir():
            out += sorted(base.rglob("*.py"))
        elif base.with_suffix(".py").is_file():
            out.append(base.with_suffix(".py"))
        else:
            raise AssertionError(f"{name}: neither {base}.py nor a package {base}/")
    return out


def _shared_files() -> list[Path]:
    files = _files(SHARED)
    assert len(files) > 10
    return files


def _in(name: str, modules) -> bool:
    return any(name == m or name.startswith(m + ".") for m in modules)


def upward_imports(path: Path) -> list[str]:
    """The ``ntkrepro`` modules a bottom-layer file imports that are not in :data:`BOTTOM`."""
    return sorted(m for m in imported_modules(path)
                  if _in(m, ("ntkrepro",)) and m != "ntkrepro" and not _in(m, BOTTOM))


@pytest.mark.parametrize("path", _shared_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_shared_modules_import_no_paper(path):
    bad = sorted(m for m in imported_modules(path) if _is_paper(m))
    assert not bad, f"{path.relative_to(SRC)} imports paper package(s) {bad}"


def _probe(tmp_path: Path, monkeypatch, rel: str, source: str) -> Path:
    """A module ``rel`` (under ``ntkrepro/``) with ``source`` in a scratch source tree that the scans read."""
    f = tmp_path / "ntkrepro" / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(source)
    monkeypatch.setattr(__import__(__name__), "SRC", tmp_path)
    return f


def test_the_scan_sees_function_local_and_relative_imports(tmp_path, monkeypatch):
    f = _probe(tmp_path, monkeypatch, "kernels/probe.py",
               "import os\n\ndef g():\n    from ntkrepro.hron2020.cifar10 import build_model\n"
               "    from ..arda2026 import model\n    import ntkrepro.hazelden2026.benchmark as b\n")
    got = {m for m in imported_modules(f) if _is_paper(m)}
    assert {"ntkrepro.hron2020.cifar10", "ntkrepro.arda2026", "ntkrepro.hazelden2026.benchmark"} <= got


@pytest.mark.parametrize("path", _files(BOTTOM), ids=lambda p: str(p.relative_to(SRC)))
def test_bottom_layer_imports_nothing_above_it(path):
    bad = upward_imports(path)
    assert not bad, f"{path.relative_to(SRC)} imports {bad}, above the bottom layer {BOTTOM}"


def test_the_scan_sees_an_import_back_up_the_layers(tmp_path, monkeypatch):
    """The arrow issue 31 removed (provenance -> kernels, inside a function) is caught; imports
    inside the bottom layer are not."""
    f = _probe(tmp_path, monkeypatch, "provenance.py",
               "from ntkrepro.io import sha256_file\nfrom . import stats\nimport ntkrepro.precision\n\n"
               "def device_info():\n    from ntkrepro.kernels.numerics import MATMUL_PRECISION\n"
               "    from .ledger import load\n    import importlib\n"
               "    importlib.import_module('ntkrepro.data.cifar10')\n")
    assert upward_imports(f) == ["ntkrepro.data.cifar10", "ntkrepro.kernels.numerics",
                                 "ntkrepro.kernels.numerics.MATMUL_PRECISION", "ntkrepro.ledger",
                                 "ntkrepro.ledger.load"]


def test_importing_provenance_loads_no_layer_above_it():
    """At run time too: importing provenance and collecting a record (with JAX loaded) imports no
    ``ntkrepro`` module outside the bottom layer."""
    import subprocess
    import sys

    code = ("import sys, jax; import ntkrepro.provenance as p; p.collect(scale='x'); "
            "print(sorted(m for m in sys.modules if m.startswith('ntkrepro.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(SRC), "JAX_PLATFORMS": "cpu"})
    loaded = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 -- a list literal we printed
    assert loaded and not [m for m in loaded if not _in(m, BOTTOM)], loaded


def test_provenance_records_the_fast_kernels_matmul_precision():
    """The recorded field is unchanged by moving its source out of ``kernels``: the precision the
    fast kernels enforce, and JAX's global default."""
    import jax

    from ntkrepro import provenance
    from ntkrepro.kernels.numerics import MATMUL_PRECISION

    rec = provenance.collect(scale="smoke")["device"]["matmul_precision"]
    assert rec == {"fast_kernels": MATMUL_PRECISION, "jax_default": jax.config.jax_default_matmul_precision}
    assert MATMUL_PRECISION == "highest"


def test_the_kernel_fingerprint_covers_the_matmul_precision():
    """The constant moved out of ``ntkrepro.kernels``; the kernel cache key still hashes its file."""
    import ntkrepro.precision
    from ntkrepro import provenance

    files = provenance.package_files(provenance.DEFAULT_KERNEL_MODULES)
    assert Path(ntkrepro.precision.__file__).resolve() in {Path(f).resolve() for f in files.values()}


# ---- issue 31 item 1: the ledger as a package, one concern per module ------------------------------
#: The ledger's modules, lowest first: each may import only those before it.
LEDGER_ORDER = ("specs", "registry", "rules", "files", "rows", "tables", "evaluate", "entries", "integrity", "cli")
MAX_LEDGER_LINES = 600
LEDGER = SRC / "ntkrepro" / "ledger"


def test_the_ledger_is_a_package_of_small_modules():
    files = sorted(LEDGER.glob("*.py"))
    assert {f.stem for f in files} == {*LEDGER_ORDER, "__init__", "__main__"}
    long = {f.name: n for f in files if (n := len(f.read_text().splitlines())) > MAX_LEDGER_LINES}
    assert not long, f"ntkrepro.ledger modules over {MAX_LEDGER_LINES} lines: {long}"


def ledger_imports_out_of_order(path: Path) -> list[str]:
    """The ``ntkrepro.ledger`` modules that ledger module ``path`` imports but that are not above it in
    :data:`LEDGER_ORDER`: itself, a later module, or the package (whose ``__init__`` imports them all)."""
    above = set(LEDGER_ORDER[:LEDGER_ORDER.index(path.stem)])
    return sorted(m for m in imported_modules(path)
                  if m == "ntkrepro.ledger" or (m.startswith("ntkrepro.ledger.") and m.split(".")[2] not in above))


@pytest.mark.parametrize("name", LEDGER_ORDER)
def test_each_ledger_module_imports_only_the_ones_above_it(name):
    bad = ledger_imports_out_of_order(LEDGER / f"{name}.py")
    assert not bad, f"ntkrepro/ledger/{name}.py imports {bad}, not above it in {LEDGER_ORDER}"


def test_the_order_scan_sees_an_import_down_the_ledger(tmp_path, monkeypatch):
    f = _probe(tmp_path, monkeypatch, "ledger/rules.py",
               "from ntkrepro.ledger.specs import Verdict\nfrom .tables import _headline\n\n"
               "def g():\n    from ntkrepro import ledger\n    import ntkrepro.ledger.cli\n")
    assert ledger_imports_out_of_order(f) == ["ntkrepro.ledger", "ntkrepro.ledger.cli", "ntkrepro.ledger.tables",
                                              "ntkrepro.ledger.tables._headline"]


def test_the_package_docstring_is_the_map():
    import ntkrepro.ledger

    doc = ntkrepro.ledger.__doc__
    missing = [m for m in LEDGER_ORDER if f":mod:`ntkrepro.ledger.{m}`" not in doc]
    assert not missing, f"the ntkrepro.ledger docstring does not map {missing}"
    listed = [doc.index(f":mod:`ntkrepro.ledger.{m}`") for m in LEDGER_ORDER]
    assert listed == sorted(listed), "the map lists the modules in another order than LEDGER_ORDER"


#: Every name other code, tests, workflow and docs used from the single module ``ledger.py`` (before issue 31).
LEDGER_NAMES = (
    "Amendment", "CLAIM_MODULES", "ClaimLookupError", "ClaimSpec", "ControlFn", "ControlSpec", "Correction",
    "EVALUATE_SCALES", "Evaluation", "Interval", "LedgerFileError", "NAN_NOT_EVIDENCE", "PAPERS",
    "PREREGISTRATION_FILE", "Paper", "PowerLine", "Results", "SCALES", "Status", "UNINFORMATIVE", "Verdict",
    "_CONTROLS", "_REGISTRY", "_amendment", "_claim_spec", "_control_short", "_decisive_short", "_headline",
    "_stable_short", "_tex_escape", "apply_control_rule", "apply_nan_rule", "archives_read", "attach_decisive",
    "attach_replicates", "check", "check_chain", "check_controls", "check_decisive", "check_replicates",
    "control_function", "control_text", "decide", "decisive_text", "details_path", "entry_from_evaluation",
    "evaluate_control", "file_hashes", "get_claim", "load_claim_spec", "load_results", "main", "make_entry",
    "make_evaluation", "nan_paths", "one_result", "preregistration", "read_ledger_file", "register",
    "register_control", "registered_claims", "replicate_summary", "results_root", "sign_status", "stability_text",
    "stored_control", "table_rows", "verdict_of", "write_table",
)


def test_the_public_names_are_unchanged_and_the_registries_are_one_object():
    import ntkrepro.ledger as ledger
    from ntkrepro.ledger import registry

    missing = [n for n in LEDGER_NAMES if not hasattr(ledger, n)]
    assert not missing, f"ntkrepro.ledger lost {missing}"
    assert ledger._REGISTRY is registry._REGISTRY and ledger._CONTROLS is registry._CONTROLS
    assert ledger.get_claim("H1") is registry._REGISTRY["H1"]


def test_python_m_ntkrepro_ledger_runs_the_cli(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "ntkrepro.ledger", "check", "--claims-dir", str(tmp_path)],
                         capture_output=True, text=True, env={**__import__("os").environ, "PYTHONPATH": str(SRC)})
    assert out.returncode == 1 and f"no claims index at {tmp_path / 'index.json'}" in out.stderr, out
