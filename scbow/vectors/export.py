"""Exporting a model: one table of formats (:data:`FORMATS`) and one entry point (:func:`export`) that
checks the options, leaves out words (:func:`subset`), calls the format's writer and says what it wrote.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ModelError
from ..progress import plural
from ..text.reader import DEFAULT_ENCODING, check_regular, encoding_name
from ..text.tokenize import TOKENIZER_VERSION
from ..text.vocab import Vocab
from .hubfolder import check_folder_output, words_of, write_folder
from .word2vec import export_word2vec, part_columns


@dataclass(frozen=True)
class ExportFormat:
    """A row of :data:`FORMATS`."""

    name: str
    folder: bool  # writes a folder (else a file)
    description: str  # one line
    writer: Callable[..., "ExportResult"]  # writer(model, path, **export's options, fmt, whole) -> ExportResult
    options: tuple[str, ...] = ()  # the options of its own (min_count and limit apply to every format)
    load: str | None = None  # how to load it, with {path}


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote."""

    format: str
    path: Path
    rows: int  # rows written (a folder's with its pieces' and the unknown token's)
    columns: int
    part: str  # the columns: "all" (the whole rows), "sentence" or "word"
    words: int  # the model's words written
    left_out: int = 0  # the model's words min_count and limit left out
    binary: bool | None = None  # word2vec: binary or text
    added: int = 0  # add_words: rows added
    restored: int = 0  # of them, words left out above, with their own rows
    unk: str | None = None  # a folder's unknown token
    pieces: int = 0  # a folder's rows for the pieces of unknown words

    def lines(self) -> list[str]:
        """What the command prints."""
        left = f"; {plural(self.left_out, 'rarer word')} left out" if self.left_out else ""
        if self.format == "word2vec":
            what = {"word": f"{plural(self.words, 'word vector')} (the word part",
                    "sentence": f"{plural(self.words, 'vector')} (the sentence part",
                    "all": f"{plural(self.words, 'vector')} (whole rows"}[self.part]
            return [f"wrote {what}, {plural(self.columns, 'column')}) to {self.path} "
                    f"(word2vec {'binary' if self.binary else 'text'}){left}"]
        lines = [f"wrote a {self.format} folder to {self.path}: {plural(self.rows, 'row')} of "
                 f"{plural(self.columns, 'dim')} ({plural(self.words, 'word')}"
                 + (f", {plural(self.added, 'added word')}" if self.added else "")
                 + (f" ({self.restored:,} left out by --min-count/--limit, with their own rows)" if self.restored else "")
                 + (f", {plural(self.pieces, 'piece')} that unknown words are split into" if self.pieces else "")
                 + f" and {self.unk} for {'what has no pieces' if self.pieces else 'unknown words'}; tokenizer "
                 f"version {TOKENIZER_VERSION}){left}"]
        load = FORMATS[self.format].load
        return lines + ([f"load it with {load.format(path=str(self.path))}"] if load else [])


# The writers: ``model`` is the subset of ``whole`` that min_count and limit leave.

def _write_word2vec(model, path: Path, *, binary, part, **_) -> ExportResult:
    binary = path.name.lower().endswith(".bin") if binary is None else bool(binary)  # as gensim: vectors.bin is binary
    export_word2vec(model, path, binary=binary, part=part)
    return ExportResult("word2vec", path, len(model), part_columns(model, part)[1].shape[1], part, len(model),
                        binary=binary)


def _write_folder(model, path: Path, *, fmt, whole, add_words, license, note, encoding, **_) -> ExportResult:
    if add_words and note is not None:
        note(f"reading the words of {plural(len(add_words), 'file')}...")
    written = write_folder(model, path, fmt, words_of(add_words, model.tokenize, encoding), license, whole)
    return ExportResult(fmt, path, columns=model.dim, part="all", words=len(model.vocab), **written)


# a new format is a row here, its writer in a module of its own, and its test in tests/test_export.py
FORMATS = {
    "word2vec": ExportFormat(
        "word2vec", folder=False, writer=_write_word2vec, options=("binary", "part"),
        description="the word vectors as a text or binary file (gensim, fastText)"),
    "sentence-transformers": ExportFormat(
        "sentence-transformers", folder=True, writer=_write_folder, options=("add_words", "license"),
        load="SentenceTransformer({path!r})",
        description="a folder SentenceTransformer(path) loads: the rows, tokenizer.json, a model card"),
    "model2vec": ExportFormat(
        "model2vec", folder=True, writer=_write_folder, options=("add_words", "license"),
        load="StaticModel.from_pretrained({path!r})",
        description="a folder StaticModel.from_pretrained(path) loads: the rows, tokenizer.json, a model card"),
}
ALIASES = {"st": "sentence-transformers", "sentence_transformers": "sentence-transformers"}
# the options of their own, as the command spells them
FLAGS = {"binary": "--binary/--text", "part": "--part", "add_words": "--add-words", "license": "--license"}


def export_format(name: str) -> ExportFormat:
    """The row of :data:`FORMATS` named ``name`` (any case, or an alias); ModelError for another."""
    found = FORMATS.get(ALIASES.get(name.lower(), name.lower()))
    if found is None:
        raise ModelError(f"--format {name!r}: choose one of {', '.join(FORMATS)}")
    return found


def _takers(option: str) -> str:
    """The formats that take ``option``: ``--format word2vec``, ``the folder formats (a, b)``."""
    names = [f.name for f in FORMATS.values() if option in f.options]
    return f"--format {names[0]}" if len(names) == 1 else f"the folder formats ({', '.join(names)})"


def check_export(path: os.PathLike, fmt: str, *, binary: bool | None = None, part: str | None = None,
                 add_words=(), license: str | None = None, encoding: str = "utf-8") -> ExportFormat:
    """Every check an export makes before it reads the model; the format's row, or one line (ModelError,
    CorpusError) for the first thing wrong."""
    spec = export_format(fmt)
    given = {"add_words": bool(add_words), "license": license is not None, "binary": binary is not None,
             "part": part not in (None, "all")}
    for option, on in given.items():
        if on and option not in spec.options:
            if option == "part" and spec.folder:
                raise ModelError(f"--part {part}: a {spec.name} folder embeds sentences with the whole rows; "
                                 f"--part applies to {_takers('part')}")
            verb = "apply" if option == "binary" else "applies"
            raise ModelError(f"{FLAGS[option]} {verb} to {_takers(option)}"
                             + (f", not {spec.name}" if option == "binary" else ""))
    if spec.folder:
        check_folder_output(path, spec.name)
    if encoding_name(encoding) != DEFAULT_ENCODING and not add_words:
        raise ModelError(f"--encoding {encoding}: it is the encoding of the --add-words files, and none is given")
    for file in add_words:
        check_regular(file, f"--add-words {file}")
    return spec


def subset(model, min_count: int = 0, limit: int = 0):
    """``model`` with only its words seen ``min_count`` times (count 0 kept), at most the first ``limit``
    (0: all); ``model`` itself when none is left out. The rows stay the model's."""
    counts = np.asarray(model.vocab.counts)
    keep = (counts >= min_count) | (counts == 0) if min_count > 1 else np.ones(len(counts), dtype=bool)
    if limit:
        keep[limit:] = False
    if keep.all():
        return model
    if not keep.any():
        raise ModelError(f"--min-count {min_count:,} and --limit {limit:,} leave no word to export")
    rows = np.flatnonzero(keep)
    words = [model.vocab.words[i] for i in rows.tolist()]
    return type(model)(Vocab(words, counts[rows]), np.asarray(model.vectors[rows]), model.config, model.info)


def export(model, path: os.PathLike, fmt: str = "word2vec", *, binary: bool | None = None, part: str | None = None,
           min_count: int = 0, limit: int = 0, add_words=(), license: str | None = None, encoding: str = "utf-8",
           note: Callable[[str], None] | None = None) -> ExportResult:
    """Write ``model`` at ``path`` in the format ``fmt`` (a name of :data:`FORMATS`) and say what was written.

    ``binary`` and ``part`` (``"all"``, ``"sentence"`` or ``"word"``) for word2vec; ``add_words`` (text
    files whose words get rows, read in ``encoding``) and ``license`` for folders; ``min_count`` and
    ``limit`` for every format; ``note`` is given a line before a long step."""
    spec = check_export(path, fmt, binary=binary, part=part, add_words=add_words, license=license, encoding=encoding)
    if add_words and model.unknown_rule[0] == "pieces":
        raise ModelError("--add-words: this model splits unknown words into pieces, which its folders carry, so they "
                         "embed every word as the model does already; --add-words is for models that hash unknown words")
    if "part" in spec.options:  # the default part, and a part the model lacks refused before anything is left out
        part = part_columns(model, part)[0]
    kept = subset(model, min_count, limit)
    result = spec.writer(kept, Path(path), fmt=spec.name, whole=model, binary=binary, part=part,
                         add_words=tuple(add_words), license=license, encoding=encoding, note=note)
    return dataclasses.replace(result, left_out=len(model) - len(kept))
