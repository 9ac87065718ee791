"""``config/README.md``'s reference, generated from the config files and schemas (issue 31 item 5).

First the ``config/*.yaml`` files (the ``scale`` and first comment line of each); then every key of
``workflow/schemas/config.schema.yaml`` and of each paper's ``workflow/schemas/<paper>.schema.yaml``
(papers from :data:`ntkrepro.papers.PAPERS`) gets a row:
its dotted name, its type and constraints (read from the schema) and what it does -- the schema's
own ``description``, or, for keys whose schema entry has none, the text in :data:`NOTES`. A key with
neither is an error, and so is a note for a key no schema has (``tests/test_configdoc.py``), so the
reference cannot silently fall behind the schemas.

The README is hand-written above the marker :data:`MARKER` and generated below it::

    python -m ntkrepro.configdoc --write     # regenerate config/README.md below the marker
    python -m ntkrepro.configdoc --check     # exit 1 if it differs from the schemas (CI, tests)

Moving a note into its schema (a ``description:``) removes it from :data:`NOTES`; the README is
the same.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ntkrepro.papers import PAPERS

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "workflow" / "schemas"
README = ROOT / "config" / "README.md"
MARKER = ("<!-- Generated below by `python -m ntkrepro.configdoc --write` from config/*.yaml and workflow/schemas/; "
          "do not edit. -->")

#: What a key does, for keys whose schema entry has no ``description``. Looked up as
#: ``"<section>:<dotted key>"``, then ``"<section>:*.<key below a claim>"`` (the same meaning in
#: every claim of that paper), then ``"*:<last name>"`` (every section). ``<section>`` is ``config``
#: for the top-level schema, else the paper key.
NOTES: dict[str, str] = {
    # every section
    "*:seed": "base random seed (every replicate r >= 1 shifts it by r x 1,000,003: ntkrepro.replicates)",
    "*:n_boot": "bootstrap resamples for the 95 % intervals",
    "*:md5": "MD5 of the archive, checked as well when given (null: not checked)",
    "*:repeats": "timed repetitions (best-of and median reported)",
    # top level
    "config:data.cifar10": "CIFAR-10 (python version): where the archive is and how it is verified",
    "config:data.imdb": "IMDb reviews (aclImdb): where the archive is and how it is verified",
    "config:data.imdb.url": "download URL (default the official one)",
    "config:data.imdb.resources_dir": "where a download goes (default resources)",
    "config:data.imdb.download": "fetch the archive when it is not found (true/false only)",
    "config:data.glove": "GloVe word vectors for H6",
    "config:data.glove.dim": "vector dimension (the wheel has 50)",
    "config:data.glove.path": "glove.6B.zip (or its .txt) when source is zip",
    "config:report": "the LaTeX replication report",
    "config:hron2020": "section of Hron et al. 2020 (H1-H6): workflow/schemas/hron2020.schema.yaml, below",
    "config:arda2026": "section of Arda et al. 2026 (A1-A5): workflow/schemas/arda2026.schema.yaml, below",
    "config:hazelden2026": "section of Hazelden et al. 2026 (G1-G4): workflow/schemas/hazelden2026.schema.yaml, below",
    "config:framework": "section of the framework paper (F1-F6): workflow/schemas/framework.schema.yaml, below",
    # Hron et al. 2020
    "hron2020:H2.seq_len": "number of input tokens",
    "hron2020:H2.n_draws": "weight draws per key dimension d",
    "hron2020:H6.dtype": "float type of the kernels (float32 = the paper's)",
    "hron2020:H6.pad_check": ("padding-invariance check of the masked kernels (appended masked positions change "
                              "nothing)"),
    "hron2020:H6.final.n_train": "training reviews of the final table",
    "hron2020:H6.final.n_test": "test reviews of the final table",
    "hron2020:H6.benchmark": "kernel-throughput benchmark of the IMDb models (pairs/s, fast vs neural-tangents)",
    "hron2020:H3.arch": "the attention network whose kernels are estimated",
    "hron2020:H3.arch.W_std": "weight standard deviation",
    "hron2020:H3.arch.b_std": "bias standard deviation",
    "hron2020:H3.arch.attention_mechanism": "attention nonlinearity (neural-tangents attention_mechanism)",
    "hron2020:H3.arch.n_out": "readout channels",
    "hron2020:H4.families": ("kernel families compared: readouts flatten / gap / lap and the attention models "
                             "vanilla / struct / residual"),
    "hron2020:H4.diag_reg_grid": "diag_reg values tried on validation (relative to the mean diagonal)",
    "hron2020:H4.arch": "architecture hyper-parameters shared by the families",
    "hron2020:H4.arch.width": "channels of the finite model (the kernels do not depend on it)",
    "hron2020:H4.arch.W_std": "weight standard deviation of the convolutions",
    "hron2020:H4.arch.b_std": "bias standard deviation",
    "hron2020:H4.arch.lap_window": "window of the local average pooling (lap family)",
    "hron2020:H4.arch.attention_mechanism": "attention nonlinearity (neural-tangents attention_mechanism)",
    "hron2020:H4.arch.W_qk_std": "query/key weight standard deviation",
    "hron2020:H4.arch.pos_emb_length": "length scale of the positional-embedding decay",
    "hron2020:H4.arch.W_pos_emb_std": "positional-embedding standard deviation",
    "hron2020:H4.arch.n_heads": "attention heads",
    "hron2020:H4.dtype": "float type of the kernels (float32 = the paper's)",
    "hron2020:H4.benchmark.image_size": "image size of the benchmark",
    "hron2020:H4.benchmark.depth": "conv depth of the benchmarked models",
    "hron2020:H4.benchmark.families": "families benchmarked",
    "hron2020:H4.benchmark.matmul_size": "size of the dense matmul whose FLOP/s is the reference",
    "hron2020:H5.image_size": "images average-pooled to this size",
    "hron2020:H5.d_model": "model width",
    "hron2020:H5.n_heads": "attention heads",
    "hron2020:H5.batch_size": "Adam minibatch size",
    "hron2020:H5.learning_rate": "Adam learning rate",
    "hron2020:H5.mechanisms": "attention nonlinearities compared",
    "hron2020:H5.layer_norms": "LayerNorm placements compared (none, per head, on the output)",
    # Arda et al. 2026
    "arda2026:*.d": "token dimension d (input X in R^{d x T})",
    "arda2026:*.T": "sequence length T (tokens per input)",
    "arda2026:*.m": "width m (attention heads of the shallow transformer)",
    "arda2026:A3.n": "samples (80 % train)",
    "arda2026:*.widths": "widths m swept (even: the symmetric initialisation pairs heads)",
    "arda2026:*.seeds": "seeds (teacher and student draws)",
    "arda2026:*.seeds_per_job": "seeds run by one shard job",
    "arda2026:*.steps": "projected-GD steps",
    "arda2026:A3.T_values": "sequence lengths T swept",
    "arda2026:A3.teachers_per_job": "teacher draws run by one shard job",
    "arda2026:A3.step_size_coef": "eta = coef / sqrt(steps)",
    "arda2026:A3.rho": "projection radius (x m^-1/2)",
    "arda2026:A4.L_values": "lags L swept (series x_t = 0.9 x_{t-L} + noise; windows of T = L + 1 tokens)",
    "arda2026:A4.lr": "gradient-descent step size",
    "arda2026:A4.burn_in": "first samples of the generated series dropped",
    "arda2026:A5.n_inputs": "inputs in the empirical NTK",
    "arda2026:A5.data_seed": "seed of the inputs (shared by every width and seed)",
    "arda2026:benchmark.sizes.[].m": "width m",
    "arda2026:benchmark.sizes.[].n": "samples",
    "arda2026:benchmark.sizes.[].d": "token dimension d",
    "arda2026:benchmark.sizes.[].T": "sequence length T",
    # Hazelden et al. 2026
    "hazelden2026:*.d_in": "input feature dimension",
    "hazelden2026:*.d_model": "model width",
    "hazelden2026:*.n_heads": "attention heads",
    "hazelden2026:*.d_mlp": "MLP hidden width",
    "hazelden2026:*.n_layers": "transformer blocks",
    "hazelden2026:*.seq_len": "sequence length T",
    "hazelden2026:*.batch": "input sequences",
    "hazelden2026:G4.d_out": "output dimension",
    "hazelden2026:G4.input_dims": "input effective dimensions swept",
    "hazelden2026:G2.tiny_arch": "GPTNeoX config of the tiny model (arch: tiny): transformers.GPTNeoXConfig's fields",
    "hazelden2026:G2.tiny_arch.vocab_size": "GPTNeoXConfig vocab_size",
    "hazelden2026:G2.tiny_arch.hidden_size": "GPTNeoXConfig hidden_size",
    "hazelden2026:G2.tiny_arch.num_hidden_layers": "GPTNeoXConfig num_hidden_layers",
    "hazelden2026:G2.tiny_arch.num_attention_heads": "GPTNeoXConfig num_attention_heads",
    "hazelden2026:G2.tiny_arch.intermediate_size": "GPTNeoXConfig intermediate_size",
    "hazelden2026:G2.tiny_arch.rotary_pct": "GPTNeoXConfig rotary_pct",
    "hazelden2026:G2.tiny_arch.rotary_emb_base": "GPTNeoXConfig rotary_emb_base",
    "hazelden2026:G2.tiny_arch.max_position_embeddings": "GPTNeoXConfig max_position_embeddings",
    "hazelden2026:G2.tiny_arch.use_parallel_residual": "GPTNeoXConfig use_parallel_residual",
    "hazelden2026:G2.tiny_arch.tie_word_embeddings": "GPTNeoXConfig tie_word_embeddings",
    "hazelden2026:G2.tiny_arch.layer_norm_eps": "GPTNeoXConfig layer_norm_eps",
    "hazelden2026:G2.tiny_arch.hidden_act": "GPTNeoXConfig hidden_act",
    "hazelden2026:G2.tiny_arch.initializer_range": "GPTNeoXConfig initializer_range",
    "hazelden2026:G2.tiny_arch.bos_token_id": "GPTNeoXConfig bos_token_id",
    "hazelden2026:G2.tiny_arch.eos_token_id": "GPTNeoXConfig eos_token_id",
    "hazelden2026:G2.tiny_arch.attention_bias": "GPTNeoXConfig attention_bias",
    "hazelden2026:G3.models": "recurrent models compared (vanilla RNN, GRU)",
    "hazelden2026:G3.hidden": "hidden units H of the RNN / GRU",
    "hazelden2026:G3.n_bits": "flip-flop channels",
    "hazelden2026:G3.p_pulse": "probability of a +-1 pulse per step and channel",
    "hazelden2026:G3.train_samples": "training sequences",
    "hazelden2026:G3.lr": "gradient-descent step size",
    "hazelden2026:benchmark.arch": "model of the benchmark (pythia-410m = the exact Pythia-410M config)",
    "hazelden2026:benchmark.layer": "layer index benchmarked",
    "hazelden2026:benchmark.n_tokens": "token positions in the autodiff block",
    "hazelden2026:benchmark.n_units": "output units per site in the autodiff block",
    # framework paper
    "framework:*.seq_len": "tokens per sequence",
    "framework:*.d_in": "token dimension",
    "framework:*.n_heads": "attention heads",
    "framework:*.lr": "gradient-descent step size",
    "framework:*.steps": "full-batch GD steps",
    "framework:*.layernorm": "LayerNorm in the block",
    "framework:*.pos_enc": "sinusoidal positional encodings added to the inputs",
    "framework:*.teacher_length": "length scale of the teacher's attention pattern (the target)",
    "framework:*.n_train": "training sequences",
    "framework:*.n_seeds": "seeds (initialisation and data draw)",
    "framework:F2.ffn_mult": "FFN width = ffn_mult x width (0 = no FFN)",
    "framework:F6.n_test": "test sequences",
    "framework:F5.n_seq": "sequences in the NTK",
    "framework:F5.width": "model width",
}


def load_schemas(schema_dir: Path = SCHEMA_DIR) -> list[tuple[str, str, dict[str, Any]]]:
    """``[(section, file name, schema)]``: the top level (section ``config``), then each paper's."""
    import yaml


    out = [("config", "config.schema.yaml", yaml.safe_load((schema_dir / "config.schema.yaml").read_text()))]
    for key in PAPERS:
        name = f"{key}.schema.yaml"
        out.append((key, name, yaml.safe_load((schema_dir / name).read_text())))
    return out


def _resolve(node: Any, root: Mapping[str, Any]) -> dict[str, Any]:
    """A schema node with a local ``$ref`` (``#/$defs/<name>``) merged under its own keys."""
    if not isinstance(node, Mapping):
        return {}
    if "$ref" not in node:
        return dict(node)
    ref = str(node["$ref"])
    if not ref.startswith("#/$defs/"):
        raise ValueError(f"only local #/$defs/ references are supported, got {ref!r}")
    target = _resolve(root["$defs"][ref.rpartition("/")[2]], root)
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def schema_keys(schema: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every key the schema defines, depth first: ``(path, resolved node)``; keys of the objects
    in an array are under ``[]`` (``sizes.[].m``), keys of an object alternative (``oneOf`` /
    ``anyOf``) under the key itself."""

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
        for k, v in (node.get("properties") or {}).items():
            v = _resolve(v, schema)
            yield path + (k,), v
            yield from walk(v, path + (k,))
        for alt in list(node.get("oneOf", [])) + list(node.get("anyOf", [])):
            yield from walk(_resolve(alt, schema), path)
        if isinstance(node.get("items"), Mapping):
            yield from walk(_resolve(node["items"], schema), path + ("[]",))

    yield from walk(_resolve(schema, schema), ())


def note_for(section: str, path: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The :data:`NOTES` entry for a key and the note key that matched (``(None, None)`` if none)."""
    dotted = ".".join(path)
    for key in (f"{section}:{dotted}", f"{section}:*.{'.'.join(path[1:])}" if len(path) > 1 else None,
                f"*:{path[-1]}"):
        if key is not None and key in NOTES:
            return NOTES[key], key
    return None, None


def description(section: str, path: tuple[str, ...], node: Mapping[str, Any]) -> str | None:
    """What the key does: the schema's description, else its note, else ``None``."""
    text = node.get("description")
    if text:
        return " ".join(str(text).split())
    return note_for(section, path)[0]


def _number_bounds(node: Mapping[str, Any]) -> str:
    parts = []
    for k, sym in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if k in node:
            parts.append(f"{sym} {node[k]}")
    if "multipleOf" in node:
        parts.append(f"multiple of {node['multipleOf']}")
    return ", ".join(parts)


def type_text(node: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    """Type and constraints of a schema node, in words."""
    node = _resolve(node, root)
    if "const" in node:
        return f"`{node['const']}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    alts = list(node.get("oneOf", [])) + list(node.get("anyOf", []))
    if alts:
        return " or ".join(type_text(a, root) for a in alts)
    types = node.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    words = []
    for t in types:
        if t in ("integer", "number"):
            bounds = _number_bounds(node)
            words.append(t + (f" {bounds}" if bounds else ""))
        elif t == "array":
            item = type_text(node.get("items", {}), root) if node.get("items") else "values"
            extra = f", at least {node['minItems']}" if "minItems" in node else ""
            words.append(f"list of {item}{extra}")
        elif t == "object":
            words.append("mapping" if not node.get("properties") and node.get("additionalProperties") else "section")
        elif t == "string":
            words.append("string")
        else:
            words.append(str(t))
    return " or ".join(words) if words else "any"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def config_files(config_dir: Path = ROOT / "config") -> list[tuple[str, str, str]]:
    """``[(file, scale, what)]`` for each ``config/*.yaml``: its ``scale`` key and its first comment
    line (without a leading ``Scale: <name>.``)."""
    import re

    import yaml

    out = []
    for f in sorted(config_dir.glob("*.yaml")):
        text = f.read_text()
        first = text.splitlines()[0] if text.startswith("#") else ""
        what = re.sub(r"^#\s*(Scale:\s*[\w-]+\.\s*)?", "", first).strip()
        out.append((f"config/{f.name}", str((yaml.safe_load(text) or {}).get("scale", "")), what))
    return out


def render(schema_dir: Path = SCHEMA_DIR, config_dir: Path = ROOT / "config") -> str:
    """The generated part of ``config/README.md`` (below :data:`MARKER`)."""
    lines: list[str] = ["", "## Config files", "", "| file | `scale` | what (its first line) |", "|---|---|---|"]
    lines += [f"| `{f}` | `{sc}` | {_cell(what)} |" for f, sc, what in config_files(config_dir)]
    missing: list[str] = []
    for section, fname, schema in load_schemas(schema_dir):
        keys = list(schema_keys(schema))
        if section == "config":
            lines += ["", f"## Top level (`workflow/schemas/{fname}`)", ""]
            groups = [((), keys)]  # the paper sections are one row each here, their keys below
        else:
            paper = PAPERS[section]
            claims = sorted((k for k in schema.get("properties", {}) if k[1:].isdigit() and k[0] == paper.claim_prefix),
                            key=lambda k: int(k[1:]))
            span = f"{claims[0]}-{claims[-1]}" if claims else f"{paper.claim_prefix}*"
            lines += ["", f"## `{section}`: {paper.authors} ({paper.year}), claims {span} "
                          f"(`workflow/schemas/{fname}`)", "", f"*{paper.title}* ({paper.ref}).", ""]
            top = [(p, n) for p, n in keys if len(p) == 1]
            groups = [((), [(p, n) for p, n in top if not n.get("properties")])]
            objects = [p[0] for p, n in top if n.get("properties")]
            # claims in numeric order; other sub-sections before them if the schema puts them first
            first = min((i for i, k in enumerate(objects) if k in claims), default=len(objects))
            order = ([k for k in objects[:first] if k not in claims] + claims
                     + [k for k in objects[first:] if k not in claims])
            groups += [((k,), [(q, m) for q, m in keys if q[0] == k and len(q) > 1]) for k in order]
        for prefix, rows in groups:
            if not rows:
                continue
            if prefix:
                node = _resolve(schema["properties"][prefix[0]], schema)
                what = description(section, prefix, node) or ""
                lines += [f"### `{section}.{prefix[0]}`" + (f": {_cell(what)}" if what else ""), ""]
            lines += ["| key | type | what it does |", "|---|---|---|"]
            for path, node in rows:
                text = description(section, path, node)
                full = ".".join(path) if section == "config" else f"{section}.{'.'.join(path)}"
                if text is None:
                    missing.append(full)
                    text = "**undocumented**"
                shown = ".".join(path[len(prefix):])
                lines.append(f"| `{shown}` | {_cell(type_text(node, schema))} | {_cell(text)} |")
            lines.append("")
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    if missing:
        raise ValueError("config keys without a description (add one to the schema, or a note to "
                         f"ntkrepro.configdoc.NOTES): {missing}")
    return text.rstrip() + "\n"


def unused_notes(schema_dir: Path = SCHEMA_DIR) -> list[str]:
    """Notes that describe no key (a key renamed or removed, or now described in its schema)."""
    used = set()
    for section, _, schema in load_schemas(schema_dir):
        for path, node in schema_keys(schema):
            if not node.get("description"):
                used.add(note_for(section, path)[1])
    return sorted(set(NOTES) - used)


def readme_text(readme: Path = README, schema_dir: Path = SCHEMA_DIR) -> str:
    """``readme`` with everything below :data:`MARKER` regenerated."""
    text = readme.read_text()
    if MARKER not in text:
        raise ValueError(f"{readme} has no generated-part marker {MARKER!r}")
    return text.partition(MARKER)[0] + MARKER + "\n" + render(schema_dir)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.configdoc", description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="regenerate config/README.md below the marker")
    group.add_argument("--check", action="store_true", help="exit 1 if config/README.md is out of date")
    args = ap.parse_args(argv)
    stale = unused_notes()
    if stale:
        print(f"notes that describe no schema key (remove them from ntkrepro.configdoc.NOTES): {stale}",
              file=sys.stderr)
        return 1
    want = readme_text()
    if args.write:
        README.write_text(want)
        return 0
    if README.read_text() != want:
        print(f"{README} is out of date with workflow/schemas/: run python -m ntkrepro.configdoc --write",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
