"""Numba code: arrays and scalars in, no objects. ``sampling`` (one sampler for both
devices), ``cpu`` (training), ``cuda`` (training on a GPU), ``embed`` (sentence averages),
``encode`` (corpus encoding). Importing this package imports no numba.
"""

from __future__ import annotations

from ..errors import TrainingError


def resolve_threads(threads: int) -> int:
    """``threads``, or all numba may use for 0; an error naming the flag when too many."""
    import numba

    available = numba.config.NUMBA_NUM_THREADS
    if threads == 0:
        return available
    if threads > available:
        raise TrainingError(f"--threads {threads} is more than the {available} threads numba can use here")
    return threads
