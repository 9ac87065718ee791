"""The fast kernel backend without neural-tangents, on pinned and on current JAX.

* the fast backend equals the golden kernels neural-tangents computed at the pinned versions
  (``tests/golden_kernels.py``, ``tests/data/golden_kernels/``): float64 to 1e-10 (max-abs
  relative, as ``tests/test_fast_kernels.py``), float32 to 1e-5 of the float64 reference; entries
  of an input with itself in a symmetric block to neural-tangents' own error there (1e-7 in
  float64, see ``test_fast_kernels.py::test_symmetric_blocks``);
* the goldens are what neural-tangents computes now (only where it is installed);
* ``ntkrepro.kernels.fast`` / ``blocks`` / ``inference`` and the H4 / H6 fast compute paths import
  and run with neural-tangents unimportable;
* every matrix product of the fast kernels runs at ``precision=HIGHEST`` (no TF32 on GPUs).

Needs only jax, numpy, scipy and pytest: CI runs this file a second time in
``.venv-jax-current`` (Python 3.12, current jax, no neural-tangents; ``envs/setup-current-jax.sh``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from golden_kernels import CASES, GOLDEN_DIR, load, model
from ntkrepro.kernels import fast
from ntkrepro.kernels.numerics import MATMUL_PRECISION, dot_precisions, enable_x64, precision_record

ROOT = Path(__file__).resolve().parents[1]
TOL = {np.float32: 1e-5, np.float64: 1e-10}
DIAG_TOL = {np.float32: 1e-5, np.float64: 1e-7}


def _fast(g: dict, dtype, **options):
    spec = g["spec"]
    x1 = g["x1"].astype(dtype)
    x2 = None if g["x2"] is None else g["x2"].astype(dtype)
    k = fast.kernel_fn(model(spec), "fast", **options)(x1, x2, ("nngp", "ntk"), mask_constant=spec["mask_constant"])
    return {n: np.asarray(getattr(k, n)) for n in ("nngp", "ntk")}


def test_every_golden_case_has_its_file():
    assert sorted(p.stem for p in GOLDEN_DIR.glob("*.npz")) == sorted(CASES)
    for name in CASES:
        g = load(name)
        assert g["spec"]["versions"]["neural-tangents"] == "0.6.5"
        assert g["nngp"].dtype == g["ntk"].dtype == np.float64
        assert np.all(np.isfinite(g["nngp"])) and np.max(np.abs(g["ntk"])) > 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_backend_equals_the_neural_tangents_golden(name):
    g = load(name)
    sym = g["x2"] is None
    off = ~np.eye(g["nngp"].shape[0], dtype=bool) if sym else np.ones(g["nngp"].shape, bool)
    for dtype in (np.float32, np.float64):
        if dtype == np.float64:
            with enable_x64():
                got = _fast(g, dtype)
        else:
            got = _fast(g, dtype)
        for n in ("nngp", "ntk"):
            ref = g[n]
            assert got[n].dtype == dtype and got[n].shape == ref.shape
            scale = np.max(np.abs(ref))
            err = np.abs(got[n].astype(np.float64) - ref) / scale
            assert err[off].max() <= TOL[dtype], (name, n, dtype, err[off].max())
            if sym:
                assert err[~off].max() <= DIAG_TOL[dtype], (name, n, dtype, err[~off].max())


def test_fast_backend_is_not_the_golden_of_another_model():
    """The comparison can fail: a neighbouring architecture's kernel is far from the golden."""
    g = load("h4_struct_d1")
    other = dict(g, spec={**g["spec"], "arch": {**g["spec"]["arch"], "pos_emb_length": 2.0}})
    with enable_x64():
        got = _fast(other, np.float64)
    assert np.max(np.abs(got["ntk"] - g["ntk"])) / np.max(np.abs(g["ntk"])) > 1e-3


@pytest.mark.parametrize("name", ["h4_residual_d1", "h6_struct_d1"])
def test_goldens_are_what_neural_tangents_computes(name):
    from ntkrepro import nt as nt_module

    if not nt_module.available():
        pytest.skip("neural-tangents is not installed here (the goldens stand in for it)")
    g = load(name)
    with enable_x64():
        k = fast.kernel_fn(model(g["spec"]), "nt")(g["x1"], g["x2"], ("nngp", "ntk"),
                                                     mask_constant=g["spec"]["mask_constant"])
    for n in ("nngp", "ntk"):
        np.testing.assert_allclose(np.asarray(getattr(k, n)), g[n], rtol=1e-12, atol=0)


_NO_NT = r"""
import importlib.abc, sys
class NoNeuralTangents(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "neural_tangents" or name.startswith("neural_tangents."):
            raise ImportError("neural-tangents is blocked in this test")
sys.meta_path.insert(0, NoNeuralTangents())
import numpy as np
import ntkrepro.kernels.fast, ntkrepro.kernels.blocks, ntkrepro.kernels.inference
from ntkrepro import nt as nt_module
from ntkrepro.hron2020 import cifar10, imdb
assert not nt_module.available()
arch = dict(width=64, W_std=2 ** .5, b_std=.05, attention_mechanism="IDENTITY", pos_emb_length=1.0, W_pos_emb_std=1.0)
x = np.random.default_rng(0).standard_normal((3, 4, 4, 3)).astype(np.float32)
for fam in cifar10.FAMILIES:
    k = cifar10.jitted_kernel_fn(fam, 1, arch, backend="fast")(x, x, ("nngp", "ntk"))
    assert np.all(np.isfinite(np.asarray(k.ntk))), fam
r = np.random.default_rng(1).standard_normal((2, 16, 4)).astype(np.float32)
r[1, 9:] = 100.0
params = dict(kernel_backend="fast", filter_size=3, W_pos_emb_std=1.0)
for fam, d in (("gap", 0), ("gap_fcn", 1), ("cnn_gap", 1), ("struct", 1)):
    k = imdb.model_kernel_fn(fam, d, params)(r, r, ("nngp", "ntk"), mask_constant=100.0)
    assert np.all(np.isfinite(np.asarray(k.nngp))), fam
try:
    from ntkrepro.nt import stax
except ImportError as e:
    assert "fast kernel backend" in str(e), e
else:
    raise AssertionError("ntkrepro.nt.stax imported without neural-tangents")
assert not any(m.startswith("neural_tangents") and m != "neural_tangents.experimental" for m in sys.modules)
print("OK")
"""


def test_fast_backend_and_h4_h6_paths_run_without_neural_tangents():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", _NO_NT], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0 and out.stdout.strip().endswith("OK"), out.stderr[-3000:]


# --------------------------------------------------------------------------------------------
# matmul precision


@pytest.mark.parametrize("name", ["h4_struct_d1", "h4_residual_d1", "h6_struct_d1"])
def test_every_matrix_product_of_the_fast_kernels_is_highest_precision(name):
    """The jaxpr of the whole kernel computation (per-input and per-pair passes, per-layer
    computations) carries precision HIGHEST on every dot_general; with precision="default" (JAX's
    TF32-on-GPU default) it does not, so the check can fail."""
    import jax

    assert MATMUL_PRECISION == "highest"
    g = load(name)
    x1, x2 = g["x1"].astype(np.float32), g["x2"].astype(np.float32)
    c = g["spec"]["mask_constant"]
    found = {}
    for precision in (None, "default"):
        kf = fast.kernel_fn(model(g["spec"]), "fast", precision=precision, trim=False)  # trim reads values
        found[precision] = dot_precisions(jax.make_jaxpr(lambda a, b: tuple(kf(a, b, ("nngp", "ntk"),
                                                                              mask_constant=c)))(x1, x2))
    assert found[None] and set(found[None]) == {"HIGHEST"}, found[None]
    assert found["default"] and "HIGHEST" not in set(found["default"]), found["default"]


def test_precision_holds_in_the_lowered_computation_and_is_recorded():
    import jax

    g = load("h4_vanilla_d1")
    kf = fast.kernel_fn(model(g["spec"]), "fast")
    x = g["x1"].astype(np.float32)
    text = jax.jit(lambda a: kf(a, None, "ntk")).lower(x).as_text()
    dots = [ln for ln in text.splitlines() if "dot_general" in ln]
    assert dots and all("precision = [HIGHEST, HIGHEST]" in ln for ln in dots), dots[:3]
    rec = precision_record()
    assert rec["matmul_precision"] == kf.precision == "highest"
    assert rec["jax"] == jax.__version__ and rec["devices"]


def test_current_jax_environment_is_pinned():
    """envs/requirements-current-jax.lock pins the exact versions the second CI environment uses."""
    lock = (ROOT / "envs" / "requirements-current-jax.lock").read_text().split()
    pins = dict(line.split("==") for line in lock if "==" in line and not line.startswith("#"))
    assert {"jax", "jaxlib", "numpy", "scipy", "pytest"} <= set(pins)
    assert "neural-tangents" not in pins
    assert tuple(int(v) for v in pins["jax"].split(".")[:2]) >= (0, 11)
