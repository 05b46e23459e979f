"""What the CLI calls: ``scbow-numba index`` (:func:`index_command`) and ``neighbors --sentence "..."
--index DIR`` (:func:`search_command`); an index that records its model answers only with that model.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ...errors import ModelError
from ...progress import Progress, note
from ...text.reader import DEFAULT_ENCODING
from ..embedding import sentence_vector
from .build import DEFAULT_EF_CONSTRUCTION, DEFAULT_M, build_index
from .store import INDEX_JSON, MAX_EF, Index, open_index, read_info


def index_command(embeddings, output, text=None, M: int = DEFAULT_M, ef_construction: int = DEFAULT_EF_CONSTRUCTION,
                  quiet: bool = False, model=None, threads: int = 0, encoding: str = DEFAULT_ENCODING) -> str:
    """Build an index (``scbow-numba index``), its progress on stderr unless ``quiet``; the summary line.
    Without ``model`` (or shards naming theirs), the default model is recorded, if any, with a note."""
    bar = Progress(0, unit="rows", quiet=quiet)

    def progress(what: str, done: int, total: int) -> None:
        if what != "rows":
            bar.close()
            if not quiet:
                note(f"index: {what}")
            return
        bar.update(done, prefix="index: ", force=done == total, total=total)

    t0 = time.perf_counter()
    try:  # notes (no model recorded, leftovers removed) are printed with -q too: they are not progress
        info = build_index(embeddings, text, output, M=M, ef_construction=ef_construction, progress=progress,
                           threads=threads, model=model, default_model=True, note=lambda m: note(f"index: {m}"),
                           encoding=encoding)
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in Path(output).iterdir() if p.is_file())
    skipped = f", {info['skipped_rows']:,} rows with no embedding left out" if info["skipped_rows"] else ""
    return (f"indexed {info['count']:,} sentences x {info['dim']} dims{skipped} in {seconds:.1f} s "
            f"({size / 2**20:,.1f} MiB); wrote {output}")


def check_query_model(index: "Index | os.PathLike", model_dir, loaded_id: str | None = None) -> None:
    """Refuse to query ``index`` (an :class:`Index` or its directory) with the model at ``model_dir`` (None:
    unknown) unless it is the one the index records, if any. ``loaded_id``, when given, is what is
    compared: the ``model_id`` of a model in memory (its directory may have been saved again since).
    """
    from ...vectors.modeldir import model_id

    info, where = (index.info, index.path) if isinstance(index, Index) else (read_info(Path(index)), Path(index))
    if model_dir is not None and (Path(model_dir) / INDEX_JSON).is_file():
        raise ModelError(f"-m {model_dir}: is a sentence index, not a model; give the model that embedded its lines")
    recorded = info.get("model_id")
    if recorded is None:
        return
    name = info.get("model") or "the model recorded in it"
    if loaded_id is not None:
        if loaded_id == recorded:
            return
        raise ModelError(f"{where}: was built from the embeddings of another model ({name}), not the model given "
                         f"({'loaded from ' + str(model_dir) if model_dir is not None else 'in memory'}; load it again if it was "
                         "saved since)")
    if model_dir is None:
        raise ModelError(f"{where}: was built with the model {name}; give the directory the model was loaded "
                         "from (model_dir=...) so that it can be checked")
    model_dir = Path(model_dir)
    if model_id(model_dir) == recorded:
        return
    if not model_dir.exists():
        raise ModelError(f"{model_dir}: no such model; the index {where} was built with {name}: query it "
                         f"with -m {name}")
    if model_dir.is_file() and not recorded.startswith("file-"):
        raise ModelError(f"-m {model_dir}: is a file (a word2vec/GloVe file?), which cannot be proven to be the model "
                         f"directory the index {where} was built with ({name}); query it with -m {name}")
    raise ModelError(f"{where}: was built from the embeddings of another model ({name}), not {model_dir}; "
                     f"query it with -m {name} (or build the index again with -m {model_dir})")


def _loaded_from(model) -> Path | None:
    """The model directory a loaded model came from (None: not known)."""
    if getattr(model, "source_dir", None) is not None:
        return Path(model.source_dir)
    filename = getattr(getattr(model, "vectors", None), "filename", None)
    if filename is None:
        return None
    path = Path(filename)
    return path.parent if path.name == "vectors.npy" else None


def search_command(model, sentence: str, index_path, topn: int = 10, ef: int | None = None, model_dir=None):
    """The ``topn`` indexed lines nearest to ``sentence``: ``[(cosine, file, line number, text)]``, best first.

    ``model``: a model directory, or a loaded Model, checked by its ``model_id`` (else by ``model_dir``, else
    the directory its vectors are mapped from). ModelError for an index that is not one, or of another
    model; ValueError when the sentence has nothing to average.
    """
    if topn < 1:
        raise ValueError(f"topn must be at least 1, got {topn}")
    index = open_index(index_path)
    if not hasattr(model, "encode"):
        model_dir = Path(model)
        check_query_model(index, model_dir)
        from ...vectors.formats import load_model

        model = load_model(model_dir)
    else:
        info = getattr(model, "info", None)
        loaded_id = info.get("model_id") if isinstance(info, dict) and isinstance(info.get("model_id"), str) else None
        check_query_model(index, model_dir if model_dir is not None else _loaded_from(model), loaded_id)
    if model.dim != index.dim:
        raise ModelError(f"{index_path}: holds {index.dim}-dim embeddings but the model has {model.dim} dims; "
                         "query it with the model its embeddings came from")
    topn = min(int(topn), len(index))  # there are no more to find (and a huge k would allocate for nothing)
    index.ef = min(max(int(ef if ef is not None else index.ef), topn), MAX_EF)
    ids, scores = index.search(sentence_vector(model, sentence), topn, threads=1)
    return [(float(score), *index.line(row)) for row, score in zip(ids[0].tolist(), scores[0].tolist()) if row >= 0]


def search_lines(model, sentence: str, index_path, topn: int = 10, ef: int | None = None, model_dir=None) -> list[str]:
    """What ``neighbors --index DIR`` prints: ``cosine<TAB>line number<TAB>line`` (``file:line`` for several
    files); ModelError where :func:`search_command` says ValueError."""
    try:
        found = search_command(model, sentence, index_path, topn=topn, ef=ef, model_dir=model_dir)
    except ValueError as exc:
        raise ModelError(str(exc)) from None
    several = len({f for _, f, _, _ in found}) > 1
    return [f"{cos:.4f}\t{f'{file}:{line}' if several else line}\t{text}" for cos, file, line, text in found]
