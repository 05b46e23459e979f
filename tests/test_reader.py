"""The one reader of text (scbow.text.reader): plain, gzip, bzip2 and xz; every decompression failure, a
compressed name over plain or empty bytes, a pipe or a device, each one error naming the file. One test
shows that every command reading a file the user gives reads it through this reader."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import shutil
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import assert_clean_error

from scbow.cli import main
from scbow.errors import CorpusError
from scbow.text import reader as text_reader
from scbow.text.reader import check_text, expand, open_bytes, open_text, read_small_text, text_codec, text_stream

# gold score and a pair, tab-separated: one file is a corpus, a sentence file, a pairs file and an STS file
TEXT = "".join(f"{i % 5}\tthe cat number {i} sat on the mat\tthe dog ran far away {i}\n" for i in range(6000)).encode()


def _flip(data: bytes, lo: int, hi: int) -> bytes:
    b = bytearray(data)
    for i in range(lo, min(hi, len(b))):
        b[i] ^= 0x55
    return bytes(b)


DAMAGE = {  # name -> (file suffix, damaged bytes, the format named in the error)
    "gzip-truncated": (".gz", lambda: gzip.compress(TEXT)[: len(gzip.compress(TEXT)) // 2], "gzip"),
    "gzip-corrupt-deflate": (".gz", lambda: _flip(gzip.compress(TEXT), 40, 80), "gzip"),  # a zlib.error
    "gzip-bad-crc": (".gz", lambda: _flip(gzip.compress(TEXT), len(gzip.compress(TEXT)) - 8,
                                          len(gzip.compress(TEXT)) - 6), "gzip"),
    "bzip2-truncated": (".bz2", lambda: bz2.compress(TEXT)[: len(bz2.compress(TEXT)) // 2], "bzip2"),
    "bzip2-corrupt": (".bz2", lambda: _flip(bz2.compress(TEXT), 40, 80), "bzip2"),
    "xz-truncated": (".xz", lambda: lzma.compress(TEXT)[: len(lzma.compress(TEXT)) // 2], "xz"),
    "xz-corrupt": (".xz", lambda: _flip(lzma.compress(TEXT), 60, 90), "xz"),
    "xz-header-only": (".xz", lambda: lzma.compress(TEXT)[:12], "xz"),
}


def damaged(tmp_path: Path, kind: str) -> tuple[Path, str]:
    suffix, make, fmt = DAMAGE[kind]
    (path := tmp_path / f"damaged{suffix}").write_bytes(make())
    return path, fmt


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_the_one_reader_names_every_damaged_file(tmp_path, kind):
    path, fmt = damaged(tmp_path, kind)
    with pytest.raises(CorpusError) as info:
        with open_text(path) as fh:
            for _ in fh:
                pass
    assert str(info.value).startswith(f"{path}: damaged or truncated {fmt} file (")
    with pytest.raises(CorpusError, match=f"damaged or truncated {fmt} file"):
        with open_bytes(path) as fh:
            while fh.read(1 << 12):
                pass


def test_the_one_reader_reads_what_it_should_and_refuses_a_device(tmp_path):
    plain = tmp_path / "a.txt"
    plain.write_bytes(b"\xef\xbb\xbfone\r\ntwo\rthree\n")  # a byte order mark, three kinds of line end
    for path, data in [(plain, plain.read_bytes()), (tmp_path / "a.gz", gzip.compress(plain.read_bytes())),
                       (tmp_path / "a.bz2", bz2.compress(plain.read_bytes())),
                       (tmp_path / "a.xz", lzma.compress(plain.read_bytes())),
                       (tmp_path / "looks-plain.txt", gzip.compress(plain.read_bytes()))]:  # told by content, not name
        path.write_bytes(data)
        with open_text(path) as fh:
            assert fh.read().split("\n") == ["one", "two", "three", ""], path
        with open_bytes(path) as fh:
            assert fh.read() == plain.read_bytes()
    for bad, fragment in [(tmp_path / "nope.txt", "no such file"), (tmp_path, "is a directory")]:
        with pytest.raises(CorpusError, match=fragment):
            open_text(bad)
    path = tmp_path / "input.txt"
    path.symlink_to("/dev/zero")
    with _Alarm():
        for reader in (open_text, open_bytes):
            with pytest.raises(CorpusError, match=f"{path}: not a regular file"):
                reader(path)


@contextmanager
def _Alarm(seconds: int = 20):
    """Fail instead of hanging: SIGALRM raises in the main thread (a blocked open() of a FIFO or an endless
    read of /dev/zero is interrupted by it)."""

    def ring(signum, frame):
        raise TimeoutError("the command blocked on its input")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def hashing_copy(model: Path, tmp: Path) -> Path:
    """A copy of ``model`` whose rule hashes unknown words (--add-words is for such models)."""
    import json

    copy = tmp.parent / f"{tmp.name}-hashing-model"  # beside tmp: the test checks what is left in tmp
    if not copy.exists():
        shutil.copytree(model, copy)
        saved = json.loads((copy / "config.json").read_text(encoding="utf-8"))
        saved["config"].update(unknown="hash", unknown_scale=1.0)
        (copy / "config.json").write_text(json.dumps(saved), encoding="utf-8")
    return copy


def _every_text_reader(model: Path, corpus: Path, text: Path, tmp: Path) -> dict:
    """Each command that reads a text file the user gives, reading ``text``."""
    train = ["--dim", "8", "--min-count", "1", "--threads", "1", "-q", "--no-cache"]
    return {
        "train": ["train", text, "-o", tmp / "out-model", *train],
        "train --eval-dev": ["train", corpus, "-o", tmp / "out-model", *train, "--eval-every", "100", "--eval-dev", text],
        "embed": ["embed", "-m", model, text, "-o", tmp / "out.npy", "-q"],
        "neighbors --in": ["neighbors", "-m", model, "--sentence", "the cat", "--in", text],
        "similarity --pairs": ["similarity", "-m", model, "--pairs", text],
        "evaluate": ["evaluate", "-m", model, text],
        "prepare": ["prepare", text, "-o", tmp / "prepared.txt", "--segmenter", "lines", "-q"],
        "export --add-words": ["export", "-m", hashing_copy(model, tmp), "--format", "model2vec", "-o", tmp / "exported",
                               "--add-words", text],
        "vectors file": ["similarity", "-m", text, "the cat", "the dog"],
    }


@pytest.mark.parametrize("kind", ["damaged", "fifo", "binary"])
def test_every_command_reads_through_the_one_reader(tmp_path, runner, healthy, kind):
    """One damaged file, one pipe and one binary file, through every command: each gives the reader's
    line and writes nothing."""
    model, corpus = healthy
    if kind == "fifo":
        path, fragment = tmp_path / "input.txt", "not a regular file"
        os.mkfifo(path)
    elif kind == "binary":  # a model's vectors.npy given as text
        path = Path(shutil.copy(model / "vectors.npy", tmp_path / "input.txt"))
        fragment = f"{path}: contains NUL bytes; this looks like binary data, not text"
    else:
        path, fmt = damaged(tmp_path, "gzip-truncated")
        fragment = f"{path}: damaged or truncated {fmt} file"
    for name, args in _every_text_reader(model, corpus, path, tmp_path).items():
        if kind == "fifo" and name == "vectors file":
            continue  # -m names a model: a pipe there is no model (test_formats)
        if kind == "binary" and name in ("train --eval-dev", "evaluate", "vectors file"):
            continue  # an STS file is strict UTF-8 (test_evaluate); a vectors file is a model (test_formats)
        with _Alarm():
            result = runner.invoke(main, [str(a) for a in args])
        # a vectors file is judged by its first line, read whole before the damage (test_formats)
        assert_clean_error(result, "not a vectors file" if kind == "damaged" and name == "vectors file" else fragment)
        assert "unexpected" not in result.output and result.stdout == "", (name, result.output)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != path.name]
    assert leftovers == [], leftovers  # nothing half written


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_empty_or_plain_files_under_a_compressed_name_are_named(tmp_path, suffix):
    for content in (b"", b"the cat sat\tthe dog ran\n"):
        path = tmp_path / f"input.txt{suffix}"
        path.write_bytes(content)
        for reader in (open_text, open_bytes):
            with pytest.raises(CorpusError, match=f"{path}: named like a .* does not start like one"):
                reader(path)


def test_the_tools_own_outputs_are_not_read_as_text(tmp_path, good_model):
    """One given is refused (train, prepare); one inside a folder read recursively (prepare) is skipped."""
    folder, shards, index = tmp_path / "in", tmp_path / "in" / "shards", tmp_path / "in" / "idx"
    shards.mkdir(parents=True)
    index.mkdir()
    (folder / "a.txt").write_text("One sentence here.\n")
    shutil.copytree(good_model, folder / "model")  # holds vocab.txt
    (shards / "shard-000000.missing.txt").write_text("# lines\n1\n2\n")
    (shards / "shard-000000.json").write_text("{}")
    (shards / "manifest.json").write_text("{}")
    (index / "index.json").write_text("{}")
    (index / "vectors.faiss").write_bytes(b"x")
    (index / "text-000.txt").write_text("the cat sat\n" * 50)
    assert expand([folder], recursive=True) == [folder / "a.txt"]
    for path, what in ((folder / "model", "a model directory"), (shards, "a directory of embedding shards"),
                       (index, "a sentence index")):
        with pytest.raises(CorpusError, match=f"{path}: is {what}, not text"):
            expand([path])


def test_a_file_reached_twice_is_read_once_with_a_note_by_train_and_prepare_alike(tmp_path, capsys):
    from scbow.text.prepare import find_inputs

    folder = tmp_path / "d"
    folder.mkdir()
    a, c, hard = folder / "a.txt", tmp_path / "c.txt", tmp_path / "h.txt"
    a.write_text("One sentence here.\n")
    c.write_text("Another one.\n")
    (folder / "b.txt").symlink_to("a.txt")  # reached again through a link in the folder
    os.link(c, hard)  # and through a second name
    for inputs in (expand, lambda paths: [f for f, _ in find_inputs(paths)]):
        assert inputs([c, folder, c, hard]) == [c, a]
        err = capsys.readouterr().err
        assert f"{folder / 'b.txt'} is {a}; {c} named twice; {hard} is {c}" in err and err.count("\n") == 1
    assert expand([c, tmp_path / ".." / tmp_path.name / "c.txt"]) == [c]  # another spelling of it
    assert expand([a, c]) == [a, c] and capsys.readouterr().err.count("read once") == 1


FRENCH = [f"Le café {i} était fermé, déjà à l'hôtel." for i in range(300)]
LATIN1 = "PATH: not valid utf-8 text; it may be Latin-1 (cp1252): convert it with `iconv -f cp1252 -t utf-8` or pass " \
         "--encoding cp1252 (or --encoding utf-8:replace to read the bad bytes as U+FFFD)"
NO_BOM = ": it does not start with a byte order mark; name its byte order: --encoding utf-16-le (or utf-16-be)"
UTF8 = "; it may be UTF-8: drop --encoding (UTF-8 is the default)"


def _verdict(path, encoding="utf-8"):
    try:
        with open_text(path, encoding=encoding) as fh:
            return fh.read()
    except CorpusError as exc:
        return str(exc).replace(str(path), "PATH")


@pytest.mark.parametrize("text, codec, encoding, verdict", [
    (" ".join(FRENCH), "cp1252", "utf-8", LATIN1),  # one line or many: one verdict
    ("\n".join(FRENCH), "cp1252", "utf-8", LATIN1),
    ("\n".join(FRENCH), "cp1252", "ascii", "PATH: not valid ascii text; it may be Latin-1 (cp1252)"),  # not UTF-8
    ("\n".join(FRENCH), "utf-8", "ascii", "PATH: not valid ascii text" + UTF8),  # --encoding is what is wrong
    ("\n".join(FRENCH), "utf-8", "shift_jis", "PATH: not valid shift_jis text" + UTF8),
    ("plain text\n", "ascii", "utf-16", "PATH: not valid utf-16 text"),
    # the byte order is what is missing (:replace cannot read on without it): the message names the codecs that say it
    ("the man walked\n", "utf-16-le", "utf-16", "PATH: not valid utf-16 text" + NO_BOM),
    ("the man walked\n", "utf-16-le", "utf-16:replace", "PATH: not valid utf-16:replace text" + NO_BOM),
])
def test_text_not_valid_in_its_encoding_gets_a_verdict_naming_what_it_may_be(tmp_path, text, codec, encoding, verdict):
    (path := tmp_path / "a.txt").write_bytes(text.encode(codec))
    assert _verdict(path, encoding).startswith(verdict)
    if codec != "ascii":  # read in its own encoding, it is text
        assert _verdict(path, codec) == text
    if not encoding.startswith("utf-16"):  # the small files read whole (STS, word pairs) get the same verdict
        with pytest.raises(ValueError, match="^" + re.escape(verdict.replace("PATH", str(path)))):
            read_small_text(path, ValueError, "pairs", encoding=encoding)


def test_bad_bytes_become_u_fffd_only_when_asked(tmp_path):
    (path := tmp_path / "a.txt").write_bytes("\n".join(FRENCH).encode("cp1252") + b"\n")
    text = _verdict(path, "utf-8:replace")
    assert text.splitlines()[0] == "Le caf\ufffd 0 \ufffdtait ferm\ufffd, d\ufffdj\ufffd \ufffd l'h\ufffdtel."
    assert check_text(path, text) == 300 and _verdict(path, "latin-1") == "\n".join(FRENCH) + "\n"
    assert text_codec("UTF-8") == ("utf-8-sig", "strict") and text_codec("cp1252:replace") == ("cp1252", "replace")
    # utf-8-sig is UTF-8 as it is read anyway: a mark skipped at the file's start only (a cluster's blocks start elsewhere)
    assert text_codec("utf-8-sig") == ("utf-8-sig", "strict") and text_codec("UTF-8-SIG", at_start=False) == ("utf-8", "strict")
    for name in ("klingon", "rot13", "base64"):  # the last two are codecs, but not of text
        with pytest.raises(ValueError, match=f"unknown encoding '{name}'"):
            text_codec(name)


class _Zeros(io.RawIOBase):
    """/dev/zero as a pipe: NUL bytes with no end and no line end."""

    def readable(self):
        return True

    def readinto(self, buffer):
        buffer[:] = bytes(len(buffer))
        return len(buffer)


def test_an_endless_binary_stream_is_refused_at_once_not_read_whole():
    """A line is read in pieces, each checked: `embed - < /dev/zero` is refused, not read until memory runs out."""
    for read in (lambda fh: fh.readline(), lambda fh: next(fh), lambda fh: fh.readlines(1000), list):
        fh = text_stream(io.BufferedReader(_Zeros()), name="<stdin>")
        with pytest.raises(CorpusError, match="<stdin>: contains NUL bytes; this looks like binary data"):
            read(fh)


def test_lines_longer_than_a_piece_are_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(text_reader, "LINE_PIECE", 7)
    (path := tmp_path / "a.txt").write_text("a long first line\nshort\n\nexactly\nlast line, no end")
    with open_text(path) as fh:
        assert list(fh) == ["a long first line\n", "short\n", "\n", "exactly\n", "last line, no end"]


ELF = b"\x7fELF\x02\x01\x01\x00\x00\x00\xe9\xff\x00\x00" * 50


@pytest.mark.parametrize("data, verdict", [
    *(("the man walked\nand a dog\n".encode(e), "looks like UTF-16 or UTF-32 text.*iconv -f UTF-16 -t UTF-8")
      for e in ("utf-16", "utf-16-le", "utf-16-be")),
    ("the man walked\n".encode("utf-32"), "looks like UTF-16 or UTF-32 text.*iconv -f UTF-32 -t UTF-8"),
    (ELF, "contains NUL bytes; this looks like binary data"),
    (b"\x00" * 5000, "contains NUL bytes; this looks like binary data"),  # no letters: not UTF-16
    (b"\xff\xfe" + b"\x00" * 100, "contains NUL bytes; this looks like binary data"),
    (b"1.0\tthe man\x00 walked\tthe dog ran\n", "contains NUL bytes; this looks like binary data"),  # an STS line
], ids=["utf-16", "utf-16-le", "utf-16-be", "utf-32", "elf", "nuls", "bom-and-nuls", "sts-line"])
def test_text_with_a_nul_is_binary_or_utf16_in_any_encoding_and_every_reader(tmp_path, data, verdict):
    """Text files (open_text, whose reader checks each block with check_text) and the small files
    read whole (read_small_text: STS files, word pairs) alike."""
    (path := tmp_path / "a.txt").write_bytes(data)
    for encoding in ("utf-8", "latin-1", "utf-8:replace"):
        with pytest.raises(CorpusError, match=f"^{path}: {verdict}"):
            with open_text(path, encoding=encoding) as fh:
                check_text(path, fh.read())
        with pytest.raises(ValueError, match=f"^{path}: {verdict}"):
            read_small_text(path, ValueError, "an STS file", encoding=encoding)
