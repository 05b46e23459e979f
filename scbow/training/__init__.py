"""Training: the encoded corpus, the loop, its hooks and the post-processing.

``__all__`` is this layer's public door (for the benchmarks, a notebook); the submodules are
internals. The names load on first use, so importing ``scbow.training`` imports nothing heavy.
``load_corpus``/``read_corpus`` encode text into a :class:`Corpus`, which ``train`` trains on.
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
    """The matrix ``train(corpus, config)`` starts from (random rows times the frequency weights); with
    ``post_process`` post-processed as a saved model is: the untrained start training is judged against."""
    from .postprocess import remove_common_components
    from .start import corpus_weights, init_vectors

    W = init_vectors(len(corpus.vocab), config, corpus_weights(corpus, config))
    if post_process and config.common_components >= 0:
        remove_common_components(W, corpus, config.components_removed, config.seed)
    return W


# where each lazily loaded public name lives
_HOMES = {"Corpus": "corpus", "load_corpus": "corpus", "read_corpus": "corpus",
          "train": "trainer", "TrainResult": "trainer", "Hook": "hooks", "TrainState": "hooks",
          "CurveHook": "curve", "sample_sentences": "postprocess", "remove_common_components": "postprocess",
          "cuda_problem": "backends.cuda"}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
