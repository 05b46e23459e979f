"""The old home of :class:`Model`, kept so that ``from scbow.model import Model`` goes on working.

The model API lives in :mod:`scbow.vectors.model`, its numbers in :mod:`scbow.vectors.numeric`.
"""

from .vectors.model import HASH_SCALE, Model  # noqa: F401  (the old path's names)
from .vectors.numeric import cosine, hashed_vector  # noqa: F401
