"""STS reading and scoring, significance against a second system, and word-overlap controls.

STS files: ``gold<TAB>sentence1<TAB>sentence2`` lines, no header. A pair is scored when both sides
have an embedding; the rest are counted (``pairs`` vs ``scored``), never given an invented score.

Two systems are compared on the pairs both scored, as in the paper (§3.3): a paired Wilcoxon test
(the systems differ, not which is better) and a paired bootstrap interval of the Pearson difference.
"""

from __future__ import annotations

import functools
import math
import os
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ModelError, STSError
from ..text.reader import DEFAULT_ENCODING, read_small_text
from ..text.tokenize import tokenize
from ..text.units import MAX_GOLD, gold_number
from ..vectors.numeric import hashed_vector, mean_rows, row_cosines, word_weights
from .describe import json_safe

MEAN_NOTE = "mean: unweighted over sets; weighted: weighted by the pairs scored in each set"
UNSCORED_NOTE = "pairs with a side without any known word (no embedding) are not scored"
SIGNIFICANCE_LEVEL = 1e-4  # the paper's threshold for "significantly different"
SIF_A = 1e-3  # SIF's a (Arora et al. 2017): the weighted overlap control's, unless the model has its own
CONTROLS = {"overlap": "weighted overlap", "plain-overlap": "plain overlap"}  # --control: the system's name


@dataclass
class STSSet:
    name: str
    gold: np.ndarray  # float64, shape (n,)
    first: list
    second: list


@dataclass
class STSScore:
    name: str
    pairs: int
    scored: int
    pearson: float
    spearman: float
    predictions: np.ndarray  # float64, shape (pairs,), nan where not scored


def read_sts(path: os.PathLike, encoding: str = DEFAULT_ENCODING) -> STSSet:
    path = Path(path)
    gold, first, second = [], [], []
    for n, line in enumerate(read_small_text(path, STSError, "an STS file", encoding), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t")
        if len(parts) != 3:
            raise STSError(f"{path}: line {n} has {len(parts)} tab-separated fields, expected 3 (gold, s1, s2)")
        gold.append(gold_score(parts[0], f"{path}: line {n}", STSError))
        first.append(parts[1])
        second.append(parts[2])
    if not gold:
        raise STSError(f"{path}: no sentence pairs")
    name = path.name[:-4] if path.name.endswith(".tsv") else path.name
    return STSSet(name, np.asarray(gold, dtype=np.float64), first, second)


def gold_score(text: str, where: str, error: type[Exception]) -> float:
    """The gold score ``text`` of an STS or pairs line (``where``: ``PATH: line N``); ``error`` unless a number."""
    try:
        value = gold_number(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and abs(value) <= MAX_GOLD):
        raise error(f"{where}: gold score {text[:40]!r} is not a number within +-{MAX_GOLD:g} (STS scores: 0 to 5)")
    return value


def pair_cosines(embed, first, second) -> np.ndarray:
    """Cosine per pair from ``embed(list[str]) -> (n, d)``; nan where a side has no embedding."""
    return row_cosines(np.asarray(embed(first), dtype=np.float64), np.asarray(embed(second), dtype=np.float64))


def correlations(gold: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    """Pearson and Spearman; nan for fewer than 3 pairs or a constant side (to rounding: ranks of noise)."""
    from scipy.stats import pearsonr, spearmanr

    if len(gold) < 3 or np.ptp(gold) == 0 or np.ptp(pred) <= 1e-12 * max(1.0, float(np.abs(pred).max())):
        return float("nan"), float("nan")
    with warnings.catch_warnings():  # scipy's near-constant warning: the check above has decided
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(pearsonr(gold, pred)[0]), float(spearmanr(gold, pred)[0])


def score_set(embed, sts: STSSet) -> STSScore:
    pred = pair_cosines(embed, sts.first, sts.second)
    ok = np.isfinite(pred)
    pearson, spearman = correlations(sts.gold[ok], pred[ok])
    return STSScore(sts.name, len(sts.gold), int(ok.sum()), pearson, spearman, pred)


def summarize(scores: list[STSScore]) -> dict:
    """Unweighted ``mean`` and ``weighted`` (by pairs scored) over the sets with a correlation (``sets_in_mean``)."""
    pearson = np.array([s.pearson for s in scores], dtype=np.float64)
    spearman = np.array([s.spearman for s in scores], dtype=np.float64)
    weights = np.array([s.scored for s in scores], dtype=np.float64)
    ok = np.isfinite(pearson) & np.isfinite(spearman) & (weights > 0)
    if not ok.any():
        return {"pearson_mean": float("nan"), "spearman_mean": float("nan"),
                "pearson_weighted": float("nan"), "spearman_weighted": float("nan"), "sets_in_mean": 0}
    return {
        "pearson_mean": float(pearson[ok].mean()),
        "spearman_mean": float(spearman[ok].mean()),
        "pearson_weighted": float(np.average(pearson[ok], weights=weights[ok])),
        "spearman_weighted": float(np.average(spearman[ok], weights=weights[ok])),
        "sets_in_mean": int(ok.sum()),
    }


def wilcoxon_test(pred_a: np.ndarray, pred_b: np.ndarray) -> tuple[float, float]:
    """``(statistic, p)`` of a paired Wilcoxon signed-rank test on the pairs both scored (float64 (n,), nan:
    not scored); identical scores give ``(0.0, 1.0)``, fewer than 2 common pairs nan."""
    from scipy.stats import wilcoxon

    a, b = np.asarray(pred_a, dtype=np.float64), np.asarray(pred_b, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if len(a) < 2:
        return float("nan"), float("nan")
    if np.all(a == b):
        return 0.0, 1.0
    result = wilcoxon(a, b)
    return float(result.statistic), float(result.pvalue)


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson of each row of x with the same row of y (shape (r, n) -> (r,)); nan if constant."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    with np.errstate(all="ignore"):  # subnormal or constant inputs: nan, not warnings
        return (x * y).sum(axis=1) / np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))


def bootstrap_pearson_diff(gold, pred_a, pred_b, resamples: int = 1000, seed: int = 0,
                           level: float = 0.95) -> tuple[float, float, float]:
    """``(diff, low, high)``: ``pearson(gold, a) - pearson(gold, b)`` on the pairs both scored (float64 (n,))
    and its paired-bootstrap percentile ``level`` interval (nan under 3 common pairs)."""
    gold = np.asarray(gold, dtype=np.float64)
    a, b = np.asarray(pred_a, dtype=np.float64), np.asarray(pred_b, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    gold, a, b = gold[ok], a[ok], b[ok]
    n = len(gold)
    nan = float("nan")
    if n < 3:
        return nan, nan, nan
    diff = float(_rowwise_pearson(gold[None], a[None])[0] - _rowwise_pearson(gold[None], b[None])[0])
    rng = np.random.default_rng(seed)
    diffs = np.empty(resamples, dtype=np.float64)
    chunk = max(1, 2_000_000 // n)  # bounds memory to a few arrays of ~2M float64
    for start in range(0, resamples, chunk):
        stop = min(start + chunk, resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        g = gold[idx]
        diffs[start:stop] = _rowwise_pearson(g, a[idx]) - _rowwise_pearson(g, b[idx])
    diffs = diffs[np.isfinite(diffs)]
    if len(diffs) == 0:
        return diff, nan, nan
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return diff, float(low), float(high)


def overlap_weights(counts, raw_tokens: int, a: float = SIF_A) -> np.ndarray:
    """The weighted overlap control's SIF weights of the vocabulary (:func:`~scbow.vectors.numeric.word_weights`,
    ``a`` 0 or less: :data:`SIF_A`); also the "word overlap" peer's of ``benchmarks/peers.py``."""
    return word_weights(counts, raw_tokens, a if a > 0 else SIF_A)


class OverlapControl:
    """An untrained word-overlap control: every token's hashed vector, averaged over all its tokens, so a
    cosine measures the words two sentences share (no tokens: NaN).

    ``weights`` (word -> weight, else 1) makes it the weighted overlap control (:meth:`weighted`),
    much stronger than the plain one: the untrained start of a model is this control.
    """

    def __init__(self, dim: int = 300, weights=None):
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim
        self.weights = weights
        self._index: dict[str, int] = {}
        self._vectors = np.empty((1024, dim), dtype=np.float64)  # rows of the tokens seen so far

    @classmethod
    def weighted(cls, words, counts, raw_tokens: int, a: float = SIF_A, dim: int = 300) -> "OverlapControl":
        """The weighted overlap control of a vocabulary: each word weighs :func:`overlap_weights`, others 1."""
        return cls(dim, dict(zip(words, overlap_weights(counts, raw_tokens, a).tolist())))

    def vector(self, token: str) -> np.ndarray:
        """The vector of one token, its weight included: array of float64, shape (dim,)."""
        v = hashed_vector(token, self.dim)
        if self.weights is not None:
            v *= self.weights.get(token, 1.0)
        return v

    def _id(self, token: str) -> int:
        i = self._index.get(token)
        if i is None:
            i = self._index[token] = len(self._index)
            if i == len(self._vectors):
                self._vectors = np.concatenate([self._vectors, np.empty_like(self._vectors)])
            self._vectors[i] = self.vector(token)
        return i

    def embed(self, sentences) -> np.ndarray:
        """Sentence embeddings: array of float32, shape (n, dim); NaN rows for empty sentences."""
        if isinstance(sentences, str):
            raise TypeError("embed() takes a list of sentences; wrap a single sentence in a list")
        ids: list[int] = []
        lengths = np.zeros(len(sentences), dtype=np.int64)
        for n, sentence in enumerate(sentences):
            tokens = tokenize(sentence)
            ids.extend(self._id(t) for t in tokens)
            lengths[n] = len(tokens)
        return mean_rows(self._vectors, np.asarray(ids, dtype=np.int64), lengths).astype(np.float32)


def evaluate_systems(systems: dict, sets: list[STSSet], resamples: int = 1000, seed: int = 0) -> dict:
    """Score every system (name -> ``embed(list[str]) -> (n, d)``) on every set and compare the first with
    each other one: a JSON-ready dict (nan as None) of per-set scores, ``comparisons`` and summaries."""
    names = list(systems)
    if not names:
        raise ValueError("no system to evaluate")
    primary, others = names[0], names[1:]
    scores = {name: [score_set(systems[name], sts) for sts in sets] for name in names}
    rows = []
    for k, sts in enumerate(sets):
        a = scores[primary][k]
        row = {"name": sts.name, "pairs": a.pairs, "scored": a.scored, "pearson": a.pearson,
               "spearman": a.spearman, "comparisons": {}}
        for other in others:
            b = scores[other][k]
            stat, p = wilcoxon_test(a.predictions, b.predictions)
            diff, low, high = bootstrap_pearson_diff(sts.gold, a.predictions, b.predictions, resamples, seed)
            row["comparisons"][other] = {
                "scored": b.scored, "pearson": b.pearson, "spearman": b.spearman,
                "common": int((np.isfinite(a.predictions) & np.isfinite(b.predictions)).sum()),
                "wilcoxon_statistic": stat, "wilcoxon_p": p, "pearson_diff": diff, "pearson_diff_ci95": [low, high],
            }
        rows.append(row)
    report = {
        "system": primary,
        "sets": rows,
        **summarize(scores[primary]),
        "comparisons": {other: summarize(scores[other]) for other in others},
        "notes": {"mean": MEAN_NOTE, "unscored": UNSCORED_NOTE,
                  "wilcoxon": "paired signed-rank test of the two systems' cosines on the pairs both scored",
                  "pearson_diff": f"Pearson of {primary} minus Pearson of the compared system, on the pairs both scored",
                  "pearson_diff_ci95": f"paired bootstrap, {resamples} resamples of pairs, seed {seed}, percentile interval"},
    }
    return json_safe(report)


def _num(value, width: int, fmt: str = ".4f") -> str:
    return f"{'-' if value is None else format(value, fmt):>{width}}"


def _table(report: dict, scores: bool = True, tests: bool = True) -> list[str]:
    """The rows of :func:`format_table`: each system's ``scores``, each comparison's ``tests``, or both."""
    others = list(report["comparisons"])
    width = max([len(s["name"]) for s in report["sets"]] + [len("weighted")])
    score_head = f"  {'scored':>6} {'pearson':>7} {'spearman':>8}" if scores else ""
    test_head = f"  {'wilcox p':>8} {'r diff':>7} {'95% CI':>17}" if tests else ""
    header = f"{'set':<{width}}  {'pairs':>6}" + score_head + (score_head + test_head) * len(others)
    groups = [(report["system"], len(score_head) - 2)] * scores + [(o, len(score_head + test_head) - 2) for o in others]
    lines = [(" " * (width + 2 + 6 + 2) + "  ".join(f"{name[:w]:^{w}}" for name, w in groups)).rstrip(), header]
    for s in report["sets"]:
        line = f"{s['name']:<{width}}  {s['pairs']:>6}"
        if scores:
            line += f"  {s['scored']:>6} {_num(s['pearson'], 7)} {_num(s['spearman'], 8)}"
        for other in others:
            c = s["comparisons"][other]
            if scores:
                line += f"  {c['scored']:>6} {_num(c['pearson'], 7)} {_num(c['spearman'], 8)}"
            if tests:
                p = c["wilcoxon_p"]
                ptext = "-" if p is None else f"{p:.1e}" + ("*" if p < SIGNIFICANCE_LEVEL else " ")
                low, high = c["pearson_diff_ci95"]
                ci = "-" if low is None else f"[{low:+.3f}, {high:+.3f}]"
                line += f"  {ptext:>8} {_num(c['pearson_diff'], 7, '+.4f')} {ci:>17}"
        lines.append(line)
    for label, key in (("mean", "mean"), ("weighted", "weighted")) if scores else ():
        line = (f"{label:<{width}}  {'':>6}  {'':>6} {_num(report['pearson_' + key], 7)} "
                f"{_num(report['spearman_' + key], 8)}")
        for other in others:
            o = report["comparisons"][other]
            line += f"  {'':>6} {_num(o['pearson_' + key], 7)} {_num(o['spearman_' + key], 8)}" + " " * len(test_head)
        lines.append(line.rstrip())
    return lines


def format_table(report: dict, width: int | None = None) -> str:
    """A readable table of :func:`evaluate_systems`'s report, notes in the footer; one that would run past
    ``width`` columns is printed as two: the scores, then the comparisons' tests."""
    primary = report["system"]
    others = list(report["comparisons"])
    lines = [f"{name}: {source}" for name, source in report.get("sources", {}).items()]
    table = _table(report)
    if width is not None and others and max(map(len, table)) > width:
        table = _table(report, tests=False) + [""] + _table(report, scores=False)
    notes = [f"{MEAN_NOTE}; {UNSCORED_NOTE}."]
    n_sets = len(report["sets"])
    for name, summary in [(primary, report)] + [(o, report["comparisons"][o]) for o in others]:
        if summary["sets_in_mean"] != n_sets:
            notes.append(f"{name}: means over the {summary['sets_in_mean']} of {n_sets} sets that have a correlation.")
    if others:
        notes.append(f"wilcox p: paired Wilcoxon signed-rank test of the two systems' cosines on the pairs both "
                     f"scored; * p < {SIGNIFICANCE_LEVEL:g} (the paper's threshold). It shows the systems differ, "
                     f"not which is better.")
        notes.append(f"r diff: Pearson of {primary} minus Pearson of the other system on the pairs both scored; "
                     f"95% CI: paired bootstrap over pairs (interval excluding 0: the difference is significant).")
    if width is not None:  # the prose cut at spaces to the width; the tables' rows are not
        lines, notes = ([part for line in block for part in textwrap.wrap(
            line, max(width, 40), subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)]
            for block in (lines, notes))
    return "\n".join(lines + [""] * bool(lines) + table + [""] + notes)


def evaluate_models(paths=(), model=None, baseline=None, control: str | None = None, resamples: int = 1000,
                    unknown: str | None = None, encoding: str = DEFAULT_ENCODING) -> dict:
    """``scbow-numba evaluate``: :func:`evaluate_systems`'s report, with ``sources``, of ``model`` (default: the
    default model) on STS files or folders, beside ``baseline`` vectors and a ``control`` (:data:`CONTROLS`,
    the weighted one by the model's counts). With a control and no default model, the model is left out.
    """
    from ..vectors.formats import load_model
    from ..vectors.modeldir import default_model_dir
    from .data import default_sts_paths, sts_files

    sets = [read_sts(f, encoding) for f in sts_files(paths or default_sts_paths())]
    systems, sources = {}, {}
    loaded = None
    default = default_model_dir()  # none there (missing, a dangling link, an empty folder): the control alone
    there = default.exists() and not (default.is_dir() and not any(default.iterdir()))
    if model is not None or control is None or there:  # a word2vec file too; a damaged model is refused
        path = model or default
        loaded = load_model(path)
        systems["model"], sources["model"] = functools.partial(loaded.encode, unknown=unknown), str(path)
    if baseline is not None:
        if not Path(baseline).exists():
            raise ModelError(f"{baseline}: no such baseline vectors file")
        systems["baseline"] = functools.partial(load_model(baseline).encode, unknown=unknown)
        sources["baseline"] = str(baseline)
    if control is not None:
        name = CONTROLS.get(control)
        if name is None:
            raise STSError(f"unknown control {control!r} (choose from {', '.join(CONTROLS)})")
        plain = "untrained control: a fixed random 300-d vector per distinct token, averaged over all tokens"
        if control == "plain-overlap":
            systems[name], sources[name] = OverlapControl(dim=300).embed, plain
        else:
            systems[name], sources[name] = _weighted_control(loaded, plain)
    if unknown is not None:
        sources = {k: v + (f" (unknown words: {unknown})" if k not in CONTROLS.values() else "")
                   for k, v in sources.items()}
    return {"sources": sources, **evaluate_systems(systems, sets, resamples=resamples)}


def _weighted_control(model, plain: str):
    """``evaluate --control overlap`` of ``model``'s vocabulary counts, and the line that says what it is."""
    if model is None:
        raise ModelError("--control overlap weighs words by the vocabulary counts of the model evaluated, and there "
                         "is none (no -m and no default model); give -m MODEL, or use --control plain-overlap")
    counts = np.asarray(model.vocab.counts)
    if not counts.any():
        raise ModelError("--control overlap weighs words by the model's vocabulary counts, and this model has none "
                         "(word2vec vectors?); use --control plain-overlap")
    corpus = model.info.get("corpus") if isinstance(model.info.get("corpus"), dict) else {}
    raw = corpus.get("raw_tokens") if isinstance(corpus.get("raw_tokens"), int) else 0
    fw = model.config.get("frequency_weight")
    a = float(fw) if isinstance(fw, (int, float)) and not isinstance(fw, bool) and fw > 0 else SIF_A
    control = OverlapControl.weighted(model.vocab.words, counts, raw or int(counts.sum()), a, dim=300)
    source = (f"{plain[:-len('averaged over all tokens')]}weighted by a/(a + p(w)) as SIF (a = {a:g}, p(w) from the "
              "model's vocabulary counts; 1 for a word outside it) and averaged over all tokens")
    return control.embed, source
