"""The one tokenizer of scbow-numba, shared by training, similarity and evaluation.

Rule (version 3): fold the text (Unicode NFKC, which turns ligatures, full-width letters and
other compatibility forms into their plain letters and joins a decomposed accent to its
letter; then the typographic apostrophes and quotes into their ASCII forms: ``’ ‘ ‚ ‛`` into
``'`` and ``“ ” „ ‟`` into ``"``), lowercase it, then a token is either a word or a single
character that is neither a word character nor whitespace (``.``, ``,``, ``"``, ``-``,
``#``). A word is a word character (a letter, a digit or a connector such as ``_``) followed
by word characters and combining marks (Unicode category M: the vowel signs and virama of
``हिन्दी``, Hebrew points, the dot above that lowercasing ``İ`` leaves on ``i̇``), with inner
apostrophes (``don't``, ``o'clock``, ``état``, ``1984``). Nothing is stemmed or removed.

Version 2 had no marks in words: Python's ``\\w`` matches no combining mark, so a mark cut its
word (``हिन्दी`` was six one-character tokens, ``İstanbul`` three). Version 1 did not fold
either: ``king’s`` and ``king's`` were two words, and a sentence typed in NFD did not match
its NFC spelling. A model records the version it was trained with
(``info["corpus"]["tokenizer_version"]``) and keeps using it (:func:`tokenizer`), so models
saved before keep their own rule. Changing the rule changes ``TOKENIZER_VERSION``, which
also keys the corpus cache.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import lru_cache

TOKENIZER_VERSION = "3"
VERSIONS = ("1", "2", "3")

# Typographic apostrophes and double quotes -> ASCII (NFKC keeps them as they are).
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'})

# versions 1 and 2: a word is a run of \w
_WORD_V2 = r"\w+(?:['\u2019]\w+)*"
_TOKEN_RE_V2 = re.compile(_WORD_V2 + r"|[^\w\s]")
# The corpus encoder tokenizes many lines in one call and keeps the line ends as tokens.
_TOKEN_OR_NEWLINE_RE_V2 = re.compile(_WORD_V2 + r"|[^\w\s]|\n")


@lru_cache(maxsize=1)
def mark_ranges() -> tuple[tuple[int, int], ...]:
    """The combining marks (Unicode category M, as Python's tables have it) as inclusive
    code-point ranges. Unicode puts every one in planes 0, 1 and 14, so only those are read
    (every code point would take four times as long)."""
    return code_ranges(c for c in itertools.chain(range(0x20000), range(0xE0000, 0xF0000))
                       if unicodedata.category(chr(c))[0] == "M")


def code_ranges(codes) -> tuple[tuple[int, int], ...]:
    """Sorted code points as inclusive ranges."""
    ranges: list[list[int]] = []
    for c in codes:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return tuple((a, b) for a, b in ranges)


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern, re.Pattern]:
    """Version 3's two regexes, made on first use: reading the marks takes about 50 ms, which
    a command that never tokenizes (``--help``, ``info``) should not pay.

    A token is ``WORD(?:['’]WORD)*|[^\\w\\s]`` with ``WORD = \\w[\\w MARKS]*``, written here as
    word characters followed by runs of marks (and word characters) or of an apostrophe and word
    characters. No mark is ASCII: the look-ahead spares the space or the full stop that ends most
    words a test against the marks' 300 ranges (on Gutenberg text the regex as written took 1.9
    times as long as version 2's, this one 1.1 times)."""
    marks = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in mark_ranges())
    token = rf"\w+(?:(?=[^\x00-\x7f])[{marks}]+\w*|['\u2019]\w+)*|[^\w\s]"
    return re.compile(token), re.compile(token + r"|\n")


def fold(text: str) -> str:
    """NFKC, then the typographic apostrophes and quotes as ASCII (the first step since version 2).

    Never adds or removes a line end, and maps whitespace to whitespace only, so the
    tokens of a block are still those of its lines and of its whitespace-separated chunks.
    """
    return unicodedata.normalize("NFKC", text).translate(_QUOTES)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase tokens (words and punctuation marks)."""
    return _patterns()[0].findall(fold(text).lower())


def tokenize_lines(text: str) -> list[str]:
    """Tokenize a block of lines, keeping each ``\\n`` as a token of its own."""
    return _patterns()[1].findall(fold(text).lower())


def _tokenize_v2(text: str) -> list[str]:
    return _TOKEN_RE_V2.findall(fold(text).lower())


def _tokenize_lines_v2(text: str) -> list[str]:
    return _TOKEN_OR_NEWLINE_RE_V2.findall(fold(text).lower())


def _tokenize_v1(text: str) -> list[str]:
    return _TOKEN_RE_V2.findall(text.lower())


def _tokenize_lines_v1(text: str) -> list[str]:
    return _TOKEN_OR_NEWLINE_RE_V2.findall(text.lower())


_RULES = {"1": (_tokenize_v1, _tokenize_lines_v1), "2": (_tokenize_v2, _tokenize_lines_v2),
          TOKENIZER_VERSION: (tokenize, tokenize_lines)}


def tokenizer(version: str | None = None):
    """``(tokenize, tokenize_lines)`` of a tokenizer version (None: the current one).

    An unknown version (a model from a newer scbow-numba) is a ValueError."""
    version = TOKENIZER_VERSION if version is None else str(version)
    if version in _RULES:
        return _RULES[version]
    raise ValueError(f"tokenizer version {version!r} is not one this scbow-numba knows ({', '.join(VERSIONS)}); "
                     "upgrade scbow-numba to read this model")
