"""scbow-numba: Siamese CBOW sentence embeddings trained with Numba.

``scbow.tokenize(text)``, ``scbow.load(path)`` and ``scbow.train(corpus, config)`` are
the entry points; ``scbow.reference.loss_and_grad`` is the float64 oracle of the
objective. Importing the package does not import numba.
"""

from .config import TrainConfig
from .tokenize import tokenize

__version__ = "0.1.0"
__all__ = ["TrainConfig", "tokenize", "load", "train"]


def load(path):
    """Load a model directory (or a word2vec text/binary file) as a :class:`scbow.model.Model`."""
    from .formats import load_model

    return load_model(path)


def train(corpus, config=None, **kwargs):
    """Train on ``corpus`` (paths or an encoded Corpus); returns the :class:`Model`."""
    from .trainer import train as _train

    return _train(corpus, config, **kwargs).model
