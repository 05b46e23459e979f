"""Hyperparameters: one frozen dataclass, one copy of every default.

CLI flags (``--min-count`` -> ``min_count``), the ``config.json`` saved with a model and
the Python API all use these field names.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields

from .errors import ConfigError

NEGATIVE_MODES = ("document", "uniform")
DEVICES = ("cpu", "cuda")
UNKNOWN_MODES = ("omit", "hash", "pieces")

# The objective's constants, shared by the float64 oracle (scbow.reference) and both devices'
# kernels: an example is a target, its two neighbours and the negatives; norms are max(|s|, NORM_EPS).
EXAMPLE_FIXED = 3
NORM_EPS = 1e-8


def example_size(negatives: int) -> int:
    """Sentences in one example: the target, its two neighbours and ``negatives`` others."""
    return EXAMPLE_FIXED + negatives


# Integers: (lowest, highest) accepted; the highest are far past any useful value and within the
# kernels' int32/int64 arithmetic and memory (a --dim of 100,000 is already 40 GB for 100K words).
_I32 = 2**31 - 1
INT_RANGES = {"dim": (1, 100_000), "negatives": (1, 1_000_000), "min_count": (1, 2**62), "epochs": (1, 100_000),
              "count_floor": (1, 2**62), "max_vocab": (0, _I32), "max_length": (0, _I32), "threads": (0, 65_536),
              "word_passes": (0, 10_000), "word_dim": (1, 100_000), "word_context": (1, 1_000), "word_noise": (1, 1_000),
              "word_sample_count": (1, 2**62), "common_components": (-1, 100_000), "seed": (0, 2**63 - 1)}
INT_MAX = {name: hi for name, (_, hi) in INT_RANGES.items()}
# Floats: [lowest, highest], POSITIVE_FLOATS also > 0 (a huge lr is left to the trainer, which names
# it when the loss turns NaN). init_std and word_mix: float32 values of that scale keep finite, nonzero
# squares (a word_mix underflowing to 0 would be a word part of zeros; unknown_scale 0: use omit).
FLOAT_RANGES = {"lr": (0.0, 1e300), "init_std": (1e-15, 1e15), "min_lr_fraction": (0.0, 1.0),
                "weight_decay": (0.0, 1e6), "frequency_weight": (0.0, 1e6), "count_power": (0.0, 100.0),
                "unknown_scale": (0.0, 1e6), "word_mix": (1e-6, 1e6), "word_lr": (0.0, 1e300)}
POSITIVE_FLOATS = ("lr", "unknown_scale", "word_lr")


def finite_number(value) -> bool:
    """An int or float (not a bool) that is finite; an int too large for a float is not."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) < 1e300 if isinstance(value, int) else math.isfinite(value)


def show_value(value) -> str:
    """``repr`` of a bad value, cut short (an integer of 10**5000 would fill the screen)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"{'-' if value < 0 else ''}about 10**{int(abs(value).bit_length() * 0.30103)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class TrainConfig:
    # Defaults were chosen on the STS-B dev set: benchmarks/results/search.md (earlier searches in sweep*.md).
    dim: int = 300  # the paper's
    # The paper found 2 best among 1, 2, 5, 10 (5 scored lower on dev here).
    negatives: int = 2
    # "document" draws negatives from the target's own book, so the model cannot win by
    # telling books apart (character names, archaic pronouns); "uniform" from the corpus.
    negative_mode: str = "document"
    min_count: int = 5  # rarer words are dropped from sentences (the paper's rule)
    max_vocab: int = 0  # 0: no limit
    # More epochs score lower on dev (3 on 10M: -0.012): the objective keeps improving, word overlap does not.
    epochs: int = 1
    # For rows of the scale init_std (the loss is scale invariant: lr / init_std**2 counts).
    # 0.05 ties on 100M, 0.2 is lower.
    lr: float = 0.1
    # Linear decay to lr * min_lr_fraction over all examples (word_lr likewise: word2vec's floor).
    min_lr_fraction: float = 0.0001
    # Every occurrence shrinks a row by lr * weight_decay of itself (0: the paper's objective);
    # on top of the frequency weights it scores far lower on dev.
    weight_decay: float = 0.0
    # Centre the sentence averages and project out this many principal directions, folded
    # into the word vectors (-1: off, 0: centre only; at most dim // 10). 10 and 30 tie on dev.
    common_components: int = 10
    max_length: int = 0  # known words of a sentence averaged; 0: all
    init_std: float = 0.01  # of the N(0, sigma) initialisation
    # SIF's weights a / (a + p(w)) inside every average (p(w): the word's share of the tokens).
    # Row w starts as a(w) times a random vector, so the untrained model is SIF-weighted word
    # overlap, and its steps are scaled by a(w)**2 (SGD on U of W = a * U). The weights are in
    # the saved vectors. 0: the paper's plain average.
    frequency_weight: float = 1e-3
    # Steps are scaled by min(1, count_floor / count(w)) ** count_power, so a frequent word
    # moves by the mean of its gradients, not their sum (0: plain SGD); else the most seen
    # words drift furthest from their word-identity start and dev falls. 0.75 scored best.
    count_power: float = 0.75
    count_floor: int = 10
    # Words outside the vocabulary: "pieces" (WordPiece pieces, scbow.vectors.pieces, each a row
    # or a hashed random vector of norm unknown_scale times the median norm of the rarest tenth
    # of the vocabulary), "hash" (one such vector for the word; 1.0 suits it), "omit" (the
    # paper's). Pieces at 0.35 scored best on dev for their size (benchmarks/results/unknown_pieces.md).
    unknown: str = "pieces"
    unknown_scale: float = 0.35
    # The word part (scbow.training.wordpart): word_passes passes of skip-gram after the sentence
    # part train word_dim more columns of every row ([sentence part ; word part]), mixed by
    # word_mix (each part scaled to unit-length averages). Chosen on dev within 6 minutes for a
    # default 100M run on 2 cores (benchmarks/results/word_part_search.md): 3 x 150 dims 0.7602
    # (alone 0.7560); 3 x 300 (0.7617) and 5 x 150 (0.7632) take it well past. Mix 0.5 beats 0.25, 0.75.
    word_passes: int = 3
    word_dim: int = 150
    word_mix: float = 0.5
    # word2vec's defaults: window up to word_context (each centre draws 1..word_context),
    # word_noise noise words a window (unigram^0.75), word_lr decayed over every pass.
    word_context: int = 5
    word_noise: int = 5
    word_lr: float = 0.025
    # word2vec's -sample as a count: as a share, 1e-5 on gutenberg-100M but 1e-4 on 10M, where
    # 1e-5 kept too little (WordSim-353 0.29 against 0.40); within wordpart.SAMPLE_RANGE.
    word_sample_count: int = 1000
    threads: int = 0  # 0 = all available cores
    seed: int = 1
    device: str = "cpu"

    def __post_init__(self) -> None:
        # numpy scalars (np.int64(32), np.float32(0.1)) are taken as the Python numbers they
        # hold, as gensim takes them; a bool or anything else is left for validate() to refuse
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
                item = value.item()
                if isinstance(item, (int, float)) and not isinstance(item, bool):
                    object.__setattr__(self, f.name, item)
        self.validate()

    def validate(self) -> None:
        for name, (lo, hi) in INT_RANGES.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
                kind = {1: "a positive integer", 0: "a non-negative integer", -1: "-1 or a non-negative integer"}[lo]
                raise ConfigError(f"{name} must be {kind} of at most {hi:,}, got {show_value(value)}")
        for name, (lo, hi) in FLOAT_RANGES.items():
            value = getattr(self, name)
            if not finite_number(value) or not lo <= value <= hi or (lo == 0 and name in POSITIVE_FLOATS and value == 0):
                low = "> 0" if name in POSITIVE_FLOATS else f">= {lo:g}"
                raise ConfigError(f"{name} must be a number {low} and at most {hi:g}, got {show_value(value)}")
        if 0 < self.frequency_weight < 1e-9:
            raise ConfigError(f"frequency_weight must be 0 (no weights) or at least 1e-9, got {self.frequency_weight!r}: "
                              "smaller weights underflow float32 and zero every vector")
        if self.lr * self.weight_decay >= 1.0:
            raise ConfigError(
                f"lr * weight_decay must be below 1, got {self.lr:g} * {self.weight_decay:g}: every occurrence "
                "of a word shrinks its vector by that fraction; lower --lr or --weight-decay"
            )
        for name, choices in FIELD_CHOICES.items():
            if getattr(self, name) not in choices:
                raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {getattr(self, name)!r}")

    @property
    def components_removed(self) -> int:
        """The principal directions post-processing removes: ``common_components`` capped at
        ``dim // 10``; -1 when post-processing is off (0 centres only)."""
        if self.common_components < 0:
            return -1
        return min(self.common_components, self.dim // 10)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def replace(self, **changes) -> "TrainConfig":
        return dataclasses.replace(self, **changes)


# The one-line description of every field: train's --help shows it, as TrainConfig's flags.
FIELD_HELP = {
    "dim": ("Width of the sentence part (the Siamese CBOW columns); a row is --dim + --word-dim wide with the "
        "word part (--dim 300 --word-dim 150: rows of 450), --dim alone with --word-passes 0."),
    "negatives": "Negative sentences per example.",
    "negative_mode": "Draw negatives from the target's own document, or uniformly from the corpus.",
    "min_count": "Drop words seen fewer times.",
    "max_vocab": "Keep only the most frequent words (0: no limit).",
    "epochs": "Passes over the corpus.",
    "lr": "Starting learning rate, decayed linearly.",
    "min_lr_fraction": "Floor of the decayed learning rate, as a fraction of --lr.",
    "weight_decay": ("L2 decay per word occurrence: each occurrence of a word shrinks its row by lr * DECAY of itself (at "
        "--lr 0.1, 10 shrinks it by 1 percent each time it is seen); lr * DECAY must stay below 1. 0: off, "
        "the paper's objective (the frequency weights keep frequent words down instead)."),
    "frequency_weight": ("a of the weights a/(a + p(w)) inside sentence averages (SIF's), folded into the saved vectors; 0: "
        "the paper's unweighted average."),
    "count_power": "Scale a word's steps by min(1, count-floor/count)^POWER (0: plain SGD).",
    "count_floor": "Words seen at most this often take full steps (see --count-power).",
    "unknown": ("What the saved model does with words outside its vocabulary: split them into pieces (as the exported "
        "folders do), give each a fixed hashed random vector, or leave them out."),
    "unknown_scale": ("Norm of a piece's (or a hashed word's) vector, as a multiple of the median norm of the rarest tenth "
        "of the vocabulary (1.0 suits hash)."),
    "common_components": ("After training, centre sentence averages and remove this many principal directions (at most dim/10; "
        "-1: off)."),
    "max_length": "Average only the first N known words of a sentence (0: all).",
    "init_std": "Std. dev. of the initial vectors.",
    "word_passes": ("Passes of the word part: skip-gram rows trained after the sentence part and saved beside it, "
        "where word similarity lives (0: the sentence part alone)."),
    "word_dim": "Width of the word part (the skip-gram columns after the sentence part's --dim; rows are the sum).",
    "word_mix": "Weight of the word part against the sentence part in every row (each scaled to unit-length averages).",
    "word_context": "Largest distance of a context word from its centre in the word part (word2vec's -window).",
    "word_noise": "Noise words per window of the word part (unigram^0.75; word2vec's -negative).",
    "word_lr": "Starting learning rate of the word part, decayed linearly over its passes (word2vec's -alpha).",
    "word_sample_count": ("Subsampling of the word part: words seen more often than about this many times are kept "
        "with falling probability (a share of the corpus within 1e-5..1e-3; word2vec's -sample)."),
    "threads": "Training threads (0: all cores). 1 is deterministic for a --seed.",
    "seed": "Random seed.",
    "device": "Train on the CPU or an NVIDIA GPU.",
}
# the fields that take one of a few words
FIELD_CHOICES = {"negative_mode": NEGATIVE_MODES, "unknown": UNKNOWN_MODES, "device": DEVICES}
