"""The one way the tool opens text it did not write: plain, gzip, bzip2 or xz, by its first bytes.

Every reader of a corpus, a sentence file, a pairs file, a vectors file or an index's text
goes through :func:`open_bytes` or :func:`open_text`, so a damaged or truncated
compressed file gives the same one line everywhere, naming the file::

    PATH: damaged or truncated gzip file (Compressed file ended before the end-of-stream marker was reached)

Decompression fails in many ways (``EOFError`` for a truncated stream, ``zlib.error`` for
corrupt deflate data, ``lzma.LZMAError``, ``OSError`` from gzip's and bz2's checks): they
are all turned into :class:`scbow.errors.CorpusError` here, where the read happens, so no
caller has to list them. A plain file's read error (``EIO``, a directory) is the usual
``PATH: cannot read: why``.

Light (standard library only), so the CLI can use it before numpy is imported.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import sys
import zlib
from pathlib import Path

from ..errors import CorpusError

# first bytes -> the format's name
MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
# what a directory given as a corpus or a sentence file is searched for
TEXT_SUFFIXES = (".txt", ".text", ".tok") + COMPRESSED_SUFFIXES
# every exception a decompressor raises on damaged data
DECOMPRESS_ERRORS = (EOFError, zlib.error, lzma.LZMAError, OSError)


def compression(path: os.PathLike) -> str | None:
    """``"gzip"``, ``"bzip2"`` or ``"xz"`` by the file's first bytes; None for a plain file.

    Raises CorpusError when the file cannot be opened.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return next((name for magic, name in MAGIC if head.startswith(magic)), None)


def read_error(name, exc: BaseException, kind: str | None) -> CorpusError:
    """The one-line error for a failure while reading ``name`` (``kind``: its compression)."""
    if isinstance(exc, CorpusError):
        return exc
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if len(detail) > 100:
        detail = detail[:97] + "..."
    if kind is not None and not (isinstance(exc, OSError) and exc.errno is not None):
        return CorpusError(f"{name}: damaged or truncated {kind} file ({detail})")
    if isinstance(exc, OSError):
        return CorpusError(f"{name}: cannot read: {exc.strerror or detail}")
    return CorpusError(f"{name}: cannot read: {detail}")


class _Checked(io.BufferedIOBase):
    """A readable binary stream over a file (decompressed), whose read errors are CorpusError.

    ``position()`` is the bytes of the file on disk read so far (compressed bytes for a
    compressed file: what a progress bar over file sizes wants).
    """

    def __init__(self, path: Path, name: str):
        self.name = name
        self._disk = open(path, "rb")
        try:
            head = self._disk.read(6)
            self._disk.seek(0)
            self.kind = next((k for magic, k in MAGIC if head.startswith(magic)), None)
            if self.kind == "gzip":
                self._stream = gzip.GzipFile(fileobj=self._disk, mode="rb")
            elif self.kind == "bzip2":
                self._stream = bz2.BZ2File(self._disk, "rb")
            elif self.kind == "xz":
                self._stream = lzma.LZMAFile(self._disk, "rb")
            else:
                self._stream = self._disk
        except BaseException:
            self._disk.close()
            raise

    def _call(self, method, *args):
        try:
            return method(*args)
        except DECOMPRESS_ERRORS as exc:
            raise read_error(self.name, exc, self.kind) from None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        return self._call(self._stream.read, -1 if size is None else size)

    def read1(self, size: int = -1) -> bytes:
        return self._call(self._stream.read1, size)

    def readinto(self, buffer) -> int:
        return self._call(self._stream.readinto, buffer)

    def readline(self, size: int | None = -1) -> bytes:
        return self._call(self._stream.readline, -1 if size is None else size)

    def position(self) -> int:
        try:
            return self._disk.tell()
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._stream is not self._disk:
                self._stream.close()
        finally:
            self._disk.close()
            super().close()


def open_bytes(path: os.PathLike, name: str | None = None) -> _Checked:
    """Open a plain, gzip, bzip2 or xz file for reading its (decompressed) bytes.

    Opening and every later read raise CorpusError naming the file (``name``, default
    ``path``) on any failure: missing, unreadable, a directory, damaged or truncated
    compressed data.
    """
    path = Path(path)
    name = str(path) if name is None else name
    check_regular(path, name)
    try:
        stream = _Checked(path, name)
    except FileNotFoundError:
        raise CorpusError(f"{name}: no such file") from None
    except OSError as exc:
        raise CorpusError(f"{name}: cannot read: {exc.strerror or exc}") from None
    named = next((k for suffix, k in _SUFFIX_KIND if path.name.lower().endswith(suffix)), None)
    if named is not None and stream.kind is None:
        stream.close()
        raise CorpusError(f"{name}: named like a {named} file but does not start like one (empty, damaged, or "
                          "plain text under a compressed name: rename it if it is plain text)")
    return stream


_SUFFIX_KIND = ((".gz", "gzip"), (".bz2", "bzip2"), (".xz", "xz"))


def check_regular(path: os.PathLike, name: str | None = None, error: type[Exception] = CorpusError,
                  expected: str = "a file", missing: str = "no such file",
                  why: str = "a pipe or a device cannot be read as a file here") -> os.stat_result:
    """``error`` unless ``path`` is a regular file (after links): not missing, not a directory,
    not a FIFO, a device such as /dev/zero, or a socket, which would block or never end.
    Returns its stat (size and time, for callers that watch it for changes). The messages
    name ``expected`` (for a directory), ``missing`` and ``why`` (for the rest)."""
    import stat

    name = str(path) if name is None else name
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{name}: {missing}") from None
    except OSError as exc:
        raise error(f"{name}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{name}: is a directory, expected {expected}")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{name}: not a regular file ({why})")
    return st


class TextFile(io.TextIOWrapper):
    """UTF-8 text over :func:`open_bytes`; ``position()`` is the file's bytes on disk read so far."""

    def position(self) -> int:
        return self.buffer.position()


def open_text(path: os.PathLike, name: str | None = None) -> TextFile:
    """Open a plain, gzip, bzip2 or xz file as UTF-8 text, as every command reads text.

    Universal newlines; invalid bytes become U+FFFD (the callers count or refuse them with
    ``scbow.training.corpus.check_text``); a byte order mark at the start is not text
    (``utf-8-sig``), as some editors write one. Errors as :func:`open_bytes`.
    """
    return TextFile(open_bytes(path, name), encoding="utf-8-sig", errors="replace", newline=None)


def read_all_bytes(path: os.PathLike, name: str | None = None) -> bytes:
    """The whole (decompressed) content of a file; CorpusError as :func:`open_bytes`."""
    with open_bytes(path, name) as fh:
        return fh.read()


def read_small_text(path: os.PathLike, error, what: str) -> list[str]:
    """The lines of a user's small UTF-8 text file (STS pairs, word pairs), read whole through the one
    reader: a byte-order mark skipped, universal newlines; a directory, damage or bytes that are not
    UTF-8 raised as ``error`` (an exception type) naming the file. ``what``: what the file should be."""
    if Path(path).is_dir():
        raise error(f"{path}: is a directory, expected {what}")
    try:
        data = read_all_bytes(path)
    except CorpusError as exc:
        raise error(str(exc)) from None
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark, as some editors write, is skipped
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text") from None
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # universal newlines, as open() reads


def _has_text_suffix(path: Path) -> bool:
    return path.name.lower().endswith(TEXT_SUFFIXES)


def _same_file_key(path: Path):
    """What makes two paths one file: its device and inode (a symbolic or hard link is the file it
    names), or its resolved path where it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return st.st_dev, st.st_ino


def each_once(files: list[Path]) -> list[Path]:
    """``files`` without a file reached again (named twice, or through a symbolic or hard link:
    :func:`_same_file_key`), each where it comes first; a note on stderr names what was left out."""
    first: dict = {}  # a file's key -> the path it came first as
    repeats = []
    for f in files:
        key = _same_file_key(f)
        if key in first:
            repeats.append((f, first[key]))
        else:
            first[key] = f
    if repeats:
        named = "; ".join(f"{f} named twice" if str(f) == str(same) else f"{f} is {same}" for f, same in repeats[:3])
        more = f" (and {len(repeats) - 3:,} more)" if len(repeats) > 3 else ""
        print(f"note: each file is read once: {named}{more}", file=sys.stderr, flush=True)
    return list(first.values())


def expand(paths, recursive: bool = False, accept=None, looked_for: str | None = None) -> list[Path]:
    """Files and directories -> the files they stand for, in order.

    A directory stands for the files in it whose names ``accept`` (default: ending in one
    of :data:`TEXT_SUFFIXES`, any case), sorted; with ``recursive``, the files below it too,
    hidden names, links to folders and the tool's own outputs (a model, a checkpoint,
    shards, an index, a cache entry: ``scbow.outputs.kind_of``) skipped; one of those given
    itself is refused. A file stands for itself
    whatever its name. A file reached twice (named twice, or again through a symbolic or
    hard link: :func:`_same_file_key`) is read once, where it comes first, with a note.
    CorpusError for a path that does not exist, is not a regular file, cannot be read, or
    a directory with no such file (the message says what was ``looked_for``).
    """
    accept = accept or _has_text_suffix
    looked_for = looked_for or ", ".join(TEXT_SUFFIXES)
    files: list[Path] = []
    from ..outputs import kind_of

    for p in map(Path, paths):
        if p.is_dir():
            what = kind_of(p)
            if what is not None:  # the tool's own output is never read as text
                raise CorpusError(f"{p}: is {what}, not text (give the text files, or the folder holding them)")
            if recursive:
                seen_files = []
                for root, dirs, names in os.walk(p):
                    # hidden folders, and the tool's own outputs (models, shards, indexes, caches), are skipped
                    dirs[:] = sorted(d for d in dirs if not d.startswith(".") and kind_of(Path(root) / d) is None)
                    seen_files.extend(Path(root) / n for n in sorted(names) if not n.startswith("."))
            else:
                seen_files = sorted(f for f in p.iterdir() if not f.name.startswith("."))
            found = [f for f in seen_files if accept(f) and f.is_file()]
            if not found:
                raise CorpusError(f"{p}: directory has no text files (looked for {looked_for})")
            left = [f for f in seen_files if f.is_file() and not accept(f)]
            if left:  # said, so that a file the user meant to give is not missed in silence
                named = ", ".join(str(f.relative_to(p)) for f in left[:3]) + (", ..." if len(left) > 3 else "")
                print(f"note: {p}: {len(left)} file{'s' if len(left) != 1 else ''} left out ({named}): "
                      f"only names ending in {looked_for} are read", file=sys.stderr, flush=True)
            files.extend(found)
        elif p.is_file():
            files.append(p)
        elif p.exists():
            raise CorpusError(f"{p}: not a regular file")
        else:
            raise CorpusError(f"{p}: no such file or directory")
    files = each_once(files)
    for f in files:
        if not os.access(f, os.R_OK):
            raise CorpusError(f"{f}: permission denied")
    return files


def check_text(name, block: str, at_start: bool) -> int:
    """The one rule for text that is not text: raise CorpusError, or count the damaged lines.

    ``block`` is whole lines of a file read as UTF-8 with bad bytes replaced by U+FFFD. A
    NUL anywhere means binary data; so does a start of a file (``at_start``) in which most
    lines hold U+FFFD. Returns the lines holding U+FFFD (kept, and counted for a warning).
    """
    if "\x00" in block:
        head = block[:400].lstrip("\ufffd")  # a UTF-16 or UTF-32 byte order mark is not UTF-8
        rest = head.replace("\x00", "")
        # text in UTF-16 or UTF-32: a NUL beside every Latin letter, and the rest readable
        if head.count("\x00") >= 0.3 * len(head) and sum(c.isprintable() or c.isspace() for c in rest) >= 0.95 * len(rest):
            raise CorpusError(f"{name}: looks like UTF-16 or UTF-32 text (NUL bytes between the letters); "
                              f"convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)")
        raise CorpusError(f"{name}: contains NUL bytes; this looks like binary data, not text")
    if "\ufffd" not in block:
        return 0
    lines = block.removesuffix("\n").split("\n")
    bad = sum("\ufffd" in line for line in lines)
    if at_start:
        refuse_mostly_invalid(name, bad, len(lines))
    return bad


def invalid_utf8_warning(name: str, bad: int) -> str:
    """The warning for ``bad`` lines of the text ``name`` that :func:`check_text` counted."""
    return (f"warning: {bad:,} line{'' if bad == 1 else 's'} of {name} {'is' if bad == 1 else 'are'} not valid "
            "UTF-8; their bad bytes were read as U+FFFD (the replacement character)")


def refuse_mostly_invalid(name, bad: int, lines: int) -> None:
    """CorpusError when most of ``lines`` lines at the start of a file are not UTF-8."""
    if bad > 0.5 * max(lines, 1):
        raise CorpusError(f"{name}: mostly invalid UTF-8; this looks like binary data, not text")
