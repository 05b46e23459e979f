"""A sentence index read back and checked: ``index.json``, the arrays, the graph; :class:`Index` and
:func:`open_index`.

An index directory holds:

- ``index.json``: what was built: library and version, metric (cosine), dim, count of
  vectors, the rows in all, the embeddings it came from, the model when known (and its
  ``model_id``, :func:`scbow.vectors.modeldir.model_id`), the HNSW parameters, a digest of a sample of the stored
  vectors (``vector_sample``), and the text files (path, size, modification time, first
  row, lines; for a copy, its blake2b digest).
- ``vectors.faiss``: the HNSW graph and the vectors, L2-normalised. Opened memory-mapped
  (faiss's ``IO_FLAG_MMAP_IFC``): opening costs milliseconds, and pages are read when a
  search touches them.
- ``ids.npy``: int64, the row of the embeddings of each vector of the graph, in the
  graph's order (rows of several files counted one after the other): strictly increasing.
- ``offsets.npy`` and the copies ``text-NNN.txt`` of compressed texts: :mod:`.lines`.

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
graph's give poorer recall, not wrong lines.

A directory is a sentence index when it holds ``index.json`` and ``vectors.faiss``
(:func:`output_kind`). faiss is imported here (:func:`_faiss`), only when an index is built or opened.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from ...errors import CorpusError, ModelError
from ...files import register_kind
from ...reading import read_json, read_range, short_message
from .lines import COPY_DIGEST_LIMIT, COPY_NAME, _file_digest, _not_regular

INDEX_JSON = "index.json"
INDEX_FILE = "vectors.faiss"
IDS_FILE = "ids.npy"
OFFSETS_FILE = "offsets.npy"
FORMAT = "scbow-numba sentence index"
FORMAT_VERSION = 1
LIBRARY = "faiss-cpu"
INSTALL_HINT = "pip install 'scbow-numba[index]'"

# candidates kept while searching (efSearch): with M=32, recall@10 0.963 on 500K sentences of the 100M
# corpus, 4 ms a query on 1 thread (ef 512: 0.943, 2 ms); benchmarks/results/ann_index.md
DEFAULT_EF = 1024
MAX_EF = 1 << 20
SAMPLE_VECTORS = 32  # stored vectors of the graph checked on open (unit length, and their recorded digest)
COSINE_SLACK = 1e-3  # a score beyond [-1, 1] by more than this is no cosine: a damaged graph


def _faiss():
    try:
        import faiss
    except ImportError:
        raise ModelError(f"a sentence index needs the faiss library; install it with: {INSTALL_HINT}") from None
    return faiss


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


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a sentence index"`` when ``directory`` is one (:func:`scbow.files.kind_of`)."""
    directory = Path(directory)
    return "a sentence index" if (directory / INDEX_JSON).is_file() and (directory / INDEX_FILE).is_file() else None


# -- reading an index back ---------------------------------------------------------------

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
    for key in ("model", "model_id", "model_fingerprint"):
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

    def _exact(self, qn: np.ndarray, k: int, block: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
        """Every stored vector's cosine with each unit query, best first, as the graph's search
        returns them (``(sims, positions)``, (n, k), -1 past the count); a block of vectors at a time."""
        count = len(self._ids)
        sims = np.empty((len(qn), count), dtype=np.float32)
        for lo in range(0, count, block):
            stored = np.asarray(self._graph.reconstruct_n(lo, min(block, count - lo)), dtype=np.float32)
            sims[:, lo:lo + len(stored)] = qn @ stored.T
        order = np.argsort(-sims, axis=1, kind="stable")
        pos = np.full((len(qn), k), -1, dtype=np.int64)
        out = np.full((len(qn), k), -np.inf, dtype=np.float32)
        pos[:, :count] = order
        out[:, :count] = np.take_along_axis(sims, order, axis=1)
        return out, pos

    def search(self, vectors, k: int = 10, threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows nearest to each of ``vectors`` ((n, dim) or (dim,)) by cosine.

        Returns ``(ids, scores)``: int64 rows and float32 cosines, both (n, k), best first.
        Fewer than ``k`` found (a small index): the rest of the row is id -1, score -inf. When
        ``k`` reaches the index's size every vector is scored exactly (the graph's walk may miss some).
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
        if k >= len(self._ids):
            # every vector asked for: the graph's walk may not reach them all, an exact pass does
            sims, pos = self._exact(qn, k)
        else:
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
    problem = _not_regular(path / name)
    if problem is not None:
        raise _damaged(path / name, "missing" if problem == "no such file" else problem)
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
