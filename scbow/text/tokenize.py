"""The one tokenizer of scbow-numba, shared by training, similarity and evaluation.

Rule: lowercase the text, then a token is either a run of word characters with inner
apostrophes (``don't``, ``o'clock``, ``état``, ``1984``) or a single character that is
neither a word character nor whitespace (``.``, ``,``, ``"``, ``-``, ``#``). Unicode aware;
nothing is stemmed or removed. Changing this rule changes ``TOKENIZER_VERSION``, which keys
the corpus cache.
"""

from __future__ import annotations

import re

TOKENIZER_VERSION = "1"

_WORD = r"\w+(?:['\u2019]\w+)*"
_TOKEN_RE = re.compile(_WORD + r"|[^\w\s]")
# The corpus encoder tokenizes many lines in one call and keeps the line ends as tokens.
_TOKEN_OR_NEWLINE_RE = re.compile(_WORD + r"|[^\w\s]|\n")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase tokens (words and punctuation marks)."""
    return _TOKEN_RE.findall(text.lower())


def tokenize_lines(text: str) -> list[str]:
    """Tokenize a block of lines, keeping each ``\\n`` as a token of its own."""
    return _TOKEN_OR_NEWLINE_RE.findall(text.lower())
