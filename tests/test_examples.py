"""The runnable examples (issue 31 item 6): ``examples/attention_kernel.py`` computes an attention
NNGP/NTK with :mod:`ntkrepro.kernels.fast` and checks it (symmetry, PSD, a closed form in float64,
neural-tangents where installed). Run here as a subprocess of the current interpreter, so it runs
in the README's test command (``.venv``, jax 0.5.3) and, through ``.ci/run``, in
``.venv-jax-current`` (jax 0.11.2, no neural-tangents)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "attention_kernel.py"


def test_attention_kernel_example_runs_and_passes_its_checks():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
           "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    out = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "all checks passed" in out.stdout and "FAIL" not in out.stdout
    assert "nngp (5, 5) float32, ntk (5, 5) float32" in out.stdout


def _load_example():
    spec = importlib.util.spec_from_file_location("attention_kernel_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_example_fails_when_a_check_fails(monkeypatch, capsys):
    """Its exit status is not a constant: a closed form off by 1 % makes it fail."""
    mod = _load_example()
    right = mod.identity_attention_closed_form
    monkeypatch.setattr(mod, "identity_attention_closed_form", lambda x: 1.01 * right(x))
    assert mod.main() == 1
    assert "[FAIL] nngp = (1/S) sum_s" in capsys.readouterr().out


def test_the_closed_form_is_the_identity_attention_formula():
    """The example's numpy closed form on a case done by hand: one input, S = 2 positions, d = 1,
    x = (1, 2): C = K = [[1, 2], [2, 4]], G = C, G K G^T = C^3 = 25 C, mean diagonal = 25 * 5 / 2."""
    mod = _load_example()
    x = np.array([[[1.0], [2.0]]])
    assert mod.identity_attention_closed_form(x)[0, 0] == 25 * 5 / 2
    assert mod.psd_margin(np.diag([2.0, 1.0])) == 0.5 and mod.psd_margin(np.diag([2.0, -1.0])) < 0


# ---- docs/kernels.md stays true to the code --------------------------------------------------

DOC = ROOT / "docs" / "kernels.md"


def _python_blocks(text: str) -> list[str]:
    import re

    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_kernels_doc_quickstart_runs():
    """The quickstart block computes what its comments say."""
    ns: dict = {}
    exec(_python_blocks(DOC.read_text())[0], ns)  # noqa: S102 -- our own documentation
    assert ns["k"].nngp.shape == ns["k"].ntk.shape == (5, 3)
    assert np.asarray(ns["nngp_11"]).shape == (5, 5)


def test_kernels_doc_table_names_every_fast_layer_and_only_missing_ones_as_refused():
    """Every layer ``fast`` exports has a row of the stax -> fast table; every name the table lists
    as not provided is indeed absent from ``fast`` (and, where neural-tangents is installed, a
    ``stax`` name)."""
    import re

    from ntkrepro import nt
    from ntkrepro.kernels import fast
    from ntkrepro.kernels._src.layers import STAX_NAMES

    text = DOC.read_text()
    table = text.split("## From neural-tangents `stax`")[1].split("\n## ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    for name in STAX_NAMES:
        assert any(re.search(rf"`{name}\(", r.split("|")[1]) for r in rows), f"no table row for stax.{name}"
    missing_row = next(r for r in rows if "not provided" in r)
    absent = re.findall(r"`(\w+)`", missing_row.split("|")[1].partition("(")[2])  # the names in parentheses
    assert len(absent) >= 10
    for name in absent:
        assert not hasattr(fast, name), f"docs say fast has no {name}, but it does"
        if nt.available():
            assert hasattr(nt.stax, name), f"{name} is not a stax layer"
