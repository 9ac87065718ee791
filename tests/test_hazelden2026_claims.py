"""Pre-registered criteria G1-G4 on synthetic numbers, in both directions."""

import copy

from ntkrepro.hazelden2026 import claims
from ntkrepro.ledger import Verdict, get_claim, make_entry

KINDS1 = ["embed", "q", "k", "v", "o", "mlp_in", "mlp_out", "readout"]
KINDS2 = sorted(claims.G2_KINDS)


def g1(err64=1e-17, err32=1e-8, kinds=KINDS1):
    sites = lambda e: [{"site": k, "kind": k, "rel_error": e} for k in kinds]  # noqa: E731
    return {"G1_kronecker_transformer": {
        "dtypes": {"float64": {"sites": sites(err64)}, "float32": {"sites": sites(err32)}},
        "params": dict(d_in=16, d_model=64, n_heads=1, d_mlp=128, n_layers=3, seq_len=50, batch=8, n_units=4, seed=0),
    }}


def test_g1_both_directions():
    assert claims.evaluate_g1(g1(), "paper").verdict is Verdict.REPRODUCED
    assert claims.evaluate_g1(g1(err64=1e-9), "paper").verdict is Verdict.NOT_REPRODUCED
    assert claims.evaluate_g1(g1(err32=2e-5), "paper").verdict is Verdict.NOT_REPRODUCED
    assert claims.evaluate_g1(g1(kinds=KINDS1[:-1]), "paper").verdict is Verdict.INCONCLUSIVE
    ev = claims.evaluate_g1(g1(), "smoke")
    assert any("4 output units" in s for s in ev.substitutes)


def g2(err=1e-7, n_layers=24, weights="random_init", drop=False):
    sites = [{"site": f"l{l}.{k}", "layer": l, "kind": k, "rel_error": err} for l in range(n_layers) for k in KINDS2]
    if drop:
        sites = sites[:-1]
    return {"G2_kronecker_pythia": {"sites": sites, "n_layers": n_layers, "weights": weights, "arch": "pythia-410m",
                                    "hidden_size": 1024, "params": {"n_tokens": 4, "seq_len": 16, "n_units": 4}}}


def test_g2_both_directions_and_weights_label():
    ev = claims.evaluate_g2(g2(), "default")
    assert ev.verdict is Verdict.REPRODUCED
    assert any("random-init" in s for s in ev.substitutes) and ev.measured["weights"] == "random_init"
    assert not any("random-init" in s for s in claims.evaluate_g2(g2(weights="pretrained"), "default").substitutes)
    assert claims.evaluate_g2(g2(err=3e-5), "default").verdict is Verdict.NOT_REPRODUCED
    assert claims.evaluate_g2(g2(drop=True), "default").verdict is Verdict.INCONCLUSIVE


def g3(er_space, er_time, loss_ratio, er_full, hidden=32, seq_len=40):
    runs = []
    for i, (m, g) in enumerate([("rnn", 0.5), ("rnn", 1.5), ("gru", 0.5), ("gru", 1.5)]):
        runs.append({"model": m, "gain": g, "er_space": er_space[i], "er_time": er_time[i], "er_full": er_full[i],
                     "loss_initial": 1.0, "loss_final": loss_ratio[i]})
    return {"G3_rnn_spectra": {"runs": runs, "hidden": hidden, "seq_len": seq_len}}


def test_g3_both_directions():
    good = g3(er_space=[4, 8, 3, 6], er_time=[5, 5, 5, 5], loss_ratio=[0.9, 0.1, 0.8, 0.2], er_full=[5, 20, 4, 15])
    assert claims.evaluate_g3(good, "default").verdict is Verdict.REPRODUCED
    not_low = g3(er_space=[30, 31, 30, 31], er_time=[35, 36, 35, 38], loss_ratio=[0.9, 0.1, 0.8, 0.2],
                 er_full=[5, 20, 4, 15])
    assert claims.evaluate_g3(not_low, "default").verdict is Verdict.NOT_REPRODUCED
    reversed_assoc = g3(er_space=[4, 8, 3, 6], er_time=[5, 5, 5, 5], loss_ratio=[0.1, 0.9, 0.2, 0.8],
                        er_full=[5, 20, 4, 15])
    assert claims.evaluate_g3(reversed_assoc, "default").verdict is Verdict.NOT_REPRODUCED
    no_plateau = g3(er_space=[4, 8, 3, 6], er_time=[5, 5, 5, 5], loss_ratio=[0.3, 0.1, 0.3, 0.2],
                    er_full=[5, 20, 4, 15])
    assert claims.evaluate_g3(no_plateau, "default").verdict is Verdict.INCONCLUSIVE


def g4(er_x, er_t, check=1e-15, seeds=2):
    rows = [{"seed": s, "k": k, "er_input": a, "er_gentk_time": b}
            for s in range(seeds) for k, a, b in zip(range(1, len(er_x) + 1), er_x, er_t)]
    return {"G4_transformer_rank": {"rows": rows, "input_dims": list(range(1, len(er_x) + 1)),
                                    "core_vs_autodiff_rel_error": check}}


def test_g4_both_directions():
    assert claims.evaluate_g4(g4([1, 2, 4, 8, 16], [1.5, 2.5, 4, 9, 17]), "default").verdict is Verdict.REPRODUCED
    assert claims.evaluate_g4(g4([1, 2, 4, 8, 16], [5, 7, 9, 12, 30]), "default").verdict is Verdict.NOT_REPRODUCED
    # bounded but no trend -> inconclusive
    assert claims.evaluate_g4(g4([1, 2, 4, 8, 16], [2, 2, 2, 2, 2]), "default").verdict is Verdict.INCONCLUSIVE
    # an invalid core-vs-autodiff check never yields a verdict either way
    assert claims.evaluate_g4(g4([1, 2, 4, 8, 16], [5, 7, 9, 12, 30], check=1e-3), "default").verdict \
        is Verdict.INCONCLUSIVE


def test_ledger_entry_through_registry():
    spec = get_claim("G1")
    assert spec.paper == "hazelden2026" and "1e-10" in spec.criterion
    res = copy.deepcopy(g1())
    res["G1_kronecker_transformer"]["provenance"] = {"x": 1}
    entry = make_entry("G1", res, scale="smoke")
    assert entry["verdict"] == "reproduced" and entry["measured"]["max_rel_error_float64"] == 1e-17
