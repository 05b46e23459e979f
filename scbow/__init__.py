"""scbow-numba: Siamese CBOW sentence embeddings trained with Numba.

``scbow.tokenize(text)``, ``scbow.load(path)`` and ``scbow.train(corpus, config)`` are
the entry points; ``scbow.reference.loss_and_grad`` is the float64 oracle of the
objective. Importing the package does not import numba.
"""

import logging
import os

from . import outputs as _outputs
from .config import TrainConfig
from .text.tokenize import tokenize

# the modules that say what makes a directory one of the tool's outputs (scbow.outputs.kind_of)
_outputs.KIND_MODULES = ("scbow.vectors.modeldir", "scbow.training.checkpoint", "scbow.use.index.store",
                         "scbow.use.shards", "scbow.training.cache", "scbow.vectors.hubfolder")

__version__ = "0.1.0"
__all__ = ["TrainConfig", "tokenize", "load", "train", "open_shards", "similarity", "semantic_search"]


def similarity(a, b):
    """Cosines between two sets of sentence embeddings (``scbow.use.semantic.similarity``)."""
    from .use.semantic import similarity as _similarity

    return _similarity(a, b)


def semantic_search(query_embeddings, corpus_embeddings, top_k: int = 10):
    """The ``top_k`` corpus rows nearest to each query (``scbow.use.semantic.semantic_search``)."""
    from .use.semantic import semantic_search as _search

    return _search(query_embeddings, corpus_embeddings, top_k)


def load(path, mmap: bool = True):
    """Load a model directory (or a word2vec text/binary file) as a :class:`scbow.vectors.model.Model`.

    ``mmap=True`` maps ``vectors.npy`` read-only: instant, pages read when used and shared by every
    process mapping the file. ``mmap=False`` reads a writable copy, as a word2vec file always is.
    ``model.save(path)`` writes a model directory.
    """
    from .vectors.formats import load_model

    return load_model(path, mmap=mmap)


def train(corpus, config=None, *, quiet: bool = False, cache_dir=None, use_cache: bool = True, **kwargs):
    """Train on ``corpus`` (paths of text files, or an encoded ``scbow.training.corpus.Corpus``); returns the Model.

    Paths are read (or their cached encoding loaded; ``cache_dir``, ``use_cache``) with
    ``config``'s ``min_count`` and ``max_vocab``. Further keywords (``hooks``, ``init``,
    ``start`` with ``matrices``, ``warn``) go to :func:`scbow.training.trainer.train`.

    It reports through :mod:`logging`, logger ``"scbow"``, as gensim does: what the command line prints
    (the corpus, the phases, progress every 30 s) at INFO, warnings (the loss did not fall, an unsure
    collapse check) at WARNING, shown even without a logging setup; ``logging.basicConfig(level=logging.INFO)``
    shows the rest.
    """
    from .progress import to_logging
    from .training.corpus import Corpus, read_corpus
    from .training.session import learned_nothing, preflight
    from .training.trainer import train as _train

    config = config or TrainConfig()
    if isinstance(config, dict):  # TrainConfig's fields by name
        config = TrainConfig(**config)
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig (or a dict of its fields), not {type(config).__name__}")
    if isinstance(corpus, (str, os.PathLike, bytes)):  # one file or folder (bytes: refused below)
        corpus = [corpus]
    if not isinstance(corpus, Corpus):
        try:
            corpus = list(corpus)  # a generator is read once
        except TypeError:
            corpus = [corpus]
        for path in corpus:
            if not isinstance(path, (str, os.PathLike)):
                raise TypeError(f"corpus must be paths of text files (str or os.PathLike) or a Corpus, not "
                                f"{type(path).__name__}")
    preflight(config)  # a GPU for --device cuda, the thread count: before the corpus is read
    logger = logging.getLogger("scbow")
    kwargs.setdefault("warn", logger.warning)
    with to_logging(logger):
        if not isinstance(corpus, Corpus):
            corpus = read_corpus(corpus, config.min_count, config.max_vocab, cache_dir=cache_dir, use_cache=use_cache,
                                 quiet=quiet)
        result = _train(corpus, config, quiet=quiet, **kwargs)
        learned_nothing(result, kwargs["warn"])
    return result.model


def open_shards(directory, check_sources: bool = True):
    """The shards of ``scbow-numba embed --workers/--scheduler`` as one memory-mapped array-like
    (:class:`scbow.use.shards.Shards`): row ``i`` is the ``i``-th line of the inputs, in the order given.
    Shards of a text changed since they were embedded are refused (ModelError) unless ``check_sources=False``."""
    from .use.shards import open_shards as _open

    return _open(directory, check_sources=check_sources)
