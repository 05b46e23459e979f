"""The objective prototypes of ``benchmarks/prototypes.py`` against ``scbow.reference`` and by hand.

Their scores land in ``benchmarks/results/prototypes.md``; these tests make sure the kernels
measured there compute what the report says they compute.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from scbow import reference

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.append(ROOT)

from benchmarks import prototypes as P  # noqa: E402


def proto_grad(W, sentences, n_pos, scale, B=None):
    """Loss and dense dL/dW (and dL/dB) of one example through ``proto_forward``."""
    V, d = W.shape
    B = np.zeros((0, d), dtype=np.float32) if B is None else B
    k = len(sentences)
    feats = np.zeros((k, 2 * P.MAX_WORDS), dtype=np.int64)
    nfe = np.zeros(k, dtype=np.int64)
    for m, s in enumerate(sentences):
        feats[m, : len(s)] = s
        nfe[m] = len(s)
    means, grads = np.empty((k, d), np.float32), np.empty((k, d), np.float32)
    loss = P.proto_forward(W, B, feats, nfe, k, n_pos, scale, means, grads, np.empty((3, k)))
    gW, gB = np.zeros((V, d)), np.zeros(B.shape)
    for m in range(k):
        for f in feats[m, : nfe[m]]:
            if f < V:
                gW[f] += grads[m] / nfe[m]
            else:
                gB[f - V] += grads[m] / nfe[m]
    return loss, gW, gB


EXAMPLE = ([0, 1, 2], [3, 4], [5, 6, 0], [7, 8, 9, 1], [2, 9])  # target, 2 positives, 2 negatives


def test_at_scale_one_the_prototype_is_the_products_objective():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((10, 8)).astype(np.float32)
    loss, gW, _ = proto_grad(W, EXAMPLE, 2, 1.0)
    ref_loss, ref_grad = reference.loss_and_grad(W, EXAMPLE[0], EXAMPLE[1:3], EXAMPLE[3:])
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    np.testing.assert_allclose(gW, ref_grad, rtol=1e-4, atol=1e-6)


def scaled_loss(W, B, sentences, n_pos, scale):
    """softmax(scale * cos) cross-entropy in float64, rows ``>= V`` from ``B`` (by hand)."""
    V = len(W)
    M = np.concatenate([W, B]).astype(np.float64)
    s = [M[np.asarray(x)].mean(axis=0) for x in sentences]
    c = np.array([s[0] @ x / (np.linalg.norm(s[0]) * np.linalg.norm(x)) for x in s[1:]])
    z = scale * c
    log_p = z - z.max() - np.log(np.exp(z - z.max()).sum())
    return float(-log_p[:n_pos].mean()), V


@pytest.mark.parametrize("scale", [5.0, 20.0])
def test_the_temperature_and_bigram_rows_match_finite_differences(scale):
    rng = np.random.default_rng(4)
    W = rng.standard_normal((10, 6)).astype(np.float32)
    B = rng.standard_normal((3, 6)).astype(np.float32)
    sentences = ([0, 1, 2, 10], [3, 4, 11], [5, 6, 0], [7, 8, 9, 1, 12], [2, 9])  # 10..12: bigram rows
    loss, gW, gB = proto_grad(W, sentences, 2, scale, B)
    assert loss == pytest.approx(scaled_loss(W, B, sentences, 2, scale)[0], rel=1e-4)
    h = 1e-4
    W64, B64 = W.astype(np.float64), B.astype(np.float64)
    for (which, r, j) in [("W", 0, 1), ("W", 4, 3), ("W", 9, 0), ("B", 0, 2), ("B", 2, 5)]:
        plus, minus = W64.copy(), W64.copy()
        bp, bm = B64.copy(), B64.copy()
        if which == "W":
            plus[r, j] += h
            minus[r, j] -= h
        else:
            bp[r, j] += h
            bm[r, j] -= h
        numeric = (scaled_loss(plus, bp, sentences, 2, scale)[0] - scaled_loss(minus, bm, sentences, 2, scale)[0]) / (2 * h)
        got = gW[r, j] if which == "W" else gB[r, j]
        assert got == pytest.approx(numeric, rel=2e-3, abs=1e-5), (which, r, j)


def test_the_in_sentence_term_steps_each_context_row_by_the_others_gradients():
    """With tiny steps, keep = 1 and no noise words the step is ``-lr * weight * a * dL/dU`` of
    ``sum_i softplus(-(u_i . Wo[w_i] + b))``, ``u_i`` the mean of the other words' ``W / a``."""
    rng = np.random.default_rng(5)
    V, d = 12, 7
    W = rng.standard_normal((V, d)).astype(np.float32)
    a = rng.uniform(0.3, 1.0, V).astype(np.float32)
    Wo = rng.standard_normal((V, d + 1)).astype(np.float32)
    tokens = np.array([3, 5, 7, 5, 1], dtype=np.int32)  # word 5 twice
    keep = np.ones(V, dtype=np.float32)
    table = np.arange(V, dtype=np.int32)
    state = np.ones(1, dtype=np.uint64)
    bufs = (np.empty(d, np.float32), np.empty(d, np.float32), np.empty(d, np.float32),
            np.empty((P.MAX_WORDS + 1, d), np.float32), np.empty(1, np.int32))
    lr, weight = 1e-6, 0.5
    W1, Wo1 = W.astype(np.float64), Wo.copy()  # float64 rows: a step this small is below float32's resolution
    loss = P.in_sentence_step(W1, Wo1, a, keep, table, tokens, 0, len(tokens), lr, weight, 0, False, state, bufs)

    U = W.astype(np.float64) / a[:, None]
    n = len(tokens)
    S = U[tokens].sum(axis=0)
    want_loss, dU = 0.0, np.zeros((V, d))
    for i, w in enumerate(tokens):
        u = (S - U[w]) / (n - 1)
        x = u @ Wo[w, :d] + Wo[w, d]
        want_loss += np.logaddexp(0.0, -x)
        du = (1.0 / (1.0 + np.exp(-x)) - 1.0) * Wo[w, :d]
        for j, v in enumerate(tokens):
            if j != i:
                dU[v] += du / (n - 1)
    assert loss == pytest.approx(want_loss, rel=1e-4)
    step = (W1.astype(np.float64) - W) / (-lr * weight)
    np.testing.assert_allclose(step, a[:, None] * dU, rtol=1e-3, atol=1e-5)
    assert not np.array_equal(Wo1, Wo)  # the output rows stepped too


def test_bigram_rows_are_stable_and_dropout_drops_about_its_share():
    assert P.bigram_row(3, 5, 1000) == P.bigram_row(3, 5, 1000)
    assert P.bigram_row(3, 5, 1000) != P.bigram_row(5, 3, 1000)
    tokens = np.arange(101, dtype=np.int32)
    out = np.empty(2 * P.MAX_WORDS, dtype=np.int64)
    state = np.ones(1, dtype=np.uint64)
    n = P.features(tokens, 0, 101, 1000, 50, 0.0, state, out)
    assert n == 201 and list(out[:101]) == list(range(101)) and (out[101:201] >= 1000).all()
    kept = [P.features(tokens, 0, 101, 1000, 50, 0.5, state, out) - 101 for _ in range(200)]
    assert 45 < np.mean(kept) < 55


def test_the_in_sentence_term_can_turn_rows_without_stretching_them():
    rng = np.random.default_rng(6)
    V, d = 12, 7
    W = rng.standard_normal((V, d))
    a = rng.uniform(0.3, 1.0, V).astype(np.float32)
    Wo = rng.standard_normal((V, d + 1)).astype(np.float32)
    tokens = np.array([3, 5, 7, 1], dtype=np.int32)
    args = (a, np.ones(V, np.float32), np.arange(V, dtype=np.int32), tokens, 0, 4, 1e-3, 0.5, 0)
    bufs = lambda: (np.empty(d, np.float32), np.empty(d, np.float32), np.empty(d, np.float32),  # noqa: E731
                    np.empty((P.MAX_WORDS + 1, d), np.float32), np.empty(1, np.int32))
    free, turned = W.copy(), W.copy()
    P.in_sentence_step(free, Wo.copy(), *args, False, np.ones(1, np.uint64), bufs())
    P.in_sentence_step(turned, Wo.copy(), *args, True, np.ones(1, np.uint64), bufs())
    np.testing.assert_allclose(np.linalg.norm(turned, axis=1), np.linalg.norm(W, axis=1), rtol=1e-6)  # float32 scratch
    step = free - W  # to first order the turned step is the free one less its part along the row
    radial = (step * W).sum(axis=1, keepdims=True) / (W * W).sum(axis=1, keepdims=True) * W
    moved = np.abs(step).sum(axis=1) > 0
    assert moved[tokens].all() and not moved[np.setdiff1d(np.arange(V), tokens)].any()
    np.testing.assert_allclose((turned - W)[tokens], (step - radial)[tokens], rtol=1e-2, atol=2e-6)
