"""Which H4 regression path is faster on this machine: the host's scipy (``regression_backend:
scipy``, the CPU default) or the batched JAX one (``jax``, the device path)? (issue 30, item 1)

Times, for one final model of H4 at config/default.yaml's sizes (n_fit = n_train + n_val, n_test),
what ``final_test`` does with its kernels -- the fit, the two-way bootstrap (n_boot refits) and the
learning curve -- and one selection model's grid + validation refit, with each backend, on a
synthetic PSD kernel (the times do not depend on the values); first call excluded (compiles), then
the median of 3; wall and CPU time. Then scales to a whole run_h4 (both runs) by the counts of
``ntkrepro.hron2020.device_cost.count_h4``. ::

    PYTHONPATH=src .venv/bin/python workflow/scripts/compare_regression_backends.py [--config config/default.yaml]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def main() -> None:
    import yaml

    from ntkrepro.hron2020 import device_cost
    from ntkrepro.hron2020.device_calibration import synthetic_psd
    from ntkrepro.hron2020.cifar10 import N_CLASSES, h4_resample_plans
    from ntkrepro.hron2020.regime import boot_accuracies, curve_accuracies
    from ntkrepro.kernels.device_regression import regression_backend
    from ntkrepro.kernels.inference import predicted_classes

    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="config/default.yaml")
    args = ap.parse_args()
    params = yaml.safe_load(Path(args.config).read_text())["hron2020"]["H4"]
    n_t, n_v, n_s = int(params["n_train"]), int(params["n_val"]), int(params["n_test"])
    n_fit = n_t + n_v
    k = synthetic_psd(n_fit + n_s)
    rng = np.random.default_rng(0)
    y = np.eye(N_CLASSES)[rng.integers(0, N_CLASSES, n_fit + n_s)]
    yt = rng.integers(0, N_CLASSES, n_s)
    kk, ks, yy = k[:n_fit, :n_fit], k[n_fit:, :n_fit], y[:n_fit]
    plan, curve = h4_resample_plans(params, n_fit, n_s)
    grid = [float(v) for v in params["diag_reg_grid"]]
    out = {"config": args.config, "n_fit": n_fit, "n_test": n_s, "n_boot": int(plan["train"].shape[0]),
           "curve_refits": len(curve)}
    for name in ("scipy", "jax"):
        reg = regression_backend(name)

        def final_model():
            def fit(a, b, c):
                return predicted_classes(reg.kernel_regression(a, b, c, 1e-3)) == yt

            reg.kernel_regression(kk, ks, yy, 1e-3)
            many = reg.correct_many(kk, ks, yy, 1e-3, yt)
            boot_accuracies(fit, kk, ks, yy, plan, correct_many=many)
            curve_accuracies(fit, kk, ks, yy, curve, correct_many=many)

        def selection_model():
            reg.select_diag_reg(k[:n_t, :n_t], k[n_t:n_fit, :n_t], y[:n_t], y[n_t:n_fit], grid)
            reg.kernel_regression(k[:n_t, :n_t], k[n_t:n_fit, :n_t], y[:n_t], 1e-3)

        for what, fn in (("final_model", final_model), ("selection_model", selection_model)):
            fn()  # compiles (jax)
            walls, cpus = [], []
            for _ in range(3):
                w0, c0 = time.perf_counter(), time.process_time()
                fn()
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
            out[f"{name}_{what}_wall_s"] = float(np.median(walls))
            out[f"{name}_{what}_cpu_s"] = float(np.median(cpus))
    c = device_cost.count_h4(params, {"n_train": n_t, "n_val": n_v, "n_test": n_s,
                                      "block_size": int(params["block_size"])})
    for name in ("scipy", "jax"):
        for clock in ("wall", "cpu"):
            out[f"{name}_run_h4_{clock}_s"] = (c["final_models"] * out[f"{name}_final_model_{clock}_s"]
                                               + c["selection_models"] * out[f"{name}_selection_model_{clock}_s"])
    out["faster"] = min(("scipy", "jax"), key=lambda n: out[f"{n}_run_h4_wall_s"])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
