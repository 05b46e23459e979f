"""Training: the encoded corpus, the loop, its hooks and the post-processing.

The names below are the public door of this layer, what code outside ``scbow`` (the
benchmark harness, a notebook) uses: the submodules are internals that may change. They are
loaded on first use, so importing ``scbow.training`` (the parent of the CLI's light modules,
``scbow.training.cache``) imports nothing heavy.

- ``load_corpus(paths, min_count, max_vocab, cache_dir=, use_cache=, progress=)`` and
  ``read_corpus`` (the same with a progress line) encode text into a :class:`Corpus`;
- ``train(corpus, config, quiet=, hooks=)`` trains on it: a ``TrainResult`` with ``model``,
  ``seconds`` (the sentence part's kernel time), ``examples`` and ``losses`` (``scbow.train``
  takes paths and returns the model only);
- :class:`Hook` (and the :class:`TrainState` it is given), :class:`CurveHook` (the STS curve);
- :func:`first_epoch` and :func:`untrained_start`: the order and the matrix ``train`` starts
  from, for code that must see the same examples or judge training against its start;
- ``sample_sentences``, ``remove_common_components``: the post-processing's sample and step;
- ``cuda_problem()``: why ``--device cuda`` cannot run here (None when it can).
"""

from __future__ import annotations

__all__ = ["Corpus", "load_corpus", "read_corpus", "train", "TrainResult", "Hook", "TrainState", "CurveHook",
           "first_epoch", "untrained_start", "sample_sentences", "remove_common_components", "cuda_problem"]


def first_epoch(corpus, config):
    """The targets of ``train``'s first epoch, in its shuffled order (sentence ids)."""
    from .start import trainable_targets
    from .trainer import epoch_orders

    return next(epoch_orders(trainable_targets(corpus), config.seed))


def untrained_start(corpus, config, post_process: bool = False):
    """The matrix ``train(corpus, config)`` starts from (random rows times the frequency weights).

    With ``post_process`` it is also post-processed as a saved model is (``config``'s common
    components removed): the untrained start that training is judged against.
    """
    from .postprocess import remove_common_components
    from .start import corpus_weights, init_vectors

    W = init_vectors(len(corpus.vocab), config, corpus_weights(corpus, config))
    if post_process and config.common_components >= 0:
        remove_common_components(W, corpus, config.components_removed, config.seed)
    return W


def __getattr__(name: str):
    if name in ("Corpus", "load_corpus", "read_corpus"):
        from . import corpus as module
    elif name in ("train", "TrainResult"):
        from . import trainer as module
    elif name in ("Hook", "TrainState"):
        from . import hooks as module
    elif name == "CurveHook":
        from . import curve as module
    elif name in ("sample_sentences", "remove_common_components"):
        from . import postprocess as module
    elif name == "cuda_problem":
        from .backends import cuda as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
