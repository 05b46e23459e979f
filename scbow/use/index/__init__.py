"""Approximate nearest-sentence search over embedded lines: ``scbow-numba index`` and
``neighbors --sentence "..." --index DIR``.

An index is built once from the output of ``embed`` (a ``.npy`` and its text file, or a
directory of shards); a query then answers in milliseconds instead of scanning every line.
The graph is an HNSW index of faiss (inner product on L2-normalised rows = cosine; chosen in
``benchmarks/results/ann_index.md``), an optional extra: ``pip install 'scbow-numba[index]'``.

Each module imports only those before it: :mod:`.store` (an index directory read back and
checked: :func:`open_index`, :class:`Index`), :mod:`.build` (:func:`build_index`),
:mod:`.query` (what the CLI calls). The names below are the package's API.
"""

from .build import DEFAULT_EF_CONSTRUCTION, DEFAULT_M, build_index
from .query import check_query_model, index_command, search_command
from .store import DEFAULT_EF, Index, open_index

__all__ = ["DEFAULT_EF", "DEFAULT_EF_CONSTRUCTION", "DEFAULT_M", "Index", "build_index", "check_query_model",
           "index_command", "open_index", "search_command"]
