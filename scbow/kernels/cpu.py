"""Numba CPU kernels of Siamese CBOW training: arrays and scalars in, no objects.

One example is a target sentence, its positives (its neighbours in the document) and its negatives.
``example_forward`` computes the sentence means, the cosine softmax loss and each mean's gradient
(``scbow.reference``); ``sgd_step`` scatters it as an in-place SGD step on ``W`` (``example_loss_grad``:
as ``dL/dW``, for tests). ``train_chunk`` is one thread's chunk of a batch;
``train_batch_serial`` runs the chunks in turn (deterministic for a seed), the CPU backend at once on
its threads (the chunk releases the GIL). The threads share the matrix without locks (Hogwild), each
buffering the steps of the most frequent words (``HOT_ROWS``), whose cache lines would otherwise move
between cores. No ``parallel=True``: a ``prange`` would recompile the whole kernel in every process (3 s).
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..config import EXAMPLE_FIXED, NORM_EPS
from .sampling import context_span, draw_noise, fill_example, keep_words, lr_at, seed_state, window_inputs

# Reassociation lets LLVM vectorise the dot products; no-NaN flags stay off so that a
# diverging run still produces the NaN the driver checks for.
FASTMATH = {"reassoc", "contract", "arcp", "nsz"}


@intrinsic
def prefetch_row(typingctx, arr, row):
    """Hint the CPU to fetch the first cache line of ``arr[row]`` (a 2-D C array; LLVM's ``prefetch``:
    never faults, changes no value); the hardware prefetcher follows with the rest of the row."""
    def codegen(context, builder, signature, args):
        aryty, rowty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        index = [context.cast(builder, args[1], rowty, types.intp), context.get_constant(types.intp, 0)]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, index)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, row), codegen


@njit(cache=True, nogil=True)
def prefetch_example(W, tokens, offsets, members, k):
    """``prefetch_row`` for every token of the first ``k`` sentences of ``members``."""
    for m in range(k):
        for t in range(offsets[members[m]], offsets[members[m] + 1]):
            prefetch_row(W, tokens[t])


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def example_forward(W, tokens, offsets, members, n_pos, max_len, buf, work):
    """Loss of one example and the gradient of each of its sentence means; writes no row.

    Parameters
    ----------
    W : array of float32, shape (V, d)
        Embeddings the means are read from.
    tokens : array of int32, shape (n_tokens,)
    offsets : array of int64, shape (n_sentences + 1,)
    members : array of int64, shape (k,)
        Sentence indices: the target, then ``n_pos`` positives, then the negatives.
    n_pos : int
        Number of positives (>= 1).
    max_len : int
        Only the first ``max_len`` words of a sentence count; 0 for all.
    buf : array of float32, shape (2, >= k, d)
        Output: the sentence means in ``buf[0]``, ``dL/ds_m`` in ``buf[1]``.
    work : array of float64, shape (4, >= k)
        Output: norms, cosines, dL/dc and lengths (``work[3]``, what the scatter reads).

    Returns
    -------
    loss : float
        The data loss (the weight-decay term is not part of it).
    """
    k = members.shape[0]
    d = W.shape[1]
    means = buf[0]
    grads = buf[1]
    norms = work[0]
    cos = work[1]
    g = work[2]
    lens = work[3]
    for m in range(k):
        s = members[m]
        start = offsets[s]
        stop = offsets[s + 1]
        if max_len > 0 and stop - start > max_len:
            stop = start + max_len
        row = means[m]
        for j in range(d):
            row[j] = 0.0
        # four rows per pass over the mean: a quarter of the loads and stores of it
        t = start
        while t + 4 <= stop:
            w0 = tokens[t]
            w1 = tokens[t + 1]
            w2 = tokens[t + 2]
            w3 = tokens[t + 3]
            for j in range(d):
                row[j] += (W[w0, j] + W[w1, j]) + (W[w2, j] + W[w3, j])
            t += 4
        while t < stop:
            w = tokens[t]
            for j in range(d):
                row[j] += W[w, j]
            t += 1
        inv = np.float32(1.0 / (stop - start))
        sq = np.float32(0.0)
        for j in range(d):
            row[j] *= inv
            sq += row[j] * row[j]
        norms[m] = max(math.sqrt(sq), NORM_EPS)
        lens[m] = stop - start

    si = means[0]
    n_i = norms[0]
    top = -2.0
    for m in range(1, k):
        dot = np.float32(0.0)
        sj = means[m]
        for j in range(d):
            dot += si[j] * sj[j]
        cos[m] = dot / (n_i * norms[m])
        top = max(top, cos[m])
    total = 0.0
    for m in range(1, k):
        g[m] = math.exp(cos[m] - top)
        total += g[m]
    log_total = math.log(total)
    loss = 0.0
    t_pos = 1.0 / n_pos
    for m in range(1, k):
        p = g[m] / total
        if m <= n_pos:
            loss -= t_pos * (cos[m] - top - log_total)
            g[m] = p - t_pos
        else:
            g[m] = p

    # dL/ds_i = sum_j g_j (s_j/(|s_i||s_j|) - c_j s_i/|s_i|^2)
    # dL/ds_j = g_j (s_i/(|s_i||s_j|) - c_j s_j/|s_j|^2)
    gi = grads[0]
    a_i = 0.0
    for j in range(d):
        gi[j] = 0.0
    for m in range(1, k):
        sj = means[m]
        gj = grads[m]
        a = np.float32(g[m] / (n_i * norms[m]))
        b = np.float32(g[m] * cos[m] / (norms[m] * norms[m]))
        a_i += g[m] * cos[m]
        for j in range(d):
            gi[j] += a * sj[j]
            gj[j] = a * si[j] - b * sj[j]
    b_i = np.float32(a_i / (n_i * n_i))
    for j in range(d):
        gi[j] -= b_i * si[j]
    return loss


@njit(cache=True, nogil=True)
def count_words(tokens, offsets, members, lens, counts):
    """Add the occurrences of each word of the example (sentences cut to ``lens``) to ``counts``."""
    for m in range(members.shape[0]):
        start = offsets[members[m]]
        for t in range(start, start + np.int64(lens[m])):
            counts[tokens[t]] += 1


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def sgd_step(W, tokens, offsets, members, n_pos, lr, params, rate, scratch, hot):
    """One in-place SGD step of one example on ``W``; returns its loss.

    Row ``w`` moves by ``-lr * rate[w] * (1/|x|) * dL/ds_x`` for every occurrence of ``w`` in a sentence
    ``x``, after every mean has been read. Weight decay (``params.decay``) shrinks the row of a word
    occurring ``c`` times by ``c * lr * decay`` of itself, at most to zero (``scbow.reference``).

    Parameters
    ----------
    W, tokens, offsets, members, n_pos : as in :func:`example_forward`
    lr : float
    params : record (``scbow.training.backends.params.PARAMS``)
        Reads ``max_len`` and ``decay``.
    rate : array of float32, shape (V,)
        Per-word factor of the step (``training.start.step_rates``).
    scratch : tuple ``(buf, work, counts)``
        ``buf`` and ``work`` as in :func:`example_forward`; ``counts``: int32 (V,), all
        zero on entry and on return.
    hot : tuple ``(n_hot, pending, keep)``
        Words ``w < n_hot`` go to ``pending[w]`` (float32 (>= n_hot, d)) and ``keep[w]`` (float32
        (>= n_hot,), their decay factors) for :func:`flush_rows`; ``n_hot = 0`` writes in place.
    """
    buf, work, counts = scratch
    n_hot, pending, keep = hot
    loss = example_forward(W, tokens, offsets, members, n_pos, params.max_len, buf, work)
    decay = params.decay
    lens = work[3]
    grads = buf[1]
    d = W.shape[1]
    if decay != 0.0:
        count_words(tokens, offsets, members, lens, counts)
    coef = -lr
    for m in range(members.shape[0]):
        start = offsets[members[m]]
        stop = start + np.int64(lens[m])
        # float32 factors keep the row loops in float32 (a float64 factor would convert
        # every element twice and halve the vector width)
        scale0 = np.float32(coef / lens[m])
        gm = grads[m]
        for t in range(start, stop):
            w = tokens[t]
            c = counts[w]
            scale = scale0 * rate[w]
            if w < n_hot:
                if c > 0:
                    counts[w] = 0
                    keep[w] *= np.float32(1.0) + np.float32(max(coef * decay * c, -1.0))
                for j in range(d):
                    pending[w, j] += scale * gm[j]
                continue
            if c > 0:
                # first occurrence: W[w] is still the value the gradient was computed at; decay it
                # once, c times, at most to zero (past it the row's sign would flip and diverge)
                counts[w] = 0
                shrink = np.float32(1.0) + np.float32(max(coef * decay * c, -1.0))
                for j in range(d):
                    W[w, j] = W[w, j] * shrink + scale * gm[j]
            else:
                for j in range(d):
                    W[w, j] += scale * gm[j]
    return loss


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def flush_rows(W, pending, keep, hot):
    """``W[w] = keep[w] * W[w] + pending[w]`` for rows ``0..hot-1``, then ``pending`` = 0, ``keep`` = 1 (the
    buffered decays multiply and the steps add, as in place)."""
    d = W.shape[1]
    for w in range(min(hot, W.shape[0])):
        k = keep[w]
        for j in range(d):
            W[w, j] = W[w, j] * k + pending[w, j]
            pending[w, j] = 0.0
        keep[w] = 1.0


# ---------------------------------------------------------------------------------------
# The word part (scbow.training.wordpart): skip-gram with negative sampling, a window at a time


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def sgns_window(Wi, Wo, ins, k, outs, coef, out_i, out_o, scratch):
    """One window of the word part: the ``k`` context words ``ins[:k]`` (rows of ``Wi``) each against the
    outputs ``outs`` (the centre, label 1, then the shared noise words, label 0; -1 skipped); returns its loss.

    The scores are ``X = Wi[ins] . Wo[outs, :d]^T + bias`` (k x (1 + n_neg)); from ``G = sigmoid(X) -
    labels`` the steps ``G . Wo[outs]`` and ``G^T . Wi[ins]``, all from the rows as they were, are added
    as ``out_i[ins[r]] += coef * dL/dWi[ins[r]]``, ``out_o[outs[m]] += coef * dL/dWo[outs[m]]``: with
    ``Wi, Wo`` and ``coef = -lr`` an SGD step, with float64 zeros and ``coef = 1`` the gradient. A word twice
    among the inputs or outputs gets both steps.

    Parameters
    ----------
    Wi : array of float32, shape (V, d)
    Wo : array of float32, shape (V, d + 1)
        Output rows, then each word's bias (the score of input ``c`` and output ``o`` is
        ``Wi[c] . Wo[o, :d] + Wo[o, d]``).
    ins : array of int32, shape (>= k,)
    outs : array of int32, shape (1 + n_neg,)
    scratch : ``(G, dOut)``: float32 (>= k, 1 + n_neg), (1 + n_neg, d).
    """
    if outs.shape[0] == 6:
        return sgns_window6(Wi, Wo, ins, k, outs, coef, out_i, out_o, scratch)
    G, dOut = scratch
    d = Wi.shape[1]
    n_out = outs.shape[0]
    loss = 0.0
    for r in range(k):
        c = ins[r]
        for m in range(n_out):
            o = outs[m]
            if o < 0:
                G[r, m] = 0.0
                continue
            x = np.float32(0.0)
            for j in range(d):
                x += Wi[c, j] * Wo[o, j]
            x += Wo[o, d]
            # one exp for the loss and the gradient: e = exp(-|x|)
            sl, g = score_step(x, m == 0)
            loss += sl
            G[r, m] = g
    if coef == 0:  # scored only
        return loss
    # the output rows' steps from the input rows as they were (kept aside), then the input rows
    # stepped from the output rows as they still are
    for m in range(n_out):
        for j in range(d):
            dOut[m, j] = 0.0
        if outs[m] < 0:
            continue
        for r in range(k):
            g = G[r, m]
            c = ins[r]
            for j in range(d):
                dOut[m, j] += g * Wi[c, j]
    for r in range(k):
        c = ins[r]
        for m in range(n_out):
            o = outs[m]
            if o < 0:
                continue
            g = coef * G[r, m]
            for j in range(d):
                out_i[c, j] += g * Wo[o, j]
    step_outputs(outs, k, G, dOut, coef, out_o)
    return loss


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def step_outputs(outs, k, G, dOut, coef, out_o):
    """``out_o[outs[m]] += coef * (dOut[m], sum of G[:k, m])``: each output row's kept-aside step and its
    bias's, for every output not skipped (-1)."""
    d = dOut.shape[1]
    for m in range(outs.shape[0]):
        o = outs[m]
        if o < 0:
            continue
        b = np.float32(0.0)
        for r in range(k):
            b += G[r, m]
        for j in range(d):
            out_o[o, j] += coef * dOut[m, j]
        out_o[o, d] += coef * b


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def score_step(x, label):
    """``(softplus(-x) or softplus(x), sigmoid(x) - label)``: a score's loss and ``dL/dx``, one exp."""
    e = np.exp(np.float32(-abs(x)))
    inv = np.float32(1.0) / (np.float32(1.0) + e)
    s = inv if x >= 0 else e * inv  # sigmoid(x)
    z = -x if label else x  # the loss is softplus(z) = max(z, 0) + log1p(e)
    return max(z, np.float32(0.0)) + log1p_unit(e), (s - np.float32(1.0) if label else s)


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def log1p_unit(e):
    """``log1p(e)`` for ``e`` in [0, 1], to float32 precision: ``2 atanh(t)`` with ``t = e / (2 + e)``
    (at most 1/3, so seven terms of its series; no cancellation for small ``e``), inline arithmetic
    where a call to the C library's ``log1pf`` cost a tenth of the word part's time."""
    t = e / (np.float32(2.0) + e)
    t2 = t * t
    p = np.float32(1.0 / 13.0)
    p = p * t2 + np.float32(1.0 / 11.0)
    p = p * t2 + np.float32(1.0 / 9.0)
    p = p * t2 + np.float32(1.0 / 7.0)
    p = p * t2 + np.float32(1.0 / 5.0)
    p = p * t2 + np.float32(1.0 / 3.0)
    p = p * t2 + np.float32(1.0)
    return np.float32(2.0) * t * p


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def sgns_window6(Wi, Wo, ins, k, outs, coef, out_i, out_o, scratch):
    """:func:`sgns_window` for 6 outputs (the centre and 5 noise words), unrolled so that each pass over the
    columns serves all six: the same sums, another order."""
    G, dOut = scratch
    d = Wi.shape[1]
    # a skipped output (-1) reads row 0 and steps nothing (its G is 0)
    O0, O1, O2 = Wo[max(outs[0], 0)], Wo[max(outs[1], 0)], Wo[max(outs[2], 0)]
    O3, O4, O5 = Wo[max(outs[3], 0)], Wo[max(outs[4], 0)], Wo[max(outs[5], 0)]
    loss = 0.0
    for r in range(k):
        a = Wi[ins[r]]
        x0 = x1 = x2 = x3 = x4 = x5 = np.float32(0.0)
        for j in range(d):
            v = a[j]
            x0 += v * O0[j]
            x1 += v * O1[j]
            x2 += v * O2[j]
            x3 += v * O3[j]
            x4 += v * O4[j]
            x5 += v * O5[j]
        G[r, 0], G[r, 1], G[r, 2] = x0 + O0[d], x1 + O1[d], x2 + O2[d]
        G[r, 3], G[r, 4], G[r, 5] = x3 + O3[d], x4 + O4[d], x5 + O5[d]
        for m in range(6):
            if outs[m] < 0:
                G[r, m] = 0.0
                continue
            sl, g = score_step(G[r, m], m == 0)
            loss += sl
            G[r, m] = g
    if coef == 0:  # scored only
        return loss
    # the output rows' steps from the input rows as they were (kept aside)
    D0, D1, D2, D3, D4, D5 = dOut[0], dOut[1], dOut[2], dOut[3], dOut[4], dOut[5]
    for j in range(d):
        D0[j] = D1[j] = D2[j] = D3[j] = D4[j] = D5[j] = 0.0
    for r in range(k):
        a = Wi[ins[r]]
        g0, g1, g2, g3, g4, g5 = G[r, 0], G[r, 1], G[r, 2], G[r, 3], G[r, 4], G[r, 5]
        for j in range(d):
            v = a[j]
            D0[j] += g0 * v
            D1[j] += g1 * v
            D2[j] += g2 * v
            D3[j] += g3 * v
            D4[j] += g4 * v
            D5[j] += g5 * v
    # the input rows stepped from the output rows as they still are
    for r in range(k):
        row = out_i[ins[r]]
        g0, g1, g2, g3, g4, g5 = coef * G[r, 0], coef * G[r, 1], coef * G[r, 2], coef * G[r, 3], coef * G[r, 4], \
            coef * G[r, 5]
        for j in range(d):
            row[j] += g0 * O0[j] + g1 * O1[j] + g2 * O2[j] + g3 * O3[j] + g4 * O4[j] + g5 * O5[j]
    step_outputs(outs, k, G, dOut, coef, out_o)
    return loss


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def word_part_chunk(Wi, Wo, tokens, offsets, lo, hi, keep, table, params, done, buffers):
    """Skip-gram with negative sampling over sentences ``lo..hi``: one thread's share of a word-part batch.

    Each kept word is a centre; its window's contexts are the inputs, the centre and ``params.negatives``
    noise words (drawn once a window) the outputs, and the window is one step (:func:`sgns_window`): each
    row read once a window, as in Ji et al. 2016's HogBatch.

    Parameters
    ----------
    Wi : array of float32, shape (V, dw)
        The word part's rows (word2vec's input vectors), updated in place.
    Wo : array of float32, shape (V, dw + 1)
        Its output rows then biases (see :func:`sgns_window`), updated in place.
    tokens, offsets : the encoded corpus (int32 token ids, int64 sentence offsets).
    keep : array of float32, shape (V,)
        Subsampling: the probability of keeping each word (``sampling.keep_words``).
    table : array of int32
        The noise words' unigram^0.75 table (``sampling.draw_noise``).
    params : record (``scbow.training.backends.params.WORD_PARAMS``)
        ``window``, ``negatives``; the learning rate decays linearly from ``lr`` over the ``total``
        sentences of all passes, never below ``lr_min``; sentence ``p`` of all passes draws from
        stream ``(seed, stream + p)``, whatever thread or GPU block trains it.
    done : int
        Sentences of all passes before sentence ``lo``.
    buffers : the thread's scratch arrays (:func:`word_part_buffers`).

    Returns ``(loss, pairs)``: the summed loss and the number of (context, centre) pairs trained.
    """
    state = np.empty(1, dtype=np.uint64)
    loss = 0.0
    pairs = 0
    for s in range(lo, hi):
        position = done + s - lo
        seed_state(params.seed, params.stream + position, state)
        sl, sp = word_sentence(Wi, Wo, tokens, offsets[s], offsets[s + 1], keep, table, params.window,
                               params.negatives, np.float32(-lr_at(params, position)), state, buffers)
        loss += sl
        pairs += sp
    return loss, pairs


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def word_sentence(Wi, Wo, tokens, start, stop, keep, table, window, n_neg, coef, state, buffers, log=None):
    """The windows of the sentence ``tokens[start:stop]``, each one step of ``coef`` times its gradient
    (:func:`sgns_window`; a ``coef`` of 0 only scores them). Returns ``(loss, pairs)``. ``log``: int32
    (>= windows, 1 + len(ins) + len(outs)), each window's ``k``, inputs and outputs (None: not kept)."""
    kept, ins, outs, G, dOut = buffers
    scratch = (G, dOut)
    loss = 0.0
    pairs = 0
    windows = 0
    t = start
    while t < stop:
        n, t = keep_words(tokens, t, stop, keep, state, kept)
        for i in range(n):
            c_lo, c_hi = context_span(i, n, window, state)
            if c_hi - c_lo <= 1:
                continue
            k = window_inputs(kept, i, c_lo, c_hi, ins)
            draw_noise(kept[i], n_neg, table, state, outs)
            if log is not None:
                log[windows, 0] = k
                log[windows, 1:1 + k] = ins[:k]
                log[windows, 1 + ins.shape[0]:] = outs
                windows += 1
            loss += sgns_window(Wi, Wo, ins, k, outs, coef, Wi, Wo, scratch)
            pairs += k
    return loss, pairs


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def word_part_loss(Wi, Wo, tokens, offsets, sentences, keep, table, params, buffers):
    """The word part's mean loss per (context, centre) pair over ``sentences`` (int64 ids) at the rows
    as they are, nothing stepped; each sentence draws from its own stream of ``seed``, so the same rows
    always score the same and two calls score the same windows and noise words."""
    state = np.empty(1, dtype=np.uint64)
    loss = 0.0
    pairs = 0
    for s in sentences:
        seed_state(params.seed, (1 << 41) + s, state)
        sl, sp = word_sentence(Wi, Wo, tokens, offsets[s], offsets[s + 1], keep, table, params.window,
                               params.negatives, np.float32(0.0), state, buffers)
        loss += sl
        pairs += sp
    return loss / max(pairs, 1)


def word_part_buffers(params, dw: int) -> tuple:
    """One thread's scratch arrays for :func:`word_part_chunk`: ``(kept, ins, outs, G, dOut)``, int32
    (WORD_SEGMENT,), (2 * window,), (1 + n_neg,); float32 (2 * window, 1 + n_neg), (1 + n_neg, dw)
    (``params``: the word part's record, its ``window`` and ``negatives``)."""
    from .sampling import WORD_SEGMENT as SEG

    window, n_neg = int(params.window), int(params.negatives)
    w2 = max(2 * window, 1)
    return (np.empty(SEG, dtype=np.int32), np.empty(w2, dtype=np.int32), np.empty(1 + n_neg, dtype=np.int32),
            np.empty((w2, 1 + n_neg), dtype=np.float32), np.empty((1 + n_neg, dw), dtype=np.float32))


def word_part_windows(Wi, Wo, tokens, offsets, s, keep, table, params):
    """The windows that :func:`word_part_chunk` draws for sentence ``s`` as the first of all passes (stream
    ``params.stream``), each ``(inputs, outputs)``: its context words, then its centre and shared noise words
    (-1: skipped); and their loss at the rows as they are (for tests against ``scbow.reference``)."""
    buffers = word_part_buffers(params, Wi.shape[1])
    w2 = len(buffers[1])
    state = np.empty(1, dtype=np.uint64)
    seed_state(params.seed, params.stream, state)
    log = np.zeros((offsets[s + 1] - offsets[s], 1 + w2 + len(buffers[2])), dtype=np.int32)
    loss, _ = word_sentence(Wi, Wo, tokens, offsets[s], offsets[s + 1], keep, table, params.window, params.negatives,
                            np.float32(0.0), state, buffers, log)
    return loss, [(row[1:1 + row[0]].tolist(), row[1 + w2:].tolist()) for row in log if row[0] > 0]


@njit(cache=True, nogil=True)
def train_chunk(W, corpus, order, rate, params, lo, hi, done, c, stats):
    """Train on chunk ``c`` of the targets ``order[lo:hi]`` (arguments of ``train_batch_serial``): one
    thread's work, with its own scratch, random stream and hot rows."""
    tokens, offsets, sent_doc, doc_offsets = corpus
    n_neg = params.negatives
    neg_mode = params.neg_mode
    n_chunks = params.chunks
    n_hot = min(params.hot, W.shape[0])
    flush_every = max(params.flush, 1)
    d = W.shape[1]
    per = (hi - lo + n_chunks - 1) // n_chunks
    members = np.empty(EXAMPLE_FIXED + n_neg, dtype=np.int64)
    scratch = (np.empty((2, EXAMPLE_FIXED + n_neg, d), dtype=np.float32), np.empty((4, EXAMPLE_FIXED + n_neg), dtype=np.float64),
               np.zeros(W.shape[0], dtype=np.int32))
    hot = (n_hot, np.zeros((max(n_hot, 1), d), dtype=np.float32), np.ones(max(n_hot, 1), dtype=np.float32))
    state = np.empty(1, dtype=np.uint64)
    seed_state(params.seed, done + c, state)
    c_lo = lo + c * per
    c_hi = min(hi, c_lo + per)
    loss_sum = 0.0
    count = 0
    # Examples are drawn one ahead, so that the next one's rows are prefetched while one trains (the
    # random stream is drawn in the same order: the same examples).
    ahead = np.empty(EXAMPLE_FIXED + n_neg, dtype=np.int64)
    k_ahead, pos_ahead = 0, 0
    if c_lo < c_hi:
        k_ahead, pos_ahead = fill_example(order[c_lo], sent_doc, doc_offsets, n_neg, neg_mode, state, ahead)
    for e in range(c_lo, c_hi):
        k, n_pos = k_ahead, pos_ahead
        members[:k] = ahead[:k]
        if e + 1 < c_hi:
            k_ahead, pos_ahead = fill_example(order[e + 1], sent_doc, doc_offsets, n_neg, neg_mode, state, ahead)
            if pos_ahead > 0:
                prefetch_example(W, tokens, offsets, ahead, k_ahead)
        if n_pos == 0:
            continue
        # progress of the whole run, as if the chunks were interleaved
        lr = lr_at(params, done + (e - c_lo) * n_chunks + c)
        loss_sum += sgd_step(W, tokens, offsets, members[:k], n_pos, lr, params, rate, scratch, hot)
        count += 1
        if n_hot > 0 and count % flush_every == 0:
            flush_rows(W, hot[1], hot[2], n_hot)
    if n_hot > 0:
        flush_rows(W, hot[1], hot[2], n_hot)
    stats[c, 0] = loss_sum
    stats[c, 1] = count


@njit(cache=True, nogil=True)
def train_batch_serial(W, corpus, order, rate, params, lo, hi, done, stats):
    """Train on the examples of targets ``order[lo:hi]``, chunk after chunk in this thread.

    Parameters
    ----------
    W : array of float32, shape (V, d)
        Updated in place.
    corpus : tuple ``(tokens, offsets, sent_doc, doc_offsets)``
        int32 (n_tokens,), int64 (n_sentences + 1,), int32 (n_sentences,) and int64
        (n_documents + 1,): the encoded corpus (``scbow.training.corpus.Corpus``).
    order : array of int64, shape (n_targets,)
        Target sentences of this epoch, shuffled; each has a neighbour.
    rate : array of float32, shape (V,)
        Per-word step factor (see ``sgd_step``).
    params : record (``scbow.training.backends.params.PARAMS``)
        The run's settings; with ``params.hot > 0`` the words ``w < hot`` are updated every
        ``params.flush`` examples of a chunk (and at its end) instead of in place.
    lo, hi : int
        The targets of this call, ``order[lo:hi]``, cut into ``params.chunks`` chunks.
    done : int
        Examples of the run before ``lo``: the schedule's position and the random streams.
    stats : array of float64, shape (chunks, 2)
        Output: loss sum and example count per chunk.
    """
    for c in range(params.chunks):
        train_chunk(W, corpus, order, rate, params, lo, hi, done, c, stats)


def example_loss_grad(W, tokens, offsets, members, n_pos, max_len=0):
    """The loss and dense float64 gradient of one example: ``example_forward``'s gradient of each mean spread
    over its sentence's words, as ``sgd_step`` scatters it (tests against the reference)."""
    members = np.ascontiguousarray(members, dtype=np.int64)
    buf, work = np.empty((2, len(members), W.shape[1]), dtype=np.float32), np.empty((4, len(members)))
    loss = example_forward(W, tokens, offsets, members, n_pos, max_len, buf, work)
    grad = np.zeros(W.shape)
    for m, s in enumerate(members):
        n = int(work[3, m])
        np.add.at(grad, tokens[offsets[s]:offsets[s] + n], buf[1, m] / n)
    return loss, grad
