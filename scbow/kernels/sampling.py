"""The example sampler and the learning-rate schedule: one copy for the CPU and the GPU.

These are ``@njit`` functions. The CPU kernels (``kernels.cpu``) call them as compiled
functions; the CUDA kernels (``kernels.cuda``) call the same objects, and numba-cuda
compiles a CPU-jitted function called from a kernel as a CUDA device function (its
``CUDATypingContext.resolve_value_type``). So both devices draw the same examples from
the same random streams and step with the same learning rate, by construction.

Numba's CUDA simulator runs kernels as Python, and cannot pass its simulated device
arrays to a compiled CPU function: there ``kernels.cuda`` calls the Python bodies
(``fill_example.py_func``), which is the same source.

The random generator is xorshift64* seeded by splitmix64 from two integers (the run's
seed and the example's position, or a chunk's stream): cheap, stateless to resume, and
identical on both devices.
"""

from __future__ import annotations

import numpy as np
from numba import njit

NEG_DOCUMENT = 0
NEG_UNIFORM = 1


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
def next_random(state):
    """xorshift64* step; ``state`` is an array of uint64, shape (1,). Returns int64 >= 0."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return np.int64((x * np.uint64(2685821657736338717)) >> np.uint64(1))


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
        neither the target nor a positive, else from all sentences; NEG_UNIFORM: all.
    state : array of uint64, shape (1,)
        Random state, advanced.
    members : array of int64, shape (>= 3 + n_neg,)
        Output: target, positives, negatives.

    Returns
    -------
    (k, n_pos) : tuple of int
        Sentences written and positives among them; n_pos = 0 when the target has no
        neighbour in its document, or when no sentence could be drawn as a negative (a
        GPU chunk too small), which is no example. Negatives are never the target or a
        positive.
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
    if size <= 1 + n_pos:
        return 1, 0
    for m in range(n_neg):
        r = lo + next_random(state) % size
        while r == target or r == members[1] or (n_pos == 2 and r == members[2]):
            r = lo + next_random(state) % size
        members[1 + n_pos + m] = r
    return 1 + n_pos + n_neg, n_pos


@njit(cache=True, nogil=True)
def lr_at(params, position):
    """Learning rate of the example at ``position`` (0-based) of the run.

    Linear decay from ``params.lr`` to ``params.lr_min`` over ``params.total`` examples
    (``params`` is the kernel parameter record, ``scbow.training.backends.params``).
    """
    return max(params.lr_min, params.lr * (1.0 - position / params.total))


# ---------------------------------------------------------------------------------------
# The word part's sampling (``scbow.training.wordpart``): one copy for both devices.

# Kept words of a sentence handled at once: a longer sentence is cut into pieces of this
# many kept words, and no window crosses a cut (a GPU block holds a piece in shared memory).
WORD_SEGMENT = 1024


@njit(cache=True, nogil=True)
def keep_words(tokens, start, stop, keep, state, kept):
    """Subsample ``tokens[start:stop]`` into ``kept`` (int32, shape (WORD_SEGMENT,)).

    A word ``w`` is kept with probability ``keep[w]`` (float32 (V,); a random number is drawn
    only for words with ``keep[w] < 1``). Stops when ``kept`` is full. Returns
    ``(n_kept, next_position)``: the words written and the first position not read.
    """
    n = 0
    t = start
    limit = kept.shape[0]
    while t < stop and n < limit:
        w = tokens[t]
        p = keep[w]
        if p >= 1.0 or (next_random(state) % 16777216) < p * 16777216.0:
            kept[n] = w
            n += 1
        t += 1
    return n, t


@njit(cache=True, nogil=True)
def centre_window(window, state):
    """The window of one centre word: ``window`` less a random 0..window-1 (word2vec's)."""
    if window <= 1:
        return window
    return window - next_random(state) % window


@njit(cache=True, nogil=True)
def draw_noise(context, n_neg, table, state, row):
    """Write ``context`` then ``n_neg`` noise words into ``row`` (int32, shape (>= 1 + n_neg,)).

    Noise words are ``table[random % len(table)]`` (a unigram^0.75 table); one equal to the
    context is written as -1 (skipped, as word2vec skips it).
    """
    row[0] = context
    size = table.shape[0]
    for m in range(n_neg):
        r = table[next_random(state) % size]
        row[1 + m] = -1 if r == context else r


@njit(cache=True, nogil=True)
def context_span(i, n, window, state):
    """The kept words ``lo..hi-1`` around centre ``i`` of ``n``: its random window
    (:func:`centre_window`) cut to the segment. Returns ``(lo, hi)``."""
    win = centre_window(window, state)
    return max(i - win, 0), min(i + win + 1, n)


@njit(cache=True, nogil=True)
def window_inputs(kept, i, lo, hi, ins):
    """Copy the contexts ``kept[lo:hi]`` of centre ``i`` (itself left out) into ``ins``; returns how many."""
    k = 0
    for c in range(lo, hi):
        if c != i:
            ins[k] = kept[c]
            k += 1
    return k
