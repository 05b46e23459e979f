"""Backends: where a run's batches are computed (``--device cpu`` or ``cuda``).

The trainer owns the loop (epochs, shuffles, batches, NaN check, progress, hooks) and picks the backend
(``trainer.SentencePhase``); a backend owns the matrix while the run lasts and the device's kernels;
``params.py`` turns a config into kernel parameters. Layers, each importing only those below it::

    session, checkpoint, curve        wrap or watch a run
    trainer                           the loop
    backends (cpu, cuda, params)      a run's device and kernel parameters
    kernels (sampling, cpu, cuda)     numba code: arrays and scalars in
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Backend(Protocol):
    """What the trainer asks of a backend."""

    batch: int | None  # the examples per call it prefers; None: the trainer's

    def begin_epoch(self, order: np.ndarray) -> None:
        """Take the epoch's shuffled targets (int64 sentence indices)."""

    def run(self, lo: int, hi: int, done: int) -> tuple[float, int]:
        """Train targets ``order[lo:hi]``, the run's examples ``done`` onwards: (loss sum, examples)."""

    def vectors(self) -> np.ndarray:
        """The current matrix on the host (float32; a copy on a GPU)."""

    def close(self) -> np.ndarray:
        """The final matrix on the host; frees what the backend holds."""

