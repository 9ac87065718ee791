r"""The documented tokenizer for IMDb reviews and padding / truncation with a mask constant.

Tokenizer (:func:`tokenize`), applied in this order -- it is the tokenizer of neural-tangents'
``examples/imdb.py`` (Keras ``Tokenizer`` defaults) plus removal of IMDb's HTML line breaks:

1. HTML line breaks ``<br />`` (also ``<br>``, ``<br/>``, any case) are replaced by a space;
2. the text is lower-cased;
3. every punctuation character in :data:`PUNCTUATION` (Keras' default ``filters``:
   ``!"#$%&()*+,-./:;<=>?@[\]^_`{|}~`` plus tab and newline) is replaced by a space, i.e. it
   *splits* words and is itself dropped; the apostrophe is kept (``don't`` stays one token);
4. the result is split on whitespace.

Sequences are truncated or padded *at the end* ("post", as Keras' ``pad_sequences`` in the
example) to a fixed length :math:`L`; padded positions of an embedded sequence are filled with
the constant ``mask_constant`` in every channel, which is how neural-tangents marks them
(``kernel_fn(..., mask_constant=c)``): masked positions are excluded from attention and pooling.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

#: Characters that split words and are dropped (Keras ``Tokenizer`` default filters).
PUNCTUATION = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'

_BR = re.compile(r"<br\s*/?\s*>", flags=re.IGNORECASE)
_PUNCT_TABLE = str.maketrans({c: " " for c in PUNCTUATION})


def tokenize(text: str) -> list[str]:
    """Tokens of ``text`` by the four steps of the module docstring."""
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects a str, got {type(text).__name__}")
    return _BR.sub(" ", text).lower().translate(_PUNCT_TABLE).split()


def pad_truncate(token_lists: Sequence[Sequence[str]], length: int) -> tuple[list[list[str]], np.ndarray]:
    """Truncate each token list to its first ``length`` tokens; return (lists, kept lengths).

    The lists are not padded here (padding happens on the embedded array, see :func:`embed`);
    ``lengths[i]`` is the number of real tokens of sequence ``i`` (``<= length``).
    """
    if length < 1:
        raise ValueError(f"sequence length must be >= 1, got {length}")
    out = [list(t[:length]) for t in token_lists]
    return out, np.array([len(t) for t in out], dtype=np.int64)


def embed(token_lists: Sequence[Sequence[str]], vectors: Mapping[str, np.ndarray], *, length: int,
          dim: int, mask_constant: float, array_length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Embedded, padded array :math:`X \in \mathbb R^{N\times L\times D}` and the real lengths.

    :math:`X_{n\ell} = e(w_{n\ell})` for :math:`\ell <` length of review :math:`n` (after
    truncation to ``length``), with :math:`e(w)` the word vector of :math:`w` and
    :math:`e(w) = 0` for words without a vector; :math:`X_{n\ell} = c\,\mathbf 1` (``mask_constant``)
    for the padded positions (``vectors`` maps word -> vector of length ``dim``). The array has
    ``array_length >= length`` positions (default ``length``), so ``array_length - length``
    trailing positions are masked in every review.
    A review with no tokens at all raises (it would be fully masked, an undefined kernel).
    """
    lists, lengths = pad_truncate(token_lists, length)
    if np.any(lengths == 0):
        bad = np.flatnonzero(lengths == 0)[:5].tolist()
        raise ValueError(f"reviews {bad} have no tokens; a fully padded sequence has no kernel")
    if not np.isfinite(mask_constant):
        raise ValueError("mask_constant must be finite")
    total = length if array_length is None else int(array_length)
    if total < length:
        raise ValueError(f"array_length {total} < length {length}")
    x = np.full((len(lists), total, dim), mask_constant, dtype=np.float32)
    zero = np.zeros(dim, np.float32)
    for i, toks in enumerate(lists):
        x[i, : len(toks)] = np.stack([np.asarray(vectors.get(t, zero), np.float32) for t in toks])
    if np.any(np.all(x == mask_constant, axis=-1) != (np.arange(total)[None, :] >= lengths[:, None])):
        raise ValueError(f"a word vector equals mask_constant={mask_constant} in every channel; choose another")
    return x, lengths


def vocabulary(token_lists: Iterable[Sequence[str]]) -> set[str]:
    """The set of distinct tokens."""
    vocab: set[str] = set()
    for t in token_lists:
        vocab.update(t)
    return vocab
