"""Vocabulary: words with their corpus counts, id = position (most frequent first)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

MAX_COUNT = 2**63 - 1  # counts are int64


def unsavable(word) -> str | None:
    """Why ``word`` cannot be a line of a ``vocab.txt`` that :meth:`Vocab.load` reads back, or None.

    ``load`` reads universal newlines and splits each line at its last space, so a word is any non-empty
    str without ``\\n`` or ``\\r`` that UTF-8 can write. The tokenizer never makes another; a word2vec file may.
    """
    if not isinstance(word, str):
        return f"is a {type(word).__name__}, not a string"
    if not word:
        return "is empty"
    if "\n" in word or "\r" in word:
        return "holds a line break"
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate, which UTF-8 cannot write"
    return None


class Vocab:
    """Words and counts (int64, one per word); ``index[word]`` gives the id, ``words[id]`` the word."""

    def __init__(self, words: list[str], counts) -> None:
        self.words = list(words)
        self.counts = np.asarray(counts, dtype=np.int64)
        if len(self.words) != len(self.counts):
            raise ValueError(f"{len(self.words)} words but {len(self.counts)} counts")
        self.index = {w: i for i, w in enumerate(self.words)}
        if len(self.index) != len(self.words):
            seen = set()
            twice = next(w for w in self.words if w in seen or seen.add(w))
            raise ValueError(f"the vocabulary has a repeated word ({twice!r})")

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def save(self, path: os.PathLike) -> None:
        """Write ``word count`` lines, UTF-8; ValueError first for a word :meth:`load` could not read back."""
        self.check_savable()
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            for w, c in zip(self.words, self.counts.tolist()):
                fh.write(f"{w} {c}\n")

    def check_savable(self) -> None:
        """ValueError naming the first word :meth:`save` cannot write so that :meth:`load` reads it
        back (:func:`unsavable`); one pass over the words when all are fine."""
        words = self.words
        try:
            joined = "".join(words)
            fine = "" not in self.index and "\n" not in joined and "\r" not in joined
            joined.encode("utf-8")
        except (TypeError, UnicodeEncodeError):
            fine = False
        if fine:
            return
        for n, word in enumerate(words, 1):
            why = unsavable(word)
            if why:
                text = repr(word)
                text = text if len(text) <= 60 else text[:50] + "..."
                raise ValueError(f"word {n:,} of {len(words):,}, {text}, {why}")

    @classmethod
    def load(cls, path: os.PathLike) -> "Vocab":
        return cls.parse(Path(path).read_text(encoding="utf-8"), path)

    @classmethod
    def parse(cls, text: str, path: os.PathLike) -> "Vocab":
        """The vocabulary in ``text``, the contents of the ``vocab.txt`` at ``path`` (named in errors)."""
        words, counts = [], []
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for n, line in enumerate(lines, 1):
            word, sep, count = line.rpartition(" ")
            if not sep or not word or not (count.isascii() and count.isdigit()):
                raise ValueError(f"{path}: line {n} is not 'word count'")
            if len(count) > 19 or int(count) > MAX_COUNT:
                raise ValueError(f"{path}: line {n}: count {count[:20]}{'...' if len(count) > 20 else ''} "
                                 f"is larger than any corpus (at most {MAX_COUNT:,})")
            words.append(word)
            counts.append(int(count))
        try:
            return cls(words, counts)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
