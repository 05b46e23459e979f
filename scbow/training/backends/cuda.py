"""Training on an NVIDIA GPU: the ``--device cuda`` backend of :func:`scbow.training.trainer.train`.

The matrix, the token ids, the sentence offsets and the document boundaries are uploaded
once and stay on the device for the whole run; each epoch uploads its shuffled targets
once; each launch trains many thousands of examples (kernels in ``scbow.kernels.cuda``)
and brings back only a loss sum and a count. The trainer's loop (epochs, learning-rate
positions, progress, NaN check, hooks) is the same as on the CPU.

A corpus whose arrays do not fit in the device memory left after the matrix is streamed:
its sentences are cut into chunks (at a document boundary when one lies in the second
half of the chunk), each uploaded with one neighbouring sentence on either side so that
no target loses a positive, and an epoch trains the targets of one chunk after the other,
each chunk's targets in the epoch's shuffled order. Negatives are then drawn from the
chunk: exact for document mode unless a document spans two chunks (its negatives then
come from its part in the chunk), and uniform over the chunk rather than the corpus in
uniform mode.

Importing this module imports neither numba nor numba.cuda; :func:`cuda_problem` does,
when asked.
"""

from __future__ import annotations

import importlib.util
import os
import warnings

import numpy as np

from ...config import example_size
from ...errors import TrainingError
from ..wordpart import WORD_BATCH, WordPart
from .params import kernel_params

INSTALL_HINT = "pip install 'scbow-numba[cuda]'"
# Examples per trainer batch (several launches when streaming): large enough that the
# launch and the loss read-back cost little, small enough for a lively progress line.
LAUNCH_BATCH = 1 << 17
# Device bytes the corpus arrays may use; unset means what the device has free after the
# matrix. Setting it small forces the streaming path (the tests do, in the simulator).
MEMORY_ENV = "SCBOW_CUDA_MEMORY"
# Device bytes left alone for the driver, the kernels and their scratch.
RESERVE_BYTES = 256 << 20
# Bytes per sentence on the device besides its tokens: offset (8), document id (4),
# target id (8) and at most one document boundary (8).
SENTENCE_BYTES = 28
# Static shared memory a block may use: the CUDA limit without opting in to more, less
# room for alignment padding.
SHARED_LIMIT = 48 * 1024 - 256
# Sentences of an uploaded chunk at least: a target, two positives and a negative.
MIN_SENTENCES = 4
# An epoch (a pass of the word part) is at least this many launches: see launch_size.
LAUNCHES_PER_EPOCH = 16


def launch_size(n_sentences: int, full: int) -> int:
    """How many examples (sentence part) or sentences (word part) one launch may run at once.

    ``n_sentences // LAUNCHES_PER_EPOCH``, at least 1 and at most ``full`` (the backend's whole
    batch). A launch's examples all read the rows as they were when it began (its blocks run at
    once), so a launch is one stale step; a corpus is trained in at least 16 such steps an epoch.
    On the 30-sentence test corpus (38 words, every example shares most rows) the H200's loss fell
    with 1 or 2 examples at once and rose with 4 or more; a 69K-sentence corpus ran as one launch
    and learned nothing. A corpus of 34K sentences or more still fills every multiprocessor of an
    H200 (2,112 blocks at once), and from 2.1M sentences (gutenberg-100M and up) a launch is the
    whole batch, as before: on 10M tiled 10 times launches of 32K to 512K examples scored the same.
    """
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
    """Import what numba-cuda's compiler loads at the first kernel it compiles (its numpy overloads).

    numba-cuda 0.30.4 overloads ``np.row_stack``, which numpy 2.5 removed: with numpy 2.5 every
    compile ended in an AttributeError from there (the import fails the same way). Numba's own CUDA
    target (its simulator, as CI runs it without numba-cuda) has no such module and nothing to check.
    """
    if not _numba_cuda_installed():
        return
    import numba.cuda.np.arrayobj  # noqa: F401


def _version(name: str) -> str:
    import importlib.metadata

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
    """Why ``--device cuda`` cannot train here, in one line; None when it can.

    Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) counts as a device.
    """
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
    """Cut the sentences into ranges whose device arrays fit in ``budget`` bytes.

    Returns ``[(lo, hi), ...]``: consecutive sentence ranges covering the corpus. A range
    is uploaded with one sentence more on each side (its targets' positives), and that
    is counted in the budget. A range ends at a document boundary when one lies in its
    second half.
    """
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
    """Host arrays of sentences ``lo:hi`` with one halo sentence each side, renumbered.

    A chunk of fewer than ``MIN_SENTENCES`` sentences in all is widened to that many.

    Returns ``(first, tokens, offsets, sent_doc, doc_offsets)``: ``first`` is the corpus
    index of local sentence 0; the documents are those of the uploaded sentences, clipped
    to them, so that local sentence ``s`` is corpus sentence ``first + s`` with the same
    neighbours and the same (clipped) document.
    """
    n = len(corpus.offsets) - 1
    u0, u1 = max(lo - 1, 0), min(hi + 1, n)
    # at least MIN_SENTENCES, so that every target has a sentence to draw as a negative
    # (the trainer guarantees the corpus has that many)
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
    """Threads per block: a power of two near ``dim``, from one warp up to 128.

    In the simulator every thread is a Python thread, so a handful.
    """
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


class CudaBackend:
    """Runs batches with the numba.cuda kernels on a device copy of the matrix.

    ``memory_limit`` (bytes for the corpus arrays, else ``$SCBOW_CUDA_MEMORY``, else what the
    device has free), ``block_threads`` (threads per block) and ``grid`` (blocks per launch)
    override the automatic choices: for tests and benchmarks.
    """

    name = "cuda"

    def __init__(self, W: np.ndarray, corpus, config, total: int, rate: np.ndarray | None = None,
                 memory_limit: float | None = None, block_threads: int | None = None, grid: int | None = None):
        require_cuda()
        from ...kernels import cuda as KC

        cuda = _import_cuda()
        self.cuda = cuda
        self.simulator = KC.SIMULATOR
        V, d = W.shape
        self.threads = block_threads or default_threads(d, self.simulator)
        k_max = example_size(config.negatives)
        # a block's static shared memory may not pass 48 KiB; many negatives take fewer
        # threads, down to one warp
        if KC.shared_bytes(k_max, 32) > SHARED_LIMIT:
            raise TrainingError(f"--negatives {config.negatives} is more than the GPU kernel can hold in shared memory; "
                                "use at most 100, or --device cpu")
        while self.threads > 32 and KC.shared_bytes(k_max, self.threads) > SHARED_LIMIT:
            self.threads //= 2
        self.kernels = KC.build(k_max, d, self.threads)
        self.params = kernel_params(config, total=total, hot=False)
        # examples a launch may run at once (launch_size); a corpus too small for whole-batch
        # launches gets the trainer's own batches, so its progress, losses and errors read as on the CPU
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
        """Train the epoch's targets ``lo:hi``; returns the loss sum and the examples trained."""
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
        loss_sum, count = 0.0, 0
        for a in range(lo, hi, self.launch):
            b = min(a + self.launch, hi)
            grid = min(b - a, self.grid)
            args = (self.W_d, self.Wi_d, self.arrays_d, self.order_d, self.rate_d, self.params, a, b, done + (a - lo),
                    self.stats_d)
            stats = launch(self.kernels.train, grid, self.threads, args, self.stats_d, self.simulator)
            loss_sum += float(stats[:, 0].sum())
            count += int(stats[:, 1].sum())
        return loss_sum, count

    def vectors(self) -> np.ndarray:
        """A host copy of the current matrix (after :meth:`close`, the final one: what a checkpoint
        inside the word part saves as the sentence part)."""
        return self.W_d.copy_to_host() if self.W_d is not None else self.final

    def close(self) -> np.ndarray:
        """The final matrix on the host; frees the device arrays."""
        W = self.final = self.W_d.copy_to_host()
        self.W_d = self.Wi_d = self.arrays_d = self.order_d = self.stats_d = None
        return W


class CudaWordPart(WordPart):
    """The word part (``scbow.training.wordpart``) on the GPU: ``Wi``, ``Wo``, the tokens, the
    offsets, the keep probabilities and the noise table are uploaded once; each batch (the CPU's
    batches: the same checkpoints and progress) runs as launches of at most :func:`launch_size`
    sentences, one block per sentence (``kernels.cuda.build_word_part``), each sentence drawing
    from its own random stream as on the CPU. :meth:`matrices` brings the rows back to the host.

    ``block_threads`` and ``grid`` override the automatic choices: for tests.
    """

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
        """Train the next batch (:meth:`WordPart.batch`). Returns ``(sentences, loss sum, pairs)``."""
        (lo, hi), = self.batch(done)
        tokens_d, offsets_d, keep_d, table_d = self.arrays_d
        loss, pairs = 0.0, 0
        for a in range(lo, hi, self.launch):
            b = min(a + self.launch, hi)
            grid = min(b - a, self.grid)
            args = (self.Wi_d, self.Wo_d, tokens_d, offsets_d, a, b, keep_d, table_d, self.params, done + (a - lo),
                    self.stats_d)
            stats = launch(self.kernel.train, grid, self.threads_per_block, args, self.stats_d, self.simulator)
            loss += float(stats[:, 0].sum())
            pairs += int(stats[:, 1].sum())
        self.on_host = False
        return hi - lo, loss, pairs

    def matrices(self) -> dict:
        """``word_in`` and ``word_out`` as they are now, copied to the host."""
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
