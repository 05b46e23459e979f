"""The one tokenizer of scbow-numba, shared by training, similarity and evaluation.

Rule (version 2): fold the text (Unicode NFKC, which turns ligatures, full-width letters and
other compatibility forms into their plain letters and joins a decomposed accent to its
letter; then the typographic apostrophes and quotes into their ASCII forms: ``’ ‘ ‚ ‛`` into
``'`` and ``“ ” „ ‟`` into ``"``), lowercase it, then a token is either a run of word
characters with inner apostrophes (``don't``, ``o'clock``, ``état``, ``1984``) or a single
character that is neither a word character nor whitespace (``.``, ``,``, ``"``, ``-``,
``#``). Nothing is stemmed or removed.

Version 1 did not fold: ``king’s`` and ``king's`` were two words, and a sentence typed in
NFD did not match its NFC spelling. A model records the version it was trained with
(``info["corpus"]["tokenizer_version"]``) and keeps using it (:func:`tokenizer`), so models
saved before keep their own rule. Changing the rule changes ``TOKENIZER_VERSION``, which
also keys the corpus cache.
"""

from __future__ import annotations

import re
import unicodedata

TOKENIZER_VERSION = "2"
VERSIONS = ("1", "2")

_WORD = r"\w+(?:['\u2019]\w+)*"
_TOKEN_RE = re.compile(_WORD + r"|[^\w\s]")
# The corpus encoder tokenizes many lines in one call and keeps the line ends as tokens.
_TOKEN_OR_NEWLINE_RE = re.compile(_WORD + r"|[^\w\s]|\n")
# Typographic apostrophes and double quotes -> ASCII (NFKC keeps them as they are).
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'})


def fold(text: str) -> str:
    """NFKC, then the typographic apostrophes and quotes as ASCII (version 2's first step).

    Never adds or removes a line end, and maps whitespace to whitespace only, so the
    tokens of a block are still those of its lines and of its whitespace-separated chunks.
    """
    return unicodedata.normalize("NFKC", text).translate(_QUOTES)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase tokens (words and punctuation marks)."""
    return _TOKEN_RE.findall(fold(text).lower())


def tokenize_lines(text: str) -> list[str]:
    """Tokenize a block of lines, keeping each ``\\n`` as a token of its own."""
    return _TOKEN_OR_NEWLINE_RE.findall(fold(text).lower())


def _tokenize_v1(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


def _tokenize_lines_v1(text: str) -> list[str]:
    return _TOKEN_OR_NEWLINE_RE.findall(text.lower())


def tokenizer(version: str | None = None):
    """``(tokenize, tokenize_lines)`` of a tokenizer version (None: the current one).

    An unknown version (a model from a newer scbow-numba) is a ValueError."""
    version = TOKENIZER_VERSION if version is None else str(version)
    if version == "1":
        return _tokenize_v1, _tokenize_lines_v1
    if version == TOKENIZER_VERSION:
        return tokenize, tokenize_lines
    raise ValueError(f"tokenizer version {version!r} is not one this scbow-numba knows ({', '.join(VERSIONS)}); "
                     "upgrade scbow-numba to read this model")
