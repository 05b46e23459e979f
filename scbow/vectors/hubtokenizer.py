"""The ``tokenizer.json`` of an exported folder: a Hugging Face ``tokenizers`` tokenizer that reproduces
:func:`scbow.text.tokenize.tokenize` (``tokenizers`` never imported).

A normalizer (NFKC, ASCII quotes, lowercase) and a pre-tokenizer keeping
our token regex's matches, with Python's ``\\w``, ``\\s`` and combining marks spelled out as code-point
ranges: the Oniguruma engine of ``tokenizers`` reads those classes differently (``1⅞``).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

from ..text.tokenize import NOSPACE, code_ranges, mark_ranges, units_pattern
from .pieces import wordpiece_model

UNK = "[UNK]"


@lru_cache(maxsize=1)
def python_classes() -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """``(word, space)``: the inclusive code-point ranges Python's ``re`` matches with ``\\w`` and ``\\s``
    (surrogates left out: no UTF-8 text holds them)."""
    out = []
    for cls in (r"\w+", r"\s+"):
        ranges = []
        for lo, hi in ((0, 0xD7FF), (0xE000, sys.maxunicode)):
            text = "".join(map(chr, range(lo, hi + 1)))
            for m in re.finditer(cls, text):
                ranges.append((lo + m.start(), lo + m.end() - 1))
        out.append(tuple(ranges))
    return out[0], out[1]


@lru_cache(maxsize=1)
def sigma_classes() -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """``(cased, ignorable)``: the code points ``str.lower`` treats as cased and as case-ignorable when it
    decides whether a capital sigma is final (``ς``); ``tokenizers``' Lowercase always gives ``σ``."""
    codes = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    cased = [c for c in codes if (chr(c) + "\u03a3").lower()[-1] == "\u03c2"]
    taken = set(cased)
    ignorable = [c for c in codes if c not in taken and ("A" + chr(c) + "\u03a3").lower()[-1] == "\u03c2"]
    return code_ranges(cased), code_ranges(ignorable)


def _ranges(ranges) -> str:
    """The inside of an Oniguruma character class: ``\\x{41}-\\x{5a}...``."""
    return "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges)


def token_pattern() -> str:
    """Our token regex with Python's classes spelled out: the units of scripts without spaces, then a word
    ``\\w[\\w MARKS]*(?:['’]WORD)*`` (its word characters those outside the units), then ``[^\\w\\s]``."""
    word, space = python_classes()
    outside = set(c for a, b in NOSPACE for c in range(a, b + 1))
    letters = code_ranges(c for a, b in word for c in range(a, b + 1) if c not in outside)
    one = f"[{_ranges(letters)}][{_ranges(letters)}{_ranges(mark_ranges())}]*"
    return f"{units_pattern(_ranges)}|{one}(?:['\\x{{2019}}]{one})*|[^{_ranges(word)}{_ranges(space)}]"


SIGMA_LOOKBEHIND = 16


def _lowercase() -> list[dict]:
    """Python's ``str.lower``: a capital sigma made final where Python makes it so, then Lowercase."""
    cased, ignorable = sigma_classes()
    c, i = f"[{_ranges(cased)}]", f"[{_ranges(ignorable)}]"
    # Python looks back past any number of case-ignorable characters; an unbounded lookbehind made
    # the normalizer about 100 times slower, and text holds an apostrophe or a mark or two
    final = f"(?<={c}{i}{{0,{SIGMA_LOOKBEHIND}}})\\x{{3a3}}(?!{i}*{c})"
    return [{"type": "Replace", "pattern": {"Regex": final}, "content": "\u03c2"}, {"type": "Lowercase"}]


# Characters whose NFKC form Python (Unicode 14+) knows and ``tokenizers``' (Unicode 12.0) does not:
# replaced by Python's form first. Found by checking every code point (tests/test_export.py).
NFKC_NEWER = ((0x32FF, 0x32FF), (0xA7F2, 0xA7F4), (0xAB69, 0xAB69), (0x10781, 0x10785), (0x10787, 0x107B0),
              (0x107B2, 0x107BA), (0x1F16C, 0x1F16C), (0x1FBF0, 0x1FBF9))


def _nfkc() -> list[dict]:
    fixes = []
    for lo, hi in NFKC_NEWER:
        for c in range(lo, hi + 1):
            target = unicodedata.normalize("NFKC", chr(c))
            if target != chr(c):  # a Python whose table lacks it too: nothing to fix
                fixes.append({"type": "Replace", "pattern": {"String": chr(c)}, "content": target})
    return fixes + [{"type": "NFKC"}]


def _normalizer() -> dict:
    return {"type": "Sequence", "normalizers": [
        *_nfkc(),
        {"type": "Replace", "pattern": {"Regex": "[\\x{2018}\\x{2019}\\x{201a}\\x{201b}]"}, "content": "'"},
        {"type": "Replace", "pattern": {"Regex": "[\\x{201c}\\x{201d}\\x{201e}\\x{201f}]"}, "content": '"'},
        *_lowercase(),
    ]}


def unk_token(words) -> str:
    """``[UNK]``, or ``[UNK1]``... when the vocabulary already has that word (vectors from elsewhere)."""
    taken = set(words)
    token, n = UNK, 0
    while token in taken:
        n += 1
        token = f"[UNK{n}]"
    return token


def tokenizer_json(words: list[str], max_chars: int | None = None) -> dict:
    """A ``tokenizers`` tokenizer (as JSON) that splits as ``scbow.text.tokenize`` does and gives ``words[i]``
    id i, any other token the unknown token's id ``len(words)`` (not an added token: those are matched in
    the raw text, where ``[UNK]`` is three of our tokens).

    ``max_chars``: ``words`` hold pieces and a WordPiece model splits other tokens into them, as
    ``Model.encode(unknown="pieces")`` does; None: a WordLevel model."""
    unk = unk_token(words)
    vocab = {w: i for i, w in enumerate(words)}
    vocab[unk] = len(words)
    model = ({"type": "WordLevel", "vocab": vocab, "unk_token": unk} if max_chars is None
             else wordpiece_model(vocab, unk, max_chars))
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": _normalizer(),
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": token_pattern()}, "behavior": "Removed",
                          "invert": True},
        "post_processor": None,
        "decoder": None,
        "model": model,
    }
