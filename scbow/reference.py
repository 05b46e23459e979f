"""Plain float64 NumPy oracle of the Siamese CBOW objective for ONE example.

Every kernel, CPU and CUDA, is tested against :func:`loss_and_grad`. It is written for
clarity, not speed, straight from the formulas in DESIGN.md:

    s_x = mean of W[w] over the tokens w of sentence x (repeats count)
    c_j = cos(s_i, s_j) for j in positives + negatives
    p   = softmax(c);   t_j = 1/|P| for positives, 0 for negatives
    L   = -sum_j t_j log p_j   (+ an optional per-occurrence L2 penalty, see below)
"""

from __future__ import annotations

import numpy as np

from .config import NORM_EPS  # noqa: E402  (norms are guarded as max(|s|, NORM_EPS), as in the kernels)


def sentence_mean(W: np.ndarray, sentence) -> np.ndarray:
    ids = np.asarray(sentence, dtype=np.int64)
    if ids.size == 0:
        raise ValueError("a sentence of an example must have at least one word")
    return W[ids].astype(np.float64).mean(axis=0)


def loss_and_grad(W, target, positives, negatives, weight_decay=0.0):
    """Loss and dense gradient of one example.

    Parameters
    ----------
    W : array of float, shape (V, d)
        Embedding matrix (any float dtype; computed in float64).
    target : sequence of int
        Word ids of the target sentence.
    positives, negatives : list of sequences of int
        Word ids of each positive and each negative sentence (at least one positive).
    weight_decay : float
        L2 penalty ``weight_decay/2 * |W[w]|^2`` added once per token of every sentence of
        the example, so a word pays it for each occurrence (0 gives the paper's objective).

    Returns
    -------
    loss : float
    grad : array of float64, shape (V, d)
        dL/dW; rows of words not in the example are zero.
    """
    W = np.asarray(W)
    if len(positives) < 1:
        raise ValueError("an example needs at least one positive sentence")
    others = list(positives) + list(negatives)
    s_i = sentence_mean(W, target)
    S = np.stack([sentence_mean(W, x) for x in others])  # (k, d)
    n_i = max(np.linalg.norm(s_i), NORM_EPS)
    n = np.maximum(np.linalg.norm(S, axis=1), NORM_EPS)  # (k,)
    c = S @ s_i / (n * n_i)
    z = c - c.max()
    log_p = z - np.log(np.exp(z).sum())
    p = np.exp(log_p)
    t = np.zeros(len(others))
    t[: len(positives)] = 1.0 / len(positives)
    loss = float(-(t * log_p).sum())
    g = p - t

    dc_dsi = S / (n_i * n)[:, None] - c[:, None] * s_i[None, :] / n_i**2  # (k, d)
    dc_dsj = s_i[None, :] / (n_i * n)[:, None] - c[:, None] * S / (n**2)[:, None]
    dL_dsi = (g[:, None] * dc_dsi).sum(axis=0)
    dL_dsj = g[:, None] * dc_dsj

    grad = np.zeros(W.shape, dtype=np.float64)
    for sentence, ds in zip([target] + others, [dL_dsi] + list(dL_dsj)):
        ids = np.asarray(sentence, dtype=np.int64)
        np.add.at(grad, ids, ds / len(ids))
        if weight_decay:
            rows = W[ids].astype(np.float64)
            loss += 0.5 * weight_decay * float((rows * rows).sum())
            np.add.at(grad, ids, weight_decay * rows)
    return loss, grad


def _softplus(z: float) -> float:
    return max(z, 0.0) + float(np.log1p(np.exp(-abs(z))))


def sgns_loss_and_grad(W, Wo, pairs, weights=None):
    """Loss and dense gradients of the skip-gram term (``TrainConfig.word_window``) over given pairs.

    Parameters
    ----------
    W : array of float, shape (V, d)
        Embedding matrix; the centre word's row enters as ``u_w = W[w] / a[w]``.
    Wo : array of float, shape (V, d + 1)
        The term's output matrix: a row per output word, then its bias; the score of a
        centre ``w`` and an output word ``o`` is ``x = u_w . Wo[o, :d] + Wo[o, d]``.
    pairs : iterable of ``(centre, context, noise)``
        Word ids: a centre, one of its context words and a sequence of noise words.
    weights : array of float, shape (V,), optional
        The frequency weights ``a`` (ones when None).

    Returns
    -------
    loss : float
        ``sum over pairs of -log sigmoid(x_c) - sum_n log sigmoid(-x_n)``.
    grad_W, grad_O : arrays of float64, shape (V, d)
        ``dL/dW`` and ``dL/dO``.
    """
    W = np.asarray(W, dtype=np.float64)
    Wo = np.asarray(Wo, dtype=np.float64)
    a = np.ones(len(W)) if weights is None else np.asarray(weights, dtype=np.float64)
    grad_W = np.zeros_like(W)
    grad_O = np.zeros_like(Wo)
    loss = 0.0
    d = W.shape[1]
    if Wo.shape != (len(W), d + 1):
        raise ValueError(f"Wo must have shape {(len(W), d + 1)} (a row and a bias per word), got {Wo.shape}")
    for centre, context, noise in pairs:
        u = W[centre] / a[centre]
        for o, label in [(context, 1.0)] + [(n, 0.0) for n in noise]:
            x = float(u @ Wo[o, :d] + Wo[o, d])
            loss += _softplus(-x if label else x)   # -log sigmoid(x) for the context, -log sigmoid(-x) for noise
            g = 1.0 / (1.0 + np.exp(-x)) - label     # dL/dx
            grad_W[centre] += g * Wo[o, :d] / a[centre]
            grad_O[o, :d] += g * u
            grad_O[o, d] += g
    return loss, grad_W, grad_O


def sgns_window_loss_and_grad(Wi, Wo, windows):
    """Loss and dense gradients of the word part's windows, each a small matrix of scores.

    A window is ``(inputs, output, noise)``: its context words, its centre word and the noise
    words the whole window shares. Every input scores the centre (label 1) and every noise word
    (label 0): ``X = Wi[inputs] . Wo[outputs, :d]^T + b[outputs]``, ``L = sum softplus(-X[:, 0]) +
    sum softplus(X[:, 1:])``; ``G = sigmoid(X) - labels`` gives ``dL/dWi[inputs] = G . Wo[outputs, :d]``
    and ``dL/dWo[outputs] = G^T . Wi[inputs]`` (repeated words add up). The same sum as
    :func:`sgns_loss_and_grad` over the pairs ``(input, output, noise)``, written as matrices.

    Returns ``(loss, grad_Wi, grad_Wo)`` (float64, shapes of ``Wi`` and ``Wo``).
    """
    Wi = np.asarray(Wi, dtype=np.float64)
    Wo = np.asarray(Wo, dtype=np.float64)
    d = Wi.shape[1]
    grad_Wi, grad_Wo = np.zeros_like(Wi), np.zeros_like(Wo)
    loss = 0.0
    for inputs, output, noise in windows:
        ins = np.asarray(inputs, dtype=np.int64)
        outs = np.asarray([output, *noise], dtype=np.int64)
        labels = np.zeros(len(outs))
        labels[0] = 1.0
        X = Wi[ins] @ Wo[outs, :d].T + Wo[outs, d]
        Z = np.where(labels == 1.0, -X, X)
        loss += float(np.sum(np.maximum(Z, 0.0) + np.log1p(np.exp(-np.abs(Z)))))
        G = 1.0 / (1.0 + np.exp(-X)) - labels
        np.add.at(grad_Wi, ins, G @ Wo[outs, :d])
        np.add.at(grad_Wo, (outs[:, None], np.arange(d)[None, :]), G.T @ Wi[ins])
        np.add.at(grad_Wo[:, d], outs, G.sum(axis=0))
    return loss, grad_Wi, grad_Wo


def sgns_sentence_pairs(sentence, window):
    """Every ``(centre, context)`` of a sentence with contexts at most ``window`` words away (no subsampling)."""
    ids = list(sentence)
    return [(ids[i], ids[j]) for i in range(len(ids))
            for j in range(max(i - window, 0), min(i + window + 1, len(ids))) if j != i]
