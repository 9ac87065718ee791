"""ntkrepro.data.text: the documented tokenizer, truncation and mask padding."""

import numpy as np
import pytest

from ntkrepro.data.text import embed, pad_truncate, tokenize, vocabulary


def test_tokenize_lowercases_splits_punctuation_and_removes_br():
    txt = "Great MOVIE!<br /><br />I didn't like the end,though...<BR>Really (really) good."
    assert tokenize(txt) == ["great", "movie", "i", "didn't", "like", "the", "end", "though",
                             "really", "really", "good"]


def test_tokenize_br_variants_and_whitespace():
    assert tokenize("a<br/>b<br >c<br>d\tE\nf") == ["a", "b", "c", "d", "e", "f"]
    assert tokenize("   ") == []
    with pytest.raises(TypeError):
        tokenize(b"bytes")


def test_pad_truncate_keeps_first_tokens():
    lists, lengths = pad_truncate([["a", "b", "c"], ["d"]], 2)
    assert lists == [["a", "b"], ["d"]]
    assert lengths.tolist() == [2, 1]
    with pytest.raises(ValueError):
        pad_truncate([["a"]], 0)


def test_embed_masks_padding_and_zeroes_unknown_words():
    vec = {"good": np.arange(3, dtype=np.float32) + 1, "bad": -np.ones(3, np.float32)}
    x, lengths = embed([["good", "zzz"], ["bad", "good", "bad", "good"]], vec, length=3, dim=3,
                       mask_constant=100.0, array_length=5)
    assert x.shape == (2, 5, 3) and x.dtype == np.float32
    assert lengths.tolist() == [2, 3]
    np.testing.assert_array_equal(x[0, 0], [1, 2, 3])
    np.testing.assert_array_equal(x[0, 1], 0.0)              # unknown word -> zero vector
    np.testing.assert_array_equal(x[0, 2:], 100.0)           # padding -> mask constant
    np.testing.assert_array_equal(x[1, :3], [[-1] * 3, [1, 2, 3], [-1] * 3])  # truncated to 3
    np.testing.assert_array_equal(x[1, 3:], 100.0)           # margin beyond length is masked


def test_embed_rejects_empty_reviews_and_mask_collisions():
    with pytest.raises(ValueError, match="no tokens"):
        embed([["a"], []], {}, length=4, dim=2, mask_constant=1.0)
    with pytest.raises(ValueError, match="equals mask_constant"):
        embed([["a"]], {"a": np.ones(2)}, length=2, dim=2, mask_constant=1.0)
    with pytest.raises(ValueError, match="array_length"):
        embed([["a"]], {}, length=4, dim=2, mask_constant=9.0, array_length=3)


def test_vocabulary():
    assert vocabulary([["a", "b"], ["b", "c"]]) == {"a", "b", "c"}
