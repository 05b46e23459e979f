"""The model directory, written and read here. No pickle anywhere.

``vectors.npy`` (float32, (n_words, dim), memory-mappable), ``vocab.txt`` (``word count`` lines, most
frequent first), ``config.json`` (``format_version``, ``config``, ``corpus``, ``training``) and, after
``train --eval-every``, ``curve.json``. A save is put in place whole (:func:`scbow.files.atomic_dir`); a
read opens every file through one descriptor of the directory, so a save meanwhile never mixes two models.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
import uuid
from contextlib import closing
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..files import atomic_dir, being_written, foreign, fsync_path, new_temporary, output_path
from ..outputs import refuse_inside_ours, register_kind
from ..reading import os_error_text, parse_json, read_json, short_message
from ..text.tokenize import TOKENIZER_VERSION
from ..text.vocab import Vocab
from .curvefile import CURVE_FILE, check_curve

FORMAT_VERSION = 1
MODEL_FILES = ("vectors.npy", "vocab.txt", "config.json")
OPTIONAL_FILES = (CURVE_FILE,)
LOAD_ATTEMPTS = 10  # how many times a read starts over while saves keep replacing the directory


def default_model_dir() -> Path:
    """``$SCBOW_MODEL``, else ``$XDG_DATA_HOME/scbow-numba/model`` (~/.local/share/...)."""
    env = os.environ.get("SCBOW_MODEL")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "scbow-numba" / "model"


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a model directory"`` when ``directory`` holds the three model files (:func:`scbow.outputs.kind_of`)."""
    return "a model directory" if all((Path(directory) / name).is_file() for name in MODEL_FILES) else None


def not_a_model(path: Path) -> str | None:
    """None when a save may replace the directory ``path`` (only model files, a config.json of ours), else why not."""
    why = foreign(path, MODEL_FILES + OPTIONAL_FILES)
    try:
        meta = read_json(path / "config.json") if why is None else None
    except ModelError:
        meta = None
    return why or (None if isinstance(meta, dict) and isinstance(meta.get("format_version"), int) else "holds no model")


def check_output_dir(path: os.PathLike) -> Path:
    """Fail early (before training) if a model cannot be written at ``path``; returns it."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ModelError(f"{path}: exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not_a_model(path) is not None:
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


def write_model_files(model, directory: Path, info: dict | None = None) -> str:
    """Write and fsync ``model``'s files (``info`` its own unless given) in ``directory``; returns the new ``model_id``."""
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
    written = [directory / name for name in MODEL_FILES]
    if info.get("curve") is not None:
        (directory / CURVE_FILE).write_text(json.dumps(info["curve"], indent=1, allow_nan=False) + "\n")
        written.append(directory / CURVE_FILE)
    for path in written:
        fsync_path(path)
    return meta["model_id"]


def save_model(model, path: os.PathLike) -> Path:
    """Write ``model`` at ``path``, replacing any model there atomically, with a new ``model_id`` (set in
    ``model.info`` too). ModelError, writing nothing, for a word ``scbow.load`` could not read back."""
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


def model_id(model) -> str | None:
    """The identity of a model that shards and indexes record; None when it cannot be read. A directory:
    the ``model_id`` its save recorded (None if none); a file: ``"file-"`` and a digest of its bytes."""
    path = Path(model)
    try:
        if path.is_dir():
            recorded = json.loads((path / "config.json").read_bytes()).get("model_id")
            return recorded if isinstance(recorded, str) and recorded else None
        with open(path, "rb") as fh:
            return "file-" + hashlib.file_digest(fh, "sha256").hexdigest()[:32]
    except (OSError, ValueError, AttributeError, RecursionError):
        return None


def there(path: Path, patience: float = 10.0) -> bool:
    """Whether ``path`` exists, waiting up to ``patience`` seconds while a save replaces it (between two renames)."""
    deadline = time.monotonic() + patience
    while not path.exists():
        if not being_written(path) or time.monotonic() > deadline:
            return path.exists()
        time.sleep(0.005)
    return True


def read_model_dir(path: Path) -> tuple[Vocab, np.memmap, dict, dict]:
    """``(vocab, vectors, config, info)`` of the model directory ``path``, the vectors memory-mapped, not yet
    checked; one model whole, the old or the new, when a save replaces it meanwhile."""
    for attempt in range(LOAD_ATTEMPTS):
        if attempt > 1:
            time.sleep(0.01)  # a save's two renames apart
        try:
            with closing(ModelFiles(path)) as files:
                return _read(path, files)
        except Replaced:
            continue
    if not there(path):
        raise ModelError(f"{path}: no such model (train one with 'scbow-numba train')")
    raise ModelError(f"{path}: the model was replaced {LOAD_ATTEMPTS} times while it was being read (another "
                     "process is saving models there); try again")


class Replaced(Exception):
    """The model directory was replaced by a save while it was being read: read it again."""


class ModelFiles:
    """The files of the model directory ``path``, all opened through one descriptor of it, so all come from
    one directory while a save swaps a new one in. A file missing while ``path`` names another directory
    was taken by a save: :class:`Replaced`. A directory, pipe or device in a file's place is damage."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:  # O_PATH: the directory needs no read permission, as when its files were opened by path
            self.dir_fd = os.open(self.path, getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0))
        except FileNotFoundError:
            raise Replaced from None
        except OSError as exc:
            raise ModelError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        self.fds: dict = {}  # name -> descriptor, None (missing) or the OSError opening it
        try:
            for name in MODEL_FILES + OPTIONAL_FILES:
                self.fds[name] = self._open(name)
            if None in self.fds.values() and not self._still_at_path():
                raise Replaced
        except BaseException:
            self.close()
            raise

    def _open(self, name: str):
        try:  # O_NONBLOCK: a pipe in a file's place would block the open
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

    def open(self, name: str, mode: str = "r"):
        """The file ``name`` as a file object owning the descriptor; the OSError that opening it met."""
        fd = self.fds.pop(name)
        if isinstance(fd, OSError):
            raise fd
        return open(fd, mode, encoding=None if "b" in mode else "utf-8")

    def text(self, name: str, what: str = "damaged model") -> str:
        """The text of ``name``; ModelError (``what`` it is then) when it is no UTF-8 text or cannot be read."""
        try:
            with self.open(name) as fh:
                return fh.read()
        except OSError as exc:
            raise ModelError(f"{self.path / name}: cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ModelError(f"{self.path / name}: {what} (not UTF-8 text)") from None

    def json(self, name: str, what: str) -> object:
        """The JSON value in ``name``, failing as :func:`scbow.reading.read_json` does."""
        return parse_json(self.text(name, what), self.path / name, ModelError, what)

    def close(self) -> None:
        for fd in self.fds.values():
            if isinstance(fd, int):
                os.close(fd)
        self.fds.clear()
        os.close(self.dir_fd)


def _read(path: Path, files: ModelFiles) -> tuple[Vocab, np.ndarray, dict, dict]:
    missing = [n for n in MODEL_FILES if files.fds[n] is None]
    if missing:
        raise ModelError(f"{path}: not a model directory (missing {', '.join(missing)})")
    meta = files.json("config.json", "damaged model")
    if not isinstance(meta, dict) or not isinstance(meta.get("format_version"), int):
        raise ModelError(f"{path / 'config.json'}: has no format_version")
    if meta["format_version"] > FORMAT_VERSION:
        raise ModelError(f"{path}: model format {meta['format_version']} is newer than this scbow-numba "
                         f"understands ({FORMAT_VERSION}); upgrade scbow-numba")
    try:  # memory-mapped: a header that claims more rows than the file holds fails here, allocating none
        with files.open("vectors.npy", "rb") as fh:
            vectors = map_npy(fh)
    except (ValueError, OSError, EOFError, OverflowError) as exc:
        raise ModelError(f"{path / 'vectors.npy'}: cannot read vectors ({short_message(exc)})") from None
    try:
        vocab = Vocab.parse(files.text("vocab.txt"), path / "vocab.txt")
    except ValueError as exc:  # its message names the file and the line
        raise ModelError(f"damaged model: {exc}") from None
    info = {k: v for k, v in meta.items() if k not in ("config", "format_version")}
    if files.fds[CURVE_FILE] is not None:
        info["curve"] = check_curve(files.json(CURVE_FILE, "damaged learning curve"), path / CURVE_FILE)
    corpus = meta.get("corpus")
    if isinstance(corpus, dict) and corpus.get("tokenizer_version", TOKENIZER_VERSION) != TOKENIZER_VERSION:
        # a trained model's words are tokens of the tokenizer it was trained with: another rule would miss them
        raise ModelError(f"{path}: its words come from tokenizer version {corpus['tokenizer_version']!r}, not "
                         f"{TOKENIZER_VERSION!r}, the one this scbow-numba has; train the model again with it")
    return vocab, vectors, meta.get("config", {}), info


def npy_header(fh) -> tuple:
    """``(shape, fortran_order, dtype)`` of the open ``.npy`` file ``fh``, read to its data; ValueError for another version."""
    version = np.lib.format.read_magic(fh)
    if version not in ((1, 0), (2, 0), (3, 0)):  # 3.0 only allows UTF-8 in the header (field names), read alike
        raise ValueError(f"npy format version {version[0]}.{version[1]}")
    return (np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0)(fh)


def map_npy(fh) -> np.memmap:
    """The array in the open ``.npy`` file ``fh``, memory-mapped read-only as ``np.load(mmap_mode="r")`` maps
    a path; ValueError when it is not an array of plain values (objects would need unpickling)."""
    shape, fortran, dtype = npy_header(fh)
    if dtype.hasobject:
        raise ValueError("Array can't be memory-mapped: Python objects in dtype.")
    return np.memmap(fh, dtype=dtype, mode="r", offset=fh.tell(), shape=shape, order="F" if fortran else "C")
