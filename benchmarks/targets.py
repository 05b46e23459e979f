"""The project's performance and quality targets: one table, read by every report that judges one.

Each target has a value and unit, which way it must be met, what it is measured against and
its source (the project issue that set it; reports never print it). Targets a later issue
replaced are kept in :data:`SUPERSEDED`, so that an old report's goal can be traced; no
suite judges against them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    value: float
    unit: str
    sense: str  # "at_least" (>=), "at_most" (<=) or "below" (<)
    measured_against: str
    source: str
    suite: str  # the suite that measures it

    def met(self, measured: float | None) -> bool | None:
        """Whether ``measured`` meets the target; None when it was not measured."""
        if measured is None:
            return None
        if self.sense == "at_least":
            return measured >= self.value
        if self.sense == "at_most":
            return measured <= self.value
        return measured < self.value

    def goal_text(self, fmt=None) -> str:
        sign = {"at_least": ">=", "at_most": "<=", "below": "<"}[self.sense]
        value = fmt(self.value) if fmt else f"{self.value:g}"
        return f"{sign} {value}{'' if self.unit in ('x', 's') else ' '}{self.unit}"


_PERF = "issue 5 (Performance: ahead of gensim and of a PyTorch implementation), Targets"
_QUALITY = "issue 12 (Make training learn), Goal"
_WORDPART = "The word part at three times gensim's speed on the CPU (its goals)"

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("e2e_over_gensim", 0.5, "x", "at_most",
           "raw text to saved model, one epoch, 2 threads, 10M corpus: scbow seconds / gensim word2vec CBOW "
           "seconds (its own tokenizer, the paper's settings), same run", _PERF, "speed"),
    Target("kernel_examples_per_s", 150_000, "examples/s", "at_least",
           "training kernel, 2 threads, 10M corpus, 300 dims, median of the repeats", _PERF, "speed"),
    Target("kernel_over_torch", 20.0, "x", "at_least",
           "training kernel / the PyTorch implementation of the same objective (batch 100), 2 threads, same run",
           _PERF, "speed"),
    Target("scaling_2_threads", 1.8, "x", "at_least",
           "kernel examples/s on 2 threads / on 1 thread (the serial kernel), same run", _PERF, "speed"),
    Target("wordpart_over_gensim", 3.0, "x", "at_least",
           "one pass of the word part / one epoch of gensim's skip-gram (same settings, same tokens), at 1 and at "
           "2 threads, same run", _WORDPART, "speed"),
    Target("wordpart_scaling_2_threads", 1.7, "x", "at_least",
           "word part sentences/s on 2 threads / on 1 thread, same run", _WORDPART, "speed"),
    Target("preprocess_tokens_per_s", 2_000_000, "raw tokens/s", "at_least",
           "tokenize, count and encode the 10M corpus (plain text, no cache)", _PERF, "speed"),
    Target("cached_reload_s", 1.0, "s", "below", "reload of the cached 10M corpus (memory-mapped)", _PERF, "speed"),
    Target("sts_all_pairs_s", 0.3, "s", "at_most",
           "all 11,358 pairs of the 19 STS sets scored from raw sentences (tokenize, embed, cosine)", _PERF, "speed"),
    Target("memory_over_ids_matrix", 2.0, "x", "at_most",
           "peak memory added by training one epoch / (token ids + matrix), 10M and 100M corpora", _PERF, "speed"),
    Target("embed_lines_per_min", 1_000_000, "lines/min", "at_least",
           "`scbow-numba embed` from raw text on 2 cores", "issue 7 (Using trained embeddings)", "embed_speed"),
    Target("most_similar_over_gensim", 1.5, "x", "at_most",
           "`model.wv.most_similar` time per query / gensim KeyedVectors' on the same vectors",
           "issue 14 (A tool people already know how to use)", "most_similar"),
    Target("gpu_over_cpu", 10.0, "x", "at_least",
           "`--device cuda` examples/s / the CPU path on all 16 cores of the same machine",
           "issue 4 (GPU training through numba.cuda)", "gpu"),
    Target("quality_mean_pearson", 0.65, "Pearson", "at_least",
           "mean Pearson over the 19 SemEval STS sets, defaults, gutenberg-100M", _QUALITY, "quality"),
    Target("quality_min_wins", 14, "of 19 sets", "at_least",
           "sets on which Siamese CBOW beats each peer (overlap, CBOW, skip-gram, fastText)", _QUALITY, "quality"),
    Target("quality_train_s", 15 * 60, "s", "at_most", "training on gutenberg-100M with the defaults, 2 cores",
           _QUALITY, "quality"),
    Target("quality_curve_gain", 0.03, "Pearson", "at_least",
           "STS-B dev at the end minus that of the untrained start, same post-processing", _QUALITY, "quality"),
    Target("quality_wordsim_gap", 0.1, "Spearman", "at_most",
           "gensim CBOW's word-similarity Spearman minus scbow's", _QUALITY, "quality"),
)}

# Targets a later issue replaced: name -> (old value, unit, where it was set, what replaced it).
SUPERSEDED = {
    "kernel_examples_per_s": (120_000, "examples/s", "issue 2 (CPU trainer), benchmarks",
                              "150K in issue 5, measured by the speed suite"),
    "preprocess_tokens_per_s": (1_000_000, "raw tokens/s", "issue 2 (CPU trainer), benchmarks",
                                "2M in issue 5, measured by the speed suite"),
}
