"""The training driver: corpus, examples, learning-rate schedule, threads, progress.

Reads top to bottom: encode the corpus, initialise the matrix, then for every epoch
shuffle the targets and hand the compiled kernel one batch at a time. Between batches the
driver checks the loss for NaN, draws the progress line and lets Ctrl-C through.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from .config import TrainConfig
from .corpus import Corpus, load_corpus
from .errors import ConfigError, CorpusError, TrainingError
from .model import Model
from .progress import Progress, plural

# Examples per kernel call: long enough to amortise the thread launch, short enough for
# a lively progress line and a prompt Ctrl-C (the stop flag is read between calls).
BATCH = 1 << 15
# The work of one example, (3 + negatives) * (mean sentence length + 2) * dim, up to which
# a batch holds BATCH examples (about 0.3 s on one core): 2 negatives, sentences of 40
# words, 300 dims. Costlier examples (many negatives, long sentences, many dims) get
# proportionally smaller batches, so that a batch still takes about as long and Ctrl-C
# still stops a run within about a second, whatever the settings.
BATCH_COST = 5 * (40 + 2) * 300


def batch_size(config: TrainConfig, corpus: Corpus, base: int = BATCH) -> int:
    """Examples per kernel call for this run: ``base``, cut for costly examples (see BATCH_COST).

    A function of the settings and the corpus only, never of the clock: the batches, and
    with them the random streams the kernel seeds per batch, are the same in every run
    of the same settings, resumed or not.
    """
    length = len(corpus.tokens) / max(corpus.n_sentences, 1)
    if config.max_length:
        length = min(length, config.max_length)
    cost = (3 + config.negatives) * (length + 2) * config.dim
    if cost <= BATCH_COST:
        return base
    return max(1, int(base * BATCH_COST / cost))


@dataclass
class TrainResult:
    model: Model
    seconds: float
    examples: int
    losses: list = field(default_factory=list)  # mean loss of each batch, in order
    # the corpus cache entry the run used, and whether this run wrote it (see session.py)
    cache: dict | None = None


def say(quiet: bool, line: str) -> None:
    """A line on stderr about the phase the run is in (nothing when ``quiet``)."""
    if not quiet:
        import sys

        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def resolve_threads(threads: int) -> int:
    import numba

    available = numba.config.NUMBA_NUM_THREADS
    if threads == 0:
        return available
    if threads > available:
        raise TrainingError(f"--threads {threads} is more than the {available} threads numba can use here")
    return threads


def trainable_targets(corpus: Corpus) -> np.ndarray:
    """Sentences with at least one neighbour in their document (int64, sorted)."""
    doc = np.asarray(corpus.sent_doc)
    has = np.zeros(len(doc), dtype=bool)
    same = doc[1:] == doc[:-1]
    has[1:] |= same
    has[:-1] |= same
    return np.flatnonzero(has).astype(np.int64)


def word_weights(counts, raw_tokens: int, a: float) -> np.ndarray:
    """Frequency weights ``a / (a + p(w))`` of the words (float32, one per word; SIF's weights).

    ``p(w)`` is the word's share of the corpus's tokens (``raw_tokens``, unknown words
    included). ``a = 0`` gives every word weight 1.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if a <= 0:
        return np.ones(len(counts), dtype=np.float32)
    p = counts / max(float(raw_tokens), float(counts.sum()), 1.0)
    return (a / (a + p)).astype(np.float32)


def corpus_weights(corpus: Corpus, config: TrainConfig) -> np.ndarray:
    """:func:`word_weights` of the corpus's vocabulary under ``config.frequency_weight``."""
    raw = corpus.stats.get("raw_tokens") or int(np.asarray(corpus.vocab.counts).sum())
    return word_weights(corpus.vocab.counts, raw, config.frequency_weight)


def init_vectors(n_words: int, config: TrainConfig, weights: np.ndarray | None = None) -> np.ndarray:
    """N(0, init_std) rows, row w scaled by ``weights[w]`` when given.

    With frequency weights the plain average of the initial rows is the weighted average
    of fixed random vectors: SIF-weighted word overlap, the untrained starting point.
    """
    rng = np.random.default_rng(config.seed)
    W = rng.standard_normal((n_words, config.dim), dtype=np.float32)
    W *= np.float32(config.init_std)
    if weights is not None:
        W *= weights[:, None]
    return W


def step_rates(weights: np.ndarray, counts, config: TrainConfig) -> np.ndarray:
    """Per-word factors of the SGD step (float32, see ``kernels.cpu.example_step``).

    ``weights**2`` (rows ``W = a * U`` trained with factor ``a**2`` are plain SGD on ``U``,
    whose sentences are ``a``-weighted averages) times
    ``min(1, count_floor / count) ** count_power``.
    """
    counts = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    damp = np.minimum(1.0, config.count_floor / counts) ** config.count_power
    return np.ascontiguousarray(weights.astype(np.float64) ** 2 * damp, dtype=np.float32)


def sample_sentences(n_sentences: int, n: int, seed: int) -> np.ndarray:
    """The up to ``n`` random sentences the post-processing is estimated on (sorted int64)."""
    rng = np.random.default_rng([seed, 2])
    return np.sort(rng.choice(n_sentences, size=min(n, n_sentences), replace=False)).astype(np.int64)


# Sentences the post-processing of a trained model is estimated on.
COMMON_SAMPLE = 100_000


def remove_common_components(W: np.ndarray, corpus: Corpus, k: int, seed: int, sample: int = COMMON_SAMPLE) -> None:
    """Centre the sentence averages of the corpus and project out their top ``k`` directions.

    Both are linear maps, and averaging commutes with a linear map, so applying them to
    every word vector (in place) applies them to every sentence average: the model stays
    "the plain average of word vectors". Averages share a large common component (frequent
    words, style) that inflates every cosine; removing it is what SIF and all-but-the-top
    do. Estimated on ``sample`` training sentences, never on evaluation data.
    """
    mean, cov = sentence_moments(W, corpus, sample_sentences(corpus.n_sentences, sample, seed))
    W -= mean.astype(np.float32)
    if k > 0:
        # top-k eigenvectors of the d x d covariance: the right singular vectors of the
        # centred sample, without ever holding the (sample x d) matrix
        U = np.linalg.eigh(cov)[1][:, ::-1][:, :k].T.astype(np.float32)
        step = 1 << 13  # rows per projection: its temporary stays ~10 MB at 300 dims
        for lo in range(0, len(W), step):
            block = W[lo : lo + step]
            block -= (block @ U.T) @ U


def sentence_moments(W: np.ndarray, corpus: Corpus, pick: np.ndarray, block: int = 8192):
    """Mean (d,) and covariance (d, d), float64, of the averages of sentences ``pick``.

    The averages come from the embedding kernel (``kernels.embed``) reading the corpus's
    token ids in place, a block of sentences at a time: no gathered rows, one block of
    averages in memory.
    """
    from .kernels.embed import mean_lines_serial

    d = W.shape[1]
    W = np.ascontiguousarray(W, dtype=np.float32)
    tokens = np.asarray(corpus.tokens)
    offsets = np.asarray(corpus.offsets)
    total = np.zeros(d, dtype=np.float64)
    scatter = np.zeros((d, d), dtype=np.float64)
    n = 0
    for lo in range(0, len(pick), block):
        p = pick[lo : lo + block]
        starts, stops = offsets[p], offsets[p + 1]
        keep = stops > starts
        starts, stops = np.ascontiguousarray(starts[keep]), np.ascontiguousarray(stops[keep])
        if not len(starts):
            continue
        S = np.empty((len(starts), d), dtype=np.float32)
        mean_lines_serial(W, W[:0], tokens, starts, stops, 0.0, S, np.empty(len(starts), dtype=np.int64))
        S = S.astype(np.float64)
        total += S.sum(axis=0)
        scatter += S.T @ S
        n += len(starts)
    if n == 0:
        return total, scatter
    mean = total / n
    return mean, scatter / n - np.outer(mean, mean)


def kernel_params(config: TrainConfig, threads: int, total: int):
    """The float64 and int64 parameter arrays of ``train_batch`` (layout in kernels.cpu)."""
    from .kernels import cpu as K

    fparams = np.zeros(K.N_FPARAMS, dtype=np.float64)
    fparams[K.P_LR] = config.lr
    fparams[K.P_LR_MIN] = config.lr * config.min_lr_fraction
    fparams[K.P_TOTAL] = total
    fparams[K.P_DECAY] = config.weight_decay
    iparams = np.zeros(K.N_IPARAMS, dtype=np.int64)
    iparams[K.P_NEGATIVES] = config.negatives
    iparams[K.P_MAX_LEN] = config.max_length
    iparams[K.P_NEG_MODE] = K.NEG_DOCUMENT if config.negative_mode == "document" else K.NEG_UNIFORM
    iparams[K.P_SEED] = config.seed
    iparams[K.P_CHUNKS] = threads
    # several threads buffer the hottest rows (kernels.cpu.HOT_ROWS); one thread runs
    # plain per-example SGD, reproducible bit for bit
    iparams[K.P_HOT] = K.HOT_ROWS if threads > 1 else 0
    iparams[K.P_FLUSH] = K.FLUSH_EVERY
    return fparams, iparams


@dataclass
class TrainState:
    """Where a run is: enough to report progress, write a checkpoint or resume.

    ``epoch`` and ``lo`` name the next batch: it starts at position ``lo`` of the shuffled
    targets of epoch ``epoch`` (0-based); ``done`` examples were trained before it. The
    kernel draws its negatives from ``(seed, done)``, and the shuffle of epoch e is the
    e-th permutation of a generator seeded by ``seed``, so a run resumed from a state
    replays the remaining batches exactly (bit for bit with one thread).
    """

    epoch: int = 0
    lo: int = 0
    done: int = 0
    total: int = 0
    targets_per_epoch: int = 0
    kernel_seconds: float = 0.0
    losses: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)  # copies the list of losses too

    @classmethod
    def from_dict(cls, d: dict) -> "TrainState":
        return cls(**{f.name: d[f.name] for f in fields(cls)})


class Hook:
    """Called by :func:`train` between kernel calls; the base class does nothing.

    ``vectors()`` returns the current matrix as a host float32 array (the live array on
    CPU; a copy from the GPU on CUDA, so call it only when needed). Time spent in hooks
    is not counted as training time. A hook may raise to stop the run.
    """

    def before_training(self, state: TrainState, vectors, corpus: Corpus) -> None:
        """Called once before the first batch, with the encoded corpus the run trains on."""

    def after_batch(self, state: TrainState, vectors) -> None:
        pass

    def after_epoch(self, state: TrainState, vectors) -> None:
        pass


class CpuBackend:
    """Runs batches with the Numba CPU kernels on a host matrix, updated in place."""

    name = "cpu"

    def __init__(self, W: np.ndarray, corpus: Corpus, config: TrainConfig, threads: int, total: int,
                 rate: np.ndarray | None = None):
        from .kernels import cpu as K  # numba: imported here, so that `--help` stays fast

        self.K = K
        self.W = W
        self.rate = np.ones(len(W), dtype=np.float32) if rate is None else np.ascontiguousarray(rate, np.float32)
        self.arrays = (np.ascontiguousarray(corpus.tokens), np.ascontiguousarray(corpus.offsets),
                       np.ascontiguousarray(corpus.sent_doc), np.ascontiguousarray(corpus.doc_offsets))
        self.kernel = K.train_batch_serial if threads == 1 else K.train_batch_parallel
        self.fparams, self.iparams = kernel_params(config, threads, total)
        self.stats = np.zeros((threads, 2), dtype=np.float64)
        self.order = None
        # an empty batch: loads the kernels from numba's cache (or compiles them on a first
        # run) here, so that neither counts as training time
        tokens, offsets, sent_doc, doc_offsets = self.arrays
        self.kernel(W, tokens, offsets, sent_doc, doc_offsets, np.zeros(1, dtype=np.int64), self.rate, self.fparams,
                    self.iparams, self.stats)  # lo = hi = 0: no example

    def begin_epoch(self, order: np.ndarray) -> None:
        self.order = order

    def run(self, lo: int, hi: int, done: int) -> tuple[float, int]:
        """Train targets ``order[lo:hi]``; returns the loss sum and the examples trained."""
        K, ip = self.K, self.iparams
        ip[K.P_LO], ip[K.P_HI], ip[K.P_DONE] = lo, hi, done
        tokens, offsets, sent_doc, doc_offsets = self.arrays
        self.kernel(self.W, tokens, offsets, sent_doc, doc_offsets, self.order, self.rate, self.fparams, ip,
                    self.stats)
        return float(self.stats[:, 0].sum()), int(self.stats[:, 1].sum())

    def vectors(self) -> np.ndarray:
        return self.W

    def close(self) -> np.ndarray:
        """The final matrix on the host."""
        return self.W


def make_backend(W, corpus, config, threads, total, rate=None):
    if config.device == "cpu":
        return CpuBackend(W, corpus, config, threads, total, rate)
    if config.device == "cuda":
        try:
            from .cuda import CudaBackend  # raises TrainingError when no GPU or numba-cuda
        except ImportError as exc:
            raise TrainingError(f"--device cuda could not load the CUDA backend ({exc}); "
                                "install it with: pip install 'scbow-numba[cuda]'") from None
        return CudaBackend(W, corpus, config, threads, total, rate)
    raise TrainingError(f"unknown device {config.device!r}")


def epoch_orders(targets: np.ndarray, seed: int, first: int = 0):
    """Yield the shuffled targets of epochs ``first``, ``first + 1``, ...

    Epoch e's order is the e-th permutation drawn from a generator seeded by ``seed``, so
    a resumed run sees the same orders as an uninterrupted one.
    """
    rng = np.random.default_rng([seed, 1])
    for _ in range(first):
        rng.permutation(len(targets))
    while True:
        yield targets[rng.permutation(len(targets))]


def train(corpus, config: TrainConfig | None = None, quiet: bool = False, cache_dir=None, use_cache: bool = True,
          on_batch=None, hooks=(), init: np.ndarray | None = None, start: TrainState | None = None) -> TrainResult:
    """Train Siamese CBOW embeddings.

    ``corpus`` is a :class:`~scbow.corpus.Corpus` or paths of text files. ``on_batch``,
    if given, is called as ``on_batch(examples_done, W)`` after every kernel call;
    ``hooks`` are :class:`Hook` objects. ``init`` is a starting matrix (float32, one row
    per vocabulary word) instead of the random one, used as it is, or a callable
    ``init(vocab)`` that returns one once the corpus's vocabulary is known
    (``scbow.pretrained.pretrained_init``), which is multiplied by the frequency weights
    as the random start is;
    ``start`` resumes a run from a :class:`TrainState` (with ``init`` holding that state's matrix).
    """
    config = config or TrainConfig()
    threads = resolve_threads(config.threads) if config.device == "cpu" else max(config.threads, 1)
    if not isinstance(corpus, Corpus):
        reading = Progress(0, unit="tok", enabled=None if not quiet else False)
        corpus = load_corpus(corpus, config.min_count, config.max_vocab, cache_dir=cache_dir, use_cache=use_cache,
                             progress=lambda tokens, *_: reading.update(tokens, prefix="reading corpus: "))
        reading.close()
    targets = trainable_targets(corpus)
    if corpus.n_sentences < 4 or len(targets) == 0:
        raise CorpusError(
            f"no training example: the corpus has {plural(corpus.n_sentences, 'usable sentence')} in "
            f"{plural(corpus.n_documents, 'document')}; an example needs a sentence with a neighbour in its "
            "document and at least 4 sentences in all"
        )
    if config.negatives >= corpus.n_sentences - 1:
        raise ConfigError(
            f"negatives must be fewer than the sentences a negative is drawn from: this corpus has "
            f"{corpus.n_sentences:,} usable sentences, so at most {max(corpus.n_sentences - 2, 0):,} negatives "
            f"(the paper's best is 2), got {config.negatives:,}")
    n_targets = len(targets)
    total = n_targets * config.epochs
    weights = corpus_weights(corpus, config)
    weighted = callable(init)
    if weighted:
        # a callable gives the unweighted start (U); the frequency weights are applied below,
        # as to the random start (an array, such as a checkpoint's matrix, is used as it is)
        init = np.asarray(init(corpus.vocab), dtype=np.float32)
    if init is None:
        W = init_vectors(len(corpus.vocab), config, weights)
    else:
        if init.shape != (len(corpus.vocab), config.dim):
            raise TrainingError(f"initial vectors have shape {init.shape}; this run needs "
                                f"{(len(corpus.vocab), config.dim)}")
        W = np.array(init, dtype=np.float32, order="C", copy=True)
        if weighted:
            W *= weights[:, None]
    state = TrainState(total=total, targets_per_epoch=n_targets)
    if start is not None:
        if start.total != total or start.targets_per_epoch != n_targets:
            raise TrainingError(
                f"cannot resume: the saved run has {start.targets_per_epoch:,} targets per epoch and "
                f"{start.total:,} examples in all, this one {n_targets:,} and {total:,} (different corpus or epochs)")
        state = TrainState.from_dict(start.to_dict())

    backend = make_backend(W, corpus, config, threads, total, step_rates(weights, corpus.vocab.counts, config))
    hooks = list(hooks)
    if on_batch is not None:
        class _OnBatch(Hook):
            def after_batch(self, st, vectors):
                on_batch(st.done, vectors())
        hooks.append(_OnBatch())

    # a resumed run's rate and ETA count only the examples of this process
    bar = Progress(total, unit="ex", enabled=None if not quiet else False, initial=state.done)
    orders = epoch_orders(targets, config.seed, state.epoch)
    batch = batch_size(config, corpus, getattr(backend, "batch", BATCH))
    wall_start = time.perf_counter()
    hook_seconds = 0.0

    def call_hooks(method: str, *extra) -> None:
        nonlocal hook_seconds
        if hooks:
            t = time.perf_counter()
            for hook in hooks:
                getattr(hook, method)(state, backend.vectors, *extra)
            dt = time.perf_counter() - t
            hook_seconds += dt
            bar.exclude(dt)  # the progress line shows the training rate, not the hooks'

    try:
        call_hooks("before_training", corpus)
        while state.epoch < config.epochs:
            epoch = state.epoch
            backend.begin_epoch(next(orders))
            while state.lo < n_targets:
                lo, hi = state.lo, min(state.lo + batch, n_targets)
                t0 = time.perf_counter()
                loss_sum, n = backend.run(lo, hi, state.done)
                state.kernel_seconds += time.perf_counter() - t0
                loss = loss_sum / max(n, 1)
                state.done += hi - lo
                state.lo = hi
                if not np.isfinite(loss):
                    raise TrainingError(
                        f"the loss became {loss} after {state.done:,} examples: the learning rate "
                        f"({config.lr:g}) is probably too high; try a smaller --lr"
                    )
                state.losses.append(float(loss))
                bar.update(state.done, prefix=f"epoch {epoch + 1}/{config.epochs} ", suffix=f"loss {loss:.4f}")
                call_hooks("after_batch")
            state.epoch += 1
            state.lo = 0
            call_hooks("after_epoch")
    finally:
        bar.close()
    wall_seconds = time.perf_counter() - wall_start
    W = backend.close()
    if not np.isfinite(W).all():
        raise TrainingError("the embeddings hold NaN or inf: the learning rate is probably too high; try a smaller --lr")
    if config.common_components >= 0:
        k = config.components_removed
        say(quiet, f"post-processing: centring the sentence averages{f' and removing {k} common components' if k else ''} "
                   f"(estimated on {min(COMMON_SAMPLE, corpus.n_sentences):,} sentences)")
        remove_common_components(W, corpus, k, config.seed)

    seconds = state.kernel_seconds
    losses = state.losses
    info = {
        "corpus": dict(corpus.stats),
        "training": {
            "device": config.device,
            "examples": state.done,
            "targets_per_epoch": n_targets,
            "threads": threads,
            "kernel_seconds": round(seconds, 3),
            "examples_per_second": round(state.done / seconds, 1) if seconds else None,
            # the training loop on the wall clock, and the part of it spent in hooks
            # (evaluations, checkpoints), which kernel_seconds leaves out
            "wall_seconds": round(wall_seconds, 3),
            "hook_seconds": round(hook_seconds, 3),
            "first_loss": losses[0] if losses else None,
            "final_loss": float(np.mean(losses[-max(1, len(losses) // 20):])) if losses else None,
        },
    }
    model = Model(corpus.vocab, W, config.to_dict(), info)
    return TrainResult(model=model, seconds=seconds, examples=state.done, losses=losses)
