"""ntkrepro.kernels.blocks: block-wise kernels equal to the direct kernel; kill/resume is bitwise."""

import numpy as np
import pytest

from ntkrepro.kernels.blocks import block_grid, compute_kernel_blocks, compute_kernel_blocks_sorted
from ntkrepro.nt import stax


@pytest.fixture(scope="module")
def net():
    _, _, kernel_fn = stax.serial(stax.Dense(16), stax.Relu(), stax.Dense(1))
    return kernel_fn


@pytest.fixture(scope="module")
def xs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(11, 5)).astype(np.float32), rng.normal(size=(7, 5)).astype(np.float32)


def test_matches_direct_kernel(net, xs, tmp_path):
    x1, x2 = xs
    direct = net(x1, x2, ("nngp", "ntk"))
    got = compute_kernel_blocks(net, x1, x2, block_size=4, cache_dir=tmp_path, progress=False)
    np.testing.assert_allclose(got["nngp"], np.asarray(direct.nngp), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["ntk"], np.asarray(direct.ntk), rtol=1e-5, atol=1e-6)
    assert got["ntk"].dtype == np.float32 and got["ntk"].shape == (11, 7)


def test_symmetric_upper_blocks_only(net, xs, tmp_path):
    x1, _ = xs
    calls = []

    def counting(a, b, get, **kw):
        calls.append((a.shape[0], b.shape[0]))
        return net(a, b, get, **kw)

    got = compute_kernel_blocks(counting, x1, None, block_size=4, cache_dir=tmp_path, get="nngp", progress=False)
    assert len(calls) == len(block_grid(11, 11, 4, True)) == 6
    np.testing.assert_allclose(got["nngp"], np.asarray(net(x1, None, "nngp")), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["nngp"], got["nngp"].T)


def test_fp64(net, xs, tmp_path):
    x1, x2 = xs
    got = compute_kernel_blocks(net, x1, x2, block_size=5, cache_dir=tmp_path, get=("nngp",), dtype="float64",
                                progress=False)
    assert got["nngp"].dtype == np.float64
    from jax.experimental import enable_x64
    with enable_x64():
        ref = np.asarray(net(x1.astype(np.float64), x2.astype(np.float64), "nngp"))
    np.testing.assert_allclose(got["nngp"], ref, rtol=1e-12)


class Killed(RuntimeError):
    pass


def test_resume_after_crash_is_bitwise_equal(net, xs, tmp_path):
    x1, x2 = xs
    full = compute_kernel_blocks(net, x1, x2, block_size=3, cache_dir=tmp_path / "a", progress=False)
    n_calls = {"n": 0}

    def dying(a, b, get, **kw):
        n_calls["n"] += 1
        if n_calls["n"] == 5:
            raise Killed
        return net(a, b, get, **kw)

    with pytest.raises(Killed):
        compute_kernel_blocks(dying, x1, x2, block_size=3, cache_dir=tmp_path / "b", progress=False)
    folder = next((tmp_path / "b").iterdir())
    assert len(list(folder.glob("block_*.npz"))) == 4  # finished blocks survived; no partial files
    assert not list(folder.glob(".*"))
    calls = []

    def counting(a, b, get, **kw):
        calls.append(1)
        return net(a, b, get, **kw)

    resumed = compute_kernel_blocks(counting, x1, x2, block_size=3, cache_dir=tmp_path / "b", progress=False)
    assert len(calls) == len(block_grid(11, 7, 3, False)) - 4
    for g in ("nngp", "ntk"):
        np.testing.assert_array_equal(resumed[g], full[g])

    # deleting blocks (as after kill -9 between writes) recomputes exactly those
    blocks = sorted(folder.glob("block_*.npz"))
    for b in blocks[::3]:
        b.unlink()
    calls.clear()
    again = compute_kernel_blocks(counting, x1, x2, block_size=3, cache_dir=tmp_path / "b", progress=False)
    assert len(calls) == len(blocks[::3])
    for g in ("nngp", "ntk"):
        np.testing.assert_array_equal(again[g], full[g])


def test_cache_keyed_by_inputs_and_desc(net, xs, tmp_path):
    x1, x2 = xs
    compute_kernel_blocks(net, x1, x2, block_size=4, cache_dir=tmp_path, progress=False, desc="a")
    compute_kernel_blocks(net, x1, x2 + 1, block_size=4, cache_dir=tmp_path, progress=False, desc="a")
    compute_kernel_blocks(net, x1, x2, block_size=4, cache_dir=tmp_path, progress=False, desc="b")
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 3


def test_only_blocks_then_assemble(net, xs, tmp_path):
    x1, x2 = xs
    grid = block_grid(11, 7, 4, False)
    assert compute_kernel_blocks(net, x1, x2, block_size=4, cache_dir=tmp_path, progress=False,
                                 only_blocks=grid[:2]) == {}
    full = compute_kernel_blocks(net, x1, x2, block_size=4, cache_dir=tmp_path, progress=False)
    ref = compute_kernel_blocks(net, x1, x2, block_size=4, cache_dir=tmp_path / "ref", progress=False)
    np.testing.assert_array_equal(full["ntk"], ref["ntk"])
    with pytest.raises(ValueError, match="not in"):
        compute_kernel_blocks(net, x1, x2, block_size=4, cache_dir=tmp_path, progress=False, only_blocks=[(9, 9)])


def test_masked_inputs_pass_mask_constant(tmp_path):
    _, _, kfn = stax.serial(stax.Dense(8), stax.Relu(), stax.GlobalAvgPool(), stax.Dense(1))
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 6, 3)).astype(np.float32)
    x[:, 4:] = -1e9  # padding
    got = compute_kernel_blocks(kfn, x, None, block_size=2, cache_dir=tmp_path, get="nngp", progress=False,
                                mask_constant=-1e9)
    ref = np.asarray(kfn(x, None, "nngp", mask_constant=-1e9))
    np.testing.assert_allclose(got["nngp"], ref, rtol=1e-5, atol=1e-6)


def test_bad_input(net, tmp_path):
    with pytest.raises(ValueError, match="block_size"):
        compute_kernel_blocks(net, np.zeros((2, 3)), None, block_size=0, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="trailing"):
        compute_kernel_blocks(net, np.zeros((2, 3)), np.zeros((2, 4)), block_size=1, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="dtype"):
        compute_kernel_blocks(net, np.zeros((2, 3)), None, block_size=1, cache_dir=tmp_path, dtype="float16")


_SLOW_SCRIPT = """
import sys, time
import numpy as np
sys.path.insert(0, {src!r})
from ntkrepro.kernels.blocks import compute_kernel_blocks

def rbf(a, b, get):
    time.sleep(0.3)
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return {{"nngp": np.exp(-d2 / 2)}}

x = np.random.default_rng(0).normal(size=(12, 3)).astype(np.float32)
compute_kernel_blocks(rbf, x, None, block_size=2, cache_dir={cache!r}, get="nngp", progress=False)
"""


def _rbf(a, b, get):
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return {"nngp": np.exp(-d2 / 2)}


def test_resume_after_kill_9(tmp_path):
    """A real SIGKILL mid-computation: finished blocks survive, the rerun computes only the rest,
    and the kernel is bitwise equal to an uninterrupted run."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[1] / "src")
    cache = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_SCRIPT.format(src=src, cache=str(cache))])
    deadline = time.time() + 60
    try:
        while time.time() < deadline and len(list(cache.glob("*/block_*.npz"))) < 3:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    n_done = len(list(cache.glob("*/block_*.npz")))
    total = len(block_grid(12, 12, 2, True))
    assert 3 <= n_done < total
    x = np.random.default_rng(0).normal(size=(12, 3)).astype(np.float32)
    calls = []

    def counting(a, b, get):
        calls.append(1)
        return _rbf(a, b, get)

    resumed = compute_kernel_blocks(counting, x, None, block_size=2, cache_dir=cache, get="nngp", progress=False)
    assert len(calls) == total - n_done
    full = compute_kernel_blocks(_rbf, x, None, block_size=2, cache_dir=tmp_path / "clean", get="nngp",
                                 progress=False)
    np.testing.assert_array_equal(resumed["nngp"], full["nngp"])


# ---- issue 14, item 1: the cache is keyed on the code that computes the kernel ----------------

def _counting_rbf(calls):
    def fn(a, b, get):
        calls.append(1)
        return _rbf(a, b, get)
    return fn


def test_changed_kernel_source_recomputes_every_block(tmp_path, monkeypatch):
    """Edit a module that builds kernel functions (a copy of the package, so nothing real is
    touched): the warm cache must not serve the old kernels -- every block is recomputed."""
    import shutil
    from pathlib import Path

    from ntkrepro import provenance

    pkg = tmp_path / "src" / "ntkrepro"
    shutil.copytree(Path(provenance.__file__).resolve().parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(provenance, "PACKAGE_ROOT", pkg)
    x = np.random.default_rng(0).normal(size=(9, 3)).astype(np.float32)
    total = len(block_grid(9, 9, 3, True))
    kw = dict(block_size=3, cache_dir=tmp_path / "cache", get="nngp", progress=False, desc="rbf")
    calls: list[int] = []
    compute_kernel_blocks(_counting_rbf(calls), x, None, **kw)
    assert len(calls) == total
    calls.clear()
    compute_kernel_blocks(_counting_rbf(calls), x, None, **kw)
    assert calls == []  # unchanged code: all blocks from the cache
    # e.g. a different W_std in the function that builds the kernel
    builder = pkg / "hron2020" / "cifar10.py"
    builder.write_text(builder.read_text() + "\n# W_std changed\n")
    compute_kernel_blocks(_counting_rbf(calls), x, None, **kw)
    assert len(calls) == total
    calls.clear()
    # a module outside the kernel-building set (criterion statistics) does not invalidate the cache
    stats = pkg / "stats" / "intervals.py"
    stats.write_text(stats.read_text() + "\n# criterion edit\n")
    compute_kernel_blocks(_counting_rbf(calls), x, None, **kw)
    assert calls == []


@pytest.mark.parametrize("change", ["source", "versions", "backend", "explicit"])
def test_code_fingerprint_change_recomputes_every_block(tmp_path, monkeypatch, change):
    from ntkrepro import provenance
    from ntkrepro.kernels import blocks

    x = np.random.default_rng(1).normal(size=(7, 3)).astype(np.float32)
    y = np.random.default_rng(2).normal(size=(5, 3)).astype(np.float32)
    total = len(block_grid(7, 5, 2, False))
    kw = dict(block_size=2, cache_dir=tmp_path, get="nngp", progress=False)
    extra = {"code": "v1"} if change == "explicit" else {}
    calls: list[int] = []
    first = compute_kernel_blocks(_counting_rbf(calls), x, y, **kw, **extra)
    assert len(calls) == total
    calls.clear()
    if change == "source":
        monkeypatch.setattr(provenance, "hash_sources", lambda files: "0" * 64)
    elif change == "versions":
        monkeypatch.setattr(provenance, "package_versions", lambda: {"jax": "9.9.9"})
    elif change == "backend":
        extra = {"backend": "fast"}
    else:
        extra = {"code": "v2"}
    again = compute_kernel_blocks(_counting_rbf(calls), x, y, **kw, **extra)
    assert len(calls) == total
    np.testing.assert_array_equal(again["nngp"], first["nngp"])
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2
    manifest = next(p for p in tmp_path.iterdir() if p.is_dir()) / "manifest.json"
    assert "code" in blocks.read_json(manifest)


# --------------------------------------------------------------------------------------------
# length-aware blocks (issue 36 item 2)


def _masked(n: int, seed: int, length: int = 12, c: float = 100.0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, length, 3))
    lens = rng.integers(1, length + 1, n)
    for i, ln in enumerate(lens):
        x[i, ln:] = c
    return x, lens


def _trimming_kernel(c: float, seen: list[int]):
    """A kernel of masked sequences (mean over unmasked positions, then a dot product) that, like the fast
    backend, computes each block at its own length: it records the length it kept."""

    def kfn(a, b, get, mask_constant=None):
        keep = int(max(np.max(np.sum(np.any(a != c, -1), 1)), np.max(np.sum(np.any(b != c, -1), 1))))
        seen.append(keep)
        a, b = a[:, :keep], b[:, :keep]
        ma, mb = np.any(a != c, -1), np.any(b != c, -1)
        fa = np.einsum("nld,nl->nd", np.where(ma[..., None], a, 0.0), ma) / ma.sum(1, keepdims=True)
        fb = np.einsum("nld,nl->nd", np.where(mb[..., None], b, 0.0), mb) / mb.sum(1, keepdims=True)
        return {"nngp": fa @ fb.T}

    return kfn


def test_length_sorted_blocks_equal_the_kernel_in_input_order_and_cost_less(tmp_path):
    x1, l1 = _masked(23, 0)
    x2, l2 = _masked(10, 1)
    kw = dict(block_size=4, get=("nngp",), dtype="float64", progress=False, mask_constant=100.0)
    for a, la, b, lb in ((x1, l1, None, None), (x1, l1, x2, l2)):
        seen_s, seen_r = [], []
        got = compute_kernel_blocks_sorted(_trimming_kernel(100.0, seen_s), a, la, b, lb, cache_dir=tmp_path / "s",
                                           **kw)
        ref = compute_kernel_blocks(_trimming_kernel(100.0, seen_r), a, b, cache_dir=tmp_path / "r", **kw)
        np.testing.assert_allclose(got["nngp"], ref["nngp"], rtol=1e-12, atol=1e-12)
        # the same blocks count, fewer positions computed: the point of sorting
        assert len(seen_s) == len(seen_r) and sum(seen_s) < sum(seen_r)
    # a kernel left in the sorted order would not be equal (the comparison can fail)
    sym = compute_kernel_blocks(_trimming_kernel(100.0, []), x1, None, cache_dir=tmp_path / "r", **kw)["nngp"]
    o = np.argsort(l1, kind="stable")
    left = compute_kernel_blocks(_trimming_kernel(100.0, []), x1[o], None, cache_dir=tmp_path / "u", **kw)["nngp"]
    assert not np.allclose(left, sym)


def test_length_sorted_blocks_reject_lengths_of_the_wrong_size(tmp_path):
    x1, l1 = _masked(6, 0)
    with pytest.raises(ValueError, match="len1 has 5 entries for 6 rows"):
        compute_kernel_blocks_sorted(_trimming_kernel(100.0, []), x1, l1[:5], block_size=2, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="len2 is needed"):
        compute_kernel_blocks_sorted(_trimming_kernel(100.0, []), x1, l1, x1, None, block_size=2, cache_dir=tmp_path)


def test_length_sorted_fast_blocks_at_two_lengths_equal_the_padded_kernel_in_float64(tmp_path):
    """H6's Struct model through the fast backend: length-sorted blocks, each block pair with its two sides at
    their own trimmed lengths, equal the kernel of the whole padded arrays in review order to 1e-12."""
    from ntkrepro.hron2020.imdb import build_kernel_fn
    from ntkrepro.kernels import fast

    rng = np.random.default_rng(7)
    lens = {1: rng.integers(3, 70, 10), 2: rng.integers(3, 70, 7)}
    xs = {}
    for k, ln in lens.items():
        x = rng.standard_normal((ln.size, 74, 6))
        for i, n in enumerate(ln):
            x[i, n:] = 100.0
        xs[k] = x
    model = fast.from_stax_builder(build_kernel_fn, "struct", 1, filter_size=9, W_pos_emb_std=1.0)
    kw = dict(block_size=3, get=("nngp", "ntk"), dtype="float64", progress=False, mask_constant=100.0,
              backend="ntkrepro.kernels.fast")
    seen = []
    trimming = fast.kernel_fn(model, "fast")

    def recording(a, b, get, mask_constant=None):
        seen.append(tuple(y.shape[1] for y in trimming._trim(a, b, mask_constant)))
        return trimming(a, b, get, mask_constant=mask_constant)

    got = compute_kernel_blocks_sorted(recording, xs[1], lens[1], xs[2], lens[2], cache_dir=tmp_path / "s", **kw)
    ref = compute_kernel_blocks(fast.kernel_fn(model, "fast", trim=False), xs[1], xs[2], cache_dir=tmp_path / "r",
                                **kw)
    assert any(a != b for a, b in seen)  # block pairs at two lengths were computed
    for g in ("nngp", "ntk"):
        assert np.max(np.abs(got[g] - ref[g])) / np.max(np.abs(ref[g])) <= 1e-12, g
