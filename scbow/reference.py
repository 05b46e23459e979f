"""Plain float64 NumPy oracle of the Siamese CBOW objective for ONE example.

Every kernel, CPU and CUDA, is tested against :func:`loss_and_grad`, written for clarity, not speed,
from the formulas in DESIGN.md:

    s_x = mean of W[w] over the tokens w of sentence x (repeats count)
    c_j = cos(s_i, s_j) for j in positives + negatives
    p   = softmax(c);   t_j = 1/|P| for positives, 0 for negatives
    L   = -sum_j t_j log p_j   (+ an optional per-occurrence L2 penalty, see below)
"""

from __future__ import annotations

import numpy as np

from .config import NORM_EPS  # norms are guarded as max(|s|, NORM_EPS), as in the kernels


def sentence_mean(W: np.ndarray, sentence) -> np.ndarray:
    ids = np.asarray(sentence, dtype=np.int64)
    if ids.size == 0:
        raise ValueError("a sentence of an example must have at least one word")
    return W[ids].astype(np.float64).mean(axis=0)


def loss_and_grad(W, target, positives, negatives, weight_decay=0.0):
    """``(loss, grad)`` of one example: ``grad`` is the float64 dL/dW, shape of ``W`` (V, d; any float
    dtype), zero in the rows of words not in the example.

    ``target`` is the word ids of the target sentence; ``positives`` and ``negatives`` lists of word-id
    sequences (at least one positive). ``weight_decay``: the L2 penalty ``weight_decay/2 * |W[w]|^2``
    added once per token of every sentence, so a word pays it for each occurrence (0: the paper's).
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


def sgns_window_loss_and_grad(Wi, Wo, windows):
    """``(loss, grad_Wi, grad_Wo)`` (float64, shapes of ``Wi`` and ``Wo``) of the word part's windows,
    each a small matrix of scores.

    A window is ``(inputs, output, noise)``: its context words, its centre word and the noise
    words the whole window shares. Every input scores the centre (label 1) and every noise word
    (label 0): ``X = Wi[inputs] . Wo[outputs, :d]^T + b[outputs]``, ``L = sum softplus(-X[:, 0]) +
    sum softplus(X[:, 1:])``; ``G = sigmoid(X) - labels`` gives ``dL/dWi[inputs] = G . Wo[outputs, :d]``
    and ``dL/dWo[outputs] = G^T . Wi[inputs]`` (repeated words add up).
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
