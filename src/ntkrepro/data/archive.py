r"""Resolve an official data archive (local copy or download) with checksum verification, and a
restricted unpickler for the pickles such archives contain.

An :class:`ArchiveSpec` names an archive by its official file name, URL and checksum
(``sha256``; ``md5`` is accepted as well because some official sources publish only that).
:func:`resolve_archive` returns a verified local path:

1. an explicit ``local_path`` (from config) -- it must exist and match the checksum;
2. otherwise ``<resources_dir>/<filename>`` if present (verified);
3. otherwise, only when ``download=True``, the official URL is fetched with pooch
   (:class:`pooch.Pooch`: sha256 checked against the pinned value, progress bar, up to
   :data:`DOWNLOAD_RETRIES` retries) into a temporary directory in ``resources_dir``, verified
   again (md5 as well, when given), and only then moved onto ``<resources_dir>/<filename>``
   (``os.replace``), so a failed or interrupted download never leaves a half-written archive.

Every failure raises :class:`ArchiveError` naming the path(s) looked at, the expected checksum and
how to supply the file. Nothing in this project downloads at test time; offline runs point
``local_path`` at the archives in ``../shared/data``. A download is only made for a spec with a
``sha256`` (the official archives' sha256 are pinned in their loaders; for anything else the user
supplies it): without one it fails closed, never with a mere warning.

Members (:func:`safe_members`, one rule for every tar loader): every member name must be a
relative path without ``..`` (no absolute or drive-letter names), every member must be a regular
file or a directory (a symlink, hard link, device or FIFO refuses the archive), and a name may
occur only once. An archive that matches its checksum but cannot be read (a user's own damaged
copy whose checksum they supplied) raises :class:`ArchiveError` "archive corrupt although its
checksum matched" (:func:`corrupt`), never a raw ``EOFError`` / ``zlib.error`` /
``UnicodeDecodeError``.

Config values (:func:`check_keys`, :func:`config_bool`): a loader refuses unknown keys (a misspelt
``sha265`` is not silently ignored) and accepts only a real boolean for ``download`` (a string
such as ``"no"``, which is what a nested ``--config`` override produces, is refused).

:func:`restricted_loads` unpickles with a whitelist of globals (numpy array reconstruction and
``_codecs.encode`` for Python-2 byte strings); everything else raises :class:`pickle.UnpicklingError`.
After loading, :func:`check_plain` verifies that the object is made only of ``dict``, ``list``,
``bytes``, ``str``, ``int`` and numpy arrays of an allowed dtype (``uint8`` by default).
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import pickle
import posixpath
import re
import tarfile
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.io import PathLike


class ArchiveError(RuntimeError):
    """A data archive is missing, corrupt, or could not be fetched (the message says how to fix it)."""


_LEN = {"sha256": 64, "md5": 32}
_HEX = {k: re.compile(rf"^[0-9a-f]{{{n}}}$") for k, n in _LEN.items()}


def check_digest(kind: str, value: object, where: str) -> str | None:
    """``value`` as a lower-case hex digest (None stays None); anything else raises ValueError."""
    if value is None:
        return None
    if not isinstance(value, str) or not _HEX[kind].match(value.lower()):
        raise ValueError(f"{where}: {kind} must be a {_LEN[kind]}-character hex string "
                         f"or null, got {value!r} ({type(value).__name__})")
    return value.lower()


def check_keys(cfg: Mapping[str, object], allowed: Iterable[str], section: str) -> None:
    """Refuse keys of a ``data:`` config section that the loader does not know (e.g. ``sha265``)."""
    unknown = sorted(set(cfg) - set(allowed))
    if unknown:
        raise ValueError(f"{section}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def config_bool(cfg: Mapping[str, object], key: str, section: str, default: bool = False) -> bool:
    """``cfg[key]`` if it is a real boolean; a string such as ``"no"`` or ``"false"`` is refused.

    (Snakemake's ``--config`` delivers nested values as strings; set them in a ``--configfile``.)
    """
    value = cfg.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{section}.{key} must be true or false (a YAML boolean), got {value!r} "
                         f"({type(value).__name__}); nested --config overrides arrive as strings -- "
                         "set it in a --configfile instead")
    return value

@dataclass(frozen=True)
class ArchiveSpec:
    """An official archive: file name, URL and expected checksum(s).

    ``sha256`` is preferred; ``md5`` is checked when given (official CIFAR-10 publishes only md5).
    At least one of the two must be set.
    """

    name: str
    filename: str
    url: str | None = None
    sha256: str | None = None
    md5: str | None = None

    def __post_init__(self) -> None:
        where = f"archive {self.name!r}"
        object.__setattr__(self, "sha256", check_digest("sha256", self.sha256 or None, where))
        object.__setattr__(self, "md5", check_digest("md5", self.md5 or None, where))
        if not self.sha256 and not self.md5:
            raise ValueError(f"{where}: give an expected sha256 (or md5)")

    def expected(self) -> str:
        """Human-readable expected checksum(s)."""
        parts = []
        if self.sha256:
            parts.append(f"sha256 {self.sha256}")
        if self.md5:
            parts.append(f"md5 {self.md5}")
        return ", ".join(parts)


def file_digests(path: PathLike, chunk: int = 1 << 20) -> dict[str, str]:
    """sha256 and md5 hex digests of a file, in one streamed pass."""
    h256, h5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h256.update(block)
            h5.update(block)
    return {"sha256": h256.hexdigest(), "md5": h5.hexdigest()}


def _how_to_supply(spec: ArchiveSpec, resources_dir: Path | None) -> str:
    hints = [f"put the official file '{spec.filename}' at the configured local path"]
    if resources_dir is not None:
        hints.append(f"or copy it to {resources_dir / spec.filename}")
    if spec.url:
        hints.append(f"or download it from {spec.url} (with download enabled and internet access)")
    return "; ".join(hints)


def _tried(paths: Iterable[PathLike]) -> str:
    return " and ".join(str(Path(p)) for p in paths)


def verify_archive(path: PathLike, spec: ArchiveSpec, resources_dir: Path | None = None,
                   searched: Iterable[PathLike] = ()) -> Path:
    """Check ``path`` exists and matches ``spec``'s checksum(s); return it as a :class:`Path`.

    ``searched``: further places already looked at, named in the not-found message.
    """
    p = Path(path)
    if p.is_dir():
        raise ArchiveError(f"{spec.name}: {p} is a directory, not the archive file (expected {spec.expected()}); "
                           f"give the file itself. To supply it: {_how_to_supply(spec, resources_dir)}.")
    if not p.is_file():
        raise ArchiveError(
            f"{spec.name}: archive not found at {_tried([*searched, p])} (expected {spec.expected()}). "
            f"To supply it: {_how_to_supply(spec, resources_dir)}."
        )
    got = file_digests(p)
    bad = [k for k in ("sha256", "md5") if getattr(spec, k) and got[k] != getattr(spec, k).lower()]
    if bad:
        raise ArchiveError(
            f"{spec.name}: checksum mismatch for {p}: expected {spec.expected()}, got "
            + ", ".join(f"{k} {got[k]}" for k in bad)
            + f". The file is corrupt or a different version; replace it ({_how_to_supply(spec, resources_dir)})."
        )
    return p


#: Further download attempts after a failed one (network error or sha256 mismatch); pooch waits
#: 1 s, 2 s, 3 s between them.
DOWNLOAD_RETRIES = 3

_POOCH_MISMATCH = re.compile(r"does not match the known hash: expected \S+ but got ([0-9a-fA-F]+)")


def _download(spec: ArchiveSpec, dest: Path, timeout: float) -> None:
    """Fetch ``spec.url`` with pooch into a temp dir beside ``dest``, verify, then ``os.replace`` it.

    pooch (https://www.fatiando.org/pooch) streams the file with a progress bar, checks its sha256
    against ``spec.sha256`` and retries :data:`DOWNLOAD_RETRIES` times on a network error or a
    mismatch; :func:`verify_archive` then checks every declared checksum (md5 too) before the file
    reaches ``dest``. pooch's ``ValueError`` (hash mismatch) and ``requests`` errors become
    :class:`ArchiveError` with the same messages as a local file's. pooch is imported here only,
    so importing the data modules does not need it.
    """
    assert spec.url and spec.sha256
    import pooch  # lazy: only a download needs it

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent))
    attempts = 1 + DOWNLOAD_RETRIES
    try:
        pup = pooch.Pooch(path=tmp_dir, base_url="", registry={dest.name: f"sha256:{spec.sha256}"},
                          urls={dest.name: spec.url}, retry_if_failed=DOWNLOAD_RETRIES)
        if spec.url.lower().startswith(("http://", "https://")):
            downloader = pooch.HTTPDownloader(progressbar=True, chunk_size=1 << 20, timeout=timeout)
        else:  # ftp:// etc.: pooch's own choice (an unknown scheme raises ValueError -> ArchiveError)
            downloader = pooch.choose_downloader(spec.url, progressbar=True)
        got = verify_archive(pup.fetch(dest.name, downloader=downloader), spec, dest.parent)
        os.replace(got, dest)
    except ArchiveError:
        raise
    except ValueError as err:
        m = _POOCH_MISMATCH.search(str(err))
        if m is None:
            raise _download_failed(spec, dest, err, attempts) from err
        raise ArchiveError(
            f"{spec.name}: checksum mismatch for the download of {spec.url} ({attempts} attempts): "
            f"expected {spec.expected()}, got sha256 {m.group(1)}. The server sent a corrupt file "
            f"or a different version; nothing was written to {dest}. "
            f"To supply it: {_how_to_supply(spec, dest.parent)}."
        ) from err
    except Exception as err:  # network errors, HTTP errors, disk full ...
        raise _download_failed(spec, dest, err, attempts) from err
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


def _download_failed(spec: ArchiveSpec, dest: Path, err: BaseException, attempts: int) -> ArchiveError:
    return ArchiveError(
        f"{spec.name}: download of {spec.url} into {dest} failed "
        f"({type(err).__name__}: {err}; up to {attempts} attempts); expected {spec.expected()}. "
        f"To supply it: {_how_to_supply(spec, dest.parent)}."
    )


def resolve_archive(spec: ArchiveSpec, *, local_path: PathLike | None = None,
                    resources_dir: PathLike | None = "resources", download: bool = False,
                    timeout: float = 60.0, searched: Iterable[PathLike] = ()) -> Path:
    """A verified local path of the archive ``spec`` (see the module docstring for the order).

    ``searched``: places the caller already looked at (e.g. ``<data.root>/<archive>``), named in
    every not-found message. ``download`` must be a real boolean.
    """
    if not isinstance(download, bool):
        raise ValueError(f"{spec.name}: download must be true or false, got {download!r}")
    searched = [Path(p) for p in searched]
    res = Path(resources_dir) if resources_dir is not None else None
    if local_path is not None:
        return verify_archive(local_path, spec, res, searched)
    if res is not None and (res / spec.filename).exists():
        return verify_archive(res / spec.filename, spec, res)
    tried = [*searched, *([res / spec.filename] if res is not None else [])]
    if download:
        if not spec.url:
            raise ArchiveError(f"{spec.name}: not found at {_tried(tried)} and no download URL known; "
                               f"{_how_to_supply(spec, res)}.")
        if not spec.sha256:
            raise ArchiveError(
                f"{spec.name}: refusing to download {spec.url} without a sha256 to verify it against "
                f"(only {spec.expected()} is known); give the archive's sha256 in the config, or "
                f"{_how_to_supply(spec, res)}.")
        if res is None:
            raise ArchiveError(f"{spec.name}: download needs a resources_dir to write into")
        _download(spec, res / spec.filename, timeout)
        return res / spec.filename
    where = _tried(tried) if tried else "(no local path given)"
    raise ArchiveError(
        f"{spec.name}: archive not found at {where} and download is disabled (expected {spec.expected()}). "
        f"To supply it: {_how_to_supply(spec, res)}."
    )


# --------------------------------------------------------------------------------------------
# Safe reading of tar members, and corrupt archives

def corrupt(archive: PathLike, err: BaseException) -> ArchiveError:
    """The error for an archive that passed its checksum but cannot be read."""
    return ArchiveError(
        f"{archive}: archive corrupt although its checksum matched ({type(err).__name__}: {err}). "
        "The configured checksum is that of a damaged copy: replace the file with the official "
        "archive and its official checksum.")


_DRIVE = re.compile(r"^[A-Za-z]:")


def check_member_name(name: str, archive: PathLike) -> None:
    """Refuse an absolute, drive-letter or ``..`` member name (path traversal)."""
    p = PurePosixPath(name)
    if (not name or name.startswith(("/", "\\")) or p.is_absolute() or ".." in p.parts
            or ".." in PurePosixPath(name.replace("\\", "/")).parts or _DRIVE.match(name)):
        raise ArchiveError(f"{archive}: unsafe member name {name!r} (absolute or '..'); refusing this archive")


def safe_members(tar: tarfile.TarFile, archive: PathLike) -> dict[str, tarfile.TarInfo]:
    """The regular-file members of ``tar`` by name, after checking every member (module docstring).

    Raises :class:`ArchiveError` for an unsafe name, a link / device / FIFO member, or a file
    name that occurs twice (a second copy would silently replace the first).
    """
    files: dict[str, tarfile.TarInfo] = {}
    for m in tar:
        check_member_name(m.name, archive)
        if m.isdir():
            continue
        if not m.isfile():
            kind = "symlink" if m.issym() else "hard link" if m.islnk() else "special file"
            raise ArchiveError(f"{archive}: member {m.name} is not a regular file ({kind}"
                               + (f" -> {m.linkname}" if m.linkname else "") + "); refusing this archive")
        name = normalise_member_name(m.name)
        if name in files:
            raise ArchiveError(f"{archive}: member {name} occurs twice (as {files[name].name!r} and {m.name!r}, "
                               "the same path once normalised); refusing this archive")
        files[name] = m
    return files


def normalise_member_name(name: str) -> str:
    """A member name as the file it extracts to: ``./a//b/./c`` -> ``a/b/c`` (so that two spellings
    of one path count as a duplicate)."""
    norm = posixpath.normpath(name.replace("\\", "/"))
    return norm[2:] if norm.startswith("./") else norm


def duplicate_members(tar: tarfile.TarFile, members: Mapping[str, tarfile.TarInfo], names: Iterable[str],
                      archive: PathLike) -> None:
    """Refuse an archive in which two of the members ``names`` have byte-identical content (e.g. a
    training batch copied over another: the data would silently count twice)."""
    seen: dict[str, str] = {}
    for n in names:
        if n not in members:
            continue
        fh = tar.extractfile(members[n])
        assert fh is not None
        content = fh.read()
        if not content:  # else two empty batches read as "byte-identical", which names the wrong fault
            raise ArchiveError(f"{archive}: member {n} is empty (0 bytes): a truncated or broken archive; replace it")
        digest = hashlib.sha256(content).hexdigest()
        if digest in seen:
            raise ArchiveError(f"{archive}: members {seen[digest]} and {n} are byte-identical (a duplicated "
                               "batch); this is not the official archive: replace it")
        seen[digest] = n


def duplicate_rows(rows: np.ndarray) -> int:
    """How many rows of ``rows`` (e.g. images, one per row) are byte-identical copies of an earlier row."""
    a = np.ascontiguousarray(rows.reshape(len(rows), -1))
    if len(a) == 0:
        return 0
    v = a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()
    return int(len(v) - len(np.unique(v)))


# --------------------------------------------------------------------------------------------
# Restricted unpickling

def _latin1_encode(obj: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode`` as Python-2 pickles use it (bytes stored as latin-1 text); latin-1 only."""
    if codecs.lookup(encoding).name != "iso8859-1":
        raise RefusedPickle(f"refusing _codecs.encode with encoding {encoding!r}")
    if not isinstance(obj, str):
        raise RefusedPickle("refusing _codecs.encode of a non-string")
    return obj.encode("latin1")


def _allowed_globals() -> dict[tuple[str, str], Any]:
    allowed: dict[tuple[str, str], Any] = {
        ("_codecs", "encode"): _latin1_encode,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
    }
    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _reconstruct
    # pickles written by numpy 1.x name numpy.core, by numpy 2.x numpy._core: same function
    allowed[("numpy.core.multiarray", "_reconstruct")] = _reconstruct
    allowed[("numpy._core.multiarray", "_reconstruct")] = _reconstruct
    return allowed


class RefusedPickle(pickle.UnpicklingError):
    """A pickle asks for something the restricted unpickler does not allow (a security refusal,
    distinct from a merely damaged pickle)."""


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only whitelisted globals (numpy arrays, latin-1 bytes)."""

    _ALLOWED: dict[tuple[str, str], Any] | None = None

    def find_class(self, module: str, name: str) -> Any:  # noqa: D102
        if RestrictedUnpickler._ALLOWED is None:
            RestrictedUnpickler._ALLOWED = _allowed_globals()
        try:
            return RestrictedUnpickler._ALLOWED[(module, name)]
        except KeyError:
            raise RefusedPickle(f"global '{module}.{name}' is not allowed in a data pickle") from None


#: Most distinct containers/values :func:`check_plain` visits (the official CIFAR-10 batches have
#: about 20,000 each); a pickle beyond it is refused rather than walked for hours.
MAX_PLAIN_NODES = 1_000_000


def check_plain(obj: Any, allowed_dtypes: Iterable[str] = ("uint8",), _path: str = "",
                max_nodes: int = MAX_PLAIN_NODES) -> None:
    """Raise :class:`RefusedPickle` unless ``obj`` is built only of dict, list, tuple, bytes,
    str, int and numpy arrays whose dtype is in ``allowed_dtypes``.

    The walk visits each container once (memoised by ``id``: a pickle of shared references such as
    ``x = [x, x]`` forty deep is a graph of 41 nodes, not a tree of 2**40) and refuses more than
    ``max_nodes`` containers."""
    dts = tuple(allowed_dtypes)
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(obj, _path)]
    while stack:
        o, path = stack.pop()
        if isinstance(o, (dict, list, tuple)):
            if id(o) in seen:
                continue
            seen.add(id(o))
            if len(seen) > max_nodes:
                raise RefusedPickle(f"more than {max_nodes} containers (at {path or '/'}): not a data pickle")
            if isinstance(o, dict):
                for k, v in o.items():
                    stack.append((k, f"{path}/key"))
                    stack.append((v, f"{path}/{k!r}"))
            else:
                stack.extend((v, f"{path}[{i}]") for i, v in enumerate(o))
        elif isinstance(o, np.ndarray):
            if o.dtype.name not in dts:
                raise RefusedPickle(f"array at {path or '/'} has dtype {o.dtype}, allowed {dts}")
        elif o is None or isinstance(o, (bytes, str, bool, int)):
            continue
        else:
            raise RefusedPickle(f"object of type {type(o).__name__} at {path or '/'} is not allowed")


def restricted_loads(data: bytes, *, allowed_dtypes: Iterable[str] = ("uint8",)) -> Any:
    """Unpickle ``data`` (Python-2 pickles read with ``encoding='bytes'``) with the whitelist, then
    :func:`check_plain` the result."""
    obj = RestrictedUnpickler(io.BytesIO(data), encoding="bytes").load()
    check_plain(obj, allowed_dtypes)
    return obj
