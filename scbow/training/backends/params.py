"""The one place a run's settings become kernel parameters: one record with named fields.

``PARAMS`` (sentence part) and ``WORD_PARAMS`` (word part) are structured dtypes that numba types as
structs on both devices, so kernels read ``params.lr`` by name; what changes per call (``lo:hi``,
``done``) is passed as plain integers beside the record.
"""

from __future__ import annotations

import numpy as np

from ...config import TrainConfig

PARAMS = np.dtype([
    ("lr", np.float64),        # learning rate of the first example
    ("lr_min", np.float64),    # the floor the linear decay stops at
    ("total", np.float64),     # examples of the whole run (the schedule's length)
    ("decay", np.float64),     # weight decay per word occurrence
    ("negatives", np.int64),   # negatives per example
    ("max_len", np.int64),     # words of a sentence that count; 0 for all
    ("neg_mode", np.int64),    # kernels.sampling.NEG_DOCUMENT or NEG_UNIFORM
    ("seed", np.int64),        # the random streams' seed
    ("chunks", np.int64),      # CPU: chunks (threads) a batch is cut into
    ("hot", np.int64),         # CPU: most frequent words buffered per thread (0: none)
    ("flush", np.int64),       # CPU: examples between flushes of the buffered rows
], align=True)

WORD_PARAMS = np.dtype([
    ("lr", np.float64),        # learning rate of the first sentence of all passes
    ("lr_min", np.float64),    # the floor the linear decay stops at
    ("total", np.float64),     # sentences of all passes (the schedule's length)
    ("window", np.int64),      # largest context distance (each centre draws its own)
    ("negatives", np.int64),   # noise words per window
    ("seed", np.int64),        # the random streams' seed
    ("stream", np.int64),      # sentence p of all passes draws from stream ``stream + p``
], align=True)

# The word part's random streams start here (the sentence part's use 0, 1, ...): a stream a sentence.
WORD_STREAM = 1 << 40


def kernel_params(config: TrainConfig, chunks: int = 1, total: int = 1, hot: bool | None = None) -> np.record:
    """The record of a run of ``total`` examples cut into ``chunks`` per batch; ``hot`` (default: several
    chunks) buffers the hottest rows per thread (``kernels.HOT_ROWS``); without both, plain SGD, bit-reproducible.
    The GPU reads neither."""
    from ...kernels import FLUSH_EVERY, HOT_ROWS
    from ...kernels.sampling import NEG_DOCUMENT, NEG_UNIFORM

    if hot is None:
        hot = chunks > 1
    return params_record(
        lr=config.lr, lr_min=config.lr * config.min_lr_fraction, total=total, decay=config.weight_decay,
        negatives=config.negatives, max_len=config.max_length,
        neg_mode=NEG_DOCUMENT if config.negative_mode == "document" else NEG_UNIFORM,
        seed=config.seed, chunks=chunks, hot=HOT_ROWS if hot else 0, flush=FLUSH_EVERY)


def word_params(config: TrainConfig, total: int) -> np.record:
    """The word part's parameter record for ``total`` sentences of all its passes."""
    return params_record(WORD_PARAMS, lr=config.word_lr, lr_min=config.word_lr * config.min_lr_fraction, total=total,
                         window=config.word_context, negatives=config.word_noise, seed=config.seed, stream=WORD_STREAM)


def params_record(dtype=PARAMS, **fields) -> np.record:
    """A record of ``dtype`` with the given fields set, the others 0."""
    # an np.record (not a bare np.void) reads ``.lr`` in Python too, as the CUDA simulator does
    record = np.zeros(1, dtype=dtype).view(np.recarray)[0]
    for name, value in fields.items():
        if name not in dtype.names:
            raise KeyError(f"no kernel parameter {name!r}; the record has {', '.join(dtype.names)}")
        record[name] = value
    return record
