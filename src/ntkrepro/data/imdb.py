r"""The Large Movie Review Dataset v1.0 (Maas et al. 2011), read straight from ``aclImdb_v1.tar.gz``.

Official layout: ``aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt`` (25,000 + 25,000 labelled
reviews; ratings 7-10 positive, 1-4 negative); the archive's other members (``unsup/``, bag-of-words
files, URL lists) are ignored. Offline, ``../shared/data/aclImdb-subset.tar.gz`` has the same
layout (5,000 train / 2,000 test reviews).

The archive is resolved and checksum-verified by :func:`ntkrepro.data.archive.resolve_archive`
(config ``data: imdb:`` -- ``archive`` local path, ``sha256`` and/or ``md5``, ``download``,
``resources_dir``, ``url``; the official archive's sha256 is pinned, :data:`OFFICIAL_SHA256`).
Members are read in memory, never extracted, under the one rule of
:func:`ntkrepro.data.archive.safe_members` (shared with CIFAR-10): an absolute or ``..`` name, a
link or special member, or a duplicate name refuses the archive; a damaged archive whose checksum
matched raises "archive corrupt although its checksum matched".

:func:`split_protocol` draws the label-balanced train / validation / test subsets of the paper's
protocol (3200/1600/1600 for selection, 25K/25K final) deterministically from a seed; targets are
:math:`\pm 0.5` (positive = +0.5).
"""

from __future__ import annotations

import logging
import re
import tarfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.data.archive import (ArchiveError, ArchiveSpec, check_keys, config_bool, corrupt, resolve_archive,
                                   safe_members)
from ntkrepro.data.text import tokenize

log = logging.getLogger(__name__)

OFFICIAL_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
OFFICIAL_FILENAME = "aclImdb_v1.tar.gz"
OFFICIAL_MD5 = "7c2ac02c03563afcf9b574c7e56c153a"
#: sha256 of the official aclImdb_v1.tar.gz (84,125,825 bytes), as pinned by TensorFlow Datasets
#: (tensorflow_datasets/datasets/imdb_reviews/checksums.tsv). The dataset page publishes no checksum.
OFFICIAL_SHA256 = "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"
#: Keys of a ``data: imdb:`` config section.
CONFIG_KEYS = ("archive", "sha256", "md5", "url", "resources_dir", "download", "replicate")
SPLITS = ("train", "test")
LABELS = {"neg": 0, "pos": 1}
_MEMBER = re.compile(r"^aclImdb/(train|test)/(pos|neg)/(\d+)_(\d+)\.txt$")


@dataclass(frozen=True)
class Review:
    """One labelled review: ``label`` 1 = positive, 0 = negative; ``rating`` 1-10 from the file name."""

    split: str
    label: int
    id: int
    rating: int
    text: str


def archive_spec(cfg: Mapping[str, Any]) -> ArchiveSpec:
    """The :class:`ArchiveSpec` of the configured archive (checksum from config; for the official
    file name the pinned :data:`OFFICIAL_SHA256` / :data:`OFFICIAL_MD5` fill in what is not given).
    Unknown keys are refused."""
    check_keys(cfg, CONFIG_KEYS, "data.imdb")
    path = cfg.get("archive")
    filename = Path(path).name if path else OFFICIAL_FILENAME
    if not filename or filename in (".", ".."):
        raise ValueError(f"data.imdb.archive: {path!r} names no file; give the archive's path (e.g. "
                         f"{OFFICIAL_FILENAME}) or null for the official file in resources_dir")
    sha, md5 = cfg.get("sha256"), cfg.get("md5")
    if filename == OFFICIAL_FILENAME:
        sha = sha or OFFICIAL_SHA256
        md5 = md5 or (OFFICIAL_MD5 if sha == OFFICIAL_SHA256 else None)
    url = cfg.get("url") or (OFFICIAL_URL if filename == OFFICIAL_FILENAME else None)
    return ArchiveSpec("IMDb (aclImdb v1.0)", filename, url=url, sha256=sha, md5=md5)


def resolve(cfg: Mapping[str, Any]) -> Path:
    """Verified local path of the configured IMDb archive (raises :class:`ArchiveError`)."""
    spec = archive_spec(cfg)
    return resolve_archive(spec, local_path=cfg.get("archive"),
                           resources_dir=cfg.get("resources_dir") or "resources",
                           download=config_bool(cfg, "download", "data.imdb"))


def read_reviews(path: str | Path, splits: Sequence[str] = SPLITS,
                 report: dict[str, Any] | None = None) -> dict[str, list[Review]]:
    """All labelled reviews of ``splits`` in the archive at ``path``, sorted by (label, id).

    Raises :class:`ArchiveError` for an unreadable archive, an unsafe or non-regular member, a
    rating inconsistent with its folder (pos >= 7, neg <= 4), duplicate ids, an empty split or a
    review without words (naming its archive members). A review that is not valid UTF-8 is decoded
    with U+FFFD replacements, counted, and warned about once per archive (one log line); with
    ``report`` (a dict) the count and members are stored there (``invalid_utf8``,
    ``invalid_utf8_members``) for the results to record.
    """
    path = Path(path)
    bad = [s for s in splits if s not in SPLITS]
    if bad:
        raise ValueError(f"unknown IMDb splits {bad}; expected a subset of {SPLITS}")
    out: dict[str, list[Review]] = {s: [] for s in splits}
    seen: set[tuple[str, int, int]] = set()
    bad_utf8: list[str] = []  # members that are not valid UTF-8 (decoded with U+FFFD replacements)
    empty: list[str] = []  # members with no tokens (no kernel exists for a fully padded review)
    try:
        tar = tarfile.open(path, mode="r:*")
    except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
        raise ArchiveError(f"{path}: not a readable IMDb tar archive ({err})") from err
    try:
        with tar:
            for name, m in safe_members(tar, path).items():
                match = _MEMBER.match(name)
                if match is None:
                    continue
                split, folder, rid, rating = match.group(1), match.group(2), int(match.group(3)), int(match.group(4))
                if split not in out:
                    continue
                label = LABELS[folder]
                if not (1 <= rating <= 10) or (label == 1 and rating < 7) or (label == 0 and rating > 4):
                    raise ArchiveError(f"{path}: member {m.name} has rating {rating} inconsistent with '{folder}'")
                key = (split, label, rid)
                if key in seen:
                    raise ArchiveError(f"{path}: duplicate review {m.name}")
                seen.add(key)
                fh = tar.extractfile(m)
                assert fh is not None
                raw = fh.read()
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = raw.decode("utf-8", errors="replace")
                    bad_utf8.append(m.name)
                if not tokenize(text):
                    empty.append(m.name)
                out[split].append(Review(split, label, rid, rating, text))
    except ArchiveError:
        raise
    except Exception as err:  # noqa: BLE001 -- EOFError, zlib.error, a truncated member ...
        raise corrupt(path, err) from err
    if empty:
        raise ArchiveError(f"{path}: {len(empty)} review(s) have no words: archive member(s) "
                           f"{', '.join(empty[:5])}{' ...' if len(empty) > 5 else ''}; a fully padded review has no "
                           "kernel. Use the official archive, or remove these members")
    if bad_utf8:
        log.warning("%s: %d review(s) not valid UTF-8 (first: %s); invalid bytes replaced by U+FFFD",
                    path, len(bad_utf8), bad_utf8[0])
    if report is not None:
        report["invalid_utf8"] = len(bad_utf8)
        report["invalid_utf8_members"] = bad_utf8[:20]
    for s, revs in out.items():
        if not revs:
            raise ArchiveError(f"{path}: no reviews under aclImdb/{s}/{{pos,neg}}/ -- not the aclImdb layout")
        revs.sort(key=lambda r: (r.label, r.id))
    return out


def balanced_draw(reviews: Sequence[Review], counts: Sequence[int], rng: np.random.Generator,
                   split: str) -> list[list[Review]]:
    """Disjoint label-balanced subsets of the given (even) sizes, each shuffled."""
    for n in counts:
        if n < 2 or n % 2:
            raise ValueError(f"subset sizes must be even and >= 2 (balanced labels), got {list(counts)}")
    by_label = {lab: [r for r in reviews if r.label == lab] for lab in (0, 1)}
    need = sum(counts) // 2
    for lab, revs in by_label.items():
        if len(revs) < need:
            raise ValueError(f"IMDb {split}: {need} reviews of label {lab} needed for subsets {list(counts)}, "
                             f"the archive has {len(revs)}")
    perm = {lab: rng.permutation(len(revs)) for lab, revs in by_label.items()}
    subsets, start = [], 0
    for n in counts:
        h = n // 2
        part = [by_label[lab][i] for lab in (0, 1) for i in perm[lab][start:start + h]]
        start += h
        order = rng.permutation(len(part))
        subsets.append([part[i] for i in order])
    return subsets


def split_protocol(reviews: Mapping[str, Sequence[Review]], *, n_train: int, n_valid: int, n_test: int,
                   seed: int) -> dict[str, list[Review]]:
    """Train and validation subsets drawn (disjoint, balanced) from ``train``, test from ``test``."""
    rng = np.random.default_rng(seed)
    train, valid = balanced_draw(reviews["train"], [n_train, n_valid], rng, "train")
    (test,) = balanced_draw(reviews["test"], [n_test], rng, "test")
    return {"train": train, "valid": valid, "test": test}


def targets(reviews: Sequence[Review]) -> np.ndarray:
    r"""Regression targets :math:`y = \pm 0.5` (positive +0.5), shape ``(N, 1)``."""
    return (np.array([r.label for r in reviews], np.float64) - 0.5)[:, None]


def used_reviews(reviews: Mapping[str, Sequence[Review]], *, n_train: int, n_valid: int, n_test: int, seed: int,
                 final: Mapping[str, int] | None = None) -> set[tuple[str, int, int]]:
    """Keys ``(split, label, id)`` of every review one run of H6's protocol draws from ``reviews``:
    the selection split (:func:`split_protocol` with ``seed``) and, with ``final``, the final-table
    split (drawn with ``seed + 1000``, as :func:`ntkrepro.hron2020.imdb._prepare` does)."""
    sub = split_protocol(reviews, n_train=n_train, n_valid=n_valid, n_test=n_test, seed=seed)
    used = [r for v in sub.values() for r in v]
    if final:
        rng = np.random.default_rng(int(seed) + 1000)
        used += balanced_draw(reviews["train"], [int(final["n_train"])], rng, "train")[0]
        used += balanced_draw(reviews["test"], [int(final["n_test"])], rng, "test")[0]
    return {(r.split, r.label, r.id) for r in used}


def replicate_pool(reviews: Mapping[str, Sequence[Review]], params: Mapping[str, Any]) -> dict[str, list[Review]]:
    r"""The reviews replicate ``params['imdb']['replicate']`` (:mod:`ntkrepro.replicates`; 0 if
    absent) may draw from: ``reviews`` minus every review replicates :math:`0..r-1` of H6 drew
    (:func:`used_reviews`, recomputed with their seeds ``base_seed + S q``). Replicate 0 gets
    ``reviews`` unchanged. ``params`` is H6's section (``n_train``, ``n_valid``, ``n_test``,
    ``seed`` -- replicate r's shifted seed -- and ``final``). Raises ``ValueError`` naming the
    replicate when the archive is too small for that many disjoint draws."""
    from ntkrepro.replicates import base_seed, shift_seed

    r = int(dict(params.get("imdb") or {}).get("replicate") or 0)
    pool = {k: list(v) for k, v in reviews.items()}
    s0 = base_seed(int(params["seed"]), r)
    for q in range(r + 1 if r else 0):  # q = r: only checks that replicate r's own draw fits
        try:
            used = used_reviews(pool, n_train=int(params["n_train"]), n_valid=int(params["n_valid"]),
                                n_test=int(params["n_test"]), seed=shift_seed(s0, q), final=params.get("final"))
        except ValueError as err:
            raise ValueError(f"IMDb: replicate {q} of H6 cannot draw disjointly from replicates 0..{q - 1} "
                             f"({err}); the archive has {len(reviews['train'])} train / {len(reviews['test'])} "
                             "test reviews. Lower the sizes or the number of replicates.") from None
        if q < r:
            pool = {k: [x for x in v if (x.split, x.label, x.id) not in used] for k, v in pool.items()}
    return pool
