"""The CPU backend: batches on the Numba CPU kernels, on a host matrix updated in place.

One thread runs ``kernels.cpu.train_batch_serial``; several run ``train_chunk`` (which releases the
GIL) a chunk each on the backend's thread pool, the calling thread taking chunk 0, updating the
matrix without locks (Hogwild).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .params import kernel_params


def compiled_already(kernel, args) -> bool | None:
    """Whether numba has ``kernel`` for these arguments' types in memory or in its on-disk
    cache (True), will compile it (False), or cannot tell (None: its internals changed)."""
    try:
        sig = tuple(kernel.typeof_pyval(a) for a in args)
        if sig in kernel.overloads:
            return True
        cache = kernel._cache
        return cache._index_key(sig, kernel.targetctx.codegen()) in cache._cache_file._load_index()
    except Exception:  # private numba API: never let a guess stop a run
        return None


class CpuBackend:
    """Runs batches with the Numba CPU kernels on ``W``, updated in place."""

    batch = None  # the trainer's batches

    def __init__(self, W: np.ndarray, corpus, config, threads: int, total: int, rate: np.ndarray | None = None,
                 say=None):
        from ...kernels import cpu as K  # numba: imported here, so that `--help` stays fast

        self.K = K
        self.W = W
        self.threads = threads
        self.rate = np.ones(len(W), dtype=np.float32) if rate is None else np.ascontiguousarray(rate, np.float32)
        self.corpus = tuple(np.ascontiguousarray(a) for a in (corpus.tokens, corpus.offsets, corpus.sent_doc,
                                                               corpus.doc_offsets))
        self.params = kernel_params(config, threads, total)
        self.stats = np.zeros((threads, 2), dtype=np.float64)
        self.order = np.zeros(1, dtype=np.int64)
        self.pool = None
        if threads > 1:
            self.pool = ThreadPoolExecutor(threads - 1, thread_name_prefix="scbow-train")
        # an empty batch loads (or compiles) the one kernel this backend runs, out of the training
        # time; the threads call the chunk kernel's own dispatcher, which loads separately
        args = (W, self.corpus, self.order, self.rate, self.params, 0, 0, 0)
        kernel, args = (K.train_batch_serial, (*args, self.stats)) if threads == 1 else \
            (K.train_chunk, (*args, 0, self.stats))
        if say is not None:  # ``say(line)``: tell the user when the wait is a compilation
            ready = compiled_already(kernel, args)
            if ready is False:
                say("compiling the training kernels (first run only, about 10 s)...")
            elif ready is None:
                say("loading or compiling the training kernels (about 10 s on a first run)...")
        kernel(*args)

    def begin_epoch(self, order: np.ndarray) -> None:
        self.order = order

    def run(self, lo: int, hi: int, done: int) -> tuple[float, int]:
        args = (self.W, self.corpus, self.order, self.rate, self.params, lo, hi, done)
        if self.pool is None:
            self.K.train_batch_serial(*args, self.stats)
        else:
            futures = [self.pool.submit(self.K.train_chunk, *args, c, self.stats)
                       for c in range(1, self.threads)]
            try:
                self.K.train_chunk(*args, 0, self.stats)
            finally:
                for f in futures:
                    f.result()
        return float(self.stats[:, 0].sum()), int(self.stats[:, 1].sum())

    def vectors(self) -> np.ndarray:
        return self.W

    def close(self) -> np.ndarray:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        return self.W
