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

The modules; each imports only those listed before it:

- :mod:`.lines`: the text files: the byte offset of each row's line, the copies of
  compressed texts (and their digests).
- :mod:`.store`: an index directory read back and checked: what it holds, ``index.json``
  and its fields, the arrays, the graph's stored vectors; :class:`Index` (``search``,
  ``line``) and :func:`open_index`. Nothing read back is trusted: anything wrong is one
  ``PATH: damaged sentence index (...)`` error naming the file, never a wrong answer.
- :mod:`.build`: :func:`build_index`: the embeddings and their text, the model recorded,
  the graph, and the rules of the output directory (replaced only when it is an index of
  ours, written atomically (:func:`scbow.files.atomic_dir`)).
- :mod:`.query`: what the CLI calls: :func:`index_command`, :func:`search_command`,
  :func:`check_query_model` (an index that records its model answers only that model).

The names below are those to import from ``scbow.use.index``; a test that replaces one
(monkeypatch) replaces it in the module that looks it up.
"""

from .build import CHUNK_ROWS, DEFAULT_EF_CONSTRUCTION, DEFAULT_M, build_index
from .lines import COPY_DIGEST_LIMIT, COPY_NAME, _line_starts
from .query import check_query_model, index_command, search_command
from .store import (
    COSINE_SLACK,
    DEFAULT_EF,
    FORMAT,
    FORMAT_VERSION,
    IDS_FILE,
    INDEX_FILE,
    INDEX_JSON,
    INSTALL_HINT,
    LIBRARY,
    MAX_EF,
    OFFSETS_FILE,
    SAMPLE_VECTORS,
    Index,
    open_index,
)

__all__ = [
    "CHUNK_ROWS", "COPY_DIGEST_LIMIT", "COPY_NAME", "COSINE_SLACK", "DEFAULT_EF",
    "DEFAULT_EF_CONSTRUCTION", "DEFAULT_M", "FORMAT", "FORMAT_VERSION", "IDS_FILE", "INDEX_FILE", "INDEX_JSON",
    "INSTALL_HINT", "LIBRARY", "MAX_EF", "OFFSETS_FILE", "SAMPLE_VECTORS", "Index",
    "_line_starts", "build_index", "check_query_model", "index_command", "open_index", "search_command",
]
