"""Comparing sets of sentence embeddings in memory, with sentence-transformers' conventions.

``similarity(a, b)``: the matrix of cosines between two sets of embeddings (or two single
ones; ``cosine_matrix`` always gives the matrix); ``similarity_pairwise(a, b)``: row i of
one with row i of the other; ``semantic_search(queries, corpus, top_k)``: for each query
the ``top_k`` nearest corpus rows by cosine, as ``[{"corpus_id": i, "score": s}, ...]``,
best first. Exact, in blocks of the corpus (numpy; no index to build). For millions of
rows searched many times, ``scbow-numba index`` builds an approximate index instead.

Rows with no embedding (NaN, from ``Model.encode``'s default ``fill``) and zero rows never
match: their cosines are NaN in ``similarity`` and they are never returned by
``semantic_search``.
"""

from __future__ import annotations

import numpy as np

from ..vectors.numeric import cosine_matrix, semantic_search, similarity_pairwise  # noqa: F401  (the API)


def similarity(a, b) -> np.ndarray | float:
    """Cosines between embeddings ``a`` (n, d) and ``b`` (m, d): float64 (n, m); a float for two
    1-D vectors, a 1-D array when one side is 1-D. NaN where a row has no direction."""
    S = cosine_matrix(a, b)
    single_a, single_b = np.ndim(a) == 1, np.ndim(b) == 1
    if single_a and single_b:
        return float(S[0, 0])
    return S[0] if single_a else (S[:, 0] if single_b else S)


