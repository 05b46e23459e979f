"""Reading models: model directories (written by :mod:`scbow.vectors.modeldir`, whose names are
re-exported here), word2vec text/binary and GloVe files, and learning curves; every
matrix checked before use (:func:`check_vectors`). No pickle (writing word2vec files: :mod:`scbow.vectors.export`).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import numpy as np

from ..config import finite_number
from ..errors import CorpusError, ModelError
from ..progress import plural
from ..reading import json_kind, parse_json, read_json, short_message
from ..text.reader import open_bytes, read_all_bytes
from ..text.tokenize import VERSIONS
from ..text.vocab import Vocab
from .model import Model
from .modeldir import CURVE_FILE, FORMAT_VERSION, MODEL_FILES  # noqa: F401


def load_model(path: os.PathLike, mmap: bool = True) -> Model:
    """Read a model directory (or a word2vec text/binary file) written by this package.

    A directory that a save replaces while it is read is read whole, the old model or the
    new one (:class:`ModelFiles`), never one model's words with another's vectors.
    """
    path = Path(path)
    if not _there(path):
        raise ModelError(f"{path}: no such model (train one with 'scbow-numba train')")
    try:
        mode = os.stat(path).st_mode  # one look: a save replacing a directory leaves none there for a moment
    except OSError:
        mode = None
    if mode is not None and stat.S_ISREG(mode):
        return load_word2vec(path)
    if mode is not None and not stat.S_ISDIR(mode):  # a pipe or a device: never opened (it would block, or never end)
        raise ModelError(f"{path}: not a regular file (a pipe or a device); a model is a directory or a vectors file")
    for attempt in range(LOAD_ATTEMPTS):
        if attempt > 1:
            time.sleep(0.01)  # between a save's two renames there is no directory for a moment
        try:
            with ModelFiles(path) as files:
                return _read_model_dir(path, files, mmap)
        except Replaced:
            continue
    if not _there(path):
        raise ModelError(f"{path}: no such model (train one with 'scbow-numba train')")
    raise ModelError(f"{path}: the model was replaced {LOAD_ATTEMPTS} times while it was being read (another "
                     "process is saving models there); try again")


def _there(path: Path, patience: float = 10.0) -> bool:
    """Whether ``path`` exists, waiting (up to ``patience`` seconds) while a running save replaces it:
    a save puts the new directory in place with two renames, and there is none between them."""
    from ..files import being_written

    deadline = time.monotonic() + patience
    while not path.exists():
        if not being_written(path) or time.monotonic() > deadline:
            return path.exists()
        time.sleep(0.005)
    return True


# How many times load_model starts over when saves keep replacing the directory it reads.
LOAD_ATTEMPTS = 10


class Replaced(Exception):
    """The model directory was replaced by a save while it was being read: read it again."""


class ModelFiles:
    """The files of the model directory ``path``, all opened through one descriptor of it.

    The rule that makes a read whole: the directory is opened once and every file is opened
    relative to it, so all of them come from the same directory, even when a save swaps a
    new one in at ``path`` meanwhile (:func:`scbow.files.atomic_dir` renames the old directory
    aside, the complete new one in, then deletes the old one's files; a file opened, or memory-mapped, before
    its deletion stays readable). A file missing while ``path`` no longer names the directory
    opened means a save took it away: :class:`Replaced`, and the caller starts over.
    ``curve.json`` (optional) is told missing from removed the same way. A directory, pipe or
    device in a file's place is no file a save wrote: the model is damaged, and that is said.
    """

    NAMES = (*MODEL_FILES, CURVE_FILE)

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            # O_PATH: the directory needs no read permission, as when its files were opened by path
            self.dir_fd = os.open(self.path, getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0))
        except FileNotFoundError:
            raise Replaced from None
        except OSError as exc:
            raise ModelError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        self.fds: dict = {}  # name -> descriptor, None (missing) or the OSError opening it
        try:
            for name in self.NAMES:
                self.fds[name] = self._open(name)
            if None in self.fds.values() and not self._still_at_path():
                raise Replaced
        except BaseException:
            self.close()
            raise

    def _open(self, name: str):
        try:
            # O_NONBLOCK: a pipe in a file's place would block the open; it is refused as missing
            fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0), dir_fd=self.dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return exc
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            what = "a directory" if stat.S_ISDIR(mode) else "a pipe or a device"
            raise ModelError(f"{self.path / name}: damaged model ({what} where its file belongs)")
        os.set_blocking(fd, True)
        return fd

    def _still_at_path(self) -> bool:
        try:
            now, opened = os.stat(self.path), os.fstat(self.dir_fd)
        except OSError:
            return False
        return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)

    def has(self, name: str) -> bool:
        return self.fds.get(name) is not None

    def open(self, name: str, mode: str = "r"):
        """The file ``name`` as a file object (text as ``Path.read_text`` reads it, or ``"rb"``); it
        owns the descriptor. Raises the OSError that opening it met."""
        fd = self.fds.pop(name)
        if isinstance(fd, OSError):
            raise fd
        return open(fd, mode, encoding=None if "b" in mode else "utf-8")

    def json(self, name: str, what: str) -> object:
        """The JSON value in ``name``, failing as :func:`scbow.reading.read_json` does."""
        try:
            with self.open(name) as fh:
                text = fh.read()
        except OSError as exc:
            raise ModelError(f"{self.path / name}: cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ModelError(f"{self.path / name}: {what} (not UTF-8 text)") from None
        return parse_json(text, self.path / name, ModelError, what)

    def close(self) -> None:
        for fd in self.fds.values():
            if isinstance(fd, int):
                os.close(fd)
        self.fds.clear()
        os.close(self.dir_fd)

    def __enter__(self) -> "ModelFiles":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_model_dir(path: Path, files: ModelFiles, mmap: bool) -> Model:
    missing = [n for n in MODEL_FILES if not files.has(n)]
    if missing:
        raise ModelError(f"{path}: not a model directory (missing {', '.join(missing)})")
    meta = files.json("config.json", what="damaged model")
    if not isinstance(meta, dict) or not isinstance(meta.get("format_version"), int):
        raise ModelError(f"{path / 'config.json'}: has no format_version")
    if meta["format_version"] > FORMAT_VERSION:
        raise ModelError(
            f"{path}: model format {meta['format_version']} is newer than this scbow-numba "
            f"understands ({FORMAT_VERSION}); upgrade scbow-numba"
        )
    try:
        # memory-mapped first: a header that claims more rows than the file holds fails here
        # instead of allocating them
        with files.open("vectors.npy", "rb") as fh:
            vectors = map_npy(fh)
    except (ValueError, OSError, EOFError, OverflowError) as exc:
        raise ModelError(f"{path / 'vectors.npy'}: cannot read vectors ({short_message(exc)})") from None
    try:
        with files.open("vocab.txt") as fh:
            vocab = Vocab.parse(fh.read(), path / "vocab.txt")
    except UnicodeDecodeError:
        raise ModelError(f"{path / 'vocab.txt'}: damaged model (not UTF-8 text)") from None
    except OSError as exc:
        raise ModelError(f"{path / 'vocab.txt'}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:  # its message names the file and the line
        raise ModelError(f"damaged model: {exc}") from None
    config = meta.get("config", {})
    check_vectors(path, vectors, len(vocab), config)
    if not mmap:
        vectors = np.array(vectors)
    info = {k: v for k, v in meta.items() if k not in ("config", "format_version")}
    if files.has(CURVE_FILE):
        info["curve"] = check_curve(files.json(CURVE_FILE, what="damaged learning curve"), path / CURVE_FILE)
    corpus = meta.get("corpus")
    if isinstance(corpus, dict) and not isinstance(corpus.get("tokenizer_version", ""), str):
        # a version is written as a string: anything else is damage, not a version from a newer scbow-numba
        kind = json_kind(corpus["tokenizer_version"])
        raise ModelError(f"{path / 'config.json'}: damaged model: its corpus.tokenizer_version is {kind}, not a version "
                         "string such as \"3\"")
    model = Model(vocab, vectors, meta.get("config", {}), info)
    if model.tokenizer_version not in VERSIONS:
        raise ModelError(f"{path}: its words come from tokenizer version {model.tokenizer_version!r}, newer than this "
                         f"scbow-numba knows ({', '.join(VERSIONS)}); upgrade scbow-numba")
    if mmap:  # read-only rows mapped from the files: the model is what the directory holds
        model.source_dir = Path(os.path.abspath(path))
    return model


def map_npy(fh) -> np.memmap:
    """The array in the open ``.npy`` file ``fh``, memory-mapped read-only, as ``np.load(path,
    mmap_mode="r")`` maps one (which takes only a path). ValueError when it is not a ``.npy``
    array of plain values (an array of Python objects would need unpickling: never done)."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version in ((2, 0), (3, 0)):  # 3.0 only allows UTF-8 in the header (field names), read alike
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise ValueError(f"npy format version {version[0]}.{version[1]}")
    if dtype.hasobject:
        raise ValueError("Array can't be memory-mapped: Python objects in dtype.")
    return np.memmap(fh, dtype=dtype, mode="r", offset=fh.tell(), shape=shape, order="F" if fortran else "C")


# The largest dimension a model file may claim (the trainer's own bound on --dim).
MAX_DIM = 100_000


def check_vectors(where, vectors: np.ndarray, n_words: int, config: dict | None = None) -> None:
    """Raise ModelError unless ``vectors`` is a healthy (n_words, dim) float32 matrix.

    Damaged numbers are refused here, when a model is read, not printed later as results:
    every value must be finite, ``dim`` at least 1, the rows one per word, and a
    recorded ``config`` (a dict of valid settings) must agree with the matrix.
    """
    if vectors.dtype != np.float32 or vectors.ndim != 2:
        raise ModelError(f"{where}: damaged model: expected a 2-d float32 matrix, got {vectors.dtype} "
                         f"{vectors.shape}")
    rows, dim = vectors.shape
    if rows == 0:  # every score would come from hashed vectors alone
        raise ModelError(f"{where}: damaged model: it has no words")
    if rows != n_words:
        raise ModelError(f"{where}: damaged model: the vocabulary has {plural(n_words, 'word')} but the vectors "
                         f"have {plural(rows, 'row')}")
    if not 1 <= dim <= MAX_DIM:
        raise ModelError(f"{where}: damaged model: vectors of {plural(dim, 'dimension')} (1 to {MAX_DIM:,} are possible)")
    if config is not None:
        check_config(where, config, dim)
    bad, largest = scan_values(vectors)
    if bad is not None:
        raise ModelError(f"{where}: damaged model: the vectors hold NaN or inf (row {bad + 1:,} of {rows:,} "
                         "is the first)")
    if largest > MAX_VALUE:
        raise ModelError(f"{where}: damaged model: a vector value of {largest:.3g} is too large to average and "
                         f"compare in float32 (at most {MAX_VALUE:g})")
    if rows and largest < MIN_LARGEST:
        raise ModelError(f"{where}: damaged model: every vector is zero or nearly so (largest value "
                         f"{largest:.3g}); its cosines would be meaningless")


# Values a model may hold: squared norms of up to 100,000 float32 values of this size stay
# finite, and a matrix whose largest value is below MIN_LARGEST (every row zero or at the
# edge of float32's range) has no directions to compare.
MAX_VALUE = 1e15
MIN_LARGEST = 1e-15


def scan_values(vectors: np.ndarray, block: int = 1 << 14) -> tuple[int | None, float]:
    """``(first row with a NaN or inf, or None; the largest absolute value of the finite rows)``.

    One pass over the matrix, a block of rows at a time (a memory-mapped model is read
    once): ``max`` and ``min`` propagate NaN and reach +-inf, so two reductions per block
    check it without a boolean temporary of the block's size.
    """
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
    """Raise ModelError unless a model's recorded ``config`` is a dict of valid settings for ``dim``.

    Settings this version does not know are ignored; missing ones are allowed (older models).
    """
    from ..config import TrainConfig
    from ..errors import ConfigError

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


def curve_of(path: os.PathLike) -> tuple[dict, dict]:
    """The learning curve of a model directory or a ``curve.json`` file, and the model's
    settings (``{}`` for a bare file); ModelError when there is none or it has no point."""
    path = Path(path)
    config: dict = {}
    if path.is_dir():
        if not (path / CURVE_FILE).is_file():
            if not (path / "config.json").is_file():
                raise ModelError(f"{path}: not a model directory (no config.json)")
            raise ModelError(f"{path}: the model has no learning curve ({CURVE_FILE}); "
                             "train it with --eval-every N to record one")
        meta = read_json(path / "config.json", what="damaged model")
        config = meta.get("config") if isinstance(meta, dict) else None
        config = config if isinstance(config, dict) else {}
        curve = load_curve(path / CURVE_FILE)
    elif path.is_file():
        curve = load_curve(path)
    else:
        raise ModelError(f"{path}: no such model or curve file")
    if not curve["points"]:
        raise ModelError(f"{path}: the learning curve has no points")
    return curve, config


def load_curve(path: os.PathLike) -> dict:
    """Read a ``curve.json`` (of a model directory, or a copy of one)."""
    path = Path(path)
    return check_curve(read_json(path, what="damaged learning curve"), path)


def check_curve(curve, path: Path) -> dict:
    """``curve``, the JSON value of the ``curve.json`` at ``path``, once checked; else ModelError."""
    if not isinstance(curve, dict) or not isinstance(curve.get("points"), list):
        raise ModelError(f"{path}: not a learning curve (no list of points)")
    for n, point in enumerate(curve["points"], 1):
        if not isinstance(point, dict) or not finite_number(point.get("examples")) or not all(
                isinstance(point.get(k), (dict, type(None))) for k in ("dev", "dev_raw", "test")):
            raise ModelError(f"{path}: damaged learning curve (point {n} is malformed)")
        # every number the readers (info, plot, the exported model card) use; None is a score that was
        # not a number (the curve records a NaN correlation so)
        for part, key in (("dev", "pearson"), ("dev", "spearman"), ("dev_raw", "pearson"), ("dev_raw", "spearman"),
                          ("test", "pearson_mean")):
            value = (point.get(part) or {}).get(key)
            if value is not None and not (finite_number(value) and -1.0001 <= value <= 1.0001):
                raise ModelError(f"{path}: damaged learning curve (point {n}: {part} {key} is not a correlation)")
        pairs = (point.get("dev") or {}).get("pairs")
        if pairs is not None and not (type(pairs) is int and 0 <= pairs <= 1e15):
            raise ModelError(f"{path}: damaged learning curve (point {n}: dev pairs is not a count)")
        if not 0 <= point["examples"] <= 1e15:
            raise ModelError(f"{path}: damaged learning curve (point {n}: examples out of range)")
    for key in ("dev", "post_processing", "test"):
        if curve.get(key) is not None and not isinstance(curve[key], (dict, list, str)):
            raise ModelError(f"{path}: damaged learning curve ({key} is malformed)")
    if curve.get("dev") is not None and not isinstance(curve["dev"], dict):
        raise ModelError(f"{path}: damaged learning curve (dev is malformed)")
    return curve


def _shown(data: bytes, n: int) -> str:
    """The first ``n`` characters of a file's bytes for an error message: text, quoted, not a bytes repr."""
    return repr(data[: 4 * n].decode("utf-8", "replace")[:n])


def load_word2vec(path: os.PathLike) -> Model:
    """Read a word2vec text or binary file, or GloVe text, as a :class:`Model`.

    The format is detected: word2vec files start with a ``count dim`` line, then text or
    binary vectors; GloVe text has no such line (every line is ``word v1 ... vd``, d at
    least 2: a file of ``word number`` lines is a word-count list, such as a model's
    ``vocab.txt``, and is refused). Files compressed with gzip, bzip2 or xz are read too
    (``vectors.txt.gz``), as gensim does. A word a model directory cannot hold (empty, or
    with a line break in it) is read (no token can match it); ``Model.save`` refuses it.
    """
    path = Path(path)
    try:
        # the first line says what the file is: one that is neither a word2vec header nor a GloVe
        # vector is refused before the rest is read (a corpus given as a model: a gigabyte of text)
        with open_bytes(path) as fh:
            first = fh.readline(FIRST_LINE_LIMIT)
        if first.endswith(b"\n") or len(first) < FIRST_LINE_LIMIT:  # the whole line (a longer one: read on)
            _first_line(path, first.removeprefix(BOM).rstrip(b"\n"))
        data = read_all_bytes(path)
    except CorpusError as exc:  # names the file: missing, unreadable, damaged compressed data
        raise ModelError(f"cannot read vectors: {exc}") from None
    data = data.removeprefix(BOM)
    newline = data.find(b"\n")
    header = data[: newline if newline >= 0 else len(data)]
    kind, n, dim = _first_line(path, header)
    if kind == "word2vec":
        body = data[newline + 1 :] if newline >= 0 else b""
    else:
        body = data
        n = sum(1 for line in body.split(b"\n") if line.strip())
    # every vector takes at least 2 bytes a value in text ("0 ") and 4 in binary
    if n * (2 * dim + 1) > len(body) + n:
        raise ModelError(f"{path}: truncated word2vec file (header says {n} vectors of {dim} dims, "
                         f"the file holds {len(body):,} bytes)")
    words: list[str] = []
    vectors = np.empty((n, dim), dtype=np.float32)
    binary = kind != "glove" and _looks_binary(body, dim)
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
                end = body.find(b"\n", pos)
                end = len(body) if end < 0 else end
                while not body[pos:end].strip() and end < len(body):  # blank lines between vectors (as counted)
                    pos = end + 1
                    end = body.find(b"\n", pos)
                    end = len(body) if end < 0 else end
                parts = body[pos:end].decode("utf-8").rstrip().split(" ")
                if len(parts) != dim + 1:
                    raise ValueError
                word = parts[0]
                with np.errstate(over="ignore"):  # 1e39 becomes inf here and is refused below
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
    check_vectors(path, vectors, n)
    fmt = "glove-text" if kind == "glove" else "word2vec-" + ("binary" if binary else "text")
    return Model(vocab, vectors, {}, {"source": str(path), "format": fmt})


BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark, as editors on Windows write it
# longer than any first line of a vectors file (GloVe's word and MAX_DIM numbers); a longer one
# is read on, and judged with the whole file
FIRST_LINE_LIMIT = 64 * MAX_DIM


def _first_line(path: Path, header: bytes) -> tuple[str, int, int]:
    """What a vectors file is, by its first line (``header``, without its line end):
    ``("word2vec", count, dim)`` for a ``count dim`` line, ``("glove", -1, dim)`` for a word and
    at least 2 numbers; else ModelError (not a vectors file, or a bad header)."""
    fields = header.split()
    if len(fields) == 2 and all(f.lstrip(b"+-").isdigit() and len(f) < 4000 for f in fields):
        n, dim = int(fields[0]), int(fields[1])
        if n < 0 or not 1 <= dim <= MAX_DIM:
            raise ModelError(f"{path}: bad word2vec header {_shown(header, 80)} (dimensions must be 1 to {MAX_DIM:,})")
        return "word2vec", n, dim
    if len(fields) == 2 and _all_numbers(fields[1:]):
        # 'word number' lines are a word-count list (a model's vocab.txt), not 1-dimensional
        # vectors: headerless GloVe has at least 2 dimensions (a word2vec header allows 1)
        raise ModelError(f"{path}: not a vectors file: its first line {_shown(header, 60)} is a word and one number, "
                         "as in a word-count list or a model's vocab.txt (GloVe vectors have at least 2 values a "
                         "line; 1-dimensional vectors need word2vec's 'count 1' first line)")
    if len(fields) > 2 and _all_numbers(fields[1:]):
        # GloVe: no header; the first line's fields after the word give the dimensions (at least 2)
        dim = len(fields) - 1
        if dim > MAX_DIM:
            raise ModelError(f"{path}: GloVe vectors of {plural(dim, 'dimension')} (1 to {MAX_DIM:,} are possible)")
        return "glove", -1, dim
    raise ModelError(f"{path}: not a vectors file: a word2vec file starts with a 'count dim' line and GloVe "
                     f"text with 'word v1 v2 ...'; the first line is {_shown(header, 60)}")


def _all_numbers(fields) -> bool:
    try:
        for f in fields:
            float(f)
    except ValueError:
        return False
    return True


def _looks_binary(body: bytes, dim: int) -> bool:
    """Text when the first vector reads as a text line (a word and `dim` numbers), else binary
    when the bytes after the first word are not printable ASCII (binary floats seldom are)."""
    first = body[: 4096 + 64 * dim].lstrip(b"\n\r")
    line = first.split(b"\n", 1)[0]
    try:
        parts = line.decode("utf-8").rstrip().split(" ")
        if len(parts) == dim + 1 and _all_numbers(parts[1:]):
            return False
    except UnicodeDecodeError:
        pass
    space = first.find(b" ")
    if space < 0:
        return False
    sample = first[space + 1 : space + 1 + 4 * min(dim, 8)]
    return any(b < 9 or (13 < b < 32) or b > 126 for b in sample)
