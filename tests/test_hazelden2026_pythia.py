"""GPTNeoX / Pythia-410M construction offline and the G2 computation on a tiny config."""

import pytest
import torch

from ntkrepro.hazelden2026 import pythia


class Ctx:
    scale = "test"

    def __init__(self):
        self.used = []

    def progress(self, it, desc, total=None):
        return it

    def use_data(self, path):
        self.used.append(path)
        return path


def test_pythia_410m_config_has_the_published_parameter_count():
    from transformers import GPTNeoXForCausalLM

    cfg = pythia.make_config(pythia.PYTHIA_410M)
    assert cfg.num_hidden_layers == 24 and cfg.hidden_size == 1024 and cfg.num_attention_heads == 16
    assert cfg.intermediate_size == 4096 and cfg.vocab_size == 50304 and cfg.use_parallel_residual
    assert cfg.tie_word_embeddings is False and cfg.rope_parameters["partial_rotary_factor"] == 0.25
    with torch.device("meta"):
        model = GPTNeoXForCausalLM(cfg)
    assert sum(p.numel() for p in model.parameters()) == pythia.PYTHIA_410M_PARAMETERS == 405_334_016


def _params(**kw):
    p = dict(arch="tiny", tiny_arch=pythia.tiny_arch_defaults(), weights_path="", seq_len=8, n_tokens=4,
             n_units=3, seed=0)
    p.update(kw)
    return p


def test_g2_tiny_every_layer_every_site_and_label():
    res = pythia.run_g2(_params(), Ctx())
    assert res["weights"] == "random_init"
    assert len(res["sites"]) == 4 * 2
    assert {s["kind"] for s in res["sites"]} == {"attention.query_key_value", "attention.dense",
                                                  "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"}
    assert res["max_rel_error"] <= 1e-5
    assert min(s["control_rel_error"] for s in res["sites"]) > 1e-3
    again = pythia.run_g2(_params(), Ctx())
    assert [s["rel_error"] for s in again["sites"]] == [s["rel_error"] for s in res["sites"]]


def test_g2_loads_local_weights_and_labels_pretrained(tmp_path):
    model, label = pythia.build_model(pythia.tiny_arch_defaults(), None, 5)
    assert label == "random_init"
    path = tmp_path / "w.pt"
    torch.save(model.state_dict(), path)
    ctx = Ctx()
    res = pythia.run_g2(_params(weights_path=str(path)), ctx)
    assert res["weights"] == "pretrained" and ctx.used == [path]
    with pytest.raises(FileNotFoundError):
        pythia.run_g2(_params(weights_path=str(tmp_path / "missing.pt")), Ctx())
    bad = tmp_path / "bad.pt"
    torch.save({"nonsense": torch.zeros(1)}, bad)
    with pytest.raises(ValueError):
        pythia.run_g2(_params(weights_path=str(bad)), Ctx())


def test_benchmark_tiny_layer_same_numbers():
    from ntkrepro.hazelden2026 import benchmark

    p = dict(arch="tiny", tiny_arch=pythia.tiny_arch_defaults(), weights_path="", layer=1, seq_len=8, n_tokens=4,
             n_units=3, seed=0)
    res = benchmark.run_benchmark(p, Ctx())
    assert res["max_rel_error"] <= 1e-5 and len(res["rel_error_per_site"]) == 4
    assert res["forward_seconds"] > 0 and res["autodiff_seconds"] > 0
    with pytest.raises(ValueError):
        benchmark.run_benchmark({**p, "layer": 5}, Ctx())
