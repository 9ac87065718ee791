"""Independent replicates (issue 12): shifted seeds, disjoint data slices, the ledger's stability fields."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from ntkrepro import ledger, replicates
from ntkrepro.data import imdb
from ntkrepro.data.cifar10 import balanced_subset, draw_splits
from ntkrepro.hron2020.finite_nets import LAYER_NORMS, MECHANISMS, run_seed
from ntkrepro.ledger import attach_replicates, check, make_entry, stability_text, write_table

ROOT = Path(__file__).resolve().parents[1]
SCALES = ("smoke", "default", "paper")


def _config(scale):
    return yaml.safe_load((ROOT / "config" / f"{scale}.yaml").read_text())


def _all_seeds(cfg):
    return {s for v in replicates.seeds_in(cfg).values() for s in v}


# ---------------------------------------------------------------------------------------- seeds

@pytest.mark.parametrize("scale", SCALES)
def test_every_configured_seed_is_shifted_and_disjoint_from_replicate_0(scale):
    cfg = _config(scale)
    s0 = replicates.seeds_in(cfg)
    assert len(s0) >= 20  # seeds of all four papers are found (init, teacher, data, bootstrap)
    seen = _all_seeds(cfg)
    for r in (1, 2, 3):
        d = replicates.replicate_config(cfg, r)
        sr = replicates.seeds_in(d)
        assert sr.keys() == s0.keys()
        for key in s0:
            assert sr[key] == [s + replicates.SEED_STRIDE * r for s in s0[key]], key
        assert not (_all_seeds(d) & seen)
        seen |= _all_seeds(d)
        # every seed-derived offset the library uses (< 10^5) cannot reach another replicate's range
        assert min(_all_seeds(d)) - max(_all_seeds(cfg)) > 10**5
        assert d["results_dir"] == f"{cfg['results_dir']}/replicates/r{r}" and d["replicates"] == 1
        assert d["replicate_index"] == r
        assert d["data"]["cifar10"]["replicate"] == r and d["data"]["imdb"]["replicate"] == r
        # counts of seeds are not seeds
        assert d["framework"]["F1"]["n_seeds"] == cfg["framework"]["F1"]["n_seeds"]
        assert d["arda2026"]["A1"]["seeds_per_job"] == cfg["arda2026"]["A1"]["seeds_per_job"]
    assert "replicate" not in cfg["data"]["cifar10"]  # the configured run is untouched


def test_derived_per_run_seeds_are_disjoint_too():
    """H5 derives one PRNG seed per (seed, mechanism, LayerNorm) run: replicates share none."""
    cfg = _config("default")
    d = replicates.replicate_config(cfg, 1)

    def runs(c):
        return {run_seed(s, m, ln) for s in c["hron2020"]["H5"]["seeds"] for m in MECHANISMS for ln in LAYER_NORMS}

    assert runs(cfg) and not (runs(cfg) & runs(d))


def test_unknown_seed_key_is_refused_and_replicate_0_is_not_derived():
    cfg = _config("smoke")
    cfg["framework"]["F1"]["init_seed"] = 3
    with pytest.raises(KeyError, match="init_seed"):
        replicates.replicate_config(cfg, 1)
    with pytest.raises(ValueError, match="replicate 0"):
        replicates.replicate_config(_config("smoke"), 0)
    bad = _config("smoke")
    bad["hron2020"]["H1"]["seed"] = "0"
    with pytest.raises(TypeError, match="H1.seed"):
        replicates.replicate_config(bad, 1)


def test_replicated_claims():
    claims = ["H1", "H3", "A2"]
    assert replicates.replicated_claims({"replicates": 2, "replicate_claims": "all"}, claims) == ["A2", "H1", "H3"]
    assert replicates.replicated_claims({"replicates": 1, "replicate_claims": "all"}, claims) == []
    assert replicates.replicated_claims({"replicates": 2, "replicate_claims": ["H3"]}, claims) == ["H3"]
    with pytest.raises(ValueError, match="Z9"):
        replicates.replicated_claims({"replicates": 2, "replicate_claims": ["Z9"]}, claims)


# ---------------------------------------------------------------------------------- data slices

def _labels(n_per_class, n_classes=10, seed=0):
    return np.random.default_rng(seed).permutation(np.repeat(np.arange(n_classes), n_per_class))


def test_cifar10_replicate_0_draw_is_unchanged():
    train_y, test_y = _labels(50), _labels(20, seed=1)
    got = draw_splits(train_y, test_y, seed=7, n_train=40, n_val=20, n_test=30, replicate=0)
    i_train = balanced_subset(train_y, 40, 7)
    np.testing.assert_array_equal(got["train"], i_train)
    np.testing.assert_array_equal(got["val"], balanced_subset(train_y, 20, 8, exclude=i_train))
    np.testing.assert_array_equal(got["test"], balanced_subset(test_y, 30, 9))
    whole = draw_splits(train_y, test_y, seed=7, n_train=40, n_val=0, n_test=200, replicate=0)
    np.testing.assert_array_equal(whole["test"], np.arange(200))


def test_cifar10_replicate_slices_are_disjoint_and_balanced():
    train_y, test_y = _labels(50), _labels(20, seed=1)
    s = 7
    draws = [draw_splits(train_y, test_y, seed=replicates.shift_seed(s, r), n_train=40, n_val=20, n_test=30,
                         replicate=r) for r in range(3)]
    for r, d in enumerate(draws):
        assert len(d["train"]) == 40 and len(d["val"]) == 20 and len(d["test"]) == 30
        assert np.bincount(train_y[d["train"]], minlength=10).tolist() == [4] * 10
        assert not set(d["train"]) & set(d["val"])
        for q in range(r):
            used_q = set(draws[q]["train"]) | set(draws[q]["val"])
            assert not (set(d["train"]) | set(d["val"])) & used_q, (q, r)
            assert not set(d["test"]) & set(draws[q]["test"]), (q, r)
    # replicate 1 recomputes replicate 0's draw from its own seed: same answer from any replicate
    np.testing.assert_array_equal(draws[0]["train"], balanced_subset(train_y, 40, s))


def test_cifar10_archive_too_small_for_the_replicates_is_a_clear_error():
    train_y, test_y = _labels(10), _labels(5, seed=1)  # 100 train / 50 test
    draw_splits(train_y, test_y, seed=1_000_003, n_train=40, n_val=10, n_test=20, replicate=1)
    with pytest.raises(ValueError, match=r"replicate 2 needs 40 train \+ 10 validation \+ 20 test"):
        draw_splits(train_y, test_y, seed=2_000_006, n_train=40, n_val=10, n_test=20, replicate=2)
    with pytest.raises(ValueError, match="replicate 1"):  # replicate 0 took the whole test set
        draw_splits(train_y, test_y, seed=1_000_003, n_train=10, n_val=0, n_test=50, replicate=1)


def _reviews(n_per_label):
    return {split: [imdb.Review(split, lab, i, 8 if lab else 2, f"{split} {lab} {i}")
                    for lab in (0, 1) for i in range(n_per_label)] for split in imdb.SPLITS}


def _keys(sub):
    return {(r.split, r.label, r.id) for v in sub.values() for r in v}


def test_imdb_replicate_pools_are_disjoint_and_replicate_0_unchanged():
    reviews = _reviews(30)
    h6 = {"n_train": 10, "n_valid": 6, "n_test": 8, "seed": 0, "final": None}
    pool0 = imdb.replicate_pool(reviews, {**h6, "imdb": {"archive": "x"}})
    assert pool0 == reviews
    subs = []
    for r in range(3):
        p = {**h6, "seed": replicates.shift_seed(0, r), "imdb": {"replicate": r}}
        pool = imdb.replicate_pool(reviews, p)
        subs.append(imdb.split_protocol(pool, n_train=10, n_valid=6, n_test=8, seed=p["seed"]))
    assert _keys(subs[0]) == _keys(imdb.split_protocol(reviews, n_train=10, n_valid=6, n_test=8, seed=0))
    for r in range(3):
        assert len(_keys(subs[r])) == 24
        for q in range(r):
            assert not _keys(subs[r]) & _keys(subs[q]), (q, r)


def test_imdb_final_split_is_excluded_and_too_small_is_a_clear_error():
    reviews = _reviews(20)
    h6 = {"n_train": 4, "n_valid": 2, "n_test": 4, "final": {"n_train": 30, "n_test": 30}}
    with pytest.raises(ValueError, match="replicate 1 of H6"):
        imdb.replicate_pool(reviews, {**h6, "seed": replicates.shift_seed(0, 1), "imdb": {"replicate": 1}})
    used0 = imdb.used_reviews(reviews, n_train=4, n_valid=2, n_test=4, seed=0, final={"n_train": 10, "n_test": 10})
    pool1 = imdb.replicate_pool(reviews, {**h6, "final": {"n_train": 10, "n_test": 10},
                                          "seed": replicates.shift_seed(0, 1), "imdb": {"replicate": 1}})
    assert used0 and not used0 & _keys(pool1)


# ------------------------------------------------------------------------------------- ledger

def _h2(slope, last):
    from test_ledger import _fake_h2  # tests/ is on sys.path (rootdir conftest)

    return _fake_h2(slope, slope, last=last)


def _pair(agree: bool):
    e0 = make_entry("H2", _h2(-0.5, 0.003), scale="smoke")
    e1 = make_entry("H2", _h2(-0.5, 0.003) if agree else _h2(0.2, 0.5), scale="smoke", replicate=1)
    return e0, e1


def test_disagreeing_replicates_are_marked_fragile_with_both_numbers(tmp_path):
    e0, e1 = _pair(agree=False)
    assert e0["verdict"] != e1["verdict"]
    attach_replicates(e0, [e1])
    assert e0["stable"] is False and [r["replicate"] for r in e0["replicates"]] == [0, 1]
    assert e0["verdict"] == e0["replicates"][0]["verdict"]  # the headline stays replicate 0's
    cell = stability_text(e0)
    assert cell.startswith("FRAGILE") and e0["replicates"][0]["headline"] in cell and e1["verdict"] in cell
    assert ledger._headline(e1) in cell
    write_table([e0], tmp_path / "t.csv", tmp_path / "t.md", tmp_path / "t.tex")
    md = (tmp_path / "t.md").read_text()
    assert "| stable |" in md and "FRAGILE" in md
    tex = (tmp_path / "t.tex").read_text().replace(r"\allowbreak{}", "")  # line-break hints aside
    # the LaTeX cell names every replicate's verdict; the numbers are in the claim's subsection
    assert "fragile: r0" in tex and "/ r1" in tex and "[" not in tex.split("fragile: r0", 1)[1].split("&", 1)[0]
    assert ledger._stable_short("FRAGILE: r0 inconclusive (a = 1 [0, 2]) / r1 reproduced (a = 2 (b) [1, 3])") \
        == "fragile: r0 inconclusive / r1 reproduced"
    (tmp_path / "H2.json").write_text(json.dumps(e0))
    assert check(tmp_path, ["H2"], {"H2": 2}) == []
    assert check(tmp_path, ["H2"], {"H2": 3}) == ["H2: replicates [0, 1], expected 0..2"]
    assert check(tmp_path, ["H2"], {}) == ["H2: replicates [0, 1], expected 0..0"]
    assert check(tmp_path, ["H2"]) == []  # without the index's counts: consistency only


def test_agreeing_replicates_are_stable_and_check_catches_a_wrong_stable_flag(tmp_path):
    e0, e1 = _pair(agree=True)
    attach_replicates(e0, [e1])
    assert e0["stable"] is True and stability_text(e0) == "yes (2 replicates)"
    e0["stable"] = False
    (tmp_path / "H2.json").write_text(json.dumps(e0))
    assert check(tmp_path, ["H2"], {"H2": 2}) == ["H2: stable is False, the replicates' verdicts say True"]
    single = make_entry("H2", _h2(-0.5, 0.003), scale="smoke")
    assert single["stable"] is None and stability_text(single) == "n/a (1 replicate)"
    with pytest.raises(ValueError, match="replicate >= 1"):
        attach_replicates(make_entry("H2", _h2(-0.5, 0.003), scale="smoke"), [single])


def test_replicate_entry_records_the_archives_it_read():
    res = _h2(-0.5, 0.003)
    res["H2_average_pooling"]["provenance"] = {"data": {"/d/cifar.tar.gz": "ab" * 32}}
    e1 = make_entry("H2", res, scale="smoke", replicate=1)
    e0 = make_entry("H2", _h2(-0.5, 0.003), scale="smoke")
    attach_replicates(e0, [e1])
    assert e0["replicates"][1]["archives"] == {"/d/cifar.tar.gz": "ab" * 32}


# ------------------------------------------------------------------------------------ the DAG

def test_dry_run_has_replicate_jobs_with_shifted_seeds_and_disjoint_data(tmp_path):
    out = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "-p", f"{tmp_path}/claims/H3.json",
                          "--configfile", "config/smoke.yaml", "--config", f"results_dir={tmp_path}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout + out.stderr
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", text, re.M))      # the dry run's "Job stats" table
    assert jobs.get("rep1_H3_hron2020_kernel_convergence") == "1" and jobs.get("rep1_claim_ledger_entry") == "1"
    assert "H3: ledger entry | scale smoke, replicate 1" in text    # the rule's message names the replicate
    assert f"{tmp_path}/replicates/r1/claims/H3.json" in text
    assert '"replicate": 1' in text and '"seed": 1000003' in text
    assert "rep1_figure" not in jobs and jobs.get("figure") == "1"  # replicates draw no figures; replicate 0 draws H3's


def test_report_shows_the_stability_column_and_both_numbers_of_a_fragile_claim(render_report):
    e0, e1 = _pair(agree=False)
    attach_replicates(e0, [e1])
    tex = render_report([e0]).replace(r"\allowbreak{}", "")  # line-break hints aside
    assert "stable across replicates" in tex and r"\textbf{fragile}" in tex
    assert "FRAGILE: the replicates disagree" in tex
    assert f"replicate 0: {e0['verdict'].replace('_', chr(92) + '_')}" in tex
    assert f"replicate 1: {e1['verdict'].replace('_', chr(92) + '_')}" in tex


def test_shard_results_read_by_an_aggregation_are_not_archives():
    res = _h2(-0.5, 0.003)
    res["H2_average_pooling"]["provenance"] = {"data": {"r/arda2026/shards/A2_0.json": "cd" * 32,
                                                        "../shared/data/aclImdb-subset.tar.gz": "ef" * 32}}
    e = make_entry("H2", res, scale="smoke")
    assert ledger.archives_read(e) == {"../shared/data/aclImdb-subset.tar.gz": "ef" * 32}


def test_headline_of_a_permutation_test_shows_its_difference_and_p_values():
    perm = {"test": "permutation (exact)", "n": 15, "mean_difference": 0.0049, "p_greater": 0.065, "p_less": 0.94}
    assert ledger._headline({"measured": {"acc[relu] - acc[softmax]": perm}}) == \
        "acc[relu] - acc[softmax] = 0.0049 (p> 0.065, p< 0.94, permutation (exact), n 15)"
    rho = {"test": "Spearman permutation (exact)", "n": 6, "statistic": -0.029, "p_greater": 0.54, "p_less": 0.5}
    assert (ledger._headline({"measured": {"rho": rho}})
            == "rho = -0.029 (p> 0.54, p< 0.5, Spearman permutation (exact), n 6)")
