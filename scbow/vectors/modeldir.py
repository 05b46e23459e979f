"""The model directory: its files, and writing one atomically. No pickle anywhere.

A model directory holds:

- ``vectors.npy``: float32, shape (n_words, dim), memory-mappable, loaded with
  ``allow_pickle=False``;
- ``vocab.txt``: one ``word count`` line per row of the vectors, most frequent first;
- ``config.json``: ``format_version``, every hyperparameter (``config``), the corpus
  statistics (``corpus``) and the training summary (``training``);
- ``curve.json`` (only after ``train --eval-every``): the STS learning curve, loaded as
  ``model.info["curve"]`` (see :mod:`scbow.training.curve`).

Directories are written into a temporary sibling and put in place whole
(:func:`scbow.files.atomic_dir`), so a crash never leaves a half-written model where a
model is expected. A directory is a model when it holds the three model files
(:func:`output_kind`, what every command refuses to write into); an existing ``-o`` is
replaced only when it is a model and holds nothing else (:func:`is_model_dir`). Reading and
checking a model is :mod:`scbow.vectors.formats`; this module
imports neither it nor :mod:`scbow.vectors.model` (``Model.save`` calls :func:`save_model`).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Protocol

import numpy as np

from ..errors import ModelError
from ..files import atomic_dir, foreign, fsync_path, new_temporary, output_path
from ..outputs import refuse_inside_ours, register_kind
from ..reading import os_error_text, read_json


class SavedModel(Protocol):
    """What the writer reads of a model (a :class:`scbow.vectors.model.Model` has it); typed so,
    this module needs no import of the model API, which imports it to save itself."""

    vectors: np.ndarray
    vocab: object
    config: dict
    info: dict


FORMAT_VERSION = 1
MODEL_FILES = ("vectors.npy", "vocab.txt", "config.json")
# Written when the model has one: the STS learning curve of ``train --eval-every``
# (``model.info["curve"]``, see scbow.training.curve).
CURVE_FILE = "curve.json"
OPTIONAL_FILES = (CURVE_FILE,)


def default_model_dir() -> Path:
    """``$SCBOW_MODEL``, else ``$XDG_DATA_HOME/scbow-numba/model`` (~/.local/share/...)."""
    env = os.environ.get("SCBOW_MODEL")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "scbow-numba" / "model"


def holds_model_files(directory: Path) -> bool:
    """True when ``directory`` holds the three files of a model (what makes a directory a model)."""
    return all((Path(directory) / name).is_file() for name in MODEL_FILES)


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a model directory"`` when ``directory`` is one (:func:`scbow.outputs.kind_of`)."""
    return "a model directory" if holds_model_files(directory) else None


def is_model_dir(path: Path) -> bool:
    """True for a directory holding only model files, with a config.json of ours: a model
    ``save_model`` may replace (anything else in it would be a user's file)."""
    names = {p.name for p in Path(path).iterdir()}
    if not names <= set(MODEL_FILES + OPTIONAL_FILES) or "config.json" not in names:
        return False
    try:
        meta = read_json(path / "config.json")
    except ModelError:
        return False
    return isinstance(meta, dict) and isinstance(meta.get("format_version"), int)


def not_a_model(path: Path) -> str | None:
    """None when ``save_model`` may replace the directory ``path`` (:func:`is_model_dir`), else why not."""
    why = foreign(path, MODEL_FILES + OPTIONAL_FILES)
    return why if why is not None or is_model_dir(path) else "holds no model"


def check_output_dir(path: os.PathLike) -> Path:
    """Fail early (before training) if a model cannot be written at ``path``."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ModelError(f"{path}: exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not is_model_dir(path):
        raise ModelError(f"{path}: directory is not empty and holds no model; refusing to replace it")
    refuse_inside_ours(path)
    parent = output_path(path).parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"{parent}: cannot create directory: {exc.strerror}") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ModelError(f"{parent}: directory is not writable")
    try:  # os.access says yes to root even on a read-only file system: try it
        os.rmdir(new_temporary(path, directory=True))
    except OSError as exc:
        raise ModelError(f"{parent}: directory is not writable ({exc.strerror})") from None
    return path


def write_model_files(model: SavedModel, directory: Path, info: dict | None = None) -> str:
    """Write the three model files into the existing ``directory`` and fsync them; returns the
    new ``model_id`` recorded in its ``config.json``.

    ``info`` replaces ``model.info`` in ``config.json`` when given.
    """
    np.save(directory / "vectors.npy", np.ascontiguousarray(model.vectors, dtype=np.float32))
    model.vocab.save(directory / "vocab.txt")
    info = model.info if info is None else info
    meta = {
        "format_version": FORMAT_VERSION,
        "model_id": uuid.uuid4().hex,  # a new id for every model written (see model_id)
        "config": model.config,
        **{k: v for k, v in info.items() if k not in ("format_version", "model_id", "config", "curve")},
    }
    (directory / "config.json").write_text(json.dumps(meta, indent=1, sort_keys=False) + "\n")
    names = list(MODEL_FILES)
    if info.get("curve") is not None:
        (directory / CURVE_FILE).write_text(json.dumps(info["curve"], indent=1, allow_nan=False) + "\n")
        names.append(CURVE_FILE)
    for name in names:
        fsync_path(directory / name)
    return meta["model_id"]


def model_id(model) -> str | None:
    """The one identity of a model, which what is made with it (shards, an index) records and
    compares; None when ``model`` cannot be read.

    A model directory: the ``model_id`` its ``config.json`` records (a random id written by
    every save; a copy of the directory keeps it). A model saved before ids existed has
    ``"config-"`` and a digest of its ``config.json`` bytes (each save records the training's
    settings, summary and time, so two saves differ). A word2vec or GloVe file: ``"file-"``
    and a digest of its bytes.
    """
    import hashlib

    path = Path(model)
    try:
        if path.is_dir():
            config = (path / "config.json").read_bytes()
            try:
                recorded = json.loads(config).get("model_id")
            except (ValueError, AttributeError, RecursionError):
                recorded = None
            if isinstance(recorded, str) and recorded:
                return recorded
            return "config-" + hashlib.sha256(config).hexdigest()[:32]
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 22):
                digest.update(chunk)
        return "file-" + digest.hexdigest()[:32]
    except OSError:
        return None


def save_model(model: SavedModel, path: os.PathLike) -> Path:
    """Write ``model`` as a directory at ``path``, replacing any model there atomically, with a
    new ``model_id`` (:func:`model_id`; also set in ``model.info``).

    ModelError, writing nothing, for a model with a word ``scbow.load`` could not read back
    (``scbow.text.vocab.unsavable``: empty, a line break in it, a lone surrogate)."""
    try:
        model.vocab.check_savable()
    except ValueError as exc:
        raise ModelError(f"cannot save the model to {path}: its {exc}, so its vocab.txt ('word count' lines) "
                         "could not be read back; nothing was written") from None
    path = check_output_dir(path)
    try:
        with atomic_dir(path, same_kind=not_a_model) as tmp:
            written = write_model_files(model, tmp)
    except OSError as exc:
        raise ModelError(f"cannot write model to {path}: {os_error_text(exc)}") from None
    model.info["model_id"] = written  # the model in memory is now the one saved there
    return path
