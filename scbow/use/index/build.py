"""Building a sentence index: :func:`build_index`, from the embeddings to a directory written atomically.

An index is built once from the output of ``scbow-numba embed`` (one ``.npy`` file, with
the text file it came from) or of a cluster embed (a directory of shards with its
``manifest.json``, which names the text files). Rows with no embedding (NaN, as ``embed``
writes for a line with no known word; or all zero, from ``--fill zero``) are not added, so
they are never returned. The model the embeddings came from is checked and recorded
(:func:`_model_to_record`), so that a query with another model is refused.

The directory is written atomically (:func:`scbow.files.atomic_dir`): an interrupted
build leaves nothing, or the previous index, at the path. An existing ``-o`` directory is
replaced only when it is empty or provably an index this tool wrote: an ``index.json``
that opens as one, and nothing else but the files a build writes (no other file, no
subdirectory, no symbolic link); anything else is refused, before the build and again
just before the new index takes its place. What a killed build left beside the index is
removed by the next build (:func:`scbow.files.remove_leftovers`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import CorpusError, ModelError
from ...files import atomic_dir, kind_of, output_path, refuse_inside_ours, remove_leftovers
from ...reading import short_message
from .lines import COPY_NAME, _index_text, _not_regular
from .store import (
    DEFAULT_EF,
    FORMAT,
    FORMAT_VERSION,
    IDS_FILE,
    INDEX_FILE,
    INDEX_JSON,
    LIBRARY,
    OFFSETS_FILE,
    _faiss,
    _omp_threads,
    _read_info,
    _sample_positions,
    _stored_vectors,
    _vectors_digest,
)

DEFAULT_M = 32  # HNSW graph degree (faiss's M; the base layer has 2 M links)
DEFAULT_EF_CONSTRUCTION = 200  # candidates kept while inserting (efConstruction)
CHUNK_ROWS = 65536  # rows of embeddings read, normalised and added at a time


def _library_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("faiss-cpu")
    except metadata.PackageNotFoundError:
        return getattr(_faiss(), "__version__", None)


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
        from ..cluster import open_shards

        shards = open_shards(path)  # refuses rows of a text that changed since (check_sources)
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


def _check_model(model, dim: int, what: str) -> str:
    """The id (:func:`scbow.vectors.modeldir.model_id`) of the model ``model`` (``what``: how it was
    named) after checking that it is a model (a directory or a word2vec/GloVe file that loads) whose
    vectors have ``dim`` dims."""
    from ...vectors.formats import load_model

    path = Path(model)
    if not path.exists():
        raise ModelError(f"{what} {path}: no such model; give the model that embedded the lines")
    if (path / INDEX_JSON).is_file():
        raise ModelError(f"{what} {path}: is a sentence index, not a model")
    loaded = load_model(path)  # ModelError naming what is wrong for anything that is not a model
    if loaded.dim != dim:
        raise ModelError(f"{what} {path}: has {loaded.dim} dims but the embeddings have {dim}: not the model "
                         "that embedded them")
    from ...vectors.modeldir import model_id

    fp = model_id(path)
    if fp is None:
        raise ModelError(f"{what} {path}: cannot be read")
    return fp


def _inside_model(out_dir: Path) -> None:
    """ModelError when ``out_dir`` is another kind of the tool's outputs (a model, a checkpoint, ...)
    or lies inside one of them."""
    what = kind_of(out_dir)
    if what is not None and what != "a sentence index":
        raise ModelError(f"-o {out_dir}: is {what}; refusing to replace it with an index (choose another path)")
    refuse_inside_ours(out_dir, "-o")


def _own_file(name: str) -> bool:
    return name in (INDEX_JSON, INDEX_FILE, IDS_FILE, OFFSETS_FILE) or bool(COPY_NAME.fullmatch(name))


def _not_an_index_of_ours(directory: Path) -> str | None:
    """Why the existing directory ``directory`` may not be replaced by a new index (None: it may).

    It may when it is empty, or provably a sentence index this tool wrote: an ``index.json``
    that opens as one (format marker, version and every field), and nothing else but the
    files a build writes (the graph, ids, offsets, the copies of compressed texts that
    ``index.json`` names): no other file,
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
        if not _own_file(e.name):
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
    return None


def _check_replaceable(out_dir: Path) -> None:
    """ModelError unless an index may be written at ``out_dir``: nothing there, an empty directory,
    or a sentence index this tool wrote (:func:`_not_an_index_of_ours`), which is replaced whole."""
    output_path(out_dir)  # a link is followed (its target replaced); one into a missing folder is refused
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise ModelError(f"{out_dir}: exists and is not a directory; refusing to replace it")
    why = _not_an_index_of_ours(out_dir)
    if why is not None:
        raise ModelError(f"{out_dir}: not empty and not a sentence index; refusing to replace it ({why})")


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
    (:func:`scbow.files.remove_leftovers`).
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
    removed = remove_leftovers(out_dir)
    if removed and note is not None:
        note(f"removed {len(removed)} unfinished build{'s' if len(removed) > 1 else ''} of {out_dir} left by an "
             f"earlier run that was killed: {', '.join(p.name for p in removed)}")
    t0 = time.perf_counter()
    with atomic_dir(out_dir, same_kind=_not_an_index_of_ours) as tmp:
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
            "model_id": fingerprint,
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
    """The model an index records and its id, checked (see :func:`build_index`)."""
    from ...vectors.modeldir import default_model_dir

    shards_model = source.rows.manifest.get("model") if source.kind == "shards" else None
    if shards_model is not None and not isinstance(shards_model, str):
        raise ModelError(f"{source.path / 'manifest.json'}: damaged shard directory (its model is not a path)")
    if source.kind == "shards":
        source.rows.check_model()  # retrained in place since the shards were embedded: not their model any more
    if model is not None:
        fingerprint = _check_model(model, dim, "-m")
        if shards_model is not None and Path(shards_model).exists() and source.rows.manifest.get("model_id") != fingerprint:
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
