"""G3's primary test, the authors' planted-fixed-point comparison (ntkrepro.hazelden2026.planted): the
planting, the task, the rate RNN, the GeNTK's participation ratio and SGD, on tiny cases."""

import numpy as np
import pytest

from ntkrepro.hazelden2026 import planted as P
from ntkrepro.stats import participation_ratio


class Ctx:
    def progress(self, it, desc=None, total=None):
        return it


def test_a_planted_direction_is_a_fixed_point():
    rng = np.random.default_rng(0)
    w = P.init_params(12, 3, 3, 1.0, rng)["W"]
    vs = [rng.standard_normal(12) for _ in range(3)]
    for k in (1, 3):
        wp = P.plant_fixed_points(w, vs[:k])
        v = vs[k - 1]  # the last one planted is exact (earlier ones are moved by later projections)
        assert np.max(np.abs(wp @ np.tanh(v) - v)) < 1e-12
        assert np.max(np.abs(w @ np.tanh(v) - v)) > 0.1  # and was not one before
    assert np.array_equal(P.plant_fixed_points(w, []), w)


def test_the_matched_arm_has_the_planted_change_size_and_rank():
    rng = np.random.default_rng(1)
    base = P.init_params(10, 3, 3, 1.0, rng)
    vs = [rng.standard_normal(10) for _ in range(2)]
    planted = P.arm_params(base, "planted", vs, rng)
    matched = P.arm_params(base, "matched", vs, rng)
    d_planted, d_matched = planted["W"] - base["W"], matched["W"] - base["W"]
    assert np.linalg.norm(d_matched) == pytest.approx(np.linalg.norm(d_planted), rel=1e-12)
    assert np.linalg.matrix_rank(d_matched) == 2
    assert P.arm_params(base, "none", vs, rng)["W"] is base["W"]
    with pytest.raises(ValueError, match="arm"):
        P.arm_params(base, "other", vs, rng)


def test_memory_pro_layout():
    x, y = P.memory_pro(4, (2, 3, 2), 0.0)
    assert x.shape == y.shape == (4, 7, 3)
    assert np.all(x[:, :5, 0] == 1) and np.all(x[:, 5:, 0] == 0) and np.array_equal(y[..., 0], x[..., 0])
    angles = np.arange(4) * np.pi / 2
    np.testing.assert_allclose(x[:, 0, 1], np.cos(angles), atol=1e-7)
    assert np.all(x[:, 2:, 1:] == 0) and np.all(y[:, :5, 1:] == 0)
    np.testing.assert_allclose(y[:, 5:, 2], np.sin(angles)[:, None] * np.ones((1, 2)), atol=1e-7)
    xn, yn = P.memory_pro(3, (2, 3, 2), 0.5, np.random.default_rng(0))
    assert np.std(xn[:, 5:, 0]) > 0.1 and np.all(yn[:, 5:, 0] == 0)  # noise on the inputs only
    with pytest.raises(ValueError, match="periods"):
        P.memory_pro(2, (2, 0, 2), 0.0)


def test_the_rate_rnn_and_its_jacobian():
    rng = np.random.default_rng(2)
    p = P.init_params(5, 3, 3, 1.5, rng)
    x, _ = P.memory_pro(2, (2, 2, 2), 0.1, rng)
    dt = 0.7
    h = np.zeros((2, 5))
    ref = []
    for t in range(6):
        h = (1 - dt) * h + dt * (np.tanh(h) @ p["W"].T + x[:, t] @ p["U"].T)
        ref.append(h)
    np.testing.assert_allclose(P.hidden_states(p, x, dt), np.stack(ref, 1), rtol=1e-5, atol=1e-6)
    jac = P.gentk_jacobian(p, x, dt)
    assert jac.shape == (2 * 6 * 5, 5 * 5 + 5 * 3)
    eps = 1e-3  # central difference in one weight of W and one of U
    for name, (i, j), col in (("W", (1, 3), 1 * 5 + 3), ("U", (4, 0), 25 + 4 * 3 + 0)):
        hi, lo = ({**p, name: p[name] + e} for e in (_unit(p[name], i, j, eps), _unit(p[name], i, j, -eps)))
        fd = (P.hidden_states(hi, x, dt) - P.hidden_states(lo, x, dt)).reshape(-1) / (2 * eps)
        np.testing.assert_allclose(jac[:, col], fd, rtol=2e-2, atol=2e-3)
    lam = np.linalg.eigvalsh(jac.astype(np.float64) @ jac.T.astype(np.float64))
    assert P.participation_ratio_of_jacobian(jac) == pytest.approx(participation_ratio(lam), rel=1e-5)  # float32 Gram


def _unit(a, i, j, eps):
    e = np.zeros_like(a)
    e[i, j] = eps
    return e


def test_sgd_learns_and_replays_the_same_batches():
    rng = np.random.default_rng(3)
    p = P.init_params(8, 3, 3, 1.0, rng)
    x, y = P.memory_pro(16, (2, 2, 2), 0.1, rng)
    a = P.train_sgd(p, x, y, steps=60, lr=0.2, batch=8, dt=0.7, seed=5)
    b = P.train_sgd(p, x, y, steps=60, lr=0.2, batch=8, dt=0.7, seed=5)
    assert a.shape == (60,) and np.array_equal(a, b)
    assert a[-10:].mean() < 0.8 * a[:5].mean()
    with pytest.raises(ValueError, match="batch"):
        P.train_sgd(p, x, y, steps=2, lr=0.1, batch=17, dt=0.7, seed=0)


def test_run_planted_records_every_seed_and_arm():
    params = {"hidden": 6, "dt": 0.7, "periods": [2, 2, 2], "noise_std": 0.1, "n_fixed_points": 2, "g": 1.0,
              "n_train": 8, "batch": 4, "steps": 5, "lr": 0.05, "kernel_samples": 2, "n_seeds": 2, "seed": 0}
    out = P.run_planted(params, Ctx())
    assert [(r["seed"], r["arm"]) for r in out["runs"]] == [(s, a) for s in range(2) for a in P.ARMS]
    for r in out["runs"]:
        assert 1 <= r["pr"] <= r["pr_dim"] and len(r["loss"]) == 5 and not r["diverged"]
    by = {(r["seed"], r["arm"]): r for r in out["runs"]}
    assert by[(0, "planted")]["w_fro"] != by[(0, "none")]["w_fro"]


def test_the_chunked_participation_ratio_equals_the_whole_jacobian():
    """Hidden 256 cannot form J whole (6 GB): Theta_h accumulated over column chunks by forward mode gives the
    participation ratio of the whole-Jacobian path (a chunk size that does not divide the columns)."""
    rng = np.random.default_rng(4)
    p = P.arm_params(P.init_params(7, 3, 3, 1.0, rng), "planted", [rng.standard_normal(7)], rng)
    x, _ = P.memory_pro(2, (2, 3, 2), 0.0)
    whole = P.participation_ratio_of_jacobian(P.gentk_jacobian(p, x, 0.7))
    assert P.gentk_participation_ratio(p, x, 0.7) == whole               # small: the whole-Jacobian path
    chunked = P.gentk_participation_ratio(p, x, 0.7, max_jacobian_bytes=0, chunk=11)
    assert chunked == pytest.approx(whole, rel=1e-5)


def test_a_decisive_cell_is_that_arm_of_a_whole_run(tmp_path):
    """One (draw, arm) cell computed alone equals the same arm of run_planted; the cells assembled by
    aggregate_planted are run_planted's layout; a missing cell is refused."""
    import json

    params = {"hidden": 6, "dt": 0.7, "periods": [2, 2, 2], "noise_std": 0.1, "n_fixed_points": 2, "g": 1.0,
              "n_train": 8, "batch": 4, "steps": 5, "lr": 0.05, "kernel_samples": 1, "n_seeds": 2, "seed": 3,
              "arms": ["none", "planted", "redraw"]}
    whole = P.run_planted(params, Ctx())
    files = []
    for s in range(2):
        for a in range(3):
            cell = P.run_planted_cell({**params, "draw": s, "condition": a}, Ctx())
            assert cell["claim"] == "G3" and cell["cell"] == {"draw": s, "condition": a}
            f = tmp_path / f"draw{s}_condition{a}.json"
            f.write_text(json.dumps(cell))
            files.append(str(f))

    class DataCtx(Ctx):
        def use_data(self, path):
            return path

    agg = P.aggregate_planted({**params, "shard_files": files[::-1]}, DataCtx())
    assert agg == json.loads(json.dumps(whole))
    with pytest.raises(ValueError, match="do not match"):
        P.aggregate_planted({**params, "shard_files": files[1:]}, DataCtx())
    with pytest.raises(ValueError, match="outside"):
        P.run_planted_cell({**params, "draw": 2, "condition": 0}, Ctx())
