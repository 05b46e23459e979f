"""Unknown words as pieces: the rule a model, and the folders it exports, share.

A word outside the vocabulary is split as WordPiece splits it (greedy longest match; later pieces
prefixed ``##``) over the model's words plus every run of at most :data:`PIECE_CHARS` characters in
them. A piece that is a word brings its row, any other its hashed vector (:mod:`scbow.vectors.average`).
Unlike one hashed vector a word, pieces travel in an exported WordPiece tokenizer, and they scored
higher on STS-B dev (benchmarks/results/unknown_pieces.md). A word with a character no word has, or
longer than :attr:`Pieces.max_chars`, has no pieces: it is left out.
"""

from __future__ import annotations

import numpy as np

# the smallest setting within 0.002 of the best on STS-B dev (benchmarks/results/unknown_pieces.md)
PIECE_CHARS = 2
PREFIX = "##"  # what marks a piece that continues a word (WordPiece's continuing_subword_prefix)
MAX_WORD_CHARS = 100  # WordPiece's default max_input_chars_per_word; raised to the longest word of a vocabulary


class Pieces:
    """The pieces of a vocabulary (``words``, a list of str) and the split of any word into them.

    ``new``: the piece tokens the vocabulary lacks (sorted), one exported row each.
    ``max_chars``: words longer than this have no pieces (``max_input_chars_per_word``).
    """

    def __init__(self, words):
        words = list(words)
        self._words = set(words)
        first, inner = ngrams(words, PIECE_CHARS)
        self._pieces = (first | {PREFIX + g for g in inner}) - self._words
        self.new = sorted(self._pieces)
        longest = max(map(len, words), default=0)
        self.max_chars = max(MAX_WORD_CHARS, longest)
        # the longest string a split can match: a piece, or a word (a word may start with ##)
        self._longest = max(PIECE_CHARS + len(PREFIX), longest)

    def split(self, word: str) -> list[str]:
        """The pieces of ``word``, as the exported WordPiece tokenizer splits it; [] when it has none."""
        n = len(word)
        if n > self.max_chars:
            return []
        words, pieces, out, i = self._words, self._pieces, [], 0
        while i < n:
            head = "" if i == 0 else PREFIX
            for j in range(min(n, i + self._longest), i, -1):
                piece = head + word[i:j]
                if piece in words or piece in pieces:
                    out.append(piece)
                    i = j
                    break
            else:
                return []
        return out


def ngrams(words: list, longest: int) -> tuple[set, set]:
    """``(first, inner)``: the runs of 1 to ``longest`` characters that start a word and that start later
    in one. Runs of up to 3 are int64 keys of 21 bits a code point: three times faster than slicing."""
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    codes = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    offset = np.arange(len(codes)) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # within its word
    room = np.repeat(lengths, lengths) - offset  # characters from here to the end of the word
    first, inner = set(), set()
    key = np.zeros(len(codes), dtype=np.int64)
    for a in range(1, longest + 1):
        if a > 3:  # 4 characters do not fit 63 bits: sliced from the words (slower)
            first.update(w[:a] for w in words if len(w) >= a)
            inner.update(w[i:i + a] for w in words for i in range(1, len(w) - a + 1))
            continue
        key[: len(codes) - a + 1] = (key[: len(codes) - a + 1] << 21) | codes[a - 1:]  # now runs of a
        for found, where in ((first, (room >= a) & (offset == 0)), (inner, (room >= a) & (offset > 0))):
            found.update("".join(chr((value >> (21 * (a - 1 - k))) & 0x1FFFFF) for k in range(a))
                         for value in np.unique(key[where]).tolist())
    return first, inner


def wordpiece_model(vocab: dict, unk: str, max_chars: int) -> dict:
    """The ``model`` entry of a ``tokenizers`` JSON that splits as :meth:`Pieces.split` does."""
    return {"type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": PREFIX,
            "max_input_chars_per_word": int(max_chars), "vocab": vocab}
