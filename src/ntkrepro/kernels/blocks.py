r"""Resumable, block-wise computation of NNGP/NTK kernel matrices.

The :math:`N_1\times N_2` kernel :math:`K_{ij} = k(x^{(1)}_i, x^{(2)}_j)` is split into blocks
:math:`K_{IJ}` of ``block_size`` rows and columns (the last block of each axis may be smaller).
Each finished block is written atomically (:func:`ntkrepro.io.write_npz`) into

    ``<cache_dir>/<key>/block_<I>_<J>.npz``  plus  ``<cache_dir>/<key>/manifest.json``

where ``key`` is the SHA-256 of the inputs' bytes, shapes and dtypes, the kernel description
``desc``, ``get``, ``dtype``, ``block_size``, ``kernel_kwargs`` and the *code fingerprint* of
what computes the kernel (:func:`ntkrepro.provenance.kernel_code_fingerprint`: the kernel
backend's name, the ntkrepro / jax / jaxlib / neural-tangents versions and a SHA-256 of the
source of the modules that build the kernel function -- by default ``ntkrepro.nt``,
``ntkrepro.kernels`` and ``ntkrepro.hron2020``). Editing that code, upgrading a package or
switching backend therefore starts a fresh cache folder: a warm cache never serves kernels
computed by other code. A rerun with the same arguments
(after ``kill -9``, a crash or an exception) loads the finished blocks and computes only the
missing ones; every block is computed by the same call on the same slices, so the assembled
kernel is bitwise equal to an uninterrupted run.

``desc`` must identify the architecture and its hyper-parameters (``kernel_fn`` itself cannot be
hashed): two different kernels with the same ``desc``, inputs and code would share a cache.

When ``x2 is None`` (the symmetric case :math:`K(X, X)`), only blocks :math:`I \le J` are computed
and :math:`K_{JI} = K_{IJ}^\top` (for 2-D kernels; kernels with extra trailing axes compute every
block).

Precision: ``dtype="float32"`` (the paper's) or ``"float64"`` (inputs cast, computed inside
:func:`ntkrepro.kernels.numerics.enable_x64`, ``jax.enable_x64`` on current JAX).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.io import PathLike, canonical_hash, read_json, read_npz, write_json, write_npz
from ntkrepro.kernels.numerics import enable_x64
from ntkrepro.provenance import DEFAULT_KERNEL_MODULES, kernel_code_fingerprint

log = logging.getLogger("ntkrepro.kernels")

# 2: the key includes the code fingerprint
MANIFEST_VERSION = 2
#: The kernel backend assumed when a caller names none.
DEFAULT_BACKEND = "neural-tangents"
CodeFingerprint = str | Mapping[str, Any]
_DTYPES = {"float32": np.float32, "float64": np.float64}


def _array_digest(x: np.ndarray) -> str:
    import hashlib

    h = hashlib.sha256()
    h.update(f"{x.shape}|{x.dtype.str}|".encode())
    h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()


def code_fingerprint(backend: str = DEFAULT_BACKEND, modules: Iterable[str] = DEFAULT_KERNEL_MODULES,
                     ) -> dict[str, Any]:
    """The code fingerprint keyed into the cache (:func:`ntkrepro.provenance.kernel_code_fingerprint`)."""
    return kernel_code_fingerprint(backend, modules)


def cache_key(x1: np.ndarray, x2: np.ndarray | None, *, desc: str, get: Sequence[str], dtype: str,
              block_size: int, kernel_kwargs: dict[str, Any] | None = None,
              code: CodeFingerprint | None = None) -> str:
    """SHA-256 naming the cache folder of one kernel computation (see module docstring).

    ``code`` is the code fingerprint (:func:`code_fingerprint`; ``None`` computes the default
    one, neural-tangents backend and the default modules).
    """
    if code is None:
        code = code_fingerprint()
    return canonical_hash({
        "code": code,
        "version": MANIFEST_VERSION,
        "x1": _array_digest(x1),
        "x2": None if x2 is None else _array_digest(x2),
        "desc": desc,
        "get": list(get),
        "dtype": dtype,
        "block_size": int(block_size),
        "kernel_kwargs": {k: repr(v) for k, v in sorted((kernel_kwargs or {}).items())},
    })


def block_grid(n1: int, n2: int, block_size: int, symmetric: bool) -> list[tuple[int, int]]:
    """Block indices ``(I, J)`` in computation order (row-major; ``I <= J`` if ``symmetric``)."""
    nb1, nb2 = -(-n1 // block_size), -(-n2 // block_size)
    return [(i, j) for i in range(nb1) for j in range(nb2) if not (symmetric and j < i)]


def _as_dict(out: Any, get: Sequence[str]) -> dict[str, np.ndarray]:
    """Normalise a kernel_fn's return value (namedtuple / Kernel / dict / array) to a dict."""
    if isinstance(out, dict):
        res = {g: out[g] for g in get}
    elif len(get) == 1 and not hasattr(out, "_fields") and not hasattr(out, get[0]):
        res = {get[0]: out}
    else:
        res = {g: getattr(out, g) for g in get}
    return {g: np.asarray(v) for g, v in res.items()}


def _block_path(folder: Path, i: int, j: int) -> Path:
    return folder / f"block_{i:05d}_{j:05d}.npz"


def _load_block(path: Path, get: Sequence[str], shape: tuple[int, int]) -> dict[str, np.ndarray] | None:
    """A finished block, or None if absent / unreadable / of the wrong shape (then recomputed)."""
    if not path.exists():
        return None
    try:
        arrays, _ = read_npz(path)
        if all(g in arrays and arrays[g].shape[:2] == shape for g in get):
            return {g: arrays[g] for g in get}
    except Exception as err:  # noqa: BLE001 -- a damaged block is recomputed, with a warning
        log.warning("kernel block %s unreadable (%s); recomputing it", path, err)
        return None
    log.warning("kernel block %s has unexpected contents; recomputing it", path)
    return None


def compute_kernel_blocks(kernel_fn: Callable[..., Any], x1: Any, x2: Any | None = None, *, block_size: int,
                          cache_dir: PathLike, get: Sequence[str] | str = ("nngp", "ntk"),
                          dtype: str = "float32", desc: str = "kernel", progress: bool = True,
                          only_blocks: Iterable[tuple[int, int]] | None = None,
                          backend: str = DEFAULT_BACKEND, code: CodeFingerprint | None = None,
                          **kernel_kwargs: Any) -> dict[str, np.ndarray]:
    r"""The kernel(s) ``get`` between ``x1`` and ``x2`` (``x2=None``: ``x1`` with itself), by blocks.

    ``kernel_fn(x1_block, x2_block, get, **kernel_kwargs)`` is a neural-tangents ``kernel_fn``
    (possibly wrapped by ``nt.batch``) or any function returning an object with the requested
    kernels as attributes/keys. For masked inputs pass ``mask_constant=...``; it is forwarded and
    hashed. Returns ``{name: array}`` of shape ``(N1, N2, ...)`` in ``dtype``.

    ``only_blocks`` (for splitting one kernel into cluster jobs) computes and caches just those
    block indices and returns an empty dict; a final call without it assembles the kernel.

    ``backend`` names the kernel implementation (``"neural-tangents"``; a fast backend passes its
    own name) and ``code`` the fingerprint of the code computing the kernel; without ``code``,
    :func:`code_fingerprint` of ``backend`` and the default modules is used. Both are part of
    the cache key, so a code or version change never reuses blocks of other code.
    """
    if isinstance(get, str):
        get = (get,)
    get = tuple(get)
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
    if not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    np_dtype = _DTYPES[dtype]
    symmetric = x2 is None or x2 is x1
    x1 = np.asarray(x1, np_dtype)
    x2a = x1 if symmetric else np.asarray(x2, np_dtype)
    if x1.ndim < 1 or x2a.ndim < 1 or x1.shape[1:] != x2a.shape[1:]:
        raise ValueError(f"x1 and x2 must share trailing shape, got {x1.shape} and {x2a.shape}")
    n1, n2 = x1.shape[0], x2a.shape[0]
    if n1 == 0 or n2 == 0:
        raise ValueError("empty inputs")

    if code is None:
        code = code_fingerprint(backend)
    elif isinstance(code, Mapping):
        if code.get("backend", backend) != backend:
            raise ValueError(f"code fingerprint is for backend {code.get('backend')!r}, not {backend!r}")
        code = {**code, "backend": backend}
    else:  # an opaque fingerprint string from the caller
        code = {"backend": backend, "fingerprint": str(code)}
    key = cache_key(x1, None if symmetric else x2a, desc=desc, get=get, dtype=dtype, block_size=block_size,
                    kernel_kwargs=kernel_kwargs, code=code)
    folder = Path(cache_dir) / key
    folder.mkdir(parents=True, exist_ok=True)
    grid = block_grid(n1, n2, block_size, symmetric)
    manifest = {"version": MANIFEST_VERSION, "key": key, "desc": desc, "get": list(get), "dtype": dtype,
                "block_size": int(block_size), "shape": [n1, n2], "symmetric": symmetric,
                "n_blocks": len(grid), "kernel_kwargs": {k: repr(v) for k, v in kernel_kwargs.items()},
                "backend": backend, "code": code}
    mpath = folder / "manifest.json"
    if mpath.exists():
        old = read_json(mpath)
        if {k: old.get(k) for k in manifest} != manifest:
            raise RuntimeError(f"kernel cache {folder} has a different manifest; remove the folder")
    else:
        write_json(mpath, manifest)

    def rows(i: int, n: int) -> slice:
        return slice(i * block_size, min((i + 1) * block_size, n))

    wanted = grid if only_blocks is None else [tuple(b) for b in only_blocks]
    bad = [b for b in wanted if b not in set(grid)]
    if bad:
        raise ValueError(f"block indices {bad[:5]} are not in this kernel's grid")

    def compute(i: int, j: int) -> dict[str, np.ndarray]:
        a, b = x1[rows(i, n1)], x2a[rows(j, n2)]
        if dtype == "float64":
            with enable_x64():
                out = _as_dict(kernel_fn(a, b, get, **kernel_kwargs), get)
        else:
            out = _as_dict(kernel_fn(a, b, get, **kernel_kwargs), get)
        for g, v in out.items():
            if v.shape[:2] != (a.shape[0], b.shape[0]):
                raise ValueError(f"kernel_fn returned {g} of shape {v.shape} for blocks {a.shape[0]}x{b.shape[0]}")
        return {g: v.astype(np_dtype, copy=False) for g, v in out.items()}

    todo = [(i, j) for (i, j) in wanted
            if not _block_path(folder, i, j).exists()]
    done = len(wanted) - len(todo)
    if done:
        log.info("%s: %d/%d blocks cached in %s, computing %d", desc, done, len(wanted), folder, len(todo))
    it: Iterable[tuple[int, int]] = todo
    bar = None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # a bare environment (the GPU script's): no progress bar
        tqdm = None
    if progress and todo and tqdm is not None:
        bar = tqdm(todo, desc=desc, unit="block", total=len(todo), file=sys.stderr, mininterval=2.0,
                   smoothing=0.1, ncols=100)
        it = bar
    t0 = time.perf_counter()
    for i, j in it:
        blk = compute(i, j)
        write_npz(_block_path(folder, i, j), blk)
    if bar is not None:
        bar.close()
    if todo:
        log.info("%s: %d blocks in %.1f s", desc, len(todo), time.perf_counter() - t0)
    if only_blocks is not None:
        return {}

    # assemble
    result: dict[str, np.ndarray] | None = None
    for i, j in grid:
        ri, rj = rows(i, n1), rows(j, n2)
        shape = (ri.stop - ri.start, rj.stop - rj.start)
        blk = _load_block(_block_path(folder, i, j), get, shape)
        if blk is None:  # damaged after the check above: recompute now
            blk = compute(i, j)
            write_npz(_block_path(folder, i, j), blk)
        if result is None:
            result = {g: np.empty((n1, n2) + v.shape[2:], np_dtype) for g, v in blk.items()}
            if symmetric and any(v.ndim != 2 for v in blk.values()):
                raise ValueError("symmetric block assembly needs 2-D kernels; pass x2=x1.copy() instead")
        for g, v in blk.items():
            result[g][ri, rj] = v
            if symmetric and i != j:
                result[g][rj, ri] = v.T
    assert result is not None
    return result


def compute_kernel_blocks_sorted(kernel_fn: Callable[..., Any], x1: Any, len1: Any, x2: Any | None = None,
                                 len2: Any | None = None, **kwargs: Any) -> dict[str, np.ndarray]:
    r""":func:`compute_kernel_blocks` with the rows (and columns) ordered by ``len1`` (``len2``), the result
    put back in the inputs' order: **length-aware blocks** for masked sequences.

    With ``len`` the number of unmasked positions of each sequence, a block then holds sequences of
    similar length, and a backend that computes each block at its own length (the fast backend drops
    the tail masked in every sequence of the block, exactly) does the work of the real lengths, not
    of the padded array. The kernel is the same function of the same pairs, so the result equals
    :func:`compute_kernel_blocks` in the original order to rounding (``tests/test_blocks_sorted.py``);
    with neural-tangents, which computes the whole array, only the cost is unchanged. A stable sort,
    so equal lengths keep their order; the cache key is that of the sorted inputs."""
    x1 = np.asarray(x1)
    o1 = np.argsort(np.asarray(len1), kind="stable")
    if len(o1) != x1.shape[0]:
        raise ValueError(f"len1 has {len(o1)} entries for {x1.shape[0]} rows")
    if x2 is None:
        k = compute_kernel_blocks(kernel_fn, x1[o1], None, **kwargs)
        i1 = i2 = np.argsort(o1)
    else:
        x2 = np.asarray(x2)
        if len2 is None:
            raise ValueError("len2 is needed with x2")
        o2 = np.argsort(np.asarray(len2), kind="stable")
        if len(o2) != x2.shape[0]:
            raise ValueError(f"len2 has {len(o2)} entries for {x2.shape[0]} rows")
        k = compute_kernel_blocks(kernel_fn, x1[o1], x2[o2], **kwargs)
        i1, i2 = np.argsort(o1), np.argsort(o2)
    return {g: v[np.ix_(i1, i2)] for g, v in k.items()}


def describe(**params: Any) -> str:
    """A canonical ``desc`` string from architecture parameters (sorted ``k=v`` pairs)."""
    return ",".join(f"{k}={json.dumps(v, sort_keys=True, default=str)}" for k, v in sorted(params.items()))
