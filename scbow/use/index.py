"""Approximate nearest-sentence search over embedded lines: ``scbow-numba index`` and
``neighbors --sentence "..." --index DIR``.

An index is built once from the output of ``scbow-numba embed`` (one ``.npy`` file, with
the text file it came from) or of a cluster embed (a directory of shards with its
``manifest.json``, which names the text files); a query then answers in milliseconds
instead of scanning every line (``neighbors --in FILE``, exact, stays for small files).

The graph is an HNSW index of `faiss <https://github.com/facebookresearch/faiss>`_
(``IndexHNSWFlat``, inner product on L2-normalised vectors = cosine; chosen against usearch
and hnswlib: ``benchmarks/results/ann_index.md``), an optional extra:
``pip install 'scbow-numba[index]'`` (the ``faiss-cpu`` wheels). It is imported only when
an index is built or opened.

An index directory holds:

- ``index.json``: what was built: library and version, metric (cosine), dim, count of
  vectors, the rows in all, the embeddings it came from, the model when known, the HNSW
  parameters, a digest of a sample of the stored vectors (``vector_sample``), and the text
  files (path, size, modification time, first row, lines; for a copy, its blake2b digest).
- ``vectors.faiss``: the HNSW graph and the vectors, L2-normalised. Opened memory-mapped
  (faiss's ``IO_FLAG_MMAP_IFC``): opening costs milliseconds, and pages are read when a
  search touches them.
- ``ids.npy``: int64, the row of the embeddings of each vector of the graph, in the
  graph's order (rows of several files counted one after the other): strictly increasing.
- ``offsets.npy``: int64, one entry per row: the byte offset where the row's line starts
  in its text file. A plain text file is not copied: its lines are read from it at query
  time (``index.json`` keeps its size and modification time; a changed file is refused).
  A compressed file (gzip, bzip2, xz) cannot be entered in the middle, so its text is
  decompressed once into ``text-NNN.txt`` inside the index (about the size of the plain
  text; the vectors take far more) and the offsets point there.

Rows with no embedding (NaN, as ``embed`` writes for a line with no known word; or all
zero, from ``--fill zero``) are not added, so they are never returned. Lines are split as
``embed`` splits them (``\\n``, ``\\r\\n`` or a lone ``\\r``), so row ``r`` is line ``r + 1``
and the line count of each text file is checked against its rows.

The directory is written atomically (:func:`scbow.files.atomic_dir`): an interrupted
build leaves nothing, or the previous index, at the path. An existing ``-o`` directory is
replaced only when it is empty or provably an index this tool wrote: an ``index.json``
that opens as one, and nothing else but the files a build writes (no other file, no
subdirectory, no symbolic link); anything else is refused, before the build and again
just before the new index takes its place. ``.scbow-index-build`` is written
first (and kept): a temporary ``.NAME.tmp-*`` holding it and only the files above, whose
flock no live build holds, is what a killed build left, and the next build removes it.

Nothing read back is trusted; anything wrong is one ``PATH: damaged sentence index (...)``
error naming the file, never a wrong answer printed. On open: every field of
``index.json``; the shape and dtype of each array; ``ids.npy`` whole (strictly increasing,
within the rows: a permuted, repeated or shifted id is caught); the first and last offset
of each file; a sample of the graph's stored vectors (finite, unit length, and the digest
the build recorded: another graph of the same dim and count, or one whose vectors are NaN,
is caught); each copy of a compressed text by size, and whole by its blake2b digest when
it is at most 64 MiB. At query time: every score must be a cosine (within
[-1 - 1e-3, 1 + 1e-3]) and a search of a non-empty index must find something; each id
and offset is checked when it is used, and each line's bytes when read (they must be one
line, ending where the next begins). What is not caught: a copy of a compressed text over
64 MiB changed at the same size with its line ends in the same places (a changed word
inside a line) prints the changed text; a user's own plain text changed in place with
the same size, modification time and line ends is read as it now is; offsets of lines
never answered are not read; the graph's links (not its vectors) replaced by another
graph's give poorer recall, not wrong lines. An index that records its model answers
only queries with that model.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import CorpusError, ModelError
from ..files import TEMP_MARKER, atomic_dir, permissions, read_json, read_range, short_message

INDEX_JSON = "index.json"
INDEX_FILE = "vectors.faiss"
IDS_FILE = "ids.npy"
OFFSETS_FILE = "offsets.npy"
FORMAT = "scbow-numba sentence index"
FORMAT_VERSION = 1
LIBRARY = "faiss-cpu"
INSTALL_HINT = "pip install 'scbow-numba[index]'"
DEFAULT_M = 32  # HNSW graph degree (faiss's M; the base layer has 2 M links)
DEFAULT_EF_CONSTRUCTION = 200  # candidates kept while inserting (efConstruction)
# candidates kept while searching (efSearch): with M=32, recall@10 0.963 on 500K sentences of the 100M
# corpus, 4 ms a query on 1 thread (ef 512: 0.943, 2 ms); benchmarks/results/ann_index.md
DEFAULT_EF = 1024
CHUNK_ROWS = 65536  # rows of embeddings read, normalised and added at a time
# Written first into every index being built (and kept in it): the proof that a temporary
# directory ``.NAME.tmp-*`` beside an index is an unfinished build of ours, which a later
# build may remove. The build holds an exclusive flock on it, so a live build's is never removed.
BUILD_MARKER = ".scbow-index-build"
MARKER_FORMAT = "scbow-numba sentence index build"
COPY_NAME = re.compile(r"text-\d{3,}\.txt")  # a compressed text decompressed into the index
MAX_EF = 1 << 20
SAMPLE_VECTORS = 32  # stored vectors of the graph checked on open (unit length, and their recorded digest)
COPY_DIGEST_LIMIT = 64 << 20  # copies of compressed texts up to this size are checked whole on open
COSINE_SLACK = 1e-3  # a score beyond [-1, 1] by more than this is no cosine: a damaged graph


def _faiss():
    try:
        import faiss
    except ImportError:
        raise ModelError(f"a sentence index needs the faiss library; install it with: {INSTALL_HINT}") from None
    return faiss


def _library_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("faiss-cpu")
    except metadata.PackageNotFoundError:
        return getattr(_faiss(), "__version__", None)


class _omp_threads:
    """``with _omp_threads(faiss, n):`` faiss's OpenMP threads set to ``n`` (0: leave them), restored after."""

    def __init__(self, faiss, n: int):
        self.faiss, self.n, self.before = faiss, int(n), None

    def __enter__(self):
        if self.n > 0:
            self.before = self.faiss.omp_get_max_threads()
            self.faiss.omp_set_num_threads(self.n)

    def __exit__(self, *exc):
        if self.before is not None:
            self.faiss.omp_set_num_threads(self.before)


# -- the embeddings and their text -------------------------------------------------------


@dataclass
class _Source:
    """Embeddings to index: an array-like of rows, its description, and the text files of its rows."""

    rows: object  # np.ndarray (memory-mapped) or scbow.use.cluster.Shards
    kind: str  # "npy" or "shards"
    path: Path
    files: list  # [(text path, first row, rows)]
    model: str | None


def _open_npy(path: Path) -> np.ndarray:
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ModelError(f"{path}: not a .npy array of embeddings ({short_message(exc)})") from None
    if not isinstance(arr, np.ndarray):
        raise ModelError(f"{path}: not a .npy array of embeddings")
    if arr.ndim != 2 or arr.dtype != np.float32:
        raise ModelError(f"{path}: holds a {arr.dtype} array of shape {arr.shape}; expected float32 rows "
                         "(n_lines, dim) as written by 'scbow-numba embed'")
    if arr.shape[1] < 1:
        raise ModelError(f"{path}: embeddings of 0 dimensions")
    return arr


def _open_source(embeddings, text=None, model=None) -> _Source:
    path = Path(embeddings)
    if not path.exists():
        raise ModelError(f"{path}: no such file or directory (give the .npy file or the shard directory "
                         "written by 'scbow-numba embed')")
    if path.is_dir():
        if (path / INDEX_JSON).is_file():
            raise ModelError(f"{path}: is a sentence index already; give the embeddings it was built from")
        if not (path / "manifest.json").is_file():
            if (path / "config.json").is_file() and (path / "vectors.npy").is_file():
                raise ModelError(f"{path}: is a model directory; give the embeddings written by "
                                 "'scbow-numba embed MODEL INPUT -o X.npy'")
            raise ModelError(f"{path}: directory has no manifest.json: not the shards of a finished cluster embed "
                             "(run the same 'scbow-numba embed ... --workers N' again to finish it)")
        from .cluster import open_shards

        shards = open_shards(path)
        shards.check_sources()  # rows of a text that changed since are not its lines
        if text is not None:
            raise ModelError("the text of shards is named by their manifest; give no text file with a shard directory")
        files: list = []
        row = 0
        for s in shards.manifest["shards"]:
            name = s["file"]
            if files and files[-1][0] == name:
                expected = files[-1][2] + 1
                if s["first_line"] != expected:
                    raise ModelError(f"{path / 'manifest.json'}: shards of {name} are not in line order")
                files[-1][2] += s["rows"]
            else:
                if any(f[0] == name for f in files):
                    raise ModelError(f"{path / 'manifest.json'}: the shards of {name} are not together")
                if s["first_line"] != 1:
                    raise ModelError(f"{path / 'manifest.json'}: the first shard of {name} starts at line "
                                     f"{s['first_line']}")
                files.append([name, row, s["rows"]])
            row += s["rows"]
        if len(shards) and shards.shape[1] < 1:
            raise ModelError(f"{path / 'manifest.json'}: says the embeddings have no dimensions")
        return _Source(shards, "shards", path, [tuple(f) for f in files],
                       model if model is not None else shards.manifest.get("model"))
    what = _not_regular(path)
    if what is not None:
        raise ModelError(f"{path}: {what}; give the .npy file or the shard directory written by 'scbow-numba embed'")
    arr = _open_npy(path)
    if text is None:
        raise ModelError(f"{path}: give the text file its rows came from (the INPUT of 'scbow-numba embed'), "
                         "so that answers can show the lines")
    return _Source(arr, "npy", path, [(str(text), 0, arr.shape[0])], None if model is None else str(model))


def _line_starts(stream, copy_to=None, block: int = 1 << 24) -> tuple[np.ndarray, int]:
    """Byte offsets of the starts of the lines of a binary stream, split as universal newlines
    split them (``\\n``, ``\\r\\n``, lone ``\\r``); and the stream's length. ``copy_to``: a binary
    file the bytes are also written to."""
    starts = [np.zeros(1, dtype=np.int64)]
    pos = 0
    pending_cr = False  # the previous block ended with \r: a line ends there unless \n follows
    while True:
        data = stream.read(block)
        if not data:
            break
        if copy_to is not None:
            copy_to.write(data)
        buf = np.frombuffer(data, dtype=np.uint8)
        nl = buf == 10
        cr = buf == 13
        ends = nl.copy()
        # a \r ends a line unless a \n follows it (then the \n ends it)
        cr_alone = cr.copy()
        cr_alone[:-1] &= ~nl[1:]
        cr_alone[-1] = False  # decided with the next block
        ends |= cr_alone
        if pending_cr and not nl[0]:
            starts.append(np.array([pos], dtype=np.int64))
        pending_cr = bool(cr[-1])
        starts.append(np.flatnonzero(ends).astype(np.int64) + pos + 1)
        pos += len(data)
    if pending_cr:
        starts.append(np.array([pos], dtype=np.int64))
    out = np.concatenate(starts)
    if out[-1] == pos:  # a line starting at the very end is no line
        out = out[:-1]
    return out, pos


def _not_regular(path: Path) -> str | None:
    """What ``path`` is when it is not a regular file (after links): "no such file", "is a
    directory", "not a regular file" (a FIFO or a device, which would block or never end)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if not stat.S_ISREG(mode):
        return "not a regular file (a pipe, a device or a socket)"
    return None


class _Digesting:
    """A binary file that ``write`` writes to, keeping the blake2b digest of what was written."""

    def __init__(self, fh):
        self.fh = fh
        self.hash = hashlib.blake2b(digest_size=32)

    def write(self, data) -> int:
        self.hash.update(data)
        return self.fh.write(data)


def _file_digest(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _index_text(files, out_dir: Path, progress=None) -> tuple[np.ndarray, list[dict]]:
    """Offsets of every row's line, and the records of the text files (copied when compressed).

    Read through :func:`scbow.text.reader.open_bytes`, the tool's one reader of text: every read
    or decompression failure is one CorpusError naming the file.
    """
    from ..text.reader import open_bytes

    all_starts = []
    records = []
    for i, (name, first_row, rows) in enumerate(files):
        path = Path(name)
        what = _not_regular(path)
        if what is not None:
            raise CorpusError(f"{path}: {what}, expected the text file the embeddings came from")
        if progress is not None:
            progress(f"reading the lines of {path}")
        try:
            st = path.stat()
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None
        with open_bytes(path) as fh:
            if fh.kind is None:
                starts, size = _line_starts(fh)
                record = {"file": str(path.resolve()), "text": str(path.resolve()), "bytes": size,
                          "mtime_ns": st.st_mtime_ns}
            else:
                copy = f"text-{i:03d}.txt"
                with open(out_dir / copy, "wb") as dst:
                    digesting = _Digesting(dst)
                    starts, size = _line_starts(fh, digesting)
                record = {"file": str(path.resolve()), "text": copy, "bytes": size, "compressed_bytes": st.st_size,
                          "mtime_ns": st.st_mtime_ns, "blake2b": digesting.hash.hexdigest()}
        if len(starts) != rows:
            raise CorpusError(f"{path}: has {len(starts):,} lines but the embeddings have {rows:,} rows for it; "
                              "give the very file that was embedded")
        records.append({**record, "first_row": first_row, "rows": rows})
        all_starts.append(starts)
    return (np.concatenate(all_starts) if all_starts else np.zeros(0, np.int64)), records


def model_fingerprint(model) -> str | None:
    """What identifies a model, recorded in an index so that a query with another one is refused.

    A model directory: a digest of its ``config.json`` and the size of its ``vectors.npy``.
    A word2vec/GloVe file: ``file-`` and a digest of its bytes (reading it costs less than
    loading it). None when ``model`` is neither.
    """
    path = Path(model)
    if path.is_dir():
        try:
            config = (path / "config.json").read_bytes()
            size = (path / "vectors.npy").stat().st_size
        except OSError:
            return None
        return hashlib.sha256(config + str(size).encode()).hexdigest()[:16]
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 22):
                digest.update(chunk)
    except OSError:
        return None
    return "file-" + digest.hexdigest()[:16]


def _check_model(model, dim: int, what: str) -> str:
    """The fingerprint of the model ``model`` (``what``: how it was named) after checking that it is
    a model (a directory or a word2vec/GloVe file that loads) whose vectors have ``dim`` dims."""
    from ..vectors.formats import load_model

    path = Path(model)
    if not path.exists():
        raise ModelError(f"{what} {path}: no such model; give the model that embedded the lines")
    if (path / INDEX_JSON).is_file():
        raise ModelError(f"{what} {path}: is a sentence index, not a model")
    loaded = load_model(path)  # ModelError naming what is wrong for anything that is not a model
    if loaded.dim != dim:
        raise ModelError(f"{what} {path}: has {loaded.dim} dims but the embeddings have {dim}: not the model "
                         "that embedded them")
    fp = model_fingerprint(path)
    if fp is None:
        raise ModelError(f"{what} {path}: cannot be read")
    return fp


def _inside_model(out_dir: Path) -> None:
    """ModelError when ``out_dir`` is a model directory (or a checkpoint) or lies inside one."""
    from ..files import holds_model, refuse_inside_model

    what = holds_model(out_dir)
    if what is not None:
        raise ModelError(f"-o {out_dir}: is {what}; refusing to replace it with an index (choose another path)")
    refuse_inside_model(out_dir, "-o")
    try:
        inside = next((p for p in out_dir.resolve().parents if (p / INDEX_JSON).is_file()), None)
    except (OSError, RuntimeError):
        inside = None
    if inside is not None:
        raise ModelError(f"-o {out_dir}: is inside the sentence index {inside}; refusing to write into it "
                         "(choose a path outside it)")


def _leftover_names(out_dir: Path) -> tuple[Path, re.Pattern]:
    """The folder where :func:`scbow.files.atomic_dir` puts the temporaries of ``out_dir``, and their names."""
    out_dir = Path(out_dir)
    # scbow.files.temp_dir_beside: tempfile.mkdtemp(prefix=".NAME.tmp-", dir=resolved parent)
    return out_dir.resolve().parent, re.compile(re.escape(f".{out_dir.name}.tmp-") + r"[a-z0-9_]{8}")


def _own_file(name: str) -> bool:
    return (name in (BUILD_MARKER, TEMP_MARKER, INDEX_JSON, INDEX_FILE, IDS_FILE, OFFSETS_FILE)
            or bool(COPY_NAME.fullmatch(name)))


def _marker_is_ours(path: Path) -> bool:
    """True when ``path`` is a regular file (not a link) holding this module's build marker."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        marker = os.read(fd, 4096)
    except OSError:
        return False
    finally:
        os.close(fd)
    try:
        found = json.loads(marker.decode("utf-8"))
    except ValueError:
        return False
    return isinstance(found, dict) and found.get("format") == MARKER_FORMAT


def _not_an_index_of_ours(directory: Path) -> str | None:
    """Why the existing directory ``directory`` may not be replaced by a new index (None: it may).

    It may when it is empty, or provably a sentence index this tool wrote: an ``index.json``
    that opens as one (format marker, version and every field), and nothing else but the
    files a build writes (the graph, ids, offsets, the copies of compressed texts that
    ``index.json`` names, the build marker, which must be ours when present): no other file,
    no subdirectory, no symbolic link, nothing that is not a regular file.
    """
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        return f"it cannot be listed: {exc.strerror or exc}"
    if not entries:
        return None
    for e in sorted(entries, key=lambda e: e.name):
        try:
            if e.is_symlink():
                return f"it holds {e.name}, a symbolic link"
            if e.is_dir(follow_symlinks=False):
                return f"it holds the folder {e.name}, which no index build writes"
            if not e.is_file(follow_symlinks=False):
                return f"it holds {e.name}, which is not a regular file"
        except OSError:
            return f"{e.name} cannot be examined"
        if e.name == TEMP_MARKER or not _own_file(e.name):
            return f"it holds {e.name}, which no index build writes"
    names = {e.name for e in entries}
    if INDEX_JSON not in names:
        return f"it has no {INDEX_JSON}"
    try:
        info = _read_info(directory)
    except ModelError:
        return f"its {INDEX_JSON} is not that of a sentence index"
    copies = {f["text"] for f in info["files"]}
    stray = sorted(n for n in names if COPY_NAME.fullmatch(n) and n not in copies)
    if stray:
        return f"it holds {stray[0]}, which its {INDEX_JSON} does not name"
    if BUILD_MARKER in names and not _marker_is_ours(directory / BUILD_MARKER):
        return f"its {BUILD_MARKER} is not the marker of an index build"
    return None


def _check_replaceable(out_dir: Path) -> None:
    """ModelError unless an index may be written at ``out_dir``: nothing there, an empty directory,
    or a sentence index this tool wrote (:func:`_not_an_index_of_ours`), which is replaced whole."""
    if out_dir.is_symlink():
        raise ModelError(f"{out_dir}: is a symbolic link; refusing to replace it (give a directory path)")
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise ModelError(f"{out_dir}: exists and is not a directory; refusing to replace it")
    why = _not_an_index_of_ours(out_dir)
    if why is not None:
        raise ModelError(f"{out_dir}: not empty and not a sentence index; refusing to replace it ({why})")


def remove_leftovers(out_dir, note=None) -> list[Path]:
    """Remove the unfinished builds of ``out_dir`` that a killed ``index`` left beside it; returns them.

    Removed is only a directory named as :func:`scbow.files.atomic_dir` names its
    temporaries (``.NAME.tmp-XXXXXXXX``), not a symbolic link, holding this module's build
    marker (whose flock no live build holds) and nothing but regular files an index build
    writes. Anything else, even an empty directory of that name, is left alone.
    """
    try:
        import fcntl
    except ImportError:  # no flock: a live build could not be told from a dead one
        return []
    parent, pattern = _leftover_names(out_dir)
    removed: list[Path] = []
    try:
        entries = [e for e in os.scandir(parent) if pattern.fullmatch(e.name)]
    except OSError:
        return removed
    for entry in entries:
        try:
            if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                continue
            fd = os.open(os.path.join(entry.path, BUILD_MARKER), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a build still running
            marker = os.read(fd, 4096)
            try:
                ours = json.loads(marker.decode("utf-8")).get("format") == MARKER_FORMAT
            except (ValueError, AttributeError):
                ours = False
            if not ours:
                continue
            members = list(os.scandir(entry.path))
            if not all(_own_file(m.name) and m.is_file(follow_symlinks=False) for m in members):
                continue
            for m in members:
                if m.name != BUILD_MARKER:
                    os.unlink(m.path)
            os.unlink(os.path.join(entry.path, BUILD_MARKER))
            os.rmdir(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            continue
        finally:
            os.close(fd)
    if removed and note is not None:
        names = ", ".join(p.name for p in removed)
        note(f"removed {len(removed)} unfinished build{'s' if len(removed) > 1 else ''} of {out_dir} left by an "
             f"earlier run that was killed: {names}")
    return removed


class _BuildMarker:
    """``with _BuildMarker(tmp):`` the marker of a build in progress, written and flock-ed until the block ends."""

    def __init__(self, directory: Path):
        self.path = Path(directory) / BUILD_MARKER
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            import fcntl

            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except ImportError:
            pass
        os.write(self.fd, (json.dumps({"format": MARKER_FORMAT, "pid": os.getpid()}) + "\n").encode())
        os.fchmod(self.fd, permissions())
        return self

    def __exit__(self, *exc):
        os.close(self.fd)  # releases the lock


# -- building ---------------------------------------------------------------------------


def build_index(embeddings, lines_source, out_dir, metric: str = "cosine", M: int = DEFAULT_M,
                ef_construction: int = DEFAULT_EF_CONSTRUCTION, progress=None, threads: int = 0,
                model=None, default_model: bool = False, note=None) -> dict:
    """Build a sentence index of ``embeddings`` in ``out_dir`` (replaced atomically); returns its ``index.json``.

    ``embeddings``: a ``.npy`` file of float32 rows (``scbow-numba embed``) or a directory of
    shards (a cluster embed; ``manifest.json`` names their text files). ``lines_source``:
    the text file the rows of a ``.npy`` came from (None for shards). ``progress(message)``
    is called with a line now and then, ``note(message)`` with what the user should know
    (no model recorded, leftovers removed). ``threads``: threads adding to the graph (0:
    all cores). ``model``: the model (directory or word2vec/GloVe file) the embeddings came
    from, checked and recorded so that a query with another model is refused (shards
    record theirs); with ``default_model``, the default model (``$SCBOW_MODEL``, ...) is
    recorded when neither names one and it exists, as every command falls back to it.
    The unfinished builds of ``out_dir`` a killed run left beside it are removed first
    (:func:`remove_leftovers`).
    """
    if metric != "cosine":
        raise ValueError(f"metric must be 'cosine', got {metric!r}")
    if M < 2 or ef_construction < 1:
        raise ValueError("M must be at least 2 and ef_construction at least 1")
    faiss = _faiss()
    source = _open_source(embeddings, lines_source, model)
    out_dir = Path(out_dir)
    _inside_model(out_dir)
    _check_replaceable(out_dir)
    for name, _, _ in source.files:  # before the notes about the model: what cannot be read is said first
        what = _not_regular(Path(name))
        if what is not None:
            raise CorpusError(f"{name}: {what}, expected the text file the embeddings came from")
    n_rows, dim = int(source.rows.shape[0]), int(source.rows.shape[1])
    model_dir, fingerprint = _model_to_record(source, model, dim, default_model, note)
    remove_leftovers(out_dir, note)
    t0 = time.perf_counter()
    with atomic_dir(out_dir) as tmp, _BuildMarker(tmp):
        tmp = Path(tmp)
        offsets, files = _index_text(source.files, tmp, progress)
        np.save(tmp / OFFSETS_FILE, offsets)
        graph = faiss.IndexHNSWFlat(dim, M, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = ef_construction
        graph.hnsw.efSearch = DEFAULT_EF
        ids = []
        count = 0
        skipped = 0
        for start in range(0, n_rows, CHUNK_ROWS):
            rows = np.asarray(source.rows[start : start + CHUNK_ROWS], dtype=np.float32)
            norms = np.linalg.norm(rows, axis=1)
            ok = np.isfinite(norms) & (norms > 0)
            skipped += int((~ok).sum())
            if ok.any():
                ids.append(np.flatnonzero(ok).astype(np.int64) + start)
                with _omp_threads(faiss, threads):
                    graph.add(np.ascontiguousarray(rows[ok] / norms[ok, None], dtype=np.float32))
                count += int(ok.sum())
            if progress is not None:
                done = min(start + CHUNK_ROWS, n_rows)
                rate = done / max(time.perf_counter() - t0, 1e-9)
                progress(f"indexed {done:,} of {n_rows:,} rows ({rate:,.0f} rows/s)")
        if count == 0:
            raise CorpusError(f"{source.path}: no row has an embedding (every line had nothing to average); "
                              "nothing to index")
        np.save(tmp / IDS_FILE, np.concatenate(ids))
        faiss.write_index(graph, str(tmp / INDEX_FILE))
        positions = _sample_positions(count)
        info = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "library": LIBRARY, "library_version": _library_version(),
            "metric": metric, "dim": dim, "count": count, "rows": n_rows, "skipped_rows": skipped,
            "embeddings": {"kind": source.kind, "path": str(source.path.resolve())},
            "model": None if model_dir is None else str(Path(model_dir).resolve()),
            "model_fingerprint": fingerprint,
            "params": {"M": M, "ef_construction": ef_construction, "ef_search": DEFAULT_EF},
            "index_bytes": (tmp / INDEX_FILE).stat().st_size,
            "vector_sample": {"positions": positions, "blake2b": _vectors_digest(_stored_vectors(graph, positions))},
            "files": files,
            "build_seconds": round(time.perf_counter() - t0, 3),
        }
        (tmp / INDEX_JSON).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
        _check_replaceable(out_dir)  # again: what is there may have changed during the build
    return info


def _model_to_record(source: _Source, model, dim: int, default_model: bool, note) -> tuple[str | None, str | None]:
    """The model an index records and its fingerprint, checked (see :func:`build_index`)."""
    from ..vectors.modeldir import default_model_dir

    shards_model = source.rows.manifest.get("model") if source.kind == "shards" else None
    if shards_model is not None and not isinstance(shards_model, str):
        raise ModelError(f"{source.path / 'manifest.json'}: damaged shard directory (its model is not a path)")
    if model is not None:
        fingerprint = _check_model(model, dim, "-m")
        if shards_model is not None and Path(shards_model).exists() and model_fingerprint(shards_model) != fingerprint:
            raise ModelError(f"-m {model}: is not the model the shards were embedded with ({shards_model})")
        return str(model), fingerprint
    if shards_model is not None:
        if not Path(shards_model).exists():
            raise ModelError(f"{source.path}: the shards were embedded with the model {shards_model}, which is "
                             "gone; give the model with -m")
        return shards_model, _check_model(shards_model, dim, "the model of the shards")
    if not default_model:
        return None, None
    default = default_model_dir()
    if default.exists():
        try:
            fingerprint = _check_model(default, dim, "the default model")
        except ModelError as exc:
            why = str(exc)
        else:
            if note is not None:
                note(f"recorded the default model {default} as the one that embedded the lines: queries with "
                     "another model will be refused (give -m MODEL to name another)")
            return str(default), fingerprint
    else:
        why = f"no default model at {default}"
    if note is not None:
        note(f"no model recorded (no -m; {why}): queries with any {dim}-dim model will be answered; give -m MODEL, "
             "the model that embedded the lines, to refuse the others")
    return None, None


# -- opening and searching ----------------------------------------------------------------


def _damaged(path: Path, why: str) -> ModelError:
    """The error for a damaged part of an index: ``path`` names the file (or the directory)."""
    return ModelError(f"{path}: damaged sentence index ({why}); build it again with 'scbow-numba index'")


def _sample_positions(count: int, n: int = SAMPLE_VECTORS) -> list[int]:
    """Up to ``n`` positions of the graph's vectors, spread from the first to the last."""
    return sorted({int(round(x)) for x in np.linspace(0, count - 1, min(n, count))})


def _stored_vectors(graph, positions) -> np.ndarray:
    """The vectors the graph stores at ``positions`` (float32, (len, dim))."""
    return np.stack([np.asarray(graph.reconstruct(int(i)), dtype=np.float32) for i in positions])


def _vectors_digest(vectors: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(vectors, dtype="<f4").tobytes(), digest_size=32).hexdigest()


_DIGEST = re.compile(r"[0-9a-f]{64}")


def _is_int(value, low: int = 0) -> bool:
    """A JSON integer (not a bool) of at least ``low``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _check_info(info: dict) -> str | None:
    """What is wrong with the fields of an ``index.json`` (None: nothing): each against the shape it must have."""
    if info.get("library") != LIBRARY or info.get("metric") != "cosine":
        return f"library must be {LIBRARY!r} and metric 'cosine'"
    for key, low in (("dim", 1), ("count", 1), ("rows", 1), ("index_bytes", 1)):
        if not _is_int(info.get(key), low):
            return f"{key} must be an integer of at least {low}, not {info.get(key)!r:.40}"
    if info["rows"] < info["count"]:
        return f"{info['count']:,} vectors but only {info['rows']:,} rows"
    if "skipped_rows" in info and not _is_int(info["skipped_rows"]):
        return "skipped_rows is not a count"
    for key in ("model", "model_fingerprint"):
        if info.get(key) is not None and not isinstance(info[key], str):
            return f"{key} is not a string"
    params = info.get("params", {})
    if not isinstance(params, dict):
        return "params is not an object"
    ef = params.get("ef_search")
    if ef is not None and not (_is_int(ef, 1) and ef <= MAX_EF):
        return f"params.ef_search must be an integer from 1 to {MAX_EF:,}"
    sample = info.get("vector_sample")
    if sample is not None:
        positions = sample.get("positions") if isinstance(sample, dict) else None
        if (not isinstance(positions, list) or not 0 < len(positions) <= 1024
                or not all(_is_int(x) and x < info["count"] for x in positions)
                or not isinstance(sample.get("blake2b"), str) or not _DIGEST.fullmatch(sample["blake2b"])):
            return "vector_sample must hold positions of vectors and a blake2b digest"
    files = info.get("files")
    if not isinstance(files, list) or not files:
        return "files is not a list of text files"
    row = 0
    for i, f in enumerate(files):
        if not isinstance(f, dict):
            return f"files[{i}] is not an object"
        if not (isinstance(f.get("file"), str) and isinstance(f.get("text"), str)):
            return f"files[{i}]: file and text must be paths"
        if not all(_is_int(f.get(k)) for k in ("bytes", "first_row", "rows")):
            return f"files[{i}]: bytes, first_row and rows must be counts"
        if not _is_int(f.get("mtime_ns"), -(2**63)):  # a file may date from before 1970
            return f"files[{i}]: mtime_ns is not an integer"
        if "compressed_bytes" in f and not _is_int(f["compressed_bytes"]):
            return f"files[{i}]: compressed_bytes is not a count"
        if "blake2b" in f and not (isinstance(f["blake2b"], str) and _DIGEST.fullmatch(f["blake2b"])):
            return f"files[{i}]: blake2b is not a digest"
        if not (Path(f["text"]).is_absolute() or COPY_NAME.fullmatch(f["text"])):
            return f"files[{i}]: text is neither an absolute path nor a copy in the index"
        if f["first_row"] != row:
            return f"files[{i}] starts at row {f['first_row']:,}, not {row:,}"
        if f["rows"] > f["bytes"]:  # every line has a byte at least
            return f"files[{i}]: {f['rows']:,} lines in {f['bytes']:,} bytes"
        row += f["rows"]
    if row != info["rows"]:
        return f"the files hold {row:,} rows, not {info['rows']:,}"
    return None


def _read_info(path: Path) -> dict:
    if not path.exists():
        raise ModelError(f"{path}: no such index (build one with 'scbow-numba index')")
    if not path.is_dir():
        raise ModelError(f"{path}: not a sentence index directory (build one with 'scbow-numba index')")
    if not (path / INDEX_JSON).is_file():
        if (path / "config.json").is_file() and (path / "vectors.npy").is_file():
            raise ModelError(f"{path}: is a model directory, not a sentence index (build one with "
                             "'scbow-numba index')")
        raise ModelError(f"{path}: not a sentence index (no {INDEX_JSON}; build one with 'scbow-numba index')")
    info = read_json(path / INDEX_JSON, what="damaged sentence index")
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise _damaged(path / INDEX_JSON, "not the description of a sentence index")
    if not _is_int(info.get("format_version"), 1) or info["format_version"] > FORMAT_VERSION:
        raise ModelError(f"{path}: index format {info.get('format_version')!r:.40} is not one this scbow-numba "
                         f"understands ({FORMAT_VERSION}); upgrade scbow-numba or build the index again")
    why = _check_info(info)
    if why is not None:
        raise _damaged(path / INDEX_JSON, f"fields missing or wrong: {why}")
    return info


class Index:
    """A sentence index opened by :func:`open_index`: ``search``, ``line``, ``ef``, ``len()``."""

    def __init__(self, path: Path, info: dict, graph, ids: np.ndarray, offsets: np.ndarray):
        self.path = path
        self.info = info
        self._graph = graph
        self._ids = ids
        self._offsets = offsets
        self._first_rows = np.array([f["first_row"] for f in info["files"]], dtype=np.int64)

    @property
    def dim(self) -> int:
        return int(self.info["dim"])

    def __len__(self) -> int:
        return int(self.info["count"])

    @property
    def ef(self) -> int:
        """Candidates kept while searching: higher finds more of the true nearest, more slowly."""
        return int(self._graph.hnsw.efSearch)

    @ef.setter
    def ef(self, value: int) -> None:
        if int(value) < 1:
            raise ValueError(f"ef must be at least 1, got {value}")
        self._graph.hnsw.efSearch = int(value)

    def search(self, vectors, k: int = 10, threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows nearest to each of ``vectors`` ((n, dim) or (dim,)) by cosine.

        Returns ``(ids, scores)``: int64 rows and float32 cosines, both (n, k), best first.
        Fewer than ``k`` found (a small index): the rest of the row is id -1, score -inf.
        A query vector that is zero or not finite finds nothing.
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        q = np.asarray(vectors, dtype=np.float32)
        if q.ndim == 1:
            q = q[None, :]
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ModelError(f"query vectors of shape {tuple(np.shape(vectors))} do not fit the index's {self.dim} "
                             "dims (was it built with another model?)")
        ids = np.full((len(q), k), -1, dtype=np.int64)
        scores = np.full((len(q), k), -np.inf, dtype=np.float32)
        norms = np.linalg.norm(q, axis=1)
        ok = np.isfinite(norms) & (norms > 0)
        if not ok.any():
            return ids, scores
        qn = np.ascontiguousarray(q[ok] / norms[ok, None])
        with _omp_threads(_faiss(), threads):
            sims, pos = self._graph.search(qn, k)
        found = (pos >= 0) & (pos < len(self._ids))
        graph_file = self.path / INDEX_FILE
        if len(self) and not found[:, 0].all():
            raise _damaged(graph_file, "a search of a non-empty index found nothing")
        sane = ~found | (np.isfinite(sims) & (np.abs(sims) <= 1 + COSINE_SLACK))
        if not sane.all():
            raise _damaged(graph_file, f"a search scored {float(sims[~sane][0]):.4g}, which is no cosine")
        rows = np.where(found, np.asarray(self._ids)[np.where(found, pos, 0)], -1)
        bad = found & ((rows < 0) | (rows >= int(self.info["rows"])))
        if bad.any():
            raise _damaged(self.path / IDS_FILE, f"row {int(rows[bad][0]):,} of vector {int(pos[bad][0]):,} is not "
                                                 f"one of the {int(self.info['rows']):,} rows")
        ids[ok] = rows
        scores[ok] = np.where(found, sims, -np.inf)
        return ids, scores

    def _file_of(self, row_id: int) -> dict:
        if not 0 <= row_id < int(self.info["rows"]):
            raise IndexError(f"row {row_id} is not in the index ({self.info['rows']} rows)")
        return self.info["files"][int(np.searchsorted(self._first_rows, row_id, side="right")) - 1]

    def line(self, row_id: int) -> tuple[str, int, str]:
        """``(file, line number (1-based), text)`` of row ``row_id``.

        Raises IndexError for a row the index does not have, CorpusError when the text file
        changed since the index was built, ModelError when the index itself is damaged.
        """
        row_id = int(row_id)
        f = self._file_of(row_id)
        text_path = Path(f["text"])
        copy = not text_path.is_absolute()
        if copy:
            text_path = self.path / text_path
        else:
            try:
                st = text_path.stat()
            except OSError:
                raise CorpusError(f"{text_path}: the text of the index is gone (no such file); build the index "
                                  "again") from None
            if st.st_size != f["bytes"] or st.st_mtime_ns != f["mtime_ns"]:
                raise CorpusError(f"{text_path}: changed since the index was built; build the index again")
        first, last = f["first_row"], f["first_row"] + f["rows"] - 1
        start = int(self._offsets[row_id])
        stop = int(self._offsets[row_id + 1]) if row_id < last else int(f["bytes"])
        if not 0 <= start < stop <= f["bytes"] or (row_id == first and start != 0):
            raise _damaged(self.path / OFFSETS_FILE, f"row {row_id:,} at bytes {start:,}:{stop:,} of a "
                                                     f"{f['bytes']:,}-byte text")
        raw = read_range(text_path, start, stop)
        # the line's bytes: its text, then one line end (\n, \r\n or \r; none at the end of the file)
        end = 2 if raw.endswith(b"\r\n") else 1 if raw.endswith((b"\n", b"\r")) else 0
        body = raw[: len(raw) - end]
        if len(raw) != stop - start or b"\n" in body or b"\r" in body or (end == 0 and row_id < last):
            why = f"line {row_id - first + 1:,} is not at bytes {start:,}:{stop:,} any more"
            if copy:
                raise _damaged(text_path, why)
            raise CorpusError(f"{text_path}: changed since the index was built ({why}); build the index again")
        text = body.decode("utf-8", errors="replace")
        number = row_id - first + 1
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        return f["file"], number, text

    def __repr__(self) -> str:
        return f"<scbow Index {self.path}: {len(self):,} sentences x {self.dim} dims, ef {self.ef}>"


def _faiss_message(exc: Exception) -> str:
    """faiss's error without the C++ function and source line it names first."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    text = re.sub(r"^Error in .*? at \S+:\d+: ", "", text)
    text = re.sub(r"^Error: '.*?' failed: ", "", text)
    if text.startswith("read error"):
        return "truncated (" + text.split(" (")[0] + ")"
    return text if len(text) <= 120 else text[:117] + "..."


def _int64_column(path: Path, name: str, length: int, what: str) -> np.ndarray:
    """The int64 (length,) array ``path/name``, memory-mapped; ModelError when damaged."""
    what = _not_regular(path / name)
    if what is not None:
        raise _damaged(path / name, "missing" if what == "no such file" else what)
    try:
        with open(path / name, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise _damaged(path / name, f"cannot read: {exc.strerror or exc}") from None
    if magic != b"\x93NUMPY":
        raise _damaged(path / name, "not a .npy array")
    try:
        column = np.load(path / name, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise _damaged(path / name, short_message(exc)) from None
    if not isinstance(column, np.ndarray) or column.ndim != 1 or column.dtype != np.int64 or len(column) != length:
        shape = f"{column.dtype} {column.shape}" if isinstance(column, np.ndarray) else "not an array"
        raise _damaged(path / name, f"holds {shape}, not {what}: int64 ({length:,},)")
    return column


def _check_ids(where: Path, ids: np.ndarray, rows: int, block: int = 1 << 22) -> None:
    """Refuse ids that are not what a build writes: rows from 0 to ``rows - 1``, strictly
    increasing (each row once, in order), so that no permutation or repeat gives wrong lines."""
    if not len(ids):
        return
    for start in range(0, len(ids) - 1, block):  # the whole array, a block at a time (bounded memory)
        chunk = np.asarray(ids[start : start + block + 1])
        bad = np.flatnonzero(chunk[1:] <= chunk[:-1])
        if len(bad):
            i = start + int(bad[0])
            raise _damaged(where, f"vector {i + 1:,} has row {int(chunk[bad[0] + 1]):,} after row "
                                  f"{int(chunk[bad[0]]):,}: the rows of a build are strictly increasing")
    first, last = int(ids[0]), int(ids[-1])
    if first < 0 or last >= rows:
        row = first if first < 0 else last
        raise _damaged(where, f"row {row:,} is not one of the {rows:,} rows")


def _check_stored_vectors(graph_file: Path, graph, info: dict) -> None:
    """A few of the graph's stored vectors: finite and unit length (a build adds only those), and,
    when ``index.json`` records their digest, the very vectors the build added (not another graph)."""
    sample = info.get("vector_sample")
    positions = sample["positions"] if sample else _sample_positions(int(info["count"]))
    try:
        vectors = _stored_vectors(graph, positions)
    except (RuntimeError, ValueError, MemoryError) as exc:
        raise _damaged(graph_file, f"its vectors cannot be read: {_faiss_message(exc)}") from None
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    bad = np.flatnonzero(~np.isfinite(norms) | (np.abs(norms - 1) > COSINE_SLACK))
    if len(bad):
        raise _damaged(graph_file, f"vector {positions[int(bad[0])]:,} has length {norms[bad[0]]:.4g}, not 1: "
                                   "not the graph of normalised vectors a build writes")
    if sample and _vectors_digest(vectors) != sample["blake2b"]:
        raise _damaged(graph_file, f"its vectors are not the ones the build added (their digest is not the one in "
                                   f"{INDEX_JSON}): another graph?")


def open_index(path) -> Index:
    """Open the sentence index in directory ``path`` (memory-mapped); ModelError when it is not one."""
    path = Path(path)
    info = _read_info(path)
    graph_file = path / INDEX_FILE
    what = _not_regular(graph_file)
    if what is not None:
        raise _damaged(graph_file, "missing" if what == "no such file" else what)
    if graph_file.stat().st_size != int(info["index_bytes"]):
        raise _damaged(graph_file, f"has {graph_file.stat().st_size:,} bytes, {INDEX_JSON} says "
                                   f"{int(info['index_bytes']):,}")
    offsets = _int64_column(path, OFFSETS_FILE, int(info["rows"]), "one offset per row")
    ids = _int64_column(path, IDS_FILE, int(info["count"]), "one row per vector")
    _check_ids(path / IDS_FILE, ids, int(info["rows"]))
    for f in (f for f in info["files"] if f["rows"]):
        # each file's lines start at its byte 0 and the last starts before its end (each line is
        # checked against its neighbours when it is read: the whole array is not read here)
        first, last = int(offsets[f["first_row"]]), int(offsets[f["first_row"] + f["rows"] - 1])
        if first != 0 or not 0 <= last < f["bytes"]:
            raise _damaged(path / OFFSETS_FILE, f"the lines of {f['file']} start at byte {first:,} and end at byte "
                                                f"{last:,} of {f['bytes']:,}")
    for f in info["files"]:  # the index's own copies of compressed texts: there, and whole
        if Path(f["text"]).is_absolute():
            continue  # the user's text: checked when a line is read (changed since the build?)
        copy = path / f["text"]
        what = _not_regular(copy)
        if what is not None:
            what = "missing" if what == "no such file" else what
            raise _damaged(copy, f"{what}: the text of {f['file']} decompressed when the index was built")
        try:
            size = copy.stat().st_size
            # checked whole when small; a larger copy is checked line by line when read
            digest = _file_digest(copy) if "blake2b" in f and size == f["bytes"] <= COPY_DIGEST_LIMIT else None
        except OSError as exc:
            raise _damaged(copy, f"cannot read: {exc.strerror or exc}") from None
        if size != f["bytes"]:
            raise _damaged(copy, f"has {size:,} bytes, {INDEX_JSON} says {f['bytes']:,}")
        if digest is not None and digest != f["blake2b"]:
            raise _damaged(copy, f"its bytes changed since the build (its blake2b digest is not the one in {INDEX_JSON})")
    faiss = _faiss()
    # memory-mapped: the vectors and the graph's arrays are read when a search touches them
    flags = getattr(faiss, "IO_FLAG_MMAP_IFC", getattr(faiss, "IO_FLAG_MMAP", 0))
    try:
        graph = faiss.read_index(str(graph_file), flags)
    except (RuntimeError, ValueError, OSError, MemoryError) as exc:
        raise _damaged(graph_file, _faiss_message(exc)) from None
    if (not hasattr(graph, "hnsw") or graph.d != int(info["dim"]) or graph.ntotal != int(info["count"])
            or graph.metric_type != faiss.METRIC_INNER_PRODUCT):
        raise _damaged(graph_file, f"does not match {INDEX_JSON}")
    _check_stored_vectors(graph_file, graph, info)
    index = Index(path, info, graph, ids, offsets)
    index.ef = info.get("params", {}).get("ef_search") or DEFAULT_EF
    return index


# -- what the CLI calls -------------------------------------------------------------------


def index_command(embeddings, output, text=None, M: int = DEFAULT_M, ef_construction: int = DEFAULT_EF_CONSTRUCTION,
                  quiet: bool = False, model=None, threads: int = 0) -> str:
    """Build an index (``scbow-numba index``), with progress lines on stderr unless ``quiet``;
    returns the one-line summary to print. Without ``model`` (and shards that name theirs),
    the default model is recorded when there is one, as every command falls back to it; a
    note says so, or that no model is recorded."""
    import sys

    def progress(message: str) -> None:
        print(f"index: {message}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    # notes (no model recorded, leftovers removed) are printed with -q too: they are not progress
    info = build_index(embeddings, text, output, M=M, ef_construction=ef_construction,
                       progress=None if quiet else _throttled(progress), threads=threads, model=model,
                       default_model=True, note=progress)
    seconds = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in Path(output).iterdir() if p.is_file())
    skipped = f", {info['skipped_rows']:,} rows with no embedding left out" if info["skipped_rows"] else ""
    return (f"indexed {info['count']:,} sentences x {info['dim']} dims{skipped} in {seconds:.1f} s "
            f"({size / 2**20:,.1f} MiB); wrote {output}")


def _throttled(progress, interval: float = 2.0):
    """``progress`` called at most every ``interval`` seconds (and always for other messages than counts)."""
    last = [0.0]

    def call(message: str) -> None:
        now = time.perf_counter()
        if not message.startswith("indexed ") or now - last[0] >= interval:
            last[0] = now
            progress(message)

    return call


def check_query_model(index: "Index | os.PathLike", model_dir) -> None:
    """Refuse to query ``index`` (an :class:`Index` or its directory) with the model at ``model_dir``
    (a directory or a word2vec/GloVe file; None: unknown) unless it is the model the index
    records; an index that records none takes any model (its dims are checked on search).
    """
    if isinstance(index, Index):
        info, where = index.info, index.path
    else:
        where = Path(index)
        info = _read_info(where)
    recorded = info.get("model_fingerprint")
    if recorded is None:
        return
    name = info.get("model") or "the model recorded in it"
    if model_dir is None:
        raise ModelError(f"{where}: was built with the model {name}; give the directory the model was loaded "
                         "from (model_dir=...) so that it can be checked")
    model_dir = Path(model_dir)
    fp = model_fingerprint(model_dir)
    if fp == recorded:
        return
    if not model_dir.exists():
        raise ModelError(f"{model_dir}: no such model; the index {where} was built with {name}: query it "
                         f"with -m {name}")
    if (model_dir / INDEX_JSON).is_file():
        raise ModelError(f"-m {model_dir}: is a sentence index, not a model; query the index {where} with -m {name}")
    if model_dir.is_file() and not recorded.startswith("file-"):
        raise ModelError(f"-m {model_dir}: is a file (a word2vec/GloVe file?), which cannot be proven to be the model "
                         f"directory the index {where} was built with ({name}); query it with -m {name}")
    raise ModelError(f"{where}: was built from the embeddings of another model ({name}), not {model_dir}; "
                     f"query it with -m {name} (or build the index again with -m {model_dir})")


def _loaded_from(model) -> Path | None:
    """The model directory a loaded model's vectors are memory-mapped from (None: not known)."""
    filename = getattr(getattr(model, "vectors", None), "filename", None)
    if filename is None:
        return None
    path = Path(filename)
    return path.parent if path.name == "vectors.npy" else None


def search_command(model, sentence: str, index_path, topn: int = 10, ef: int | None = None, model_dir=None):
    """The ``topn`` indexed lines nearest to ``sentence``: ``[(cosine, file, line number, text)]``, best first.

    ``model``: a loaded :class:`scbow.vectors.model.Model` (with ``model_dir``, the directory or
    word2vec file it was loaded from; found from its memory-mapped vectors when not given)
    or a model directory. An index that records the model it was built with answers only
    with that model. ``topn`` is capped at the vectors in the index. Raises ModelError for
    an index that is not one, or one built with another model, and ValueError when the
    sentence has nothing to average.
    """
    if topn < 1:
        raise ValueError(f"topn must be at least 1, got {topn}")
    index = open_index(index_path)
    if not hasattr(model, "embed"):
        model_dir = Path(model)
        if (model_dir / INDEX_JSON).is_file():
            raise ModelError(f"{model_dir}: is a sentence index, not a model; give it as the index and the model "
                             "with -m")
        check_query_model(index, model_dir)
        from ..vectors.formats import load_model

        model = load_model(model_dir)
    else:
        check_query_model(index, model_dir if model_dir is not None else _loaded_from(model))
    if model.dim != index.dim:
        raise ModelError(f"{index_path}: holds {index.dim}-dim embeddings but the model has {model.dim} dims; "
                         "query it with the model its embeddings came from")
    topn = min(int(topn), len(index))  # there are no more to find (and a huge k would allocate for nothing)
    index.ef = min(max(int(ef if ef is not None else index.ef), topn), MAX_EF)
    q = model.embed([sentence])[0]
    if np.isnan(q).any() or not np.any(q):
        what = "no word in the vocabulary" if model.unknown_rule[0] == "omit" else "no word"
        raise ValueError(f"the sentence {sentence!r} has {what}")
    ids, scores = index.search(q, topn, threads=1)
    out = []
    for row, score in zip(ids[0].tolist(), scores[0].tolist()):
        if row < 0:
            continue
        file, number, text = index.line(row)
        out.append((float(score), file, number, text))
    return out
