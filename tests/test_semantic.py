"""scbow.similarity and scbow.semantic_search against brute force."""

from __future__ import annotations

import numpy as np
import pytest

import scbow


def brute_cosines(A, B):
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    out = np.empty((len(A), len(B)))
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            na, nb = np.linalg.norm(a), np.linalg.norm(b)
            out[i, j] = a @ b / (na * nb) if na > 0 and nb > 0 and np.isfinite(a).all() and np.isfinite(b).all() else np.nan
    return out


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    C = rng.standard_normal((300, 12)).astype(np.float32)
    C[7] = np.nan  # no embedding
    C[8] = 0.0  # no direction
    C[20] = C[21]  # a tie: the lower id first
    Q = C[[5, 21, 100]] + 0.05 * rng.standard_normal((3, 12)).astype(np.float32)
    Q = np.concatenate([Q, np.full((1, 12), np.nan, dtype=np.float32)])
    return Q, C


def test_similarity_is_every_cosine(data):
    Q, C = data
    np.testing.assert_allclose(scbow.similarity(Q, C), brute_cosines(Q, C), rtol=1e-9, equal_nan=True)
    assert scbow.similarity(Q[0], C).shape == (300,) and scbow.similarity(Q, C[0]).shape == (4,)
    assert isinstance(scbow.similarity(Q[0], C[5]), float)
    with pytest.raises(ValueError, match="dims"):
        scbow.similarity(Q, C[:, :5])
    # very large and very small rows keep their direction (their norms overflow or underflow on their own)
    for scale in (1e300, 1e-320):
        assert scbow.similarity([scale, scale], [1.0, 1.0]) == pytest.approx(1.0)
        assert scbow.similarity([scale, 0.0], [1.0, 1.0]) == pytest.approx(2 ** -0.5)
    with pytest.raises(ValueError, match="0 dims"):
        scbow.similarity([], [])


@pytest.mark.parametrize("top_k, block", [(1, 1 << 15), (5, 7), (400, 64)])
def test_semantic_search_is_the_top_cosines(data, top_k, block):
    from scbow.vectors.numeric import semantic_search

    Q, C = data
    found = semantic_search(Q, C, top_k=top_k, block=block)
    S = brute_cosines(Q, C)
    for q in range(3):
        valid = [(-S[q, j], j) for j in range(len(C)) if np.isfinite(S[q, j])]
        want = sorted(valid)[:top_k]
        assert [h["corpus_id"] for h in found[q]] == [j for _, j in want]
        np.testing.assert_allclose([h["score"] for h in found[q]], [-s for s, _ in want], rtol=1e-9)
    assert found[3] == []  # a query with no embedding
    assert all(h["corpus_id"] not in (7, 8) for hits in found for h in hits)
    if top_k >= 2:
        ids = [h["corpus_id"] for h in found[1]]
        assert ids.index(20) < ids.index(21)  # equal cosines: the lower id first
    assert scbow.semantic_search(Q[0], C, top_k=2)[0][0]["corpus_id"] == 5  # a 1-D query is one query
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="top_k"):
            scbow.semantic_search(Q, C, top_k=bad)
