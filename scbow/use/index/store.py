"""A sentence index directory, read back: ``index.json``, ``vectors.faiss`` (the HNSW graph of the unit
rows), ``ids.npy`` (each vector's row), ``offsets.npy`` (each row's line start), ``text-NNN.txt`` (a
compressed text, decompressed). Damage is checked on open and at query time: one ``damaged`` error.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ...errors import CorpusError, ModelError
from ...outputs import register_kind
from ...reading import path_text, read_json, read_range, short_message
from ...text.reader import DEFAULT_ENCODING, check_regular, text_codec
from ...vectors.modeldir import output_kind as model_kind
from ...vectors.numeric import scaled_rows
from ..shards import is_count

INDEX_JSON = "index.json"
INDEX_FILE = "vectors.faiss"
IDS_FILE = "ids.npy"
OFFSETS_FILE = "offsets.npy"
COPY_NAME = re.compile(r"text-\d{3,}\.txt")  # a compressed text decompressed into the index
FORMAT = "scbow-numba sentence index"
FORMAT_VERSION = 1
LIBRARY = "faiss-cpu"
INSTALL_HINT = "pip install 'scbow-numba[index]'"
# efSearch: recall@10 0.963 on 500K sentences, 4 ms a query (benchmarks/results/ann_index.md)
DEFAULT_EF = 1024
MAX_EF = 1 << 20
COSINE_SLACK = 1e-3  # a score beyond [-1, 1] by more than this is no cosine: a damaged graph


def load_faiss():
    """The faiss module; ModelError with the install hint when it is missing."""
    try:
        import faiss
    except ImportError:
        raise ModelError(f"a sentence index needs the faiss library; install it with: {INSTALL_HINT}") from None
    return faiss


@contextmanager
def omp_threads(faiss, n: int):
    """faiss's OpenMP threads set to ``n`` (0: left as they are) while the block runs."""
    before = faiss.omp_get_max_threads()
    if n > 0:
        faiss.omp_set_num_threads(int(n))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a sentence index"`` when ``directory`` is one (:func:`scbow.outputs.kind_of`)."""
    directory = Path(directory)
    return "a sentence index" if (directory / INDEX_JSON).is_file() and (directory / INDEX_FILE).is_file() else None


def not_an_index_of_ours(directory: Path) -> str | None:
    """Why ``directory`` may not be replaced by a new index (None: it may: empty, or only an index's files)."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        return f"it cannot be listed: {exc.strerror or exc}"
    if not entries:
        return None
    for e in entries:
        if e.name not in (INDEX_JSON, INDEX_FILE, IDS_FILE, OFFSETS_FILE) and not COPY_NAME.fullmatch(e.name):
            return f"it holds {e.name}, which no index build writes"
        try:
            if e.is_symlink() or not e.is_file(follow_symlinks=False):
                return f"it holds {e.name}, which is not a regular file"
        except OSError:
            return f"{e.name} cannot be examined"
    try:
        copies = {f["text"] for f in read_info(directory)["files"]}
    except ModelError:
        return f"its {INDEX_JSON} is missing or not that of a sentence index"
    stray = [e.name for e in entries if COPY_NAME.fullmatch(e.name) and e.name not in copies]
    return f"it holds {stray[0]}, which its {INDEX_JSON} does not name" if stray else None


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def damaged(path: Path, why: str) -> ModelError:
    return ModelError(f"{path}: damaged sentence index ({why}); build it again with 'scbow-numba index'")


def _wrong_field(info: dict) -> str | None:
    """What is wrong with the fields of an ``index.json`` that opening and searching use (None: nothing)."""
    if info.get("library") != LIBRARY or info.get("metric") != "cosine":
        return f"library must be {LIBRARY!r} and metric 'cosine'"
    for key, low in (("dim", 1), ("count", 1), ("rows", 1), ("index_bytes", 1)):
        if not is_count(info.get(key), low):
            return f"{key} must be an integer of at least {low}, not {info.get(key)!r:.40}"
    if info["rows"] < info["count"]:
        return f"{info['count']:,} vectors but only {info['rows']:,} rows"
    if any(info.get(key) is not None and not isinstance(info[key], str) for key in ("model", "model_id")):
        return "model and model_id must be strings"
    params = info.get("params", {})
    ef = params.get("ef_search") if isinstance(params, dict) else 0
    if ef is not None and not (is_count(ef, 1) and ef <= MAX_EF):
        return f"params.ef_search must be an integer from 1 to {MAX_EF:,}"
    files = info.get("files")
    if not isinstance(files, list) or not files:
        return "files is not a list of text files"
    row = 0
    for i, f in enumerate(files):
        if not (isinstance(f, dict) and isinstance(f.get("file"), str) and isinstance(f.get("text"), str)
                and all(is_count(f.get(k)) for k in ("bytes", "first_row", "rows")) and is_count(f.get("mtime_ns"), -2**63)):
            return f"files[{i}] must hold file and text paths, bytes, first_row, rows and mtime_ns"
        if not (Path(f["text"]).is_absolute() or COPY_NAME.fullmatch(f["text"])):
            return f"files[{i}]: text is neither an absolute path nor a copy in the index"
        if "encoding" in f:
            try:
                text_codec(f["encoding"])
            except (ValueError, TypeError, AttributeError):
                return f"files[{i}]: encoding {f['encoding']!r} is not one Python knows"
        if f["first_row"] != row:
            return f"files[{i}] starts at row {f['first_row']:,}, not {row:,}"
        row += f["rows"]
    return None if row == info["rows"] else f"the files hold {row:,} rows, not {info['rows']:,}"


def read_info(path: Path) -> dict:
    """``path/index.json``, checked (format, version, fields); ModelError naming what is wrong."""
    path = Path(path)
    if not path.is_dir():
        raise ModelError(f"{path}: {'no such index' if not path.exists() else 'not a sentence index directory'} "
                         "(build one with 'scbow-numba index')")
    if not (path / INDEX_JSON).is_file():
        if model_kind(path):
            raise ModelError(f"{path}: is a model directory, not a sentence index (build one with "
                             "'scbow-numba index')")
        raise ModelError(f"{path}: not a sentence index (no {INDEX_JSON}; build one with 'scbow-numba index')")
    info = read_json(path / INDEX_JSON, what="damaged sentence index")
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise damaged(path / INDEX_JSON, "not the description of a sentence index")
    if not is_count(info.get("format_version"), 1) or info["format_version"] > FORMAT_VERSION:
        raise ModelError(f"{path}: index format {info.get('format_version')!r:.40} is not one this scbow-numba "
                         f"understands ({FORMAT_VERSION}); upgrade scbow-numba or build the index again")
    why = _wrong_field(info)
    if why is not None:
        raise damaged(path / INDEX_JSON, f"fields missing or wrong: {why}")
    return info


class Index:
    """A sentence index opened by :func:`open_index`: ``search``, ``line``, ``ef``, ``len()``, ``dim``."""

    def __init__(self, path: Path, info: dict, graph, ids: np.ndarray, offsets: np.ndarray):
        self.path, self.info, self.graph, self.ids, self.offsets = path, info, graph, ids, offsets
        self.first_rows = np.array([f["first_row"] for f in info["files"]], dtype=np.int64)

    @property
    def dim(self) -> int:
        return int(self.info["dim"])

    def __len__(self) -> int:
        return int(self.info["count"])

    @property
    def ef(self) -> int:
        """Candidates kept while searching: higher finds more of the true nearest, more slowly."""
        return int(self.graph.hnsw.efSearch)

    @ef.setter
    def ef(self, value: int) -> None:
        if not (_is_int(value) and 1 <= value <= MAX_EF):
            raise ValueError(f"ef must be an integer from 1 to {MAX_EF:,}, got {value!r}")
        self.graph.hnsw.efSearch = int(value)

    def _exact(self, qn: np.ndarray, k: int, block: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
        """``(sims, positions)`` of every stored vector with each unit query, as the graph's search returns them."""
        count = len(self.ids)
        sims = np.empty((len(qn), count), dtype=np.float32)
        for lo in range(0, count, block):
            stored = np.asarray(self.graph.reconstruct_n(lo, min(block, count - lo)), dtype=np.float32)
            sims[:, lo:lo + len(stored)] = qn @ stored.T
        order = np.argsort(-sims, axis=1, kind="stable")
        pos = np.full((len(qn), k), -1, dtype=np.int64)
        out = np.full((len(qn), k), -np.inf, dtype=np.float32)
        pos[:, :count] = order
        out[:, :count] = np.take_along_axis(sims, order, axis=1)
        return out, pos

    def search(self, vectors, k: int = 10, threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, scores)``: int64 rows and float32 cosines (n, k) nearest to each of ``vectors``, best first;
        -1 and -inf past what was found. ``k`` at the index's size is exact; a zero query finds nothing."""
        if not (_is_int(k) and k >= 1):
            raise ValueError(f"k must be an integer of at least 1, got {k!r}")
        k = int(k)
        q = np.asarray(vectors, dtype=np.float32)
        q = q[None, :] if q.ndim == 1 else q
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ModelError(f"query vectors of shape {tuple(np.shape(vectors))} do not fit the index's {self.dim} "
                             "dims (was it built with another model?)")
        ids = np.full((len(q), k), -1, dtype=np.int64)
        scores = np.full((len(q), k), -np.inf, dtype=np.float32)
        q = scaled_rows(q)
        norms = np.linalg.norm(q, axis=1)
        ok = np.isfinite(norms) & (norms > 0)
        if not ok.any():
            return ids, scores
        qn = np.ascontiguousarray(q[ok] / norms[ok, None])
        if k >= len(self.ids):  # every vector asked for: the graph's walk may not reach them all
            sims, pos = self._exact(qn, k)
        else:
            with omp_threads(load_faiss(), threads):
                sims, pos = self.graph.search(qn, k)
        found = (pos >= 0) & (pos < len(self.ids))
        if len(self) and not found[:, 0].all():
            raise damaged(self.path / INDEX_FILE, "a search of a non-empty index found nothing")
        sane = ~found | (np.isfinite(sims) & (np.abs(sims) <= 1 + COSINE_SLACK))
        if not sane.all():
            raise damaged(self.path / INDEX_FILE, f"a search scored {float(sims[~sane][0]):.4g}, which is no cosine")
        column, count, n_rows = np.asarray(self.ids), len(self.ids), int(self.info["rows"])
        at = np.where(found, pos, 0)
        rows = np.where(found, column[at], -1)
        # a build writes each row once, in order: each row lies strictly between its neighbours' (a changed id does not)
        before = np.where(at > 0, column[np.maximum(at - 1, 0)], -1)
        after = np.where(at + 1 < count, column[np.minimum(at + 1, count - 1)], n_rows)
        bad = found & ((rows < 0) | (rows >= n_rows) | (rows <= before) | (rows >= after))
        if bad.any():
            raise damaged(self.path / IDS_FILE, f"row {int(rows[bad][0]):,} of vector {int(pos[bad][0]):,} is not "
                                                f"one of the {n_rows:,} rows in order")
        ids[ok] = rows
        scores[ok] = np.where(found, sims, -np.inf)
        return ids, scores

    def line(self, row_id: int) -> tuple[str, int, str]:
        """``(file, 1-based line number, text)`` of row ``row_id``; IndexError, CorpusError (the text changed)
        or ModelError (damage)."""
        if not _is_int(row_id):
            raise TypeError(f"a row id is an integer, not {type(row_id).__name__}")
        row_id = int(row_id)
        if not 0 <= row_id < int(self.info["rows"]):
            raise IndexError(f"row {row_id} is not in the index ({self.info['rows']} rows)")
        f = self.info["files"][int(np.searchsorted(self.first_rows, row_id, side="right")) - 1]
        text_path, copy = Path(f["text"]), not Path(f["text"]).is_absolute()
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
        start = int(self.offsets[row_id])
        stop = int(self.offsets[row_id + 1]) if row_id < last else int(f["bytes"])
        if not 0 <= start < stop <= f["bytes"] or (row_id == first and start != 0):
            raise damaged(self.path / OFFSETS_FILE, f"row {row_id:,} at bytes {start:,}:{stop:,} of a "
                                                    f"{f['bytes']:,}-byte text")
        raw = read_range(text_path, start, stop)
        # the line's bytes: its text, then one line end (\n, \r\n or \r; none at the end of the file)
        end = 2 if raw.endswith(b"\r\n") else 1 if raw.endswith((b"\n", b"\r")) else 0
        body = raw[: len(raw) - end]
        if len(raw) != stop - start or b"\n" in body or b"\r" in body or (end == 0 and row_id < last):
            why = f"line {row_id - first + 1:,} is not at bytes {start:,}:{stop:,} any more"
            if copy:
                raise damaged(text_path, why)
            raise CorpusError(f"{text_path}: changed since the index was built ({why}); build the index again")
        codec, errors = text_codec(f.get("encoding", DEFAULT_ENCODING), at_start=False)
        try:
            text = body.decode(codec, errors)
        except UnicodeDecodeError:  # it was text in its encoding when the index was built
            raise CorpusError(f"{text_path}: changed since the index was built (line {row_id - first + 1:,} is not "
                              "text any more); build the index again") from None
        number = row_id - first + 1
        return f["file"], number, text[1:] if number == 1 and text.startswith("\ufeff") else text

    def __repr__(self) -> str:
        return f"<scbow Index {self.path}: {len(self):,} sentences x {self.dim} dims, ef {self.ef}>"


def _regular(path: Path, size: int | None = None) -> None:
    """``damaged`` unless ``path`` is a regular file (of ``size`` bytes, when given)."""
    try:
        found = check_regular(path, error=ModelError, missing="missing").st_size
    except ModelError as exc:
        raise damaged(path, str(exc).removeprefix(f"{path}: ")) from None
    if size is not None and found != size:
        raise damaged(path, f"has {found:,} bytes, {INDEX_JSON} says {size:,}")


def _int64_column(path: Path, length: int, what: str) -> np.ndarray:
    """The int64 (length,) array at ``path``, memory-mapped; ``damaged`` otherwise."""
    _regular(path)
    try:
        with open(path, "rb") as fh:
            if fh.read(6) != b"\x93NUMPY":
                raise damaged(path, "not a .npy array")
        column = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise damaged(path, short_message(exc)) from None
    if not isinstance(column, np.ndarray) or column.shape != (length,) or column.dtype != np.int64:
        shape = f"{column.dtype} {column.shape}" if isinstance(column, np.ndarray) else "not an array"
        raise damaged(path, f"holds {shape}, not {what}: int64 ({length:,},)")
    return column


def faiss_path(path: Path) -> str:
    """``path`` as faiss takes it; ModelError for a name that is not UTF-8 (faiss cannot open it)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise ModelError(f"{path_text(path)}: the path is not valid UTF-8, which the index library (faiss) cannot open; "
                         "rename it, or choose another name") from None
    return str(path)


def open_index(path) -> Index:
    """Open the sentence index in directory ``path`` (memory-mapped); ModelError when it is not one, or damaged."""
    path = Path(path)
    info = read_info(path)
    _regular(path / INDEX_FILE, info["index_bytes"])
    offsets = _int64_column(path / OFFSETS_FILE, info["rows"], "one offset per row")
    ids = _int64_column(path / IDS_FILE, info["count"], "one row per vector")
    for f in info["files"]:  # the index's own copies of compressed texts; the user's are checked when read
        if not Path(f["text"]).is_absolute():
            _regular(path / f["text"], f["bytes"])
    faiss = load_faiss()
    flags = getattr(faiss, "IO_FLAG_MMAP_IFC", getattr(faiss, "IO_FLAG_MMAP", 0))  # pages read when searched
    where = faiss_path(path / INDEX_FILE)  # a name faiss cannot open is said as such, not as damage
    try:
        graph = faiss.read_index(where, flags)
    except (RuntimeError, ValueError, OSError, MemoryError) as exc:
        text = re.sub(r"^Error(?: in .*? at \S+:\d+|: '.*?' failed): ", "", short_message(exc, 400))  # no C++ place
        why = "truncated (" + text.split(" (")[0] + ")" if text.startswith("read error") else short_message(Exception(text))
        raise damaged(path / INDEX_FILE, why) from None
    if (not hasattr(graph, "hnsw") or graph.d != info["dim"] or graph.ntotal != info["count"]
            or graph.metric_type != faiss.METRIC_INNER_PRODUCT):
        raise damaged(path / INDEX_FILE, f"does not match {INDEX_JSON}")
    index = Index(path, info, graph, ids, offsets)
    index.ef = info.get("params", {}).get("ef_search") or DEFAULT_EF
    return index
