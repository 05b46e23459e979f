"""scbow-numba: Siamese CBOW sentence embeddings trained with Numba.

``scbow.tokenize(text)``, ``scbow.load(path)`` and ``scbow.train(corpus, config)`` are
the entry points; ``scbow.reference.loss_and_grad`` is the float64 oracle of the
objective. Importing the package does not import numba.
"""

import importlib
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


# The entry points that need numpy (and numba), imported on first use: name -> (module, its name there).
# scbow.load reads a model directory (its rows memory-mapped read-only unless mmap=False: instant, and
# shared by every process mapping them) or a word2vec or GloVe file; model.save(path) writes one.
_LAZY = {"load": ("vectors.formats", "load_model"), "similarity": ("use.semantic", "similarity"),
         "semantic_search": ("vectors.numeric", "semantic_search"), "open_shards": ("use.shards", "open_shards")}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _LAZY[name]
    return getattr(importlib.import_module(f".{module}", __name__), attr)


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
