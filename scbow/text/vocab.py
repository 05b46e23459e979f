"""Vocabulary: words with their corpus counts, id = position (most frequent first)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

MAX_COUNT = 2**63 - 1  # counts are int64


class Vocab:
    """Words and counts; ``index[word]`` gives the id, ``words[id]`` the word.

    counts: int64 array, shape (n_words,).
    """

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
        """Write ``word count`` lines, UTF-8 (tokens never contain whitespace)."""
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            for w, c in zip(self.words, self.counts.tolist()):
                fh.write(f"{w} {c}\n")

    @classmethod
    def load(cls, path: os.PathLike) -> "Vocab":
        text = Path(path).read_text(encoding="utf-8")
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
