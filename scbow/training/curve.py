"""STS scores during training: the learning curve of the paper's Figure 2.

:class:`CurveHook` scores the STS-B dev set (and further STS sets) before the first batch, after the
batch in which every ``every``-th example is reached, and at the end of every epoch.

Each point scores the model that would be saved there: the hook fits the saved model's
post-processing (:class:`~scbow.training.postprocess.CommonComponents`) to the current vectors and,
since averaging commutes with it, applies it to the evaluation averages only. Points within the run
estimate it on ``sample`` sentences (20,000); the last on the saved model's 100,000, so its score
agrees with the saved model's to rounding (float64 averages, not float32 rows). ``dev_raw`` scores the
vectors as trained. A run with a word part gets one last point, ``"word_part": true``, of the saved
rows. Evaluation time is hook time: each point records ``eval_seconds``, and ``seconds`` excludes them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import CheckpointError, ConfigError
from ..text.tokenize import tokenize_lines
from ..text.units import parse_count
from ..use.data import default_sts_dev, default_sts_paths, sts_files
from ..use.evaluate import STSScore, STSSet, correlations, read_sts, summarize
from ..vectors.average import Averager, sentences_text
from ..vectors.numeric import row_cosines
from .hooks import Hook
from .postprocess import COMMON_SAMPLE, CommonComponents

CURVE_FORMAT = 1
CURVE_SAMPLE = 20_000  # corpus sentences the post-processing is estimated on at each point

@dataclass
class PreparedSet:
    """An STS set's sentences as token ids of one vocabulary (what does not change as the rows train)."""

    name: str
    gold: np.ndarray  # float64, (pairs,)
    encoded: tuple  # (the first sentences, the second), each an Encoded


def prepare_set(sts: STSSet, averager: Averager) -> PreparedSet:
    """``sts`` against the vocabulary of ``averager``."""
    return PreparedSet(sts.name, sts.gold, tuple(averager.encode(sentences_text(side)) for side in (sts.first, sts.second)))


def _finite(x):
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


def _record(score: STSScore, counts: bool = True) -> dict:
    """A point's record of one score: its correlations, and with ``counts`` the pairs scored."""
    out = {"pearson": _finite(score.pearson), "spearman": _finite(score.spearman)}
    return {**out, "scored": score.scored, "pairs": score.pairs} if counts else out


def _summary(scores, per_set: bool = True) -> dict:
    """A point's record of the further sets: their means, and with ``per_set`` each one's Pearson."""
    out = {k: (_finite(v) if isinstance(v, float) else v) for k, v in summarize(scores).items()}
    return {**out, "pearson": {s.name: _finite(s.pearson) for s in scores}} if per_set else out


class CurveHook(Hook):
    """Scores STS sets during training; ``curve()`` is the record saved as ``curve.json``.

    dev: the set the curve is about. tests: further sets (their means and per-set Pearson recorded).
    every: examples between points. common_components, seed: the run's post-processing
    (``config.components_removed``, -1 for none). sources: where the sets came from, as given.
    unknown, unknown_scale: the saved model's rule for unknown words (``config.unknown``).
    """

    def __init__(self, dev: STSSet, every: int, common_components: int, seed: int, tests=(),
                 sources: dict | None = None, sample: int = CURVE_SAMPLE, final_sample: int = COMMON_SAMPLE,
                 unknown: str = "omit", unknown_scale: float = 1.0):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive number of examples, got {every!r}")
        self.dev_set = dev
        self.test_sets = list(tests)
        self.every = every
        self.k = common_components
        self.seed = seed
        self.sample = sample
        self.final_sample = final_sample
        self.sources = dict(sources or {})
        self.points: list[dict] = []
        self.eval_seconds = 0.0
        self.unknown = unknown
        self.unknown_scale = float(unknown_scale)

    # -- the hook -------------------------------------------------------------------
    def checkpoint_info(self) -> dict:
        return {"curve": self.curve()}

    def restore_checkpoint_info(self, info: dict) -> bool:
        """Start from the checkpoint's points; CheckpointError if they were recorded otherwise than this run's."""
        curve = info.get("curve")
        points = curve.get("points") if isinstance(curve, dict) else None
        if isinstance(points, list) and points:
            now = self.curve()
            keys = ("every", "dev", "test", "unknown", "unknown_scale", "post_processing")
            differ = [k for k in keys if _as_scored(curve.get(k)) != _as_scored(now[k])]
            if differ:
                shown = "; ".join(f"{k} was {_short(curve.get(k))}, now {_short(now[k])}" for k in differ)
                raise CheckpointError(f"cannot resume: the interrupted run recorded its learning curve otherwise ({shown}); "
                                      "run with its --eval-every, --eval-dev and --eval-sets, or delete the checkpoint "
                                      "to start over")
        if isinstance(points, list) and all(isinstance(p, dict) for p in points):
            self.points = [dict(p) for p in points]
            self.eval_seconds = sum(float(p.get("eval_seconds") or 0.0) for p in points)
        return True

    def before_training(self, state, matrices, corpus) -> None:
        t = time.perf_counter()
        # a resumed run goes on from its saved points' clock (seconds exclude the evaluations)
        before = float(self.points[-1].get("seconds") or 0.0) if self.points else 0.0
        self._start = t - before - self.eval_seconds
        self.corpus = corpus
        self._averager = Averager(corpus.vocab, matrices["sentence"], tokenize_lines)  # its pieces, for every point
        self.dev = prepare_set(self.dev_set, self._averager)
        self.tests = [prepare_set(s, self._averager) for s in self.test_sets]
        self._rows_read = self._averager.rows_read([e for s in (self.dev, *self.tests) for e in s.encoded], self.unknown)
        self.post = CommonComponents(corpus, self.k, self.seed, self.sample) if self.k >= 0 else None
        self.post_final = None
        self._n_losses = len(state["sentence"].losses)
        self._point(state, matrices["sentence"], epoch_end=False, started=t)

    def after_batch(self, state, matrices) -> None:
        # a batch that ends an epoch is scored by after_epoch, which comes next; the word part's batches
        # leave the sentence part as it is
        if state.phase == "sentence" and state.done >= self.next_at and state.lo < state.targets_per_epoch:
            self._point(state, matrices["sentence"], epoch_end=False)

    def after_epoch(self, state, matrices) -> None:
        self._point(state, matrices["sentence"], epoch_end=True)

    # -- scoring --------------------------------------------------------------------
    def _point(self, state, W, epoch_end: bool, started: float | None = None) -> None:
        t = started if started is not None else time.perf_counter()
        post, ps = self.post, state["sentence"]
        if post is not None and ps.done >= ps.total and self.final_sample != self.sample:  # the saved model's
            self.post_final = self.post_final or CommonComponents(self.corpus, self.k, self.seed, self.final_sample)
            post = self.post_final
        transform = post.fit(W) if post is not None else None
        averagers = self._averagers(W, transform)
        dev, dev_raw = self._score(self.dev, averagers)
        point = {
            "examples": int(state.done),
            "epoch": round(state.done / state.targets_per_epoch, 6) if state.targets_per_epoch else 0.0,
            "fraction": round(ps.done / ps.total, 6) if ps.total else 0.0,
            "epoch_end": epoch_end,
            "seconds": None,
            "kernel_seconds": round(ps.seconds, 3),
            "eval_seconds": None,
            "loss": _finite(float(np.mean(ps.losses[self._n_losses:]))) if len(ps.losses) > self._n_losses else None,
            "sample": None if post is None else post.sample,
            "dev": _record(dev),
            "dev_raw": _record(dev_raw, counts=False),
        }
        if self.tests:
            scored = [self._score(s, averagers) for s in self.tests]
            point["test"], point["test_raw"] = _summary([p[0] for p in scored]), _summary([p[1] for p in scored], False)
        self._n_losses = len(ps.losses)
        self.next_at = (state.done // self.every + 1) * self.every
        now = time.perf_counter()
        point["eval_seconds"] = round(now - t, 4)
        self.eval_seconds += now - t
        point["seconds"] = round(now - self._start - self.eval_seconds, 3)
        self.points.append(point)

    def _averagers(self, W, transform) -> tuple:
        """Averagers of the rows as trained and of the rows post-processed as saved (None without a
        transform); the hashed vectors are not post-processed (their norm: the rarest rows')."""
        raw = self._averager.renew(W)
        if transform is None:
            return raw, None
        read = self._rows_read  # only the rows the sets read are mapped (the whole matrix: seconds a point)
        rows = np.zeros(W.shape)
        rows[read] = CommonComponents.apply(W[read], *transform)
        return raw, raw.renew(rows)

    def _score(self, s: PreparedSet, averagers: tuple) -> tuple[STSScore, STSScore]:
        """The set's scores with the post-processing (if any) and without, on ``Model.encode``'s averages
        in float64."""
        scores = [self._stsscore(s, row_cosines(*(averager.average(e, self.unknown, self.unknown_scale,
                                                                     dtype=np.float64).rows for e in s.encoded)))
                  for averager in averagers if averager is not None]
        return scores[-1], scores[0]

    @staticmethod
    def _stsscore(s: PreparedSet, pred: np.ndarray) -> STSScore:
        ok = np.isfinite(pred)
        pearson, spearman = correlations(s.gold[ok], pred[ok])
        return STSScore(s.name, len(s.gold), int(ok.sum()), pearson, spearman, pred)

    # -- the record -----------------------------------------------------------------
    def curve(self) -> dict:
        """The curve as saved in ``curve.json`` (JSON-ready: no NaN)."""
        return {
            "format_version": CURVE_FORMAT,
            "every": self.every,
            "dev": {"name": self.dev_set.name, "pairs": len(self.dev_set.gold), "source": self.sources.get("dev")},
            "test": [{"name": s.name, "pairs": len(s.gold)} for s in self.test_sets],
            "test_sources": self.sources.get("test"),
            "unknown": self.unknown,
            "unknown_scale": self.unknown_scale if self.unknown != "omit" else None,
            "post_processing": None if self.k < 0 else {
                "common_components": self.k, "seed": self.seed, "sample": self.sample,
                "final_sample": self.final_sample,
                "note": "scores are of the vectors after the post-processing the saved model gets, estimated on "
                        "`sample` corpus sentences (the last point: `final_sample`, as the saved model); "
                        "dev_raw: the vectors as trained"},
            "evaluations": len(self.points),
            "eval_seconds": round(self.eval_seconds, 3),
            "points": self.points,
        }

    def word_part_point(self, model) -> None:
        """The point of the saved rows ``[sentence part ; word part]`` (post-processed already); the points
        before it score the sentence part alone."""
        t = time.perf_counter()
        averagers = self._averagers(np.asarray(model.vectors), None)
        score = self._score(self.dev, averagers)[0]
        point = {**(self.points[-1] if self.points else {}), "word_part": True, "loss": None, "sample": None,
                 "dev": _record(score), "dev_raw": _record(score, counts=False)}
        if self.tests:
            point["test"] = point["test_raw"] = _summary([self._score(x, averagers)[0] for x in self.tests])
        point["eval_seconds"] = round(time.perf_counter() - t, 4)
        self.eval_seconds += point["eval_seconds"]
        self.points.append(point)

    def attach(self, model) -> None:
        """Record the curve (with a word part, its last point first) and its cost in ``model.info``."""
        if "word" in model.parts:
            self.word_part_point(model)
        model.info["curve"] = self.curve()
        training = model.info.setdefault("training", {})
        training["eval_seconds"] = round(self.eval_seconds, 3)
        training["evaluations"] = len(self.points)


def curve_hook(every, dev, sets, with_tests: bool, config) -> CurveHook:
    """``train --eval-every``'s hook, checked before training: ``every`` examples (an int or ``"500k"``),
    ``dev`` (default ``scbow.use.data.default_sts_dev``), further STS files or folders ``sets``, and with
    ``with_tests`` the default STS test sets."""
    if isinstance(every, str):
        try:
            every = parse_count(every)
        except ValueError as exc:
            raise ConfigError(f"--eval-every {exc}") from None
    dev_path = Path(dev) if dev is not None else default_sts_dev()
    if not dev_path.exists():
        raise ConfigError(f"--eval-dev {dev_path}: no such file")  # else read_sts names what is wrong with it
    test_files = sts_files(list(sets) + (default_sts_paths() if with_tests else []))
    return CurveHook(read_sts(dev_path), every, config.components_removed, config.seed,
                     tests=[read_sts(f) for f in test_files],
                     sources={"dev": str(dev_path), "test": [str(f) for f in test_files] or None},
                     unknown=config.unknown, unknown_scale=config.unknown_scale)


def _as_scored(value):
    """A curve setting as it bears on the scores: a set by its name and pairs, not its path."""
    return {k: v for k, v in value.items() if k != "source"} if isinstance(value, dict) else value


def _short(value) -> str:
    """A curve setting in a message: a dev set by its name, the rest as they are."""
    if isinstance(value, dict) and "name" in value:
        return str(value["name"])
    if isinstance(value, list):
        return ", ".join(_short(v) for v in value) or "none"
    return str(value)
