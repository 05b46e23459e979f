"""The pieces of the speed suites that need numba or torch: the kernel bench and the PyTorch peer.

:class:`KernelBench` times the training kernel the way ``scbow.training.trainer.train`` drives it:
it builds the real backend with ``scbow.training.backends.make_backend``, hands it the first
epoch's order with ``begin_epoch`` and calls ``run(lo, hi, done)`` batch by batch
(``scbow.training.trainer.batch_size``), timing only those calls, as the trainer does. A change in
how the backend calls its kernels is measured as it is, or fails here; nothing of the
backend is re-implemented. The two diagnostics that are not training (every token folded
into the most frequent rows; a private matrix per thread) say in their docstrings what
they change.

:class:`TorchPeer` runs ``benchmarks.torch_scbow`` in its own process and answers one
measurement per request, after that worker has checked its loss and gradient against
``scbow.reference``.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from .common import REPO_ROOT, WorkerError, timed, worker_env

COMPILE_BATCH = 64  # examples of the first (compiling or cache-loading) run


class KernelBench:
    """One epoch of the training kernel on ``corpus``, as ``scbow.training.trainer.train`` runs it."""

    def __init__(self, corpus, config):
        from scbow.training.start import corpus_weights, step_rates, trainable_targets
        from scbow.training.trainer import batch_size, epoch_orders

        self.corpus = corpus
        self.config = config.replace(device="cpu", epochs=1)
        self.n_words = len(corpus.vocab)
        # the frequency weights of the initial rows and the per-word step factors, as train() makes them
        self.weights = corpus_weights(corpus, self.config)
        self.rate = step_rates(self.weights, corpus.vocab.counts, self.config)
        targets = trainable_targets(corpus)
        self.order = next(epoch_orders(targets, self.config.seed))  # the first epoch of train()
        self.batch = batch_size(self.config, corpus)
        lengths = np.diff(np.asarray(corpus.offsets))[targets]
        if self.config.max_length:
            lengths = np.minimum(lengths, self.config.max_length)
        self.tokens_per_target = float(lengths.mean())

    def fresh_matrix(self) -> np.ndarray:
        from scbow.training.start import init_vectors

        return init_vectors(self.n_words, self.config, self.weights)

    def folded(self, rows: int) -> "KernelBench":
        """A copy whose token ids are folded into the ``rows`` most frequent words (``id % rows``):
        the same examples and rows per example on a slice of the matrix that stays in the core's
        cache (a diagnostic of what cache misses cost, not training)."""
        import copy

        other = copy.copy(self)
        tokens = np.asarray(self.corpus.tokens)
        other.corpus = dataclasses.replace(self.corpus, tokens=(tokens % rows).astype(tokens.dtype))
        return other

    def run(self, threads: int, n_targets: int | None = None) -> dict:
        """Train a fresh matrix on the first ``n_targets`` targets (all: one epoch) with the real
        CPU backend on ``threads`` threads: seconds inside ``run`` calls, examples, mean loss,
        ``setup_seconds`` (building the backend: its kernels load or compile there) and the
        trained matrix (``vectors``)."""
        from scbow.training.backends import make_backend

        n = len(self.order) if n_targets is None else min(n_targets, len(self.order))
        W = self.fresh_matrix()
        config = self.config.replace(threads=threads)
        with timed() as setup:
            backend = make_backend(W, self.corpus, config, threads, n, self.rate)
        seconds, examples, loss_sum = 0.0, 0, 0.0
        try:
            backend.begin_epoch(self.order)
            for lo in range(0, n, self.batch):
                hi = min(lo + self.batch, n)
                with timed() as t:
                    batch_loss, batch_examples = backend.run(lo, hi, lo)
                seconds += t.seconds
                examples += batch_examples
                loss_sum += batch_loss
        finally:
            W = backend.close()
        return {"seconds": seconds, "examples": examples, "mean_loss": loss_sum / max(examples, 1),
                "setup_seconds": setup.seconds, "vectors": W}

    def run_private(self, threads: int) -> dict:
        """The same chunks on ``threads`` threads, each thread updating its own copy of the matrix
        (no row shared between the threads): the scaling they would get without Hogwild's shared
        cache lines. A diagnostic, not training: it calls ``scbow.kernels.cpu.train_chunk``
        itself, because the backend has one matrix."""
        from concurrent.futures import ThreadPoolExecutor

        from scbow.kernels.cpu import no_word_term, train_chunk
        from scbow.training.backends.cpu import corpus_arrays
        from scbow.training.backends.params import kernel_params

        n = len(self.order)
        copies = [self.fresh_matrix() for _ in range(threads)]
        arrays = corpus_arrays(self.corpus)
        params = kernel_params(self.config, threads, n)
        stats = np.zeros((threads, 2), dtype=np.float64)
        rate = np.ascontiguousarray(self.rate, np.float32)
        word = no_word_term(copies[0].shape[1])  # the skip-gram term is off in this diagnostic
        seconds, examples, loss_sum = 0.0, 0, 0.0
        with ThreadPoolExecutor(threads) as pool:
            for lo in range(0, n, self.batch):
                hi = min(lo + self.batch, n)
                with timed() as t:
                    futures = [pool.submit(train_chunk, copies[c], arrays, self.order, rate, params, lo, hi, lo, c, stats,
                                           word)
                               for c in range(threads)]
                    for f in futures:
                        f.result()
                seconds += t.seconds
                examples += int(stats[:, 1].sum())
                loss_sum += float(stats[:, 0].sum())
        return {"seconds": seconds, "examples": examples, "mean_loss": loss_sum / max(examples, 1)}


def compile_times(bench: KernelBench, threads: list[int]) -> dict:
    """Seconds of the first backend built in this process (its kernels load from numba's on-disk
    cache, or compile), on 1 thread and on the most threads asked for, each on a tiny run."""
    from scbow.kernels.cpu import train_batch_serial

    serial = bench.run(1, COMPILE_BATCH)
    # Dispatcher.stats: numba's public counters of on-disk cache hits and misses
    hits = sum(train_batch_serial.stats.cache_hits.values())
    misses = sum(train_batch_serial.stats.cache_misses.values())
    out = {"serial_first_call_seconds": round(serial["setup_seconds"] + serial["seconds"], 3),
           "serial_cache": {"hit": hits > 0, "hits": hits, "misses": misses,
                            "note": "hit: loaded from the on-disk cache; miss: compiled, then saved to it"},
           "parallel_first_call_seconds": None, "parallel_threads": None, "batch_examples": COMPILE_BATCH}
    if max(threads) > 1:
        par = bench.run(max(threads), COMPILE_BATCH)
        out["parallel_first_call_seconds"] = round(par["setup_seconds"] + par["seconds"], 3)
        out["parallel_threads"] = max(threads)
    return out


class TorchPeer:
    """The PyTorch implementation in its own process, answering one measurement per request."""

    def __init__(self, corpus_file: Path, cache_dir: Path, dim: int, batches: int, warmup: int, log: Path):
        cmd = [sys.executable, "-m", "benchmarks.torch_scbow", "--corpus", str(corpus_file), "--cache-dir",
               str(cache_dir), "--dim", str(dim), "--batches", str(batches), "--warmup", str(warmup)]
        self.log = open(log, "w")
        self.proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=worker_env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.batches = batches
        self.hello = self._read()
        check = self.hello.get("oracle_check") or {}
        if not check.get("passed"):
            self.close()
            raise WorkerError(f"the torch peer's loss and gradient do not match scbow.reference ({check}): "
                              "no ratio is reported against a peer that computes something else")

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=30)
            self.log.flush()
            raise WorkerError(f"the torch worker exited with status {self.proc.returncode}; see {self.log.name}")
        return json.loads(line)

    def measure(self, threads: int) -> dict:
        self.proc.stdin.write(json.dumps({"threads": threads, "batches": self.batches}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write(json.dumps({"quit": True}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            self.log.close()
