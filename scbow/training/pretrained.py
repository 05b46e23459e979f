"""Using other word vectors with ours: a pretrained start, and vocabulary expansion.

**Pretrained start** (``train --init-vectors``): the rows of words the file has start from its
vectors, scaled by one common factor to an RMS of ``init_std`` (the random rows' scale): cosines
among them unchanged, the random rows not drowned out (a cosine's gradient shrinks as 1/|s|), and
the learning rate and weight decay keep their meaning.

**Vocabulary expansion** (skip-thought, Kiros et al. 2015, §2.2): a least-squares linear map
``X[shared] @ M ≈ Y[shared]`` from a larger pretrained space into ours gives every pretrained word we
lack the vector ``x @ M``; only words the model's tokenizer can produce are added (``house``, never
``House``). The fit is reported as R² on all shared words and as the mean cosine on a held-out tenth.
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..progress import plural
from ..text.tokenize import tokenizer
from ..text.vocab import Vocab
from ..vectors.model import Model


def sentence_rows(source: Model, config, name: str) -> np.ndarray:
    """The rows of ``source`` a sentence part starts from (of a model with a word part, its sentence
    part's columns); ModelError unless they have ``config.dim`` columns."""
    lo, hi = source.parts["sentence"]
    if hi - lo != config.dim:
        what = " in their sentence part" if (lo, hi) != (0, source.dim) else ""
        raise ModelError(f"{name} has {hi - lo}-dimensional vectors{what} but --dim is {config.dim}; they must "
                         f"match (pass --dim {hi - lo})")
    return source.vectors if (lo, hi) == (0, source.dim) else source.vectors[:, lo:hi]


def pretrained_init(vocab: Vocab, source: Model, config, name: str = "the pretrained vectors") -> tuple[np.ndarray, dict]:
    """The starting matrix over ``vocab`` (float32, (len(vocab), config.dim)) and a JSON-ready summary.

    Rows of words in ``source`` are its :func:`sentence_rows` times ``config.init_std / rms`` (over those
    rows); the rest ``start.init_vectors``'s random rows.
    """
    from .start import init_vectors

    rows = sentence_rows(source, config, name)
    W = init_vectors(len(vocab), config)
    ours, theirs = shared_rows(vocab, source.vocab)
    if len(ours) == 0:
        raise ModelError(f"no word of the {len(vocab):,}-word vocabulary is in {name}; nothing to initialise "
                         "(are its words lowercase tokens like ours?)")
    P = np.asarray(rows[theirs], dtype=np.float64)
    if not np.isfinite(P).all():
        raise ModelError(f"{name} hold NaN or infinite values")
    rms = float(np.sqrt(np.mean(P * P)))
    if rms == 0:
        raise ModelError(f"the vectors of the shared words in {name} are all zero")
    scale = config.init_std / rms
    W[ours] = (P * scale).astype(np.float32)
    info = {"source": name, "rows_initialised": int(len(ours)), "rows": len(vocab),
            "scale": scale, "source_rms": rms}
    return W, info


def shared_rows(ours: Vocab, theirs: Vocab) -> tuple[np.ndarray, np.ndarray]:
    """Ids (int64) in ``ours`` and in ``theirs`` of the words both have, in our order."""
    a, b = [], []
    index = theirs.index
    for i, word in enumerate(ours.words):
        j = index.get(word)
        if j is not None:
            a.append(i)
            b.append(j)
    return np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)


def fit_linear_map(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, float]:
    """Least-squares ``M`` (float64, (p, q)) minimising ``|X @ M - Y|`` (X: (n, p), Y: (n, q), n >= p), and
    its R², ``1 - |X M - Y|² / |Y - mean(Y)|²`` (1: exact; 0: no better than the mean vector)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    M = np.linalg.lstsq(X, Y, rcond=None)[0]
    sse = float(np.sum((X @ M - Y) ** 2))
    sst = float(np.sum((Y - Y.mean(axis=0)) ** 2))
    return M, (1.0 - sse / sst) if sst > 0 else float("nan")


def _mean_cosine(A: np.ndarray, B: np.ndarray) -> float:
    na = np.linalg.norm(A, axis=1)
    nb = np.linalg.norm(B, axis=1)
    ok = (na > 0) & (nb > 0)
    if not ok.any():
        return float("nan")
    return float(np.mean((A[ok] * B[ok]).sum(axis=1) / (na[ok] * nb[ok])))


def _design(rows, intercept: bool) -> np.ndarray:
    """Source rows as float64, with a column of ones appended for an affine map."""
    X = np.asarray(rows, dtype=np.float64)
    return np.hstack([X, np.ones((len(X), 1))]) if intercept else X


HOLDOUT = 0.1  # the share of the shared words the map is measured on, held out of its fit


def expand_vocabulary(model: Model, source: Model, max_words: int = 0, intercept: bool = False,
                      source_name: str = "the source vectors") -> tuple[Model, dict]:
    """``model`` with mapped vectors added for the words of ``source`` it lacks, and a JSON-ready report.

    ``max_words`` > 0 adds only the first that many in the source's order; ``intercept`` fits an affine
    map ``x @ M + b``. The new model has our words first (ids unchanged), then the added ones (count 0).
    """
    ours, theirs = shared_rows(model.vocab, source.vocab)
    p = source.dim + intercept
    if len(ours) < p:
        raise ModelError(
            f"only {len(ours):,} words are shared by the model and {source_name}; fitting a map from "
            f"{source.dim} dimensions needs at least {p}")
    X = _design(source.vectors[theirs], intercept)
    Y = np.asarray(model.vectors[ours], dtype=np.float64)
    if not (np.isfinite(X).all() and np.isfinite(Y).all()):
        raise ModelError("the vectors of the shared words hold NaN or infinite values")

    # quality to expect of new words: fit without a held-out tenth, score on it
    n_hold = int(len(ours) * HOLDOUT)
    heldout_cos = None
    if n_hold > 0 and len(ours) - n_hold >= p:
        perm = np.random.default_rng(0).permutation(len(ours))
        hold, fit = perm[:n_hold], perm[n_hold:]
        M_fit, _ = fit_linear_map(X[fit], Y[fit])
        heldout_cos = _mean_cosine(X[hold] @ M_fit, Y[hold])
    else:
        n_hold = 0
    M, r2 = fit_linear_map(X, Y)

    known = model.vocab.index
    new_ids, skipped_token, skipped_max = [], 0, 0
    tokenize = tokenizer(model.tokenizer_version)[0]  # the model's own rule: a word no sentence of it looks up is left out
    for j, word in enumerate(source.vocab.words):
        if word in known:
            continue
        if tokenize(word) != [word]:
            skipped_token += 1
        elif max_words and len(new_ids) >= max_words:
            skipped_max += 1
        else:
            new_ids.append(j)
    new_ids = np.asarray(new_ids, dtype=np.int64)
    added = np.empty((len(new_ids), model.dim), dtype=np.float32)
    step = 65536  # bounds the float64 scratch
    for lo in range(0, len(new_ids), step):
        rows = _design(source.vectors[new_ids[lo : lo + step]], intercept)
        if not np.isfinite(rows).all():
            raise ModelError(f"{source_name} hold NaN or infinite values")
        added[lo : lo + step] = (rows @ M).astype(np.float32)

    words = model.vocab.words + [source.vocab.words[j] for j in new_ids.tolist()]
    counts = np.concatenate([model.vocab.counts, np.zeros(len(new_ids), dtype=np.int64)])
    vectors = np.concatenate([np.asarray(model.vectors, dtype=np.float32), added])
    report = {
        "source": source_name,
        "source_words": len(source),
        "source_dim": source.dim,
        "intercept": bool(intercept),
        "shared": int(len(ours)),
        "added": int(len(new_ids)),
        "skipped_not_token": skipped_token,
        "skipped_max_words": skipped_max,
        "r2": r2,
        "heldout_words": n_hold,
        "heldout_cosine": heldout_cos,
        "vocab_before": len(model),
        "vocab_after": len(words),
    }
    # the scores recorded of the model before (its learning curve, its benchmark) are not this one's
    info = {k: v for k, v in model.info.items() if k not in ("curve", "benchmark")}
    info["expansions"] = list(info.get("expansions", [])) + [report]
    return Model(Vocab(words, counts), vectors, model.config, info), report


# below this R2, expansion warns that the added vectors carry little
WEAK_FIT_R2 = 0.2


def pretrained_start(path, config, note=None):
    """``train --init-vectors PATH``: ``(init, record)``, ``(None, {})`` without a path.

    The vectors are read and checked at once, before the corpus; ``note(line)`` hears how many rows were
    initialised. ``record`` (what the model and checkpoints keep) holds ``source`` at once and the rest of
    :func:`pretrained_init`'s summary once ``init`` has run.
    """
    if path is None:
        return None, {}
    from ..vectors.formats import load_model

    source = load_model(path)
    sentence_rows(source, config, f"--init-vectors {path}")
    info: dict = {"source": str(path)}  # what a checkpoint compares on resume; the rest once init runs

    def init(vocab):
        W, summary = pretrained_init(vocab, source, config, name=str(path))
        info.update(summary)
        if note is not None:
            note(f"initialised {summary['rows_initialised']:,} of {plural(summary['rows'], 'row')} from {path} "
                 f"(scaled by {summary['scale']:.3g} to --init-std {config.init_std:g})")
        return W

    return init, info


def expand_model(model_path, source_path, output, max_words: int = 0, affine: bool = False) -> tuple[Model, dict]:
    """``scbow-numba expand``: :func:`expand_vocabulary` of the two files, saved at ``output``; ModelError,
    writing nothing, when the map cannot be fitted or its images are not usable."""
    import math
    from pathlib import Path

    from ..vectors.formats import check_vectors, load_model
    from ..vectors.modeldir import check_output_dir, save_model

    output = check_output_dir(output)
    model = load_model(model_path)
    if not Path(source_path).exists():
        raise ModelError(f"{source_path}: no such vectors file")
    vectors = load_model(source_path)
    with np.errstate(all="ignore"):  # an overflow is reported below, not as a numpy warning
        new, r = expand_vocabulary(model, vectors, max_words=max_words, intercept=affine, source_name=str(source_path))
    if not all(x is None or math.isfinite(x) for x in (r["r2"], r["heldout_cosine"])):
        raise ModelError("cannot fit a map: the model's vectors do not vary on the shared words (all "
                         "equal or zero), so there is nothing to map onto; nothing was written")
    try:
        check_vectors(output, np.asarray(new.vectors), len(new.vocab))
    except ModelError as exc:
        raise ModelError(f"the mapped --source vectors are not usable ({str(exc).split('damaged model: ')[-1]}); "
                         "nothing was written") from None
    save_model(new, output)
    return new, r


def expansion_lines(r: dict, dim: int, affine: bool, output) -> list[str]:
    """What ``expand`` says: the fit, the words added, and a warning for a weak fit."""
    held = "" if r["heldout_cosine"] is None else (
        f", mean cosine {r['heldout_cosine']:.3f} on {plural(r['heldout_words'], 'held-out word')}")
    lines = [f"fitted a {r['source_dim']} -> {dim} {'affine' if affine else 'linear'} map on "
             f"{plural(r['shared'], 'shared word')} (R2 {r['r2']:.3f}{held}); added {plural(r['added'], 'word')} "
             f"({r['vocab_before']:,} -> {r['vocab_after']:,}); left out {plural(r['skipped_not_token'], 'source word')} "
             f"that are not single lowercase tokens"
             + (f" and {r['skipped_max_words']:,} beyond --max-words" if r["skipped_max_words"] else "")
             + f"; model: {output}"]
    if r["r2"] < WEAK_FIT_R2:
        lines.append(f"warning: the map explains only {100 * r['r2']:.1f}% of the variance of our vectors: least "
                     "squares then predicts little more than their mean, so the added vectors are all close to it "
                     "and say little about their words (the --source space does not predict ours linearly)")
    return lines
