"""word2vec text and binary files, and GloVe text: read and written here.

word2vec: a ``count dim`` line, then ``word v1 ... vd`` lines in text, or ``word`` and d little-endian
float32 in binary. GloVe text has no first line. :func:`read_word2vec` tells them apart, compressed too.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..config import INT_MAX
from ..errors import CorpusError, ModelError
from ..files import atomic_file
from ..outputs import check_output_file
from ..reading import os_error_text
from ..text.reader import open_bytes
from ..text.vocab import Vocab

BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark, as editors on Windows write it
MAX_DIM = INT_MAX["dim"]  # the most dimensions a file may claim: the trainer's own bound on --dim
# longer than any first line of a vectors file (a longer one is judged with the whole file)
FIRST_LINE_LIMIT = 64 * MAX_DIM
PARTS = ("all", "sentence", "word")


def read_word2vec(path: Path) -> tuple[Vocab, np.ndarray, str]:
    """``(vocab, vectors, format)`` of a word2vec text or binary file or GloVe text (compressed too), as
    gensim reads them; ``format``: ``word2vec-text``, ``word2vec-binary`` or ``glove-text``. ModelError
    naming the file; ``word number`` lines (a word-count list) are refused."""
    try:
        # a first line that is no header nor vector is refused before the rest (a corpus: gigabytes) is read
        with open_bytes(path) as fh:
            first = fh.readline(FIRST_LINE_LIMIT)
        if first.endswith(b"\n") or len(first) < FIRST_LINE_LIMIT:  # the whole line (a longer one: read on)
            _first_line(path, first.removeprefix(BOM).rstrip(b"\n"))
        with open_bytes(path) as fh:
            data = fh.read().removeprefix(BOM)
    except CorpusError as exc:  # names the file: missing, unreadable, damaged compressed data
        raise ModelError(f"cannot read vectors: {exc}") from None
    header, _, body = data.partition(b"\n")
    kind, n, dim = _first_line(path, header)
    body = data if kind == "glove" else body
    binary = kind != "glove" and _looks_binary(body, dim)
    lines = [] if binary else [line for line in body.split(b"\n") if line.strip()]  # a blank line holds no vector
    n = len(lines) if kind == "glove" else n
    # every vector takes at least 2 bytes a value in text ("0 ") and 4 in binary
    if n * (2 * dim + 1) > len(body) + n:
        raise ModelError(f"{path}: truncated word2vec file (header says {n} vectors of {dim} dims, "
                         f"the file holds {len(body):,} bytes)")
    words: list[str] = []
    vectors = np.empty((n, dim), dtype=np.float32)
    pos = 0
    try:
        for i in range(n):
            if binary:
                while body[pos : pos + 1] in (b"\n", b" "):
                    pos += 1
                space = body.index(b" ", pos)
                word, pos = body[pos:space].decode("utf-8", errors="replace"), space + 1 + 4 * dim
                if pos > len(body):
                    raise ValueError
                vectors[i] = np.frombuffer(body, dtype="<f4", count=dim, offset=space + 1)
            else:
                parts = lines[i].decode("utf-8").rstrip().split(" ")
                if len(parts) != dim + 1:
                    raise ValueError
                with np.errstate(over="ignore"):  # 1e39 becomes inf here, and is refused with the other damage
                    vectors[i] = np.array(parts[1:], dtype=np.float32)
                word = parts[0]
            words.append(word)
    except (ValueError, UnicodeDecodeError, IndexError):
        raise ModelError(f"{path}: truncated or malformed word2vec file (at vector {len(words) + 1} of {n})") from None
    try:
        vocab = Vocab(words, np.zeros(n, dtype=np.int64))
    except ValueError as exc:
        raise ModelError(f"{path}: {exc}") from None
    return vocab, vectors, "glove-text" if kind == "glove" else "word2vec-" + ("binary" if binary else "text")


def _shown(data: bytes, n: int) -> str:
    """The first ``n`` characters of a file's bytes for an error message: text, quoted, not a bytes repr."""
    return repr(data[: 4 * n].decode("utf-8", "replace")[:n])


def _first_line(path: Path, header: bytes) -> tuple[str, int, int]:
    """``("word2vec", count, dim)`` or ``("glove", -1, dim)`` by a vectors file's first line; else ModelError."""
    fields = header.split()
    if len(fields) == 2 and all(f.lstrip(b"+-").isdigit() and len(f) < 4000 for f in fields):
        n, dim = int(fields[0]), int(fields[1])
        if n < 0 or not 1 <= dim <= MAX_DIM:
            raise ModelError(f"{path}: bad word2vec header {_shown(header, 80)} (dimensions must be 1 to {MAX_DIM:,})")
        return "word2vec", n, dim
    if len(fields) == 2 and _all_numbers(fields[1:]):
        # a word-count list, not 1-dimensional GloVe (which has at least 2; a word2vec header allows 1)
        raise ModelError(f"{path}: not a vectors file: its first line {_shown(header, 60)} is a word and one number, "
                         "as in a word-count list or a model's vocab.txt (GloVe vectors have at least 2 values a "
                         "line; 1-dimensional vectors need word2vec's 'count 1' first line)")
    if len(fields) > 2 and _all_numbers(fields[1:]):  # (too many dimensions: refused with the rows, check_vectors)
        return "glove", -1, len(fields) - 1
    raise ModelError(f"{path}: not a vectors file: a word2vec file starts with a 'count dim' line and GloVe "
                     f"text with 'word v1 v2 ...'; the first line is {_shown(header, 60)}")


def _all_numbers(fields) -> bool:
    try:
        for f in fields:
            float(f)
    except ValueError:
        return False
    return True


def _looks_binary(body: bytes, dim: int) -> bool:
    """Text when the first vector reads as a text line, else binary when the bytes after the first word
    are not printable ASCII (binary floats seldom are)."""
    first = body[: 4096 + 64 * dim].lstrip(b"\n\r")
    try:
        parts = first.split(b"\n", 1)[0].decode("utf-8").rstrip().split(" ")
        if len(parts) == dim + 1 and _all_numbers(parts[1:]):
            return False
    except UnicodeDecodeError:
        pass
    space = first.find(b" ")
    sample = first[space + 1 : space + 1 + 4 * min(dim, 8)] if space >= 0 else b""
    return any(b < 9 or (13 < b < 32) or b > 126 for b in sample)


def part_columns(model, part: str | None = None) -> tuple[str, np.ndarray]:
    """``(part, rows)``: float32 rows of ``model``, all columns or one ``part``'s; the default ``"word"``
    for a model with a word part (what word similarity lives on), else ``"all"``. ModelError for a
    part the model lacks."""
    part = ("word" if "word" in model.parts else "all") if part is None else part
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    vectors = np.asarray(model.vectors, dtype=np.float32)
    if part == "all":
        return part, vectors
    if "word" not in model.parts:
        raise ModelError(f"the model has no word part (it was trained with --word-passes 0, or is not ours); "
                         f"--part {part} needs one")
    lo, hi = model.parts[part]
    return part, vectors[:, lo:hi]


def export_word2vec(model, path: os.PathLike, binary: bool = False, part: str | None = None) -> Path:
    """Write ``model``'s :func:`part_columns` in word2vec text or binary format, atomically; returns the path."""
    path = check_output_file(path, "vectors.txt")
    vectors = part_columns(model, part)[1]
    try:
        with atomic_file(path) as tmp, open(tmp, "wb") as fh:
            fh.write(f"{len(model.vocab)} {vectors.shape[1]}\n".encode())
            for word, vec in zip(model.vocab.words, vectors):
                if binary:
                    fh.write(word.encode("utf-8") + b" " + vec.astype("<f4").tobytes() + b"\n")
                else:
                    fh.write((word + " " + " ".join(f"{x:.9g}" for x in vec.tolist()) + "\n").encode("utf-8"))
    except OSError as exc:
        raise ModelError(f"cannot write {path}: {os_error_text(exc)}") from None
    return path
