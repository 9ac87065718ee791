"""Where run_h4's time goes at the smoke tiers, against predict_h4's parts (issue 30, item 2).

Runs the ``smoke-h4`` plan of ntkrepro.device (calibration, then cpu100 and cpu200) with
exclusive timers on every counted computation (kernel functions' first and later calls, the block
cache, each regression call by its caller, the jitted calls by compiled shape: new or compiled
before), and prints each part's prediction beside its measurement::

    PYTHONPATH=src JAX_PLATFORMS=cpu OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
        XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
        .venv/bin/python workflow/scripts/profile_h4_predictor.py /tmp/profile-h4

(the measured regression parts include their new shapes' compiles, predicted apart as
``regression_compile``). Writes ``<out>/profile.json``. A diagnostic and the measurement of issue 30's
accuracy target (measured / predicted within [0.67, 1.5] at both tiers), not a test: CI checks [0.5, 2]
(``tests/test_gpu_run.py``), the bound a missing or doubled part breaks and a shared CPU's stray delay does not."""
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from ntkrepro import clock
from ntkrepro.device import call, config
from ntkrepro.hron2020 import cifar10, regime
from ntkrepro.kernels import device_regression as dr

TOT = defaultdict(float)
CNT = defaultdict(int)
STACK = []  # [label, child_time]
ON = [False]


def wrap(fn, label):
    def w(*a, **k):
        if not ON[0]:
            return fn(*a, **k)
        parent = STACK[-1][0] if STACK else "-"
        lab = label.replace("@", "@" + parent) if "@" in label else label
        STACK.append([lab, 0.0])
        t0 = clock.now()
        try:
            return fn(*a, **k)
        finally:
            el = clock.now() - t0
            _, child = STACK.pop()
            TOT[lab] += el - child
            CNT[lab] += 1
            if STACK:
                STACK[-1][1] += el
    w.__wrapped__ = fn
    return w


orig_kfn = cifar10._kernel_fn


def kfn_factory(params, fam, depth):
    f = orig_kfn(params, fam, depth)
    state = {"first": True}

    def g(*a, **k):
        lab = "kfn_first" if state["first"] else "kfn_call"
        state["first"] = False
        return wrap(f, lab)(*a, **k)
    return g


for mod, name, label in [(cifar10, "load_splits", "load"), (cifar10, "_kernel", "kernel_io"),
                         (cifar10, "select_on_validation", "select"), (cifar10, "final_test", "final_test"),
                         (cifar10, "orderings", "orderings"), (cifar10, "bootstrap_ci", "ci@"),
                         (cifar10, "null_ordering_control", "null_ctrl"),
                         (regime, "boot_accuracies", "boot@"), (regime, "curve_accuracies", "curve@"),
                         (regime, "two_draws", "two_draws"), (cifar10, "write_npz", "write_npz")]:
    if hasattr(mod, name):
        setattr(mod, name, wrap(getattr(mod, name), label))
cifar10._kernel_fn = kfn_factory
for cls in (dr.DeviceRegression,):
    for m in ("select_diag_reg", "kernel_regression", "predict_many"):
        setattr(cls, m, wrap(getattr(cls, m), f"{m}@"))
JIT = []  # (phase, fn, key, seconds, first)
SEEN = set()
PHASE = ["calibration"]
_j = dr._jitted()
for nm in ("rows", "full"):
    def mk(f, nm):
        def g(*a):
            import jax
            key = (nm,) + tuple(tuple(x.shape) for x in a)
            t0 = clock.now()
            out = f(*a)
            jax.block_until_ready(out)
            JIT.append((PHASE[0], key, clock.now() - t0, key not in SEEN))
            SEEN.add(key)
            return out
        return g
    _j[nm] = mk(_j[nm], nm)

orig_tier = call.run_h4_tier  # the H4 tier runner as the call sees it (ntkrepro.hron2020.device_tiers)
REPORT = {}


def tier(name, *a, **k):
    TOT.clear()
    CNT.clear()
    ON[0] = True
    PHASE[0] = name
    t0 = clock.now()
    try:
        rec = orig_tier(name, *a, **k)
    finally:
        ON[0] = False
    REPORT[name] = {"wall": clock.now() - t0, "rec_wall": rec["measured_s"],
                    "pred": rec["predicted_realised_s"], "tot": dict(TOT), "cnt": dict(CNT)}
    return rec


call.run_h4_tier = tier
out = Path(sys.argv[1])
clock.CLOCK["name"] = sys.argv[2] if len(sys.argv) > 2 else "wall"  # wall | cpu
rec = call.run(out, 3000, config.default_data_root(), "smoke-h4")
REPORT["calibration"] = rec["calibration"]
REPORT["jit"] = JIT
REPORT["calibration_wall_s"] = rec["calibration_wall_s"]
(out / "profile.json").write_text(json.dumps(REPORT, indent=1, default=str))
for t in ("cpu100", "cpu200"):
    r = REPORT[t]
    print(t, "wall %.1f" % r["rec_wall"], "pred %.1f" % r["pred"]["total"],
          "ratio %.2f" % (r["rec_wall"] / r["pred"]["total"]),
          "(issue 30's target [0.67, 1.5]: %s)" % ("met" if 0.67 <= r["rec_wall"] / r["pred"]["total"] <= 1.5
                                                  else "NOT met"))
    T = r["tot"]
    def g(*ks, T=T):
        return sum(v for k, v in T.items() if any(k.startswith(x) or k == x for x in ks))

    meas = {"kernels+compile+cache": g("kfn_first", "kfn_call", "kernel_io"),
            "grid": g("select"), "final": T.get("predict_many@kernel_regression@final_test", 0),
            "boot": T.get("predict_many@boot@final_test", 0), "curve": T.get("predict_many@curve@final_test", 0),
            "two_draws": sum(v for k, v in T.items() if k.endswith("two_draws")),
            "fixed": g("load", "ci@", "orderings", "boot@final", "curve@final", "final_test", "write_npz", "null_ctrl")}
    P = r["pred"]
    pred = {"kernels+compile+cache": P["kernels"] + P["kernel_compile"] + P["cache"], "grid": P["grid"],
            "final": P["final"], "boot": P["boot"], "curve": P["curve"], "two_draws": P["two_draws"],
            "regression_compile": P["regression_compile"], "fixed": P["fixed"]}
    for k in pred:
        print("   %-24s pred %6.2f  meas %6.2f" % (k, pred[k], meas.get(k, float("nan"))))
    print("   sum measured %.2f; predicted new shapes %d" % (sum(meas.values()), P["new_shapes"]))

for ph in ("calibration", "cpu100", "cpu200"):
    rows = [r for r in JIT if r[0] == ph]
    first = [r for r in rows if r[3]]
    print(ph, "jit calls", len(rows), "new shapes", len(first), "first-call s", [round(r[2], 3) for r in first])
    print("   new keys", [r[1] for r in first])
    rest = [r[2] for r in rows if not r[3]]
    print("   warm calls total %.2f, median %.4f" % (sum(rest), statistics.median(rest) if rest else 0))
