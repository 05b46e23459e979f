"""The word part of a model: skip-gram rows trained after the sentence part, saved beside it.

With ``word_passes > 0`` a model's rows are ``[sentence part ; word part]``: ``dim`` Siamese CBOW
columns, then ``word_dim`` columns of skip-gram with negative sampling (Mikolov et al. 2013) trained
on the same corpus afterwards (``kernels.cpu.word_part_chunk``, Hogwild; on the GPU
``backends.cuda.CudaWordPart``). Word similarity lives there (WordSim-353 0.30 -> 0.46 on 100M), and
it lifts sentence similarity too (``benchmarks/results/search.md``, "the word part").

:func:`assemble` scales each part so the corpus's sentence averages have unit RMS length (the word
part SIF-weighted and post-processed first, then times ``word_mix``): a sentence average is the two
parts' averages side by side, so the model stays a plain average of its rows.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..config import TrainConfig, example_size
from ..errors import TrainingError
from .backends.params import word_params
from .postprocess import COMMON_SAMPLE, SentenceSample, remove_common_components, sample_sentences
from .start import corpus_weights, keep_probabilities, noise_table, output_biases

# The subsampling threshold (word_sample_count as a share of the corpus) stays within word2vec's
# advice for large corpora (1e-5) and its default (1e-3).
SAMPLE_RANGE = (1e-5, 1e-3)


def sample_threshold(raw_tokens: int, config: TrainConfig) -> float:
    """The subsampling threshold of a corpus of ``raw_tokens`` tokens (``config.word_sample_count``)."""
    lo, hi = SAMPLE_RANGE
    return float(min(hi, max(lo, config.word_sample_count / max(raw_tokens, 1))))

# A batch is at most WORD_BATCH sentences and WORD_BATCH_COST tokens x word_dim (about 0.1 s on 2
# threads: a lively progress line, a prompt Ctrl-C), and at least one sentence.
WORD_BATCH = 1 << 14
WORD_BATCH_COST = 1 << 25
# Sentences (evenly spaced, the same draws each time) whose loss is measured at the start and after
# each pass: the batches' own losses compare different text (book after book) at different rates.
LOSS_SAMPLE = 2048


def word_part_on(config: TrainConfig) -> bool:
    return config.word_passes > 0 and config.word_dim > 0


def unit_costs(corpus, config: TrainConfig) -> tuple[float, float]:
    """``(example, sentence)``: the cost of a sentence-part example and of a word-part sentence, in one
    unit, for the run's ETA until the word part has a rate of its own (``scbow.progress.RunETA``).

    An example is ``example_size(negatives)`` sentences x ``dim``; a word-part sentence its kept words,
    each ``word_context + 1`` contexts on average against ``1 + word_noise`` outputs x ``word_dim`` (the
    sentence length is common to both, left out). On 10M: 1.53 examples a sentence; measured 1.28-1.56."""
    counts, raw = np.asarray(corpus.vocab.counts, dtype=np.float64), corpus.raw_tokens
    kept = float((keep_probabilities(counts, raw, sample_threshold(raw, config)) * counts).sum() / max(counts.sum(), 1.0))
    return (float(example_size(config.negatives) * config.dim),
            kept * (config.word_context + 1) * (1 + config.word_noise) * config.word_dim)


class WordPart:
    """The word part as a phase (``hooks.Phase``): the matrices ``"word_in"`` and ``"word_out"`` and the
    threads that train them, a batch of sentences a step.

    ``Wi`` (V x word_dim) starts as word2vec's (uniform in +-0.5 / word_dim, from the seed), ``Wo``
    (V x (word_dim + 1): output rows, then biases) at zero rows and :func:`~.start.output_biases`; a
    resumed run passes both. Each sentence draws from its own stream (``params.WORD_STREAM`` plus its
    position in all passes), whatever the threads.
    """

    name, unit, label, samples = "word", "sent", "word part", True

    def __init__(self, corpus, config: TrainConfig, threads: int, Wi=None, Wo=None):
        from ..kernels import cpu as K  # numba: imported here, so that --help stays fast

        self.K = K
        V, dw = len(corpus.vocab), config.word_dim
        counts, raw = np.asarray(corpus.vocab.counts, dtype=np.float64), corpus.raw_tokens
        self.sample = sample_threshold(raw, config)
        self.keep = keep_probabilities(counts, raw, self.sample)
        self.table = noise_table(counts)
        if Wi is None:
            rng = np.random.default_rng([config.seed, 3])
            Wi = ((rng.random((V, dw), dtype=np.float32) - np.float32(0.5)) / np.float32(dw)).astype(np.float32)
        if Wo is None:
            Wo = np.zeros((V, dw + 1), dtype=np.float32)
            Wo[:, -1] = output_biases(counts, self.keep, config.word_noise)
        self.Wi = np.ascontiguousarray(Wi, dtype=np.float32)
        self.Wo = np.ascontiguousarray(Wo, dtype=np.float32)
        self.tokens = np.ascontiguousarray(corpus.tokens)
        self.offsets = np.ascontiguousarray(corpus.offsets)
        self.n = corpus.n_sentences
        self.passes = config.word_passes
        self.total = config.word_passes * self.n
        self.params = word_params(config, self.total)
        self.threads = max(1, threads)
        self.buffers = [K.word_part_buffers(self.params, dw) for _ in range(self.threads)]
        self.pool = None
        if self.threads > 1:
            self.pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="scbow-words")

    def matrices(self) -> dict:
        return {"word_in": self.Wi, "word_out": self.Wo}

    def step(self, state) -> tuple[int, float]:
        sentences, loss_sum, pairs = self.run(state[self.name].done)
        return sentences, loss_sum / max(pairs, 1)

    def end_of_pass(self, state) -> bool:
        return False  # its passes' ends are for its sample loss, not the hooks' after_epoch

    def loss_error(self, loss: float, done: int) -> Exception:
        return TrainingError(f"the word part's loss became {loss} after {done:,} sentences")

    def sample_loss(self) -> float:
        """The mean loss per (context, centre) pair over :data:`LOSS_SAMPLE` sentences, nothing stepped."""
        n = self.n
        sentences = np.unique(np.linspace(0, n - 1, min(n, LOSS_SAMPLE)).astype(np.int64)) if n else np.empty(0, np.int64)
        return float(self.K.word_part_loss(self.Wi, self.Wo, self.tokens, self.offsets, sentences, self.keep,
                                           self.table, self.params, self.buffers[0]))

    def _chunk(self, lo: int, hi: int, done: int, c: int):
        return self.K.word_part_chunk(self.Wi, self.Wo, self.tokens, self.offsets, lo, hi, self.keep, self.table,
                                      self.params, done, self.buffers[c])

    def batch(self, done: int) -> list[tuple[int, int]]:
        """The next batch from position ``done`` of all passes, as one ``(lo, hi)`` a thread (equal shares
        of tokens): within :data:`WORD_BATCH` and :data:`WORD_BATCH_COST`, never across a pass's end."""
        offsets, n = self.offsets, self.n
        lo = done % n
        budget = max(1, WORD_BATCH_COST // max(self.Wi.shape[1], 1))
        fits = int(np.searchsorted(offsets, offsets[lo] + budget, side="right")) - 1
        hi = max(lo + 1, min(fits, lo + WORD_BATCH, n))
        first, size = int(offsets[lo]), int(offsets[hi] - offsets[lo])
        cuts = [lo]
        for c in range(1, self.threads):  # the sentence start nearest to an equal share of the tokens
            aim = first + size * c // self.threads
            i = min(hi, max(cuts[-1], int(np.searchsorted(offsets, aim))))
            cuts.append(i - 1 if i > cuts[-1] and aim - offsets[i - 1] < offsets[i] - aim else i)
        return list(zip(cuts, cuts[1:] + [hi]))

    def run(self, done: int) -> tuple[int, float, int]:
        """Train the next batch (:meth:`batch`). Returns ``(sentences, loss sum, pairs)``."""
        cuts = self.batch(done)
        lo, hi = cuts[0][0], cuts[-1][1]
        futures = [self.pool.submit(self._chunk, a, b, done + a - lo, c)
                   for c, (a, b) in enumerate(cuts) if c > 0 and a < b] if self.pool else []
        try:
            loss, pairs = self._chunk(*cuts[0], done, 0) if cuts[0][0] < cuts[0][1] else (0.0, 0)
        finally:
            results = [f.result() for f in futures]
        for extra_loss, extra_pairs in results:
            loss += extra_loss
            pairs += extra_pairs
        return hi - lo, float(loss), int(pairs)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


def unit_average_scale(M: np.ndarray, corpus, seed: int) -> float:
    """The factor that gives the averages of ``M`` over the post-processing's sample unit RMS length."""
    energy, n = 0.0, 0
    for S in SentenceSample(corpus, sample_sentences(corpus.n_sentences, COMMON_SAMPLE, seed)).blocks(M):
        energy += float(np.einsum("ij,ij->", S, S, dtype=np.float64))
        n += len(S)
    energy /= max(n, 1)
    return 1.0 / math.sqrt(energy) if energy > 0 else 1.0


def assemble(S: np.ndarray, Wi: np.ndarray, corpus, config: TrainConfig) -> np.ndarray:
    """``[S * s ; word_mix * g * Wi']``: the rows from the post-processed sentence part ``S`` and the word
    part ``Wi`` (``Wi'``: times the frequency weights, then post-processed with at most ``word_dim // 10``
    components); ``s`` and ``g`` give each part unit-RMS sentence averages."""
    G = np.ascontiguousarray(Wi, dtype=np.float32) * corpus_weights(corpus, config).astype(np.float32)[:, None]
    if config.common_components >= 0:
        remove_common_components(G, corpus, min(config.common_components, config.word_dim // 10), config.seed)
    s = np.float32(unit_average_scale(S, corpus, config.seed))
    g = np.float32(config.word_mix * unit_average_scale(G, corpus, config.seed))
    out = np.empty((len(S), S.shape[1] + G.shape[1]), dtype=np.float32)
    np.multiply(S, s, out=out[:, :S.shape[1]])
    np.multiply(G, g, out=out[:, S.shape[1]:])
    return out
