import numpy as np
import pytest

from ntkrepro.stats import Interval, bootstrap_ci, bootstrap_slope, linear_fit, powerlaw_fit


def test_linear_fit_interval_has_nominal_coverage():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 10, 20)
    hits = 0
    for _ in range(400):
        slope, _ = linear_fit(x, 2.0 - 0.5 * x + 0.1 * rng.standard_normal(20))
        hits += slope.contains(-0.5)
        assert slope.high - slope.low < 0.05
    assert 0.91 <= hits / 400 <= 0.99


def test_powerlaw_fit_exact():
    x = np.array([8, 16, 32, 64, 128.0])
    slope, _ = powerlaw_fit(x, 3.0 * x**-0.5 * (1 + 1e-3 * np.arange(5)))
    assert abs(slope.value + 0.5) < 1e-2


def test_powerlaw_fit_rejects_nonpositive():
    with pytest.raises(ValueError):
        powerlaw_fit([1, 2, 3], [1, 0, 2])


def test_bootstrap_ci_is_deterministic_and_covers_mean():
    x = np.random.default_rng(1).normal(3.0, 1.0, 2000)
    a = bootstrap_ci(x, n_boot=300, seed=5)
    b = bootstrap_ci(x, n_boot=300, seed=5)
    assert a == b and a.contains(3.0) and a.low < a.value < a.high


def test_bootstrap_slope_over_replicates():
    x = np.array([8, 16, 32, 64.0])
    rng = np.random.default_rng(2)
    y = (x**-0.5)[:, None] * np.exp(0.05 * rng.standard_normal((4, 10)))
    s = bootstrap_slope(x, y, n_boot=300)
    assert s.contains(-0.5)


def test_interval_roundtrip_and_predicates():
    iv = Interval(1.0, 0.5, 1.5, 0.95, "m")
    assert Interval.from_dict(iv.as_dict()) == iv
    assert iv.above(0.4) and iv.below(1.6) and not iv.contains(2.0)
