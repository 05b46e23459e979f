"""Approximate nearest-sentence search over the output of ``embed`` (``scbow-numba index``, ``neighbors
--index``): faiss's HNSW on unit rows (``benchmarks/results/ann_index.md``), ``pip install 'scbow-numba[index]'``.
Each module imports only those before it: :mod:`.store`, :mod:`.build`, :mod:`.query`.
"""

from .build import DEFAULT_EF_CONSTRUCTION, DEFAULT_M, build_index
from .query import check_query_model, index_command, search_command, search_lines
from .store import DEFAULT_EF, Index, open_index

__all__ = ["DEFAULT_EF", "DEFAULT_EF_CONSTRUCTION", "DEFAULT_M", "Index", "build_index", "check_query_model",
           "index_command", "open_index", "search_command", "search_lines"]
