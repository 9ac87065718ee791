"""No import runs back up the layers, and none closes a circle (issue 23 item 1, issue 31 item 2, issue 40).

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

* No import circle anywhere among the ``src/`` modules (issue 40 item 1): the whole module graph
  (:func:`module_graph`, imports inside functions counted, a package's ``__init__`` run by importing
  one of its modules) has no strongly connected component of more than one module, except the
  :data:`KNOWN_CYCLES` named with the work that removes them (none left); a planted circle fails the check.
* The shared layers keep their floors (:data:`FLOORS`, lowest first: the bottom layer; libraries and
  the run wrapper; the ledger; the decisive cell records; the ledger's clients): a module imports
  only its own floor or those below, never a paper package; every module but the papers and what
  composes them (:data:`TOP`: ``ntkrepro.device``) has a floor.

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


# ---- issue 40 item 1: no import circle anywhere in src/, and the floors of the shared layers -------------
#: Known circles, each to be removed by the named work (never add one to make the test pass). None left: the
#: last, hron2020.gpu_run <-> hron2020.device_inputs, went with the device package (issue 40 item 2).
KNOWN_CYCLES: tuple[frozenset[str], ...] = ()


def _all_modules(root: Path) -> dict[str, Path]:
    return {_module_name(f): f for f in sorted((root / "ntkrepro").rglob("*.py"))}


def module_graph(root: Path | None = None) -> dict[str, set[str]]:
    """``module -> the ntkrepro modules it imports`` (any import statement, at module level or in a function,
    :func:`imported_modules`), over every module under ``root`` (default :data:`SRC`). An imported name is
    resolved to the module that defines it (``from a.b import f``: ``a.b``); importing a module also runs its
    packages' ``__init__`` (``a.b.c``: ``a.b``), except the packages the importer itself is inside (a
    package's modules import each other while it loads)."""
    root = SRC if root is None else root
    mods = _all_modules(root)
    graph: dict[str, set[str]] = {}
    for m in mods:
        own = {".".join(m.split(".")[:k]) for k in range(1, m.count(".") + 1)}
        out: set[str] = set()
        for name in imported_modules(mods[m]):
            parts = name.split(".")
            while parts and ".".join(parts) not in mods:
                parts.pop()
            if not parts:
                continue
            target = ".".join(parts)
            out.add(target)
            out |= {".".join(parts[:k]) for k in range(1, len(parts))} - own
        out.discard(m)
        graph[m] = out & set(mods)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one module (Tarjan),
    each sorted, without the :data:`KNOWN_CYCLES`."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # recursive: the module graph is a few hundred nodes deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 and frozenset(comp) not in KNOWN_CYCLES:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_circle_among_the_src_modules():
    cycles = import_cycles(module_graph())
    assert not cycles, "import circles (counting imports inside functions): " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_the_known_circles_still_exist():
    """An exception of :data:`KNOWN_CYCLES` that no longer holds is removed, not kept as a loophole."""
    graph = module_graph()
    for known in KNOWN_CYCLES:
        if all(m in graph for m in known):
            sub = {m: graph[m] & known for m in known}
            assert any(len(c) > 1 for c in _raw_cycles(sub)), f"{sorted(known)} is no longer a circle: remove it"


def _raw_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    saved = KNOWN_CYCLES
    try:
        globals()["KNOWN_CYCLES"] = ()
        return import_cycles(graph)
    finally:
        globals()["KNOWN_CYCLES"] = saved


def test_a_planted_circle_fails_the_check(tmp_path, monkeypatch):
    """A circle through an import inside a function body (as the one issue 40 found: ledger -> decisive
    -> ledger) and one through a package's ``__init__`` are both found; a package importing its own
    modules is not a circle."""
    _probe(tmp_path, monkeypatch, "low.py", "import os\n\ndef f():\n    from ntkrepro.high import g\n    return g\n")
    _probe(tmp_path, monkeypatch, "high.py", "from ntkrepro.low import f\n\ndef g():\n    return f\n")
    _probe(tmp_path, monkeypatch, "pkg/__init__.py", "from ntkrepro.pkg.a import x\nfrom .b import y\n")
    _probe(tmp_path, monkeypatch, "pkg/a.py", "from ntkrepro.pkg.b import y\nx = 1\n")
    _probe(tmp_path, monkeypatch, "pkg/b.py", "y = 2\n")
    _probe(tmp_path, monkeypatch, "user.py", "from ntkrepro.pkg.a import x\n")
    _probe(tmp_path, monkeypatch, "__init__.py", "")
    graph = module_graph(tmp_path)
    assert graph["ntkrepro.low"] == {"ntkrepro.high"} and graph["ntkrepro.user"] == {"ntkrepro.pkg", "ntkrepro.pkg.a"}
    assert import_cycles(graph) == [["ntkrepro.high", "ntkrepro.low"]]
    _probe(tmp_path, monkeypatch, "pkg/b.py", "import importlib\n\ndef h():\n"
           "    return importlib.import_module('ntkrepro.user')\n")
    assert import_cycles(module_graph(tmp_path)) == [
        ["ntkrepro.high", "ntkrepro.low"], ["ntkrepro.pkg", "ntkrepro.pkg.a", "ntkrepro.pkg.b", "ntkrepro.user"]]


#: The floors of the shared layers, lowest first: a module imports only modules of its own floor or the
#: floors below (the papers' packages stand above all of them but the top one; ``ntkrepro`` itself is empty).
FLOORS = (
    ("ntkrepro.io", "ntkrepro.stats", "ntkrepro.precision", "ntkrepro.provenance"),  # the bottom layer
    ("ntkrepro.papers", "ntkrepro.nt", "ntkrepro.kernels", "ntkrepro.data", "ntkrepro.run", "ntkrepro.plotting",
     "ntkrepro.replicates", "ntkrepro.amendment_log", "ntkrepro.configcheck", "ntkrepro.clock"),  # libraries
    ("ntkrepro.ledger",),  # a claim's record, its rules and its rendering
    ("ntkrepro.decisive_cells",),  # the decisive tier's cell records, its plan and their verification
    ("ntkrepro.decisive", "ntkrepro.verdicts", "ntkrepro.report", "ntkrepro.configdoc",
     "ntkrepro.claim_map", "ntkrepro.notebooks"),  # clients of the ledger: orchestration, snapshots, documents
)


#: Above the papers: what composes them (the device call imports each paper's tier runner and cost model).
TOP = ("ntkrepro.device",)


def _floor(module: str) -> int | None:
    for i, floor in enumerate(FLOORS):
        if _in(module, floor):
            return i
    return None


def floor_violations(graph: dict[str, set[str]]) -> list[str]:
    """``"a -> b"`` for each import of a shared-layer module ``a`` into a module ``b`` of a higher floor or of no
    floor (a paper package)."""
    out = []
    for m, targets in sorted(graph.items()):
        f = _floor(m)
        if f is None:
            continue
        out += [f"{m} -> {t}" for t in sorted(targets) if t != "ntkrepro" and (_floor(t) is None or _floor(t) > f)]
    return out


def test_the_shared_layers_keep_their_floors():
    graph = module_graph()
    assert not floor_violations(graph), floor_violations(graph)
    floored = {m for m in graph if _floor(m) is not None}
    papers = {m for m in graph if _is_paper(m)}
    unplaced = sorted(set(graph) - floored - papers - {"ntkrepro"} - {m for m in graph if _in(m, TOP)})
    assert not unplaced, f"modules on no floor of FLOORS (place them): {unplaced}"


def test_the_floor_check_sees_an_import_up_a_floor(tmp_path, monkeypatch):
    graph = {"ntkrepro.ledger.rows": {"ntkrepro.verdicts", "ntkrepro.io"}, "ntkrepro.io": set(),
             "ntkrepro.decisive_cells": {"ntkrepro.hron2020.claims"}, "ntkrepro.verdicts": {"ntkrepro.ledger"}}
    assert floor_violations(graph) == ["ntkrepro.decisive_cells -> ntkrepro.hron2020.claims",
                                       "ntkrepro.ledger.rows -> ntkrepro.verdicts"]


# ---- issue 40 item 3: the criteria import no compute module -----------------------------------------------
#: The compute modules of hron2020 (JAX, neural-tangents, flax): its criteria must not need them.
HRON_COMPUTE = ("ntkrepro.hron2020.cifar10", "ntkrepro.hron2020.imdb", "ntkrepro.hron2020.attention",
                "ntkrepro.hron2020.finite_nets", "ntkrepro.hron2020.h4_decisive", "ntkrepro.hron2020.h6_decisive",
                "ntkrepro.kernels", "ntkrepro.nt")


def test_every_papers_criteria_import_without_jax():
    """``import ntkrepro.<paper>.claims`` loads neither JAX nor a compute module (hron2020's imported its
    cifar10 and imdb modules for two substitute lists and three constants before issue 40)."""
    import subprocess
    import sys

    code = ("import sys; from ntkrepro.papers import CLAIM_MODULES; import importlib; "
            "[importlib.import_module(m) for m in CLAIM_MODULES.values()]; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'neural_tangents', 'flax', 'torch') "
            "or m.startswith('ntkrepro.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(SRC)})
    loaded = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 -- a list literal we printed
    assert "ntkrepro.hron2020.claims" in loaded
    bad = [m for m in loaded if not m.startswith("ntkrepro.") or _in(m, HRON_COMPUTE)]
    assert not bad, f"importing the criteria loads {bad}"


# ---- issue 40 item 6: no module of src/ over MAX_MODULE_LINES lines ------------------------------------------
#: The longest a module of ``src/`` may be; longer ones are split along their seams into smaller public modules
#: (the old import path re-exporting every name), as ``stats``, ``arda2026.scaling``, ``hron2020.claims`` and
#: ``hazelden2026.claims`` were.
MAX_MODULE_LINES = 600


def long_modules(root: Path | None = None) -> dict[str, int]:
    """``module -> lines`` of every ``.py`` file under ``root`` (default :data:`SRC`) over :data:`MAX_MODULE_LINES`."""
    root = SRC if root is None else root
    return {str(f.relative_to(root)): n for f in sorted(root.rglob("*.py"))
            if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}


def test_no_src_module_is_over_600_lines():
    long = long_modules()
    assert not long, f"src/ modules over {MAX_MODULE_LINES} lines (split them along their seams): {long}"


def test_the_line_count_sees_a_long_module(tmp_path):
    (tmp_path / "ntkrepro").mkdir()
    (tmp_path / "ntkrepro" / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    (tmp_path / "ntkrepro" / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert long_modules(tmp_path) == {"ntkrepro/long.py": MAX_MODULE_LINES + 1}


def test_the_split_modules_keep_their_old_names():
    """Every name the four split modules defined before the split is still importable from its old path, as the
    same object as in its new home (the claim map and the rules name ``ntkrepro.arda2026.scaling:aggregate_a1``)."""
    from ntkrepro import stats
    from ntkrepro.arda2026 import scaling, scaling_aggregate, scaling_tasks
    from ntkrepro.hazelden2026 import claims as gclaims
    from ntkrepro.hazelden2026 import g3_points
    from ntkrepro.hron2020 import claims as hclaims
    from ntkrepro.hron2020 import criteria_parts
    from ntkrepro.stats import associations, crossed, intervals, paired, power

    for name in ("Interval", "Status", "PowerLine", "MAX_EXTRAPOLATION", "bootstrap_ci", "power_line", "sign_test",
                 "paired_test_power", "spearman_permutation_test", "crossed_bootstrap", "powerlaw_wls_fit"):
        homes = [m for m in (intervals, power, paired, associations, crossed) if name in vars(m)]
        assert len(homes) >= 1 and getattr(stats, name) is getattr(homes[0], name), name
    for name in ("aggregate_a1", "aggregate_a2", "aggregate_a3", "summarise", "untrained_rows"):
        assert getattr(scaling, name) is getattr(scaling_aggregate, name)
    for name in ("tasks", "shard_tasks", "n_shards", "seed_groups", "teacher_kinds", "METRICS_A1", "POINT"):
        assert getattr(scaling, name) is getattr(scaling_tasks, name)
    for name in ("h3_slope", "apply_regime", "model_gain", "h4_depth_contrast", "h5_paired_differences"):
        assert getattr(hclaims, name) is getattr(criteria_parts, name)
    for name in ("G3_SAME_RUN_RTOL", "_distinct_points", "_seed_bootstrap_spearman"):
        assert getattr(gclaims, name) is getattr(g3_points, name)
    # the computation the archived A1 cells hash stays in scaling (ntkrepro.decisive_cells.COMPUTE_CODE)
    assert scaling.run_a1_cell.__module__ == scaling.train_student.__module__ == "ntkrepro.arda2026.scaling"
