"""The collapse check: does the trained sentence part still tell sentences apart?

A learning rate far too high drives the rows into a few directions. On the averages of a fixed
sample of corpus sentences (:data:`SAMPLE`, from the run's seed) the check measures, against the
same measures of the run's own start (random, a given ``init`` or a resumed run's recorded start):

- **kept**: the share of the variance outside the top ``min(COMPONENTS, dim // 10)`` principal
  directions (those post-processing removes);
- **gap**: after centring and removing them, the mean ``1 - cos`` to the nearest other sentence.

Each ratio to the start's is 1 when training kept the spread, near 0 on a collapse. Under a REFUSE
bound a run is refused like a divergence, under a WARN bound saved with a warning; the bounds and
the measurements behind them are in docs/robustness.md. Only the sentence part is judged, as soon
as it is trained (``--lr`` is its own; the word part is checked for NaN only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .postprocess import SentenceSample, sample_sentences

# sentences sampled (their averages: SAMPLE x dim; the cosines in blocks)
SAMPLE = 5000
COMPONENTS = 10
REFUSE_GAP, WARN_GAP = 0.35, 0.45
REFUSE_KEPT, WARN_KEPT = 0.1, 0.15
# A refusal needs SURE_SENTENCES sampled sentences using SURE_WORDS distinct words: sentences of a
# few dozen words sit close by nature, and a healthy run moves them closer (the tests' 38-word text
# keeps 0.17-0.32 of its gap), so on less evidence a low ratio is warned of, never refused.
SURE_SENTENCES = 1000
SURE_WORDS = 100


@dataclass(frozen=True)
class Spread:
    """One matrix's ``gap`` and ``kept`` on the sample, and the evidence: ``sentences``, distinct ``words``."""

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
    """The :class:`Spread` of sentence averages ``S`` (n x d), rows zero once projected left out of the gap;
    None when fewer than 3 are left or a value is not finite."""
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
    sample = SentenceSample(corpus, sample_sentences(corpus.n_sentences, SAMPLE, seed, stream=5))
    return spread_of(sample.averages(W), words=sample.words())


def _ratio(end: float, start: float) -> float | None:
    return end / start if start > 0 else None


@dataclass(frozen=True)
class Verdict:
    """The finding from the ``start`` and ``end`` spreads: ``gap_ratio``, ``kept_ratio`` and ``kind``:
    "collapsed" (refused; needs SURE_* evidence), "unsure" (warned), "healthy" or "unjudged"."""

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
