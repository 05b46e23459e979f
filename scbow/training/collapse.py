"""The collapse check: does the trained sentence part still tell sentences apart?

A learning rate far too high drives the rows into a few directions: the sentence averages then
vary in little more than the few directions post-processing removes, and what is left of them
sits next to everything (``--lr 1e6 --dim 8`` on the 1M corpus: a word's nearest word at cosine
0.997). The check measures what such a collapse does to the model, on the averages of a fixed
sample of the corpus's sentences (:data:`SAMPLE`, drawn from the run's seed), against the same
measures of the run's own start (random rows, ``--init-vectors`` rows, or a resumed run's
recorded start), so that no option needs an exception:

- **kept**: the share of the averages' variance outside their top ``min(COMPONENTS, dim // 10)``
  principal directions (those the model's post-processing removes);
- **gap**: after centring and removing those directions, the mean over the sample of ``1 - cos``
  to the sentence's nearest other sampled sentence.

Each is divided by the start's: 1 when training kept the sentences as spread as at the start,
near 0 when they fell into a few directions. Measured on every option and start on the 1M
corpus, and the defaults on 10M and 100M (docs/robustness.md has the table): healthy runs keep
0.50-1.05 of the start's gap and 0.17-1.0 of its kept share (the in-objective skip-gram term,
since removed, the lowest), every ``--lr 1e6`` run 0.008-0.28 of the gap and at most 0.062 of the kept share
(but ``--dim 8``, where no direction is removed: its gap, 0.011, shows the collapse). A run
under a REFUSE bound is refused like a divergence; under a WARN bound it is saved with a
warning; else nothing is said.

Only the sentence part is judged, as soon as it is trained (before the word part, so that a
refused run does not also spend the word part's time): ``--lr`` is the sentence part's, and the
word part trains with its own (``--word-lr``, ``scbow.training.wordpart``), checked for NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# sentences sampled (their averages: SAMPLE x dim; the cosines in blocks)
SAMPLE = 5000
COMPONENTS = 10
REFUSE_GAP, WARN_GAP = 0.35, 0.45
REFUSE_KEPT, WARN_KEPT = 0.1, 0.15
# A refusal needs this much evidence: SURE_SENTENCES sampled sentences using SURE_WORDS distinct
# words. Sentences made of a few dozen words sit close to each other by their nature, and a
# healthy run moves them closer still (the tests' generated text of 38 words: 120 sentences at
# --dim 8 keep 0.28-0.32 of the start's gap, 2,400 sentences at --dim 20 with --weight-decay
# 0.05 keep 0.17), so on less evidence a low ratio is warned of, never refused.
SURE_SENTENCES = 1000
SURE_WORDS = 100


@dataclass(frozen=True)
class Spread:
    """The measures of one matrix on the sample: ``gap`` and ``kept`` (see the module's docstring),
    and the evidence: ``sentences`` measured and the distinct ``words`` they hold."""

    gap: float
    kept: float
    sentences: int
    words: int = SAMPLE

    def to_dict(self) -> dict:
        return {"gap": round(self.gap, 6), "kept": round(self.kept, 6)}

    @classmethod
    def from_dict(cls, d) -> "Spread | None":
        """A start read back from a checkpoint's state, or None when it is not a plausible one."""
        def number(x, hi):
            return isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= hi

        if not isinstance(d, dict) or not number(d.get("gap"), 2) or not number(d.get("kept"), 1):
            return None
        return cls(float(d["gap"]), float(d["kept"]), SAMPLE)


def spread_of(S: np.ndarray, components: int = COMPONENTS, words: int = SAMPLE, block: int = 1000) -> Spread | None:
    """The :class:`Spread` of sentence averages ``S`` (n x d). Rows that are zero once centred and
    projected are left out of the gap; None when fewer than 3 are left or a value is not finite."""
    X = np.asarray(S, dtype=np.float64)
    if len(X) < 3 or not np.isfinite(X).all():
        return None  # the trainer stops a matrix with NaN or inf on its own
    X = X - X.mean(axis=0)
    total = float(np.einsum("ij,ij->", X, X))
    k = min(components, X.shape[1] // 10)
    if k > 0:
        V = np.linalg.eigh(X.T @ X)[1][:, ::-1][:, :k]
        X = X - (X @ V) @ V.T
    kept = float(np.einsum("ij,ij->", X, X)) / total if total > 0 else 0.0
    norms = np.linalg.norm(X, axis=1)
    X = X[norms > 1e-12 * max(float(norms.max(initial=0.0)), 1e-300)]
    if len(X) < 3:
        return None
    U = (X / np.linalg.norm(X, axis=1)[:, None]).astype(np.float32)  # float32 cosines: a quarter of the time
    nearest = np.empty(len(U))
    for lo in range(0, len(U), block):
        C = U[lo:lo + block] @ U.T
        C[np.arange(len(C)), np.arange(lo, lo + len(C))] = -np.inf
        nearest[lo:lo + block] = C.max(axis=1)
    return Spread(float(np.mean(1.0 - np.minimum(nearest, 1.0))), min(max(kept, 0.0), 1.0), len(U), words)


def measure(W: np.ndarray, corpus, seed: int) -> Spread | None:
    """The :class:`Spread` of ``W`` on the sentences sampled for ``seed`` (what the check compares)."""
    from .postprocess import SentenceSample, sample_sentences

    sample = SentenceSample(corpus, sample_sentences(corpus.n_sentences, SAMPLE, seed, stream=5))
    return spread_of(sample.averages(W), words=sample.words())


def _ratio(end: float, start: float) -> float | None:
    return end / start if start > 0 else None


@dataclass(frozen=True)
class Verdict:
    """The check's finding from the ``start`` and ``end`` spreads: the ``gap_ratio`` and
    ``kept_ratio``, and ``kind``: "collapsed" (refused), "unsure" (warned), "healthy", or
    "unjudged" (nothing to compare). Without SURE_SENTENCES and SURE_WORDS of evidence a run is
    never "collapsed", at most "unsure"."""

    start: Spread | None
    end: Spread | None

    @property
    def gap_ratio(self) -> float | None:
        return None if self.start is None or self.end is None else _ratio(self.end.gap, self.start.gap)

    @property
    def kept_ratio(self) -> float | None:
        return None if self.start is None or self.end is None else _ratio(self.end.kept, self.start.kept)

    @property
    def sure(self) -> bool:
        return self.end is not None and self.end.sentences >= SURE_SENTENCES and self.end.words >= SURE_WORDS

    def _below(self, gap: float, kept: float) -> bool:
        g, k = self.gap_ratio, self.kept_ratio
        return (g is not None and g < gap) or (k is not None and k < kept)

    @property
    def kind(self) -> str:
        if self.gap_ratio is None and self.kept_ratio is None:
            return "unjudged"
        if self._below(REFUSE_GAP, REFUSE_KEPT):
            return "collapsed" if self.sure else "unsure"
        return "unsure" if self._below(WARN_GAP, WARN_KEPT) else "healthy"

    def to_dict(self) -> dict:
        def r(x):
            return None if x is None else round(float(x), 4)

        out = {"verdict": self.kind, "gap_ratio": r(self.gap_ratio), "kept_ratio": r(self.kept_ratio)}
        for name, s in (("start", self.start), ("end", self.end)):
            out[name] = None if s is None else {"gap": r(s.gap), "kept": r(s.kept)}
        if self.end is not None:
            out.update(sentences=self.end.sentences, words=self.end.words)
        return out

    def describe(self, gap_bound: float = 2.0, kept_bound: float = 2.0) -> str:
        """What is left of the start's spread: a clause for each measure under its bound."""
        parts = []
        if self.kept_ratio is not None and self.kept_ratio < kept_bound:
            parts.append(f"the sampled sentences keep {self.end.kept:.3f} of their variance outside the directions "
                         f"post-processing removes ({self.start.kept:.3f} at the start of the run: "
                         f"{self.kept_ratio:.2f} of it)")
        if self.gap_ratio is not None and self.gap_ratio < gap_bound:
            parts.append(f"a sentence's nearest other sentence sits at cosine {1 - self.end.gap:.3f} on average "
                         f"after post-processing ({1 - self.start.gap:.3f} at the start of the run: "
                         f"{self.gap_ratio:.2f} of the gap left)")
        return "; ".join(parts)

    def warning(self) -> str | None:
        """The warning of an unsure verdict, else None."""
        if self.kind != "unsure":
            return None
        few = (f"; measured on {self.end.sentences:,} sentences of {self.end.words:,} distinct words, too few to be "
               "sure" if not self.sure else "")
        return (f"warning: the sentence vectors may be collapsing: {self.describe(WARN_GAP, WARN_KEPT)}{few} "
                f"(healthy runs keep over {WARN_GAP:g} of the gap and {WARN_KEPT:g} of the variance, collapsed ones "
                f"under {REFUSE_GAP:g} or {REFUSE_KEPT:g}); the model is saved; if its similarities look flat, "
                "train again with a smaller --lr")

    def error(self) -> str:
        return (f"the sentence vectors collapsed into a few directions: {self.describe(REFUSE_GAP, REFUSE_KEPT)} "
                f"(healthy runs keep over {WARN_GAP:g} of the gap and {WARN_KEPT:g} of the variance)")
