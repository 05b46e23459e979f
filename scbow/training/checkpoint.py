"""Training checkpoints: the raw matrix and the run's position, written atomically.

The checkpoint of a run that trains into ``MODEL`` is the directory ``MODEL.checkpoint``
beside it. It is a model directory (``vectors.npy``, ``vocab.txt``, ``config.json``, so
``scbow.load`` reads it) plus ``state.json``:

- ``vectors.npy`` holds the matrix *as the trainer holds it*: common-component removal
  happens only once training ends, so a resumed run applies it to the same matrix an
  uninterrupted one would;
- ``word_in.npy`` and ``word_out.npy`` (only once the word part has begun, ``word_passes`` > 0)
  hold the word part's matrices (``scbow.training.wordpart``); ``vectors.npy`` then holds the
  finished sentence part, and the state's ``word_done`` says how far the word part is;
- ``state.json`` holds the :class:`~scbow.training.hooks.TrainState` (epoch, position in the
  epoch's shuffled targets, examples done, losses), the configuration, the identity
  of the encoded corpus (its files, sizes, and a hash of its vocabulary), so that a
  resume on another corpus or with other hyperparameters is refused with a clear error,
  what ``--init-vectors`` the run started from (its resolved path and the record the model
  keeps in ``config.json``; null without one), so that a resume with other vectors is refused too,
  and the ``model_id`` of the model files beside it (:func:`scbow.vectors.modeldir.model_id`),
  so that a state is resumed only with the matrix it was written with.

A checkpoint is written into a temporary sibling directory, flushed to disk and put in
place whole (:func:`scbow.files.atomic_dir`), so the previous checkpoint stays valid until
the new one is complete, and a process killed at any moment never leaves a mix. A
directory is a checkpoint when it holds ``vectors.npy`` and ``state.json``
(:func:`output_kind`); one holding anything but a checkpoint's files is never replaced.

With one thread, a run resumed from a checkpoint is bit-identical to an uninterrupted
one: the shuffle of epoch e and the kernel's random stream depend only on the seed, the
epoch and the number of examples done, and the learning rate on the examples done.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import TrainConfig, show_value
from ..errors import CheckpointError, diverged
from ..files import atomic_dir, foreign, fsync_path, resolved
from ..outputs import register_kind
from ..reading import read_json
from ..text.units import MAX_EXAMPLES, parse_count, parse_duration
from ..vectors.modeldir import MODEL_FILES, OPTIONAL_FILES  # (imported first: a checkpoint is a model plus its state)

CHECKPOINT_VERSION = 1
STATE_FILE = "state.json"
WORD_FILES = ("word_in.npy", "word_out.npy")  # the word part's matrices, once it has begun
# Settings a resumed run may change: they decide how fast it runs, not what it computes.
# (With another thread count the run is no longer bit-identical, as with any threads > 1.)
FREE_ON_RESUME = ("threads", "device")


def checkpoint_files() -> tuple:
    """Every name a checkpoint's files may have: what :class:`CheckpointWriter` writes, and all a
    finished run removes (``scbow.training.session.remove_checkpoint``)."""
    return (*MODEL_FILES, *OPTIONAL_FILES, STATE_FILE, *WORD_FILES)


def is_checkpoint(directory: Path) -> bool:
    """What makes a directory a checkpoint: ``vectors.npy`` and ``state.json`` in it."""
    directory = Path(directory)
    return (directory / "vectors.npy").is_file() and (directory / STATE_FILE).is_file()


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a training checkpoint"`` when ``directory`` is one (:func:`scbow.outputs.kind_of`)."""
    return "a training checkpoint" if is_checkpoint(directory) else None


def not_a_checkpoint(path: Path) -> str | None:
    """Why what is at ``path``, where a run's checkpoint goes, is a user's and not a checkpoint (a file,
    a link to nothing, a folder of other files), or None (nothing there, or a checkpoint: one holding
    a user's file too, which a resume keeps)."""
    if not os.path.lexists(path):
        return None
    if not path.exists():
        return "is a link to nothing"
    if not path.is_dir():
        return "is a file, not a checkpoint of ours"
    return None if (path / STATE_FILE).is_file() else only_checkpoint_files(path)


def only_checkpoint_files(directory: Path) -> str | None:
    """None when a new checkpoint may replace ``directory`` (nothing in it but a checkpoint's own
    names), else why not."""
    return foreign(directory, checkpoint_files())


def checkpoint_dir(output: Path) -> Path:
    """Where the checkpoint of a run into ``output`` lives: ``OUTPUT.checkpoint`` beside the output as
    it is written, its links resolved (``-o LINK`` and ``-o TARGET`` have one checkpoint). A checkpoint
    at ``LINK.checkpoint``, written before links were resolved, with none beside the target, is still it."""
    given = Path(output)
    target = Path(resolved(given))
    ckpt = target.with_name(target.name + ".checkpoint")
    earlier = given.with_name(given.name + ".checkpoint")
    return earlier if given.name and not os.path.lexists(ckpt) and (earlier / STATE_FILE).is_file() else ckpt


# ---------------------------------------------------------------------------------------
# --checkpoint-every


@dataclass(frozen=True)
class Every:
    """Checkpoint every ``examples`` training examples, or every ``seconds`` seconds."""

    examples: int | None = None
    seconds: float | None = None

    def __str__(self) -> str:
        return f"{self.examples:,} examples" if self.examples else f"{self.seconds:g} s"


def parse_every(value) -> Every:
    """A count of examples (``500000``, ``500_000``, ``500k``, ``2M``, ``1e6``) or a duration
    (``30s``, ``10m``, ``1.5h``), as ``scbow.text.units`` reads them.

    Here a lowercase ``m`` is minutes (``10m``: ten minutes) and an uppercase ``M`` a million
    (``2M``: two million examples); ``--eval-every``, which takes no durations, reads both as
    a million. Checkpoints are taken between kernel calls, so they land on the first batch
    boundary (every 32,768 examples) at or after the requested point.
    """
    if isinstance(value, Every):
        return value
    text = str(value)  # a bool is never a count
    if not isinstance(value, bool):
        try:
            return Every(examples=parse_count(text, suffixes=False))
        except ValueError:
            pass
        if not text.strip().endswith("m"):  # 10m is ten minutes, 10M ten million examples
            try:
                return Every(examples=parse_count(text))
            except ValueError:
                pass
        if not text.strip().endswith("M"):  # an uppercase M is never minutes
            try:
                return Every(seconds=parse_duration(text))
            except ValueError:
                pass
    raise ValueError(
        f"--checkpoint-every takes a number of examples (500000, 500k, 2M, 1e6) or a duration (30s, 10m, 2h; a "
        f"lowercase m is minutes, an uppercase M a million) up to {MAX_EXAMPLES:.0e} examples or a year, "
        f"got {text[:40]!r}")


# ---------------------------------------------------------------------------------------
# What a checkpoint records


def vocab_digest(words) -> str:
    h = hashlib.sha256()
    for w in words:
        h.update(w.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


def corpus_identity(corpus) -> dict:
    """What makes two encoded corpora the same for training: sizes, vocabulary, and the digest of
    the token stream (:attr:`~scbow.training.corpus.Corpus.stream_sha256`, computed once a corpus)."""
    stats = corpus.stats or {}
    return {
        "files": list(stats.get("files", [])),
        "sentences": int(corpus.n_sentences),
        "documents": int(corpus.n_documents),
        "tokens": int(len(corpus.tokens)),
        "vocab_size": len(corpus.vocab),
        "vocab_sha256": vocab_digest(corpus.vocab.words),
        "stream_sha256": corpus.stream_sha256,
    }


# Settings added after checkpoints were first written, with the value a checkpoint written
# before them trained with: such a checkpoint resumes only with these values.
BEFORE_THEY_EXISTED = {"frequency_weight": 0.0, "count_power": 0.0, "unknown": "omit", "unknown_scale": 0.75,
                       "word_passes": 0}


def init_vectors_entry(record: dict | None) -> dict | None:
    """What a checkpoint records of the run's ``--init-vectors`` (``record``: the dict
    :func:`scbow.training.pretrained.pretrained_start` fills in, holding ``source``): the
    vectors' resolved path, which a resume compares, and the record, which the model keeps."""
    if not record:
        return None
    return {"path": resolved(Path(record["source"])), "record": dict(record)}


def _init_vectors_difference(meta: dict, record: dict | None) -> list[str]:
    if "init_vectors" not in meta:  # a checkpoint written before it recorded them: not known
        return []
    was = (meta["init_vectors"] or {}).get("path")
    now = (init_vectors_entry(record) or {}).get("path")
    return [] if was == now else [f"--init-vectors was {was or 'not given'}, now {now or 'not given'}"]


def _config_differences(saved: dict, config: TrainConfig) -> list[str]:
    now = config.to_dict()
    out = []
    for key, value in now.items():
        if key in FREE_ON_RESUME:
            continue
        if key in saved:
            was, note = saved[key], ""
        elif key in BEFORE_THEY_EXISTED:
            was, note = BEFORE_THEY_EXISTED[key], " (the checkpoint predates the setting)"
        else:
            continue
        if was != value:
            out.append(f"--{key.replace('_', '-')} was {show_value(was)}{note}, now {show_value(value)}")
    return out


# ---------------------------------------------------------------------------------------
# Writing and reading


class CheckpointWriter:
    """Writes the checkpoints of one run into ``path`` (replacing the previous one)."""

    def __init__(self, path: Path, corpus, config: TrainConfig, init_vectors: dict | None = None):
        self.path = Path(path)
        self.corpus = corpus
        self.config = config
        self.init_vectors = init_vectors  # the --init-vectors record (filled in once training starts)
        self.identity: dict | None = None  # corpus_identity, made at the first checkpoint
        self.last_done: int | None = None  # examples done at the last checkpoint written
        self.last_at: str | None = None  # where it is, for messages ("4,984 examples", "9,968 sentences ...")

    def write(self, state, W: np.ndarray, word: tuple | None = None, info: dict | None = None) -> Path:
        """Write a checkpoint of ``state`` with the matrix ``W`` (raises OSError on failure).

        ``word``: the word part's ``(Wi, Wo)`` once it has begun; ``info``:
        more of the model's info to save with it (the learning curve so far, as ``curve.json``). Refuses
        (TrainingError) a matrix holding NaN or inf: the last good checkpoint is worth more
        than a poisoned one.
        """
        from ..vectors.model import Model
        from ..vectors.modeldir import write_model_files

        extra = list(zip(WORD_FILES, word)) if word else []
        if not np.isfinite(W).all() or not all(np.isfinite(M).all() for _, M in extra):
            raise diverged(self.config.lr, f"the embeddings hold NaN or inf after {state.done:,} examples")
        # a user's file put in the checkpoint stops its replacement (a warning), never goes with it
        with atomic_dir(self.path, same_kind=only_checkpoint_files) as tmp:
            for name, M in extra:
                np.save(tmp / name, np.ascontiguousarray(M, dtype=np.float32))
                fsync_path(tmp / name)
            # a loadable model of the sentence part as trained (the word part's matrices beside it)
            model = Model(self.corpus.vocab, W, {**self.config.to_dict(), "word_passes": 0})
            info = {
                **(info or {}),
                "corpus": dict(self.corpus.stats or {}),
                "training": {"checkpoint": True, "raw_vectors": True, "examples": state.done,
                             "of_examples": state.total},
            }
            written = write_model_files(model, tmp, info)
            if self.identity is None:
                self.identity = corpus_identity(self.corpus)
            meta = {
                "checkpoint_version": CHECKPOINT_VERSION,
                "model_id": written,  # the model files beside it: a state is read only with its own
                "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "state": state.to_dict(),
                "config": self.config.to_dict(),
                "corpus": self.identity,
                "init_vectors": init_vectors_entry(self.init_vectors),
            }
            if word:  # the word part's matrices, tied to this state as model_id ties vectors.npy
                meta["word_sha256"] = [matrix_digest(M) for M in word]
            with open(tmp / STATE_FILE, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(meta, indent=1) + "\n")
            fsync_path(tmp / STATE_FILE)
        self.mark(state)
        return self.path

    def mark(self, state) -> None:
        """Record ``state`` as the last checkpoint's (written, or the one a run resumed from)."""
        self.last_done = state.done
        self.last_at = (f"{state.word_done:,} sentences into the word part" if state.in_word_part
                        else f"{state.done:,} examples")


def read_meta(path: Path) -> dict:
    """The ``state.json`` of the checkpoint at ``path``, checked for shape."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no checkpoint to resume from")
    if not (path / STATE_FILE).is_file():
        raise CheckpointError(f"{path}: damaged checkpoint (no {STATE_FILE}); delete it to start over")
    try:
        meta = read_json(path / STATE_FILE, CheckpointError, what="damaged checkpoint")
    except CheckpointError as exc:
        raise CheckpointError(f"{exc}; delete it to start over") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("checkpoint_version"), int):
        raise CheckpointError(f"{path / STATE_FILE}: not a checkpoint of scbow-numba; delete it to start over")
    if meta["checkpoint_version"] > CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format {meta['checkpoint_version']} is newer than this "
                              f"scbow-numba understands ({CHECKPOINT_VERSION}); upgrade scbow-numba")
    for key, kind in (("state", dict), ("config", dict), ("corpus", dict)):
        if not isinstance(meta.get(key), kind):
            raise CheckpointError(f"{path / STATE_FILE}: damaged checkpoint (no {key}); delete it to start over")
    init = meta.get("init_vectors")
    if init is not None and not (isinstance(init, dict) and isinstance(init.get("path"), str)
                                 and isinstance(init.get("record"), dict)):
        raise CheckpointError(f"{path / STATE_FILE}: damaged checkpoint (init_vectors); delete it to start over")
    return meta


def describe(meta: dict) -> str:
    """``"123,456 of 1,000,000 examples"`` for a checkpoint's state."""
    state = meta.get("state", {})
    try:
        if int(state.get("word_done", 0)) > 0:
            return f"{int(state['word_done']):,} of {int(state['word_total']):,} sentences of the word part"
        return f"{int(state['done']):,} of {int(state['total']):,} examples"
    except (AttributeError, KeyError, TypeError, ValueError):
        return "unknown progress"


def check_config(meta: dict, config: TrainConfig, path: Path, init_vectors: dict | None = None) -> None:
    """Refuse to resume with hyperparameters that change what is computed, or from other
    ``--init-vectors`` (``init_vectors``: this run's record, see :func:`init_vectors_entry`)."""
    diffs = _config_differences(meta["config"], config) + _init_vectors_difference(meta, init_vectors)
    if diffs:
        raise CheckpointError(
            f"cannot resume from {path}: {'; '.join(diffs)}; run with the settings of the interrupted "
            "run, or delete the checkpoint to start over"
        )


def _restore_matrix(file: Path, shape: tuple, what: str) -> np.ndarray:
    """A finite float32 matrix of ``shape`` saved in a checkpoint, or CheckpointError."""
    if not file.is_file() or file.is_symlink():
        raise CheckpointError(f"{file.parent}: damaged checkpoint (no {file.name}, {what}); delete it to start over")
    try:
        M = np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise CheckpointError(f"{file}: damaged checkpoint ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
                              "delete it to start over") from None
    if M.dtype != np.float32 or M.shape != shape or not np.isfinite(M).all():
        raise CheckpointError(f"{file}: damaged checkpoint (not a finite float32 matrix of {shape[0]:,} x "
                              f"{shape[1]}); delete it to start over")
    return np.array(M)


def matrix_digest(M: np.ndarray) -> str:
    """sha256 of a matrix's float32 values in C order."""
    return hashlib.sha256(np.ascontiguousarray(M, dtype=np.float32).data).hexdigest()


def restore_word_part(path: Path, meta: dict, corpus, config: TrainConfig, state) -> tuple | None:
    """The word part's ``(Wi, Wo)`` saved in the checkpoint at ``path``, checked against the digests its
    ``state.json`` (``meta``) recorded; None before the word part began."""
    if not state.in_word_part:
        return None
    V, dw = len(corpus.vocab), config.word_dim
    matrices = (_restore_matrix(Path(path) / WORD_FILES[0], (V, dw), "the word part's rows"),
                _restore_matrix(Path(path) / WORD_FILES[1], (V, dw + 1), "the word part's output rows"))
    recorded = meta.get("word_sha256")  # none in a checkpoint from before they were recorded
    if recorded is not None:
        if not (isinstance(recorded, list) and len(recorded) == 2):
            raise CheckpointError(f"{Path(path) / STATE_FILE}: damaged checkpoint (word_sha256); delete it to start over")
        for name, M, digest in zip(WORD_FILES, matrices, recorded):
            if matrix_digest(M) != digest:
                raise CheckpointError(f"{Path(path) / name}: damaged checkpoint (not the word part its {STATE_FILE} "
                                      "recorded: from another run, or changed); delete it to start over")
    return matrices


def restore(path: Path, meta: dict, corpus, config: TrainConfig, init_vectors: dict | None = None):
    """Check the checkpoint against ``corpus``, ``config`` and ``init_vectors`` (:func:`check_config`);
    return ``(W, TrainState)``."""
    from ..vectors.formats import load_model
    from .hooks import TrainState
    from .start import trainable_targets

    path = Path(path)
    check_config(meta, config, path, init_vectors)
    saved, now = meta["corpus"], corpus_identity(corpus)
    keys = ("sentences", "documents", "tokens", "vocab_size", "vocab_sha256")
    if any(saved.get(k) != now[k] for k in keys):
        raise CheckpointError(
            f"cannot resume from {path}: it was trained on another corpus ({saved.get('sentences')} sentences, "
            f"{saved.get('vocab_size')} words, from {', '.join(map(str, saved.get('files', []))) or '?'}); "
            f"this one has {now['sentences']} sentences and {now['vocab_size']} words"
        )
    if "stream_sha256" in saved and saved["stream_sha256"] != now["stream_sha256"]:  # none before it was recorded
        raise CheckpointError(
            f"cannot resume from {path}: it was trained on another corpus, of the same sizes and words (its "
            "sentences or documents are in another order, or its text changed)")
    try:
        model = load_model(path, mmap=False)
    except CheckpointError:
        raise
    except ValueError as exc:  # ModelError
        raise CheckpointError(f"damaged checkpoint: {exc}; delete {path} to start over") from None
    W = np.asarray(model.vectors)
    recorded = meta.get("model_id")  # none in a checkpoint written before model ids
    if recorded is not None and recorded != model.info.get("model_id"):
        raise CheckpointError(f"{path}: damaged checkpoint (its {STATE_FILE} is not that of the model files beside it); "
                              "delete it to start over")
    if vocab_digest(model.vocab.words) != now["vocab_sha256"] or W.shape != (len(corpus.vocab), config.dim):
        raise CheckpointError(f"{path}: damaged checkpoint (its vectors or vocabulary do not match its state); "
                              "delete it to start over")
    try:
        state = TrainState.from_dict(meta["state"])
        n_targets = len(trainable_targets(corpus))
        ok = (state.targets_per_epoch == n_targets and state.total == n_targets * config.epochs
              and 0 <= state.epoch <= config.epochs and 0 <= state.lo <= n_targets
              and state.done == state.epoch * n_targets + state.lo
              and all(isinstance(x, int) and not isinstance(x, bool)
                      for x in (state.epoch, state.lo, state.done, state.total, state.targets_per_epoch,
                                state.word_done, state.word_total))
              # the word part begins once the sentence part is done, and is of this run's size
              and (state.word_done == 0 or (state.epoch == config.epochs and state.lo == 0))
              and (state.word_done == 0 or state.word_total == config.word_passes * corpus.n_sentences)
              and 0 <= state.word_done <= max(state.word_total, 0)
              and isinstance(state.word_seconds, (int, float)) and 0 <= state.word_seconds <= 1e10
              # the word part's sample loss at its start and after each pass done (none in a checkpoint
              # from before it was recorded)
              and isinstance(state.word_losses, list)
              and (not state.word_losses or len(state.word_losses) == 1 + state.word_done // max(corpus.n_sentences, 1))
              and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1e3
                      for x in state.word_losses)
              and isinstance(state.kernel_seconds, (int, float)) and math.isfinite(state.kernel_seconds)
              and 0 <= state.kernel_seconds <= 1e10
              and isinstance(state.losses, list)
              # one mean loss per batch done (a batch holds at least one example), each >= 0
              and (len(state.losses) > 0) == (state.done > 0) and len(state.losses) <= state.done
              # a mean cross-entropy over a handful of cosines lies far below 1e3
              and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1e3
                      for x in state.losses))
    except (KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise CheckpointError(f"{path / STATE_FILE}: damaged checkpoint (inconsistent training state); "
                              "delete it to start over")
    return W, state
