"""A model in a few words: where its vectors come from (the end of ``repr(model)``)."""

from __future__ import annotations

import os

from ..progress import plural


def origin(model) -> str:
    """Where a model's vectors come from, in a few words, from its ``info`` and ``config`` (the end of
    its repr); '' if unknown."""
    info = model.info
    parts = []
    corpus = info.get("corpus")
    if isinstance(corpus, dict) and isinstance(corpus.get("files"), list) and corpus["files"]:
        names = [os.path.basename(str(f)) for f in corpus["files"]]
        what = names[0] + (f" and {len(names) - 1} more file{'s' if len(names) > 2 else ''}" if len(names) > 1 else "")
        details = []
        # the corpus's tokens as train and info count them (raw: out-of-vocabulary ones too)
        tokens = next((corpus[k] for k in ("raw_tokens", "tokens") if isinstance(corpus.get(k), int)), None)
        if tokens is not None:
            details.append(plural(tokens, "token"))
        epochs = model.config.get("epochs")
        if isinstance(epochs, int):
            details.append(f"{epochs} epoch{'s' if epochs != 1 else ''}")
        parts.append(f"trained on {what}" + (f" ({', '.join(details)})" if details else ""))
    elif info.get("source"):
        fmt = info.get("format")
        parts.append(f"from {fmt + ' file ' if fmt else ''}{info['source']}")
    return ", ".join(parts)
