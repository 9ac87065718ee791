"""Golden NNGP / NTK kernels computed by neural-tangents (the reference) at the pinned versions, so
that the fast backend (:mod:`ntkrepro.kernels.fast`) can be checked where neural-tangents cannot be
installed (current JAX; neural-tangents 0.6.5 is archived and pins jax 0.5.3).

Regenerate (in the pinned environment, .venv: jax 0.5.3 + neural-tangents 0.6.5)::

    PYTHONPATH=src .venv/bin/python tests/golden_kernels.py

It writes one ``tests/data/golden_kernels/<case>.npz`` per entry of :data:`CASES`: the inputs
``x1`` (and ``x2`` unless the block is symmetric, ``K(X, X)``), neural-tangents' ``nngp`` and ``ntk``
in float64, and ``spec`` (JSON: the builder and its arguments, the mask constant, the versions
that computed it). The architectures are the H4 / H6 builders' (``hron2020.cifar10.build_model``,
``hron2020.imdb.build_kernel_fn``) with config/default.yaml's ``arch`` (H4, 8x8 images as at
default scale) and H6 hyper-parameters, on random inputs (fixed seeds). Read by
``tests/test_fast_kernels_golden.py``; this module needs only numpy to be imported (the
regeneration needs neural-tangents and pyyaml).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIR = ROOT / "tests" / "data" / "golden_kernels"

#: H4 side (config/default.yaml: image_size 8) and the H6 review array (real lengths <= 20, the
#: 9-tap VALID convolution's margin of 4 masked positions; H6 mask_constant 100).
H4_SIDE = 8
H6_LENGTHS = ((20, 14, 9), (17, 20, 6, 11))
H6_ARRAY = 24
H6_DIM = 8

#: name -> (builder, family, depth, architecture overrides, symmetric block?)
CASES: dict[str, tuple[str, str, int, dict, bool]] = {
    **{f"h4_{f}_d1": ("h4", f, 1, {}, False) for f in ("flatten", "gap", "lap", "vanilla", "struct", "residual")},
    "h4_struct_d2": ("h4", "struct", 2, {}, False),
    "h4_struct_d1_softmax": ("h4", "struct", 1, {"attention_mechanism": "SOFTMAX", "W_qk_std": 0.7}, False),
    "h4_residual_d1_abs": ("h4", "residual", 1, {"attention_mechanism": "ABS", "W_qk_std": 0.7}, False),
    "h4_struct_d1_symmetric": ("h4", "struct", 1, {}, True),
    **{f"h6_{f}_d{d}": ("h6", f, d, {}, False) for f, d in (("gap", 0), ("gap_fcn", 1), ("cnn_gap", 1), ("struct", 1))},
    "h6_struct_d1_symmetric": ("h6", "struct", 1, {}, True),
}


def _inputs(builder: str, seed: int, symmetric: bool, mask_constant: float | None):
    rng = np.random.default_rng(seed)
    if builder == "h4":
        x1 = rng.standard_normal((3, H4_SIDE, H4_SIDE, 3))
        x2 = None if symmetric else rng.standard_normal((4, H4_SIDE, H4_SIDE, 3))
        return x1, x2
    xs = []
    for lengths in H6_LENGTHS[:1] if symmetric else H6_LENGTHS:
        x = rng.standard_normal((len(lengths), H6_ARRAY, H6_DIM))
        for i, ln in enumerate(lengths):
            x[i, ln:] = mask_constant
        xs.append(x)
    return xs[0], None if symmetric else xs[1]


def model(spec: dict):
    """The ``fast`` description of a golden case's model (from its stored ``spec``)."""
    from ntkrepro.kernels import fast

    if spec["builder"] == "h4":
        from ntkrepro.hron2020.cifar10 import build_model

        return fast.from_stax_builder(build_model, spec["family"], int(spec["depth"]), dict(spec["arch"]))
    from ntkrepro.hron2020.imdb import build_kernel_fn

    return fast.from_stax_builder(build_kernel_fn, spec["family"], int(spec["depth"]), **spec["kwargs"])


def load(name: str) -> dict:
    """``{"spec", "x1", "x2" (None if symmetric), "nngp", "ntk"}`` of golden case ``name``."""
    with np.load(GOLDEN_DIR / f"{name}.npz", allow_pickle=False) as z:
        out = {k: z[k] for k in z.files}
    out["spec"] = json.loads(str(out["spec"]))
    out.setdefault("x2", None)
    return out


def regenerate(names=None) -> list[Path]:
    import importlib.metadata as md

    import yaml

    from ntkrepro.kernels import fast
    from ntkrepro.kernels.numerics import enable_x64

    cfg = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())["hron2020"]
    h6 = cfg["H6"]
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for seed, (name, (builder, family, depth, over, symmetric)) in enumerate(CASES.items()):
        if names and name not in names:
            continue
        spec = {"builder": builder, "family": family, "depth": depth, "symmetric": symmetric,
                "dtype": "float64", "seed": seed,
                "versions": {p: md.version(p) for p in ("jax", "jaxlib", "neural-tangents", "numpy")}}
        if builder == "h4":
            spec["arch"] = {**cfg["H4"]["arch"], **over}
            spec["mask_constant"] = None
        else:
            spec["kwargs"] = {"filter_size": int(h6["filter_size"]), "W_pos_emb_std": float(h6["W_pos_emb_std"])}
            spec["mask_constant"] = float(h6["mask_constant"])
        x1, x2 = _inputs(builder, seed, symmetric, spec["mask_constant"])
        with enable_x64():
            k = fast.kernel_fn(model(spec), "nt")(x1, x2, ("nngp", "ntk"), mask_constant=spec["mask_constant"])
            arrays = {"x1": x1, "nngp": np.asarray(k.nngp, np.float64), "ntk": np.asarray(k.ntk, np.float64)}
        if x2 is not None:
            arrays["x2"] = x2
        path = GOLDEN_DIR / f"{name}.npz"
        np.savez_compressed(path, spec=np.array(json.dumps(spec, sort_keys=True)), **arrays)
        written.append(path)
        print(f"{path.relative_to(ROOT)}: {arrays['nngp'].shape}, {path.stat().st_size} bytes")
    return written


if __name__ == "__main__":
    regenerate(sys.argv[1:] or None)
