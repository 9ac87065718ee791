"""ntkrepro.hron2020.benchmark: pair counts of the kernel rules, a tiny end-to-end paper-scale plan, and
the fast_kernels_benchmark at smoke size (issue 22 item 7: it crashed on an empty per-layer profile)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ntkrepro.hron2020 import benchmark as plan
from ntkrepro.kernels._src.bench import block_pairs
from ntkrepro.kernels.blocks import block_grid
from ntkrepro.run import RunContext


@pytest.mark.parametrize("n1,n2,b", [(7, None, 3), (7, 5, 3), (10, None, 10), (4, 9, 2)])
def test_block_pairs_counts_the_computed_blocks(n1, n2, b):
    sym = n2 is None
    seen = np.zeros((n1, n1 if sym else n2), int)
    for i, j in block_grid(n1, seen.shape[1], b, sym):
        seen[i * b:(i + 1) * b, j * b:(j + 1) * b] += 1
    assert block_pairs(n1, n2, b) == seen.sum()
    if sym:
        assert seen.sum() < n1 * n1 or n1 <= b


def test_tiny_plan_end_to_end(tmp_path):
    h4 = {"image_size": 4, "n_train": 20, "n_val": 10, "n_test": 10, "families": ["gap", "struct"], "depths": [1],
          "final_depth": {"struct": 2}, "block_size": 10, "dtype": "float32", "n_shards": 3,
          "arch": {"width": 8, "W_std": 1.4142, "b_std": 0.05, "lap_window": 2, "attention_mechanism": "IDENTITY",
                   "W_qk_std": 1.0, "pos_emb_length": 1.0, "W_pos_emb_std": 1.0, "n_heads": 1}}
    h6 = {"seq_len": 12, "n_train": 8, "n_valid": 4, "n_test": 4, "mask_constant": 100.0, "filter_size": 3,
          "W_pos_emb_std": 1.0, "fcn_depths": [1], "cnn_depths": [1], "attention_layers": [1], "block_size": 4,
          "dtype": "float32", "final": {"n_train": 8, "n_test": 8}}
    md = tmp_path / "plan.md"
    out = plan.run_paper_scale_plan({"h4": h4, "h6": h6, "n": 2, "repeats": 1},
                                    RunContext(scale="paper", outputs={"markdown": str(md)}))
    json.dumps(out)
    # H4: 2 families x depths {1, 2}; pairs of the five kernels: 20x20 sym (b=10: 3 blocks), 10x20, 10x10 sym,
    # 10x20, 10x10
    h4_rows = [r for r in out["rows"] if r["rule"].startswith("H4")]
    assert {(r["family"], r["depth"]) for r in h4_rows} == {("gap", 1), ("gap", 2), ("struct", 1), ("struct", 2)}
    assert all(r["pairs"] == 300 + 200 + 100 + 200 + 100 for r in h4_rows)
    assert out["summary"]["H4"]["slurm_jobs"] == 4 and out["summary"]["H6"]["slurm_jobs"] == 1
    h6_final = [r for r in out["rows"] if "final" in r["rule"]]
    assert {r["family"] for r in h6_final} == {"gap", "gap_fcn", "cnn_gap", "struct"}
    for r in out["rows"]:
        assert r["cpu_hours"] > 0 and r["gpu_hours"] > 0 and r["flops"] > 0
    assert "| H4 | 4 |" in md.read_text()


def test_fast_kernels_benchmark_runs_at_smoke_size():
    """Every case of the smoke scale (S = 16 and L = 16: models that run as one XLA computation,
    whose per-layer profile used to be empty) through the rule's function."""
    import yaml
    from pathlib import Path

    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/smoke.yaml").read_text())["hron2020"]
    params = {"h4_arch": cfg["H4"]["arch"],
              "h6": {k: cfg["H6"][k] for k in ("filter_size", "W_pos_emb_std", "mask_constant")},
              "repeats": 1, "matmul_size": 64}
    out = plan.run_benchmark(params, RunContext(scale="smoke"))
    json.dumps(out)
    assert [c["case"] for c in out["cases"]] == ["cifar struct depth 1 S=16", "imdb struct depth 1 L=16"]
    for c in out["cases"]:
        assert c["fast"]["layers"], c["case"]  # a per-layer profile even where the model runs fused
        assert c["fast"]["memory_bytes"] > 0
        assert max(c["max_rel_diff_fast_vs_nt"].values()) <= 1e-5
        assert "attention" in c and c["attention"]["flops_per_second"] > 0
