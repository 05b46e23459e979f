"""numba.cuda kernels of Siamese CBOW training: the GPU twin of ``kernels.cpu``.

Launch shape: one thread block per example, thread ``t`` owning columns ``t, t + T, ...``; a grid of
a few thousand blocks strides over a launch's examples. Thread 0 draws the example (``kernels.sampling``
compiled for the device) and computes the softmax; the means, the partial sums of norms and dot
products (a tree reduction in shared memory), the gradients and the scatter are split by column. A
thread keeps its columns' means in local memory, so no shared array grows with the dimension.

Updates use float32 ``cuda.atomic.add``, never plain writes: thousands of concurrent examples all
contain "the", "," and ".", and a plain read-modify-write would drop most updates to exactly those rows.

Weight decay is multiplicative, and atomic adds of ``-f * W_old`` from concurrent examples that read
the same ``W_old`` compound wrongly (three capped decays of "the": ``W - 3W = -2W``, growing without
bound). So the one write per word and example that carries the decay is a compare-and-swap loop on the
float's bits, ``W <- W * (1 + f) + g`` on the current value; the other occurrences are atomic adds.
Within an example the order is the CPU kernel's: every mean read first, a word's decayed write first.

The kernels are built per (max sentences per example, dimension, threads per block), since CUDA local
and shared arrays need sizes at compile time; the tests run them in Numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``).
"""

from __future__ import annotations

import math
from functools import lru_cache
from types import SimpleNamespace

import numpy as np
from numba import cuda
from numba.core import config as _numba_config

from ..config import NORM_EPS
from . import sampling

SIMULATOR = bool(_numba_config.ENABLE_CUDASIM)

# Words of an example whose decay factor is kept in shared memory (more: recomputed, same result).
MAX_SHARED_TOKENS = 1024

if SIMULATOR:
    def _float_as_int(x):
        return np.float32(x).view(np.int32)

    def _int_as_float(i):
        return np.int32(i).view(np.float32)
else:  # pragma: no cover - needs a GPU
    from numba.cuda import libdevice

    _float_as_int = libdevice.float_as_int
    _int_as_float = libdevice.int_as_float


# ---------------------------------------------------------------------------------------
# Sampling and the learning rate: kernels.sampling's @njit functions, which numba-cuda
# compiles as device functions when a kernel calls them. The simulator runs kernels as
# Python and cannot pass its simulated arrays (or the parameter record) to a compiled
# function: there these run as their Python source (the same code; the random steps
# stay compiled).

seed_state = sampling.seed_state
lr_at = sampling.lr_at.py_func if SIMULATOR else sampling.lr_at
fill_example = sampling.fill_example.py_func if SIMULATOR else sampling.fill_example
keep_words = sampling.keep_words.py_func if SIMULATOR else sampling.keep_words
context_span = sampling.context_span.py_func if SIMULATOR else sampling.context_span
window_inputs = sampling.window_inputs.py_func if SIMULATOR else sampling.window_inputs
draw_noise = sampling.draw_noise.py_func if SIMULATOR else sampling.draw_noise
WORD_SEGMENT = sampling.WORD_SEGMENT


@cuda.jit
def sample_kernel(targets, sent_doc, doc_offsets, n_neg, neg_mode, seed, members, kn):
    """Draw the example of ``targets[i]`` with stream ``i`` (one thread each; for tests).

    targets: int64 (n,); sent_doc: int32 (n_sentences,); doc_offsets: int64 (n_docs + 1,);
    members: int64 (n, >= 3 + n_neg) output; kn: int64 (n, 2) output (k, n_pos).
    """
    i = cuda.grid(1)
    if i < targets.shape[0]:
        state = cuda.local.array(1, np.uint64)
        seed_state(seed, i, state)
        k, n_pos = fill_example(targets[i], sent_doc, doc_offsets, n_neg, neg_mode, state, members[i])
        kn[i, 0] = k
        kn[i, 1] = n_pos


# ---------------------------------------------------------------------------------------
# One example, by one thread block


@cuda.jit(device=True)
def decay_factor(p, tokens, starts, lens, k, coef, decay):
    """Decay coefficient of the token at flat position ``p`` of the example.

    ``max(coef * decay * c, -1)`` at the first occurrence of a word that occurs ``c`` times
    in the example (the CPU kernel's rule: a step at most zeroes a row), 0 at the others.
    """
    m = 0
    q0 = 0
    while p >= q0 + lens[m]:
        q0 += lens[m]
        m += 1
    w = tokens[starts[m] + p - q0]
    c = 0
    q = 0
    for m2 in range(k):
        for t in range(starts[m2], starts[m2] + lens[m2]):
            if tokens[t] == w:
                if q < p:
                    return 0.0
                c += 1
            q += 1
    return max(coef * decay * c, -1.0)


@cuda.jit(device=True)
def sentence_spans(offsets, members, k, max_len, starts, lens):
    """First token and length (at most ``max_len`` if > 0) of each sentence of the example."""
    for m in range(k):
        s = members[m]
        start = offsets[s]
        n = offsets[s + 1] - start
        if max_len > 0 and n > max_len:
            n = max_len
        starts[m] = start
        lens[m] = n


def shared_bytes(k_max: int, threads: int) -> int:
    """Static shared memory of a block of the kernels :func:`build` makes, in bytes."""
    return 8 * 3 * k_max + 16 + 12 * k_max + 8 * k_max * threads + 4 * MAX_SHARED_TOKENS + 16


@lru_cache(maxsize=None)
def build(k_max: int, dim: int, threads: int) -> SimpleNamespace:
    """Kernels for examples of at most ``k_max`` sentences, ``dim`` columns, ``threads`` per block.

    ``threads`` must be a power of two (tree reduction). Returns a namespace with ``train``
    (the training kernel), ``example`` (one example with given sentences, for tests) and the sizes.
    """
    if threads < 1 or threads & (threads - 1):
        raise ValueError(f"threads per block must be a power of two, got {threads}")
    T = threads
    R = (dim + T - 1) // T  # columns per thread
    K = k_max
    KR = K * R
    Q = 2 * K
    MAXTOK = MAX_SHARED_TOKENS

    @cuda.jit(device=True)
    def example_core(W, Wi, out, tokens, kn, coef, decay, rate, in_place, shared, local):
        """Loss of one example (into ``scal[0]``) and its scaled gradient added to ``out``.

        All threads of the block call it, after thread 0 filled ``starts`` and ``lens`` with
        :func:`sentence_spans` and a ``syncthreads``. ``kn``: (sentences, positives) of the
        example. ``shared``: the block's ``(starts, lens, coefs, red, fdec, scal)``;
        ``local``: the thread's ``(means, work)``. Called through :func:`sgd_block` and
        :func:`gradient_block`, which say what ``out``, ``coef`` and ``in_place`` are.
        """
        starts, lens, coefs, red, fdec, scal = shared
        means, work = local
        k = kn[0]
        n_pos = kn[1]
        tid = cuda.threadIdx.x
        # means of this thread's columns, partial squared norms and dots with the target
        for m in range(k):
            start = starts[m]
            stop = start + lens[m]
            inv = np.float32(1.0) / np.float32(lens[m])
            sq = np.float32(0.0)
            dot = np.float32(0.0)
            for r in range(R):
                j = tid + r * T
                acc = np.float32(0.0)
                if j < dim:
                    for t in range(start, stop):
                        acc += W[tokens[t], j]
                    acc *= inv
                means[m * R + r] = acc
                sq += acc * acc
                dot += means[r] * acc
            red[m, tid] = sq
            red[K + m, tid] = dot
        cuda.syncthreads()
        half = T // 2
        while half > 0:
            if tid < half:
                for m in range(k):
                    red[m, tid] += red[m, tid + half]
                    red[K + m, tid] += red[K + m, tid + half]
            cuda.syncthreads()
            half //= 2

        if tid == 0:
            # work rows: norms, cosines, dL/dc
            n_i = max(math.sqrt(red[0, 0]), NORM_EPS)
            top = -2.0
            for m in range(1, k):
                work[0, m] = max(math.sqrt(red[m, 0]), NORM_EPS)
                work[1, m] = red[K + m, 0] / (n_i * work[0, m])
                top = max(top, work[1, m])
            total = 0.0
            for m in range(1, k):
                work[2, m] = math.exp(work[1, m] - top)
                total += work[2, m]
            log_total = math.log(total)
            loss = 0.0
            t_pos = 1.0 / n_pos
            a_i = 0.0
            for m in range(1, k):
                prob = work[2, m] / total
                g = prob
                if m <= n_pos:
                    loss -= t_pos * (work[1, m] - top - log_total)
                    g = prob - t_pos
                # dL/ds_i = sum_j g_j (s_j/(|s_i||s_j|) - c_j s_i/|s_i|^2)
                # dL/ds_j = g_j (s_i/(|s_i||s_j|) - c_j s_j/|s_j|^2)
                coefs[0, m] = g / (n_i * work[0, m])
                coefs[1, m] = g * work[1, m] / (work[0, m] * work[0, m])
                a_i += g * work[1, m]
            coefs[1, 0] = a_i / (n_i * n_i)
            for m in range(k):
                coefs[2, m] = coef / lens[m]
            scal[0] = loss

        if decay != 0.0:
            n_tok = 0
            for m in range(k):
                n_tok += lens[m]
            for q in range(tid, min(n_tok, MAXTOK), T):
                fdec[q] = decay_factor(q, tokens, starts, lens, k, coef, decay)
        cuda.syncthreads()

        # gradients of the means, column by column, in place of the means
        for r in range(R):
            s_i = means[r]
            g_i = -coefs[1, 0] * s_i
            for m in range(1, k):
                g_i += coefs[0, m] * means[m * R + r]
            for m in range(1, k):
                means[m * R + r] = coefs[0, m] * s_i - coefs[1, m] * means[m * R + r]
            means[r] = g_i

        p = 0
        for m in range(k):
            scale = coefs[2, m]
            for t in range(starts[m], starts[m] + lens[m]):
                w = tokens[t]
                step = scale * rate[w]
                f = np.float32(0.0)
                if decay != 0.0:
                    if p < MAXTOK:
                        f = fdec[p]
                    else:
                        f = np.float32(decay_factor(p, tokens, starts, lens, k, coef, decay))
                for r in range(R):
                    j = tid + r * T
                    if j < dim:
                        gv = step * means[m * R + r]
                        if in_place != 0 and f != 0:
                            idx = w * dim + j
                            old = Wi[idx]
                            while True:
                                new = _int_as_float(old) * (np.float32(1.0) + f) + gv
                                seen = cuda.atomic.cas(Wi, idx, old, _float_as_int(new))
                                if seen == old:
                                    break
                                old = seen
                        else:
                            cuda.atomic.add(out, (w, j), gv + f * W[w, j])
                p += 1

    @cuda.jit(device=True)
    def sgd_block(W, Wi, tokens, kn, lr, decay, rate, shared, local):
        """One in-place SGD step of the example on ``W``: ``W -= lr * rate * dL/dW``.

        Writes that carry a row's decay go through ``Wi``, the int32 bits of ``W``
        flattened (a compare-and-swap loop); every other write is an atomic add.
        """
        example_core(W, Wi, W, tokens, kn, -lr, decay, rate, 1, shared, local)

    @cuda.jit(device=True)
    def gradient_block(W, Wi, out, tokens, kn, coef, decay, rate, shared, local):
        """Add ``coef * dL/dW`` of the example to ``out``, a float32 array apart from ``W``."""
        example_core(W, Wi, out, tokens, kn, coef, decay, rate, 0, shared, local)

    @cuda.jit
    def train(W, Wi, corpus, order, rate, params, lo, hi, done, stats):
        """Train on the examples of targets ``order[lo:hi]``, one block per example at a time.

        W: float32 (V, dim), updated in place; Wi: int32 (V * dim,), the same memory;
        corpus: (tokens int32 (n_tokens,), offsets int64 (n_sentences + 1,), sent_doc
        int32 (n_sentences,), doc_offsets int64 (n_docs + 1,)); order: int64 (n_targets,);
        rate: float32 (V,), the per-word step factors (kernels.cpu.sgd_step); params: the
        run's record (scbow.training.backends.params.PARAMS); lo, hi, done: the targets of this
        launch and the examples of the run before them; stats: float64 (grid, 2) output,
        loss sum and examples per block.

        The example at position ``e`` is number ``done + e - lo`` of the run: its learning
        rate is ``lr_at(params, position)`` and its negatives come from the random stream
        ``(seed, position)``, whatever the launch shape.
        """
        tid = cuda.threadIdx.x
        members = cuda.shared.array(K, np.int64)
        starts = cuda.shared.array(K, np.int64)
        lens = cuda.shared.array(K, np.int64)
        kn = cuda.shared.array(2, np.int64)
        coefs = cuda.shared.array((3, K), np.float32)
        red = cuda.shared.array((Q, T), np.float32)
        fdec = cuda.shared.array(MAXTOK, np.float32)
        scal = cuda.shared.array(2, np.float64)
        means = cuda.local.array(KR, np.float32)
        work = cuda.local.array((3, K), np.float64)
        state = cuda.local.array(1, np.uint64)

        tokens, offsets, sent_doc, doc_offsets = corpus
        n_neg = params.negatives
        max_len = params.max_len
        neg_mode = params.neg_mode
        seed = params.seed
        decay = params.decay
        shared = (starts, lens, coefs, red, fdec, scal)
        local = (means, work)
        loss_sum = 0.0
        count = 0
        e = lo + cuda.blockIdx.x
        while e < hi:
            if tid == 0:
                position = done + (e - lo)
                seed_state(seed, position, state)
                k, n_pos = fill_example(order[e], sent_doc, doc_offsets, n_neg, neg_mode, state, members)
                kn[0] = k
                kn[1] = n_pos
                scal[1] = lr_at(params, position)
                sentence_spans(offsets, members, k, max_len, starts, lens)
            cuda.syncthreads()
            if kn[1] > 0:
                sgd_block(W, Wi, tokens, kn, scal[1], decay, rate, shared, local)
                if tid == 0:
                    loss_sum += scal[0]
                    count += 1
            cuda.syncthreads()
            e += cuda.gridDim.x
        if tid == 0:
            stats[cuda.blockIdx.x, 0] = loss_sum
            stats[cuda.blockIdx.x, 1] = count

    @cuda.jit
    def example(W, Wi, out, tokens, offsets, members_in, rate, reals, ints, loss_out):
        """One example with given sentences, by one block (the kernel path, for tests).

        members_in: int64 (k,), target, positives, negatives; rate: float32 (V,), per-word
        step factors (ones for the plain gradient); reals: float64 (2,) coef and
        decay; ints: int64 (3,) n_pos, max_len, and 1 for an SGD step on ``W`` with
        ``lr = -coef`` (``sgd_block``) or 0 for ``coef * dL/dW`` into ``out``
        (``gradient_block``); loss_out: float64 (1,).
        """
        tid = cuda.threadIdx.x
        members = cuda.shared.array(K, np.int64)
        starts = cuda.shared.array(K, np.int64)
        lens = cuda.shared.array(K, np.int64)
        coefs = cuda.shared.array((3, K), np.float32)
        red = cuda.shared.array((Q, T), np.float32)
        fdec = cuda.shared.array(MAXTOK, np.float32)
        scal = cuda.shared.array(2, np.float64)
        means = cuda.local.array(KR, np.float32)
        work = cuda.local.array((3, K), np.float64)
        kn = cuda.shared.array(2, np.int64)
        shared = (starts, lens, coefs, red, fdec, scal)
        local = (means, work)
        k = members_in.shape[0]
        if tid == 0:
            for m in range(k):
                members[m] = members_in[m]
            kn[0] = k
            kn[1] = ints[0]
            sentence_spans(offsets, members, k, ints[1], starts, lens)
        cuda.syncthreads()
        if ints[2] != 0:
            sgd_block(W, Wi, tokens, kn, -reals[0], reals[1], rate, shared, local)
        else:
            gradient_block(W, Wi, out, tokens, kn, reals[0], reals[1], rate, shared, local)
        if tid == 0:
            loss_out[0] = scal[0]

    return SimpleNamespace(train=train, example=example, k_max=K, dim=dim, threads=T)


# ---------------------------------------------------------------------------------------
# The word part (scbow.training.wordpart): skip-gram with negative sampling, a window at a time


def word_part_shared_bytes(threads: int, window: int, n_neg: int) -> int:
    """Static shared memory of a block of :func:`build_word_part`'s kernel, in bytes."""
    w2, n_out = max(2 * window, 1), 1 + n_neg
    return 4 * WORD_SEGMENT + 4 * w2 + 4 * n_out + 4 * w2 * n_out + 4 * w2 * n_out * threads + 8 * 3 + 16


@lru_cache(maxsize=None)
def build_word_part(dw: int, threads: int, window: int, n_neg: int) -> SimpleNamespace:
    """The word part's kernel for rows of ``dw`` columns, ``threads`` per block (a power of two),
    windows of at most ``window`` words each side and ``n_neg`` noise words a window.

    One block per sentence (as GPU word2vec does: BlazingText, FULL-W2V), its threads over the
    columns (thread ``t`` owns columns ``t, t + T, ...``). Thread 0 draws what
    ``kernels.cpu.word_sentence`` draws, from the same functions and random stream: the kept words
    (``sampling.keep_words``), each centre's window and its inputs (``sampling.context_span``,
    ``window_inputs``) and the noise words shared by the window (``sampling.draw_noise``). A window is
    then ``kernels.cpu.sgns_window``: the scores ``X = Wi[ins] . Wo[outs]^T + bias`` (each thread's partial
    dot products, summed over the block in shared memory), ``G = sigmoid(X) - labels`` on thread 0, and
    the steps, each thread for its own columns: it reads the window's rows in its columns first, computes every step from them,
    then adds them. No other thread of the block touches those columns, so within a block every
    step is computed from the rows as they were before it, as on the CPU.

    Other blocks train other sentences at the same time on the same rows (every sentence has "the"
    among its outputs or inputs), so every write is an atomic add (see the module's docstring: a
    plain read-modify-write would lose most of the updates of the frequent words). Returns a
    namespace with ``train`` and the sizes.
    """
    if threads < 1 or threads & (threads - 1):
        raise ValueError(f"threads per block must be a power of two, got {threads}")
    T = threads
    R = (dw + T - 1) // T  # columns per thread
    W2 = max(2 * window, 1)  # inputs of a window at most
    NO = 1 + n_neg  # outputs of a window: the centre, then the noise words
    P = W2 * NO

    @cuda.jit
    def train(Wi, Wo, tokens, offsets, lo, hi, keep, table, params, done, stats):
        """Train sentences ``lo..hi-1``, one block per sentence at a time; the GPU twin of
        ``kernels.cpu.word_part_chunk`` (the same arguments, less the buffers).

        Wi: float32 (V, dw), Wo: float32 (V, dw + 1) (output rows, then biases), both updated in place
        with atomic adds; tokens: int32 (n_tokens,); offsets: int64 (n_sentences + 1,); keep: float32
        (V,); table: int32 (n_table,); params: the word part's record
        (``scbow.training.backends.params.WORD_PARAMS``, its window and negatives those the kernel was
        built for); sentence ``lo + i`` is number ``p = done + i`` of all passes: its rate is
        ``max(lr_min, lr * (1 - p / total))`` and it draws from the random stream ``(seed, stream + p)``,
        whatever the launch shape. stats: float64 (grid, 2) output, each block's loss sum and
        (context, centre) pairs.
        """
        tid = cuda.threadIdx.x
        # one array a line: the simulator tells shared arrays apart by the line that makes them
        kept = cuda.shared.array(WORD_SEGMENT, np.int32)
        ins = cuda.shared.array(W2, np.int32)
        outs = cuda.shared.array(NO, np.int32)
        G = cuda.shared.array((W2, NO), np.float32)
        red = cuda.shared.array((P, T), np.float32)
        ints = cuda.shared.array(3, np.int64)  # kept words, next position, inputs of the window
        coef_sh = cuda.shared.array(1, np.float32)
        state = cuda.local.array(1, np.uint64)
        xi = cuda.local.array(W2, np.float32)
        xo = cuda.local.array(NO, np.float32)
        loss = 0.0
        pairs = 0
        s = lo + cuda.blockIdx.x
        while s < hi:
            stop = offsets[s + 1]
            if tid == 0:
                position = done + s - lo
                seed_state(params.seed, params.stream + position, state)
                coef_sh[0] = np.float32(-lr_at(params, position))
                ints[1] = offsets[s]
            cuda.syncthreads()
            while ints[1] < stop:
                cuda.syncthreads()
                if tid == 0:
                    n, t_next = keep_words(tokens, ints[1], stop, keep, state, kept)
                    ints[0] = n
                    ints[1] = t_next
                cuda.syncthreads()
                n = ints[0]
                coef = coef_sh[0]
                for i in range(n):
                    if tid == 0:
                        c_lo, c_hi = context_span(i, n, window, state)
                        k = 0
                        if c_hi - c_lo > 1:
                            k = window_inputs(kept, i, c_lo, c_hi, ins)
                            draw_noise(kept[i], n_neg, table, state, outs)
                        ints[2] = k
                    cuda.syncthreads()
                    k = ints[2]
                    if k > 0:
                        # partial scores over this thread's columns, then summed over the block
                        for r in range(k):
                            c = ins[r]
                            for m in range(NO):
                                o = outs[m]
                                acc = np.float32(0.0)
                                if o >= 0:
                                    for q in range(R):
                                        j = tid + q * T
                                        if j < dw:
                                            acc += Wi[c, j] * Wo[o, j]
                                red[r * NO + m, tid] = acc
                        cuda.syncthreads()
                        half = T // 2
                        while half > 0:
                            if tid < half:
                                for p in range(k * NO):
                                    red[p, tid] += red[p, tid + half]
                            cuda.syncthreads()
                            half //= 2
                        if tid == 0:
                            for r in range(k):
                                for m in range(NO):
                                    o = outs[m]
                                    if o < 0:
                                        G[r, m] = 0.0
                                        continue
                                    x = red[r * NO + m, 0] + Wo[o, dw]
                                    e = math.exp(-abs(x))
                                    sg = 1.0 / (1.0 + e) if x >= 0 else e / (1.0 + e)  # sigmoid(x)
                                    z = -x if m == 0 else x  # the loss is softplus(z)
                                    loss += max(z, 0.0) + math.log1p(e)
                                    G[r, m] = np.float32(sg - 1.0 if m == 0 else sg)
                            pairs += k
                        cuda.syncthreads()
                        # the steps of this thread's columns, from the rows as they were
                        for q in range(R):
                            j = tid + q * T
                            if j < dw:
                                for r in range(k):
                                    xi[r] = Wi[ins[r], j]
                                for m in range(NO):
                                    xo[m] = Wo[outs[m], j] if outs[m] >= 0 else np.float32(0.0)
                                for r in range(k):
                                    g = np.float32(0.0)
                                    for m in range(NO):
                                        g += G[r, m] * xo[m]
                                    cuda.atomic.add(Wi, (ins[r], j), coef * g)
                                for m in range(NO):
                                    if outs[m] >= 0:
                                        g = np.float32(0.0)
                                        for r in range(k):
                                            g += G[r, m] * xi[r]
                                        cuda.atomic.add(Wo, (outs[m], j), coef * g)
                        if tid == 0:
                            for m in range(NO):
                                if outs[m] >= 0:
                                    b = np.float32(0.0)
                                    for r in range(k):
                                        b += G[r, m]
                                    cuda.atomic.add(Wo, (outs[m], dw), coef * b)
                    cuda.syncthreads()
            cuda.syncthreads()
            s += cuda.gridDim.x
        if tid == 0:
            stats[cuda.blockIdx.x, 0] = loss
            stats[cuda.blockIdx.x, 1] = pairs

    return SimpleNamespace(train=train, dim=dw, threads=T, window=window, negatives=n_neg)
