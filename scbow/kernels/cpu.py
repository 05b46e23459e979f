"""Numba CPU kernels of Siamese CBOW training: arrays and scalars in, no objects.

One example is a target sentence, its positives (the neighbouring sentences of the same
document) and its negatives. ``example_step`` computes the sentence means, the cosine
softmax loss and the analytic gradient (see ``scbow.reference``), then scatters the
gradient onto the rows of the words of the example. ``train_chunk`` runs a contiguous
chunk of a batch's examples: the whole work of one thread, compiled once and cached on
disk. ``train_batch_serial`` runs the chunks one after the other (deterministic for a
seed); ``train_batch_parallel`` runs them at once on Python threads, which the compiled
chunk releases the GIL for. The threads write into the shared matrix without locks
(Hogwild): collisions lose an occasional update, which SGD tolerates, and move cache
lines between the cores, which is why each thread buffers the steps of the most frequent
words (``HOT_ROWS``) and applies them every few examples. Nothing is compiled with ``parallel=True``: a
``prange`` around the chunk would link, and so recompile, the whole kernel in every
process (about 3 s).
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..reference import NORM_EPS

# Reassociation lets LLVM vectorise the dot products; no-NaN flags stay off so that a
# diverging run still produces the NaN the driver checks for.
FASTMATH = {"reassoc", "contract", "arcp", "nsz"}

NEG_DOCUMENT = 0
NEG_UNIFORM = 1

# Layout of the integer parameters of train_batch.
P_LO, P_HI, P_DONE, P_NEGATIVES, P_MAX_LEN, P_NEG_MODE, P_SEED, P_CHUNKS, P_HOT, P_FLUSH = range(10)
N_IPARAMS = 10

# Threads buffer the updates of the HOT_ROWS most frequent words (ids 0..HOT_ROWS-1: the
# vocabulary is sorted by count) privately and add them to the matrix every FLUSH_EVERY
# examples. Those words are in almost every example ("the", ",", "."); written in place,
# their rows' cache lines would move between the cores on every update.
HOT_ROWS = 64
FLUSH_EVERY = 16
# Layout of the float parameters.
P_LR, P_LR_MIN, P_TOTAL, P_DECAY = range(4)
N_FPARAMS = 4


@intrinsic
def prefetch_row(typingctx, arr, row):
    """Hint the CPU to bring the first cache line of ``arr[row]`` (a 2-D C array) into its cache.

    A hint only (LLVM's ``prefetch``): it never faults and changes no value. The lines after
    the first follow from the hardware prefetcher once the row is read in order.
    """
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
def example_step(W, tokens, offsets, members, n_pos, max_len, buf, work, out, coef, decay, rate, counts, hot, pending,
                 keep):
    """Loss of one example; add ``coef * (1/|x|) * dL/ds_x`` to ``out[w]`` for its words.

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
        Scratch: sentence means in ``buf[0]``, their gradients in ``buf[1]``.
    work : array of float64, shape (4, >= k)
        Scratch: norms, cosines, dL/dc and lengths.
    out : array of float32 or float64, shape (V, d)
        Receives the scaled gradient: ``W`` itself with ``coef = -lr`` for an SGD step
        (all reads happen before any write), or a zero array with ``coef = 1`` for dL/dW.
        A negative ``coef`` means ``out`` is ``W``.
    coef : float
    decay : float
        Weight decay: ``coef * decay * W[w]`` is added for every token occurrence too, the
        gradient of ``decay/2 * |W[w]|^2`` per occurrence (see ``scbow.reference``). In an
        SGD step (``coef < 0``) a word's total shrink is capped at its whole row.
    rate : array of float32, shape (V,)
        Per-word factor of the gradient step (a diagonal preconditioner): row ``w``
        receives ``rate[w] * coef * (1/|x|) * dL/ds_x``. Training with ``rate = a**2`` on
        ``W = a * U`` is plain SGD on ``U`` whose sentences are ``a``-weighted averages;
        all ones for the plain gradient.
    counts : array of int32, shape (V,)
        Scratch, all zero on entry and on return: occurrences of each word in the example.
    hot : int
        SGD steps only (``coef < 0``): words ``w < hot`` are not written to ``W``; their
        gradient step is added to ``pending[w]`` and their weight-decay factor multiplied
        into ``keep[w]``, for ``flush_rows`` to apply. 0 writes every row in place.
    pending : array of float32, shape (>= hot, d)
    keep : array of float32, shape (>= hot,)

    Returns
    -------
    loss : float
        Without the weight-decay term (the data loss the driver reports).
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

    if decay != 0.0:
        for m in range(k):
            start = offsets[members[m]]
            for t in range(start, start + np.int64(lens[m])):
                counts[tokens[t]] += 1

    sgd = coef < 0.0
    for m in range(k):
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
            if w < hot:
                if c > 0:
                    counts[w] = 0
                    keep[w] *= np.float32(1.0) + np.float32(max(coef * decay * c, -1.0))
                for j in range(d):
                    pending[w, j] += scale * gm[j]
                continue
            if c > 0:
                # first occurrence: no write has reached row w yet, so W[w] is the value
                # the gradient was computed at even when out is W; decay it once, c times
                counts[w] = 0
                # an SGD step shrinks the row by c * lr * decay; past 1 it would flip the
                # row's sign and diverge, so a step at most zeroes it (a gradient, coef > 0,
                # is never capped)
                f = np.float32(max(coef * decay * c, -1.0))
                if sgd:
                    # out is W: one in-place pass, W[w] * (1 + f) + scale * g
                    shrink = np.float32(1.0) + f
                    for j in range(d):
                        W[w, j] = W[w, j] * shrink + scale * gm[j]
                else:
                    # out is a separate gradient: copy W[w] into a free row first, so
                    # that the loop reads and writes no overlapping arrays and vectorises
                    old = means[0]
                    for j in range(d):
                        old[j] = W[w, j]
                    for j in range(d):
                        out[w, j] += scale * gm[j] + f * old[j]
            else:
                for j in range(d):
                    out[w, j] += scale * gm[j]
    return loss


@njit(cache=True, nogil=True)
def _next(state):
    """xorshift64* step; ``state`` is an array of uint64, shape (1,). Returns int64 >= 0."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return np.int64((x * np.uint64(2685821657736338717)) >> np.uint64(1))


@njit(cache=True, nogil=True)
def seed_state(seed, stream, state):
    """Seed ``state`` (uint64, shape (1,)) from two integers with splitmix64."""
    z = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(stream) + np.uint64(0x632BE59BD9B4E019)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    if z == np.uint64(0):
        z = np.uint64(0x2545F4914F6CDD1D)
    state[0] = z


@njit(cache=True, nogil=True)
def fill_example(target, sent_doc, doc_offsets, n_neg, neg_mode, state, members):
    """Write the sentences of the example of ``target`` into ``members``.

    Parameters
    ----------
    target : int
    sent_doc : array of int32, shape (n_sentences,)
    doc_offsets : array of int64, shape (n_documents + 1,)
    n_neg : int
    neg_mode : int
        NEG_DOCUMENT: negatives from the target's document when it has a sentence that is
        neither the target nor a positive, else from the corpus; NEG_UNIFORM: corpus.
    state : array of uint64, shape (1,)
        Random state, advanced.
    members : array of int64, shape (>= 3 + n_neg,)
        Output: target, positives, negatives.

    Returns
    -------
    (k, n_pos) : tuple of int
        Sentences written and positives among them; n_pos = 0 when the target has no
        neighbour in its document (no example).
    """
    n_sent = sent_doc.shape[0]
    doc = sent_doc[target]
    members[0] = target
    n_pos = 0
    if target > 0 and sent_doc[target - 1] == doc:
        n_pos += 1
        members[n_pos] = target - 1
    if target + 1 < n_sent and sent_doc[target + 1] == doc:
        n_pos += 1
        members[n_pos] = target + 1
    if n_pos == 0:
        return 1, 0
    lo = np.int64(0)
    size = np.int64(n_sent)
    if neg_mode == NEG_DOCUMENT:
        d_lo = doc_offsets[doc]
        d_size = doc_offsets[doc + 1] - d_lo
        if d_size > 1 + n_pos:
            lo = d_lo
            size = d_size
    for m in range(n_neg):
        while True:
            r = lo + _next(state) % size
            if r != target and r != members[1] and (n_pos == 1 or r != members[2]):
                break
        members[1 + n_pos + m] = r
    return 1 + n_pos + n_neg, n_pos


@njit(cache=True, nogil=True, fastmath=FASTMATH)
def flush_rows(W, pending, keep, hot):
    """Apply the buffered steps of rows ``0..hot-1``: ``W[w] = keep[w] * W[w] + pending[w]``.

    Then reset ``pending`` to 0 and ``keep`` to 1. The decays of the buffered examples
    multiply, as they would have in place; their gradient steps add up.
    """
    d = W.shape[1]
    for w in range(min(hot, W.shape[0])):
        k = keep[w]
        for j in range(d):
            W[w, j] = W[w, j] * k + pending[w, j]
            pending[w, j] = 0.0
        keep[w] = 1.0


@njit(cache=True, nogil=True)
def train_chunk(W, tokens, offsets, sent_doc, doc_offsets, order, rate, fparams, iparams, c, stats):
    """Train on chunk ``c`` of the targets ``order[lo:hi]`` (arguments of ``train_batch_serial``).

    The whole work of one thread, with its own scratch, random stream and buffer of hot
    rows; compiled once and cached on disk, and run by ``train_batch_serial`` (chunk after
    chunk) and ``train_batch_parallel`` (one thread per chunk).
    """
    lo = iparams[P_LO]
    hi = iparams[P_HI]
    done = iparams[P_DONE]
    n_neg = iparams[P_NEGATIVES]
    max_len = iparams[P_MAX_LEN]
    neg_mode = iparams[P_NEG_MODE]
    seed = iparams[P_SEED]
    n_chunks = iparams[P_CHUNKS]
    hot = min(iparams[P_HOT], W.shape[0])
    flush_every = max(iparams[P_FLUSH], 1)
    lr0 = fparams[P_LR]
    lr_min = fparams[P_LR_MIN]
    total = fparams[P_TOTAL]
    decay = fparams[P_DECAY]
    d = W.shape[1]
    per = (hi - lo + n_chunks - 1) // n_chunks
    members = np.empty(3 + n_neg, dtype=np.int64)
    buf = np.empty((2, 3 + n_neg, d), dtype=np.float32)
    work = np.empty((4, 3 + n_neg), dtype=np.float64)
    counts = np.zeros(W.shape[0], dtype=np.int32)
    state = np.empty(1, dtype=np.uint64)
    pending = np.zeros((max(hot, 1), d), dtype=np.float32)
    keep = np.ones(max(hot, 1), dtype=np.float32)
    seed_state(seed, done + c, state)
    c_lo = lo + c * per
    c_hi = min(hi, c_lo + per)
    loss_sum = 0.0
    count = 0
    # Examples are drawn one ahead: while one trains, the rows of the next are prefetched,
    # so that the rarer words' rows (not in the core's cache) are on their way. The random
    # stream is drawn in the same order, so the examples are the same.
    ahead = np.empty(3 + n_neg, dtype=np.int64)
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
        position = done + (e - c_lo) * n_chunks + c
        lr = max(lr_min, lr0 * (1.0 - position / total))
        loss_sum += example_step(W, tokens, offsets, members[:k], n_pos, max_len, buf, work, W, -lr, decay, rate,
                                 counts, hot, pending, keep)
        count += 1
        if hot > 0 and count % flush_every == 0:
            flush_rows(W, pending, keep, hot)
    if hot > 0:
        flush_rows(W, pending, keep, hot)
    stats[c, 0] = loss_sum
    stats[c, 1] = count


@njit(cache=True, nogil=True)
def train_batch_serial(W, tokens, offsets, sent_doc, doc_offsets, order, rate, fparams, iparams, stats):
    """Train on the examples of targets ``order[lo:hi]``, chunk after chunk in this thread.

    Parameters
    ----------
    W : array of float32, shape (V, d)
        Updated in place.
    tokens : array of int32, shape (n_tokens,)
    offsets : array of int64, shape (n_sentences + 1,)
    sent_doc : array of int32, shape (n_sentences,)
    doc_offsets : array of int64, shape (n_documents + 1,)
    order : array of int64, shape (n_targets,)
        Target sentences of this epoch, shuffled; each has a neighbour.
    rate : array of float32, shape (V,)
        Per-word step factor (see ``example_step``).
    fparams : array of float64, shape (4,)
        lr, lr_min, total examples of the run, weight decay (see P_LR...).
    iparams : array of int64, shape (10,)
        lo, hi, examples done before ``lo``, negatives, max_len, negative mode, seed,
        chunks, hot rows, flush interval (see P_LO...). With hot rows > 0 the words
        ``w < hot`` are updated every ``flush interval`` examples of a chunk (and at its
        end) instead of in place (see ``HOT_ROWS``); 0 is plain per-example SGD.
    stats : array of float64, shape (chunks, 2)
        Output: loss sum and example count per chunk.
    """
    for c in range(iparams[P_CHUNKS]):
        train_chunk(W, tokens, offsets, sent_doc, doc_offsets, order, rate, fparams, iparams, c, stats)


_pool = None  # the worker threads of train_batch_parallel, made on first use
_pool_workers = 0


def train_batch_parallel(W, tokens, offsets, sent_doc, doc_offsets, order, rate, fparams, iparams, stats):
    """``train_batch_serial`` with its chunks on as many threads at once (Hogwild).

    ``train_chunk`` releases the GIL, so plain Python threads run the chunks in parallel;
    the calling thread runs chunk 0. Not deterministic: the chunks' updates race.
    """
    global _pool, _pool_workers
    from concurrent.futures import ThreadPoolExecutor

    n = int(iparams[P_CHUNKS])
    if _pool_workers < n - 1:
        _pool_workers = n - 1
        _pool = ThreadPoolExecutor(_pool_workers, thread_name_prefix="scbow-train")
    args = (W, tokens, offsets, sent_doc, doc_offsets, order, rate, fparams, iparams)
    futures = [_pool.submit(train_chunk, *args, c, stats) for c in range(1, n)]
    try:
        train_chunk(*args, 0, stats)
    finally:
        for f in futures:
            f.result()


def example_loss_grad(W, tokens, offsets, members, n_pos, max_len=0, weight_decay=0.0):
    """Loss and dense float64 gradient of one example, computed by ``example_step``.

    The kernel path the trainer uses, exposed for tests against ``scbow.reference``.
    """
    members = np.ascontiguousarray(members, dtype=np.int64)
    k = len(members)
    grad = np.zeros(W.shape, dtype=np.float64)
    buf = np.empty((2, k, W.shape[1]), dtype=np.float32)
    work = np.empty((4, k), dtype=np.float64)
    counts = np.zeros(W.shape[0], dtype=np.int32)
    rate = np.ones(W.shape[0], dtype=np.float32)
    loss = example_step(W, tokens, offsets, members, n_pos, max_len, buf, work, grad, 1.0, weight_decay, rate, counts,
                        0, buf[0], work[0].astype(np.float32))
    if weight_decay:
        ids = []
        for s in members:
            stop = offsets[s + 1] if max_len <= 0 else min(offsets[s + 1], offsets[s] + max_len)
            ids.append(tokens[offsets[s]:stop])
        rows = W[np.concatenate(ids)].astype(np.float64)
        loss += 0.5 * weight_decay * float((rows * rows).sum())
    return loss, grad
