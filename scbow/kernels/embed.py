"""Numba kernels of sentence embedding: average the word vectors of many lines at once.

``average_lines`` is what ``scbow.vectors.average`` embeds files with (the unknown-word rule's
vectors in a table beside the rows), written once and compiled twice, like the training kernel:
serial (cached on disk; run beside the tokenizer) and parallel (``prange`` over lines; a
``parallel=True`` kernel cannot be cached, so it compiles in a few seconds on first use and
pays off only where averaging, not tokenizing, is the bottleneck: many dimensions).
``mean_lines`` averages known words only (the corpus samples of training): the serial kernel, no table.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# ids of the token stream handed to the kernels
UNKNOWN = -1  # a token that is not in the vocabulary
LINE_END = -2  # the end of a line


def _average_lines(W, table, table_counts, ids, starts, stops, fill, out, counts):
    """Average every line's words, unknown ones under a rule, as ``scbow.vectors.average`` does.

    Parameters
    ----------
    W : array of float32, shape (V, d)
        Word vectors.
    table : array of float64, shape (m, d)
        What token ``V + j`` brings: the sum of its vectors (a hashed vector, or its pieces'),
        counting ``table_counts[j]`` tokens of the average (int64, shape (m,); 0: nothing).
        Ids from ``V + m`` on are skipped, as ``UNKNOWN`` and ``LINE_END`` are.
    ids : array of int32, shape (n_tokens,)
    starts, stops : arrays of int64, shape (n_lines,)
        Line ``i`` is ``ids[starts[i]:stops[i]]``.
    fill : float
        Every component of the row of a line with nothing to average.
    out : array of float32, shape (n_lines, d)
        Output: the mean of a line's known rows (summed in float64 in order) when it has no token
        of the table; else (the table's rows summed in order + that mean times its count) over
        all the tokens averaged.
    counts : array of int64, shape (n_lines,)
        Output: the tokens averaged in each line.
    """
    V, d = W.shape
    m = table.shape[0]
    for i in prange(starts.shape[0]):
        acc = np.zeros(d, dtype=np.float64)
        unk = np.zeros(d, dtype=np.float64)
        n = 0
        more = 0
        seen = False
        for p in range(starts[i], stops[i]):
            w = ids[p]
            if w >= V:
                if w - V < m:
                    seen = True
                    more += table_counts[w - V]
                    for k in range(d):
                        unk[k] += table[w - V, k]
            elif w >= 0:
                n += 1
                for k in range(d):
                    acc[k] += W[w, k]
        total = n + more
        counts[i] = total
        if total == 0:
            for k in range(d):
                out[i, k] = fill
        elif not seen:
            for k in range(d):
                out[i, k] = acc[k] / n
        else:
            for k in range(d):
                known = (acc[k] / n) * n if n > 0 else 0.0
                out[i, k] = (unk[k] + known) / total


average_lines_serial = njit(cache=True, nogil=True)(_average_lines)
average_lines_parallel = njit(parallel=True, nogil=True)(_average_lines)


def mean_lines(W, ids, starts, stops, fill, out, counts):
    """``average_lines_serial`` without a table: the mean of each line's known words' rows (ids >= 0; the
    semantics of ``scbow.vectors.numeric.mean_rows``, summed in float64; repeated words count every time) into
    ``out``, ``fill`` for a line with none, and the words averaged into ``counts``."""
    average_lines_serial(W, np.zeros((0, W.shape[1])), np.zeros(0, np.int64), ids, starts, stops, fill, out, counts)
