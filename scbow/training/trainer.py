"""The training loop: epochs, shuffles, batches; the NaN check, progress and hooks.

Reads top to bottom: take the encoded corpus, its targets and the initial matrix
(``scbow.training.start``), hand a backend (``scbow.training.backends``: the device and its kernels) one
batch at a time for every epoch's shuffled targets, calling the hooks (``scbow.training.hooks``)
between batches, then post-process the result (``scbow.training.postprocess``). Reading the
corpus from files is ``scbow.training.corpus.read_corpus``; checkpoints, signals and saving are
``scbow.training.session``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..config import TrainConfig, example_size
from ..errors import TrainingError, diverged
from ..progress import Progress, RunETA, note, plural
from ..vectors.formats import MIN_LARGEST, scan_values
from ..vectors.model import Model
from . import collapse
from .backends import make_backend
from .corpus import Corpus
from .hooks import TrainState
from .postprocess import COMMON_SAMPLE, remove_common_components
from .start import prepare
from .wordpart import LOSS_SAMPLE, WordPart, assemble, sample_threshold, unit_costs, word_part_on

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
    cost = example_size(config.negatives) * (length + 2) * config.dim
    if cost <= BATCH_COST:
        return base
    return max(1, int(base * BATCH_COST / cost))


@dataclass
class TrainResult:
    model: Model
    seconds: float
    examples: int
    losses: list = field(default_factory=list)  # mean loss of each batch, in order
    # the warning lines of the run (the collapse check's "unsure" verdict), already given to train's warn
    warnings: list = field(default_factory=list)


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


def resolve_cpu_threads(config: TrainConfig) -> int:
    """The CPU threads of a run: ``config.threads``, all cores for 0."""
    from ..kernels import resolve_threads

    return resolve_threads(config.threads)


def train_word_part(corpus: Corpus, config: TrainConfig, state: TrainState, vectors, call_hooks, quiet: bool,
                    word: tuple | None, threads: int | None, eta: RunETA | None = None) -> np.ndarray:
    """The word part's loop (``scbow.training.wordpart``) from ``state.word_done`` on: on the GPU with
    ``--device cuda`` (``backends.cuda.CudaWordPart``), else on ``threads`` CPU threads.

    Returns the trained ``Wi``. ``state.word_losses`` gets the loss of the part's fixed sample of sentences
    at its start and after each pass (``WordPart.sample_loss``). ``eta``: the whole run's
    (:class:`~scbow.progress.RunETA`, its part ``"word"``), shown on the progress line."""
    if config.device == "cuda":
        from .backends.cuda import CudaWordPart

        part = CudaWordPart(corpus, config, *(word or (None, None)))
    else:
        part = WordPart(corpus, config, threads, *(word or (None, None)))
    vectors.word = part.matrices
    n = corpus.n_sentences
    bar = Progress(state.word_total, unit="sent", enabled=None if not quiet else False, initial=state.word_done,
                   eta=eta.remaining if eta is not None else None)
    try:
        if state.word_done == 0:
            state.word_losses = [part.sample_loss()]
        while state.word_done < state.word_total:
            t0 = time.perf_counter()
            sentences, loss_sum, pairs = part.run(state.word_done)
            state.word_seconds += time.perf_counter() - t0
            state.word_done += sentences
            if eta is not None:
                eta.record("word", state.word_done, state.word_seconds)
            loss = loss_sum / max(pairs, 1)
            if not np.isfinite(loss):
                raise TrainingError(f"the word part's loss became {loss} after {state.word_done:,} sentences")
            if state.word_done % n == 0:  # a pass ends (a batch never crosses one)
                state.word_losses.append(part.sample_loss())
            p = min((state.word_done - 1) // n + 1, config.word_passes)
            bar.update(state.word_done, prefix=f"word part {p}/{config.word_passes} ", suffix=f"loss {loss:.4f}")
            call_hooks("after_word_batch")
        Wi = part.matrices()[0]
    finally:
        bar.close()
        part.close()
    if not np.isfinite(Wi).all():
        raise TrainingError("the word part's vectors hold NaN or inf")
    return Wi


def train(corpus: Corpus, config: TrainConfig | None = None, quiet: bool = False, hooks=(),
          init: np.ndarray | None = None, start: TrainState | None = None,
          word: tuple | None = None, warn=None) -> TrainResult:
    """Train Siamese CBOW embeddings on an encoded corpus.

    ``hooks`` are :class:`~scbow.training.hooks.Hook` objects. ``init`` is a starting matrix (float32, one row
    per vocabulary word) instead of the random one, used as it is, or a callable
    ``init(vocab)`` that returns one once the corpus's vocabulary is known
    (``scbow.training.pretrained.pretrained_init``), which is multiplied by the frequency weights
    as the random start is;
    ``start`` resumes a run from a :class:`TrainState` (with ``init`` holding that state's matrix,
    and ``word`` the word part's ``(Wi, Wo)`` when ``start`` is inside the word part).

    With ``config.word_passes`` > 0 the word part (``scbow.training.wordpart``) is trained after
    the sentence part, and the model's rows are both parts side by side.

    The sentence part is judged by the collapse check (``scbow.training.collapse``) as soon as it is
    trained: a clear collapse raises TrainingError; an unsure verdict is a warning line, given to
    ``warn`` (default: stderr unless ``quiet``) and kept in the result's ``warnings``.
    """
    config = config or TrainConfig()
    if not isinstance(corpus, Corpus):
        raise TypeError("trainer.train takes an encoded Corpus (scbow.training.corpus.read_corpus); scbow.train takes paths")
    # the CPU threads, resolved once: the sentence part's and the word part's on the CPU
    cpu_threads = resolve_cpu_threads(config) if config.device == "cpu" else None
    threads = cpu_threads if config.device == "cpu" else max(config.threads, 1)
    begin = prepare(corpus, config, init)
    targets, W = begin.targets, begin.W
    n_targets = len(targets)
    total = n_targets * config.epochs
    state = TrainState(total=total, targets_per_epoch=n_targets)
    if start is not None:
        if start.total != total or start.targets_per_epoch != n_targets:
            raise TrainingError(
                f"cannot resume: the saved run has {start.targets_per_epoch:,} targets per epoch and "
                f"{start.total:,} examples in all, this one {n_targets:,} and {total:,} (different corpus or epochs)")
        state = TrainState.from_dict(start.to_dict())
    state.word_total = config.word_passes * corpus.n_sentences if word_part_on(config) else 0
    if state.word_done > state.word_total or (word is not None) != state.in_word_part:
        raise TrainingError(f"cannot resume: the saved run is {state.word_done:,} sentences into a word part of "
                            f"{state.word_total:,}" + ("" if word is not None or not state.in_word_part
                                                        else " and its word part's matrices are missing"))
    if not state.in_word_part and collapse.Spread.from_dict(state.collapse_start) is None:
        # the collapse check's measure of the run's start (a resumed run's is in its checkpoint;
        # one from before this measure is judged against the checkpoint's matrix)
        measured = collapse.measure(W, corpus, config.seed)
        state.collapse_start = measured.to_dict() if measured is not None else None
    backend = make_backend(W, corpus, config, threads, total, begin.rates, say=None if quiet else note)
    hooks = list(hooks)

    def vectors() -> np.ndarray:
        return backend.vectors()

    # one ETA for the whole run, the word part's passes included (progress.RunETA: measured from the kernels'
    # seconds, so the hooks' time is left out); a resumed run's rate and ETA count only this process's work
    example_cost, sentence_cost = unit_costs(corpus, config)
    eta = RunETA().part("sentence", total, state.done, example_cost)
    eta.part("word", state.word_total, state.word_done, sentence_cost)
    bar = Progress(total, unit="ex", enabled=None if not quiet else False, initial=state.done, eta=eta.remaining)
    orders = epoch_orders(targets, config.seed, state.epoch)
    batch = batch_size(config, corpus, getattr(backend, "batch", None) or BATCH)
    wall_start = time.perf_counter()
    hook_seconds = 0.0

    def call_hooks(method: str, *extra) -> None:
        nonlocal hook_seconds
        if hooks:
            t = time.perf_counter()
            for hook in hooks:
                getattr(hook, method)(state, vectors, *extra)
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
                eta.record("sentence", state.done, state.kernel_seconds)
                if not np.isfinite(loss):
                    raise diverged(config.lr, f"the loss became {loss} after {state.done:,} examples")
                state.losses.append(float(loss))
                bar.update(state.done, prefix=f"epoch {epoch + 1}/{config.epochs} ", suffix=f"loss {loss:.4f}")
                call_hooks("after_batch")
            state.epoch += 1
            state.lo = 0
            call_hooks("after_epoch")
    finally:
        bar.close()
    W = backend.close()
    if not np.isfinite(W).all():
        raise diverged(config.lr, "the embeddings hold NaN or inf")
    verdict = None
    if not state.in_word_part:  # judged once, when the sentence part ends (see scbow.training.collapse)
        verdict = collapse.Verdict(collapse.Spread.from_dict(state.collapse_start),
                                   collapse.measure(W, corpus, config.seed))
        if verdict.kind == "collapsed":
            raise diverged(config.lr, verdict.error())
        if verdict.warning():
            (warn or (note if not quiet else (lambda line: None)))(verdict.warning())
    sentence_seconds = state.kernel_seconds
    Wi = None
    if state.word_total:
        Wi = train_word_part(corpus, config, state, vectors, call_hooks, quiet, word, cpu_threads, eta)
    call_hooks("after_training")
    wall_seconds = time.perf_counter() - wall_start
    if config.common_components >= 0:
        k = config.components_removed
        if not quiet:
            note(f"post-processing: centring the sentence averages{f' and removing {k} common components' if k else ''} "
                 f"(estimated on {plural(min(COMMON_SAMPLE, corpus.n_sentences), 'sentence')})")
        remove_common_components(W, corpus, k, config.seed)
    if Wi is not None:
        W = assemble(W, Wi, corpus, config)
    largest = scan_values(W)[1] if W.size else 0.0  # in blocks: no copy of the matrix
    if not largest >= MIN_LARGEST:  # a model every reader refuses is not saved (a start with no spread: one
        raise TrainingError(  # vector for every word, which centring turns to zero)
            f"training ended with every vector zero or nearly so (largest value {largest:.3g}): no direction is left to "
            "compare, so no model is saved; did the start give every word the same vector (--init-vectors, init)?")

    seconds = sentence_seconds
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
    if state.word_total:
        info["training"]["word_part"] = {
            "passes": config.word_passes, "sentences": state.word_done, "device": config.device, "threads": cpu_threads,
            "sample": sample_threshold(corpus.stats.get("raw_tokens") or int(np.asarray(corpus.vocab.counts).sum()),
                                       config),
            "kernel_seconds": round(state.word_seconds, 3),
            "sentences_per_second": round(state.word_done / state.word_seconds, 1) if state.word_seconds else None,
            # on the part's fixed sample of sentences: before the first pass, after each
            "pass_losses": [round(x, 6) for x in state.word_losses],
            "loss_sentences": min(corpus.n_sentences, LOSS_SAMPLE),
            "first_loss": state.word_losses[0] if state.word_losses else None,
            "final_loss": state.word_losses[-1] if state.word_losses else None}
    if verdict is not None:
        info["training"]["collapse_check"] = verdict.to_dict()
    model = Model(corpus.vocab, W, config.to_dict(), info)
    warnings = [w for w in (verdict.warning() if verdict is not None else None,) if w]
    return TrainResult(model=model, seconds=seconds, examples=state.done, losses=losses, warnings=warnings)
