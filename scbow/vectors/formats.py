"""A model from any of its formats, checked: :func:`load_model` reads a model directory
(:mod:`scbow.vectors.modeldir`) or a word2vec or GloVe file (:mod:`scbow.vectors.word2vec`),
and every matrix read passes :func:`check_vectors` before it is used. No pickle.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

from ..config import INT_MAX, TrainConfig
from ..errors import ConfigError, ModelError
from ..progress import plural
from ..reading import short_message
from .model import Model
from .modeldir import read_model_dir, there
from .word2vec import read_word2vec


def load_model(path: os.PathLike, mmap: bool = True) -> Model:
    """Read a model directory (its rows memory-mapped read-only, or with ``mmap=False`` read into
    memory), or a word2vec or GloVe file."""
    path = Path(path)
    if not there(path):
        raise ModelError(f"{path}: no such model (train one with 'scbow-numba train')")
    try:
        mode = os.stat(path).st_mode  # one look
    except OSError:  # a save replacing the directory leaves none there for a moment
        mode = stat.S_IFDIR
    if stat.S_ISREG(mode):
        return load_word2vec(path)
    if not stat.S_ISDIR(mode):  # a pipe or a device: never opened (it would block, or never end)
        raise ModelError(f"{path}: not a regular file (a pipe or a device); a model is a directory or a vectors file")
    vocab, vectors, config, info = read_model_dir(path)
    check_vectors(path, vectors, len(vocab), config)
    model = Model(vocab, vectors if mmap else np.array(vectors), config, info)
    if mmap:  # read-only rows mapped from the files: the model is what the directory holds
        model.source_dir = Path(os.path.abspath(path))
    return model


def load_word2vec(path: os.PathLike) -> Model:
    """Read a word2vec text or binary file, or GloVe text, as a :class:`Model` (:func:`read_word2vec`)."""
    vocab, vectors, fmt = read_word2vec(Path(path))
    check_vectors(path, vectors, len(vocab))
    return Model(vocab, vectors, {}, {"source": str(path), "format": fmt})


def check_vectors(where, vectors: np.ndarray, n_words: int, config: dict | None = None) -> None:
    """ModelError unless ``vectors`` is a healthy (n_words, dim) float32 matrix agreeing with ``config``:
    damaged numbers are refused when a model is read, not printed later as results."""
    if vectors.dtype != np.float32 or vectors.ndim != 2:
        raise ModelError(f"{where}: damaged model: expected a 2-d float32 matrix, got {vectors.dtype} "
                         f"{vectors.shape}")
    rows, dim = vectors.shape
    if rows == 0:  # every score would come from hashed vectors alone
        raise ModelError(f"{where}: damaged model: it has no words")
    if rows != n_words:
        raise ModelError(f"{where}: damaged model: the vocabulary has {plural(n_words, 'word')} but the vectors "
                         f"have {plural(rows, 'row')}")
    if not 1 <= dim <= INT_MAX["dim"]:
        raise ModelError(f"{where}: damaged model: vectors of {plural(dim, 'dimension')} (1 to {INT_MAX['dim']:,} "
                         "are possible)")
    if config is not None:
        check_config(where, config, dim)
    bad, largest = scan_values(vectors)
    if bad is not None:
        raise ModelError(f"{where}: damaged model: the vectors hold NaN or inf (row {bad + 1:,} of {rows:,} "
                         "is the first)")
    if largest > MAX_VALUE:
        raise ModelError(f"{where}: damaged model: a vector value of {largest:.3g} is too large to average and "
                         f"compare in float32 (at most {MAX_VALUE:g})")
    if largest < MIN_LARGEST:
        raise ModelError(f"{where}: damaged model: every vector is zero or nearly so (largest value "
                         f"{largest:.3g}); its cosines would be meaningless")


# squared norms of 100,000 float32 values this size stay finite; below MIN_LARGEST no direction is left
MAX_VALUE = 1e15
MIN_LARGEST = 1e-15


def scan_values(vectors: np.ndarray, block: int = 1 << 14) -> tuple[int | None, float]:
    """``(first row with a NaN or inf, or None; the largest absolute value)`` in one pass of row blocks:
    ``max`` and ``min`` propagate NaN and reach +-inf, so no boolean temporary is needed."""
    largest = 0.0
    for lo in range(0, vectors.shape[0], block):
        chunk = np.asarray(vectors[lo : lo + block])
        if not chunk.size:
            continue
        high, low = float(chunk.max()), float(chunk.min())
        if not (np.isfinite(high) and np.isfinite(low)):
            return lo + int(np.flatnonzero(~np.isfinite(chunk).all(axis=1))[0]), largest
        largest = max(largest, high, -low)
    return None, largest


def check_config(where, config, dim: int) -> None:
    """ModelError unless a recorded ``config`` is a dict of valid settings for ``dim`` (unknown ones ignored)."""
    if not isinstance(config, dict):
        raise ModelError(f"{where}: damaged model: config.json's config is not an object")
    try:
        TrainConfig.from_dict(config)
    except ConfigError as exc:
        raise ModelError(f"{where}: damaged model: config.json records {exc}") from None
    except TypeError as exc:  # not a settings mapping at all
        raise ModelError(f"{where}: damaged model: config.json's config is malformed ({short_message(exc)})") from None
    if "dim" in config:
        # a model with a word part has dim + word_dim columns (a model from before it records neither)
        word = config.get("word_dim", 0) if config.get("word_passes", 0) > 0 else 0
        if config["dim"] + word != dim:
            recorded = f"dim {config['dim']}" + (f" and word_dim {word}" if word else "")
            raise ModelError(f"{where}: damaged model: config.json records {recorded} but the vectors "
                             f"have {dim} dimensions")
