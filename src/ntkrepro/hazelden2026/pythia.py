r"""Claim G2: the Kronecker-core theorem on Pythia-410M (``transformers``' ``GPTNeoXForCausalLM``).

The model is built offline from the exact Pythia-410M configuration (24 layers, hidden 1024,
16 heads, FFN 4096, rotary fraction 0.25, parallel residual, vocab 50304, untied embeddings,
GELU, LayerNorm eps 1e-5: 405,334,016 parameters). Pretrained weights are loaded only from a
local file named in the config (``weights_path``: a ``.safetensors`` file or a ``torch.save``-d
state dict, read with ``weights_only=True``); otherwise the architecture is randomly initialised
with ``transformers``' own initialiser and every output says so (the theorem is algebraic, so it
must hold for any weights). Nothing is fetched from the network.

For every weight site of every layer -- ``attention.query_key_value``, ``attention.dense``,
``mlp.dense_h_to_4h``, ``mlp.dense_4h_to_h`` -- the relative error between the forward-pass core
:math:`([V,1][V,1]^\top)\otimes I` and the autodiff core :math:`J J^\top` is computed on a block of
``n_tokens`` token positions x ``n_units`` output units of a short random token sequence
(:func:`ntkrepro.hazelden2026.kronecker.compare_sites`); all layers are kept, only tokens and
units are sub-selected.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch

from ntkrepro.hazelden2026 import kronecker as kr

#: The Pythia-410M architecture (EleutherAI/pythia-410m config.json), as GPTNeoXConfig kwargs.
PYTHIA_410M = dict(vocab_size=50304, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                   intermediate_size=4096, rotary_pct=0.25, rotary_emb_base=10000, max_position_embeddings=2048,
                   use_parallel_residual=True, tie_word_embeddings=False, layer_norm_eps=1e-5, hidden_act="gelu",
                   initializer_range=0.02, bos_token_id=0, eos_token_id=0, attention_bias=True)
PYTHIA_410M_PARAMETERS = 405_334_016

SITE_PATTERN = r"layers\.\d+\.(attention\.query_key_value|attention\.dense|mlp\.dense_h_to_4h|mlp\.dense_4h_to_h)$"


def make_config(arch: dict[str, Any]):
    """``GPTNeoXConfig`` from Pythia-style keys (``rotary_pct`` -> ``rope_parameters``), offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import GPTNeoXConfig

    arch = dict(arch)
    rope = {"partial_rotary_factor": float(arch.pop("rotary_pct")),
            "rope_theta": float(arch.pop("rotary_emb_base", 10000)), "rope_type": "default"}
    return GPTNeoXConfig(rope_parameters=rope, **arch)


def build_model(arch: dict[str, Any], weights_path: str | None, seed: int, ctx=None):
    """``GPTNeoXForCausalLM`` in fp32, eval mode, eager attention; returns (model, weights label)."""
    from transformers import GPTNeoXForCausalLM

    cfg = make_config(arch)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = GPTNeoXForCausalLM(cfg).to(torch.float32).eval()
    if weights_path:
        path = Path(weights_path)
        if not path.is_file():
            raise FileNotFoundError(f"weights_path {path} does not exist (set it to '' for random init)")
        if ctx is not None:
            ctx.use_data(path)
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
        missing, unexpected = model.load_state_dict(state, strict=False)
        missing = [m for m in missing if not m.endswith(("rotary_emb.inv_freq", "attention.bias", "masked_bias"))]
        if missing or unexpected:
            raise ValueError(f"weights do not match the architecture: missing {missing[:5]}, "
                             f"unexpected {unexpected[:5]}")
        return model, "pretrained"
    return model, "random_init"


def run_g2(params: dict[str, Any], ctx) -> dict[str, Any]:
    """G2: per-layer, per-site relative error of forward-pass vs autodiff Kronecker core on GPTNeoX."""
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    arch = dict(PYTHIA_410M) if params["arch"] == "pythia-410m" else dict(params["tiny_arch"])
    t0 = time.perf_counter()
    model, weights = build_model(arch, params.get("weights_path") or None, params["seed"], ctx)
    t_build = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    if params["arch"] == "pythia-410m" and n_params != PYTHIA_410M_PARAMETERS:
        raise RuntimeError(f"Pythia-410M config gives {n_params} parameters, expected {PYTHIA_410M_PARAMETERS}")
    for p in model.parameters():  # only the site weights need gradients
        p.requires_grad_(False)
    sites = kr.linear_sites(model, SITE_PATTERN)
    for mod in sites.values():
        mod.weight.requires_grad_(True)
        mod.bias.requires_grad_(True)
    g = torch.Generator().manual_seed(params["seed"] + 1)
    ids = torch.randint(0, arch["vocab_size"], (1, params["seq_len"]), generator=g)
    rows = torch.tensor(kr.spread(params["seq_len"], params["n_tokens"]), dtype=torch.long)

    def forward(m):
        return m(input_ids=ids, use_cache=False).logits

    t1 = time.perf_counter()
    errs = kr.compare_sites(model, forward, sites, rows=rows, units=params["n_units"], include_bias=True,
                            progress=lambda it, desc: ctx.progress(it, desc=f"G2 {desc}"))
    t_cmp = time.perf_counter() - t1
    out_sites = []
    for name, r in errs.items():
        parts = name.split(".")
        layer = int(parts[parts.index("layers") + 1])
        out_sites.append({"site": name, "layer": layer, "kind": ".".join(parts[parts.index("layers") + 2:]), **r})
    return {
        "arch": params["arch"],
        "weights": weights,
        "n_parameters": n_params,
        "n_layers": int(arch["num_hidden_layers"]),
        "hidden_size": int(arch["hidden_size"]),
        "dtype": "float32",
        "token_positions": rows.tolist(),
        "sites": out_sites,
        "max_rel_error": max(s["rel_error"] for s in out_sites),
        "seconds_build": round(t_build, 2),
        "seconds_compare": round(t_cmp, 2),
    }


def tiny_arch_defaults() -> dict[str, Any]:
    """A tiny GPTNeoX of the same family (for smoke runs and tests)."""
    return dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                rotary_pct=0.25, rotary_emb_base=10000, max_position_embeddings=128, use_parallel_residual=True,
                tie_word_embeddings=False, layer_norm_eps=1e-5, hidden_act="gelu", initializer_range=0.02,
                bos_token_id=0, eos_token_id=0, attention_bias=True)

