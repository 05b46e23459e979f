"""STS reading and scoring.

STS files: ``gold<TAB>sentence1<TAB>sentence2`` per line, UTF-8, no header. A pair is
scored when both sentences have a known word; the rest are left out of the correlations
and counted (``pairs`` vs ``scored``), never given an invented score.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np


class STSError(ValueError):
    """An STS file that cannot be read."""


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


def read_sts(path: os.PathLike) -> STSSet:
    path = Path(path)
    gold, first, second = [], [], []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise STSError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise STSError(f"{path}: cannot read: {exc.strerror}") from None
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t")
        if len(parts) != 3:
            raise STSError(f"{path}: line {n} has {len(parts)} tab-separated fields, expected 3 (gold, s1, s2)")
        try:
            score = float(parts[0])
        except ValueError:
            raise STSError(f"{path}: line {n}: gold score {parts[0]!r} is not a number") from None
        if not math.isfinite(score):
            raise STSError(f"{path}: line {n}: gold score {parts[0]!r} is not finite")
        gold.append(score)
        first.append(parts[1])
        second.append(parts[2])
    if not gold:
        raise STSError(f"{path}: no sentence pairs")
    name = path.name[:-4] if path.name.endswith(".tsv") else path.name
    return STSSet(name, np.asarray(gold, dtype=np.float64), first, second)


def pair_cosines(embed, first, second) -> np.ndarray:
    """Cosine per pair from ``embed(list[str]) -> (n, d)``; nan where a side has no embedding."""
    a = np.asarray(embed(first), dtype=np.float64)
    b = np.asarray(embed(second), dtype=np.float64)
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = (a * b).sum(axis=1) / (na * nb)
    cos[~np.isfinite(cos)] = np.nan
    return cos


def score_set(embed, sts: STSSet) -> STSScore:
    from scipy.stats import pearsonr, spearmanr

    pred = pair_cosines(embed, sts.first, sts.second)
    ok = np.isfinite(pred)
    if ok.sum() >= 3 and np.ptp(pred[ok]) > 0:
        pearson = float(pearsonr(sts.gold[ok], pred[ok])[0])
        spearman = float(spearmanr(sts.gold[ok], pred[ok])[0])
    else:
        pearson = spearman = float("nan")
    return STSScore(sts.name, len(sts.gold), int(ok.sum()), pearson, spearman, pred)


def summarize(scores: list[STSScore]) -> dict:
    """``mean``: unweighted mean over sets; ``weighted``: weighted by pairs scored."""
    pearson = np.array([s.pearson for s in scores])
    spearman = np.array([s.spearman for s in scores])
    weights = np.array([s.scored for s in scores], dtype=np.float64)
    ok = np.isfinite(pearson) & (weights > 0)
    if not ok.any():
        return {"pearson_mean": float("nan"), "spearman_mean": float("nan"),
                "pearson_weighted": float("nan"), "spearman_weighted": float("nan")}
    return {
        "pearson_mean": float(pearson[ok].mean()),
        "spearman_mean": float(spearman[ok].mean()),
        "pearson_weighted": float(np.average(pearson[ok], weights=weights[ok])),
        "spearman_weighted": float(np.average(spearman[ok], weights=weights[ok])),
    }
