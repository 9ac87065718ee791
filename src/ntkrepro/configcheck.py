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
* braces in ``results_dir`` (Snakemake reads them as wildcards).

``python -m ntkrepro.configcheck FILE ...`` runs the file checks alone; use it when Snakemake
itself stops with "Config file must be given as JSON or YAML with keys at top level" (Snakemake
loads ``--configfile`` before the Snakefile runs, and its message names no file).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

#: Keys that only ntkrepro.replicates.replicate_config sets (dotted; ``*`` = any data set).
DERIVED_ONLY = ("replicate_index", "data.*.replicate")


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
            data = yaml.load(fh, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except OSError as err:
        raise ConfigError(f"--configfile {p}: cannot be read ({err.strerror or err})") from None
    except ConfigError:
        raise
    except yaml.YAMLError as err:
        raise ConfigError(f"--configfile {p}: not valid YAML/JSON: {err}") from None
    if data is None:
        raise ConfigError(f"--configfile {p} is empty: a config file must be a mapping of keys "
                          "(copy config/smoke.yaml or config/default.yaml and edit it)")
    if not isinstance(data, dict):
        raise ConfigError(f"--configfile {p} holds a {type(data).__name__}, not a mapping of keys at top "
                          "level: write `key: value` lines (see config/smoke.yaml)")
    return data


def nonfinite_keys(node: Any, prefix: str = "") -> list[str]:
    """Dotted keys (list items as ``[i]``) of every non-finite float (inf, -inf, NaN) in ``node``."""
    out: list[str] = []
    if isinstance(node, float):
        if not math.isfinite(node):
            out.append(prefix or "<top>")
    elif isinstance(node, Mapping):
        for k, v in node.items():
            out += nonfinite_keys(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            out += nonfinite_keys(v, f"{prefix}[{i}]")
    return out


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
    if user:
        derived = derived_only_keys(cfg)
        if derived:
            raise ConfigError(f"{where}: {', '.join(derived)} may not be set by hand: only a replicate's derived "
                              "config sets it (ntkrepro.replicates.replicate_config); set `replicates: K` to run "
                              "replicates and delete this key")
    rd = cfg.get("results_dir")
    if isinstance(rd, str) and ("{" in rd or "}" in rd):
        raise ConfigError(f"{where}: results_dir {rd!r} contains a brace, which Snakemake reads as a wildcard; "
                          "choose a folder name without {{ or }}")


def check_user_config(configfiles: Iterable[str | Path], overrides: Mapping[str, Any] | None) -> None:
    """Every check of this module on the ``--configfile`` files and the ``--config`` overrides."""
    for f in configfiles:
        check_values(load_strict(f), f"--configfile {f}")
    if overrides:
        check_values(dict(overrides), "--config")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ntkrepro.configcheck FILE ...``: check config files, name the first bad one."""
    files = list(sys.argv[1:] if argv is None else argv)
    if not files:
        print("usage: python -m ntkrepro.configcheck CONFIGFILE ...", file=sys.stderr)
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
