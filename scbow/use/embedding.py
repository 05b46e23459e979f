"""Embedding text files with a model: one sentence per line in, one float32 row per line out.

The input is read a block of lines at a time (inputs larger than memory work), averaged by a compiled
kernel and written block by block to a temporary ``.npy`` renamed into place at the end. Row ``i`` is
line ``i + 1`` (universal newlines; empty lines included); unknown words follow the model's rule, as
``Model.encode``. A line with nothing to average is NaN (or zeros with ``fill=0``), its number recorded.
"""

from __future__ import annotations

import io
import math
import os
import struct
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import CorpusError, ModelError
from ..files import atomic_file
from ..outputs import check_output_file, named, refuse_overwrite
from ..progress import Progress, plural
from ..reading import path_text, read_range
from ..text.reader import DEFAULT_ENCODING
from ..vectors.average import check_rule, sentences_text
from ..vectors.model import Model

BLOCK_CHARS = 1 << 22  # characters of text per block (about 40K lines of prose)
NPY_HEADER_LEN = 128  # bytes of the .npy header we write: magic, length and padded dict
_MAGIC = b"\x93NUMPY\x01\x00"


def npy_header(n_rows: int, dim: int) -> bytes:
    """The .npy 1.0 header of a float32 (n_rows, dim) array, always ``NPY_HEADER_LEN`` bytes (written last)."""
    text = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (n_rows, dim)
    room = NPY_HEADER_LEN - len(_MAGIC) - 2
    if len(text) + 1 > room:  # needs more than 10**40 rows
        raise ValueError(f"shape ({n_rows}, {dim}) does not fit a {NPY_HEADER_LEN}-byte header")
    return _MAGIC + struct.pack("<H", room) + (text.ljust(room - 1) + "\n").encode("latin1")


def missing_path_for(output: os.PathLike) -> Path:
    """Where the record of lines without an embedding goes: ``X.npy`` -> ``X.missing.txt``."""
    output = named(output)
    stem = output.name[:-4] if output.name.endswith(".npy") else output.name
    return output.with_name(stem + ".missing.txt")


def _text(lines: list) -> str:
    """Lines as :func:`read_blocks` yields them, as one text whose every line ends with a line end."""
    text = "".join(lines)
    return text if text.endswith("\n") else text + "\n"


def read_blocks(path, block_chars: int = BLOCK_CHARS, byte_range: tuple[int, int] | None = None,
                encoding: str = DEFAULT_ENCODING):
    """Yield lists of lines of a text file (``-`` for stdin), about ``block_chars`` at a time.

    ``byte_range``: only bytes ``start:stop`` of a plain (uncompressed) file, which must
    begin at the start of a line and end after a ``\\n`` (``scbow.use.cluster.plan_blocks``
    cuts files so): its lines are exactly those the whole file has there, decoded alike.
    Read in ``encoding`` by the one reader's rule (``scbow.text.reader.open_text``). Raises
    CorpusError for a missing, unreadable or binary file, or one not valid in ``encoding``.
    """
    from ..text.reader import check_text, open_text, text_stream

    name = "<stdin>" if str(path) == "-" else str(path)
    if byte_range is not None:  # never of stdin: a cluster refuses it
        start, stop = byte_range
        # a byte order mark is not text at the start of the file only, as open_text reads it
        fh = text_stream(io.BytesIO(read_range(path, start, stop)), encoding, name=name, at_start=start == 0)
    elif str(path) == "-":
        fh = text_stream(sys.stdin.buffer, encoding, name=name)
    else:
        if Path(path).is_dir():
            raise CorpusError(f"{path}: is a directory, expected a text file with one sentence per line")
        fh = open_text(Path(path), encoding=encoding)  # any read error, decompression too, is a CorpusError naming the file
    close = fh.detach if str(path) == "-" and byte_range is None else fh.close  # detached, sys.stdin stays open
    try:
        while True:
            try:
                lines = fh.readlines(block_chars)
            except OSError as exc:  # stdin or a byte range
                raise CorpusError(f"{name}: cannot read: {exc.strerror or exc}") from None
            if not lines:
                break
            check_text(name, "".join(lines))
            yield lines
    finally:
        close()


@dataclass
class EmbedStats:
    lines: int = 0
    missing: int = 0  # lines with no known word
    tokens: int = 0
    known_tokens: int = 0
    seconds: float = 0.0


def lacks(rule: str) -> str:
    """What a sentence without an embedding lacks under the unknown-word ``rule``."""
    return "no word" if rule == "hash" else "no word in the vocabulary"


def sentence_vector(model: Model, sentence: str) -> np.ndarray:
    """The float64 average of ``sentence``; ValueError when it has nothing to average or averages to zero."""
    q = model.encode([sentence])[0].astype(np.float64)
    if np.isnan(q).any() or not q.any():
        raise ValueError(f"the sentence {sentence!r} has {lacks(model.unknown_rule[0])}")
    return q


@dataclass(frozen=True)
class SentenceWords:
    """A sentence as a model averages it: its ``unknown`` words, their ``rule``, each one's ``pieces`` (under
    pieces) and whether it ``has_embedding``."""

    unknown: list
    rule: str
    has_embedding: bool
    pieces: tuple = ()

    def unknown_note(self) -> str | None:
        """``unknown words given hashed random vectors: a, b`` (or left out, split into pieces); None if none."""
        if not self.unknown:
            return None
        if self.rule == "pieces":
            shown = [f"{w} ({' '.join(p) if p else 'none: left out'})" for w, p in zip(self.unknown, self.pieces)]
            return f"unknown words split into pieces: {', '.join(shown)}"
        what = "given hashed random vectors" if self.rule == "hash" else "left out"
        return f"unknown words {what}: {', '.join(self.unknown)}"


def sentence_words(model: Model, sentence: str, unknown: str | None = None) -> SentenceWords:
    """:class:`SentenceWords` of ``sentence`` under ``unknown`` (default: the model's own rule)."""
    missing = model.ids(sentence)[1]
    rule = unknown or model.unknown_rule[0]
    done = model.averager.average(model.averager.encode(sentences_text([sentence])), rule, model.unknown_scale(rule))
    pieces = tuple(map(model.pieces.split, missing)) if rule == "pieces" else ()
    return SentenceWords(missing, rule, bool(done.counts[0]), pieces)


def query_sentence(model: Model, sentence: str, note=None) -> SentenceWords:
    """The words of a query sentence (``neighbors --sentence``), ``note`` given the line naming its unknown
    words; ModelError when it has no embedding."""
    words = sentence_words(model, sentence)
    if not words.has_embedding:
        raise ModelError(f"the sentence has {lacks(words.rule)}; it has no embedding")
    if words.unknown and note is not None:
        note(words.unknown_note())
    return words


def sentence_similarity(model: Model, sentence1: str, sentence2: str, unknown: str | None = None, note=None) -> float:
    """The cosine of the two sentences' averages (``similarity``); ModelError, one line, when a side is empty,
    has nothing to average or averages to zero. ``note`` is given the lines naming unknown words."""
    blank = [n for n, sentence in enumerate((sentence1, sentence2), 1) if not sentence.strip()]
    if blank:
        raise ModelError(f"no similarity: {' and '.join(f'sentence {n}' for n in blank)} "
                         f"{'is' if len(blank) == 1 else 'are'} empty")
    sides = [sentence_words(model, sentence, unknown) for sentence in (sentence1, sentence2)]
    for n, side in enumerate(sides, 1):
        if side.unknown_note() and note is not None:
            note(f"sentence {n}: {side.unknown_note()}")
    empty = [n for n, side in enumerate(sides, 1) if not side.has_embedding]
    if empty:
        which = " and ".join(f"sentence {n}" for n in empty)
        raise ModelError(f"no similarity: {which} has {lacks(sides[0].rule)}")
    value = float(model.similarity_pairwise([sentence1], [sentence2], unknown=unknown)[0])
    if value != value:  # a side averages to the zero vector: its words' vectors cancel out or are zero
        raise ModelError("no similarity: a sentence's average is the zero vector (its words' vectors "
                         "are zero or cancel out), so it has no direction to compare")
    return value


def embed_file(model: Model, input_path, output: os.PathLike, missing_file: os.PathLike | None = None,
               fill: float = math.nan, threads: int = 1, block_chars: int = BLOCK_CHARS,
               progress=None, unknown: str | None = None, encoding: str = DEFAULT_ENCODING) -> EmbedStats:
    """Embed every line of ``input_path`` into the float32 (n_lines, dim) array file ``output``.

    The 1-based numbers of the lines with nothing to average go to ``missing_file`` (default
    ``missing_path_for(output)``) after a ``#`` line. ``encoding``: the input's (:func:`read_blocks`).

    Averaging and writing a block (GIL released) run in a second thread while the next block is
    tokenized, the bottleneck (``benchmarks/results/embed.md``). ``threads`` other than 1 average with
    the parallel kernel (0: all cores) from the second block on: it compiles in seconds (uncacheable)
    and pays off only for models with many dimensions. ``progress`` is given the lines done.
    """
    output = check_output_file(output, "embeddings.npy")
    if output.suffix.lower() != ".npy":
        raise ModelError(f"{output}: embed writes a NumPy array (.npy, read with numpy.load); give the output a "
                         f".npy name, e.g. {output.with_suffix('.npy').name}")
    missing_file = check_output_file(Path(missing_file) if missing_file else missing_path_for(output), "embeddings.missing.txt",
                                     name="--missing")
    if missing_file.resolve() == output.resolve():
        raise ModelError(f"{output}: the array and the record of missing lines cannot be the same file")
    blocks = read_blocks(input_path, block_chars, encoding=encoding)
    return write_embeddings(model, blocks, output, missing_file, fill, threads, progress, unknown, source=input_path)


def embed_command(model_dir: Path, input_path, output: Path, missing_file=None, fill: str = "nan", threads: int = 1,
                  unknown: str | None = None, quiet: bool = False, encoding: str = DEFAULT_ENCODING) -> str | None:
    """What ``embed INPUT -o OUT.npy`` runs: the outputs checked, the lines embedded with a progress line; the
    summary line, naming the files as the user did (None when ``quiet``)."""
    from ..vectors.formats import load_model

    if output.is_dir():  # -o ., -o /: named as a directory before a name is made from it
        check_output_file(output, "embeddings.npy")
    missing_file = missing_file or missing_path_for(output)
    refuse_overwrite({"-o": output, "--missing": missing_file}, {"the model": model_dir, "INPUT": input_path})
    model = load_model(model_dir)
    bar = Progress(0, unit="lines", quiet=quiet)
    try:
        stats = embed_file(model, input_path, output, missing_file, fill=0.0 if fill == "zero" else float("nan"),
                           threads=threads, progress=lambda n: bar.update(n, prefix="embedding: "), unknown=unknown,
                           encoding=encoding)
    finally:
        bar.close()
    if quiet:
        return None
    rate = stats.lines / stats.seconds * 60 if stats.seconds > 0 else 0
    known, rule = stats.known_tokens / stats.tokens if stats.tokens else 0, unknown or model.unknown_rule[0]
    return (f"embedded {plural(stats.lines, 'line')} as {model.dim}-dim rows in {stats.seconds:.1f} s "
            f"({rate:,.0f} lines/min), {100 * known:.1f}% of tokens averaged (unknown words: {rule}); "
            f"{plural(stats.missing, 'line')} with {lacks(rule)} (listed in {missing_file}); wrote {output}")


def write_embeddings(model: Model, blocks, output: Path, missing_file: Path, fill: float = math.nan,
                     threads: int = 1, progress=None, unknown: str | None = None, source="the input",
                     sweep: bool = True) -> EmbedStats:
    """Embed ``blocks`` (of :func:`read_blocks`) into ``output`` and ``missing_file``, each written atomically
    (what ``embed_file`` and the cluster's shards both run)."""
    if threads != 1:
        import numba

        from ..kernels import resolve_threads

        numba.set_num_threads(resolve_threads(threads))
    rule = model.unknown_rule[0] if unknown is None else unknown
    scale = model.unknown_scale(rule)
    check_rule(rule, scale)
    averager = model.averager
    stats = EmbedStats()
    t0 = time.perf_counter()
    try:
        with atomic_file(output, sweep) as tmp_out, atomic_file(missing_file, sweep) as tmp_missing, \
                open(tmp_out, "wb") as out, open(tmp_missing, "w", encoding="utf-8", newline="\n") as miss, \
                ThreadPoolExecutor(max_workers=1) as pool:
            out.write(npy_header(0, model.dim))
            miss.write(f"# lines of {path_text(source)} with {lacks(rule)} (1-based; array row = line - 1)\n")

            def finish(encoded, first_line, kernel):
                done = averager.average(encoded, rule, scale, fill, kernel=kernel)
                done.rows.tofile(out)
                empty = np.flatnonzero(done.counts == 0)
                if len(empty):
                    miss.write("".join(f"{first_line + i}\n" for i in empty.tolist()))
                return len(empty), done.averaged

            def wait(pending) -> None:
                missing, averaged = pending.result()
                stats.missing += missing
                stats.known_tokens += averaged  # words, not pieces: a word of three pieces is one

            pending = None
            for n_block, lines in enumerate(blocks):
                encoded = averager.encode(_text(lines))
                if pending is not None:
                    wait(pending)
                kernel = "parallel" if threads != 1 and n_block > 0 else "serial"
                pending = pool.submit(finish, encoded, stats.lines + 1, kernel)
                stats.lines += len(lines)
                stats.tokens += encoded.tokens
                if progress is not None:
                    progress(stats.lines)
            if pending is not None:
                wait(pending)
            out.seek(0)
            out.write(npy_header(stats.lines, model.dim))
    except OSError as exc:
        raise ModelError(f"cannot write {output}: {exc.strerror or exc}") from None
    stats.seconds = time.perf_counter() - t0
    return stats


def nearest_sentences(model: Model, sentence: str, input_path, topn: int = 10,
                      block_chars: int = BLOCK_CHARS, warn=None,
                      encoding: str = DEFAULT_ENCODING) -> list[tuple[float, int, str]]:
    """The ``topn`` lines of a text file nearest to ``sentence`` by cosine of averages.

    ``(cosine, line_number, line)`` best first (ties to 1e-12: earlier line first), 1-based; lines with
    nothing to average never returned. The file is read in ``encoding`` (:func:`read_blocks`); bad bytes
    read as U+FFFD are counted in one warning to ``warn`` (default: stderr). ValueError when ``sentence``
    has nothing to average.
    """
    from ..progress import note
    from ..text.reader import invalid_utf8_warning

    if topn < 1:
        raise ValueError(f"topn must be at least 1, got {topn}")
    q = sentence_vector(model, sentence)
    q /= np.linalg.norm(q)
    rule, scale = model.unknown_rule[0], model.unknown_scale(model.unknown_rule[0])
    best_cos = np.empty(0, dtype=np.float64)
    best_line = np.empty(0, dtype=np.int64)
    best_text: list[str] = []
    first_line = 1
    invalid = 0
    for lines in read_blocks(input_path, block_chars, encoding=encoding):
        invalid += sum("\ufffd" in line for line in lines)  # what the reader's check_text counts
        done = model.averager.average(model.averager.encode(_text(lines)), rule, scale, 0.0, kernel="serial")
        rows, counts = done.rows, done.counts
        norms = np.linalg.norm(rows, axis=1).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = (rows.astype(np.float64) @ q) / norms
        cos[(counts == 0) | ~np.isfinite(cos)] = -np.inf
        # the matrix product may differ in the last bit from row to row: ties told at 1e-12, in line order
        cos = np.round(cos, 12)
        top = np.argsort(-cos, kind="stable")[:topn]
        top = top[np.isfinite(cos[top])]
        cand_cos = np.concatenate([best_cos, cos[top]])
        cand_line = np.concatenate([best_line, first_line + top])
        cand_text = best_text + [lines[i].rstrip("\r\n") for i in top.tolist()]
        order = np.lexsort((cand_line, -cand_cos))[:topn]
        best_cos, best_line = cand_cos[order], cand_line[order]
        best_text = [cand_text[i] for i in order.tolist()]
        first_line += len(lines)
    if invalid:
        (warn or note)(invalid_utf8_warning("<stdin>" if str(input_path) == "-" else str(input_path), invalid))
    if first_line == 1:
        raise CorpusError(f"{input_path}: has no lines to search")
    if not best_text:
        raise CorpusError(f"{input_path}: none of its {first_line - 1:,} lines has anything to average "
                          "(no known word), so none can be compared")
    return [(float(c), int(n), t) for c, n, t in zip(best_cos, best_line, best_text)]
