"""Training on an NVIDIA GPU: the ``--device cuda`` backend of :func:`scbow.training.trainer.train`.

The matrix and the corpus arrays are uploaded once, each epoch's shuffled targets once; a launch
(kernels in ``scbow.kernels.cuda``) trains many examples and brings back a loss sum and a count.
A corpus too large for the memory left after the matrix is streamed in chunks of sentences
(:func:`plan_chunks`), each with one halo sentence either side so no target loses a positive;
negatives then come from the chunk (docs/gpu.md). Importing this module imports no numba.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import warnings

import numpy as np

from ...config import example_size
from ...errors import TrainingError
from ..wordpart import WORD_BATCH, WordPart
from .params import kernel_params

INSTALL_HINT = "pip install 'scbow-numba[cuda]'"
# Examples per trainer batch: launch and read-back cost little, the progress line stays lively.
LAUNCH_BATCH = 1 << 17
# Device bytes the corpus arrays may use (default: what is free after the matrix); small forces streaming.
MEMORY_ENV = "SCBOW_CUDA_MEMORY"
# Device bytes left alone for the driver, the kernels and their scratch.
RESERVE_BYTES = 256 << 20
# Bytes per sentence besides its tokens: offset (8), document id (4), target id (8), a document boundary (8).
SENTENCE_BYTES = 28
# Static shared memory a block may use: the CUDA limit without opting in, less alignment padding.
SHARED_LIMIT = 48 * 1024 - 256
# Sentences of an uploaded chunk at least: a target, two positives and a negative.
MIN_SENTENCES = 4
# An epoch (a pass of the word part) is at least this many launches: see launch_size.
LAUNCHES_PER_EPOCH = 16


def launch_size(n_sentences: int, full: int) -> int:
    """Examples (sentence part) or sentences (word part) one launch may run: ``n_sentences //
    LAUNCHES_PER_EPOCH``, in [1, ``full``]. A launch's blocks all read the rows as they were when it
    began, so a launch is one stale step and an epoch at least 16 of them (measurements: docs/gpu.md)."""
    return max(1, min(int(full), int(n_sentences) // LAUNCHES_PER_EPOCH))


def _import_cuda():
    from numba import cuda

    return cuda


def _numba_cuda_installed() -> bool:
    return importlib.util.find_spec("numba_cuda") is not None


def _one_line(text) -> str:
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    return lines[0].rstrip(".") if lines else ""


def _load_compiler() -> None:
    """Import numba-cuda's numpy overloads, as its first compile does: with numpy 2.5 (no ``np.row_stack``)
    numba-cuda 0.30.4 fails there with an AttributeError. Numba's own simulator has nothing to check."""
    if not _numba_cuda_installed():
        return
    import numba.cuda.np.arrayobj  # noqa: F401


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def compiler_problem() -> str | None:
    """Why numba-cuda cannot compile a kernel with this numpy, in one line; None when it can."""
    try:
        _load_compiler()
    except AttributeError as exc:
        numpy_version = _version("numpy")
        below = ".".join(numpy_version.split(".")[:2])
        return (f"numba-cuda {_version('numba-cuda')} does not work with numpy {numpy_version} ({_one_line(exc)}); "
                f"install an older numpy: pip install 'numpy<{below}'")
    return None


def cuda_problem() -> str | None:
    """Why ``--device cuda`` cannot train here, in one line; None when it can (the simulator counts)."""
    try:
        cuda = _import_cuda()
    except Exception as exc:  # numba without its CUDA target, or numba-cuda without bindings
        return (f"--device cuda needs numba-cuda, which could not be imported ({_one_line(exc)}); "
                f"install it with: {INSTALL_HINT}")
    try:
        if cuda.is_available():
            return compiler_problem()
        reason = _one_line(cuda.cuda_error()) or "no CUDA device"
    except Exception as exc:
        reason = _one_line(exc) or type(exc).__name__
    if not _numba_cuda_installed():
        return (f"--device cuda found no usable NVIDIA GPU ({reason}) and the numba-cuda package is not "
                f"installed; on a machine with an NVIDIA GPU and driver, install it with: {INSTALL_HINT}")
    return (f"--device cuda found no usable NVIDIA GPU ({reason}); check the driver with nvidia-smi, "
            "or train with --device cpu")


def require_cuda() -> None:
    """Raise :class:`TrainingError` with :func:`cuda_problem`'s line unless CUDA can train."""
    problem = cuda_problem()
    if problem:
        raise TrainingError(problem)


def plan_chunks(offsets: np.ndarray, doc_offsets: np.ndarray, budget: float) -> list[tuple[int, int]]:
    """Consecutive sentence ranges ``[(lo, hi), ...]`` covering the corpus whose device arrays, with one
    halo sentence each side, fit in ``budget`` bytes; a range ends at a document boundary in its second half."""
    n = len(offsets) - 1
    offsets = np.asarray(offsets, dtype=np.int64)
    cost = 4 * offsets + SENTENCE_BYTES * np.arange(n + 1, dtype=np.int64)
    if cost[n] + 8 <= budget:
        return [(0, n)]
    doc_offsets = np.asarray(doc_offsets, dtype=np.int64)
    chunks = []
    lo = 0
    while lo < n:
        u0 = max(lo - 1, 0)
        u1 = int(np.searchsorted(cost, cost[u0] + budget, side="right")) - 1  # uploaded [u0, u1)
        hi = n if u1 >= n else u1 - 1  # the last uploaded sentence is the halo
        if hi <= lo:
            need = int(cost[min(lo + 2, n)] - cost[u0])
            raise TrainingError(
                f"the GPU memory left for the corpus ({budget / 2**20:.1f} MiB) cannot hold sentence {lo} "
                f"and its neighbours ({need / 2**20:.1f} MiB); try --max-length or a GPU with more memory")
        if hi < n:
            boundary = int(doc_offsets[np.searchsorted(doc_offsets, hi, side="right") - 1])
            if boundary > lo + (hi - lo) // 2:
                hi = boundary
        chunks.append((lo, hi))
        lo = hi
    return chunks


def chunk_arrays(corpus, lo: int, hi: int):
    """``(first, tokens, offsets, sent_doc, doc_offsets)``: sentences ``lo:hi`` with a halo sentence each side
    (at least ``MIN_SENTENCES`` in all), renumbered: local sentence ``s`` is corpus sentence ``first + s``,
    with the same neighbours and its document clipped to the chunk."""
    n = len(corpus.offsets) - 1
    u0, u1 = max(lo - 1, 0), min(hi + 1, n)
    # every target needs a sentence to draw as a negative (the trainer guarantees the corpus has 4)
    short = max(MIN_SENTENCES - (u1 - u0), 0)
    u1 = min(u1 + short, n)
    u0 = max(min(u0, u1 - MIN_SENTENCES), 0)
    offsets = np.asarray(corpus.offsets[u0 : u1 + 1], dtype=np.int64)
    tokens = np.ascontiguousarray(corpus.tokens[offsets[0] : offsets[-1]], dtype=np.int32)
    sent_doc = np.asarray(corpus.sent_doc[u0:u1], dtype=np.int32)
    d0, d1 = int(sent_doc[0]), int(sent_doc[-1])
    doc_offsets = np.clip(np.asarray(corpus.doc_offsets[d0 : d1 + 2], dtype=np.int64) - u0, 0, u1 - u0)
    return u0, tokens, offsets - offsets[0], sent_doc - d0, doc_offsets


def default_threads(dim: int, simulator: bool) -> int:
    """Threads per block: a power of two near ``dim``, one warp to 128 (the simulator: at most 4)."""
    want = 1 << max(dim - 1, 0).bit_length()
    if simulator:
        return max(1, min(want, 4))
    return max(32, min(want, 128))


def device_room(simulator: bool, threads: int) -> tuple[float, int]:
    """``(free device bytes, blocks per launch)``: a few resident blocks of ``threads`` per
    multiprocessor; the simulator runs blocks one by one, in unbounded memory."""
    if not simulator:  # pragma: no cover - needs a GPU
        cuda = _import_cuda()
        sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
        return cuda.current_context().get_memory_info()[0], sms * max(1, 2048 // threads)
    return float("inf"), 2


def launch(kernel, grid: int, threads: int, args: tuple, stats_d, simulator: bool) -> np.ndarray:
    """Run ``kernel[grid, threads](*args)`` and bring back the first ``grid`` rows of its ``stats_d``;
    a failure of CUDA itself is one TrainingError line."""
    try:
        with warnings.catch_warnings():
            if simulator:  # the generator's uint64 products wrap on purpose
                warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
            kernel[grid, threads](*args)
            return stats_d[:grid].copy_to_host()
    except Exception as exc:  # pragma: no cover - needs a GPU
        name = type(exc).__name__
        if any(key in name for key in ("Cuda", "Nvvm", "NVVM", "Nvrtc", "Linker")):
            raise TrainingError(f"CUDA failed: {name}: {_one_line(exc)} (the CUDA libraries numba needs "
                                f"come with: {INSTALL_HINT})") from exc
        raise


def launches(kernel, threads: int, grid: int, lo: int, hi: int, size: int, args, stats_d, simulator: bool):
    """``kernel`` over ``lo:hi`` in launches of at most ``size`` (:func:`launch`, each of at most ``grid`` blocks),
    ``args(a, b, offset)`` giving a launch's arguments for ``a:b``, ``offset = a - lo``: ``(loss sum, count)``."""
    loss, count = 0.0, 0
    for a in range(lo, hi, size):
        b = min(a + size, hi)
        stats = launch(kernel, min(b - a, grid), threads, args(a, b, a - lo), stats_d, simulator)
        loss += float(stats[:, 0].sum())
        count += int(stats[:, 1].sum())
    return loss, count


class CudaBackend:
    """Runs batches with the numba.cuda kernels on a device copy of the matrix. ``memory_limit`` (bytes for
    the corpus, else ``$SCBOW_CUDA_MEMORY``), ``block_threads`` and ``grid`` override the choices (tests)."""

    def __init__(self, W: np.ndarray, corpus, config, total: int, rate: np.ndarray | None = None,
                 memory_limit: float | None = None, block_threads: int | None = None, grid: int | None = None):
        require_cuda()
        from ...kernels import cuda as KC

        self.cuda = cuda = _import_cuda()
        self.simulator = KC.SIMULATOR
        V, d = W.shape
        self.threads = block_threads or default_threads(d, self.simulator)
        k_max = example_size(config.negatives)
        # a block's static shared memory may not pass 48 KiB: many negatives take fewer threads
        if KC.shared_bytes(k_max, 32) > SHARED_LIMIT:
            raise TrainingError(f"--negatives {config.negatives} is more than the GPU kernel can hold in shared memory; "
                                "use at most 100, or --device cpu")
        while self.threads > 32 and KC.shared_bytes(k_max, self.threads) > SHARED_LIMIT:
            self.threads //= 2
        self.kernels = KC.build(k_max, d, self.threads)
        self.params = kernel_params(config, total=total, hot=False)
        # a corpus too small for whole-batch launches gets the trainer's batches (progress as on the CPU)
        self.launch = launch_size(len(corpus.offsets) - 1, LAUNCH_BATCH)
        self.batch = LAUNCH_BATCH if self.launch >= LAUNCH_BATCH else None

        free, blocks = device_room(self.simulator, self.threads)
        w_bytes = W.nbytes
        if w_bytes + RESERVE_BYTES > free:
            raise TrainingError(
                f"the embedding matrix ({w_bytes / 2**30:.2f} GiB) does not fit in the GPU's free memory "
                f"({free / 2**30:.2f} GiB); try a smaller --dim or --max-vocab")
        if memory_limit is None and os.environ.get(MEMORY_ENV):
            memory_limit = float(os.environ[MEMORY_ENV])
        budget = memory_limit if memory_limit is not None else 0.9 * (free - w_bytes - RESERVE_BYTES)
        self.corpus = corpus
        self.chunks = plan_chunks(np.asarray(corpus.offsets), np.asarray(corpus.doc_offsets), budget)
        self.chunk_starts = np.array([lo for lo, _ in self.chunks], dtype=np.int64)
        self.grid = grid or blocks
        self.W_d = cuda.to_device(np.ascontiguousarray(W, dtype=np.float32))
        self.rate_d = cuda.to_device(np.ones(V, dtype=np.float32) if rate is None
                                     else np.ascontiguousarray(rate, dtype=np.float32))
        self.Wi_d = self.W_d.reshape(V * d).view(np.int32)
        self.stats_d = cuda.device_array((self.grid, 2), dtype=np.float64)
        self.resident = None  # chunk whose corpus arrays are on the device
        self.arrays_d = None
        self.order_key = None  # (epoch, chunk) whose targets are on the device
        self.order_d = None
        self.epoch = -1
        if len(self.chunks) == 1:
            self._make_resident(0)

    # -- corpus and targets on the device

    def _make_resident(self, c: int) -> None:
        if self.resident == c:
            return
        self.arrays_d = None  # free the previous chunk first
        first, *arrays = chunk_arrays(self.corpus, *self.chunks[c])
        self.first = first
        self.arrays_d = tuple(self.cuda.to_device(a) for a in arrays)
        self.resident = c

    def begin_epoch(self, order: np.ndarray) -> None:
        """Take the epoch's shuffled targets; with several chunks, group them by chunk."""
        self.epoch += 1
        order = np.asarray(order, dtype=np.int64)
        if len(self.chunks) == 1:
            self.epoch_order = order
            self.bounds = np.array([0, len(order)], dtype=np.int64)
        else:
            owner = np.searchsorted(self.chunk_starts, order, side="right") - 1
            self.epoch_order = order[np.argsort(owner, kind="stable")]
            self.bounds = np.zeros(len(self.chunks) + 1, dtype=np.int64)
            self.bounds[1:] = np.cumsum(np.bincount(owner, minlength=len(self.chunks)))
        self.order_key = None

    def _targets_on_device(self, c: int) -> None:
        if self.order_key == (self.epoch, c):
            return
        a, b = self.bounds[c], self.bounds[c + 1]
        self.order_d = self.cuda.to_device(np.ascontiguousarray(self.epoch_order[a:b] - self.first))
        self.order_key = (self.epoch, c)

    # -- training

    def run(self, lo: int, hi: int, done: int) -> tuple[float, int]:
        loss_sum, count = 0.0, 0
        for c in range(len(self.chunks)):
            a, b = int(self.bounds[c]), int(self.bounds[c + 1])
            s, e = max(lo, a), min(hi, b)
            if s >= e:
                continue
            self._make_resident(c)
            self._targets_on_device(c)
            part_loss, part_count = self._launch(s - a, e - a, done + (s - lo))
            loss_sum += part_loss
            count += part_count
        return loss_sum, count

    def _launch(self, lo: int, hi: int, done: int) -> tuple[float, int]:
        """Targets ``lo:hi`` of the resident chunk, in launches of at most ``self.launch`` examples."""
        return launches(self.kernels.train, self.threads, self.grid, lo, hi, self.launch, lambda a, b, offset: (
            self.W_d, self.Wi_d, self.arrays_d, self.order_d, self.rate_d, self.params, a, b, done + offset,
            self.stats_d), self.stats_d, self.simulator)

    def vectors(self) -> np.ndarray:
        """A host copy of the current matrix (after :meth:`close`, the final one)."""
        return self.W_d.copy_to_host() if self.W_d is not None else self.final

    def close(self) -> np.ndarray:
        W = self.final = self.W_d.copy_to_host()
        self.W_d = self.Wi_d = self.arrays_d = self.order_d = self.stats_d = None
        return W


class CudaWordPart(WordPart):
    """The word part on the GPU: rows and tables uploaded once; each of the CPU's batches runs as launches
    of at most :func:`launch_size` sentences, a block per sentence (``kernels.cuda.build_word_part``), each
    on its own random stream as on the CPU. ``block_threads`` and ``grid`` override the choices (tests)."""

    def __init__(self, corpus, config, Wi=None, Wo=None, block_threads: int | None = None, grid: int | None = None):
        require_cuda()
        from ...kernels import cuda as KC

        super().__init__(corpus, config, 1, Wi, Wo)  # the host rows, sampling tables and batches
        cuda = _import_cuda()
        self.simulator = KC.SIMULATOR
        self.threads_per_block = block_threads or default_threads(config.word_dim, self.simulator)
        window, n_neg = config.word_context, config.word_noise
        while self.threads_per_block > 1 and KC.word_part_shared_bytes(self.threads_per_block, window, n_neg) > SHARED_LIMIT:
            self.threads_per_block //= 2
        self.kernel = KC.build_word_part(config.word_dim, self.threads_per_block, window, n_neg)
        self.launch = launch_size(self.n, WORD_BATCH)
        host = (self.Wi, self.Wo, self.tokens, np.asarray(self.offsets, dtype=np.int64), self.keep, self.table)
        free, blocks = device_room(self.simulator, self.threads_per_block)
        need = sum(a.nbytes for a in host)
        if need + RESERVE_BYTES > free:
            raise TrainingError(f"the word part's rows and the corpus ({need / 2**30:.2f} GiB) do not fit in the GPU's "
                                f"free memory ({free / 2**30:.2f} GiB); try a smaller --word-dim, or --device cpu")
        self.grid = grid or blocks
        self.Wi_d, self.Wo_d, *self.arrays_d = (cuda.to_device(np.ascontiguousarray(a)) for a in host)
        self.stats_d = cuda.device_array((self.grid, 2), dtype=np.float64)
        self.on_host = True  # the host rows are the device's

    def run(self, done: int) -> tuple[int, float, int]:
        (lo, hi), = self.batch(done)
        tokens_d, offsets_d, keep_d, table_d = self.arrays_d
        loss, pairs = launches(self.kernel.train, self.threads_per_block, self.grid, lo, hi, self.launch,
                               lambda a, b, offset: (self.Wi_d, self.Wo_d, tokens_d, offsets_d, a, b, keep_d, table_d,
                                                     self.params, done + offset, self.stats_d), self.stats_d, self.simulator)
        self.on_host = False
        return hi - lo, loss, pairs

    def matrices(self) -> dict:
        if not self.on_host and self.Wi_d is not None:
            self.Wi_d.copy_to_host(self.Wi)
            self.Wo_d.copy_to_host(self.Wo)
            self.on_host = True
        return super().matrices()

    def sample_loss(self) -> float:
        self.matrices()
        return super().sample_loss()

    def close(self) -> None:
        """Bring the rows back to the host and free the device arrays."""
        if self.Wi_d is not None:
            self.matrices()
        self.Wi_d = self.Wo_d = self.arrays_d = self.stats_d = None
        super().close()
