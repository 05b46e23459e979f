"""STS reading and scoring, significance against a second system, and word-overlap controls.

STS files: ``gold<TAB>sentence1<TAB>sentence2`` per line, UTF-8, no header. A pair is
scored when both sentences have an embedding (a model: at least one known word); the rest
are left out of the correlations and counted (``pairs`` vs ``scored``), never given an
invented score.

Two systems are compared on the pairs both of them scored, as in the paper (§3.3): a
paired Wilcoxon signed-rank test on their predicted scores (it shows that the systems
score the pairs differently, not which one is better) and a paired bootstrap confidence
interval of the difference of their Pearson correlations (it does say which is better).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import STSError
from ..text.reader import DEFAULT_ENCODING, read_small_text
from ..text.tokenize import tokenize
from ..text.units import MAX_GOLD, gold_number
from ..vectors.numeric import hashed_vector, mean_rows, row_cosines, word_weights  # noqa: F401  (row_cosines re-exported)

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


@dataclass
class Comparison:
    """System ``a`` against system ``b`` on one set, over the pairs both scored."""

    name: str
    common: int  # pairs both systems scored
    wilcoxon_statistic: float
    wilcoxon_p: float
    pearson_diff: float  # Pearson of a minus Pearson of b, on the common pairs
    ci_low: float
    ci_high: float


def read_sts(path: os.PathLike, encoding: str = DEFAULT_ENCODING) -> STSSet:
    path = Path(path)
    gold, first, second = [], [], []
    # the one text reader: plain or compressed, a pipe or a device refused, damage named
    for n, line in enumerate(read_small_text(path, STSError, "an STS file", encoding), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t")
        if len(parts) != 3:
            raise STSError(f"{path}: line {n} has {len(parts)} tab-separated fields, expected 3 (gold, s1, s2)")
        try:
            score = gold_number(parts[0])
        except ValueError:
            raise STSError(f"{path}: line {n}: gold score {parts[0][:40]!r} is not a number") from None
        if not math.isfinite(score):
            raise STSError(f"{path}: line {n}: gold score {parts[0][:40]!r} is not finite")
        if abs(score) > MAX_GOLD:
            raise STSError(f"{path}: line {n}: gold score {parts[0][:40]!r} is out of range (STS scores lie within "
                           f"+-{MAX_GOLD:g}; usually 0 to 5)")
        gold.append(score)
        first.append(parts[1])
        second.append(parts[2])
    if not gold:
        raise STSError(f"{path}: no sentence pairs")
    name = path.name[:-4] if path.name.endswith(".tsv") else path.name
    return STSSet(name, np.asarray(gold, dtype=np.float64), first, second)


def pair_cosines(embed, first, second) -> np.ndarray:
    """Cosine per pair from ``embed(list[str]) -> (n, d)``; nan where a side has no embedding."""
    return row_cosines(np.asarray(embed(first), dtype=np.float64), np.asarray(embed(second), dtype=np.float64))



def correlations(gold: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    """Pearson and Spearman; nan when fewer than 3 pairs or either side is constant (cosines that
    differ only by rounding, 1e-12, are constant: their ranks would be noise)."""
    import warnings

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
    """``mean``: unweighted mean over sets; ``weighted``: weighted by pairs scored.

    Sets without a correlation (nan) are left out of both; ``sets_in_mean`` counts the rest.
    """
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
    """Paired Wilcoxon signed-rank test of two systems' scores for the same pairs.

    pred_a, pred_b: arrays of float64, shape (n,), nan where a system did not score a pair;
    only the pairs both scored are used. Returns ``(statistic, p)``: identical scores give
    ``(0.0, 1.0)``, fewer than 2 common pairs give nan.
    """
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
    """Paired bootstrap of ``pearson(gold, a) - pearson(gold, b)``.

    gold, pred_a, pred_b: arrays of float64, shape (n,); pairs where either system has no
    score (nan) are dropped first. Pairs are resampled with replacement, the same pairs for
    both systems; ``seed`` makes it reproducible. Returns ``(diff, low, high)``: the
    difference on the common pairs and its percentile ``level`` interval (nan when fewer
    than 3 common pairs).
    """
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


def compare(sts: STSSet, a: STSScore, b: STSScore, resamples: int = 1000, seed: int = 0) -> Comparison:
    """Wilcoxon test and bootstrap 95% interval of system ``a`` against ``b`` on ``sts``."""
    common = int((np.isfinite(a.predictions) & np.isfinite(b.predictions)).sum())
    stat, p = wilcoxon_test(a.predictions, b.predictions)
    diff, low, high = bootstrap_pearson_diff(sts.gold, a.predictions, b.predictions, resamples, seed)
    return Comparison(sts.name, common, stat, p, diff, low, high)


def overlap_weights(counts, raw_tokens: int, a: float = SIF_A) -> np.ndarray:
    """The weights of the weighted overlap control, one per vocabulary word: SIF's
    ``a / (a + p(w))`` (float32), ``p(w)`` the word's share of the ``raw_tokens`` its counts
    were taken from, ``a`` (0 or less: :data:`SIF_A`) as in training
    (:func:`scbow.vectors.numeric.word_weights`). A word outside the vocabulary weighs 1.
    The control of ``evaluate --control overlap`` and the "word overlap" peer of
    ``benchmarks/quality.py`` (``benchmarks/peers.py``) both weigh their words by it.
    """
    return word_weights(counts, raw_tokens, a if a > 0 else SIF_A)


class OverlapControl:
    """An untrained word-overlap control: a fixed random vector per distinct token.

    Every token, in any vocabulary or none, gets its hashed vector of ``dim`` values
    (:func:`scbow.vectors.numeric.hashed_vector`: the same in every process). A sentence is the
    average over all its tokens (repeated tokens count twice), so the cosine of two sentences
    measures how much words they share. A sentence without tokens has no embedding (NaN).

    ``weights`` (word -> weight; a word not in it weighs 1) makes it the weighted overlap
    control: each token's vector is multiplied by its weight before averaging, SIF's
    weighting with :func:`overlap_weights` (:meth:`weighted`), a much stronger control
    than the plain average (the untrained start of a model is this control).

    ``embed`` takes a list of sentences as :meth:`scbow.vectors.model.Model.encode` does, for
    benchmarks and :func:`score_set`: ``OverlapControl(dim=300).embed``.
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
        """The weighted overlap control of a vocabulary (``words`` and their ``counts`` out of
        ``raw_tokens``): each word weighs :func:`overlap_weights`, any other token 1."""
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
    """Score every system on every set; compare the first system with each of the others.

    systems: name -> ``embed(list[str]) -> (n, d)``, the first being the one evaluated.
    Returns a JSON-ready dict (nan as None): per set the first system's ``scored``,
    ``pearson`` and ``spearman``, and under ``comparisons[name]`` the other system's scores,
    the pairs both scored (``common``), the Wilcoxon test and the Pearson difference
    (first minus other) with its bootstrap 95% interval; then the first system's
    ``pearson_mean``/``spearman_mean`` (unweighted over sets) and ``*_weighted`` (weighted by
    pairs scored), and the same summaries for the others under ``comparisons``.
    """
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
            c = compare(sts, a, b, resamples, seed)
            row["comparisons"][other] = {
                "scored": b.scored, "pearson": b.pearson, "spearman": b.spearman, "common": c.common,
                "wilcoxon_statistic": c.wilcoxon_statistic, "wilcoxon_p": c.wilcoxon_p,
                "pearson_diff": c.pearson_diff, "pearson_diff_ci95": [c.ci_low, c.ci_high],
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
    return _nan_to_none(report)


def _nan_to_none(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value


def _num(value, width: int, fmt: str = ".4f") -> str:
    return f"{'-' if value is None else format(value, fmt):>{width}}"


def _table(report: dict, scores: bool = True, tests: bool = True) -> list[str]:
    """The rows of :func:`format_table`: each system's ``scores``, each comparison's ``tests``, or both."""
    others = list(report["comparisons"])
    width = max([len(s["name"]) for s in report["sets"]] + [len("weighted")])
    groups = [(report["system"], 6 + 1 + 7 + 1 + 8)] if scores else []
    header = f"{'set':<{width}}  {'pairs':>6}" + (f"  {'scored':>6} {'pearson':>7} {'spearman':>8}" if scores else "")
    for other in others:
        groups.append((other, (6 + 1 + 7 + 1 + 8 if scores else 0) + (2 + 8 + 1 + 7 + 1 + 17 if tests else 0)
                       - (0 if scores else 2)))
        header += (f"  {'scored':>6} {'pearson':>7} {'spearman':>8}" if scores else "") + (
            f"  {'wilcox p':>8} {'r diff':>7} {'95% CI':>17}" if tests else "")
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
            line += f"  {'':>6} {_num(o['pearson_' + key], 7)} {_num(o['spearman_' + key], 8)}" + " " * 36
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
        import textwrap

        lines, notes = ([part for line in block for part in textwrap.wrap(
            line, max(width, 40), subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)]
            for block in (lines, notes))
    return "\n".join(lines + [""] * bool(lines) + table + [""] + notes)


def evaluate_models(paths=(), model=None, baseline=None, control: str | None = None, resamples: int = 1000,
                    unknown: str | None = None, encoding: str = DEFAULT_ENCODING) -> dict:
    """``scbow-numba evaluate``: score ``model`` (a path; default: the default model) on STS
    files or folders (default: :func:`scbow.use.data.default_sts_paths`), beside ``baseline``
    vectors and an untrained ``control``; the report of :func:`evaluate_systems` with ``sources``.

    ``control``: ``"overlap"``, the weighted overlap control (named ``"weighted overlap"``:
    SIF-weighted by the evaluated model's vocabulary counts, :meth:`OverlapControl.weighted`,
    with ``a`` the model's ``frequency_weight`` or :data:`SIF_A`), or ``"plain-overlap"``
    (``"plain overlap"``, the unweighted average). Without ``model`` and with a ``control``,
    the model is left out when no default model exists (only the plain control can then be had).
    ``encoding``: the STS files' (``scbow.text.reader.text_codec``).
    """
    import functools
    from pathlib import Path

    from ..errors import ModelError
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
    """``evaluate --control overlap``: the weighted overlap control of the evaluated ``model``'s
    vocabulary counts, and the line that says what it is."""
    from ..errors import ModelError

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
