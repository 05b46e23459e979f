"""The one way the tool opens text it did not write: plain, gzip, bzip2 or xz, by its first bytes.

Every reader of a corpus, a sentence, pairs or vectors file or an index's text goes through
:func:`open_bytes` or :func:`open_text`, so a damaged compressed file gives one line everywhere
(``PATH: damaged or truncated gzip file (...)``): the many ways decompression fails (``EOFError``,
``zlib.error``, ``lzma.LZMAError``, ``OSError``) become :class:`scbow.errors.CorpusError` here, where
the read happens. A plain file's read error is ``PATH: cannot read: why``. Standard library only.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os
import stat
import sys
import zlib
from pathlib import Path

from ..errors import CorpusError
from ..outputs import file_identity, kind_of
from ..progress import listed
from ..reading import short_message

# each compressed format: its name, its first bytes, the suffix of a name that promises it, its opener
_FORMATS = (("gzip", b"\x1f\x8b", ".gz", gzip.open), ("bzip2", b"BZh", ".bz2", bz2.open),
            ("xz", b"\xfd7zXZ\x00", ".xz", lzma.open))
COMPRESSED_SUFFIXES = tuple(suffix for _, _, suffix, _ in _FORMATS)
# what a directory given as a corpus or a sentence file is searched for
CORPUS_SUFFIXES = (".txt", ".text", ".tok") + COMPRESSED_SUFFIXES
# every exception a decompressor raises on damaged data
DECOMPRESS_ERRORS = (EOFError, zlib.error, lzma.LZMAError, OSError)


def _format(head: bytes) -> str | None:
    """``"gzip"``, ``"bzip2"`` or ``"xz"`` by a file's first bytes, None for a plain file."""
    return next((name for name, magic, _, _ in _FORMATS if head.startswith(magic)), None)


def compression(path: os.PathLike) -> str | None:
    """:func:`_format` of the file at ``path``; CorpusError if unreadable."""
    try:
        with open(path, "rb") as fh:
            return _format(fh.read(6))
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None


class _Checked(io.BufferedIOBase):
    """A readable binary stream over a file (decompressed), whose read errors are CorpusError;
    ``position()``: the file's bytes on disk read so far (what a progress bar over file sizes wants)."""

    def __init__(self, path: Path, name: str):
        self.name = name
        self._disk = open(path, "rb")
        try:
            self.kind = _format(self._disk.read(6))
            self._disk.seek(0)
            opener = next((opener for name, _, _, opener in _FORMATS if name == self.kind), None)
            self._stream = opener(self._disk, "rb") if opener else self._disk
        except BaseException:
            self._disk.close()
            raise

    def _call(self, method, *args):
        try:
            return method(*args)
        except DECOMPRESS_ERRORS as exc:
            detail = short_message(exc, 100)
            # the decompressor's own errors are damage; an OSError with an errno is the disk's
            if self.kind is not None and not (isinstance(exc, OSError) and exc.errno is not None):
                raise CorpusError(f"{self.name}: damaged or truncated {self.kind} file ({detail})") from None
            raise CorpusError(f"{self.name}: cannot read: {getattr(exc, 'strerror', None) or detail}") from None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        return self._call(self._stream.read, -1 if size is None else size)

    def read1(self, size: int = -1) -> bytes:
        return self._call(self._stream.read1, size)

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
    """Open a plain, gzip, bzip2 or xz file for reading its (decompressed) bytes. Opening and every
    read raise CorpusError naming the file (``name``, default ``path``) on any failure."""
    path = Path(path)
    name = str(path) if name is None else name
    check_regular(path, name)
    try:
        stream = _Checked(path, name)
    except OSError as exc:  # removed, or its permissions changed, since check_regular
        raise CorpusError(f"{name}: cannot read: {exc.strerror or exc}") from None
    named = next((name for name, _, suffix, _ in _FORMATS if path.name.lower().endswith(suffix)), None)
    if named is not None and stream.kind is None:
        stream.close()
        raise CorpusError(f"{name}: named like a {named} file but does not start like one (empty, damaged, or "
                          "plain text under a compressed name: rename it if it is plain text)")
    return stream


def check_regular(path: os.PathLike, name: str | None = None, error: type[Exception] = CorpusError,
                  expected: str = "a file", missing: str = "no such file",
                  why: str = "a pipe or a device cannot be read as a file here") -> os.stat_result:
    """Its stat, or ``error`` unless ``path`` is a regular file (after links): a directory (naming ``expected``),
    missing (``missing``), or a FIFO, a device or a socket, which would block or never end (``why``)."""
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


DEFAULT_ENCODING = "utf-8"
# the suffix of an --encoding that asks for bad bytes to be read as U+FFFD instead of refused
REPLACE_SUFFIX = ":replace"


def text_codec(encoding: str = DEFAULT_ENCODING, at_start: bool = True) -> tuple[str, str]:
    """``(codec, errors)`` of an ``--encoding`` value: a text codec Python knows, strict, or followed by
    ``:replace`` for bad bytes read as U+FFFD; ValueError for another. UTF-8 skips a byte order mark
    when ``at_start`` (the bytes read start at the file's start), as some editors write one."""
    replace = encoding.lower().endswith(REPLACE_SUFFIX)
    name = encoding[: -len(REPLACE_SUFFIX)] if replace else encoding
    try:
        info = codecs.lookup(name)
    except LookupError:
        info = None
    if info is None or not info._is_text_encoding:  # rot13, base64: codecs, but not of text
        raise ValueError(f"unknown encoding {name!r} (give one Python knows: utf-8, cp1252, latin-1, ...; "
                         f"add {REPLACE_SUFFIX} to read bad bytes as U+FFFD)") from None
    codec = "utf-8" if info.name == "utf-8-sig" else info.name  # utf-8-sig is UTF-8 read so: one rule for both
    return ("utf-8-sig" if codec == "utf-8" and at_start else codec), ("replace" if replace else "strict")


def encoding_name(encoding: str) -> str:
    """One spelling of an ``--encoding`` value, however it was typed (``UTF8``, ``CP1252:REPLACE``):
    Python's codec name, with ``:replace`` where asked. ValueError as :func:`text_codec`."""
    codec, errors = text_codec(encoding, at_start=False)
    return codec + (REPLACE_SUFFIX if errors == "replace" else "")


def not_text_error(name, data: bytes, encoding: str, no_bom: bool = False) -> CorpusError:
    """The one line for bytes ``data`` of ``name`` that are not valid ``encoding``: binary data (a NUL)
    whatever the encoding, else which encoding the bytes may be (a cheap guess: they read as cp1252
    with letters of the Latin-1 range, or as UTF-8 when another encoding was given) and how to convert
    them; ``no_bom``: UTF-16 or UTF-32 whose byte order mark is missing."""
    if b"\x00" in data:
        return binary_error(name, data.decode("utf-8", "replace"))
    head = f"{name}: not valid {encoding} text"
    codec = text_codec(encoding)[0]
    if no_bom and codec in ("utf-16", "utf-32"):  # :replace reads no further: the byte order is not known
        return CorpusError(f"{head}: it does not start with a byte order mark; name its byte order: "
                           f"--encoding {codec}-le (or {codec}-be)")
    replace = f"(or --encoding {encoding}{REPLACE_SUFFIX} to read the bad bytes as U+FFFD)"
    if codec not in ("utf-8", "utf-8-sig") and _utf8_text(data):
        return CorpusError(f"{head}; it may be UTF-8: drop --encoding (UTF-8 is the default) {replace}")
    try:
        latin = data.decode("cp1252")
    except UnicodeDecodeError:
        latin = ""
    if any("\u00c0" <= c <= "\u00ff" for c in latin):
        return CorpusError(f"{head}; it may be Latin-1 (cp1252): convert it with `iconv -f cp1252 -t utf-8` "
                           f"or pass --encoding cp1252 {replace}")
    return CorpusError(f"{head}; its encoding is not known: find it (`file -i`) and pass --encoding NAME, or "
                       f"convert it to UTF-8 with iconv {replace}")


# the most characters a line is read in at once (TextFile.readline)
LINE_PIECE = 1 << 20


def _utf8_text(data: bytes) -> bool:
    """Whether ``data`` (a chunk of a file, maybe cut mid-character at either end) is UTF-8 text
    beyond ASCII."""
    start = 0
    while start < min(3, len(data)) and 0x80 <= data[start] < 0xc0:  # a character cut at the chunk's start
        start += 1
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(data[start:1 << 16], final=False)
    except UnicodeDecodeError:
        return False
    return not text.isascii()


class TextFile(io.TextIOWrapper):
    """Text over :func:`open_bytes`; ``position()`` is the file's bytes on disk read so far. Bytes that
    are not valid in its encoding (strict) raise CorpusError (:func:`not_text_error`) on the read."""

    def position(self) -> int:
        return self.buffer.position()

    def _not_text(self, exc: UnicodeError) -> CorpusError:
        """A decode error (also UTF-16's for a stream without its byte order mark) as the one line."""
        return not_text_error(self.source, getattr(exc, "object", b""), self.given_encoding, no_bom="BOM" in str(exc))

    def _checked(self, method, *args):
        try:
            return method(self, *args)
        except UnicodeError as exc:
            raise self._not_text(exc) from None

    def read(self, size=-1):
        return self._checked(io.TextIOWrapper.read, size)

    def readline(self, size=-1):
        if size is not None and size >= 0:
            return self._checked(io.TextIOWrapper.readline, size)
        # a whole line, read in pieces each checked for a NUL, so that binary data with no line end
        # (stdin from /dev/zero) is refused at once, not read into memory until it runs out
        pieces = []
        while True:
            try:
                piece = io.TextIOWrapper.readline(self, LINE_PIECE)  # called here: this runs once a line
            except UnicodeError as exc:
                raise self._not_text(exc) from None
            if "\x00" in piece:
                raise binary_error(self.source, piece)
            if len(piece) < LINE_PIECE or piece.endswith("\n"):
                return "".join([*pieces, piece]) if pieces else piece
            pieces.append(piece)

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line


def open_text(path: os.PathLike, name: str | None = None, encoding: str = DEFAULT_ENCODING) -> TextFile:
    """Open a plain, gzip, bzip2 or xz file as text in ``encoding`` (:func:`text_codec`), universal
    newlines, as every command reads text. Bad bytes are refused (:func:`not_text_error`), or with
    ``:replace`` read as U+FFFD, which the callers count (:func:`check_text`). Errors as :func:`open_bytes`.
    """
    text_codec(encoding)  # an unknown encoding is refused before the file is opened
    return text_stream(open_bytes(path, name), encoding)


def text_stream(raw, encoding: str = DEFAULT_ENCODING, name: str | None = None, at_start: bool = True) -> TextFile:
    """:func:`open_text`'s reading of an open binary stream ``raw`` (stdin's, a byte range's), named
    ``name`` (default: the stream's name) in its errors; ``at_start``: it starts at the file's start."""
    codec, errors = text_codec(encoding, at_start)
    fh = TextFile(raw, encoding=codec, errors=errors, newline=None)
    fh.given_encoding = encoding
    fh.source = getattr(raw, "name", "the input") if name is None else name
    return fh


def read_small_text(path: os.PathLike, error, what: str, encoding: str = DEFAULT_ENCODING) -> list[str]:
    """The lines of a small text file (STS pairs, word pairs), read whole as :func:`open_text` reads; a
    directory (``what``: what the file should be), damage or bad bytes raised as ``error`` naming it."""
    check_regular(path, error=error, expected=what)
    try:
        with open_text(path, encoding=encoding) as fh:
            text = fh.read()
        check_text(path, text)  # binary data in any encoding, as every reader of text refuses it
    except CorpusError as exc:
        raise error(str(exc)) from None
    return text.split("\n")


def each_once(files: list[Path]) -> list[Path]:
    """``files`` without a file reached again (named twice, or through a symbolic or hard link: the same
    device and inode, else resolved path), each where it comes first; a note on stderr names what was left out."""
    first: dict = {}  # a file's key -> the path it came first as
    repeats = []
    for f in files:
        key = file_identity(f) or os.path.realpath(f)
        if key in first:
            repeats.append((f, first[key]))
        else:
            first[key] = f
    if repeats:
        named = listed((f"{f} named twice" if str(f) == str(same) else f"{f} is {same}" for f, same in repeats), sep="; ")
        print(f"note: each file is read once: {named}", file=sys.stderr, flush=True)
    return list(first.values())


def expand(paths, recursive: bool = False, accept=None, looked_for: str | None = None) -> list[Path]:
    """Files and directories -> the files they stand for, in order, each once (:func:`each_once`).

    A directory stands for the files in it whose names ``accept`` (default: ending in one of
    :data:`CORPUS_SUFFIXES`, any case), sorted; with ``recursive``, those below it too, skipping hidden
    names, links to folders and the tool's own outputs (``scbow.outputs.kind_of``; one given itself is
    refused). A file stands for itself whatever its name. CorpusError for a path that does not exist,
    is not a regular file, cannot be read, or a directory with no such file (naming ``looked_for``).
    """
    accept = accept or (lambda f: f.name.lower().endswith(CORPUS_SUFFIXES))
    looked_for = looked_for or ", ".join(CORPUS_SUFFIXES)
    files: list[Path] = []
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
        else:
            check_regular(p, missing="no such file or directory")
            files.append(p)
    files = each_once(files)
    for f in files:
        if not os.access(f, os.R_OK):
            raise CorpusError(f"{f}: permission denied")
    return files


def check_text(name, block: str) -> int:
    """The one rule for text that is not text, on whole lines as :func:`open_text` reads them: a NUL is binary
    data, whatever the encoding (:func:`binary_error`); returns the lines holding U+FFFD (read with ``:replace``)."""
    if "\x00" in block:
        raise binary_error(name, block)
    if "\ufffd" not in block:
        return 0
    return sum("\ufffd" in line for line in block.removesuffix("\n").split("\n"))


def binary_error(name, text: str) -> CorpusError:
    """The error for ``text`` holding a NUL: UTF-16 or UTF-32 text (a NUL beside every Latin
    letter, and the rest readable), or else binary data."""
    head = text[:400].lstrip("\ufffd\ufeff\xff\xfe")  # a UTF-16 or UTF-32 byte order mark
    rest = head.replace("\x00", "")
    if rest.strip() and head.count("\x00") >= 0.3 * len(head) \
            and sum(c.isprintable() or c.isspace() for c in rest) >= 0.95 * len(rest):  # NULs alone are no text
        wide = "UTF-32" if "\x00\x00\x00" in head else "UTF-16"
        return CorpusError(f"{name}: looks like UTF-16 or UTF-32 text (NUL bytes between the letters); "
                           f"convert it to UTF-8 (iconv -f {wide} -t UTF-8)")
    return CorpusError(f"{name}: contains NUL bytes; this looks like binary data, not text")


def invalid_utf8_warning(name: str, bad: int, done: str = "read") -> str:
    """The warning for ``bad`` lines of the text ``name`` that :func:`check_text` counted (their bad
    bytes ``done`` as U+FFFD: read, or written by prepare)."""
    return (f"warning: {bad:,} line{'' if bad == 1 else 's'} of {name} {'is' if bad == 1 else 'are'} not valid "
            f"in the encoding; their bad bytes were {done} as U+FFFD (the replacement character), as asked")
