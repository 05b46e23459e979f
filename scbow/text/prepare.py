"""Raw documents -> the trainer's corpus: one sentence per line, a blank line between documents.

Inputs: text files (``TEXT_SUFFIXES``), JSON Lines files (``JSONL_SUFFIXES``), each possibly compressed
(known by their first bytes), and folders, which stand for every such file below them in sorted path
order, hidden names skipped. A file named on its own is read whatever its name: as JSON Lines if its
name (less a compression suffix) says so, else as text. Input is read as the trainer reads it
(``scbow.text.reader.open_text``; lines read with ``:replace`` counted).

A document (``documents=``) is a file or JSON Lines record (``"file"``), or each block between blank
lines (``"blank-line"``). Only a record's text field is read. A record whose text is null or empty is
skipped; so is a line that is not a JSON object with a string in that field: it is counted and the
first few named (``PrepareStats``), or with ``strict=True`` refused.

Sentences: a blank line ends a paragraph; a paragraph's lines are joined with spaces (hard-wrapped
text reads as flowing text) and split by the segmenter; inside a sentence each run of whitespace is
one space; empty sentences, and documents with none, are dropped. ``segmenter="lines"`` takes each
non-blank line as a sentence and needs no library. Japanese and Chinese are cut by a rule of their own,
whatever the segmenter (:func:`with_cjk`): ``「行くの？」と聞いた。`` is one sentence.

Memory stays bounded: files are read in blocks (:func:`_blocks`) and a long paragraph is segmented chunk
by chunk (``_Preparer._flush``); only a JSON Lines record is held whole. The output is written beside
itself and renamed into place at the end, compressed by its suffix (:func:`_compressor`) in a second
thread (``_Writer``). Only the standard library is imported here; the segmenter's library when
``prepare`` (or ``get_segmenter``) runs.
"""

from __future__ import annotations

import bz2
import gzip
import importlib
import io
import json
import lzma
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..errors import CorpusError
from ..files import atomic_file
from ..outputs import check_output_file, refuse_overwrite
from ..progress import listed, megabytes, plural
from ..reading import json_kind
from .reader import COMPRESSED_SUFFIXES, DEFAULT_ENCODING, TextFile, check_text, expand, invalid_utf8_warning, open_text

DOCUMENT_MODES = ("file", "blank-line")  # the first is the default
TEXT_SUFFIXES = (".txt", ".text", ".md")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
DEFAULT_JSONL_FIELD = "text"
BAD_EXAMPLES = 3  # unreadable JSON Lines lines named in PrepareStats.bad_examples (and the warning)

# Segmenter name -> the module to import (None: no library). The default, English only, was the most
# accurate compared (benchmarks/results/segmenters.md), about 6 MB/s of book text in pure Python;
# sentencex (about 300 languages, 7x faster, less accurate on English dialogue) is for other languages.
DEFAULT_SEGMENTER = "nupunkt"
SEGMENTERS = {
    "nupunkt": "nupunkt",
    "sentencex": "sentencex",
    "blingfire": "blingfire",
    "pysbd": "pysbd",
    "syntok": "syntok.segmenter",
    "lines": None,
}
ENGLISH_ONLY = ("nupunkt", "syntok")
DEFAULT_LANGUAGE = "en"  # ISO 639-1: English, the one language of ENGLISH_ONLY
CJK_LANGUAGES = ("ja", "zh")  # what with_cjk cuts, with any segmenter

CHUNK_CHARS = 1 << 16  # most characters read at once, and handed to the segmenter at once (about)
_WRITE_CHARS = 1 << 20  # characters of output written at once

Segmenter = Callable[[str], list[str]]


@dataclass
class PrepareStats:
    """What ``prepare`` read and wrote, and the lines it ends with. ``bytes_read``: the inputs' bytes as
    stored (compressed), ending at ``input_bytes``; ``words``: whitespace-separated tokens written;
    ``skipped_records``: JSON Lines records with null or empty text; ``bad_records``: unreadable JSON Lines
    lines skipped, the first ``BAD_EXAMPLES`` described in ``bad_examples`` (``"FILE: line N: why"``)."""

    files: int = 0
    documents: int = 0
    sentences: int = 0
    words: int = 0
    bytes_read: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    invalid_utf8_lines: int = 0
    skipped_records: int = 0
    bad_records: int = 0
    words_cut: int = 0  # runs of text without whitespace longer than a chunk, cut where the chunk ended
    bad_examples: list = field(default_factory=list)
    files_without_text: list = field(default_factory=list)  # named in the summary: a file that gave nothing
    seconds: float = 0.0
    segmenter: str = ""
    output: str = ""
    jsonl_field: str = DEFAULT_JSONL_FIELD

    def warnings(self) -> list[str]:
        out = []
        if self.invalid_utf8_lines:
            out.append(invalid_utf8_warning("the input", self.invalid_utf8_lines, "written"))
        if self.words_cut:
            out.append(f"warning: {plural(self.words_cut, 'run')} of text with no whitespace for over "
                       f"{CHUNK_CHARS:,} characters {'was' if self.words_cut == 1 else 'were'} cut where a chunk "
                       "ended (not words: binary data or text without spaces?)")
        if self.bad_records:
            more = ", ..." if self.bad_records > len(self.bad_examples) else ""
            out.append(f"warning: skipped {plural(self.bad_records, 'JSON Lines line')} that "
                       f"{'holds' if self.bad_records == 1 else 'hold'} no record with text in '{self.jsonl_field}' "
                       f"({'; '.join(self.bad_examples)}{more}); --strict stops at the first instead")
        return out

    def summary(self) -> str:
        """Files, size, time and rate, what was found and skipped, the output."""
        rate = self.input_bytes / self.seconds if self.seconds > 0 else 0.0
        skipped = [f"{plural(self.skipped_records, 'JSON Lines record')} with no text"] if self.skipped_records else []
        if self.bad_records:
            skipped.append(plural(self.bad_records, "unreadable JSON Lines line"))
        skipped = f", skipped {' and '.join(skipped)}" if skipped else ""
        if self.files_without_text:
            skipped += f"; no sentence in {listed(self.files_without_text)}"
        return (f"prepared {plural(self.files, 'file')}, {megabytes(self.input_bytes)} in {self.seconds:.1f} s "
                f"({megabytes(rate)}/s, {self.segmenter}): {plural(self.documents, 'document')}, "
                f"{plural(self.sentences, 'sentence')}, {plural(self.words, 'word')}{skipped}; "
                f"wrote {self.output}")


def get_segmenter(name: str = DEFAULT_SEGMENTER, language: str = DEFAULT_LANGUAGE) -> Segmenter:
    """A function from a paragraph to its sentences (which may keep surrounding whitespace, or be empty).

    The libraries see the paragraph's whitespace collapsed to single spaces; ``"lines"`` splits at line
    ends. ``language`` (ISO 639-1) is sentencex's and pysbd's; nupunkt and syntok refuse all but English.
    CorpusError for an unknown name or language, or a library not installed (saying what to pip install).
    """
    if name not in SEGMENTERS:
        raise CorpusError(f"unknown segmenter {name!r} (choose from {', '.join(SEGMENTERS)})")
    if name in ENGLISH_ONLY and language != DEFAULT_LANGUAGE:
        cjk = (" (Japanese and Chinese lines are cut by the built-in rule whatever the segmenter: "
               "--segmenter lines needs nothing installed)") if language in CJK_LANGUAGES else ""
        raise CorpusError(f"the {name} segmenter knows English only; for language {language!r} "
                          f"use the sentencex segmenter (pip install sentencex){cjk}")
    module = SEGMENTERS[name]
    if module is None:
        return lambda text: text.split("\n")
    try:
        lib = importlib.import_module(module)
    except ImportError:
        what = "'scbow-numba[prepare]'" if name == DEFAULT_SEGMENTER else name
        raise CorpusError(f"the {name} sentence segmenter is not installed; pip install {what}") from None
    if name == "nupunkt":
        return lambda text: lib.sent_tokenize(_collapse(text))
    if name == "sentencex":
        return lambda text: lib.segment(language, _collapse(text))
    if name == "blingfire":
        return lambda text: lib.text_to_sentences(_collapse(text)).split("\n")
    if name == "pysbd":
        try:
            seg = lib.Segmenter(language=language, clean=False)
        except ValueError as exc:
            raise CorpusError(f"pysbd: {exc}") from None
        return lambda text: seg.segment(_collapse(text))
    # syntok: paragraphs of sentences of tokens, each token with the whitespace before it
    return lambda text: ["".join(t.spacing + t.value for t in sentence)
                         for paragraph in lib.analyze(_collapse(text)) for sentence in paragraph]


# A character of Japanese or Chinese (kana, Han) marks a line the built-in rule cuts
_CJK = re.compile("[\u3005-\u3007\u3041-\u309f\u30a1-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                  "\uff66-\uff9f\U00020000-\U0003ffff]")
CJK_ENDS = "。！？｡!?‼⁇⁈⁉"  # sentence-final marks (ASCII ! ? too: Japanese text mixes them in)
CJK_OPEN, CJK_CLOSE = "「『（(“【〈《", "」』）)”】〉》"
_CJK_PARTS = re.compile(f"[{CJK_ENDS}]+|[{re.escape(CJK_OPEN)}]|[{re.escape(CJK_CLOSE)}]")


def cjk_sentences(line: str) -> list[str]:
    """The sentences of a line of Japanese or Chinese: cut after each run of :data:`CJK_ENDS` outside
    quotes and brackets, or at every run when they do not balance (a quotation going on past its line)."""
    for quoted in (True, False):
        out, depth, start = [], 0, 0
        for m in _CJK_PARTS.finditer(line):
            c = m.group()[0]
            if c in CJK_OPEN:
                depth += quoted
            elif c in CJK_CLOSE:
                depth -= quoted
                if depth < 0:
                    break
            elif depth == 0:
                out.append(line[start:m.end()])
                start = m.end()
        if depth == 0:
            break
    return out + [line[start:]] if line[start:] else out


def with_cjk(segment: Segmenter) -> Segmenter:
    """``segment`` with the lines that hold Japanese or Chinese cut by :func:`cjk_sentences`, each its
    own paragraph. A text ending with such a line ends with an empty sentence, so that ``_Preparer``
    carries nothing over from it (its line end ended its last sentence)."""
    def run(text: str) -> list[str]:
        if _CJK.search(text) is None:
            return segment(text)
        out: list[str] = []
        plain: list[str] = []
        ended = text.endswith("\n")
        for line in (text[:-1] if ended else text).split("\n"):
            if _CJK.search(line) is None:
                plain.append(line)
                continue
            if plain:
                out += segment("\n".join(plain))
                plain = []
            out += cjk_sentences(line)
        if plain:
            out += segment("\n".join(plain) + "\n" * ended)
        elif ended:
            out.append("")
        return out

    return run


def _collapse(text: str) -> str:
    """``text`` with every run of whitespace (line ends included) made one space, and stripped."""
    return " ".join(text.split())


def _kind(path: Path) -> str | None:
    """``"jsonl"`` or ``"text"`` by the name (less a compression suffix), else None."""
    name = path.name.lower()
    for suffix in COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(TEXT_SUFFIXES):
        return "text"
    return None


def find_inputs(inputs: Iterable[os.PathLike | str]) -> list[tuple[Path, str]]:
    """The files to read, each with its kind (``"text"`` or ``"jsonl"``), in order, each once; a folder
    gives those below it (sorted, hidden names and links to folders skipped)."""
    inputs = list(inputs)
    if not inputs:
        raise CorpusError("no input file given")
    looked = ", ".join(TEXT_SUFFIXES + JSONL_SUFFIXES) + ", also compressed"
    files = expand(inputs, recursive=True, accept=lambda f: _kind(f) is not None, looked_for=looked)
    return [(f, _kind(f) or "text") for f in files]


def _blocks(stream: io.TextIOBase, check: Callable[[str], None] | None = None) -> Iterator[str]:
    """A text stream in blocks of whole lines, about ``CHUNK_CHARS`` characters each (a line
    longer than that is cut, so a block never passes ``2 * CHUNK_CHARS``)."""
    while block := stream.read(CHUNK_CHARS):
        if not block.endswith("\n"):
            block += stream.readline(CHUNK_CHARS)
        if check is not None:
            check(block)
        yield block


class _Writer:
    """Sentences to a binary output stream, a blank line between documents, counting as it goes.

    Batches of about ``_WRITE_CHARS`` characters are written by a second thread, so compressing one
    (zlib, bz2 and lzma release the GIL) overlaps segmenting the next. ``close`` writes the rest;
    ``stop`` (also after a failure) waits for the thread.
    """

    def __init__(self, stream, stats: PrepareStats):
        self.stream = stream
        self.stats = stats
        self.open_document = False  # the current document has a sentence written
        self._batch: list[str] = []
        self._batch_chars = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scbow-prepare-write")
        self._pending = None  # the batch being written

    def sentences(self, sentences: Iterable[str]) -> None:
        """Write ``sentences``, each with its whitespace collapsed; empty ones are dropped."""
        lines = [line for line in map(_collapse, sentences) if line]
        if not lines:
            return
        if not self.open_document:
            if self.stats.documents:
                self._batch.append("\n")
            self.open_document = True
            self.stats.documents += 1
        self.stats.sentences += len(lines)
        self.stats.words += sum(line.count(" ") for line in lines) + len(lines)
        text = "\n".join(lines) + "\n"
        self._batch.append(text)
        self._batch_chars += len(text)
        if self._batch_chars >= _WRITE_CHARS:
            self._write_batch()

    def _write_batch(self) -> None:
        # a lone surrogate (a JSON "\\ud800") cannot be UTF-8: it becomes "?"
        data = "".join(self._batch).encode("utf-8", "replace")
        self._batch, self._batch_chars = [], 0
        self._wait()
        self._pending = self._pool.submit(self.stream.write, data)

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()  # raises the write's error, if any

    def close(self) -> None:
        """Write what is left and wait until it is written."""
        if self._batch:
            self._write_batch()
        self._wait()

    def stop(self) -> None:
        """Wait for the writing thread and end it (nothing more is written)."""
        self._pool.shutdown(wait=True)


def _compressor(raw, output: Path):
    """A binary stream over the file ``raw`` that compresses by the suffix of ``output`` (or ``raw``)."""
    name = output.name.lower()
    if name.endswith(".gz"):
        # the name in the gzip header is the output's, not the temporary file's
        return gzip.GzipFile(filename=output.name, mode="wb", fileobj=raw, compresslevel=6)
    if name.endswith(".bz2"):
        return bz2.BZ2File(raw, "wb")
    if name.endswith(".xz"):
        # preset 1: about 10 MB/s and 37% of the text's size on English; the default preset 6
        # (1.6 MB/s, 30%) would take longer than the segmenting
        return lzma.LZMAFile(raw, "wb", preset=1)
    return raw


# a line end followed by one or more lines of only whitespace: the gap between two paragraphs
_BLANK_LINES = re.compile(r"\n(?:[^\S\n]*\n)+")


class _Preparer:
    """Reads input files (text, or JSON Lines records' ``jsonl_field``) into paragraphs, sentences and
    documents on a writer, counting in its ``stats``."""

    def __init__(self, segment: Segmenter, writer: _Writer, blank_line_documents: bool, jsonl_field: str,
                 strict: bool, encoding: str):
        self.segment = segment
        self.writer = writer
        self.stats = writer.stats
        self.blank_line_documents = blank_line_documents
        self.field, self.strict, self.encoding = jsonl_field, strict, encoding

    def file(self, path: Path, kind: str, report: Callable[[int], None]) -> None:
        """Read one input file; ``report(stored bytes read)`` now and then."""
        def check(text: str) -> None:  # binary is refused by the reader's one rule; lines with U+FFFD counted
            self.stats.invalid_utf8_lines += check_text(str(path), text)

        with open_text(path, encoding=self.encoding) as reader:  # every read error, decompression included, names the file
            if kind == "jsonl":
                for text in self._records(reader, check):
                    # read as a file is: universal newlines, blocks of whole lines
                    self.document(_blocks(io.StringIO(text, newline=None)), lambda: report(reader.position()))
            else:
                self.document(_blocks(reader, check), lambda: report(reader.position()))

    def document(self, blocks: Iterable[str], on_block: Callable[[], None] | None = None) -> None:
        """Everything in ``blocks`` (the text of one file or record); the end of it ends a document."""
        buf: list[str] = []  # the open paragraph, not yet segmented
        size = 0
        at_line_start = True
        for block in blocks:
            # after a line end, a block that starts with a blank line starts a new paragraph:
            # the "\n" put in front lets the pattern see that blank line
            parts = _BLANK_LINES.split("\n" + block if at_line_start else block)
            at_line_start = block.endswith("\n")
            for i, part in enumerate(parts):
                if i and buf:  # a blank line closed the open paragraph
                    self._flush(buf, final=True)
                    buf, size = [], 0
                    if self.blank_line_documents:
                        self.writer.open_document = False  # the document ends
                if part:
                    buf.append(part)
                    size += len(part)
                    if size >= CHUNK_CHARS:  # a long paragraph: segment what is there, carry its end
                        buf = self._flush(buf, final=False)
                        size = sum(map(len, buf))
            if on_block is not None:
                on_block()
        if buf:
            self._flush(buf, final=True)
        self.writer.open_document = False  # the document ends

    def _flush(self, buf: list[str], final: bool) -> list[str]:
        """Segment the text in ``buf`` and write its sentences; returns what to carry over: unless
        ``final``, the last sentence, which may go on in the text to come, to be segmented again in
        front of it (with a space after it if the text ended in whitespace), unless half a chunk long."""
        text = "".join(buf)
        sentences = self.segment(text)
        carry: list[str] = []
        if not final and sentences and len(sentences[-1]) < CHUNK_CHARS // 2:
            last = sentences.pop().strip()
            if last:
                carry = [last + (" " if text[-1:].isspace() else "")]
        elif not final and sentences and not text[-1:].isspace():
            # a sentence longer than half a chunk that the text still to come continues: it is
            # cut at its last whitespace, never inside a word, and the word it ends on carried
            last = sentences[-1]
            cut = max(last.rfind(" "), last.rfind("\t"))
            if cut > 0:
                sentences[-1] = last[:cut].rstrip()
                carry = [last[cut + 1:]]
            else:  # no whitespace in a whole chunk: no word; cut there, and counted for a warning
                self.stats.words_cut += 1
        self.writer.sentences(sentences)
        return carry

    def _records(self, reader: TextFile, check: Callable[[str], None]) -> Iterator[str]:
        """The text field of each record of a JSON Lines file (blank lines skipped). A line that is not a
        record with a string in the field is counted in ``stats.bad_records``, or with ``strict`` refused."""
        field, stats, name = self.field, self.stats, reader.buffer.name
        for lineno, line in enumerate(iter(reader.readline, ""), 1):
            check(line)
            if not line.strip():
                continue
            why = None
            try:
                record = json.loads(line)
            except RecursionError:
                why = "JSON nested too deep"
            except ValueError as exc:
                why = f"not valid JSON ({str(exc).split(':')[0]})"
            else:
                if not isinstance(record, dict):
                    why = f"not a JSON object but {json_kind(record)}"
                elif field not in record:
                    keys = ", ".join(repr(k[:40]) for k in list(record)[:5]) + (", ..." if len(record) > 5 else "")
                    why = f"no field {field!r} (its fields: {keys or 'none'}; choose the text field with --jsonl-field)"
                elif record[field] is None or record[field] == "":
                    stats.skipped_records += 1
                    continue
                elif not isinstance(record[field], str):
                    why = f"field {field!r} is not a string but {json_kind(record[field])}"
            if why is not None:
                if self.strict:
                    raise CorpusError(f"{name}: line {lineno}: {why}")
                stats.bad_records += 1
                if len(stats.bad_examples) < BAD_EXAMPLES:
                    stats.bad_examples.append(f"{name}: line {lineno}: {why}")
                continue
            text = record[field]
            # as text a corpus may hold: \u0000 (refused as binary in a corpus) becomes a space, a lone
            # surrogate (no character at all) U+FFFD, as invalid UTF-8 does in text files
            if _NOT_TEXT.search(text) is not None:
                text = _NOT_TEXT.sub(lambda m: " " if m.group() == "\x00" else "\ufffd", text)
            yield text


_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")


def prepare(
    inputs: Iterable[os.PathLike | str],
    output: os.PathLike | str,
    *,
    jsonl_field: str = DEFAULT_JSONL_FIELD,
    documents: str = DOCUMENT_MODES[0],
    segmenter: str = DEFAULT_SEGMENTER,
    language: str = DEFAULT_LANGUAGE,
    progress: Callable[[int, int], None] | None = None,
    strict: bool = False,
    encoding: str = DEFAULT_ENCODING,
) -> PrepareStats:
    """Write the raw documents in ``inputs`` to ``output`` as a corpus the trainer reads, as the module
    docstring says (``documents``, ``segmenter``: a name in ``SEGMENTERS``, ``language``: ISO 639-1,
    ``strict``, ``jsonl_field``; ``encoding``: ``scbow.text.reader.text_codec``).
    ``progress(bytes_read, input_bytes)`` is called now and then, in stored bytes. CorpusError for
    anything wrong with the inputs or the output, with nothing written.
    """
    t0 = time.perf_counter()
    if documents not in DOCUMENT_MODES:
        raise CorpusError(f"unknown documents mode {documents!r} (choose from {', '.join(DOCUMENT_MODES)})")
    output, inputs = Path(output), list(inputs)  # read twice below (a generator once)
    files = find_inputs(inputs)  # the inputs and the output first: they name the user's own mistake
    refuse_overwrite({"the output": output}, [*(("an input", f) for f, _ in files),
                                              *(("the input folder", p) for p in inputs if Path(p).is_dir())],
                     reads_folders=True, error=CorpusError)
    check_output_file(output, "corpus.txt.gz", CorpusError)
    segment = with_cjk(get_segmenter(segmenter, language))  # a missing library fails before any work
    stats = PrepareStats(files=len(files), segmenter=segmenter, output=str(output), jsonl_field=jsonl_field)
    sizes = [f.stat().st_size for f, _ in files]
    stats.input_bytes = sum(sizes)
    report = progress or (lambda done, total: None)
    report(0, stats.input_bytes)

    try:
        with atomic_file(output) as tmp, open(tmp, "wb") as raw:
            stream = _compressor(raw, output)
            writer = _Writer(stream, stats)
            try:
                preparer = _Preparer(segment, writer, documents == "blank-line", jsonl_field, strict, encoding)
                for (path, kind), size in zip(files, sizes):
                    before, sentences = stats.bytes_read, stats.sentences
                    preparer.file(path, kind, lambda pos, before=before: report(before + min(pos, size), stats.input_bytes))
                    if stats.sentences == sentences:
                        stats.files_without_text.append(str(path))
                    stats.bytes_read = before + size
                    report(stats.bytes_read, stats.input_bytes)
                writer.close()
            finally:
                writer.stop()
            if stream is not raw:
                stream.close()  # the compressor's trailer; the file stays open
            raw.flush()
            stats.output_bytes = raw.tell()
            if not stats.documents:
                names = ", ".join(str(f) for f, _ in files[:3]) + (", ..." if len(files) > 3 else "")
                bad = (f"; {plural(stats.bad_records, 'unreadable JSON Lines record')} skipped, the first: "
                       f"{stats.bad_examples[0]}" if stats.bad_records else "")
                raise CorpusError(f"no documents found in the input ({names}): no sentence with a word in it{bad}")
    except OSError as exc:
        raise CorpusError(f"cannot write {output}: {exc.strerror or exc}") from None
    stats.seconds = time.perf_counter() - t0
    return stats
