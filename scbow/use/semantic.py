"""``scbow.similarity``: cosines of sentence embeddings in memory, with sentence-transformers' conventions."""

from __future__ import annotations

import numpy as np

from ..vectors.numeric import cosine_matrix


def similarity(a, b) -> np.ndarray | float:
    """:func:`cosine_matrix`, but a float for two 1-D vectors and a 1-D array when one side is 1-D."""
    S = cosine_matrix(a, b)
    single_a, single_b = np.ndim(a) == 1, np.ndim(b) == 1
    if single_a and single_b:
        return float(S[0, 0])
    return S[0] if single_a else (S[:, 0] if single_b else S)
