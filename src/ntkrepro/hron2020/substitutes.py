"""What the H criteria need of the compute modules, without them: H4's and H6's substitutes and the paper's constants.

:mod:`ntkrepro.hron2020.claims` (the pre-registered criteria) imports these from here, not from
:mod:`ntkrepro.hron2020.cifar10` / :mod:`ntkrepro.hron2020.imdb`, so that H1-H6 can be judged with
numpy alone, as the other papers' criteria are (issue 40 item 3). The compute modules import them
from here too (the values are the ones they always had; ``imdb.FAMILY_LABELS`` and friends are the
same objects).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ntkrepro.data.cifar10 import OFFICIAL_SHA256 as CIFAR10_OFFICIAL_SHA256
from ntkrepro.data.imdb import OFFICIAL_SHA256 as IMDB_OFFICIAL_SHA256

#: The H6 model families' labels in tables and figures.
FAMILY_LABELS = {"gap": "GAP-only", "gap_fcn": "GAP-FCN", "cnn_gap": "CNN-GAP", "struct": "Struct"}
#: State of the art quoted by the paper for IMDb (accuracy).
SOTA_ACCURACY = 0.974
#: The paper's selection protocol (train/valid/test reviews, tokens).
H6_PAPER_SIZES = {"n_train": 3200, "n_valid": 1600, "n_test": 1600, "seq_len": 500}


def is_official_cifar10(sha256: str) -> bool:
    """Whether a recorded archive sha256 is the official ``cifar-10-python.tar.gz``'s
    (:data:`ntkrepro.data.cifar10.OFFICIAL_SHA256`)."""
    return str(sha256).lower() == CIFAR10_OFFICIAL_SHA256


def h4_substitutes(r: Mapping[str, Any], scale: str) -> list[str]:
    """Reductions of an H4 run relative to the paper (ledger entry and figure footer): sizes below
    the paper's at smoke/default scale, and the data label from the recorded archive sha256
    compared with the official archive's (not from the file name)."""
    depths = sorted(int(v) for v in r["depths"])
    subs = []
    if scale != "paper":
        subs.append(f"{r['n_train']}/{r['n_val']} train/validation and {r['n_test']} test images instead of "
                    f"45K/5K and 50K/10K")
        subs.append(f"images average-pooled to {r['image_size']}x{r['image_size']} instead of 32x32")
        subs.append(f"depth sweep {depths}; final depth = validation-selected (paper: 8-layer Struct/Residual)")
    subs += [str(v) for v in r.get("extra_substitutes") or []]  # e.g. the decisive tier's (h4_decisive)
    if not is_official_cifar10(r["archive_sha256"]):
        subs.append(f"CIFAR-10 archive {r['archive']} is not the official cifar-10-python.tar.gz (sha256 "
                    f"{str(r['archive_sha256'])[:12]}... != {CIFAR10_OFFICIAL_SHA256[:12]}...): the offline subset, "
                    "decoded from a JPEG copy; pixels differ slightly from the official binary")
    return subs


def is_official_imdb(sha256: str | None) -> bool:
    """Whether a recorded archive sha256 is the official ``aclImdb_v1.tar.gz``'s
    (:data:`ntkrepro.data.imdb.OFFICIAL_SHA256`)."""
    return sha256 is not None and str(sha256).lower() == IMDB_OFFICIAL_SHA256


def h6_substitutes(r: Mapping[str, Any]) -> list[str]:
    """Reductions of an H6 run relative to the paper (for the ledger entry and the figure): sizes,
    the final table, and the data label from the recorded archive sha256 compared with the official
    archive's (not from the file name)."""
    p = r.get("protocol", {})
    subs = []
    if any(int(p.get(k, v)) < v for k, v in H6_PAPER_SIZES.items()):
        subs.append(f"reduced protocol {p.get('n_train')}/{p.get('n_valid')}/{p.get('n_test')} "
                    f"train/valid/test at length {p.get('seq_len')} (paper: 3200/1600/1600 at 500, 25K/25K final)")
    fin = r.get("final") or {}
    if not fin:
        subs.append("selection protocol only: verdict on its test split (the 25K/25K final table was not run)")
    elif int(fin["n_train"]) < 25000 or int(fin["n_test"]) < 25000:
        subs.append(f"reduced final table {fin['n_train']}/{fin['n_test']} train/test (paper: 25K/25K)")
    sha = p.get("archive_sha256")
    if sha is None:
        subs.append(f"IMDb archive {p.get('archive', '?')}: sha256 not recorded (results of older code), "
                    "so not confirmed to be the official aclImdb_v1.tar.gz")
    elif not is_official_imdb(sha):
        subs.append(f"IMDb archive {p.get('archive', '?')} is not the official aclImdb_v1.tar.gz (sha256 "
                    f"{str(sha)[:12]}... != {IMDB_OFFICIAL_SHA256[:12]}...): the offline subset "
                    "(5,000 train / 2,000 test reviews, official layout)")
    return subs
