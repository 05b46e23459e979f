"""Exporting a model: one table of formats (:data:`FORMATS`), one entry point (:func:`export`).

``export(model, path, fmt, **options)`` checks the options and ``path`` for the format, leaves
out the words ``min_count`` and ``limit`` leave out (:func:`subset`), calls the format's writer
and returns an :class:`ExportResult` that says what was written. The command ``scbow-numba
export``, ``Model.export`` and ``model.wv.save_word2vec_format`` call it.

A new format is one row in :data:`FORMATS` (its name, whether it writes a file or a folder, the
options it takes, a line of description), one writer (``writer(model, path, options) ->
ExportResult``) and one test in ``tests/test_export.py``.

The formats:

- ``word2vec``: a text or binary file that gensim, fastText and most tools read. By default the
  word vectors: the word part's columns of a model with one (what word similarity lives on),
  else the whole rows; ``part`` chooses (:func:`default_part`, :func:`part_columns`).
- ``sentence-transformers`` and ``model2vec``: a folder those libraries load offline. Both embed a
  sentence as we do, the mean of static token rows. What travels: ``tokenizer.json``
  (:mod:`scbow.vectors.hubtokenizer`, splitting as :func:`scbow.text.tokenize.tokenize` does); the
  rows in ``model.safetensors``, written here, with one more row, zeros, for ``[UNK]`` (model2vec
  drops unknown tokens before averaging, sentence-transformers averages the zero row in, which
  scales the sentence vector but leaves its direction, and so every cosine, as ours under
  ``unknown="omit"``); the libraries' configuration files and a model card (``README.md``).
  Unknown words travel as pieces (:mod:`scbow.vectors.pieces`): the tokenizer is a WordPiece
  model over the words and the pieces, which get rows of their own, so the folder embeds as
  ``Model.encode(..., unknown="pieces")`` does, the default of models trained now (a model whose
  rule is ``omit`` exports a plain word table: unknown words left out). A model that hashes whole
  words (trained before pieces) cannot carry that rule; its folders carry pieces. ``add_words``
  adds rows for the words of given files (a corpus's words below the minimum count, say)
  holding the very vectors our ``unknown="hash"`` gives them: for models that hash.

Every output is written beside its path and renamed into place (:mod:`scbow.files`); a user's
file or folder is never replaced. Neither sentence-transformers nor model2vec is imported here:
the folders are plain JSON and bytes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ModelError
from ..files import atomic_dir, atomic_file, foreign
from ..outputs import check_output_file, register_kind
from ..progress import plural
from ..reading import os_error_text
from .hubtokenizer import tokenizer_json

# the files each folder holds (an existing folder of the same kind is replaced whole)
ST_FILES = ("README.md", "config_sentence_transformers.json", "modules.json", "0_StaticEmbedding")
M2V_FILES = ("README.md", "config.json", "model.safetensors", "tokenizer.json", "modules.json")
ST_MODULE = "sentence_transformers.models.StaticEmbedding"


@dataclass(frozen=True)
class ExportFormat:
    """A row of :data:`FORMATS`."""

    name: str
    folder: bool  # writes a folder (else a file)
    description: str  # one line
    writer: Callable[..., "ExportResult"]  # writer(model, path, options: ExportOptions) -> ExportResult
    options: tuple[str, ...] = ()  # the options of its own (min_count and limit apply to every format)
    files: tuple[str, ...] = ()  # a folder's names: an existing folder of only these is replaced
    load: str | None = None  # how to load it, with {path}


@dataclass(frozen=True)
class ExportOptions:
    """What a writer is given besides the model (the :func:`subset` of ``whole``) and the path."""

    format: str
    whole: object  # the model before min_count and limit left words out
    binary: bool | None = None
    part: str | None = None
    add_words: tuple = ()
    license: str | None = None
    note: Callable[[str], None] | None = None


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
    tokenizer_version: str | None = None
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
                 f"version {self.tokenizer_version}){left}"]
        load = FORMATS[self.format].load
        return lines + ([f"load it with {load.format(path=str(self.path))}"] if load else [])


# ---------------------------------------------------------------------------------------
# word2vec files

PARTS = ("all", "sentence", "word")


def default_part(model) -> str:
    """The columns a word2vec export writes by default: ``"word"`` for a model with a word part
    (:attr:`Model.parts`; what word similarity lives on, and what gensim's neighbours should
    use), else ``"all"``, the whole rows."""
    return "word" if "word" in model.parts else "all"


def part_columns(model, part: str | None = None) -> np.ndarray:
    """float32 rows of ``model``: all columns, or those of one part (None: :func:`default_part`);
    ModelError for a part the model lacks."""
    part = default_part(model) if part is None else part
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    vectors = np.asarray(model.vectors, dtype=np.float32)
    if part == "all":
        return vectors
    parts = model.parts
    if part not in parts or (part == "sentence" and "word" not in parts):
        raise ModelError(f"the model has no word part (it was trained with --word-passes 0, or is not ours); "
                         f"--part {part} needs one")
    lo, hi = parts[part]
    return vectors[:, lo:hi]


def export_word2vec(model, path: os.PathLike, binary: bool = False, part: str | None = None) -> Path:
    """Write the vectors in word2vec text or binary format (atomically).

    ``part``: ``"all"`` the whole rows (what sentences are averaged from), ``"sentence"`` or
    ``"word"`` one part's columns of a model with a word part (:attr:`Model.parts`); None:
    :func:`default_part`."""
    path = check_output_file(path, "vectors.txt")
    vectors = part_columns(model, part)
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


def _write_word2vec(model, path: Path, options: ExportOptions) -> ExportResult:
    # gensim's and word2vec's convention: vectors.bin is binary
    binary = path.name.lower().endswith(".bin") if options.binary is None else bool(options.binary)
    part = default_part(model) if options.part is None else options.part
    columns = part_columns(model, part).shape[1]
    export_word2vec(model, path, binary=binary, part=part)
    return ExportResult("word2vec", path, len(model), columns, part, len(model), binary=binary)


# ---------------------------------------------------------------------------------------
# sentence-transformers and model2vec folders


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a sentence-transformers folder"`` or ``"a model2vec folder"`` (what ``export`` writes; one
    from elsewhere too) when ``directory`` is one (:func:`scbow.outputs.kind_of`)."""
    if not (directory / "modules.json").is_file():
        return None
    if (directory / "0_StaticEmbedding" / "model.safetensors").is_file():
        return "a sentence-transformers folder"
    if (directory / "model.safetensors").is_file() and (directory / "tokenizer.json").is_file():
        return "a model2vec folder"
    return None


def write_safetensors(path: os.PathLike, tensors: dict, metadata: dict | None = None) -> None:
    """Write float32 2-D arrays as a safetensors file (what ``safetensors.numpy.save_file``
    writes: u64 header length, JSON header padded with spaces to 8 bytes, the data), a row
    block at a time, so a memory-mapped matrix is never copied whole."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, array in tensors.items():
        size = int(np.prod(array.shape)) * 4
        header[name] = {"dtype": "F32", "shape": [int(n) for n in array.shape], "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for array in tensors.values():
            for start in range(0, len(array), 1 << 14):
                fh.write(np.ascontiguousarray(array[start:start + (1 << 14)], dtype="<f4").tobytes())


def hash_norm(model) -> float:
    """The norm of the hashed vector ``Model.embed(..., unknown="hash")`` gives an unknown word (the hash
    rule's scale, which is the model's own only when its rule is hash)."""
    return model.unknown_scale("hash") * model.unknown_norm()


def export_rows(model, extra_words=(), whole=None, pieces: bool = False) -> tuple[list[str], np.ndarray, list[str], int]:
    """``(tokens, rows, added, restored)``: the tokens of the exported vocabulary (the model's words,
    then the ``extra_words`` it lacks, in their order, once each, then with ``pieces`` the pieces
    of ``model.pieces`` not among them), their float32 rows, the unknown token's row (zeros)
    last; ``added``: the extra words kept. An added word's row is the vector
    ``Model.embed(..., unknown="hash")`` of ``whole`` gives it (``whole``: the model that ``model``
    is a :func:`subset` of; default ``model``): its own trained row when ``whole`` has it (one of
    the ``restored``), else its hashed vector at :func:`hash_norm` of ``whole``. A piece's row is
    its hashed vector at ``Model.unknown_vectors``' norm for pieces (of ``whole``)."""
    from .numeric import hashed_vectors

    words = list(model.vocab.words)
    known = set(words)
    added = []
    for word in extra_words:
        if word not in known and word:
            known.add(word)
            added.append(word)
    new = [p for p in model.pieces.new if p not in known] if pieces else []
    rows = np.zeros((len(words) + len(added) + len(new) + 1, model.dim), dtype=np.float32)
    head = rows[:len(words)]
    for start in range(0, len(words), 1 << 14):
        head[start:start + (1 << 14)] = np.asarray(model.vectors[start:start + (1 << 14)], dtype=np.float32)
    whole = model if whole is None else whole
    own = [whole.vocab.index.get(word) for word in added]  # a word the subset left out: its trained row
    hashed = [i for i, j in enumerate(own) if j is None]
    if hashed:
        rows[[len(words) + i for i in hashed]] = hashed_vectors([added[i] for i in hashed], model.dim, hash_norm(whole))
    for i, j in enumerate(own):
        if j is not None:
            rows[len(words) + i] = whole.vectors[j]
    if new:
        norm = whole.unknown_scale("pieces") * whole.unknown_norm()
        rows[len(words) + len(added):-1] = hashed_vectors(new, model.dim, norm)
    return words + added + new, rows, added, len(added) - len(hashed)


def words_of(paths, tokenize, min_count: int = 1) -> list[str]:
    """The tokens of the text files ``paths`` (compressed too) seen at least ``min_count`` times,
    most frequent first (``export --add-words``). Binary data is refused as ``train`` refuses it
    (``check_text``): the words of a ``.npy`` file or a program are no words."""
    from collections import Counter

    from ..text.reader import check_text, open_text

    counts = Counter()
    for path in paths:
        with open_text(path) as fh:
            first = True
            while True:
                block = fh.read(1 << 22)
                if not block:
                    break
                if not block.endswith("\n"):  # whole lines only: a word is never cut in two
                    block += fh.readline()
                check_text(path, block, at_start=first)
                first = False
                counts.update(tokenize(block))
    return [w for w, n in counts.most_common() if n >= min_count]


def _yaml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML string


def model_card(model, fmt: str, n_rows: int, added: int, name: str, license: str | None = None,
               restored: int = 0, pieces: int = 0) -> str:
    """README.md for the folder: YAML front matter the Hugging Face hub and model2vec read, and
    what the model is, what it was trained on, its recorded scores and how to load it."""
    library = "sentence-transformers" if fmt == "sentence-transformers" else "model2vec"
    tags = [library, "sentence-similarity", "feature-extraction", "static-embeddings", "siamese-cbow", "scbow-numba"]
    if fmt == "model2vec":
        tags.insert(1, "sentence-transformers")  # the folder loads there too
    front = ["---", f"library_name: {library}", "tags:", *[f"- {t}" for t in tags], "language:", "- en"]
    if license:
        front.append(f"license: {_yaml_str(license)}")
    front += ["pipeline_tag: sentence-similarity", "---", ""]
    info, config = model.info, model.config
    corpus = info.get("corpus") if isinstance(info.get("corpus"), dict) else {}
    lines = [f"# {name}", "",
             "Static sentence embeddings from scbow-numba (Siamese CBOW, Kenter et al. 2016): "
             "a sentence vector is the mean of its words' rows. No transformer, no GPU: encoding is a table look-up.",
             "", "## What it is", ""]
    files = corpus.get("files")
    if isinstance(files, list) and files:
        lines.append(f"- Trained on: {', '.join(os.path.basename(str(f)) for f in files)}"
                     + (f" ({corpus['raw_tokens']:,} tokens, {corpus.get('sentences', 0):,} sentences)"
                        if isinstance(corpus.get("raw_tokens"), int) else ""))
    elif info.get("source"):
        lines.append(f"- Vectors from: {os.path.basename(str(info['source']))}")
    lines.append(f"- Vocabulary: {len(model.vocab):,} words"
                 + (f" (seen at least {corpus['min_count']} times)" if isinstance(corpus.get("min_count"), int) else "")
                 + (f", and {added:,} more words" + (f", {restored:,} of them left out above with their trained rows, the "
                                                      "others" if restored else "")
                    + " with the hashed vectors scbow-numba gives unknown words" if added else "")
                 + (f", and {pieces:,} pieces that unknown words are split into" if pieces else "")
                 + f"; {model.dim} dimensions; {n_rows:,} rows with the unknown token's")
    shown = ("dim", "word_passes", "word_dim", "epochs", "negatives", "frequency_weight", "common_components",
             "unknown", "seed")
    settings = ", ".join(f"{k} {config[k]}" for k in shown if k in config)
    if settings:
        lines.append(f"- Settings: {settings}")
    rule = {"1": "lowercase, then words and single punctuation marks",
            "2": "NFKC, typographic quotes as ASCII, lowercase, then words and single punctuation marks",
            "3": "NFKC, typographic quotes as ASCII, lowercase, then words (with their combining marks) and single "
                 "punctuation marks",
            "4": "NFKC, typographic quotes as ASCII, lowercase, then each Han ideograph, each kana and each Thai "
                 "cluster, words (with their combining marks) and single punctuation marks"}
    lines.append(f"- Tokenizer: scbow-numba tokenizer version {model.tokenizer_version} "
                 f"({rule[model.tokenizer_version]}), reproduced by `tokenizer.json`")
    curve = info.get("curve")
    points = curve.get("points") if isinstance(curve, dict) else None
    if isinstance(points, list) and points and isinstance(points[-1], dict) and isinstance(points[-1].get("dev"), dict):
        dev = points[-1]["dev"]

        def score(key):  # a correlation the curve could not compute (recorded as null) is not a number
            return "n/a" if dev.get(key) is None else f"{dev[key]:.4f}"

        lines += ["", "## Scores", "",
                  f"STS Benchmark dev set ({dev.get('pairs', '?')} pairs), recorded by scbow-numba at the end of training "
                  f"(unknown words: {curve.get('unknown', 'omit')}): Pearson {score('pearson')}, "
                  f"Spearman {score('spearman')}."]
        tests = points[-1].get("test")
        if isinstance(tests, dict) and isinstance(tests.get("pearson_mean"), (int, float)):
            sets = tests.get("pearson") if isinstance(tests.get("pearson"), dict) else {}
            lines.append(f"Mean Pearson over {len(sets) or 'the'} STS test sets: {tests['pearson_mean']:.4f}.")
    load = ["```python", "from sentence_transformers import SentenceTransformer", "",
            'model = SentenceTransformer("PATH")  # this folder', 'embeddings = model.encode(["A first sentence.", '
            '"A second one."])', "```"]
    if fmt == "model2vec":
        load = ["```python", "from model2vec import StaticModel", "", 'model = StaticModel.from_pretrained("PATH")  '
                "# this folder", 'embeddings = model.encode(["A first sentence.", "A second one."])', "```", "",
                "sentence-transformers loads this folder too: `SentenceTransformer(\"PATH\")`."]
    own = model.unknown_rule[0]
    if pieces:
        how = ("A word outside the vocabulary is split into pieces (WordPiece: the vocabulary's words and their runs "
               "of up to two characters, each piece a row), as scbow-numba splits it, so cosine similarities equal "
               "scbow-numba's (`scbow.load(MODEL).encode(sentences, unknown=\"pieces\")`"
               + (", the model's own rule)." if own == "pieces" else
                  "). The model's own rule gives each unknown word one hashed vector, which a table of tokens cannot "
                  "carry; pieces score a little higher on the STS-B dev set.")
               + " A sentence with nothing to average (no known word, no piece) embeds as zeros.")
    else:
        how = ("Words outside the vocabulary are left out, as the model's own rule does. A sentence with no known "
               "word embeds as zeros. Cosine similarities equal scbow-numba's "
               "(`scbow.load(MODEL).encode(sentences, unknown=\"omit\")`).")
    lines += ["", "## Use", "", *load, "", how]
    return "\n".join(front + lines) + "\n"


def write_folder(model, path: os.PathLike, fmt: str, extra_words=(), license: str | None = None,
                 whole=None) -> dict:
    """Write ``model`` as a sentence-transformers or model2vec folder at ``path``, atomically
    (a temporary folder beside it, renamed into place; a folder already there is replaced
    only when it holds nothing but this format's files). ``extra_words``, ``whole``: as
    in :func:`export_rows`. Returns what was written."""
    if fmt not in ("sentence-transformers", "model2vec"):
        raise ValueError(f"fmt must be sentence-transformers or model2vec, got {fmt!r}")
    path = Path(path)
    pieces = (whole or model).unknown_rule[0] != "omit"  # what the model does with unknown words, as far as it travels
    tokens, rows, added, restored = export_rows(model, extra_words, whole, pieces)
    n_pieces = len(tokens) - len(model.vocab) - len(added)
    max_chars = max([model.pieces.max_chars, *map(len, added)]) if pieces else None
    spec = tokenizer_json(tokens, model.tokenizer_version, max_chars)
    own = FORMATS[fmt].files
    card = model_card(model, fmt, len(rows), len(added), path.name or "model", license, restored, n_pieces)
    try:
        with atomic_dir(path, same_kind=lambda d: foreign(d, own)) as tmp:
            if fmt == "sentence-transformers":
                inner = tmp / "0_StaticEmbedding"
                inner.mkdir()
                write_safetensors(inner / "model.safetensors", {"embedding.weight": rows})
                (inner / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
                _json(tmp / "modules.json", [{"idx": 0, "name": "0", "path": "0_StaticEmbedding", "type": ST_MODULE}])
                _json(tmp / "config_sentence_transformers.json",
                      {"model_type": "SentenceTransformer", "prompts": {}, "default_prompt_name": None,
                       "similarity_fn_name": "cosine",
                       # read by model2vec, which loads this folder too (sentence-transformers ignores them):
                       # no cut at 512 tokens
                       "max_length": None, "normalize": False})
            else:
                write_safetensors(tmp / "model.safetensors", {"embeddings": rows})
                (tmp / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
                # max_length null: model2vec cuts nothing (its default cuts at 512 tokens)
                _json(tmp / "config.json", {"model_type": "model2vec", "architectures": ["StaticModel"],
                                            "tokenizer_name": None, "apply_pca": None, "hidden_dim": int(model.dim),
                                            "normalize": False, "max_length": None, "pooling": "mean",
                                            "embedding_dtype": "float32"})
                _json(tmp / "modules.json", [{"idx": 0, "name": "0", "path": ".", "type": ST_MODULE}])
            (tmp / "README.md").write_text(card, encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"cannot write {path}: {os_error_text(exc)}") from None
    return {"rows": len(rows), "words": len(model.vocab), "added": len(added), "restored": restored, "dim": int(model.dim),
            "unk": spec["model"]["unk_token"], "pieces": n_pieces}


def _json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def subset(model, min_count: int = 0, limit: int = 0):
    """``model`` with only its words seen at least ``min_count`` times (a word without a recorded
    count, 0, is kept) and at most the first ``limit`` of them (0: no limit); ``model`` itself
    when nothing is left out. Its rows stay the model's rows: an exported word embeds as before."""
    from ..text.vocab import Vocab

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


def _write_folder(model, path: Path, options: ExportOptions) -> ExportResult:
    extra = []
    if options.add_words:
        if options.note is not None:
            options.note(f"reading the words of {plural(len(options.add_words), 'file')}...")
        extra = words_of(options.add_words, model.tokenize)
    report = write_folder(model, path, options.format, extra_words=extra, license=options.license,
                          whole=options.whole)
    return ExportResult(options.format, path, report["rows"], report["dim"], "all", report["words"],
                        added=report["added"], restored=report["restored"], unk=report["unk"],
                        tokenizer_version=model.tokenizer_version, pieces=report["pieces"])


def check_folder_output(path: os.PathLike, fmt: str) -> None:
    """ModelError unless a ``fmt`` folder may be written at ``path``: a new folder, or one this format
    wrote (replaced whole); never the current folder, a file, a folder of the user's or of another
    format, or a place inside one of the tool's outputs."""
    from ..files import output_path, resolved
    from ..outputs import refuse_inside_ours

    output, spec = Path(path), FORMATS[fmt]
    if output.name in ("", "..") or resolved(output) == resolved(Path.cwd()):  # a link loop resolves, not raises
        raise ModelError(f"-o {output}: give the new folder a name (the export replaces a folder whole; "
                         "not the current one)")
    if os.path.exists(output) and not output.is_dir():  # a dangling link is no folder yet: its target is made
        raise ModelError(f"-o {output}: exists and is not a folder; a {fmt} export is a folder (choose a new name)")
    output_path(output)  # a link into a folder that does not exist is refused, as every -o LINK is
    refuse_inside_ours(output)
    why = foreign(output, spec.files) if output.is_dir() else None
    if why is not None:
        for other in FORMATS.values():
            if other.folder and other is not spec and foreign(output, other.files) is None:  # one we wrote
                raise ModelError(f"-o {output}: holds a {other.name} export; a {fmt} export is not written over "
                                 "it (choose a new name)")
        raise ModelError(f"-o {output}: {why}, so it is not replaced (move that away)")


# ---------------------------------------------------------------------------------------
# the formats: a new one is a row here, its writer above, and its test in tests/test_export.py

FORMATS = {
    "word2vec": ExportFormat(
        "word2vec", folder=False, writer=_write_word2vec, options=("binary", "part"),
        description="the word vectors as a text or binary file (gensim, fastText)"),
    "sentence-transformers": ExportFormat(
        "sentence-transformers", folder=True, writer=_write_folder, options=("add_words", "license"), files=ST_FILES,
        load="SentenceTransformer({path!r})",
        description="a folder SentenceTransformer(path) loads: the rows, tokenizer.json, a model card"),
    "model2vec": ExportFormat(
        "model2vec", folder=True, writer=_write_folder, options=("add_words", "license"), files=M2V_FILES,
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
    if len(names) == 1:
        return f"--format {names[0]}"
    return ("the folder formats" if all(FORMATS[n].folder for n in names) else "the formats") + f" ({', '.join(names)})"


def check_export(path: os.PathLike, fmt: str, *, binary: bool | None = None, part: str | None = None,
                 add_words=(), license: str | None = None) -> ExportFormat:
    """Every check an export makes before it reads the model: the format, the options it takes, the
    output ``path`` and the ``add_words`` files. Returns the format's row; ModelError (CorpusError for
    an ``add_words`` file) with one line for the first thing wrong."""
    from ..text.reader import check_regular

    spec = export_format(fmt)
    if part is not None and part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    given = {"add_words": bool(add_words), "license": license is not None, "binary": binary is not None,
             "part": part not in (None, "all")}
    for option in ("add_words", "license", "binary", "part"):
        if given[option] and option not in spec.options:
            if option == "part" and spec.folder:
                raise ModelError(f"--part {part}: a {spec.name} folder embeds sentences with the whole rows; "
                                 f"--part applies to {_takers('part')}")
            verb = "apply" if option == "binary" else "applies"
            raise ModelError(f"{FLAGS[option]} {verb} to {_takers(option)}"
                             + (f", not {spec.name}" if option == "binary" else ""))
    if spec.folder:
        check_folder_output(path, spec.name)
    for file in add_words:
        check_regular(file, f"--add-words {file}")
    return spec


def export(model, path: os.PathLike, fmt: str = "word2vec", *, binary: bool | None = None, part: str | None = None,
           min_count: int = 0, limit: int = 0, add_words=(), license: str | None = None,
           note: Callable[[str], None] | None = None) -> ExportResult:
    """Write ``model`` at ``path`` in the format ``fmt`` (a name of :data:`FORMATS`) and say what was written.

    ``binary`` (word2vec; None: binary for a name ending in ``.bin``), ``part`` (word2vec: ``"all"``,
    ``"sentence"`` or ``"word"``; None: :func:`default_part`), ``min_count`` and ``limit`` (every
    format: the words seen fewer times, or past the first ``limit``, are left out; :func:`subset`),
    ``add_words`` (folders: text files whose words get rows, :func:`export_rows`), ``license``
    (folders: named in the model card); ``note`` is given a line before a long step."""
    spec = check_export(path, fmt, binary=binary, part=part, add_words=add_words, license=license)
    if add_words and model.unknown_rule[0] == "pieces":
        raise ModelError("--add-words: this model splits unknown words into pieces, which its folders carry, so they "
                         "embed every word as the model does already; --add-words is for models that hash unknown words")
    if "part" in spec.options:
        part = default_part(model) if part is None else part
        part_columns(model, part)  # a part the model lacks: before anything is left out
    kept = subset(model, min_count, limit)
    options = ExportOptions(spec.name, model, binary=binary, part=part, add_words=tuple(add_words), license=license,
                            note=note)
    result = spec.writer(kept, Path(path), options)
    return dataclasses.replace(result, left_out=len(model) - len(kept))
