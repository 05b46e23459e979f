"""Model files, and word2vec text/binary import and export. No pickle anywhere.

A model directory holds:

- ``vectors.npy``: float32, shape (n_words, dim), memory-mappable, loaded with
  ``allow_pickle=False``;
- ``vocab.txt``: one ``word count`` line per row of the vectors, most frequent first;
- ``config.json``: ``format_version``, every hyperparameter (``config``), the corpus
  statistics (``corpus``) and the training summary (``training``).

Directories are written into a temporary sibling and renamed into place, so a crash
never leaves a half-written model where a model is expected.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .errors import ModelError  # noqa: F401  (re-exported)
from .model import Model
from .vocab import Vocab

FORMAT_VERSION = 1
MODEL_FILES = ("vectors.npy", "vocab.txt", "config.json")


def default_model_dir() -> Path:
    """``$SCBOW_MODEL``, else ``$XDG_DATA_HOME/scbow-numba/model`` (~/.local/share/...)."""
    env = os.environ.get("SCBOW_MODEL")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "scbow-numba" / "model"


def is_model_dir(path: Path) -> bool:
    """True for a directory holding only model files, with a config.json of ours."""
    names = {p.name for p in path.iterdir()}
    if not names <= set(MODEL_FILES) or "config.json" not in names:
        return False
    try:
        meta = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return False
    return isinstance(meta, dict) and isinstance(meta.get("format_version"), int)


def check_output_dir(path: os.PathLike) -> Path:
    """Fail early (before training) if a model cannot be written at ``path``."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ModelError(f"{path}: exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not is_model_dir(path):
        raise ModelError(f"{path}: directory is not empty and holds no model; refusing to replace it")
    parent = path.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"{parent}: cannot create directory: {exc.strerror}") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ModelError(f"{parent}: directory is not writable")
    return path


def save_model(model: Model, path: os.PathLike) -> Path:
    """Write ``model`` as a directory at ``path``, replacing any model there atomically."""
    path = check_output_dir(path)
    parent = path.resolve().parent
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=parent))
    try:
        np.save(tmp / "vectors.npy", np.ascontiguousarray(model.vectors, dtype=np.float32))
        model.vocab.save(tmp / "vocab.txt")
        meta = {
            "format_version": FORMAT_VERSION,
            "config": model.config,
            **{k: v for k, v in model.info.items() if k not in ("format_version", "config")},
        }
        (tmp / "config.json").write_text(json.dumps(meta, indent=1, sort_keys=False) + "\n")
        for name in MODEL_FILES:
            with open(tmp / name, "rb") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o755)
        if path.exists():
            # rename the old model aside first: a directory cannot be replaced in one step
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=parent))
            os.replace(path, old / "model")
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ModelError(f"cannot write model to {path}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def load_model(path: os.PathLike, mmap: bool = True) -> Model:
    """Read a model directory (or a word2vec text/binary file) written by this package."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"{path}: no such model (train one with 'scbow-numba train')")
    if path.is_file():
        return load_word2vec(path)
    missing = [n for n in MODEL_FILES if not (path / n).is_file()]
    if missing:
        raise ModelError(f"{path}: not a model directory (missing {', '.join(missing)})")
    try:
        meta = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path / 'config.json'}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("format_version"), int):
        raise ModelError(f"{path / 'config.json'}: has no format_version")
    if meta["format_version"] > FORMAT_VERSION:
        raise ModelError(
            f"{path}: model format {meta['format_version']} is newer than this scbow-numba "
            f"understands ({FORMAT_VERSION}); upgrade scbow-numba"
        )
    try:
        vectors = np.load(path / "vectors.npy", mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ModelError(f"{path / 'vectors.npy'}: cannot read vectors ({exc})") from None
    if vectors.dtype != np.float32 or vectors.ndim != 2:
        raise ModelError(f"{path / 'vectors.npy'}: expected a 2-d float32 array, got {vectors.dtype} {vectors.shape}")
    try:
        vocab = Vocab.load(path / "vocab.txt")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path / 'vocab.txt'}: {exc}") from None
    if len(vocab) != vectors.shape[0]:
        raise ModelError(
            f"{path}: vocab.txt has {len(vocab)} words but vectors.npy has {vectors.shape[0]} rows"
        )
    info = {k: v for k, v in meta.items() if k not in ("config", "format_version")}
    return Model(vocab, vectors, meta.get("config", {}), info)


def export_word2vec(model: Model, path: os.PathLike, binary: bool = False) -> Path:
    """Write the vectors in word2vec text or binary format (atomically)."""
    path = Path(path)
    if path.is_dir():
        raise ModelError(f"{path}: is a directory")
    parent = path.resolve().parent
    if not parent.is_dir():
        raise ModelError(f"{parent}: no such directory")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(f"{len(model.vocab)} {model.dim}\n".encode())
            vectors = np.asarray(model.vectors, dtype=np.float32)
            for word, vec in zip(model.vocab.words, vectors):
                if binary:
                    fh.write(word.encode("utf-8") + b" " + vec.astype("<f4").tobytes() + b"\n")
                else:
                    fh.write((word + " " + " ".join(f"{x:.9g}" for x in vec.tolist()) + "\n").encode("utf-8"))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_word2vec(path: os.PathLike) -> Model:
    """Read a word2vec text or binary file (the format is detected) as a :class:`Model`."""
    path = Path(path)
    with open(path, "rb") as fh:
        header = fh.readline()
        try:
            n, dim = (int(x) for x in header.split())
        except ValueError:
            raise ModelError(f"{path}: not a word2vec file (first line must be 'count dim')") from None
        if n < 0 or dim <= 0:
            raise ModelError(f"{path}: bad word2vec header {header!r}")
        body = fh.read()
    # every vector takes at least 2 bytes a value in text ("0 ") and 4 in binary
    if n * (2 * dim + 1) > len(body) + n:
        raise ModelError(f"{path}: truncated word2vec file (header says {n} vectors of {dim} dims, "
                         f"the file holds {len(body):,} bytes)")
    words: list[str] = []
    vectors = np.empty((n, dim), dtype=np.float32)
    binary = _looks_binary(body, dim)
    pos = 0
    try:
        for i in range(n):
            if binary:
                while body[pos : pos + 1] in (b"\n", b" "):
                    pos += 1
                space = body.index(b" ", pos)
                word = body[pos:space].decode("utf-8", errors="replace")
                start = space + 1
                if start + 4 * dim > len(body):
                    raise ValueError
                vectors[i] = np.frombuffer(body, dtype="<f4", count=dim, offset=start)
                pos = start + 4 * dim
            else:
                end = body.index(b"\n", pos) if b"\n" in body[pos:] else len(body)
                parts = body[pos:end].decode("utf-8").rstrip().split(" ")
                if len(parts) != dim + 1:
                    raise ValueError
                word = parts[0]
                vectors[i] = np.array(parts[1:], dtype=np.float32)
                pos = end + 1
            words.append(word)
    except (ValueError, UnicodeDecodeError):
        raise ModelError(f"{path}: truncated or malformed word2vec file (at vector {len(words) + 1} of {n})") from None
    counts = np.zeros(n, dtype=np.int64)
    try:
        vocab = Vocab(words, counts)
    except ValueError as exc:
        raise ModelError(f"{path}: {exc}") from None
    return Model(vocab, vectors, {}, {"source": str(path), "format": "word2vec-" + ("binary" if binary else "text")})


def _looks_binary(body: bytes, dim: int) -> bool:
    """A word2vec text body is printable ASCII digits after the first word; binary is not."""
    first = body[:2000]
    space = first.find(b" ")
    if space < 0:
        return False
    sample = first[space + 1 : space + 1 + 4 * min(dim, 8)]
    return any(b < 9 or (13 < b < 32) or b > 126 for b in sample)
