"""The text files of a sentence index: where each row's line starts, and the copies of compressed texts.

``offsets.npy`` holds one int64 per row of the embeddings: the byte offset where the row's
line starts in its text file. A plain text file is not copied: its lines are read from it
at query time (``index.json`` keeps its size and modification time; a changed file is
refused). A compressed file (gzip, bzip2, xz) cannot be entered in the middle, so its text
is decompressed once into ``text-NNN.txt`` inside the index (about the size of the plain
text; the vectors take far more), with its blake2b digest, and the offsets point there.

Lines are split as ``embed`` splits them (``\\n``, ``\\r\\n`` or a lone ``\\r``), so row ``r``
is line ``r + 1`` and the line count of each text file is checked against its rows.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numpy as np

from ...errors import CorpusError

COPY_NAME = re.compile(r"text-\d{3,}\.txt")  # a compressed text decompressed into the index
COPY_DIGEST_LIMIT = 64 << 20  # copies of compressed texts up to this size are checked whole on open


def _line_starts(stream, copy_to=None, block: int = 1 << 24) -> tuple[np.ndarray, int]:
    """Byte offsets of the starts of the lines of a binary stream, split as universal newlines
    split them (``\\n``, ``\\r\\n``, lone ``\\r``); and the stream's length. ``copy_to``: a binary
    file the bytes are also written to."""
    starts = [np.zeros(1, dtype=np.int64)]
    pos = 0
    pending_cr = False  # the previous block ended with \r: a line ends there unless \n follows
    while True:
        data = stream.read(block)
        if not data:
            break
        if copy_to is not None:
            copy_to.write(data)
        buf = np.frombuffer(data, dtype=np.uint8)
        nl = buf == 10
        cr = buf == 13
        ends = nl.copy()
        # a \r ends a line unless a \n follows it (then the \n ends it)
        cr_alone = cr.copy()
        cr_alone[:-1] &= ~nl[1:]
        cr_alone[-1] = False  # decided with the next block
        ends |= cr_alone
        if pending_cr and not nl[0]:
            starts.append(np.array([pos], dtype=np.int64))
        pending_cr = bool(cr[-1])
        starts.append(np.flatnonzero(ends).astype(np.int64) + pos + 1)
        pos += len(data)
    if pending_cr:
        starts.append(np.array([pos], dtype=np.int64))
    out = np.concatenate(starts)
    if out[-1] == pos:  # a line starting at the very end is no line
        out = out[:-1]
    return out, pos


def _not_regular(path: Path) -> str | None:
    """What ``path`` is when it is not a regular file (after links): "no such file", "is a
    directory", "not a regular file" (a FIFO or a device, which would block or never end)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if not stat.S_ISREG(mode):
        return "not a regular file (a pipe, a device or a socket)"
    return None


class _Digesting:
    """A binary file that ``write`` writes to, keeping the blake2b digest of what was written."""

    def __init__(self, fh):
        self.fh = fh
        self.hash = hashlib.blake2b(digest_size=32)

    def write(self, data) -> int:
        self.hash.update(data)
        return self.fh.write(data)


def _file_digest(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _index_text(files, out_dir: Path, progress=None) -> tuple[np.ndarray, list[dict]]:
    """Offsets of every row's line, and the records of the text files (copied when compressed).

    Read through :func:`scbow.text.reader.open_bytes`, the tool's one reader of text: every read
    or decompression failure is one CorpusError naming the file.
    """
    from ...text.reader import open_bytes

    all_starts = []
    records = []
    for i, (name, first_row, rows) in enumerate(files):
        path = Path(name)
        what = _not_regular(path)
        if what is not None:
            raise CorpusError(f"{path}: {what}, expected the text file the embeddings came from")
        if progress is not None:
            progress(f"reading the lines of {path}")
        try:
            st = path.stat()
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None
        with open_bytes(path) as fh:
            if fh.kind is None:
                starts, size = _line_starts(fh)
                record = {"file": str(path.resolve()), "text": str(path.resolve()), "bytes": size,
                          "mtime_ns": st.st_mtime_ns}
            else:
                copy = f"text-{i:03d}.txt"
                with open(out_dir / copy, "wb") as dst:
                    digesting = _Digesting(dst)
                    starts, size = _line_starts(fh, digesting)
                record = {"file": str(path.resolve()), "text": copy, "bytes": size, "compressed_bytes": st.st_size,
                          "mtime_ns": st.st_mtime_ns, "blake2b": digesting.hash.hexdigest()}
        if len(starts) != rows:
            raise CorpusError(f"{path}: has {len(starts):,} lines but the embeddings have {rows:,} rows for it; "
                              "give the very file that was embedded")
        records.append({**record, "first_row": first_row, "rows": rows})
        all_starts.append(starts)
    return (np.concatenate(all_starts) if all_starts else np.zeros(0, np.int64)), records
