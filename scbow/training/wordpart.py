"""The word part of a model: skip-gram rows trained after the sentence part, saved beside it.

A model trained with ``word_passes > 0`` has rows ``[sentence part ; word part]``: the Siamese
CBOW rows (``dim`` columns), then ``word_dim`` columns of skip-gram with negative sampling
(Mikolov et al. 2013) trained on the same encoded corpus after the sentence part, by
``kernels.cpu.word_part_chunk`` on the CPU threads (Hogwild, as word2vec and the sentence
part do), or with ``--device cuda`` by ``kernels.cuda.build_word_part`` on the GPU
(``backends.cuda.CudaWordPart``). The word part is what word similarity lives on (WordSim-353 0.30 -> 0.46 on 100M
with the defaults); beside the sentence part it also lifts sentence similarity
(``benchmarks/results/search.md``, "the word part").

Assembling (:func:`assemble`): the sentence part as post-processed before, and the word part's
rows times the frequency weights (SIF-weighted, as the sentence part's are), centred with
its own common components removed; each part is scaled so that the corpus's sentence
averages have unit root-mean-square length, and the word part is then multiplied by
``word_mix``. The average of such rows is the two parts' averages side by side, so a
cosine of two sentences mixes the two similarities, and the model stays a plain average of
its rows (every command and export keeps working). ``scbow.vectors.words.row_parts`` tells the
columns apart.
"""

from __future__ import annotations

import math

import numpy as np

from ..config import TrainConfig
from ..errors import TrainingError
from .start import corpus_weights, keep_probabilities, noise_table, output_biases

# The subsampling threshold (TrainConfig.word_sample_count as a share of the corpus) is never
# below 1e-5 (word2vec's advice for large corpora) nor above 1e-3 (its default).
SAMPLE_RANGE = (1e-5, 1e-3)


def sample_threshold(raw_tokens: int, config: TrainConfig) -> float:
    """The subsampling threshold of a corpus of ``raw_tokens`` tokens (``config.word_sample_count``)."""
    lo, hi = SAMPLE_RANGE
    return float(min(hi, max(lo, config.word_sample_count / max(raw_tokens, 1))))

# One kernel call (a batch) is at most WORD_BATCH sentences and at most WORD_BATCH_COST tokens
# times word_dim (about 0.1 s on 2 threads): a lively progress line and a prompt Ctrl-C, as the
# sentence part's batches, whatever the sentences' lengths and the part's width. A batch holds at
# least one sentence.
WORD_BATCH = 1 << 14
WORD_BATCH_COST = 1 << 25
# The sentences whose loss is measured at the start and after each pass (evenly spaced over the
# corpus, the same windows and noise words every time): the loss of the batches as they train
# compares different text (the corpus is trained in its order, book after book) at different
# rates, and rose from the first batch to the last on small corpora while the model learned.
LOSS_SAMPLE = 2048


def word_part_on(config: TrainConfig) -> bool:
    return config.word_passes > 0 and config.word_dim > 0


def unit_costs(corpus, config: TrainConfig) -> tuple[float, float]:
    """``(example, sentence)``: what one example of the sentence part and one sentence of a word part's
    pass cost, in one arbitrary unit, for the whole run's ETA before the word part has a rate of its
    own (``scbow.progress.RunETA``).

    An example is ``example_size(negatives)`` sentences of ``dim`` columns; a sentence of the word part
    is its kept words (the subsampling's share of the tokens), each the centre of a window of on
    average ``word_context + 1`` context words against ``1 + word_noise`` outputs of ``word_dim``
    columns. The sentences' length is common to both and left out. On 10M with the defaults this
    puts a word part's sentence at 1.53 examples; runs there measured 1.28 and 1.56. The GPU's ratio
    may differ: the estimate stands only until the word part has measured its own rate."""
    from ..config import example_size

    counts = np.asarray(corpus.vocab.counts, dtype=np.float64)
    raw = corpus.stats.get("raw_tokens") or int(counts.sum())
    kept = float((keep_probabilities(counts, raw, sample_threshold(raw, config)) * counts).sum() / max(counts.sum(), 1.0))
    return (float(example_size(config.negatives) * config.dim),
            kept * (config.word_context + 1) * (1 + config.word_noise) * config.word_dim)


class WordPart:
    """The word part as a phase (``scbow.training.hooks.Phase``): its matrices ``"word_in"`` and ``"word_out"``
    and the threads that train them, one batch of sentences a step.

    ``Wi`` (V x word_dim) starts as word2vec's (uniform in +-0.5 / word_dim, drawn from the
    run's seed), ``Wo`` (V x (word_dim + 1): output rows, then biases) at zero rows and the
    biases of :func:`~scbow.training.start.output_biases`; a resumed run passes both. One
    thread is deterministic for a seed: each sentence draws from its own random stream
    (``backends.params.WORD_STREAM`` plus its position in all passes), whatever the threads. The GPU's
    twin is ``scbow.training.backends.cuda.CudaWordPart``.
    """

    name, unit, label, samples = "word", "sent", "word part", True

    def __init__(self, corpus, config: TrainConfig, threads: int, Wi=None, Wo=None):
        from ..kernels import cpu as K  # numba: imported here, so that --help stays fast
        from .backends.params import word_params

        self.K = K
        V, dw = len(corpus.vocab), config.word_dim
        counts = np.asarray(corpus.vocab.counts, dtype=np.float64)
        raw = corpus.stats.get("raw_tokens") or int(counts.sum())
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
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="scbow-words")

    def matrices(self) -> dict:
        """``word_in`` (Wi) and ``word_out`` (Wo) as they are now, on the host (what a checkpoint saves)."""
        return {"word_in": self.Wi, "word_out": self.Wo}

    def step(self, state) -> tuple[int, float]:
        sentences, loss_sum, pairs = self.run(state[self.name].done)
        return sentences, loss_sum / max(pairs, 1)

    def end_of_pass(self, state) -> bool:
        return False  # its passes' ends are for its sample loss, not the hooks' after_epoch

    def loss_error(self, loss: float, done: int) -> Exception:
        return TrainingError(f"the word part's loss became {loss} after {done:,} sentences")

    def sample_loss(self) -> float:
        """The mean loss per (context, centre) pair over :data:`LOSS_SAMPLE` sentences spread evenly over
        the corpus, at the rows as they are (nothing is stepped; the same rows give the same figure)."""
        n = self.n
        sentences = np.unique(np.linspace(0, n - 1, min(n, LOSS_SAMPLE)).astype(np.int64)) if n else np.empty(0, np.int64)
        return float(self.K.word_part_loss(self.Wi, self.Wo, self.tokens, self.offsets, sentences, self.keep,
                                           self.table, self.params, self.buffers[0]))

    def _chunk(self, lo: int, hi: int, done: int, c: int):
        return self.K.word_part_chunk(self.Wi, self.Wo, self.tokens, self.offsets, lo, hi, self.keep, self.table,
                                      self.params, done, self.buffers[c])

    def batch(self, done: int) -> list[tuple[int, int]]:
        """The next batch's sentences, from position ``done`` of all passes on, as one ``(lo, hi)`` a
        thread: at most :data:`WORD_BATCH` sentences and :data:`WORD_BATCH_COST` tokens x dims (never
        less than one sentence), never across the end of a pass, cut into equal shares of tokens."""
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
    """The factor that gives the corpus sample's sentence averages of ``M`` (the post-processing's
    sample, ``postprocess.sample_sentences``) unit root-mean-square length."""
    from .postprocess import COMMON_SAMPLE, SentenceSample, sample_sentences

    energy, n = 0.0, 0
    for S in SentenceSample(corpus, sample_sentences(corpus.n_sentences, COMMON_SAMPLE, seed)).blocks(M):
        energy += float(np.einsum("ij,ij->", S, S, dtype=np.float64))
        n += len(S)
    energy /= max(n, 1)
    return 1.0 / math.sqrt(energy) if energy > 0 else 1.0


def assemble(S: np.ndarray, Wi: np.ndarray, corpus, config: TrainConfig) -> np.ndarray:
    """``[S * s ; word_mix * g * a * Wi']``: the model's rows from the post-processed sentence part
    ``S`` and the trained word part ``Wi`` (``Wi'``: weighted by the frequency weights ``a``, then
    post-processed like the sentence part, at most ``word_dim // 10`` components), ``s`` and ``g``
    the factors that give each part unit-length sentence averages (see the module's docstring)."""
    from .postprocess import remove_common_components

    G = np.ascontiguousarray(Wi, dtype=np.float32) * corpus_weights(corpus, config).astype(np.float32)[:, None]
    if config.common_components >= 0:
        remove_common_components(G, corpus, min(config.common_components, config.word_dim // 10), config.seed)
    s = np.float32(unit_average_scale(S, corpus, config.seed))
    g = np.float32(config.word_mix * unit_average_scale(G, corpus, config.seed))
    out = np.empty((len(S), S.shape[1] + G.shape[1]), dtype=np.float32)
    np.multiply(S, s, out=out[:, :S.shape[1]])
    np.multiply(G, g, out=out[:, S.shape[1]:])
    return out
