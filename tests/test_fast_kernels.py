"""ntkrepro.kernels.fast: equal to neural-tangents' kernel_fn for the H4 / H6 model families.

Models are the ones the H4 / H6 builders describe (``hron2020.cifar10.build_model``,
``hron2020.imdb.build_kernel_fn``), read through ``fast.from_stax_builder``: one description, both
backends. Agreement is the max-abs relative difference ``max|K_fast - K_nt| / max|K_nt|``: <= 1e-5 in
float32, <= 1e-10 in float64, on blocks of distinct random inputs. On symmetric blocks K(X, X) the
entries pairing an input with itself are compared separately (see test_symmetric_blocks).
"""

from __future__ import annotations

import math
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml
from jax.experimental import enable_x64

from ntkrepro.kernels import fast
from ntkrepro.kernels._src import elementwise
from ntkrepro.kernels._src.engine import iter_leaves, takes_inputs

ROOT = Path(__file__).resolve().parents[1]
CFG = {s: yaml.safe_load((ROOT / f"config/{s}.yaml").read_text())["hron2020"] for s in ("smoke", "default", "paper")}
H4_FAMILIES = ("flatten", "gap", "lap", "vanilla", "struct", "residual")
ARCH = dict(CFG["default"]["H4"]["arch"])
C = float(CFG["default"]["H6"]["mask_constant"])
K9 = int(CFG["default"]["H6"]["filter_size"])
TOL = {np.float32: 1e-5, np.float64: 1e-10}


def _config_depths() -> dict[str, set[int]]:
    """Every H4 depth and H6 (family, depth) the three configs use."""
    h4 = set()
    h6 = {"gap": {0}, "gap_fcn": set(), "cnn_gap": set(), "struct": set()}
    for c in CFG.values():
        h4 |= {int(d) for d in c["H4"]["depths"]} | {int(d) for d in (c["H4"].get("final_depth") or {}).values()}
        h6["gap_fcn"] |= {int(d) for d in c["H6"]["fcn_depths"]}
        h6["cnn_gap"] |= {int(d) for d in c["H6"]["cnn_depths"]}
        h6["struct"] |= {int(d) for d in c["H6"]["attention_layers"]}
    return {"h4": h4, **{f"h6_{k}": v for k, v in h6.items()}}


DEPTHS = _config_depths()


def rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def h4_model(family: str, depth: int, **arch) -> fast.Layer:
    from ntkrepro.hron2020.cifar10 import build_model

    return fast.from_stax_builder(build_model, family, depth, {**ARCH, **arch})


def h6_model(family: str, depth: int) -> fast.Layer:
    from ntkrepro.hron2020.imdb import build_kernel_fn

    return fast.from_stax_builder(build_kernel_fn, family, depth, filter_size=K9,
                                  W_pos_emb_std=float(CFG["default"]["H6"]["W_pos_emb_std"]))


def images(n: int, side: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, side, side, 3)).astype(np.float32)


def reviews(lengths, array_length: int, seed: int, dim: int = 8) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((len(lengths), array_length, dim)).astype(np.float32)
    for i, ln in enumerate(lengths):
        x[i, ln:] = C
    return x


def both(model, x1, x2, dtype, **kw):
    """(nt, fast) kernels of the block in ``dtype`` (float64 inside enable_x64)."""
    get = ("nngp", "ntk")
    if dtype == np.float64:
        with enable_x64():
            a = fast.kernel_fn(model, "nt")(x1.astype(dtype), None if x2 is None else x2.astype(dtype), get, **kw)
            b = fast.kernel_fn(model, "fast")(x1.astype(dtype), None if x2 is None else x2.astype(dtype), get, **kw)
            return ({g: np.asarray(getattr(a, g)) for g in get}, {g: np.asarray(getattr(b, g)) for g in get})
    a = fast.kernel_fn(model, "nt")(x1, x2, get, **kw)
    b = fast.kernel_fn(model, "fast")(x1, x2, get, **kw)
    return ({g: np.asarray(getattr(a, g)) for g in get}, {g: np.asarray(getattr(b, g)) for g in get})


def assert_equal_to_nt(model, x1, x2, **kw):
    for dtype in (np.float32, np.float64):
        ref, got = both(model, x1, x2, dtype, **kw)
        for g in ref:
            assert got[g].dtype == dtype
            assert rel(got[g], ref[g]) <= TOL[dtype], (g, dtype, rel(got[g], ref[g]))


# --------------------------------------------------------------------------------------------
# elementwise pieces


def test_atan2_matches_numpy_to_the_last_bits():
    rng = np.random.default_rng(0)
    y = np.abs(rng.standard_normal(20000)) * 10.0 ** rng.uniform(-8, 3, 20000)
    x = rng.standard_normal(20000) * 10.0 ** rng.uniform(-8, 3, 20000)
    y[:4], x[:4] = 0.0, [0.0, 1.0, -1.0, 0.0]
    y[3] = 2.0
    want = np.arctan2(y, x)
    want[0] = np.pi / 2  # neural-tangents' fill value at (0, 0)
    with enable_x64():
        got = np.asarray(jax.jit(elementwise.atan2_nonneg)(y, x))
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=0)
    got32 = np.asarray(jax.jit(elementwise.atan2_nonneg)(y.astype(np.float32), x.astype(np.float32)))
    np.testing.assert_allclose(got32, want, rtol=3e-7, atol=1e-38)


def test_relu_kernel_is_the_arc_cosine_kernel_and_exact_on_coincident_entries():
    rng = np.random.default_rng(1)
    v1, v2 = rng.uniform(0.5, 2, 500), rng.uniform(0.5, 2, 500)
    c = rng.uniform(-1, 1, 500) * np.sqrt(v1 * v2)
    th = np.arccos(c / np.sqrt(v1 * v2))
    want = np.sqrt(v1 * v2) * (np.sin(th) + (np.pi - th) * np.cos(th)) / (2 * np.pi)
    with enable_x64():
        k, ds = (np.asarray(a) for a in elementwise.relu_kernel(c, v1 * v2))
    np.testing.assert_allclose(k, want, rtol=1e-12, atol=1e-15)  # reference cancels near theta = pi
    np.testing.assert_allclose(ds, (np.pi - th) / (2 * np.pi), rtol=1e-13)
    # a position with itself: correlation 1, theta = 0 exactly even when c^2 != v1 v2 by rounding
    v = np.float32(1.3)
    c_rounded = np.nextafter(v, np.float32(0))
    _, ds = elementwise.relu_kernel(np.array([c_rounded]), np.array([v * v]), np.array([True]))
    assert float(ds[0]) == 0.5


def test_relu_correlation_form_in_float32_is_the_arc_cosine_kernel():
    """The float32 pair pass's ReLU (issue 36: no division per entry) against the arc-cosine kernel in
    float64 of the same float32 inputs, over correlations across [-1, 1] (both ends included), zero
    variances (neural-tangents' theta = pi/2 fill) and coincident entries (theta = 0 exactly)."""
    rng = np.random.default_rng(2)
    v1 = rng.uniform(0.01, 4, 4000).astype(np.float32)
    v2 = rng.uniform(0.01, 4, 4000).astype(np.float32)
    rho = np.concatenate([rng.uniform(-1, 1, 3990), [-1, 1, 0, 0.5, -0.5, 1 - 1e-7, -1 + 1e-7, 1e-30, 0.999, -0.999]])
    c = (rho * np.sqrt(v1.astype(np.float64) * v2)).astype(np.float32)
    v1[-3], v2[-4], c[-4:-2] = 0.0, 0.0, 0.0  # masked positions: zero variance, zero covariance
    c64, v64 = c.astype(np.float64), v1.astype(np.float64) * v2
    th = np.arccos(np.clip(c64 / np.where(v64 > 0, np.sqrt(v64), 1.0), -1, 1))
    want_ds = (np.pi - th) / (2 * np.pi)
    want = (np.sqrt(np.maximum(v64 - c64 ** 2, 0)) + (np.pi - th) * c64) / (2 * np.pi)
    sd1, sd2 = np.sqrt(v1), np.sqrt(v2)
    inv = lambda s: np.where(s > 0, 1 / np.where(s > 0, s, 1), 0).astype(np.float32)  # noqa: E731
    k, ds = (np.asarray(a, np.float64) for a in jax.jit(elementwise.relu_kernel_corr)(c, sd1, sd2, inv(sd1), inv(sd2)))
    scale = np.sqrt(v64)
    assert np.max(np.abs(k - want) / np.where(scale > 0, scale, 1)) < 2e-7
    # the slope, unlike K', is ill-conditioned at |rho| -> 1: an input rounding of rho by eps moves theta
    # by eps / sin(theta) (the atan2 form and neural-tangents alike)
    assert np.max(np.abs(ds - want_ds) * np.maximum(np.sin(th), 1e-3)) < 1e-7
    assert ds[-4] == ds[-3] == 0.25 and k[-4] == k[-3] == 0.0  # zero variance: theta = pi/2, K' = 0
    # coincident entries: rho = 1 even where c^2 != v1 v2 by rounding
    v = np.float32(1.3)
    c1 = np.array([np.nextafter(v, np.float32(0))])
    s = np.array([np.sqrt(v)], np.float32)
    _, ds = elementwise.relu_kernel_corr(c1, s, s, 1 / s, 1 / s, np.array([True]))
    assert float(ds[0]) == 0.5
    a = np.linspace(0, 1, 100001).astype(np.float32)
    np.testing.assert_allclose(np.asarray(elementwise.acos_unit_f32(a), np.float64), np.arccos(a.astype(np.float64)),
                               rtol=3e-7, atol=1e-7)


@pytest.mark.parametrize("shape, filt, padding", [((5, 6), (3, 3), "SAME"), ((5, 6), (3, 2), "VALID"),
                                                 ((10,), (3,), "VALID"), ((10,), (4,), "SAME")])
def test_first_conv_from_input_patches_is_the_stencil_of_the_input_covariance(shape, filt, padding):
    """A first Conv computes its pair update as one GEMM of input patches (issue 36): equal to the
    stencil of the input covariance (the path of every later Conv), masks and bias included."""
    from ntkrepro.kernels._src.base import Inputs, Pair, input_pair

    rng = np.random.default_rng(3)
    s = int(np.prod(shape))
    conv = fast.Conv(8, filt, padding=padding, W_std=1.3, b_std=0.2)
    plan = conv.plan(shape, "full")
    with enable_x64():
        x1, x2 = rng.standard_normal((3, s, 2)), rng.standard_normal((4, s, 2))
        for masked in (False, True):
            m1 = m2 = None
            if masked:  # output masks as Conv.single gives them (the window centre's input mask)
                m1 = conv._out_mask(np.arange(s)[None, :] >= s - 2 - np.arange(3)[:, None], shape)
                m2 = conv._out_mask(np.zeros((4, s), bool), shape)
            for ntk in ("zero", "none"):
                got = conv.pair(Pair(Inputs(x1, x2), ntk), m1, m2, plan)
                want = conv.pair(Pair(input_pair(x1, x2, "full", True), ntk), m1, m2, plan)
                assert got.ntk == want.ntk and got.k.shape == want.k.shape
                np.testing.assert_allclose(np.asarray(got.k), np.asarray(want.k), rtol=1e-13, atol=1e-15)


def test_the_engine_hands_the_inputs_to_a_first_conv_with_few_features():
    from ntkrepro.kernels._src.engine import takes_inputs

    h4 = h4_model("struct", 1)  # 3x3 taps x 3 channels = 27 features: one GEMM of patches
    assert takes_inputs(h4, fast.FastKernelFn(h4).plan((8, 8, 3)), 3)
    h6 = h6_model("struct", 1)  # 9 taps x 50-d word vectors: the stencil is cheaper than a 450-deep GEMM
    assert not takes_inputs(h6, fast.FastKernelFn(h6).plan((40, 50)), 50)


# --------------------------------------------------------------------------------------------
# H4 (CIFAR-10 families)


@pytest.mark.parametrize("family", H4_FAMILIES)
def test_h4_families_equal_neural_tangents(family):
    assert_equal_to_nt(h4_model(family, 1), images(2, 4, 0), images(3, 4, 1))


def test_h4_softmax_attention_equals_neural_tangents():
    assert_equal_to_nt(h4_model("struct", 1, attention_mechanism="SOFTMAX", W_qk_std=0.7), images(2, 4, 2),
                       images(2, 4, 3))


def _h4_slow_cases():
    cases = [(f, d, {}) for f in H4_FAMILIES for d in sorted(DEPTHS["h4"] - {1})]
    cases += [(f, 1, {"attention_mechanism": m, "W_qk_std": 0.7}) for f in ("vanilla", "residual")
              for m in ("SOFTMAX", "RELU", "ABS")]
    cases += [("struct", 1, {"attention_mechanism": m, "W_qk_std": 0.7}) for m in ("RELU", "ABS")]
    cases += [("lap", d, {"lap_window": int(CFG["paper"]["H4"]["arch"]["lap_window"])}) for d in (1, 2)]
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("family,depth,arch", _h4_slow_cases())
def test_h4_every_config_depth_and_mechanism_equals_neural_tangents(family, depth, arch):
    """All depths the smoke/default/paper configs use (incl. the paper's final depth 8), every
    attention mechanism, and the paper's LAP window 4 (on 8x8 inputs)."""
    side = 8 if "lap_window" in arch else 4
    assert_equal_to_nt(h4_model(family, depth, **arch), images(2, side, 4), images(2, side, 5))


# --------------------------------------------------------------------------------------------
# H6 (IMDb families, masked variable-length reviews)


def _h6_inputs(depth_convs: int, seed: int):
    margin = (K9 - 1) // 2 * max(depth_convs, 1)
    L = 20
    return (reviews([20, 14, 9], L + margin, seed), reviews([17, 20], L + margin, seed + 1))


@pytest.mark.parametrize("family,depth", [("gap", 0), ("gap_fcn", 1), ("cnn_gap", 1), ("struct", 1)])
def test_h6_families_equal_neural_tangents_with_masking(family, depth):
    x1, x2 = _h6_inputs(depth if family == "cnn_gap" else 1, 10)
    assert_equal_to_nt(h6_model(family, depth), x1, x2, mask_constant=C)


@pytest.mark.slow
@pytest.mark.parametrize("family,depth", [(f, d) for key, f in (("h6_gap_fcn", "gap_fcn"), ("h6_cnn_gap", "cnn_gap"),
                                                                  ("h6_struct", "struct"))
                                          for d in sorted(DEPTHS[key]) if d != 1])
def test_h6_every_config_depth_equals_neural_tangents(family, depth):
    x1, x2 = _h6_inputs(depth if family == "cnn_gap" else 1, 20 + depth)
    assert_equal_to_nt(h6_model(family, depth), x1, x2, mask_constant=C)


def test_padded_and_unpadded_copies_of_a_review_give_the_same_kernel():
    """The same reviews with 4 (the conv's margin) or 30 trailing masked positions: equal kernels,
    in both backends, and equal to each other."""
    short = reviews([20, 11, 6], 24, 30)
    long = np.concatenate([short, np.full((3, 26, short.shape[2]), C, np.float32)], axis=1)
    other = reviews([13, 20], 24, 31)
    other_long = np.concatenate([other, np.full((2, 26, other.shape[2]), C, np.float32)], axis=1)
    for family, depth in (("struct", 1), ("cnn_gap", 1), ("gap_fcn", 1)):
        model = h6_model(family, depth)
        kf = fast.kernel_fn(model, "fast")
        assert kf._trim(long, other_long, C)[0].shape[1] < long.shape[1]  # all-masked tail dropped (exact)
        a = kf(short, other, ("nngp", "ntk"), mask_constant=C)
        b = kf(long, other_long, ("nngp", "ntk"), mask_constant=C)
        ref = fast.kernel_fn(model, "nt")(long, other_long, ("nngp", "ntk"), mask_constant=C)
        for g in ("nngp", "ntk"):
            assert rel(getattr(b, g), getattr(a, g)) <= 1e-6, (family, g)
            assert rel(getattr(b, g), getattr(ref, g)) <= 1e-5, (family, g)


# --------------------------------------------------------------------------------------------
# symmetric blocks, symmetry, PSD


@pytest.mark.parametrize("model_fn,x,kw", [
    (lambda: h4_model("flatten", 2), images(4, 4, 40), {}),
    (lambda: h4_model("struct", 1), images(4, 4, 41), {}),
    (lambda: h6_model("struct", 1), reviews([20, 15, 9, 20], 24, 42), {"mask_constant": C}),
])
def test_symmetric_blocks(model_fn, x, kw):
    """K(X, X): entries of distinct inputs equal neural-tangents to 1e-5 / 1e-10. Entries of an
    input with itself: the ReLU angle at correlation 1 is ill-conditioned; neural-tangents computes
    it from rounded c^2 vs v1 v2 (error ~sqrt(eps)), the fast backend uses the exact theta = 0. There
    fast agrees with neural-tangents to the latter's own error (1e-4 / 1e-7), and fast in float32
    agrees with neural-tangents in float64 to 1e-5 (neural-tangents in float32 does not). The fast
    kernel is symmetric and positive semi-definite."""
    model = model_fn()
    off = ~np.eye(x.shape[0], dtype=bool)
    res = {}
    for dtype in (np.float32, np.float64):
        ref, got = both(model, x, None, dtype, **kw)
        res[dtype] = (ref, got)
        for g in ref:
            scale = np.max(np.abs(ref[g]))
            assert np.max(np.abs(got[g] - ref[g])[off]) / scale <= TOL[dtype], (g, dtype)
            diag_tol = {np.float32: 1e-4, np.float64: 1e-7}[dtype]
            assert np.max(np.abs(np.diag(got[g]) - np.diag(ref[g]))) / scale <= diag_tol
            assert np.max(np.abs(got[g] - got[g].T)) / scale <= 10 * np.finfo(dtype).eps
            eig = np.linalg.eigvalsh((got[g] + got[g].T).astype(np.float64) / 2)
            assert eig.min() >= -100 * np.finfo(dtype).eps * eig.max(), (g, dtype, eig.min())
    nt64 = res[np.float64][0]
    fast32 = res[np.float32][1]
    for g in nt64:
        assert rel(fast32[g], nt64[g]) <= 1e-5, g


# --------------------------------------------------------------------------------------------
# engine: chunking, API


def test_row_chunks_and_per_layer_computations_give_the_same_kernel():
    model = h4_model("residual", 1)
    x1 = images(5, 4, 50)
    whole = fast.kernel_fn(model, "fast")(x1, None)
    for rows, split in ((2, True), (1, False)):  # split: one XLA computation per layer
        chunked = fast.kernel_fn(model, "fast", rows=rows, split_layers=split)(x1, None)
        for g in ("nngp", "ntk"):
            assert rel(getattr(chunked, g), getattr(whole, g)) <= 1e-6
    tiny_budget = fast.kernel_fn(model, "fast", memory_budget=1)
    assert tiny_budget.rows_for(5, 5, x1.shape[1:], 4, True) == 1


def test_cheap_leaves_run_inside_the_computation_of_the_leaf_before_them(monkeypatch):
    from ntkrepro.kernels._src import combinators

    # cheap leaves that open a serial (the sweep model's Residual branch) run one by one
    branch = fast.serial(fast.Conv(4, (1, 1)), fast.FanOut(2), fast.parallel(fast.Identity(), fast.Identity()),
                         fast.FanInSum(), fast.Flatten(), fast.Dense(1))
    bplan = branch.plan((4, 4), "none")
    assert branch._runs(bplan) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 6)]
    model = h4_model("residual", 1)  # Conv(3x3) Relu Conv(1x1) FanOut parallel(...) FanInSum LayerNorm Flatten Dense
    kf = fast.FastKernelFn(model, split_layers=True)
    x1, x2 = images(4, 4, 60), images(3, 4, 61)
    assert [r["layer"] for r in kf.profile_layers(x1, x2, repeats=1)] == [
        "Conv", "Relu+Conv+FanOut", "Identity", "GlobalSelfAttention", "FanInSum", "LayerNorm", "Flatten+Dense"]
    fused = kf(x1, x2)
    # the same numbers as every leaf in its own computation (one run per layer)
    monkeypatch.setattr(combinators._Serial, "_runs", lambda self, plan: [(i, i + 1) for i in range(len(self.layers))])
    alone = fast.FastKernelFn(model, split_layers=True)
    assert [r["layer"] for r in alone.profile_layers(x1, x2, repeats=1)][1:4] == ["Relu", "Conv", "FanOut"]
    for g in ("nngp", "ntk"):
        assert rel(getattr(alone(x1, x2), g), getattr(fused, g)) <= 1e-6
    # the closing FanOut's diagonal branch is the ReLU and 1x1 conv run on the input's diagonal (Fused docstring):
    # taken here, and the same numbers on a symmetric block too (coincident entries on the diagonal)
    monkeypatch.undo()
    taken = []
    reduce = combinators.Fused._reduced_branch
    monkeypatch.setattr(combinators.Fused, "_reduced_branch", lambda *a: taken.append(r := reduce(*a)) or r)
    sym = fast.FastKernelFn(model, split_layers=True)(x1, None)
    assert taken and all(r is not None for r in taken)
    monkeypatch.undo()
    assert [r["layer"] for r in fast.FastKernelFn(model, split_layers=True).profile_layers(x1, None, repeats=1)][1] \
        == "Relu+Conv+FanOut"
    for g in ("nngp", "ntk"):
        assert rel(getattr(sym, g), getattr(fast.kernel_fn(model, "nt")(x1, None, ("nngp", "ntk")), g)) <= 1e-5
    # not where a member needs more than the branch's mode of its input: attention's diagonal needs the whole covariance
    att, fo = fast.GlobalSelfAttention(4, 4, 4, 1), combinators.FanOut(2)
    both = (att.plan((4, 4), "full"), fo.plan((4, 4), ("diag", "full")))
    aplan = type(both[0])((4, 4), (4, 4), "full", ("diag", "full"), both)
    assert combinators.Fused([att, fo])._reduced_branch(None, "diag", (None, None), (None, None), aplan) is None
    # what fuses: affine maps (Dense, 1x1 Conv) and a FanOut that hands no array on twice; not a 3x3 stencil
    plan = kf.plan((4, 4, 3))
    fl = {type(leaf).__name__ + str(getattr(leaf, "filter_shape", "")): leaf.fuses_into_previous(pl)
          for leaf, pl in iter_leaves(model, plan)}
    assert fl["Conv(3, 3)"] is False and fl["Conv(1, 1)"] and fl["FanOut"] and fl["Dense"] and not fl["Relu"]
    same = combinators.FanOut(2)
    assert not same.fuses_into_previous(same.plan(None, ("full", "full")))


def test_one_description_builds_both_backends():
    from ntkrepro.hron2020.cifar10 import build_model

    x = images(2, 4, 60)
    gap = h4_model("gap", 1)
    assert isinstance(gap, fast.Layer)
    init_fn, apply_fn, kernel_fn = gap  # unpacks like the stax triple
    direct = build_model("gap", 1, ARCH)[2](x, None, ("nngp", "ntk"))
    np.testing.assert_array_equal(np.asarray(kernel_fn(x, None, ("nngp", "ntk")).nngp), np.asarray(direct.nngp))
    model = h4_model("struct", 1)
    single = fast.kernel_fn(model, "fast")(x, None, "nngp")
    assert single.shape == (2, 2)
    only_ntk = fast.kernel_fn(model, "fast")(x, None, ("ntk",))
    assert only_ntk._fields == ("ntk",)
    nngp_only = fast.kernel_fn(model, "fast")(x, images(3, 4, 61), "nngp")
    assert rel(nngp_only, fast.kernel_fn(model, "nt")(x, images(3, 4, 61), "nngp")) <= 1e-5
    with pytest.raises(ValueError):
        fast.kernel_fn(model, "jax")


def test_unsupported_layers_fail_loudly_in_the_fast_backend():
    x = images(2, 4, 70)
    bad = [fast.serial(fast.GlobalSelfAttention(8, 8, 8, 1, linear_scaling=False), fast.Flatten()),
           fast.serial(fast.Conv(8, (3, 3), strides=(2, 2), padding="SAME"), fast.Flatten()),
           fast.serial(fast.GlobalSelfAttention(8, 8, 8, 1, pos_emb_type="CONCAT"), fast.Flatten()),
           fast.serial(fast.Conv(8, (3, 3), padding="SAME"))]  # no readout
    for model in bad:
        with pytest.raises((NotImplementedError, ValueError)):
            fast.kernel_fn(model, "fast")(x, None)


def test_flop_count_of_a_diagonal_attention_model():
    model = h4_model("struct", 1)
    s, c = 16, 3
    fl = fast.flop_count(model, (4, 4, c))
    attention = 2 * (2 * s ** 3 + 2 * s ** 2)  # diagonal output (LayerNorm/Flatten follow), 2 kernels
    conv = 2 * 9 * s * s
    assert fl["attention"] == attention
    assert fl["total"] == 2 * c * s * s + conv + attention
    assert math.isclose(fast.flop_count(h4_model("flatten", 1), (4, 4, c))["total"], 2 * c * s + 2 * 9 * s)


# --------------------------------------------------------------------------------------------
# integration: config kernel_backend in H4 / H6, kernel-block cache keyed on the backend


def test_config_kernel_backend_is_fast_at_every_scale():
    for scale, c in CFG.items():
        assert c["H4"]["kernel_backend"] == "fast" and c["H6"]["kernel_backend"] == "fast", scale


def test_h4_kernel_blocks_of_both_backends_agree_and_are_cached_apart(tmp_path):
    """H4's cached kernels (``cifar10._kernel``) with kernel_backend nt and fast: equal to 1e-5 in
    float32, in separate cache folders whose manifests name the backend."""
    import json

    from ntkrepro.hron2020 import cifar10 as h4

    data = {"x_train": images(5, 4, 60), "x_val": images(3, 4, 61)}
    base = {"arch": ARCH, "image_size": 4, "block_size": 3, "dtype": "float32", "cache_dir": str(tmp_path)}
    for fam in ("gap", "residual"):
        out = {b: h4._kernel({**base, "kernel_backend": b}, data, fam, 1, w)
               for b in ("nt", "fast") for w in ("val",)}
        for g in ("nngp", "ntk"):
            assert rel(out["fast"][g], out["nt"][g]) <= 1e-5, (fam, g)
    manifests = [json.loads(p.read_text()) for p in tmp_path.glob("*/manifest.json")]
    assert len(manifests) == 4
    assert sorted(m["backend"] for m in manifests) == ["neural-tangents"] * 2 + ["ntkrepro.kernels.fast"] * 2
    with pytest.raises(ValueError):
        h4.jitted_kernel_fn("gap", 1, ARCH, backend="jax")


def test_cache_key_covers_the_backend_and_the_fast_source():
    from ntkrepro.kernels import blocks
    from ntkrepro.provenance import package_files

    nt_code, fast_code = blocks.code_fingerprint("neural-tangents"), blocks.code_fingerprint("ntkrepro.kernels.fast")
    x = images(2, 2, 0)
    kw = dict(desc="d", get=("nngp",), dtype="float32", block_size=2)
    assert blocks.cache_key(x, None, code=nt_code, **kw) != blocks.cache_key(x, None, code=fast_code, **kw)
    hashed = package_files(fast_code["modules"])
    assert {"ntkrepro.kernels.fast", "ntkrepro.kernels._src.engine", "ntkrepro.kernels._src.layers"} <= set(hashed)
    other = {**fast_code, "source_sha256": "0" * 64}  # an edit of the fast module's source
    assert blocks.cache_key(x, None, code=other, **kw) != blocks.cache_key(x, None, code=fast_code, **kw)


@pytest.mark.parametrize("family,depth", [("gap_fcn", 1), ("struct", 1)])
def test_h6_model_kernel_fn_of_both_backends_agree(family, depth):
    from ntkrepro.hron2020 import imdb as h6

    params = {"filter_size": K9, "W_pos_emb_std": float(CFG["default"]["H6"]["W_pos_emb_std"])}
    x1, x2 = reviews([20, 9, 14], 24, 70), reviews([17, 24], 24, 71)
    ref = h6.model_kernel_fn(family, depth, {**params, "kernel_backend": "nt"})(x1, x2, ("nngp", "ntk"),
                                                                               mask_constant=C)
    got = h6.model_kernel_fn(family, depth, {**params, "kernel_backend": "fast"})(x1, x2, ("nngp", "ntk"),
                                                                                mask_constant=C)
    for g in ("nngp", "ntk"):
        assert rel(getattr(got, g), getattr(ref, g)) <= 1e-5, g


def test_untrimmed_fast_backend_computes_the_whole_array_and_agrees():
    """``trim=False`` (H6's padding check): no tail trimming, same kernel."""
    model = h6_model("struct", 1)
    long = reviews([20, 11, 6], 64, 80)
    trimmed, whole = fast.kernel_fn(model, "fast"), fast.kernel_fn(model, "fast", trim=False)
    assert trimmed._trim(long, None, C)[0].shape[1] < 64
    a, b = trimmed(long, None, ("nngp", "ntk"), mask_constant=C), whole(long, None, ("nngp", "ntk"), mask_constant=C)
    for g in ("nngp", "ntk"):
        assert rel(getattr(b, g), getattr(a, g)) <= 1e-6
    assert whole._cache and all(key[0] == (64, 8) for key in whole._cache)


# --------------------------------------------------------------------------------------------
# blocks of two lengths (issue 36 item 2): X1 at its own trimmed length, X2 at its own


def _two_lengths(dim: int = 8):
    """Short reviews (<= 40 tokens: trimmed to 64 positions) against long ones (<= 110: 128), in a
    140-position array, and the same data cut by hand to the common length 128 (the computation before
    per-side trimming: both sides at the longer block's length)."""
    x1 = reviews([40, 35, 20], 140, 90, dim)
    x2 = reviews([100, 110], 140, 91, dim)
    return x1, x2


@pytest.mark.parametrize("family,depth", [("gap", 0), ("gap_fcn", 1), ("cnn_gap", 1), ("cnn_gap", 2), ("struct", 1),
                                          ("struct", 2)])
def test_blocks_of_two_lengths_equal_the_padded_computation(family, depth):
    """Every H6 model (config depths 1 and 2): a block whose sides have different real lengths is computed
    with X1 at its own trimmed length and X2 at its own (pair arrays S1 x S2); equal to the whole padded
    array (``trim=False``) and to both sides at the common length, to 1e-6 in float32 and 1e-12 in
    float64; K(X2, X1) is its transpose."""
    model = h6_model(family, depth)
    x1, x2 = _two_lengths()
    kf, whole = fast.kernel_fn(model, "fast"), fast.kernel_fn(model, "fast", trim=False)
    a, b = kf._trim(x1, x2, C)
    assert (a.shape[1], b.shape[1]) == (64, 128)  # each side at its own length
    common = kf._trim(x2, x2, C)[0].shape[1]
    get = ("nngp", "ntk")
    for dtype, tol in ((np.float32, 1e-6), (np.float64, 1e-12)):
        with enable_x64(dtype == np.float64):
            y1, y2 = x1.astype(dtype), x2.astype(dtype)
            got = kf(y1, y2, get, mask_constant=C)
            swapped = kf(y2, y1, get, mask_constant=C)
            ref = whole(y1, y2, get, mask_constant=C)
            cut = whole(y1[:, :common], y2[:, :common], get, mask_constant=C)
            for g in get:
                assert np.asarray(getattr(got, g)).dtype == dtype
                assert rel(getattr(got, g), getattr(ref, g)) <= tol, (g, dtype, rel(getattr(got, g), getattr(ref, g)))
                assert rel(getattr(got, g), getattr(cut, g)) <= tol, (g, dtype)
                assert rel(np.asarray(getattr(swapped, g)).T, getattr(ref, g)) <= tol, (g, dtype)
    assert {k[0][0] for k in kf._cache} >= {64, 128}  # a per-input pass at each length


def test_blocks_of_two_lengths_equal_neural_tangents():
    """The H6 Struct model on a block of two lengths equals neural-tangents on the padded array."""
    x1, x2 = reviews([20, 14], 70, 92), reviews([60, 50, 33], 70, 93)
    model = h6_model("struct", 1)
    assert [y.shape[1] for y in fast.kernel_fn(model, "fast")._trim(x1, x2, C)] == [32, 64]
    assert_equal_to_nt(model, x1, x2, mask_constant=C)


def test_every_trimmable_layer_takes_two_lengths():
    """Layers beyond H6's: SAME and VALID convolutions, LayerNorm, Dense, attention with each mechanism and
    the positional embedding: X1 and X2 at two lengths equal the padded array and neural-tangents."""
    def decay(d):
        return 1.0 / (1.0 + d)

    x1, x2 = reviews([12, 7, 19], 72, 94), reviews([50, 41], 72, 95)
    for mech in ("SOFTMAX", "IDENTITY", "RELU"):
        model = fast.serial(
            fast.Conv(4, (3,), padding="SAME", W_std=1.3, b_std=0.1), fast.Relu(), fast.Dense(4, W_std=1.2, b_std=0.2),
            fast.LayerNorm(eps=1e-6),
            fast.GlobalSelfAttention(4, 4, 4, 1, attention_mechanism=mech, pos_emb_type="SUM", W_pos_emb_std=0.7,
                                     pos_emb_decay_fn=decay, W_query_std=1.5, b_std=0.1),
            fast.Relu(), fast.Conv(4, (5,), padding="VALID", W_std=1.1), fast.Relu(), fast.GlobalAvgPool(),
            fast.Dense(1))
        kf, whole = fast.kernel_fn(model, "fast"), fast.kernel_fn(model, "fast", trim=False)
        assert [y.shape[1] for y in kf._trim(x1, x2, C)] == [32, 64]
        # the first Conv (3 taps x 8 channels) runs as one GEMM of patches, each side at its own length
        assert takes_inputs(model, kf.plan((72, 8)), 8)
        for dtype, tol in ((np.float32, 1e-6), (np.float64, 1e-12)):
            with enable_x64(dtype == np.float64):
                got = kf(x1.astype(dtype), x2.astype(dtype), ("nngp", "ntk"), mask_constant=C)
                ref = whole(x1.astype(dtype), x2.astype(dtype), ("nngp", "ntk"), mask_constant=C)
                for g in ("nngp", "ntk"):
                    assert rel(getattr(got, g), getattr(ref, g)) <= tol, (mech, g, dtype)
        assert_equal_to_nt(model, x1, x2, mask_constant=C)


def test_two_length_blocks_budget_their_pairs_and_keep_monte_carlo_attention_at_one_length():
    """The chunk height counts S1 x S2 entries per pair; the Monte Carlo attention (draws of one length for
    both inputs) keeps both sides at the longer length."""
    from ntkrepro.kernels._src.engine import pair_bytes

    kf = fast.kernel_fn(h6_model("struct", 1), "fast")
    p64, p128 = kf.plan((64, 8)), kf.plan((128, 8))
    assert pair_bytes(p64, 4, True, p128) == pair_bytes(p128, 4, True) // 2
    assert kf.rows_for(64, 16, (64, 8), 4, True, (128, 8)) >= kf.rows_for(64, 16, (128, 8), 4, True)
    model = h6_model("struct", 1)  # VALID conv of 9 taps: 24 and 56 attention positions
    assert fast.flop_count(model, (32, 8), in_shape2=(64, 8))["attention"] == 2 * 2 * 24 * 56 * (24 + 56)
    assert fast.flop_count(model, (64, 8), in_shape2=(64, 8)) == fast.flop_count(model, (64, 8))
    mc = fast.serial(fast.Dense(4), fast.GlobalSelfAttention(4, 4, 4, 1, linear_scaling=False, mc_samples=4),
                     fast.GlobalAvgPool())
    x1, x2 = _two_lengths()
    assert [y.shape[1] for y in fast.kernel_fn(mc, "fast")._trim(x1, x2, C)] == [128, 128]
