"""Checks on the user's config files that a JSON schema cannot express (issue 22, items 3 and 5).

The Snakefile calls :func:`check_user_config` on the files given with ``--configfile`` and the
``--config`` overrides before any rule file is read. Each refusal names the file, the key and the fix:

* a duplicated key in a YAML mapping (YAML loaders, Snakemake's included, silently keep the last);
* an empty or non-mapping file;
* a non-finite number (``.inf``, ``-.inf``, ``.nan``) anywhere in the config: no size, rate,
  regulariser or threshold of this project is meaningful at infinity or NaN (``diag_reg_grid:
  [.inf]`` used to give all-zero predictions, i.e. chance accuracy reported as a result);
* keys only a replicate's derived config may set (``replicate_index``, ``data.<set>.replicate``;
  :func:`ntkrepro.replicates.replicate_config`): set by hand they relabel the headline run;
* braces in ``results_dir`` (Snakemake reads them as wildcards);
* a file whose aliases expand to more than :data:`NODE_CAP` values (a "YAML bomb": nine levels of
  ten ``*a`` references are 10**9 values, and every walk of the config -- this module's, Snakemake's
  merge, the schema check -- would hang), or nested deeper than :data:`MAX_DEPTH` levels (Python's
  parser would stop with a raw RecursionError);
* a seed that is not a whole number in [0, 2**32) or a size (``n_*``) that is not a whole number
  below 2**31 (``seed: 1.0e+23`` and ``n_draws: 1.0e+12`` used to stop in a job with a raw
  OverflowError; ``1e12`` without a dot is read by YAML as *text*);
* sizes whose memory estimate exceeds this machine's memory (:func:`memory_estimates`;
  ``hron2020.H1.n_draws: 1.0e+9`` used to allocate for minutes and then die with a MemoryError);
* a ``scale`` label that does not match the config's sizes (:func:`check_scale_label`): ``scale:
  paper`` over config/smoke.yaml's sizes would label smoke numbers as paper scale and drop the
  "reduced" substitutes from every ledger entry.

``python -m ntkrepro.configcheck FILE ...`` runs the file checks alone; use it when Snakemake
itself stops with "Config file must be given as JSON or YAML with keys at top level" (Snakemake
loads ``--configfile`` before the Snakefile runs, and its message names no file).
``python -m ntkrepro.configcheck --snakemake ARGS ...`` checks the ``--configfile`` files of a
Snakemake command line, naming the bad one, and then runs ``snakemake ARGS ...`` unchanged.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

#: Keys that only ntkrepro.replicates.replicate_config sets (dotted; ``*`` = any data set).
DERIVED_ONLY = ("replicate_index", "data.*.replicate")


#: Most values (mappings, lists, scalars, with every alias expanded) a config file may hold. The
#: project's largest config (config/paper.yaml) has well under a thousand.
NODE_CAP = 100_000
#: Deepest nesting a config file may have (the project's configs are four levels deep).
MAX_DEPTH = 50
#: Largest size (``n_*`` keys) accepted: sizes index arrays (int32 on the accelerator).
MAX_SIZE = 2**31 - 1


class ConfigError(ValueError):
    """A config file or override that would silently mean something else."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated within one mapping, naming it and its lines."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            first = seen.get(key)
        except TypeError:  # unhashable key: let the default constructor report it
            continue
        if first is not None:
            raise ConfigError(f"{key_node.start_mark.name}: key {key!r} appears twice in one mapping "
                              f"(lines {first} and {line}); YAML would silently keep the second. "
                              "Delete one of them.")
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_strict(path: str | Path) -> dict[str, Any]:
    """Load a config file (YAML or JSON), refusing duplicate keys and anything but a mapping at top
    level; every message names the file."""
    p = Path(path)
    try:
        with p.open() as fh:  # a stream, so that marks carry the file name
            loader = _StrictLoader(fh)
            try:
                node = loader.get_single_node()
                if node is not None:
                    _check_size(node, f"--configfile {p}")
                data = None if node is None else loader.construct_document(node)
            finally:
                loader.dispose()
    except OSError as err:
        raise ConfigError(f"--configfile {p}: cannot be read ({err.strerror or err})") from None
    except ConfigError:
        raise
    except RecursionError:
        raise ConfigError(f"--configfile {p}: nested too deeply to parse (more than {MAX_DEPTH} levels of "
                          "mappings or lists); a config file holds sections of keys, not deep structures") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"--configfile {p}: not a text file ({err.reason} at byte {err.start}); a config file "
                          "is YAML or JSON text") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"--configfile {p}: not valid YAML/JSON: {err}") from None
    if data is None:
        raise ConfigError(f"--configfile {p} is empty: a config file must be a mapping of keys "
                          "(copy config/smoke.yaml or config/default.yaml and edit it)")
    if not isinstance(data, dict):
        raise ConfigError(f"--configfile {p} holds a {type(data).__name__}, not a mapping of keys at top "
                          "level: write `key: value` lines (see config/smoke.yaml)")
    return data


def _check_size(root: yaml.Node, where: str) -> None:
    """Refuse a composed YAML document whose aliases expand to more than :data:`NODE_CAP` values or
    that nests deeper than :data:`MAX_DEPTH` levels. Counted on the node graph with one memo per
    node (an alias is the same node object), so a bomb is measured in microseconds, not expanded."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    # iterative post-order walk (no recursion: a deep file must not raise RecursionError here)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        if isinstance(node, yaml.MappingNode):
            kids = [n for kv in node.value for n in kv]
        elif isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        else:
            size[id(node)], depth[id(node)] = 1, 0
            continue
        if not done:
            stack.append((node, True))
            stack += [(k, False) for k in kids if id(k) not in size]
            if len(stack) > 10 * NODE_CAP:
                raise ConfigError(f"{where}: more than {NODE_CAP} values; a config file is a few hundred keys")
            continue
        size[id(node)] = min(1 + sum(size[id(k)] for k in kids), NODE_CAP + 1)
        depth[id(node)] = 1 + max((depth[id(k)] for k in kids), default=0)
        if depth[id(node)] > MAX_DEPTH:
            m = node.start_mark
            raise ConfigError(f"{where}: nested {depth[id(node)]} levels deep at line {m.line + 1} (more than "
                              f"{MAX_DEPTH}); a config file holds sections of keys, not deep structures")
        if size[id(node)] > NODE_CAP:
            m = node.start_mark
            raise ConfigError(f"{where}: its aliases (*name references) expand to more than {NODE_CAP} values "
                              f"(the value at line {m.line + 1}); a config file is a few hundred keys. Write the "
                              "values out, or reference each anchor only where it is needed")


def nonfinite_keys(node: Any, prefix: str = "", _seen: set[int] | None = None) -> list[str]:
    """Dotted keys (list items as ``[i]``) of every non-finite float (inf, -inf, NaN) in ``node``.

    A mapping or list that appears several times (a YAML alias shares one object) is walked once,
    at its first key; the walk visits each object at most once, so an alias bomb cannot hang it."""
    seen = set() if _seen is None else _seen
    out: list[str] = []
    if isinstance(node, float):
        if not math.isfinite(node):
            out.append(prefix or "<top>")
    elif isinstance(node, (Mapping, list, tuple)):
        if id(node) in seen:
            return out
        seen.add(id(node))
        items = node.items() if isinstance(node, Mapping) else enumerate(node)
        for k, v in items:
            key = (f"{prefix}.{k}" if prefix else str(k)) if isinstance(node, Mapping) else f"{prefix}[{k}]"
            out += nonfinite_keys(v, key, seen)
    return out


def _leaves(node: Any, prefix: str = "", _seen: set[int] | None = None, _depth: int = 0):
    """(dotted key, last key name, value) of every scalar in ``node``, each shared object once."""
    seen = set() if _seen is None else _seen
    if isinstance(node, (Mapping, list, tuple)):
        if id(node) in seen or _depth > MAX_DEPTH:
            return
        seen.add(id(node))
        if isinstance(node, Mapping):
            for k, v in node.items():
                yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k), seen, _depth + 1)
        else:
            for i, v in enumerate(node):
                yield from _leaves(v, f"{prefix}[{i}]", seen, _depth + 1)
    else:
        yield prefix, prefix.rsplit(".", 1)[-1].split("[", 1)[0], node


def _is_seed(name: str) -> bool:
    return name in ("seed", "seeds") or name.endswith(("_seed", "_seeds"))


def _is_size(name: str) -> bool:
    return name.startswith("n_")


def number_problems(cfg: Mapping[str, Any]) -> list[str]:
    """Seeds that are not whole numbers in [0, 2**32) and sizes (``n_*`` keys) that are not whole
    numbers in [0, :data:`MAX_SIZE`], each with its dotted key and the fix."""
    out = []
    for key, name, v in _leaves(cfg):
        if not (_is_seed(name) or _is_size(name)):
            continue
        what = "seed" if _is_seed(name) else "size"
        limit = 2**32 - 1 if what == "seed" else MAX_SIZE
        if isinstance(v, str):
            try:
                num = float(v)
            except ValueError:
                continue  # a named option, not a number
            out.append(f"{key}: {v!r} is text, not a number (YAML reads 1e12 without a dot as text); write the "
                       f"whole number {num:.0f}" if math.isfinite(num) and abs(num) < 1e30 else
                       f"{key}: {v!r} is text, not a number")
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        elif isinstance(v, float) and not v.is_integer():
            if math.isfinite(v):
                out.append(f"{key}: {v!r} is not a whole number; a {what} counts")
        elif not 0 <= v <= limit:
            out.append(f"{key}: {v!r} is outside [0, {limit}] (the largest {what} a job can use); give a smaller one")
    return out


def machine_memory_bytes() -> int | None:
    """Physical memory of this machine (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def memory_estimates(cfg: Mapping[str, Any]) -> dict[str, float]:
    """Bytes a job needs at least, by the config key that sets its size (a lower bound, so a
    refusal is never wrong; a job may need more).

    * ``hron2020.H1.n_draws``: for each head count h with n draws, ``sample_outputs`` holds n*h head
      terms (float32) twice (the chunks and their concatenation) and the n draws (float64) three
      times (draws, the Gaussian control's, the shared-heads control's): 8*n*h + 24*n bytes.
    * any other size key ``n_*``: one float64 per unit (8 bytes times the size).
    """
    out: dict[str, float] = {}
    for key, name, v in _leaves(cfg):
        if _is_size(name) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            base = key.split("[", 1)[0]
            out[base] = max(out.get(base, 0.0), 8.0 * abs(v))
    h1 = (cfg.get("hron2020") or {}).get("H1") if isinstance(cfg.get("hron2020"), Mapping) else None
    if isinstance(h1, Mapping) and isinstance(h1.get("heads"), list):
        heads, n = h1["heads"], h1.get("n_draws")
        ns = n if isinstance(n, list) else [n] * len(heads)
        est = max((8.0 * _num(k) * _num(h) + 24.0 * _num(k) for h, k in zip(heads, ns)), default=0.0)
        out["hron2020.H1.n_draws"] = max(out.get("hron2020.H1.n_draws", 0.0), est)
    return out


def check_memory(cfg: Mapping[str, Any], where: str, memory: int | None = None) -> None:
    """Refuse sizes whose memory estimate (:func:`memory_estimates`) exceeds ``memory`` (default:
    this machine's), naming the key, the estimate and the machine's memory."""
    memory = machine_memory_bytes() if memory is None else memory
    if not memory:
        return
    over = {k: b for k, b in memory_estimates(cfg).items() if b > memory}
    if over:
        k, b = max(over.items(), key=lambda kv: kv[1])
        also = f" (also {', '.join(sorted(set(over) - {k}))})" if len(over) > 1 else ""
        raise ConfigError(f"{where}: {k} needs at least {b / 2**30:.3g} GiB of memory, more than this machine's "
                          f"{memory / 2**30:.3g} GiB" + also + "; give a smaller size")


def derived_only_keys(node: Mapping[str, Any]) -> list[str]:
    """Keys of :data:`DERIVED_ONLY` that ``node`` sets."""
    out = []
    if "replicate_index" in node:
        out.append("replicate_index")
    data = node.get("data")
    if isinstance(data, Mapping):
        out += [f"data.{k}.replicate" for k, v in data.items() if isinstance(v, Mapping) and "replicate" in v]
    return out


def check_values(cfg: Mapping[str, Any], where: str, *, user: bool = True) -> None:
    """Refuse non-finite numbers, derived-only keys (``user``: ``cfg`` comes from the user) and braces
    in ``results_dir``; ``where`` names the source (a file or ``--config``)."""
    bad = nonfinite_keys(cfg)
    if bad:
        raise ConfigError(f"{where}: non-finite number at {', '.join(bad)}; every number in the config must be "
                          "finite (.inf / .nan are refused): give a finite value")
    bad = number_problems(cfg)
    if bad:
        raise ConfigError(f"{where}: {'; '.join(bad)}")
    if user:
        derived = derived_only_keys(cfg)
        if derived:
            raise ConfigError(f"{where}: {', '.join(derived)} may not be set by hand: only a replicate's derived "
                              "config sets it (ntkrepro.replicates.replicate_config); set `replicates: K` to run "
                              "replicates and delete this key")
    if not user:
        check_memory(cfg, where)
    rd = cfg.get("results_dir")
    if isinstance(rd, str) and ("{" in rd or "}" in rd):
        raise ConfigError(f"{where}: results_dir {rd!r} contains a brace, which Snakemake reads as a wildcard; "
                          "choose a folder name without {{ or }}")


#: The scale files a config's ``scale`` label refers to (config/<scale>.yaml).
SCALE_FILES = ("smoke", "default", "paper")


def _numbers(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted key -> number of every numeric leaf (not seeds: they do not set a size)."""
    return {k: v for k, name, v in _leaves(cfg)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not _is_seed(name)}


def check_scale_label(cfg: Mapping[str, Any], where: str, config_dir: str | Path = "config") -> None:
    """Refuse a ``scale`` label that the config's numbers contradict.

    The label decides what the ledger says about the numbers (at ``paper`` no "reduced" substitutes
    are listed), so it must describe them. For each scale file config/<scale>.yaml, count the
    numbers (every numeric value but seeds) the config shares with it; the label must name a file
    that shares at least as many as any other. ``scale: paper`` over config/smoke.yaml's sizes is
    refused; config/paper.yaml with a few sizes changed is still paper. The decision is made from
    the sizes, never by trusting the label."""
    label = cfg.get("scale")
    d = Path(config_dir)
    if label not in SCALE_FILES or not (d / f"{label}.yaml").is_file():
        return
    mine = _numbers(cfg)
    agree = {}
    for sc in SCALE_FILES:
        f = d / f"{sc}.yaml"
        if f.is_file():
            ref = _numbers(load_strict(f))
            agree[sc] = sum(1 for k, v in ref.items() if k in mine and mine[k] == v)
    best = max(agree.values())
    if agree[label] < best:
        like = [sc for sc, a in agree.items() if a == best]
        raise ConfigError(f"{where}: scale: {label}, but its sizes are those of config/{like[0]}.yaml ({best} of "
                          f"{len(mine)} numbers equal {like[0]}'s, {agree[label]} equal {label}'s); the label would "
                          f"call {like[0]}-scale numbers {label} scale. Set scale: {like[0]}, or start from "
                          f"config/{label}.yaml")


def check_user_config(configfiles: Iterable[str | Path], overrides: Mapping[str, Any] | None) -> None:
    """Every check of this module on the ``--configfile`` files and the ``--config`` overrides."""
    for f in configfiles:
        check_values(load_strict(f), f"--configfile {f}")
    if overrides:
        check_values(dict(overrides), "--config")


def configfiles_of(snakemake_args: Sequence[str]) -> list[str]:
    """The files given with ``--configfile`` / ``--configfiles`` in a Snakemake command line (each
    option takes the following arguments up to the next option)."""
    files: list[str] = []
    taking = False
    for a in snakemake_args:
        if a.startswith("-"):
            name, eq, value = a.partition("=")
            taking = name in ("--configfile", "--configfiles")
            if taking and eq:
                files.append(value)
        elif taking:
            files.append(a)
    return files


def run_snakemake(snakemake_args: Sequence[str]) -> int:
    """``python -m ntkrepro.configcheck --snakemake ARGS ...``: check the ``--configfile`` files of
    the Snakemake command line first (Snakemake parses them before the Snakefile runs, and its
    messages for an empty, list, tab-indented, binary, directory, deeply nested or alias-bomb file
    name no file or hang), then run Snakemake with the same arguments."""
    import os
    from pathlib import Path as _P

    try:
        for f in configfiles_of(snakemake_args):
            if _P(f).is_dir():
                raise ConfigError(f"--configfile {f} is a directory, not a config file")
            check_values(load_strict(f), f"--configfile {f}")
    except ConfigError as err:
        print(f"config error: {err}", file=sys.stderr)
        return 1
    exe = _P(sys.executable).parent / "snakemake"
    cmd = [str(exe) if exe.exists() else "snakemake", *snakemake_args]
    os.execvp(cmd[0], cmd)
    return 0  # not reached


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ntkrepro.configcheck FILE ...``: check config files, name the first bad one;
    ``python -m ntkrepro.configcheck --snakemake ARGS ...``: check then run Snakemake (:func:`run_snakemake`)."""
    files = list(sys.argv[1:] if argv is None else argv)
    if files[:1] == ["--snakemake"]:
        return run_snakemake(files[1:])
    if not files:
        print("usage: python -m ntkrepro.configcheck CONFIGFILE ... | --snakemake SNAKEMAKE_ARGS ...",
              file=sys.stderr)
        return 2
    try:
        check_user_config(files, None)
    except ConfigError as err:
        print(f"config error: {err}", file=sys.stderr)
        return 1
    print(f"ok: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
