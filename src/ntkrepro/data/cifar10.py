r"""CIFAR-10 (official python archive ``cifar-10-python.tar.gz``), read without extracting to disk.

The archive holds ``cifar-10-batches-py/{data_batch_1..5, test_batch, batches.meta}``: pickled
dicts with bytes keys (``b'data'``: uint8 ``N x 3072`` as R, G, B planes of 32x32; ``b'labels'``).
The archive's checksum is verified (:mod:`ntkrepro.data.archive`) before any pickle is opened,
members are checked by :func:`ntkrepro.data.archive.safe_members` (regular files, safe names, no
duplicates -- a symlinked ``data_batch_2 -> data_batch_1`` is refused, not read twice), and
pickles are read with the restricted unpickler. The official archive's sha256 is pinned
(:data:`OFFICIAL_SHA256`, with the md5 the CIFAR page publishes): see the constant's comment for
where it comes from.

Preprocessing as Hron et al. (2020, App. A): pixels scaled to [0, 1], optionally downsampled by
average pooling (a reduced-size substitute at smoke/default scale), then standardised per data
point and per pixel over the channels,

.. math:: \tilde x_{n,p,c} = \frac{x_{n,p,c} - \bar x_{n,p}}{s_{n,p} + 10^{-15}}, \qquad
          \bar x_{n,p} = \tfrac1C\textstyle\sum_c x_{n,p,c},\;
          s_{n,p}^2 = \tfrac1C\textstyle\sum_c (x_{n,p,c}-\bar x_{n,p})^2,

which equals a LayerNorm (over channels) as the first layer.
"""

from __future__ import annotations

import tarfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.data.archive import (ArchiveError, ArchiveSpec, RefusedPickle, check_keys, config_bool, corrupt,
                                   duplicate_members, duplicate_rows,
                                   resolve_archive, restricted_loads, safe_members)
from ntkrepro.io import PathLike

OFFICIAL_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
OFFICIAL_MD5 = "c58f30108f718f92721af3b95e74349a"  # published on https://www.cs.toronto.edu/~kriz/cifar.html
#: sha256 of the official cifar-10-python.tar.gz (170,498,071 bytes). The CIFAR page publishes only
#: the md5 above; this sha256 is the one TensorFlow/Keras pins for the same URL
#: (tensorflow/python/keras/datasets/cifar10.py, ``get_file(..., file_hash=...)``). Both are checked.
OFFICIAL_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
#: Keys of a ``data: cifar10:`` config section.
CONFIG_KEYS = ("archive", "sha256", "md5", "url", "resources_dir", "download", "replicate")
OFFICIAL_FILENAME = "cifar-10-python.tar.gz"
TRAIN_MEMBERS = tuple(f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6))
TEST_MEMBER = "cifar-10-batches-py/test_batch"
META_MEMBER = "cifar-10-batches-py/batches.meta"
N_CLASSES = 10


@dataclass
class Cifar10:
    """Images as uint8 ``(N, 32, 32, 3)`` (NHWC) and int labels in ``[0, 10)``."""

    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    label_names: list[str]
    archive: Path


def archive_spec(cfg: Mapping[str, Any]) -> ArchiveSpec:
    """The :class:`ArchiveSpec` described by a ``data: cifar10:`` config section.

    Keys: ``archive`` (file name), ``sha256`` and/or ``md5`` (expected checksums; for the official
    file name the pinned :data:`OFFICIAL_SHA256` / :data:`OFFICIAL_MD5` fill in whichever is not
    given), ``url`` (optional), ``resources_dir``, ``download`` (a real boolean). Unknown keys
    are refused.
    """
    check_keys(cfg, CONFIG_KEYS, "data.cifar10")
    if int(cfg.get("replicate") or 0) < 0:
        raise ValueError("data.cifar10.replicate must be >= 0")
    fname = Path(cfg.get("archive") or OFFICIAL_FILENAME).name
    if not fname or fname in (".", ".."):
        raise ValueError(f"data.cifar10.archive: {cfg.get('archive')!r} names no file; give the archive's file "
                         f"name under data.root (e.g. {OFFICIAL_FILENAME})")
    sha, md5 = cfg.get("sha256"), cfg.get("md5")
    if fname == OFFICIAL_FILENAME:
        sha = sha or OFFICIAL_SHA256
        md5 = md5 or (OFFICIAL_MD5 if sha == OFFICIAL_SHA256 else None)
    url = cfg.get("url") or (OFFICIAL_URL if fname == OFFICIAL_FILENAME else None)
    return ArchiveSpec(name="CIFAR-10 (python version)", filename=fname, url=url, sha256=sha, md5=md5)


def resolve_cifar10(cfg: Mapping[str, Any], data_root: PathLike | None = None,
                    resources_dir: PathLike = "resources") -> Path:
    """Verified path of the archive: ``<data_root>/<archive>`` if that exists, else
    ``<resources_dir>/<archive>`` (``cfg['resources_dir']``, default ``resources``), else a download
    into it when ``cfg['download']`` is true."""
    spec = archive_spec(cfg)
    download = config_bool(cfg, "download", "data.cifar10")
    local, searched = None, []
    if data_root is not None:
        cand = Path(data_root) / (cfg.get("archive") or spec.filename)
        if cand.exists():
            local = cand
        else:
            searched.append(cand)
    return resolve_archive(spec, local_path=local, resources_dir=cfg.get("resources_dir") or resources_dir,
                           download=download, searched=searched)


def _read_batch(tar: tarfile.TarFile, members: Mapping[str, tarfile.TarInfo], member: str,
                archive: Path) -> tuple[np.ndarray, np.ndarray]:
    if member not in members:
        raise ArchiveError(f"{archive}: member {member} missing; not an official CIFAR-10 python archive")
    fh = tar.extractfile(members[member])
    assert fh is not None  # safe_members returns regular files only
    d = _loads(fh.read(), archive, member)
    if not isinstance(d, dict) or b"data" not in d or b"labels" not in d:
        raise ArchiveError(f"{archive}:{member}: expected a dict with b'data' and b'labels'")
    data, labels = d[b"data"], np.asarray(d[b"labels"], dtype=np.int64)
    if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 2 and data.shape[1] == 3072):
        raise ArchiveError(f"{archive}:{member}: b'data' must be uint8 N x 3072, got "
                           f"{getattr(data, 'dtype', type(data))} {getattr(data, 'shape', '')}")
    if labels.shape != (data.shape[0],) or labels.min(initial=0) < 0 or labels.max(initial=0) >= N_CLASSES:
        raise ArchiveError(f"{archive}:{member}: labels must be {data.shape[0]} ints in [0, 10)")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)  # R,G,B planes -> NHWC
    return np.ascontiguousarray(images), labels


def _loads(data: bytes, archive: Path, member: str) -> Any:
    """restricted_loads, a refusal naming the archive and the member."""
    try:
        return restricted_loads(data)
    except RefusedPickle as err:
        raise RefusedPickle(f"{archive}:{member}: {err}; refusing this archive (not plain data, so not the "
                            "official CIFAR-10): replace it with the official file") from None


#: Largest fraction of byte-identical duplicate images (train + test) accepted; above it the archive
#: is refused (a duplicated batch, or data that would leak between train and test).
MAX_DUPLICATE_FRACTION = 0.01


def load_cifar10(archive: PathLike) -> Cifar10:
    """Read train/test images and labels from a verified archive path (see :func:`resolve_cifar10`).

    Raises :class:`ArchiveError` for an unsafe archive (:func:`ntkrepro.data.archive.safe_members`),
    a wrong layout, or a damaged one ("archive corrupt although its checksum matched");
    :class:`ntkrepro.data.archive.RefusedPickle` for a pickle asking for anything but plain data.
    """
    archive = Path(archive)
    try:
        tar = tarfile.open(archive, "r:gz")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise ArchiveError(f"{archive}: cannot open as .tar.gz ({err})") from err
    try:
        with tar:
            members = safe_members(tar, archive)
            duplicate_members(tar, members, (*TRAIN_MEMBERS, TEST_MEMBER), archive)
            parts = [_read_batch(tar, members, m, archive) for m in TRAIN_MEMBERS]
            test_x, test_y = _read_batch(tar, members, TEST_MEMBER, archive)
            names: list[str] = []
            if META_MEMBER in members:
                fh = tar.extractfile(members[META_MEMBER])
                assert fh is not None
                meta = _loads(fh.read(), archive, META_MEMBER)
                if isinstance(meta, dict):
                    raw = meta.get(b"label_names", [])
                    if not (isinstance(raw, list) and all(isinstance(n, (bytes, str)) for n in raw)):
                        raise ArchiveError(f"{archive}:{META_MEMBER}: label_names must be a list of names; "
                                           "this is not the official archive: replace it")
                    names = [n.decode() if isinstance(n, bytes) else n for n in raw]
    except (ArchiveError, RefusedPickle):
        raise
    except Exception as err:  # noqa: BLE001 -- EOFError, zlib.error, a truncated pickle, bad UTF-8 ...
        raise corrupt(archive, err) from err
    train_x = np.concatenate([p[0] for p in parts])
    n_dup = duplicate_rows(np.concatenate([train_x, test_x]))
    if n_dup > MAX_DUPLICATE_FRACTION * (len(train_x) + len(test_x)):
        raise ArchiveError(f"{archive}: {n_dup} of {len(train_x) + len(test_x)} images are byte-identical copies "
                           "of another image (train and test together); this is not the official archive: "
                           "replace it")
    if n_dup:
        import logging

        logging.getLogger("ntkrepro.data").warning("%s: %d byte-identical duplicate images (train + test)",
                                                   archive, n_dup)
    return Cifar10(train_x, np.concatenate([p[1] for p in parts]), test_x, test_y, names, archive)


def downsample(x: np.ndarray, size: int) -> np.ndarray:
    """Average-pool ``(N, H, W, C)`` images to ``size x size`` (``H`` must be a multiple of ``size``)."""
    n, h, w, c = x.shape
    if size < 1 or h % size or w % size:
        raise ValueError(f"cannot downsample {h}x{w} to {size}x{size}: size must divide the image size")
    f = h // size
    return x.reshape(n, size, f, size, w // size, c).mean(axis=(2, 4))


def standardize(x: np.ndarray, eps: float = 1e-15) -> np.ndarray:
    """Per data point and per pixel standardisation over channels (module docstring)."""
    mean = x.mean(axis=-1, keepdims=True)
    std = x.std(axis=-1, keepdims=True)
    return (x - mean) / (std + eps)


def preprocess(images: np.ndarray, size: int = 32, dtype: Any = np.float32) -> np.ndarray:
    """uint8 NHWC images -> [0, 1] -> downsample to ``size`` -> standardise; returned in ``dtype``."""
    x = images.astype(np.float64) / 255.0
    if size != x.shape[1]:
        x = downsample(x, size)
    return standardize(x).astype(dtype)


def balanced_subset(labels: np.ndarray, n: int, seed: int, exclude: np.ndarray | None = None) -> np.ndarray:
    """``n`` indices with (as near as possible) equal counts per class, drawn with ``seed``, sorted.

    ``exclude`` removes indices already used (e.g. the training subset when drawing validation).
    """
    labels = np.asarray(labels)
    classes = np.unique(labels)
    if n > labels.size - (0 if exclude is None else len(exclude)):
        raise ValueError(f"asked for {n} examples, only {labels.size} available")
    rng = np.random.default_rng(seed)
    avail = np.ones(labels.size, bool)
    if exclude is not None:
        avail[np.asarray(exclude, int)] = False
    per = [rng.permutation(np.flatnonzero((labels == c) & avail)) for c in classes]
    counts = np.full(len(classes), n // len(classes))
    counts[: n % len(classes)] += 1
    if any(cnt > len(p) for cnt, p in zip(counts, per)):
        raise ValueError(f"not enough examples per class for a balanced subset of {n}")
    return np.sort(np.concatenate([p[:cnt] for p, cnt in zip(per, counts)]))


def draw_splits(train_y: np.ndarray, test_y: np.ndarray | None, *, seed: int, n_train: int, n_val: int = 0,
                n_test: int | None = None, replicate: int = 0) -> dict[str, np.ndarray]:
    r"""Class-balanced train / validation (from the training set) and test (from the test set)
    indices of replicate ``replicate`` (:mod:`ntkrepro.replicates`), each sorted.

    Replicate :math:`q` draws with seed :math:`s_q` = ``base_seed(seed, replicate) + S q``
    (train: :math:`s_q`, validation: :math:`s_q + 1` excluding that train draw, test:
    :math:`s_q + 2`) from the examples that replicates :math:`0..q-1` did not use; replicate 0's
    draw is exactly the one without replicates (``n_test`` equal to the whole test set takes all of
    it). ``seed`` is replicate ``replicate``'s own (shifted) seed, so every replicate recomputes
    the same earlier draws. Raises ``ValueError`` naming the replicate when the archive is too
    small for ``replicate + 1`` disjoint draws of these sizes.
    """
    from ntkrepro.replicates import base_seed, shift_seed

    train_y = np.asarray(train_y)
    used_train = np.array([], int)
    used_test = np.array([], int)
    s0 = base_seed(seed, replicate)
    out: dict[str, np.ndarray] = {}
    for q in range(int(replicate) + 1):
        s = shift_seed(s0, q)
        try:
            i_train = balanced_subset(train_y, n_train, s, exclude=used_train if q else None)
            excl = np.concatenate([used_train, i_train])
            i_val = balanced_subset(train_y, n_val, s + 1, exclude=excl) if n_val else np.array([], int)
            i_test = None
            if n_test is not None:
                assert test_y is not None
                if q == 0 and n_test >= np.asarray(test_y).size:
                    i_test = np.arange(np.asarray(test_y).size)
                else:
                    i_test = balanced_subset(test_y, n_test, s + 2, exclude=used_test if q else None)
        except ValueError as err:
            raise ValueError(f"CIFAR-10: replicate {q} needs {n_train} train + {n_val} validation"
                             + (f" + {n_test} test" if n_test is not None else "")
                             + f" images disjoint from replicates 0..{q - 1}; the archive has "
                             f"{train_y.size} train" + (f" / {np.asarray(test_y).size} test" if test_y is not None else "")
                             + f" images ({err}). Lower the sizes or the number of replicates "
                             "(config replicates / replicate_claims).") from None
        out = {"train": i_train, "val": i_val}
        if i_test is not None:
            out["test"] = i_test
            used_test = np.concatenate([used_test, i_test])
        used_train = np.concatenate([used_train, i_train, i_val])
    return out
