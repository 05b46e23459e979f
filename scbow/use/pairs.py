"""``similarity --pairs``: the cosines of many sentence pairs, streamed in blocks."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import CorpusError
from ..progress import note
from ..text.reader import DEFAULT_ENCODING, check_text, compression, invalid_utf8_warning, open_bytes, open_text, text_stream
from .evaluate import gold_score

PAIRS_BLOCK = 20_000  # pairs embedded at once


def score_pairs(model, path, out=None, unknown: str | None = None, block: int = PAIRS_BLOCK,
                warn=None, encoding: str = DEFAULT_ENCODING) -> tuple[int, int]:
    """Write the cosine of every pair of ``path`` (``-``: stdin) to ``out``, one a line, in order.

    A line is ``s1<TAB>s2`` or ``gold<TAB>s1<TAB>s2``; blank lines are skipped; a side with nothing to
    average prints ``nan``. Returns ``(pairs, pairs printed as nan)``. Read in ``encoding`` (with
    ``:replace``, bad bytes counted in one warning to ``warn``; default: stderr). CorpusError for a
    missing or damaged file or a line of another shape.
    """
    out = sys.stdout if out is None else out  # None when the shell closed it (>&-): dropped, as click.echo drops them
    warn = warn or note
    if str(path) != "-" and not Path(path).is_file():
        raise CorpusError(f"{path}: no such file" if not Path(path).exists() else f"{path}: not a regular file")
    if str(path) != "-" and compression(path) is not None:
        # damage shows at the checksum, at the end: read it through first, so no score is printed from it
        with open_bytes(Path(path)) as raw:
            while raw.read(1 << 22):
                pass
    fh = (text_stream(sys.stdin.buffer, encoding, name="<stdin>") if str(path) == "-"
          else open_text(Path(path), encoding=encoding))
    total = unscored = invalid = 0

    def flush(first, second):
        nonlocal unscored
        cos = model.similarity_pairwise(first, second, unknown=unknown)
        unscored += int((cos != cos).sum())
        if out is not None:
            out.write("".join("nan\n" if c != c else f"{c:.4f}\n" for c in cos.tolist()))

    name = "<stdin>" if str(path) == "-" else str(path)
    lines: list[str] = []

    def check():  # the rule for text that is not text, on each block of lines read
        nonlocal invalid
        invalid += check_text(name, "".join(lines))
        lines.clear()

    try:
        first, second = [], []
        for n, line in enumerate(fh, 1):
            lines.append(line)
            if not line.strip():  # a blank line, as evaluate reads STS files
                if len(lines) >= block:
                    check()
                continue
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) == 3:
                try:
                    gold_score(fields[0].strip(), f"{name}: line {n}", CorpusError)
                except CorpusError:
                    check()  # text that is not text is said first
                    raise
                fields = fields[1:]
            if len(fields) != 2:
                check()
                raise CorpusError(f"{name}: line {n} has {len(fields)} tab-separated fields; a pair is "
                                  "s1<TAB>s2 (or gold<TAB>s1<TAB>s2)")
            first.append(fields[0])
            second.append(fields[1])
            total += 1
            if len(first) == block:
                check()
                flush(first, second)
                first, second = [], []
        check()
        if first:
            flush(first, second)
        if total == 0:
            raise CorpusError(f"{path}: no sentence pairs (one pair a line: s1<TAB>s2 or gold<TAB>s1<TAB>s2)")
    finally:
        (fh.detach if str(path) == "-" else fh.close)()  # detached, sys.stdin stays open
        if out is not None:
            out.flush()
    if invalid:
        warn(invalid_utf8_warning(name, invalid))
    return total, unscored
