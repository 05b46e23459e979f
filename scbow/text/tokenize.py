"""The one tokenizer of scbow-numba, shared by training, similarity and evaluation.

Rule (version 4): fold the text (Unicode NFKC, which turns ligatures, full-width letters and other
compatibility forms into plain letters and joins a decomposed accent to its letter; then ``’ ‘ ‚ ‛``
into ``'`` and ``“ ” „ ‟`` into ``"``), lowercase it, then a token is a unit of a script written
without spaces, a word, or a single character that is neither a word character nor whitespace
(``.``, ``,``, ``"``, ``-``, ``#``). A word is a word character (a letter, a digit or a connector
such as ``_``) followed by word characters and combining marks (Unicode category M: the vowel signs
and virama of ``हिन्दी``, Hebrew points, the dot lowercasing ``İ`` leaves on ``i̇``), with inner
apostrophes (``don't``, ``o'clock``, ``état``, ``1984``). Nothing is stemmed or removed.

Units (:func:`units_pattern`): every Han ideograph and every kana is a token (``我爱北京``:
``我 爱 北 京``, BERT's rule for Han; ``日本語のテキスト``: ``日 本 語 の テ キ ス ト``), and Thai is cut
into clusters of a consonant with its leading vowel, its marks and a following ``ะ`` ``า`` ``ๅ``, about
a syllable, as a kana is (``ภาษาไทย``: ``ภา ษา ไท ย``). Of the rules compared on the JSTS dev set
(kana runs, katakana runs, script runs, MeCab's and janome's words) this one scored highest
(``benchmarks/results/quality_ja.md``). ``scbow.vectors.hubtokenizer`` writes it as a ``tokenizer.json``.

The version (``TOKENIZER_VERSION``) is recorded in a trained model (``info["corpus"]["tokenizer_version"]``)
and keys the corpus cache: changing the rule changes it, and a model of another version is refused when read.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import lru_cache

TOKENIZER_VERSION = "4"

# Typographic apostrophes and double quotes -> ASCII (NFKC keeps them as they are).
_QUOTES = (("\u2018", "'"), ("\u2019", "'"), ("\u201a", "'"), ("\u201b", "'"),
           ("\u201c", '"'), ("\u201d", '"'), ("\u201e", '"'), ("\u201f", '"'))

@lru_cache(maxsize=1)
def mark_ranges() -> tuple[tuple[int, int], ...]:
    """The combining marks (Unicode category M, as Python's tables have it) as inclusive code-point
    ranges; only planes 0, 1 and 14, which hold them all, are read (every plane: four times as long)."""
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
    """The token regex for text without a script without spaces, and that regex with line ends, made on
    first use (reading the marks takes about 50 ms, which ``--help`` or ``info`` should not pay). A token is
    ``WORD(?:['’]WORD)*|[^\\w\\s]`` with ``WORD = \\w[\\w MARKS]*``. No mark is ASCII: the look-ahead
    spares the space or full stop ending most words a test against the marks' 300 ranges (on Gutenberg
    text 1.1 times the time of plain ``\\w+``, against 1.9 for the regex as written)."""
    marks = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in mark_ranges())
    token = rf"\w+(?:(?=[^\x00-\x7f])[{marks}]+\w*|['\u2019]\w+)*|[^\w\s]"
    return re.compile(token), re.compile(token + r"|\n")


# The scripts without spaces, as inclusive code-point ranges. Han: the ideographs of every
# CJK block (and the iteration and closing marks 々 〆 〇 〻 that go with them); kana without the
# middle dot ・ (punctuation) and the spacing voicing marks (NFKC makes them a space and a mark).
HAN = ((0x3005, 0x3007), (0x303B, 0x303B), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF),
       (0x20000, 0x3FFFF))
HIRAGANA = ((0x3041, 0x3096), (0x309D, 0x309F))
KATAKANA = ((0x30A1, 0x30FA), (0x30FD, 0x30FF), (0x31F0, 0x31FF))
PROLONGED = ((0x30FC, 0x30FC),)  # ー, a kana of its own
THAI_LEAD = ((0x0E40, 0x0E44),)  # เ แ โ ใ ไ, written before the consonant they follow in speech
THAI_CONSONANT = ((0x0E01, 0x0E2E),)
THAI_FOLLOW = ((0x0E30, 0x0E30), (0x0E32, 0x0E32), (0x0E45, 0x0E45))  # ะ า ๅ (NFKC makes ำ a mark and า)
THAI = ((0x0E01, 0x0E3A), (0x0E40, 0x0E4E))  # letters and marks (not the digits, which are a word's)
NOSPACE = code_ranges(sorted({c for a, b in HAN + HIRAGANA + KATAKANA + PROLONGED + THAI for c in range(a, b + 1)}))


def units_pattern(cls) -> str:
    """The alternatives cutting the scripts without spaces, each unit with its marks; ``cls(ranges)``
    writes a character class's inside in the dialect at hand (Python's, or ``scbow.vectors.hubtokenizer``'s)."""
    marks = f"[{cls(mark_ranges())}]*"
    thai = f"[{cls(THAI_LEAD)}]?[{cls(THAI_CONSONANT)}]{marks}(?:[{cls(THAI_FOLLOW)}]{marks})?"
    return "|".join([f"[{cls(HAN + HIRAGANA + KATAKANA + PROLONGED)}]{marks}", thai, f"[{cls(THAI)}]{marks}"])


def _python_class(ranges) -> str:
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


def token_regex(units: str) -> str:
    """The token regex (Python's dialect) with the alternatives ``units`` in front of
    the words (:func:`units_pattern`): a word character is one outside the scripts' ranges."""
    marks = _python_class(mark_ranges())
    w = f"[^\\W{_python_class(NOSPACE)}]"
    return f"{units}|{w}+(?:(?=[^\\x00-\\x7f])[{marks}]+{w}*|['\\u2019]{w}+)*|[^\\w\\s]"


@lru_cache(maxsize=1)
def _unit_patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """The token regex, that regex with line ends, and the test for a script without spaces:
    text without one gets the same tokens faster from :func:`_patterns`' regex (no test of the scripts' ranges)."""
    token = token_regex(units_pattern(_python_class))
    return re.compile(token), re.compile(token + r"|\n"), re.compile(f"[{_python_class(NOSPACE)}]")


# The regexes on ASCII text (no mark, no ’, no script without spaces): the same tokens
# in half the time. The classes spell \w out; \s stays Unicode's, which holds \x1c-\x1f.
_ASCII_WORD = r"[A-Za-z0-9_]+(?:'[A-Za-z0-9_]+)*|[^A-Za-z0-9_\s]"
_ASCII_RE = re.compile(_ASCII_WORD)
_ASCII_OR_NEWLINE_RE = re.compile(_ASCII_WORD + r"|\n")


def fold(text: str) -> str:
    """NFKC, then the typographic apostrophes and quotes as ASCII.
    Whitespace maps to whitespace only, line ends stay: a block's tokens are still its lines' and chunks'."""
    if text.isascii():  # NFKC keeps ASCII as it is, and no quote to fold is ASCII
        return text
    text = unicodedata.normalize("NFKC", text)
    for quote, plain in _QUOTES:  # str.replace: ten times faster than str.translate on a block of lines
        if quote in text:
            text = text.replace(quote, plain)
    return text


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase tokens (units of the scripts without spaces, words, punctuation)."""
    text = fold(text).lower()
    if text.isascii():  # known at once (CPython records it): most English text pays nothing more
        return _ASCII_RE.findall(text)
    units = _unit_patterns()
    return (units[0] if units[2].search(text) else _patterns()[0]).findall(text)


def tokenize_lines(text: str) -> list[str]:
    """Tokenize a block of lines, keeping each ``\\n`` as a token of its own."""
    text = fold(text).lower()
    if text.isascii():
        return _ASCII_OR_NEWLINE_RE.findall(text)
    units = _unit_patterns()
    return (units[1] if units[2].search(text) else _patterns()[1]).findall(text)
