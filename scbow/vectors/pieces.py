"""Unknown words as pieces: the rule a model, and the folders it exports, share.

A word outside the vocabulary is split into pieces the way a WordPiece tokenizer splits it
(greedy longest match from the left; a piece after the first carries the prefix ``##``),
over a vocabulary of the model's words plus every piece of at most :data:`PIECE_CHARS`
characters found in them: the first characters of a word (``la``), and any run of
characters inside one (``##er``). Each piece counts as one token of the sentence average:
a piece that is a word of the model (``la`` in ``laertes``, say) brings its trained row,
any other a fixed random vector drawn from a hash of the piece (``hashed_vector``) of norm
``unknown_scale`` times the rarest rows' norm (:mod:`scbow.vectors.average`).

Why pieces and not one hashed vector per word: a sentence-transformers or model2vec
folder can hold a WordPiece tokenizer and one row per piece, so the exported model embeds
unknown words exactly as the model does; a hash of the whole word cannot travel in those
formats. Two sentences that share a rare name still share all its pieces, and words that
share a stem share some. On the STS-B dev set it scored above one hashed vector per word
(benchmarks/results/unknown_pieces.md).

A word with a character that no word of the vocabulary has, or longer than
:attr:`Pieces.max_chars` characters, has no pieces (WordPiece makes it the unknown token,
which the exported models leave out of the average): it is left out.
"""

from __future__ import annotations

import numpy as np

# The longest piece, in characters: on the STS-B dev set (10M and 100M models) 2 characters at
# TrainConfig's unknown_scale 0.35 is the smallest setting within 0.002 of the best (4 x 0.75, with
# 19 times the rows); benchmarks/results/unknown_pieces.md.
PIECE_CHARS = 2
PREFIX = "##"  # what marks a piece that continues a word (WordPiece's continuing_subword_prefix)
MAX_WORD_CHARS = 100  # WordPiece's default max_input_chars_per_word; raised to the longest word of a vocabulary


class Pieces:
    """The pieces of a vocabulary (``words``, a list of str) and the split of any word into them.

    ``new``: the piece tokens the vocabulary lacks (sorted), one exported row each.
    ``max_chars``: words longer than this have no pieces (the exported tokenizer's
    ``max_input_chars_per_word``).
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
    """The runs of 1 to ``longest`` characters of ``words``: ``(first, inner)``, those that start a
    word and those that start later in one. Runs of up to 3 are computed on the code points as
    integers (a run as one int64 of 21 bits a character), three times faster than slicing."""
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
    """The ``model`` entry of a ``tokenizers`` JSON that splits as :meth:`Pieces.split` does, given
    ``vocab`` (every word and piece -> its id) and the unknown token ``unk`` (in ``vocab``)."""
    return {"type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": PREFIX,
            "max_input_chars_per_word": int(max_chars), "vocab": vocab}
