"""Building a sentence index from the ``.npy`` of ``embed`` and its text, or a directory of shards; rows
with no embedding are left out, and the model that embedded them is recorded (another is refused).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ...errors import CorpusError, ModelError
from ...files import atomic_dir, output_path, remove_leftovers
from ...outputs import refuse_other_kind
from ...reading import short_message
from ...text.reader import DEFAULT_ENCODING, check_regular, check_text, open_bytes, open_text
from ...vectors.numeric import scaled_rows
from ..shards import MANIFEST, open_shards
from . import store

DEFAULT_M = 32  # HNSW graph degree (faiss's M; the base layer has 2 M links)
DEFAULT_EF_CONSTRUCTION = 200  # candidates kept while inserting (efConstruction)
# rows added to the graph at a time, a progress report after each: 6 s at the slowest rate seen;
# smaller batches cost faiss's threads more (1,024 rows: +45% CPU time, 4,096: +11%)
ADD_ROWS = 4096


def line_starts(stream, copy_to=None, block: int = 1 << 24) -> tuple[np.ndarray, int]:
    """The byte offsets of a binary stream's lines, split as ``embed`` splits them, and its length
    (``copy_to``: a file the bytes are also written to)."""
    starts = [np.zeros(1, dtype=np.int64)]
    pos = 0
    pending_cr = False  # the previous block ended with \r: a line ends there unless \n follows
    while data := stream.read(block):
        if copy_to is not None:
            copy_to.write(data)
        buf = np.frombuffer(data, dtype=np.uint8)
        nl, cr = buf == 10, buf == 13
        cr_alone = cr.copy()  # a \r ends a line unless a \n follows it (then the \n ends it)
        cr_alone[:-1] &= ~nl[1:]
        cr_alone[-1] = False  # decided with the next block
        if pending_cr and not nl[0]:
            starts.append(np.array([pos], dtype=np.int64))
        pending_cr = bool(cr[-1])
        starts.append(np.flatnonzero(nl | cr_alone).astype(np.int64) + pos + 1)
        pos += len(data)
    if pending_cr:
        starts.append(np.array([pos], dtype=np.int64))
    out = np.concatenate(starts)
    return (out[:-1] if out[-1] == pos else out), pos  # a line starting at the very end is no line


def index_text(files, out_dir: Path, progress=None, encoding: str = DEFAULT_ENCODING) -> tuple[np.ndarray, list[dict]]:
    """Offsets of every row's line, and the records of the text files ``[(path, first row, rows)]``. A
    compressed text is decompressed into ``out_dir/text-NNN.txt`` (it cannot be entered in the middle).
    Each is checked as text in ``encoding`` (recorded when not the default), so every line printed is."""
    all_starts, records = [], []
    for i, (name, first_row, rows) in enumerate(files):
        path = Path(name)
        if progress is not None:
            progress(f"reading the lines of {path}", i, len(files))
        try:
            st = path.stat()
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None
        record = {"file": str(path.resolve()), "text": str(path.resolve()), "mtime_ns": st.st_mtime_ns}
        if encoding != DEFAULT_ENCODING:
            record["encoding"] = encoding
        with open_text(path, encoding=encoding) as fh:
            while block := fh.read(1 << 22):
                check_text(path, block)
        with open_bytes(path) as fh:
            if fh.kind is None:
                starts, size = line_starts(fh)
            else:
                record.update(text=f"text-{i:03d}.txt", compressed_bytes=st.st_size)
                with open(out_dir / record["text"], "wb") as copy:
                    starts, size = line_starts(fh, copy)
        if len(starts) != rows:
            raise CorpusError(f"{path}: has {len(starts):,} lines but the embeddings have {rows:,} rows for it; "
                              "give the very file that was embedded")
        records.append({**record, "bytes": size, "first_row": first_row, "rows": rows})
        all_starts.append(starts)
    return (np.concatenate(all_starts) if all_starts else np.zeros(0, np.int64)), records


def open_embeddings(embeddings, text=None) -> tuple[object, list, dict | None]:
    """``(rows, texts, manifest)``: the rows of a ``.npy`` (memory-mapped) or of shards, the text files
    ``[(path, first row, rows)]``, and the shards' manifest (None for a ``.npy``)."""
    path = Path(embeddings)
    if not path.exists():
        raise ModelError(f"{path}: no such file or directory (give the .npy file or the shard directory "
                         "written by 'scbow-numba embed')")
    if path.is_dir():
        if (path / store.INDEX_JSON).is_file():
            raise ModelError(f"{path}: is a sentence index already; give the embeddings it was built from")
        if not (path / MANIFEST).is_file():
            if store.model_kind(path):
                raise ModelError(f"{path}: is a model directory; give the embeddings written by "
                                 "'scbow-numba embed MODEL INPUT -o X.npy'")
            raise ModelError(f"{path}: directory has no manifest.json: not the shards of a finished cluster embed "
                             "(run the same 'scbow-numba embed ... --workers N' again to finish it)")
        shards = open_shards(path)  # refuses rows of a text that changed since
        if text is not None:
            raise ModelError("the text of shards is named by their manifest; give no text file with a shard directory")
        return shards, shards.texts(), shards.manifest
    check_regular(path, error=ModelError, why="a pipe or a device: give the .npy file or the shard directory written by "
                  "'scbow-numba embed'")
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ModelError(f"{path}: not a .npy array of embeddings ({short_message(exc)})") from None
    if not isinstance(arr, np.ndarray) or arr.ndim != 2 or arr.dtype != np.float32 or arr.shape[1] < 1:
        what = f"a {arr.dtype} array of shape {arr.shape}" if isinstance(arr, np.ndarray) else "no array"
        raise ModelError(f"{path}: holds {what}; expected float32 rows (n_lines, dim) as written by 'scbow-numba embed'")
    if text is None:
        raise ModelError(f"{path}: give the text file its rows came from (the INPUT of 'scbow-numba embed'), "
                         "so that answers can show the lines")
    return arr, [(str(text), 0, arr.shape[0])], None


def checked_model_id(model, dim: int, what: str) -> str:
    """The id of ``model`` (``what``: how it was named), a model whose vectors have ``dim`` dims."""
    from ...vectors.formats import load_model
    from ...vectors.modeldir import model_id

    path = Path(model)
    if not path.exists():
        raise ModelError(f"{what} {path}: no such model; give the model that embedded the lines")
    if (path / store.INDEX_JSON).is_file():
        raise ModelError(f"{what} {path}: is a sentence index, not a model; give the model that embedded its lines")
    loaded = load_model(path)  # ModelError naming what is wrong for anything that is not a model
    if loaded.dim != dim:
        raise ModelError(f"{what} {path}: has {loaded.dim} dims but the embeddings have {dim}: not the model "
                         "that embedded them")
    found = model_id(path)
    if found is None:
        raise ModelError(f"{what} {path}: cannot be read, or records no model_id (save it again)")
    return found


def model_to_record(rows, manifest: dict | None, model, dim: int, default_model: bool, note) -> tuple:
    """``(model path, model id)`` an index records (both None: none), checked (see :func:`build_index`)."""
    from ...vectors.modeldir import default_model_dir

    shards_model = manifest.get("model") if manifest is not None else None
    if manifest is not None:
        rows.check_model()  # retrained in place since the shards were embedded: not their model any more
    if model is not None:
        found = checked_model_id(model, dim, "-m")
        if shards_model is not None and Path(shards_model).exists() and manifest.get("model_id") != found:
            raise ModelError(f"-m {model}: is not the model the shards were embedded with ({shards_model})")
        return str(model), found
    if shards_model is not None:
        if not Path(shards_model).exists():
            raise ModelError(f"{rows.directory}: the shards were embedded with the model {shards_model}, "
                             "which is gone; give the model with -m")
        return shards_model, checked_model_id(shards_model, dim, "the model of the shards")
    if not default_model:
        return None, None
    default = default_model_dir()
    why = f"no default model at {default}"
    if default.exists():
        try:
            found = checked_model_id(default, dim, "the default model")
        except ModelError as exc:
            why = str(exc)
        else:
            note(f"recorded the default model {default} as the one that embedded the lines: queries with "
                 "another model will be refused (give -m MODEL to name another)")
            return str(default), found
    note(f"no model recorded (no -m; {why}): queries with any {dim}-dim model will be answered; give -m MODEL, "
         "the model that embedded the lines, to refuse the others")
    return None, None


def check_output(out_dir: Path) -> None:
    """ModelError unless an index may be written at ``out_dir``: nothing, an empty directory or an index of ours."""
    refuse_other_kind(out_dir, "a sentence index", "replace it with an index (choose another path)")
    output_path(out_dir)  # a link is followed (its target replaced); one into a missing folder is refused
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise ModelError(f"{out_dir}: exists and is not a directory; refusing to replace it")
    why = store.not_an_index_of_ours(out_dir)
    if why is not None:
        raise ModelError(f"{out_dir}: not empty and not a sentence index; refusing to replace it ({why})")


def build_index(embeddings, lines_source, out_dir, metric: str = "cosine", M: int = DEFAULT_M,
                ef_construction: int = DEFAULT_EF_CONSTRUCTION, progress=None, threads: int = 0,
                model=None, default_model: bool = False, note=None, encoding: str = DEFAULT_ENCODING) -> dict:
    """Build a sentence index of ``embeddings`` in ``out_dir`` (replaced atomically); returns its ``index.json``.

    ``embeddings``: a ``.npy`` with ``lines_source`` its text, or a directory of shards. ``progress(what,
    done, total)``: ``("reading the lines of PATH", i, files)``, then ``("rows", added, rows)``. ``model``:
    the model that embedded the rows; with ``default_model``, the default one when none is named.
    """
    if metric != "cosine":
        raise ValueError(f"metric must be 'cosine', got {metric!r}")
    if M < 2 or ef_construction < 1:
        raise ValueError("M must be at least 2 and ef_construction at least 1")
    faiss, note = store.load_faiss(), note or (lambda message: None)
    rows, texts, manifest = open_embeddings(embeddings, lines_source)
    out_dir = Path(out_dir)
    check_output(out_dir)
    store.faiss_path(out_dir.absolute())  # a name faiss cannot open is refused before the build, not after
    for name, _, _ in texts:  # before the notes about the model: what cannot be read is said first
        check_regular(name, expected="the text file the embeddings came from",
                      missing="no such file, expected the text file the embeddings came from")
    n_rows, dim = int(rows.shape[0]), int(rows.shape[1])
    model_dir, found_id = model_to_record(rows, manifest, model, dim, default_model, note)
    removed = remove_leftovers(out_dir)
    if removed:
        note(f"removed {len(removed)} unfinished build{'s' if len(removed) > 1 else ''} of {out_dir} left by an "
             f"earlier run that was killed: {', '.join(p.name for p in removed)}")
    t0 = time.perf_counter()
    with atomic_dir(out_dir, same_kind=store.not_an_index_of_ours) as tmp:
        tmp = Path(tmp)
        offsets, files = index_text(texts, tmp, progress, encoding)
        np.save(tmp / store.OFFSETS_FILE, offsets)
        graph = faiss.IndexHNSWFlat(dim, M, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = ef_construction
        graph.hnsw.efSearch = store.DEFAULT_EF
        ids = []
        for start in range(0, n_rows, ADD_ROWS):
            chunk = np.asarray(rows[start : start + ADD_ROWS], dtype=np.float32)
            if np.isinf(chunk).any():  # NaN is a line with no embedding; inf is no embedding's value
                at = start + int(np.flatnonzero(np.isinf(chunk).any(axis=1))[0])
                raise ModelError(f"{Path(embeddings)}: row {at + 1:,} holds inf, which no embedding does (damaged?)")
            chunk = scaled_rows(chunk)
            norms = np.linalg.norm(chunk, axis=1)
            ok = np.isfinite(norms) & (norms > 0)
            if ok.any():
                ids.append(np.flatnonzero(ok).astype(np.int64) + start)
                with store.omp_threads(faiss, threads):
                    graph.add(np.ascontiguousarray(chunk[ok] / norms[ok, None], dtype=np.float32))
            if progress is not None:
                progress("rows", min(start + ADD_ROWS, n_rows), n_rows)
        count = int(graph.ntotal)
        if count == 0:
            raise CorpusError(f"{Path(embeddings)}: no row has an embedding (every line had nothing to average); "
                              "nothing to index")
        np.save(tmp / store.IDS_FILE, np.concatenate(ids))
        faiss.write_index(graph, store.faiss_path(tmp / store.INDEX_FILE))
        info = {
            "format": store.FORMAT, "format_version": store.FORMAT_VERSION, "library": store.LIBRARY,
            "library_version": _version(faiss),
            "metric": metric, "dim": dim, "count": count, "rows": n_rows, "skipped_rows": n_rows - count,
            "embeddings": {"kind": "npy" if manifest is None else "shards", "path": str(Path(embeddings).resolve())},
            "model": None if model_dir is None else str(Path(model_dir).resolve()), "model_id": found_id,
            "params": {"M": M, "ef_construction": ef_construction, "ef_search": store.DEFAULT_EF},
            "index_bytes": (tmp / store.INDEX_FILE).stat().st_size, "files": files,
            "build_seconds": round(time.perf_counter() - t0, 3),
        }
        (tmp / store.INDEX_JSON).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
        check_output(out_dir)  # again: what is there may have changed during the build
    return info


def _version(faiss) -> str | None:
    from importlib import metadata

    try:
        return metadata.version("faiss-cpu")
    except metadata.PackageNotFoundError:
        return getattr(faiss, "__version__", None)
