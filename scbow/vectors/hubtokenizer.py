"""The ``tokenizer.json`` of an exported folder (:mod:`scbow.vectors.export`): a Hugging Face
``tokenizers`` tokenizer that reproduces :func:`scbow.text.tokenize.tokenize` under the model's own
tokenizer version.

It is a ``WordLevel`` model over our vocabulary with an ``[UNK]`` token, a normalizer (versions 2
to 4: NFKC, the typographic quotes as ASCII, lowercase; version 1: lowercase) and a
pre-tokenizer that keeps the matches of our token regex (version 4: the units of the scripts
written without spaces too, one Han ideograph a token and so on, which a regex carries
exactly). The regex is written with Python's own
``\\w``, ``\\s`` and (versions 3 and 4) combining marks as explicit code-point ranges
(:func:`python_classes`, :func:`scbow.text.tokenize.mark_ranges`): the Oniguruma engine of
``tokenizers`` reads those classes differently (``1⅞``). ``tokenizers`` is never imported here.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache

from ..errors import ModelError
from ..text.tokenize import code_ranges

UNK = "[UNK]"


@lru_cache(maxsize=1)
def python_classes() -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """``(word, space)``: the code-point ranges (inclusive) that Python's ``re`` matches with
    ``\\w`` and with ``\\s`` in a str pattern, read from ``re`` itself over every code point
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
    """``(cased, ignorable)``: the code points Python's ``str.lower`` treats as cased (and not
    case-ignorable) and as case-ignorable when it decides whether a capital sigma is final
    (``ς``: after a cased letter, case-ignorable ones between, and not before one), read from
    ``str.lower`` itself. The ``tokenizers`` Lowercase lowers letter by letter (always ``σ``)."""
    codes = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    cased = [c for c in codes if (chr(c) + "\u03a3").lower()[-1] == "\u03c2"]
    taken = set(cased)
    ignorable = [c for c in codes if c not in taken and ("A" + chr(c) + "\u03a3").lower()[-1] == "\u03c2"]
    return code_ranges(cased), code_ranges(ignorable)


def _ranges(ranges) -> str:
    """The inside of an Oniguruma character class: ``\\x{41}-\\x{5a}...``."""
    return "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges)


def token_pattern(version: str) -> str:
    """Our token regex of tokenizer ``version`` with Python's classes spelled out: a word of
    versions 3 and 4 is ``\\w[\\w MARKS]*`` (:func:`scbow.text.tokenize.mark_ranges`), of versions 1
    and 2 ``\\w+``; then ``(?:['’]WORD)*|[^\\w\\s]``. Version 4 puts the units of the scripts
    without spaces first (:func:`scbow.text.tokenize.units_pattern`), and its word characters are
    those outside them."""
    from ..text.tokenize import NOSPACE, mark_ranges, units_pattern

    word, space = python_classes()
    letters = word
    if version == "4":
        outside = set(c for a, b in NOSPACE for c in range(a, b + 1))
        letters = code_ranges(c for a, b in word for c in range(a, b + 1) if c not in outside)
    w = f"[{_ranges(letters)}]"
    one = f"{w}[{_ranges(letters)}{_ranges(mark_ranges())}]*" if version in ("3", "4") else f"{w}+"
    pattern = f"{one}(?:['\\x{{2019}}]{one})*|[^{_ranges(word)}{_ranges(space)}]"
    return f"{units_pattern(_ranges)}|{pattern}" if version == "4" else pattern


SIGMA_LOOKBEHIND = 16


def _lowercase() -> list[dict]:
    """Python's ``str.lower``: a capital sigma made final (``ς``) where Python makes it so, then
    the letter-by-letter Lowercase of ``tokenizers``."""
    cased, ignorable = sigma_classes()
    c, i = f"[{_ranges(cased)}]", f"[{_ranges(ignorable)}]"
    # Python looks back past any number of case-ignorable characters; a lookbehind of unbounded
    # length made the normalizer about 100 times slower (10 ms against 0.1 ms on 2,500 characters),
    # so it looks back past at most SIGMA_LOOKBEHIND of them (an apostrophe or a combining mark
    # or two is what text holds)
    final = f"(?<={c}{i}{{0,{SIGMA_LOOKBEHIND}}})\\x{{3a3}}(?!{i}*{c})"
    return [{"type": "Replace", "pattern": {"Regex": final}, "content": "\u03c2"}, {"type": "Lowercase"}]


# Characters whose NFKC form Python (Unicode 14.0 and later) knows and the NFKC of ``tokenizers``
# (an older table, Unicode 12.0) does not: each is replaced by Python's form before its NFKC.
# Found by checking every code point (tests/test_export.py, the slow test of every character).
NFKC_NEWER = ((0x32FF, 0x32FF), (0xA7F2, 0xA7F4), (0xAB69, 0xAB69), (0x10781, 0x10785), (0x10787, 0x107B0),
              (0x107B2, 0x107BA), (0x1F16C, 0x1F16C), (0x1FBF0, 0x1FBF9))


def _nfkc() -> list[dict]:
    import unicodedata

    fixes = []
    for lo, hi in NFKC_NEWER:
        for c in range(lo, hi + 1):
            target = unicodedata.normalize("NFKC", chr(c))
            if target != chr(c):  # a Python whose table lacks it too: nothing to fix
                fixes.append({"type": "Replace", "pattern": {"String": chr(c)}, "content": target})
    return fixes + [{"type": "NFKC"}]


def _normalizer(version: str) -> dict:
    if version == "1":
        return {"type": "Sequence", "normalizers": _lowercase()}
    if version not in ("2", "3", "4"):  # these fold alike; they differ in their words (token_pattern)
        raise ModelError(f"tokenizer version {version!r} cannot be exported (this scbow-numba writes 1 to 4)")
    return {"type": "Sequence", "normalizers": [
        *_nfkc(),
        {"type": "Replace", "pattern": {"Regex": "[\\x{2018}\\x{2019}\\x{201a}\\x{201b}]"}, "content": "'"},
        {"type": "Replace", "pattern": {"Regex": "[\\x{201c}\\x{201d}\\x{201e}\\x{201f}]"}, "content": '"'},
        *_lowercase(),
    ]}


def unk_token(words) -> str:
    """``[UNK]``, or ``[UNK1]``... when the vocabulary already has that word (vectors from elsewhere).
    Our tokenizer never yields it: ``[`` is a token of its own."""
    taken = set(words)
    token, n = UNK, 0
    while token in taken:
        n += 1
        token = f"[UNK{n}]"
    return token


def tokenizer_json(words: list[str], version: str, max_chars: int | None = None) -> dict:
    """A ``tokenizers`` tokenizer (as its JSON) that splits as ``scbow.text.tokenize`` does under
    tokenizer ``version`` and gives token ``words[i]`` id i; any other token gets the id
    ``len(words)``, the unknown token (:func:`unk_token`). The unknown token is not an added
    token: added tokens are matched in the raw text, where ``[UNK]`` is three of our tokens.

    ``max_chars``: ``words`` hold pieces (``scbow.vectors.pieces``) and a token not among them is
    split into them by a WordPiece model, as ``Model.encode(unknown="pieces")`` splits it (a word of
    more than ``max_chars`` characters, or with a character no piece has, is the unknown token);
    None: a WordLevel model (a token not among ``words`` is the unknown token)."""
    from .pieces import wordpiece_model

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
        "normalizer": _normalizer(str(version)),
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": token_pattern(str(version))}, "behavior": "Removed",
                          "invert": True},
        "post_processor": None,
        "decoder": None,
        "model": model,
    }
