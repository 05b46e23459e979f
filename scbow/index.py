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
  parameters, and the text files (path, size, modification time, first row, lines).
- ``vectors.faiss``: the HNSW graph and the vectors, L2-normalised. Opened memory-mapped
  (faiss's ``IO_FLAG_MMAP_IFC``): opening costs milliseconds, and pages are read when a
  search touches them.
- ``ids.npy``: int64, the row of the embeddings of each vector of the graph, in the
  graph's order (rows of several files counted one after the other).
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
build leaves nothing, or the previous index, at the path.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import CorpusError, ModelError
from .files import atomic_dir, read_json, read_range, short_message

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
_COMPRESSED = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))


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

    rows: object  # np.ndarray (memory-mapped) or scbow.cluster.Shards
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
    arr = _open_npy(path)
    if text is None:
        raise ModelError(f"{path}: give the text file its rows came from (the INPUT of 'scbow-numba embed'), "
                         "so that answers can show the lines")
    return _Source(arr, "npy", path, [(str(text), 0, arr.shape[0])], None if model is None else str(model))


def _opener(path: Path):
    """``open`` for a plain file, else the decompressing opener of its format (by its magic bytes)."""
    with open(path, "rb") as fh:
        magic = fh.read(6)
    for prefix, opener in _COMPRESSED:
        if magic.startswith(prefix):
            return opener
    return None


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


def _index_text(files, out_dir: Path, progress=None) -> tuple[np.ndarray, list[dict]]:
    """Offsets of every row's line, and the records of the text files (copied when compressed)."""
    all_starts = []
    records = []
    for i, (name, first_row, rows) in enumerate(files):
        path = Path(name)
        if path.is_dir():
            raise CorpusError(f"{path}: is a directory, expected the text file the embeddings came from")
        if not path.is_file():
            raise CorpusError(f"{path}: no such file (the text the embeddings came from)")
        if progress is not None:
            progress(f"reading the lines of {path}")
        try:
            st = path.stat()
            opener = _opener(path)
            if opener is None:
                with open(path, "rb") as fh:
                    starts, size = _line_starts(fh)
                record = {"file": str(path.resolve()), "text": str(path.resolve()), "bytes": size,
                          "mtime_ns": st.st_mtime_ns}
            else:
                copy = f"text-{i:03d}.txt"
                with opener(path, "rb") as fh, open(out_dir / copy, "wb") as dst:
                    starts, size = _line_starts(fh, dst)
                record = {"file": str(path.resolve()), "text": copy, "bytes": size, "compressed_bytes": st.st_size,
                          "mtime_ns": st.st_mtime_ns}
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise CorpusError(f"{path}: cannot read: {short_message(exc)}") from None
        if len(starts) != rows:
            raise CorpusError(f"{path}: has {len(starts):,} lines but the embeddings have {rows:,} rows for it; "
                              "give the very file that was embedded")
        records.append({**record, "first_row": first_row, "rows": rows})
        all_starts.append(starts)
    return (np.concatenate(all_starts) if all_starts else np.zeros(0, np.int64)), records


def model_fingerprint(model_dir) -> str | None:
    """A digest of a model directory's config and the size of its vectors (None: not a model dir)."""
    path = Path(model_dir)
    try:
        config = (path / "config.json").read_bytes()
        size = (path / "vectors.npy").stat().st_size
    except OSError:
        return None
    return hashlib.sha256(config + str(size).encode()).hexdigest()[:16]


# -- building ---------------------------------------------------------------------------


def build_index(embeddings, lines_source, out_dir, metric: str = "cosine", M: int = DEFAULT_M,
                ef_construction: int = DEFAULT_EF_CONSTRUCTION, progress=None, threads: int = 0,
                model=None) -> dict:
    """Build a sentence index of ``embeddings`` in ``out_dir`` (replaced atomically); returns its ``index.json``.

    ``embeddings``: a ``.npy`` file of float32 rows (``scbow-numba embed``) or a directory of
    shards (a cluster embed; ``manifest.json`` names their text files). ``lines_source``:
    the text file the rows of a ``.npy`` came from (None for shards). ``progress(message)``
    is called with a line now and then. ``threads``: threads adding to the graph (0: all
    cores). ``model``: the model directory the embeddings came from, recorded so that a
    query with another model is refused (shards record theirs).
    """
    if metric != "cosine":
        raise ValueError(f"metric must be 'cosine', got {metric!r}")
    if M < 2 or ef_construction < 1:
        raise ValueError("M must be at least 2 and ef_construction at least 1")
    faiss = _faiss()
    source = _open_source(embeddings, lines_source, model)
    out_dir = Path(out_dir)
    if out_dir.exists() and not (out_dir / INDEX_JSON).is_file() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ModelError(f"{out_dir}: exists and is not a sentence index; refusing to replace it")
    n_rows, dim = int(source.rows.shape[0]), int(source.rows.shape[1])
    t0 = time.perf_counter()
    with atomic_dir(out_dir) as tmp:
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
        model_dir = source.model
        info = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "library": LIBRARY, "library_version": _library_version(),
            "metric": metric, "dim": dim, "count": count, "rows": n_rows, "skipped_rows": skipped,
            "embeddings": {"kind": source.kind, "path": str(source.path.resolve())},
            "model": None if model_dir is None else str(Path(model_dir).resolve()),
            "model_fingerprint": None if model_dir is None else model_fingerprint(model_dir),
            "params": {"M": M, "ef_construction": ef_construction, "ef_search": DEFAULT_EF},
            "index_bytes": (tmp / INDEX_FILE).stat().st_size,
            "files": files,
            "build_seconds": round(time.perf_counter() - t0, 3),
        }
        (tmp / INDEX_JSON).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return info


# -- opening and searching ----------------------------------------------------------------


def _damaged(path: Path, why: str) -> ModelError:
    return ModelError(f"{path}: damaged sentence index ({why}); build it again with 'scbow-numba index'")


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
    if not isinstance(info.get("format_version"), int) or info["format_version"] > FORMAT_VERSION:
        raise ModelError(f"{path}: index format {info.get('format_version')!r} is not one this scbow-numba "
                         f"understands ({FORMAT_VERSION}); upgrade scbow-numba or build the index again")
    try:
        ok = (info["library"] == LIBRARY and info["metric"] == "cosine" and int(info["dim"]) > 0
              and int(info["count"]) > 0 and int(info["rows"]) >= int(info["count"])
              and int(info["index_bytes"]) > 0 and isinstance(info["files"], list)
              and all(isinstance(f, dict) and {"file", "text", "bytes", "first_row", "rows"} <= f.keys()
                      for f in info["files"]))
    except (KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise _damaged(path / INDEX_JSON, "fields missing or wrong")
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
        found = pos >= 0
        ids[ok] = np.where(found, np.asarray(self._ids)[np.where(found, pos, 0)], -1)
        scores[ok] = np.where(found, sims, -np.inf)
        return ids, scores

    def _file_of(self, row_id: int) -> dict:
        if not 0 <= row_id < int(self.info["rows"]):
            raise IndexError(f"row {row_id} is not in the index ({self.info['rows']} rows)")
        return self.info["files"][int(np.searchsorted(self._first_rows, row_id, side="right")) - 1]

    def line(self, row_id: int) -> tuple[str, int, str]:
        """``(file, line number (1-based), text)`` of row ``row_id``."""
        row_id = int(row_id)
        f = self._file_of(row_id)
        text_path = Path(f["text"])
        if not text_path.is_absolute():
            text_path = self.path / text_path
        else:
            try:
                st = text_path.stat()
            except OSError:
                raise CorpusError(f"{text_path}: the text of the index is gone (no such file); build the index "
                                  "again") from None
            if st.st_size != f["bytes"] or st.st_mtime_ns != f.get("mtime_ns", st.st_mtime_ns):
                raise CorpusError(f"{text_path}: changed since the index was built; build the index again")
        start = int(self._offsets[row_id])
        last = f["first_row"] + f["rows"] - 1
        stop = int(self._offsets[row_id + 1]) if row_id < last else int(f["bytes"])
        raw = read_range(text_path, start, stop)
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        number = row_id - f["first_row"] + 1
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
    try:
        column = np.load(path / name, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise _damaged(path, f"{name}: {short_message(exc)}") from None
    if column.ndim != 1 or column.dtype != np.int64 or len(column) != length:
        raise _damaged(path, f"{name} does not hold {what}")
    return column


def open_index(path) -> Index:
    """Open the sentence index in directory ``path`` (memory-mapped); ModelError when it is not one."""
    path = Path(path)
    info = _read_info(path)
    graph_file = path / INDEX_FILE
    if not graph_file.is_file():
        raise _damaged(path, f"{INDEX_FILE} missing")
    if graph_file.stat().st_size != int(info["index_bytes"]):
        raise _damaged(path, f"{INDEX_FILE} has {graph_file.stat().st_size:,} bytes, {INDEX_JSON} says "
                             f"{int(info['index_bytes']):,}")
    offsets = _int64_column(path, OFFSETS_FILE, int(info["rows"]), "one offset per row")
    ids = _int64_column(path, IDS_FILE, int(info["count"]), "one row per vector")
    faiss = _faiss()
    # memory-mapped: the vectors and the graph's arrays are read when a search touches them
    flags = getattr(faiss, "IO_FLAG_MMAP_IFC", getattr(faiss, "IO_FLAG_MMAP", 0))
    try:
        graph = faiss.read_index(str(graph_file), flags)
    except (RuntimeError, ValueError, OSError, MemoryError) as exc:
        raise _damaged(path, f"{INDEX_FILE}: {_faiss_message(exc)}") from None
    if (not hasattr(graph, "hnsw") or graph.d != int(info["dim"]) or graph.ntotal != int(info["count"])
            or graph.metric_type != faiss.METRIC_INNER_PRODUCT):
        raise _damaged(path, f"{INDEX_FILE} does not match {INDEX_JSON}")
    index = Index(path, info, graph, ids, offsets)
    index.ef = int(info.get("params", {}).get("ef_search") or DEFAULT_EF)
    return index


# -- what the CLI calls -------------------------------------------------------------------


def index_command(embeddings, output, text=None, M: int = DEFAULT_M, ef_construction: int = DEFAULT_EF_CONSTRUCTION,
                  quiet: bool = False, model=None, threads: int = 0) -> str:
    """Build an index (``scbow-numba index``), with progress lines on stderr unless ``quiet``;
    returns the one-line summary to print."""
    import sys

    def progress(message: str) -> None:
        print(f"index: {message}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    info = build_index(embeddings, text, output, M=M, ef_construction=ef_construction,
                       progress=None if quiet else _throttled(progress), threads=threads, model=model)
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


def search_command(model, sentence: str, index_path, topn: int = 10, ef: int | None = None, model_dir=None):
    """The ``topn`` indexed lines nearest to ``sentence``: ``[(cosine, file, line number, text)]``, best first.

    ``model``: a loaded :class:`scbow.model.Model` (with ``model_dir``, the directory it was
    loaded from, when known) or a model directory. Raises ModelError for an index that is
    not one, or one built with another model, and ValueError when the sentence has nothing
    to average.
    """
    if topn < 1:
        raise ValueError(f"topn must be at least 1, got {topn}")
    index = open_index(index_path)
    if not hasattr(model, "embed"):
        model_dir = Path(model)
        if (model_dir / INDEX_JSON).is_file():
            raise ModelError(f"{model_dir}: is a sentence index, not a model; give it as the index and the model "
                             "with -m")
        from . import load

        model = load(model_dir)
    if model_dir is not None:
        fp = model_fingerprint(model_dir)
        built = index.info.get("model_fingerprint")
        if fp is not None and built is not None and fp != built:
            raise ModelError(f"{index_path}: was built from the embeddings of another model "
                             f"({index.info.get('model')}); query it with that model")
    if model.dim != index.dim:
        raise ModelError(f"{index_path}: holds {index.dim}-dim embeddings but the model has {model.dim} dims; "
                         "query it with the model its embeddings came from")
    if ef is not None:
        index.ef = max(int(ef), topn)
    elif index.ef < topn:
        index.ef = topn
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
