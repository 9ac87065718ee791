import subprocess
import sys

import pytest


def test_neural_tangents_imports_without_tensorflow():
    code = ("import sys; from ntkrepro.nt import nt, stax; "
            "assert 'tensorflow' not in sys.modules; print(nt.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0.6.5"


def test_experimental_gives_clear_error():
    from ntkrepro.nt import nt

    with pytest.raises(ImportError, match="TensorFlow"):
        nt.experimental.empirical_ntk_fn_tf  # noqa: B018
