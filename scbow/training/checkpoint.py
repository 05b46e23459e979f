"""Training checkpoints: the raw matrices and the run's position, written atomically.

``MODEL.checkpoint`` beside the output is a loadable model directory plus ``state.json``:

- the run's matrices (:data:`MATRIX_FILES`) *as the trainer holds them*: ``vectors.npy`` before
  common-component removal (so a resumed run post-processes the matrix an uninterrupted one
  would), and once the word part has begun ``word_in.npy`` and ``word_out.npy``;
- ``state.json``: the :class:`~scbow.training.hooks.TrainState`, each matrix's digest, the config,
  and the corpus's identity, so that a resume with anything else is refused in one line.

It is put in place whole (:func:`scbow.files.atomic_dir`). With one thread a resumed run is
bit-identical to an uninterrupted one: shuffles, random streams and the learning rate depend only
on the seed, the epoch and the examples done.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import TrainConfig, show_value
from ..errors import CheckpointError, ConfigError, diverged
from ..files import atomic_dir, foreign, fsync_path, resolved
from ..outputs import register_kind
from ..reading import read_json
from ..text.reader import DEFAULT_ENCODING, encoding_name
from ..text.units import MAX_EXAMPLES, parse_count, parse_duration
from ..vectors.formats import scan_values
from ..vectors.model import Model
from ..vectors.modeldir import MODEL_FILES, OPTIONAL_FILES, write_model_files
from .hooks import TrainState
from .start import trainable_targets

# 2: the state of phases and the {name: matrix} record (checkpoints of format 1 are refused)
CHECKPOINT_VERSION = 2
STATE_FILE = "state.json"
MATRIX_FILES = {"sentence": "vectors.npy", "word_in": "word_in.npy", "word_out": "word_out.npy"}
# every name a checkpoint's files may have (what a finished run removes)
CHECKPOINT_FILES = (*MODEL_FILES, *OPTIONAL_FILES, STATE_FILE, *MATRIX_FILES.values())
# Settings a resumed run may change: how fast it runs, not what it computes (threads > 1 is never bit-identical).
FREE_ON_RESUME = ("threads", "device")


def is_checkpoint(directory: Path) -> bool:
    """What makes a directory a checkpoint: ``vectors.npy`` and ``state.json`` in it."""
    directory = Path(directory)
    return (directory / "vectors.npy").is_file() and (directory / STATE_FILE).is_file()


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a training checkpoint"`` when ``directory`` is one (:func:`scbow.outputs.kind_of`)."""
    return "a training checkpoint" if is_checkpoint(directory) else None


def not_a_checkpoint(path: Path) -> str | None:
    """Why what is at ``path`` (where a checkpoint goes) is not a checkpoint but a user's: a file, a dangling
    link, a folder of other files; None when nothing or a checkpoint is there."""
    if not os.path.lexists(path):
        return None
    if not path.exists():
        return "is a link to nothing"
    if not path.is_dir():
        return "is a file, not a checkpoint of ours"
    return None if (path / STATE_FILE).is_file() else foreign(path, CHECKPOINT_FILES)


def checkpoint_dir(output: Path) -> Path:
    """``OUTPUT.checkpoint`` beside the output, its links resolved (``-o LINK`` and ``-o TARGET``: one)."""
    target = Path(resolved(Path(output)))
    return target.with_name(target.name + ".checkpoint")


# -- --checkpoint-every -----------------------------------------------------------------


@dataclass(frozen=True)
class Every:
    """Checkpoint every ``examples`` training examples, or every ``seconds`` seconds."""

    examples: int | None = None
    seconds: float | None = None


def parse_every(value) -> Every:
    """A count of examples (``500000``, ``500k``, ``2M``, ``1e6``) or a duration (``30s``, ``10m``, ``1.5h``),
    as ``scbow.text.units`` reads them; a lowercase ``m`` is minutes, an uppercase ``M`` a million.

    Checkpoints land on the first batch boundary at or after the requested point. Anything else: ConfigError.
    """
    text = str(value)
    if not isinstance(value, bool):  # a bool is never a count
        with contextlib.suppress(ValueError):
            return Every(examples=parse_count(text, suffixes=False))
        if not text.strip().endswith("m"):  # 10m is ten minutes, 10M ten million examples
            with contextlib.suppress(ValueError):
                return Every(examples=parse_count(text))
        if not text.strip().endswith("M"):  # an uppercase M is never minutes
            with contextlib.suppress(ValueError):
                return Every(seconds=parse_duration(text))
    raise ConfigError(
        f"--checkpoint-every takes a number of examples (500000, 500k, 2M, 1e6) or a duration (30s, 10m, 2h; a "
        f"lowercase m is minutes, an uppercase M a million) up to {MAX_EXAMPLES:.0e} examples or a year, "
        f"got {text[:40]!r}")


# -- what a checkpoint records -----------------------------------------------------------


def corpus_identity(corpus) -> dict:
    """What makes two encoded corpora the same for training: sizes, vocabulary, the stream's digest."""
    stats = corpus.stats
    words = "".join(f"{w}\n" for w in corpus.vocab.words).encode("utf-8", "surrogatepass")  # a word a line
    return {
        "files": list(stats.get("files", [])),
        "sentences": int(corpus.n_sentences),
        "documents": int(corpus.n_documents),
        "tokens": int(len(corpus.tokens)),
        "vocab_size": len(corpus.vocab),
        "vocab_sha256": hashlib.sha256(words).hexdigest(),
        "stream_sha256": corpus.stream_sha256,
        "encoding": stats.get("encoding", DEFAULT_ENCODING),  # for the message when another --encoding reads another text
    }


# -- writing and reading -----------------------------------------------------------------


class CheckpointWriter:
    """Writes the checkpoints of one run into ``path`` (replacing the previous one)."""

    def __init__(self, path: Path, corpus, config: TrainConfig):
        self.path = Path(path)
        self.corpus = corpus
        self.config = config
        self.identity: dict | None = None  # corpus_identity, made at the first checkpoint
        self.last_at: str | None = None  # where the last checkpoint is, for messages; None before one

    def write(self, state, matrices: dict, info: dict | None = None) -> None:
        """Write a checkpoint of ``state`` and ``matrices`` by name, with more model ``info`` (the curve so
        far); OSError on failure, TrainingError for NaN or inf (the last good checkpoint is kept)."""
        if not all(np.isfinite(M).all() for M in matrices.values()):
            raise diverged(self.config.lr, f"the embeddings hold NaN or inf after {state.where()}")
        # a user's file put in the checkpoint stops its replacement (a warning), never goes with it
        with atomic_dir(self.path, same_kind=lambda d: foreign(d, CHECKPOINT_FILES)) as tmp:
            for name, M in matrices.items():
                if name != "sentence":
                    np.save(tmp / MATRIX_FILES[name], np.ascontiguousarray(M, dtype=np.float32))
                    fsync_path(tmp / MATRIX_FILES[name])
            # a loadable model of the sentence part as trained (the word part's matrices beside it)
            model = Model(self.corpus.vocab, matrices["sentence"], {**self.config.to_dict(), "word_passes": 0})
            write_model_files(model, tmp, {**(info or {}), "corpus": dict(self.corpus.stats),
                                           "training": {"checkpoint": True, "raw_vectors": True,
                                                        "examples": state.done}})
            if self.identity is None:
                self.identity = corpus_identity(self.corpus)
            meta = {
                "checkpoint_version": CHECKPOINT_VERSION,
                "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "state": state.to_dict(),
                # each matrix's digest: a state is resumed only with the matrices it was written with
                "matrices": {name: matrix_digest(M) for name, M in matrices.items()},
                "config": self.config.to_dict(),
                "corpus": self.identity,
            }
            with open(tmp / STATE_FILE, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(meta, indent=1) + "\n")
            fsync_path(tmp / STATE_FILE)
        self.mark(state)

    def mark(self, state) -> None:
        """Record ``state`` as the last checkpoint's (written, or the one a run resumed from)."""
        self.last_at = (f"{state.done:,} examples" if state.phase == "sentence"
                        else f"{state[state.phase].done:,} sentences into the {state.phase} part")


def damaged(where: Path, why: str) -> CheckpointError:
    """The one line of a damaged checkpoint, or file ``where`` of one."""
    return CheckpointError(f"{where}: damaged checkpoint ({why}); delete it to start over")


def read_meta(path: Path) -> dict:
    """The ``state.json`` of the checkpoint at ``path``, checked for shape."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no checkpoint to resume from")
    if not (path / STATE_FILE).is_file():
        raise damaged(path, f"no {STATE_FILE}")
    try:
        meta = read_json(path / STATE_FILE, CheckpointError, what="damaged checkpoint")
    except CheckpointError as exc:
        raise CheckpointError(f"{exc}; delete it to start over") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("checkpoint_version"), int):
        raise CheckpointError(f"{path / STATE_FILE}: not a checkpoint of scbow-numba; delete it to start over")
    if meta["checkpoint_version"] != CHECKPOINT_VERSION:
        age = "newer" if meta["checkpoint_version"] > CHECKPOINT_VERSION else "older"
        raise CheckpointError(f"{path}: checkpoint format {meta['checkpoint_version']} is {age} than this "
                              f"scbow-numba's ({CHECKPOINT_VERSION}); resume it with the version that wrote it, "
                              "or delete it to start over")
    for key in ("state", "config", "corpus", "matrices"):
        if not isinstance(meta.get(key), dict):
            raise damaged(path / STATE_FILE, f"no {key}")
    if any(name not in meta["config"] for name in TrainConfig.__dataclass_fields__):
        raise damaged(path / STATE_FILE, "config")
    return meta


def describe(meta: dict) -> str:
    """``"123,456 of 1,000,000 examples"`` for a checkpoint's state."""
    try:
        return TrainState.from_dict(meta["state"]).where()
    except (AttributeError, KeyError, TypeError, ValueError):
        return "unknown progress"


def check_config(meta: dict, config: TrainConfig, path: Path) -> None:
    """Refuse to resume with settings that change what is computed."""
    saved = meta["config"]
    diffs = [f"--{key.replace('_', '-')} was {show_value(saved[key])}, now {show_value(value)}"
             for key, value in config.to_dict().items() if key not in FREE_ON_RESUME and saved[key] != value]
    if diffs:
        raise CheckpointError(
            f"cannot resume from {path}: {'; '.join(diffs)}; run with the settings of the interrupted "
            "run, or delete the checkpoint to start over"
        )


def _restore_matrix(file: Path, shape: tuple) -> np.ndarray:
    """A finite float32 matrix of ``shape`` saved in a checkpoint, or CheckpointError."""
    if not file.is_file() or file.is_symlink():
        raise damaged(file, "no such file")
    try:
        # memory-mapped first: a header claiming more rows than the file holds is damage, not allocated
        M = np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise damaged(file, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if M.dtype != np.float32 or M.shape != shape:
        raise damaged(file, f"not a float32 matrix of {shape[0]:,} x {shape[1]}")
    bad = scan_values(M)[0]
    if bad is not None:
        raise damaged(file, f"the vectors hold NaN or inf (row {bad + 1:,} of {shape[0]:,} is the first)")
    return np.array(M)


def matrix_digest(M: np.ndarray) -> str:
    """sha256 of a matrix's float32 values in C order."""
    return hashlib.sha256(np.ascontiguousarray(M, dtype=np.float32).data).hexdigest()


def _valid_state(state, n_targets: int, config: TrainConfig) -> bool:
    """Whether a checkpoint's state is one a run of ``config`` on ``n_targets`` targets an epoch can be in."""
    def counts(*xs):
        return all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in xs)

    def numbers(xs, hi):  # a mean cross-entropy over a handful of cosines lies far below 1e3
        return all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= hi
                   for x in xs)

    names, phases, s = list(state.phases), list(state.phases.values()), state.phases.get("sentence")
    at = names.index(state.phase) if state.phase in names else -1
    return (s is not None and at >= 0 and counts(state.epoch, state.lo, state.targets_per_epoch)
            and state.targets_per_epoch == n_targets and state.lo <= n_targets and state.epoch <= config.epochs
            and s.done == state.epoch * n_targets + state.lo
            and all(counts(p.done, p.total) and p.done <= p.total and isinstance(p.losses, list)
                    and numbers(p.losses, 1e3) and numbers([p.seconds], 1e10) for p in phases)
            # a phase begins once those before it are done
            and all(p.done == p.total for p in phases[:at]) and all(p.done == 0 for p in phases[at + 1:]))


def _spelling(encoding: str) -> str:
    """The one spelling of a recorded ``--encoding`` (as typed, when this Python knows no such codec)."""
    try:
        return encoding_name(encoding)
    except ValueError:
        return encoding


def restore(path: Path, meta: dict, corpus, config: TrainConfig):
    """``(TrainState, {name: matrix})`` of the checkpoint at ``path`` whose ``meta`` :func:`check_config`
    passed: checked against ``corpus``, each matrix against the digest its state recorded."""
    path = Path(path)
    saved, now = meta["corpus"], corpus_identity(corpus)
    keys = ("sentences", "documents", "tokens", "vocab_size", "vocab_sha256")
    read = saved.get("encoding")
    encoding = (f"; it read the corpus as {read} text, this run as {now['encoding']}: resume with --encoding {read}"
                if isinstance(read, str) and _spelling(read) != _spelling(now["encoding"]) else "")
    if any(saved.get(k) != now[k] for k in keys):
        raise CheckpointError(
            f"cannot resume from {path}: it was trained on another corpus ({saved.get('sentences')} sentences, "
            f"{saved.get('vocab_size')} words, from {', '.join(map(str, saved.get('files', []))) or '?'}); "
            f"this one has {now['sentences']} sentences and {now['vocab_size']} words{encoding}"
        )
    if saved.get("stream_sha256") != now["stream_sha256"]:
        raise CheckpointError(
            f"cannot resume from {path}: it was trained on another corpus, of the same sizes and words (its "
            f"sentences or documents are in another order, or its text changed){encoding}")
    try:
        state = TrainState.from_dict(meta["state"])
        ok = _valid_state(state, len(trainable_targets(corpus)), config)
    except (AttributeError, KeyError, TypeError, ValueError):
        ok = False
    V = len(corpus.vocab)
    shapes = {"sentence": (V, config.dim)}
    if ok and state.phase == "word":
        shapes.update(word_in=(V, config.word_dim), word_out=(V, config.word_dim + 1))
    if not ok or set(meta["matrices"]) != set(shapes):
        raise damaged(path / STATE_FILE, "inconsistent training state")
    # the checkpoint's vocab.txt and config.json make it a loadable model; the corpus's identity and each
    # matrix's digest are what a resume is checked against
    matrices = {name: _restore_matrix(path / MATRIX_FILES[name], shape) for name, shape in shapes.items()}
    for name, M in matrices.items():
        if matrix_digest(M) != meta["matrices"][name]:
            raise damaged(path / MATRIX_FILES[name], f"not the matrix its {STATE_FILE} recorded: from another run, or changed")
    return state, matrices
