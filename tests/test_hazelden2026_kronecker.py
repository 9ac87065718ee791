"""Math of the Kronecker core, the GeNTK operators and effective ranks (Hazelden et al. 2026)."""

import numpy as np
import pytest
import torch
from torch import nn

from ntkrepro.hazelden2026 import kronecker as kr
from ntkrepro.hazelden2026 import rnn, transformer


class Ctx:
    scale = "test"

    def progress(self, it, desc, total=None):
        return it

    def use_data(self, path):
        return path


def _linear(n_in=5, n_out=4, seed=0):
    torch.manual_seed(seed)
    return nn.Linear(n_in, n_out).double()


def test_core_of_linear_matches_jacrev_and_analytic():
    """([V,1][V,1]^T) (x) I equals J J^T with J from torch.func.jacrev of the functional layer."""
    lin = _linear()
    v = torch.randn(7, 5, dtype=torch.float64)
    rows, units = torch.arange(7), list(range(4))
    k_fwd = kr.forward_core(v, rows, units, include_bias=True)

    def f(w, b):
        return torch.func.functional_call(lin, {"weight": w, "bias": b}, (v,))

    jw, jb = torch.func.jacrev(f, argnums=(0, 1))(lin.weight, lin.bias)
    j = torch.cat([jw.reshape(28, -1), jb.reshape(28, -1)], 1)
    assert torch.allclose(k_fwd, j @ j.T, rtol=0, atol=1e-12)
    # analytic entry: (v_a . v_b + 1) delta_ij
    assert k_fwd[1 * 4 + 2, 3 * 4 + 2] == pytest.approx(float(v[1] @ v[3] + 1))
    assert k_fwd[1 * 4 + 2, 3 * 4 + 1] == 0


def test_compare_sites_detects_wrong_core():
    """The comparison is not vacuous: the row-permuted control core is far from the autodiff core."""
    lin = _linear()
    x = torch.randn(3, 6, 5, dtype=torch.float64)
    res = kr.compare_sites(lin, lambda m: m(x), {"lin": lin}, units=3)
    assert res["lin"]["rel_error"] < 1e-12
    assert res["lin"]["control_rel_error"] > 1e-2
    # G1/G2's near-miss control: the core without the bias's constant-1 column misses exactly 1 1^T (x) I
    with torch.no_grad(), kr.record_sites({"lin": lin}) as rec0:
        lin(x)
    v = rec0["lin"].v
    ones = torch.ones(v.shape[0], v.shape[0], dtype=v.dtype)
    expect = float(torch.linalg.norm(ones) / torch.linalg.norm(v @ v.T + ones))
    assert res["lin"]["nobias_rel_error"] == pytest.approx(expect, rel=1e-10)
    nob = kr.compare_sites(lin, lambda m: m(x), {"lin": lin}, units=3, include_bias=False)
    assert nob["lin"]["nobias_rel_error"] is None and nob["lin"]["rel_error"] < 1e-12
    k_ad = None
    with torch.enable_grad(), kr.record_sites({"lin": lin}, detach_inputs=True, keep_outputs=True) as rec:
        lin(x)
    k_ad = kr.autodiff_core(rec["lin"].y, lin, torch.arange(18), [0, 1, 2], include_bias=True)
    wrong = kr.forward_core(rec["lin"].v * 1.001, torch.arange(18), [0, 1, 2], include_bias=True)
    assert kr.relative_error(wrong, k_ad) > 1e-4


def test_detach_gives_partial_derivative_for_reused_weight():
    """A weight used recurrently: detached inputs give the Kronecker core; the total derivative does not."""
    lin = _linear(4, 4)
    x0 = torch.randn(2, 4, dtype=torch.float64)

    def forward(m):
        h = x0
        for _ in range(3):
            h = torch.tanh(m(h))
        return h

    res = kr.compare_sites(lin, forward, {"lin": lin}, include_bias=True)
    assert res["lin"]["rel_error"] < 1e-12
    # total derivative through the recurrence (inputs not detached) is a different operator
    with torch.enable_grad(), kr.record_sites({"lin": lin}, keep_outputs=True) as rec:
        forward(lin)
    k_total = kr.autodiff_core(rec["lin"].y, lin, torch.arange(6), list(range(4)), include_bias=True)
    k_fwd = kr.forward_core(rec["lin"].v, torch.arange(6), list(range(4)), include_bias=True)
    assert kr.relative_error(k_fwd, k_total) > 1e-3


def test_record_sites_rejects_non_linear():
    with pytest.raises(TypeError):
        with kr.record_sites({"c": nn.Conv1d(1, 1, 1)}):
            pass
    with pytest.raises(ValueError):
        kr.linear_sites(nn.Sequential(nn.ReLU()))


def test_transformer_all_sites_fp64_and_fp32():
    p = dict(d_in=6, d_model=8, n_heads=2, d_mlp=16, n_layers=2, seq_len=7, batch=2, n_units=3, seed=1)
    res = transformer.run_g1(p, Ctx())
    kinds = {s["kind"] for s in res["dtypes"]["float64"]["sites"]}
    assert kinds == {"embed", "q", "k", "v", "o", "mlp_in", "mlp_out", "readout"}
    assert res["dtypes"]["float64"]["max_rel_error"] <= 1e-12
    assert res["dtypes"]["float32"]["max_rel_error"] <= 1e-5
    assert min(s["control_rel_error"] for s in res["dtypes"]["float64"]["sites"]) > 1e-3
    assert res["dtypes"] == transformer.run_g1(p, Ctx())["dtypes"]  # deterministic


def test_gentk_from_cores_equals_autodiff():
    """P K P* assembled from forward-pass cores equals J J^T over all parameters (fp64)."""
    p = dict(d_in=5, d_model=8, n_heads=1, d_mlp=12, n_layers=2, d_out=2)
    model = transformer.build(p, torch.float64, 0)
    x = torch.randn(2, 6, 5, dtype=torch.float64)
    th = transformer.gentk_outputs(model, x)
    ref = transformer.gentk_outputs_autodiff(model, x)
    assert th.shape == (24, 24)
    assert torch.linalg.norm(th - ref) / torch.linalg.norm(ref) < 1e-12


def test_effective_rank_analytic():
    assert kr.effective_rank(np.ones(7)) == pytest.approx(7)
    assert kr.effective_rank(np.array([3.0, 0, 0])) == pytest.approx(1)
    assert kr.effective_rank(np.array([1.0, 1.0, -1e-15])) == pytest.approx(2)
    with pytest.raises(ValueError):
        kr.effective_rank(np.zeros(3))


def test_rnn_operators_match_autodiff_and_kernel_is_dF_dF():
    """Theta_h = D P K P* D equals J J^T; K equals D_theta F D_theta F^* at fixed z (fp64)."""
    p = rnn.init_params("rnn", 3, 5, 3, 1.3, 0)
    rng = np.random.default_rng(1)
    x, _ = rnn.flip_flop(2, 6, 3, 0.3, rng)
    x = torch.from_numpy(x)
    ops = rnn.rnn_gentk_operators(p, x)
    j = rnn.gentk_autodiff("rnn", p, x)
    ref = j @ j.T
    assert torch.linalg.norm(ops["theta_h"] - ref) / torch.linalg.norm(ref) < 1e-12
    # K by autodiff of the constraint F(z, theta)_t = z_t - W tanh(z_{t-1}) - U x_t - b at fixed z
    _, z = rnn.hidden_states("rnn", p, x, return_z=True)
    zprev = torch.cat([torch.zeros(2, 1, 5, dtype=torch.float64), z[:, :-1]], 1)

    def F(w, u, b):
        return (z - torch.tanh(zprev) @ w.T - x @ u.T - b).reshape(-1)

    jw, ju, jb = torch.func.jacrev(F, argnums=(0, 1, 2))(p["W"], p["U"], p["b"])
    jf = torch.cat([jw.reshape(60, -1), ju.reshape(60, -1), jb.reshape(60, -1)], 1)
    assert torch.allclose(ops["K"], jf @ jf.T, atol=1e-12)


def test_gru_gentk_is_psd_and_rank_bounded():
    p = rnn.init_params("gru", 2, 4, 2, 1.0, 0)
    x, _ = rnn.flip_flop(2, 5, 2, 0.4, np.random.default_rng(0))
    j = rnn.gentk_autodiff("gru", p, torch.from_numpy(x))
    assert j.shape == (2 * 5 * 4, 3 * (16 + 8 + 8))
    spec = rnn.spectra(j, 2, 5, 4)
    assert 1 <= spec["er_space"] <= 4 and 1 <= spec["er_time"] <= 10 and 1 <= spec["er_full"] <= 40
    for part in ("full", "space", "time"):  # participation ratio <= entropy rank <= dimension
        assert 1 <= spec[f"pr_{part}"] <= spec[f"er_{part}"] + 1e-9 <= spec[f"dim_{part}"] + 1e-9


def test_partial_averages_are_kpflows_constant_vector_averages():
    """Theta_space[i,j] = mean_{a,b} Theta[(a,i),(b,j)], Theta_time[a,b] = mean_{i,j} Theta[(a,i),(b,j)] (a = (s,t))."""
    rng = np.random.default_rng(0)
    s, t, h = 2, 3, 4
    j = torch.from_numpy(rng.standard_normal((s * t * h, 7)))
    th = (j @ j.T).numpy().reshape(s * t, h, s * t, h)
    sp, tm = rnn.partial_averages(j, s, t, h)
    assert np.allclose(sp, th.sum((0, 2)) / (s * t)) and np.allclose(tm, th.sum((1, 3)) / h)
    # as an operator: applying Theta to a vector constant over (sample, time) and averaging over them
    q = rng.standard_normal(h)
    big = (j @ j.T).numpy() @ np.tile(q, s * t)
    assert np.allclose(big.reshape(s * t, h).mean(0), sp @ q)


def test_flip_flop_targets():
    rng = np.random.default_rng(3)
    x, y = rnn.flip_flop(4, 30, 2, 0.2, rng)
    for s in range(4):
        for c in range(2):
            last = 0.0
            for t in range(30):
                if x[s, t, c] != 0:
                    last = x[s, t, c]
                assert y[s, t, c] == last
    with pytest.raises(ValueError):
        rnn.flip_flop(1, 5, 1, 1.5, rng)


def test_g3_runs_and_is_deterministic():
    p = dict(models=["rnn", "gru"], init_scales=[0.01, 1.5], n_seeds=2, hidden=6, seq_len=8, n_bits=2, p_pulse=0.2,
             kernel_samples=2, train_samples=8, steps=5, lr=0.1, seed=0)
    a, b = rnn.run_g3(p, Ctx()), rnn.run_g3(p, Ctx())
    assert a == b
    assert a["rnn_operator_vs_autodiff_max_rel_error"] < 1e-12
    assert len(a["runs"]) == 8 and all(len(u["loss"]) == 6 for u in a["runs"])
    u = a["runs"][0]
    assert u["dim_full"] == 2 * 8 * 6 and u["dim_time"] == 16 and u["loss_ratio"] == u["loss_final"] / u["loss_initial"]
    # the seeds differ (own data and weights); the scales of one seed share the weight draw
    r0 = [v for v in a["runs"] if v["seed"] == 0 and v["model"] == "rnn"]
    r1 = [v for v in a["runs"] if v["seed"] == 1 and v["model"] == "rnn"]
    assert r0[0]["loss_initial"] != r1[0]["loss_initial"]


def test_init_scale_multiplies_recurrent_weights_only():
    small = rnn.init_params("gru", 3, 5, 3, 0.01, 7)
    big = rnn.init_params("gru", 3, 5, 3, 1.0, 7)
    for k in small:
        ratio = 0.01 if k.startswith("W_h") else 1.0
        assert torch.allclose(small[k], ratio * big[k])


def test_g4_low_dim_inputs_and_run():
    x = transformer.low_dim_inputs(2, 3, 20, 6, np.random.default_rng(0))
    assert x.shape == (3, 20, 6) and np.linalg.matrix_rank(x.reshape(-1, 6)) == 2  # A shared by the sequences
    with pytest.raises(ValueError):
        transformer.low_dim_inputs(7, 1, 20, 6, np.random.default_rng(0))
    p = dict(d_in=6, d_model=8, n_heads=1, d_mlp=8, mlp_layers=3, seq_len=10, batch=2, d_out=1,
             input_dims=[1, 3, 6], n_seeds=1, seed=0)
    res = transformer.run_g4(p, Ctx())
    assert res["state"] == "internal" and res["arch"] == "site_attention_mlp"
    assert all(res[f"{k}_core_vs_autodiff_rel_error"] < 1e-12 for k in ("state", "post_gelu", "output"))
    assert [r["k"] for r in res["rows"]] == [1, 3, 6]
    assert res["rows"][0]["pr_input"] == pytest.approx(1.0)       # rank-1 inputs: one direction
    assert all(1 <= r["pr_time"] <= 20 for r in res["rows"])


@pytest.mark.parametrize("layernorm", [True, False])
def test_internal_state_gentk_from_cores_equals_autodiff(layernorm):
    """GeNTK of u = mean of all weight-site variables (kpflow's partial average), from cores vs J J^T."""
    p = dict(d_in=5, d_model=8, n_heads=2, d_mlp=12, n_layers=2, d_out=2, layernorm=layernorm)
    model = transformer.build(p, torch.float64, 0)
    x = torch.randn(3, 6, 5, dtype=torch.float64)
    th = transformer.gentk_states(model, x)
    assert th["internal"].shape == (18, 18) and th["output"].shape == (36, 36)
    for state in transformer.STATES:
        ref = transformer.gentk_states_autodiff(model, x, state)
        assert torch.linalg.norm(th[state] - ref) / torch.linalg.norm(ref) < 1e-12
    assert "embed" not in transformer.internal_sites(model) and "readout" in transformer.internal_sites(model)
    assert isinstance(model.blocks[0].ln1, torch.nn.LayerNorm if layernorm else torch.nn.Identity)


def test_input_effdim_analytic():
    rng = np.random.default_rng(0)
    iso = rng.standard_normal((200, 50, 4))                        # isotropic in 4 dims
    pr, er = transformer.input_effdim(iso)
    assert pr == pytest.approx(4, rel=0.02) and er == pytest.approx(4, rel=0.02)
    aniso = iso * np.array([1.0, 1.0, 0.0, 0.0])                    # exactly two directions, equal variance
    assert transformer.input_effdim(aniso)[0] == pytest.approx(2, rel=0.02)
    const = np.ones((3, 5, 4)) + rng.standard_normal((3, 5, 1)) * np.array([1.0, 0, 0, 0])  # mean removed
    assert transformer.input_effdim(const)[0] == pytest.approx(1)


def test_fourier_inputs_rank_and_g4_family():
    x = transformer.fourier_inputs(3, 2, 40, 10, np.random.default_rng(0))
    assert x.shape == (2, 40, 10) and np.linalg.matrix_rank(x.reshape(-1, 10)) == 6
    with pytest.raises(ValueError):
        transformer.fourier_inputs(6, 1, 40, 10, np.random.default_rng(0))
    p = dict(d_in=6, d_model=8, n_heads=1, d_mlp=8, mlp_layers=3, seq_len=10, batch=1, d_out=1,
             input_dims=[1, 3, 6], fourier_modes=[1, 2], n_seeds=1, seed=0)
    res = transformer.run_g4(p, Ctx())
    assert [r["modes"] for r in res["fourier_rows"]] == [1, 2]


def test_site_attention_mlp_is_the_examples_architecture():
    """kpflow's transformer example (G4 since criterion v4): the weight-site variables of the parameters are 3 x h0
    (q, k, v), the per-head outputs (o) and every MLP hidden (GELU(W_O a), GELU(h1), and h2 into the readout);
    only the input projection has a bias; no mask (a later token changes an earlier output); the GeNTKs of every
    state assembled from the cores equal plain autodiff J J^T."""
    p = dict(d_in=5, d_model=8, n_heads=2, d_mlp=12, mlp_layers=3, d_out=2)
    model = transformer.build_g4(p, torch.float64, 0)
    sites = kr.linear_sites(model)
    assert list(transformer.internal_sites(model)) == ["q", "k", "v", "o", "mlp.0", "mlp.1", "readout"]
    assert [n for n, m in sites.items() if m.bias is not None] == ["embed"]
    assert transformer.mlp_hidden_sites(model) == ["mlp.0", "mlp.1"]
    x = torch.randn(3, 6, 5, dtype=torch.float64)
    with torch.no_grad(), kr.record_sites(sites) as rec:
        model(x)
    h0 = model.embed(x)
    for n in ("q", "k", "v"):
        assert torch.allclose(rec[n].v, h0.reshape(-1, 8))
    assert [rec[n].v.shape[-1] for n in transformer.internal_sites(model)] == [8, 8, 8, 8, 8, 12, 12]
    x2 = x.clone()
    x2[:, -1] += 1.0
    with torch.no_grad():
        assert not torch.allclose(model(x)[:, 0], model(x2)[:, 0])     # no causal mask
    th = transformer.gentk_states(model, x)
    for state in transformer.STATES:
        ref = transformer.gentk_states_autodiff(model, x, state)
        assert torch.linalg.norm(th[state] - ref) / torch.linalg.norm(ref) < 1e-12


def test_time_code_is_two_directions_of_the_datas_strength():
    rng = np.random.default_rng(0)
    x = transformer.low_dim_inputs(2, 3, 40, 6, rng)
    c = transformer.time_code(x, seed=1)
    assert c.shape == (40, 6) and np.linalg.matrix_rank(c) == 2 and np.allclose(c.mean(0), 0)
    rows = x.reshape(-1, 6) - x.reshape(-1, 6).mean(0)
    lam1 = np.linalg.eigvalsh(rows.T @ rows / rows.shape[0])[-1]
    lam_c = np.linalg.eigvalsh(c.T @ c / 40)[-2:]                    # the code's variance per direction
    assert np.allclose(lam_c, lam1)
    with pytest.raises(ValueError):
        transformer.time_code(x, seed=1, n_dirs=3)


def test_g4_time_code_control_raises_the_judged_state_above_the_bound():
    """Issue 28's near miss: two extra temporal directions in the input lift the temporal rank of the example's state
    over 1.25 PR_x + 1 at small k (control rejected), while the real run stays under it; the control's GeNTK is
    checked against autodiff like the real one; the code is a buffer, the weights are the real model's."""
    from ntkrepro.ledger import NOT_A_CLAIM, evaluate_control, get_claim, make_evaluation
    p = dict(d_in=6, d_model=8, n_heads=1, d_mlp=16, mlp_layers=3, seq_len=10, batch=2, d_out=1,
             input_dims=[1, 2, 4], n_seeds=5, seed=0)
    r = transformer.run_g4(p, Ctx())
    ctl = r["controls"]["time_code"]
    assert ctl["state_core_vs_autodiff_rel_error"] < 1e-12 and r["state_core_vs_autodiff_rel_error"] < 1e-12
    k1 = [(u["pr_time"], c["pr_time"]) for u, c in zip(r["rows"], ctl["rows"]) if u["k"] == 1]
    # a near miss: seed by seed it can fall under the bound at this tiny size; the seed mean is above it
    assert np.mean([a for a, _ in k1]) < 2.25 < np.mean([c for _, c in k1])
    assert all(c > real + 0.5 for real, c in k1)
    res = {"G4_transformer_rank": {**r, "params": p, "provenance": {}}}
    spec = get_claim("G4")
    c = evaluate_control(spec, spec.controls[0], res, "smoke")       # the criterion function on the control
    assert c["verdict"] != "reproduced" and c["parts"]["a_bound"] != "holds"
    assert make_evaluation("G4", res, scale="smoke")["verdict"] == NOT_A_CLAIM   # rule 9: reported, no verdict
    m0 = transformer.build_g4(p, torch.float64, 3)
    m1 = transformer.build_g4(p, torch.float64, 3)
    m1.code = torch.from_numpy(transformer.time_code(np.ones((1, 10, 6)) + np.arange(6), 1))
    assert all(torch.equal(a, b) for a, b in zip(m0.parameters(), m1.parameters()))
    assert len(list(m0.parameters())) == len(list(m1.parameters()))
