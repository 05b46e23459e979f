"""Numba code: arrays and scalars in, no objects. ``sampling`` (one sampler for both
devices), ``cpu`` (training), ``cuda`` (training on a GPU), ``embed`` (sentence averages),
``encode`` (corpus encoding). Importing this package imports no numba.
"""

from __future__ import annotations

from ..errors import TrainingError

# CPU training: threads buffer the updates of the HOT_ROWS most frequent words (ids
# 0..HOT_ROWS-1: the vocabulary is sorted by count) privately and add them to the matrix
# every FLUSH_EVERY examples. Those words are in almost every example ("the", ",", ".");
# written in place, their rows' cache lines would move between the cores on every update.
# Here, not in kernels.cpu, so that building the parameter record compiles nothing.
HOT_ROWS = 64
FLUSH_EVERY = 16


def resolve_threads(threads: int) -> int:
    """``threads``, or all numba may use for 0; an error naming the flag when too many."""
    import numba

    available = numba.config.NUMBA_NUM_THREADS
    if threads == 0:
        return available
    if threads > available:
        raise TrainingError(f"--threads {threads} is more than the {available} threads numba can use here")
    return threads
