"""The float64 oracles of ``scbow.reference`` against finite differences, and ``loss_and_grad``
against a direct computation of the objective written out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import CASES, build_example, seed_of

from scbow.reference import loss_and_grad, sgns_window_loss_and_grad

DIMS = (3, 8, 32)
NEGATIVES = (1, 2, 5, 10)
POSITIVES = (1, 2)
EPS = 1e-6


def used_rows(target, positives, negatives):
    return sorted({w for s in [target, *positives, *negatives] for w in s})


def numeric_grad(W, target, positives, negatives, rows, cols=None, **kw):
    """Central differences of the loss (``kw``: of loss_and_grad) for the entries ``rows`` x ``cols`` of ``W``."""
    cols = range(W.shape[1]) if cols is None else cols
    num = np.zeros((len(rows), len(cols)))
    Wp = W.copy()
    for a, r in enumerate(rows):
        for b, j in enumerate(cols):
            old = Wp[r, j]
            Wp[r, j] = old + EPS
            up = loss_and_grad(Wp, target, positives, negatives, **kw)[0]
            Wp[r, j] = old - EPS
            down = loss_and_grad(Wp, target, positives, negatives, **kw)[0]
            Wp[r, j] = old
            num[a, b] = (up - down) / (2 * EPS)
    return num


@pytest.mark.parametrize("case, n_pos, n_neg, dim, wd", [
    *((case, n_pos, n_neg, dim, 0.0) for case in CASES for n_pos in POSITIVES for n_neg in NEGATIVES for dim in DIMS),
    *((case, n_pos, 2, 4, 0.3) for case in CASES for n_pos in POSITIVES),
])
def test_gradient_matches_finite_differences(case, n_pos, n_neg, dim, wd):
    """With ``wd`` the penalty ``wd/2 |W[w]|^2`` once per token occurrence of the example."""
    seed = seed_of(case, n_pos, n_neg, dim) if not wd else seed_of("decay", case, n_pos)
    V, target, positives, negatives = build_example(case, n_pos, n_neg, seed=seed)
    W = np.random.default_rng(seed).standard_normal((V, dim))
    loss, grad = loss_and_grad(W, target, positives, negatives, weight_decay=wd)
    assert grad.shape == W.shape and grad.dtype == np.float64
    assert np.isfinite(loss) and loss > 0
    occurrences = [w for s in [target, *positives, *negatives] for w in s]
    plain = loss_and_grad(W, target, positives, negatives)[0]
    assert loss - plain == pytest.approx(0.5 * wd * float((W[occurrences] ** 2).sum()), rel=1e-12, abs=0)
    rows = used_rows(target, positives, negatives)
    # every column for small dims; for 32 dims a fixed spread of 12 columns keeps it quick
    cols = list(range(dim)) if dim <= 8 else sorted({int(x) for x in np.linspace(0, dim - 1, 12)})
    num = numeric_grad(W, target, positives, negatives, rows, cols, weight_decay=wd)
    scale = np.abs(num).max()
    assert scale > 1e-3  # the example has a gradient worth checking
    np.testing.assert_allclose(grad[rows][:, cols], num, rtol=1e-5, atol=1e-6 * scale)
    # words outside the example: analytic gradient exactly zero, and the loss does not move
    absent = [w for w in range(V) if w not in rows]
    assert {V - 2, V - 1} <= set(absent)
    assert not grad[absent].any()
    np.testing.assert_allclose(numeric_grad(W, target, positives, negatives, absent), 0.0, atol=1e-9)


def direct_loss(W, target, positives, negatives):
    """The objective of DESIGN.md written with Python floats, loops and math only."""

    def mean(sentence):
        return [sum(W[w][j] for w in sentence) / len(sentence) for j in range(len(W[0]))]

    def cos(a, b):
        dot = sum(x * y for x, y in zip(a, b))
        return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))

    s_i = mean(target)
    c = [cos(s_i, mean(x)) for x in list(positives) + list(negatives)]
    log_z = math.log(sum(math.exp(v) for v in c))
    return -sum((c[j] - log_z) / len(positives) for j in range(len(positives)))


def test_loss_of_a_hand_made_geometry():
    # target along x, positive along x too (cos 1), negative along y (cos 0):
    # p = (e, 1) / (e + 1), loss = -log(e / (e + 1)) = log(1 + 1/e)
    W = np.array([[2.0, 0.0], [0.5, 0.0], [0.0, 3.0]])
    loss, grad = loss_and_grad(W, [0], [[1]], [[2]])
    assert loss == pytest.approx(math.log(1 + math.exp(-1)), rel=1e-12)
    # the negative is orthogonal to the target and the positive is parallel: moving the
    # negative towards the target (+x) raises the loss, so dL/dW[2, 0] > 0
    assert grad[2, 0] > 0
    # a parallel positive has no gradient along its own direction (cos is scale invariant)
    assert grad[1, 0] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("n_pos", POSITIVES)
def test_loss_equals_direct_computation(case, n_pos):
    V, target, positives, negatives = build_example(case, n_pos, 3, seed=7)
    W = np.random.default_rng(3).standard_normal((V, 4))
    loss, _ = loss_and_grad(W, target, positives, negatives)
    assert loss == pytest.approx(direct_loss(W.tolist(), target, positives, negatives), rel=1e-10)


def test_loss_is_scale_invariant_and_gradient_scales_inversely():
    V, target, positives, negatives = build_example("shared", 2, 4, seed=11)
    W = np.random.default_rng(11).standard_normal((V, 8))
    loss, grad = loss_and_grad(W, target, positives, negatives)
    loss2, grad2 = loss_and_grad(5.0 * W, target, positives, negatives)
    assert loss2 == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(grad2, grad / 5.0, rtol=1e-10, atol=1e-14)
    # Euler: a loss of degree 0 in W has <W, dL/dW> = 0
    assert abs((W * grad).sum()) < 1e-10 * np.abs(W).sum() * np.abs(grad).max()


def test_float32_input_is_computed_in_float64():
    V, target, positives, negatives = build_example("distinct", 1, 2, seed=2)
    W32 = np.random.default_rng(2).standard_normal((V, 5)).astype(np.float32)
    loss32, grad32 = loss_and_grad(W32, target, positives, negatives)
    loss64, grad64 = loss_and_grad(W32.astype(np.float64), target, positives, negatives)
    assert grad32.dtype == np.float64
    assert loss32 == loss64
    np.testing.assert_array_equal(grad32, grad64)


def test_invalid_examples_are_rejected():
    W = np.eye(3)
    with pytest.raises(ValueError, match="positive"):
        loss_and_grad(W, [0], [], [[1]])
    with pytest.raises(ValueError, match="at least one word"):
        loss_and_grad(W, [0], [[]], [[1]])
    with pytest.raises(ValueError, match="at least one word"):
        loss_and_grad(W, [], [[1]], [[2]])


def test_sgns_window_gradient_is_the_derivative_of_its_loss():
    """The windows' loss is the sum of softplus(-x) (centre) and softplus(x) (noise) over pairs, and its gradient
    its derivative, with a repeated input, a repeated noise word and a noise word another window's centre."""
    rng = np.random.default_rng(8)
    Wi, Wo = 0.5 * rng.standard_normal((12, 6)), 0.5 * rng.standard_normal((12, 7))
    windows = [([1, 2, 1, 4], 3, [5, 5, 6]), ([3, 7], 6, [3, 1])]
    loss, gWi, gWo = sgns_window_loss_and_grad(Wi, Wo, windows)
    score = lambda i, o: float(Wi[i] @ Wo[o, :6] + Wo[o, 6])  # noqa: E731
    pairs = sum(np.logaddexp(0, -score(i, out)) + sum(np.logaddexp(0, score(i, n)) for n in noise)
                for ins, out, noise in windows for i in ins)
    assert loss == pytest.approx(pairs, rel=1e-12)
    dW, dO, h = rng.standard_normal(Wi.shape), rng.standard_normal(Wo.shape), 1e-5
    up, down = (sgns_window_loss_and_grad(Wi + s * h * dW, Wo + s * h * dO, windows)[0] for s in (1, -1))
    assert (up - down) / (2 * h) == pytest.approx(float((gWi * dW).sum() + (gWo * dO).sum()), rel=1e-6)
