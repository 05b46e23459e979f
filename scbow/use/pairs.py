"""``similarity --pairs``: the cosines of many sentence pairs, streamed in blocks."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from ..errors import CorpusError
from ..text.reader import open_text

PAIRS_BLOCK = 20_000  # pairs embedded at once


def score_pairs(model, path, out=None, unknown: str | None = None, block: int = PAIRS_BLOCK) -> tuple[int, int]:
    """Write the cosine of every pair of ``path`` (``-``: stdin) to ``out``, one a line, in order.

    A line is ``s1<TAB>s2`` or ``gold<TAB>s1<TAB>s2`` (an STS file); a pair with a side that
    has nothing to average prints ``nan``. Returns ``(pairs, pairs printed as nan)``.
    CorpusError for a missing or damaged file or a line of another shape.
    """
    out = out or sys.stdout
    if str(path) != "-" and not Path(path).is_file():
        raise CorpusError(f"{path}: no such file" if not Path(path).exists() else f"{path}: not a regular file")
    # utf-8-sig, like the STS files: a byte order mark is not part of the first sentence
    fh = (io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8-sig", errors="replace", newline=None)
          if str(path) == "-" else open_text(Path(path)))
    total = unscored = 0

    def flush(first, second):
        nonlocal unscored
        cos = model.similarities(first, second, unknown=unknown)
        unscored += int((cos != cos).sum())
        out.write("".join("nan\n" if c != c else f"{c:.4f}\n" for c in cos.tolist()))

    try:
        first, second = [], []
        for n, line in enumerate(fh, 1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) == 3:
                fields = fields[1:]
            if len(fields) != 2:
                raise CorpusError(f"{path}: line {n} has {len(fields)} tab-separated fields; a pair is "
                                  "s1<TAB>s2 (or gold<TAB>s1<TAB>s2)")
            first.append(fields[0])
            second.append(fields[1])
            total += 1
            if len(first) == block:
                flush(first, second)
                first, second = [], []
        if first:
            flush(first, second)
        if total == 0:
            raise CorpusError(f"{path}: no sentence pairs (one pair a line: s1<TAB>s2 or gold<TAB>s1<TAB>s2)")
    finally:
        if str(path) != "-":
            fh.close()
        else:
            fh.detach()  # leaves sys.stdin open
        out.flush()
    return total, unscored
