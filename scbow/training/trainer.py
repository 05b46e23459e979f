"""The training loop: a run's phases one after the other, then post-processing and assembly.

:func:`train` reads top to bottom: prepare (``start``), each phase (:class:`SentencePhase`, then the
word part, ``wordpart``) through :func:`run_phase` (NaN check, progress, hooks), post-process,
assemble. Reading files is ``corpus.read_corpus``; checkpoints, signals and saving are ``session``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import kernels
from ..config import TrainConfig, example_size
from ..errors import TrainingError, diverged
from ..progress import Progress, RunETA, note, plural
from ..vectors.formats import MIN_LARGEST, scan_values
from ..vectors.model import Model
from . import collapse
from .backends.cpu import CpuBackend
from .backends.cuda import CudaBackend, CudaWordPart  # imports no numba: a backend says what is missing
from .corpus import Corpus
from .hooks import Matrices, PhaseState, TrainState
from .postprocess import COMMON_SAMPLE, remove_common_components
from .start import prepare
from .wordpart import LOSS_SAMPLE, WordPart, assemble, sample_threshold, unit_costs, word_part_on

# Examples per kernel call: amortises the thread launch, yet a lively progress line and a prompt Ctrl-C.
BATCH = 1 << 15
# The work of one example, (3 + negatives) * (mean sentence length + 2) * dim, up to which a batch holds
# BATCH examples (about 0.3 s on one core); costlier examples get proportionally smaller batches, so that
# Ctrl-C still stops a run within about a second whatever the settings.
BATCH_COST = 5 * (40 + 2) * 300


def batch_size(config: TrainConfig, corpus: Corpus, base: int = BATCH) -> int:
    """Examples per kernel call: ``base``, cut for costly examples (BATCH_COST). Never a function of the
    clock: the batches, and the random streams seeded per batch, are the same in every run, resumed or not."""
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
    # set by scbow.training.session: what the corpus cache did, and the learning curve's hook (or None)
    cache: dict | None = None
    curve: object = None


def epoch_orders(targets: np.ndarray, seed: int, first: int = 0):
    """Yield the shuffled targets of epochs ``first``, ``first + 1``, ...: epoch e's is the e-th permutation
    of a generator seeded by ``seed``, so a resumed run sees the same orders."""
    rng = np.random.default_rng([seed, 1])
    for _ in range(first):
        rng.permutation(len(targets))
    while True:
        yield targets[rng.permutation(len(targets))]


class SentencePhase:
    """The sentence part (Siamese CBOW) as a phase: each epoch's shuffled targets a batch at a time on the
    backend of ``config.device`` (``backends``); the matrix ``"sentence"``."""

    name, unit, label, samples = "sentence", "ex", "epoch", False

    def __init__(self, begin, corpus: Corpus, config: TrainConfig, threads: int, quiet: bool):
        self.targets, self.seed, self.lr = begin.targets, config.seed, config.lr
        self.passes = config.epochs
        self.total = len(self.targets) * config.epochs
        if config.device == "cuda":
            self.backend = CudaBackend(begin.W, corpus, config, self.total, begin.rates)
        else:  # ``say``: tells the user when the CPU kernels are about to be compiled
            self.backend = CpuBackend(begin.W, corpus, config, threads, self.total, begin.rates,
                                      say=None if quiet else note)
        self.batch = batch_size(config, corpus, self.backend.batch or BATCH)
        self.orders = self.loaded = None

    def step(self, state: TrainState) -> tuple[int, float]:
        if self.orders is None:  # from the epoch the run is in (a resumed run's)
            self.orders = epoch_orders(self.targets, self.seed, state.epoch)
        if self.loaded != state.epoch:
            self.backend.begin_epoch(next(self.orders))
            self.loaded = state.epoch
        lo, hi = state.lo, min(state.lo + self.batch, len(self.targets))
        loss_sum, n = self.backend.run(lo, hi, state[self.name].done)
        state.lo = hi
        return hi - lo, loss_sum / max(n, 1)

    def end_of_pass(self, state: TrainState) -> bool:
        if state.lo < len(self.targets):
            return False
        state.epoch, state.lo = state.epoch + 1, 0
        return True

    def loss_error(self, loss: float, done: int) -> Exception:
        return diverged(self.lr, f"the loss became {loss} after {done:,} examples")

    def sample_loss(self) -> None:
        return None

    def matrices(self) -> dict:
        return {"sentence": self.backend.vectors()}

    def close(self) -> np.ndarray:
        W = self.backend.close()
        if not np.isfinite(W).all():
            raise diverged(self.lr, "the embeddings hold NaN or inf")
        return W


def run_phase(phase, state: TrainState, call_hooks, eta: RunETA, quiet: bool) -> None:
    """Train ``phase`` from where ``state`` says to its end, recording its losses (each batch's, or its sample
    loss at its start and after each pass) and calling the hooks after each batch and each pass."""
    state.phase = phase.name
    ps = state[phase.name]
    if ps.done == 0 and phase.samples:
        ps.losses = [phase.sample_loss()]
    per_pass = max(ps.total // max(phase.passes, 1), 1)
    bar = Progress(ps.total, unit=phase.unit, quiet=quiet, initial=ps.done,
                   eta=eta.remaining)
    call_hooks.bar = bar
    try:
        while True:
            if phase.end_of_pass(state):
                call_hooks("after_epoch")
            if ps.done >= ps.total:
                break
            t0 = time.perf_counter()
            steps, loss = phase.step(state)
            ps.seconds += time.perf_counter() - t0
            ps.done += steps
            eta.record(phase.name, ps.done, ps.seconds)
            if not np.isfinite(loss):
                raise phase.loss_error(loss, ps.done)
            if not phase.samples:
                ps.losses.append(float(loss))
            elif ps.done % per_pass == 0:  # a pass ends (a batch never crosses one)
                ps.losses.append(phase.sample_loss())
            p = min((ps.done - 1) // per_pass + 1, phase.passes)
            bar.update(ps.done, prefix=f"{phase.label} {p}/{phase.passes} ", suffix=f"loss {loss:.4f}")
            call_hooks("after_batch")
    finally:
        bar.close()


class HookCaller:
    """Calls the hooks' method by name, timing them (left out of the progress rate and the training time)."""

    def __init__(self, hooks, state: TrainState, matrices: Matrices):
        self.hooks, self.state, self.matrices = list(hooks), state, matrices
        self.seconds = 0.0
        self.bar = None

    def __call__(self, method: str, *extra) -> None:
        if self.hooks:
            t = time.perf_counter()
            for hook in self.hooks:
                getattr(hook, method)(self.state, self.matrices, *extra)
            dt = time.perf_counter() - t
            self.seconds += dt
            if self.bar is not None:
                self.bar.exclude(dt)


def start_state(start: TrainState | None, corpus: Corpus, config: TrainConfig, n_targets: int) -> TrainState:
    """A fresh run's state, or a copy of ``start`` checked to be a state of this run's phases."""
    totals = {"sentence": n_targets * config.epochs}
    if word_part_on(config):
        totals["word"] = config.word_passes * corpus.n_sentences
    if start is None:
        return TrainState(phases={name: PhaseState(total=t) for name, t in totals.items()}, targets_per_epoch=n_targets)
    saved = {name: p.total for name, p in start.phases.items()}
    if saved != totals or start.targets_per_epoch != n_targets:
        raise TrainingError(f"cannot resume: the saved run's phases are {saved} ({start.targets_per_epoch:,} targets "
                            f"per epoch), this one's {totals} ({n_targets:,}) (different corpus, epochs or passes)")
    return TrainState.from_dict(start.to_dict())


def train(corpus: Corpus, config: TrainConfig | None = None, quiet: bool = False, hooks=(),
          init: np.ndarray | None = None, start: TrainState | None = None, matrices: dict | None = None,
          warn=None) -> TrainResult:
    """Train Siamese CBOW embeddings on an encoded corpus.

    ``hooks``: :class:`~scbow.training.hooks.Hook` objects. ``init``: a matrix to start from instead of the
    random one (``start.prepare``). ``start`` resumes from a :class:`TrainState` with
    ``matrices`` by name (a checkpoint's). With ``config.word_passes`` > 0 the word part trains after the
    sentence part, and the rows are both parts side by side. The collapse check judges the sentence part
    once trained: a collapse raises TrainingError, an unsure verdict is a line to ``warn`` (default: stderr
    unless ``quiet``), also kept in the result's ``warnings``.
    """
    config = config or TrainConfig()
    if not isinstance(corpus, Corpus):
        raise TypeError("trainer.train takes an encoded Corpus (scbow.training.corpus.read_corpus); scbow.train takes paths")
    saved = matrices or {}
    # the CPU threads, resolved once: the sentence part's and the word part's on the CPU
    cpu_threads = kernels.resolve_threads(config.threads) if config.device == "cpu" else None
    threads = cpu_threads or max(config.threads, 1)

    # prepare
    begin = prepare(corpus, config, saved.get("sentence", init))
    state = start_state(start, corpus, config, len(begin.targets))
    judged = state.phase == "sentence"  # the collapse check judges a run whose sentence part trains here
    if start is None:  # the collapse check's measure of the run's start (a resumed run's is in its state)
        measured = collapse.measure(begin.W, corpus, config.seed)
        state.collapse_start = measured.to_dict() if measured is not None else None
    # one ETA for the whole run (progress.RunETA: measured from the kernels' seconds, so the hooks' time is
    # left out); a resumed run's rate and ETA count only this process's work
    eta = RunETA()
    for name, cost in zip(("sentence", "word"), unit_costs(corpus, config)):
        if name in state.phases:
            eta.part(name, state[name].total, state[name].done, cost)
    phases: list = []
    call_hooks = HookCaller(hooks, state, Matrices(phases))
    wall_start = time.perf_counter()

    # each phase
    sentence = SentencePhase(begin, corpus, config, threads, quiet)
    phases.append(sentence)
    call_hooks("before_training", corpus)
    run_phase(sentence, state, call_hooks, eta, quiet)
    W = sentence.close()
    verdict = judge(W, corpus, config, state, quiet, warn) if judged else None
    Wi = None
    if "word" in state.phases:
        rows = (saved.get("word_in"), saved.get("word_out"))  # a resumed run's, or None
        word = (CudaWordPart(corpus, config, *rows) if config.device == "cuda"
                else WordPart(corpus, config, cpu_threads, *rows))
        phases.append(word)
        try:
            run_phase(word, state, call_hooks, eta, quiet)
        finally:
            word.close()
        Wi = word.matrices()["word_in"]
        if not np.isfinite(Wi).all():
            raise TrainingError("the word part's vectors hold NaN or inf")
    call_hooks("after_training")
    wall_seconds = time.perf_counter() - wall_start

    # post-process, assemble
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
            "compare, so no model is saved; did the start (init) give every word the same vector?")
    info = {"corpus": dict(corpus.stats), "training": training_info(state, config, corpus, threads, cpu_threads,
                                                                    wall_seconds, call_hooks.seconds, verdict)}
    s, warning = state["sentence"], verdict.warning() if verdict is not None else None
    return TrainResult(model=Model(corpus.vocab, W, config.to_dict(), info), seconds=s.seconds, examples=s.done,
                       losses=s.losses, warnings=[warning] if warning else [])


def judge(W: np.ndarray, corpus: Corpus, config: TrainConfig, state: TrainState, quiet: bool, warn):
    """The collapse check's verdict on the trained sentence part (raising on a collapse, warning if unsure)."""
    verdict = collapse.Verdict(collapse.Spread.from_dict(state.collapse_start), collapse.measure(W, corpus, config.seed))
    if verdict.kind == "collapsed":
        raise diverged(config.lr, verdict.error())
    if verdict.warning():
        (warn or (note if not quiet else (lambda line: None)))(verdict.warning())
    return verdict


def training_info(state: TrainState, config: TrainConfig, corpus: Corpus, threads: int, cpu_threads,
                  wall_seconds: float, hook_seconds: float, verdict) -> dict:
    """The ``training`` record of the model's info: what each phase did and what it took, and the collapse
    check's ``verdict`` (None when the sentence part did not train in this process)."""
    s = state["sentence"]
    info = {
        "device": config.device,
        "examples": s.done,
        "targets_per_epoch": state.targets_per_epoch,
        "threads": threads,
        "kernel_seconds": round(s.seconds, 3),
        "examples_per_second": round(s.done / s.seconds, 1) if s.seconds else None,
        # the training loop on the wall clock, and the part of it spent in hooks
        # (evaluations, checkpoints), which kernel_seconds leaves out
        "wall_seconds": round(wall_seconds, 3),
        "hook_seconds": round(hook_seconds, 3),
        "first_loss": s.losses[0] if s.losses else None,
        "final_loss": float(np.mean(s.losses[-max(1, len(s.losses) // 20):])) if s.losses else None,
    }
    if "word" in state.phases:
        w = state["word"]
        info["word_part"] = {
            "passes": config.word_passes, "sentences": w.done, "device": config.device, "threads": cpu_threads,
            "sample": sample_threshold(corpus.raw_tokens, config),
            "kernel_seconds": round(w.seconds, 3),
            "sentences_per_second": round(w.done / w.seconds, 1) if w.seconds else None,
            # on the part's fixed sample of sentences: before the first pass, after each
            "pass_losses": [round(x, 6) for x in w.losses],
            "loss_sentences": min(corpus.n_sentences, LOSS_SAMPLE),
            "first_loss": w.losses[0] if w.losses else None,
            "final_loss": w.losses[-1] if w.losses else None}
    if verdict is not None:
        info["collapse_check"] = verdict.to_dict()
    return info
