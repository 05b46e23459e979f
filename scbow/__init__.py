"""scbow-numba: Siamese CBOW sentence embeddings trained with Numba.

``scbow.tokenize(text)``, ``scbow.load(path)`` and ``scbow.train(corpus, config)`` are
the entry points; ``scbow.reference.loss_and_grad`` is the float64 oracle of the
objective. Importing the package does not import numba.
"""

from .config import TrainConfig
from .tokenize import tokenize

__version__ = "0.1.0"
__all__ = ["TrainConfig", "tokenize", "load", "train"]


def load(path, mmap: bool = True):
    """Load a model directory (or a word2vec text/binary file) as a :class:`scbow.model.Model`.

    ``mmap=True`` (the default) maps ``vectors.npy`` read-only: loading is instant, the
    pages are read when used and shared by every process that maps the same file.
    ``mmap=False`` reads the vectors into memory as a writable array. A word2vec file is
    always read into memory (writable). ``model.save(path)`` writes a model directory.
    """
    from .formats import load_model

    return load_model(path, mmap=mmap)


def train(corpus, config=None, **kwargs):
    """Train on ``corpus`` (paths or an encoded Corpus); returns the :class:`Model`."""
    from .trainer import train as _train

    return _train(corpus, config, **kwargs).model
