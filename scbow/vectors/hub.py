"""A model as a folder that sentence-transformers or model2vec loads (``export --format``).

Both libraries embed a sentence as we do: the mean of static token rows. What travels is

- ``tokenizer.json``: a Hugging Face ``tokenizers`` tokenizer that reproduces
  :func:`scbow.text.tokenize.tokenize` under the model's own tokenizer version: a
  ``WordLevel`` model over our vocabulary with an ``[UNK]`` token, a normalizer (versions 2
  and 3: NFKC, the typographic quotes as ASCII, lowercase; version 1: lowercase) and a
  pre-tokenizer that keeps the matches of our token regex. The regex is written with
  Python's own ``\\w``, ``\\s`` and (version 3) combining marks as explicit code-point ranges
  (:func:`python_classes`, :func:`scbow.text.tokenize.mark_ranges`):
  the Oniguruma engine of ``tokenizers`` reads those classes differently (``1⅞``);
- the rows in ``model.safetensors``, written here (the format is an 8-byte header length,
  a JSON header and the raw little-endian data), with one more row, zeros, for ``[UNK]``:
  model2vec drops unknown tokens before averaging, and sentence-transformers averages
  the zero row in, which scales the sentence vector but leaves its direction (and so
  every cosine) as ours under ``unknown="omit"``;
- the libraries' configuration files and a model card (``README.md``).

Our hashed vectors for unknown words cannot travel: an exported model leaves unknown
words out. ``extra_words`` adds rows for given words (a corpus's words below the minimum
count, say) holding the very vectors our ``unknown="hash"`` gives them, so sentences whose
unknown words are among them embed as ours under hashing.

sentence-transformers is never imported here: the folders are plain JSON and bytes.
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..outputs import register_kind
from ..text.tokenize import code_ranges

FORMATS = ("word2vec", "sentence-transformers", "model2vec")
UNK = "[UNK]"
# the files each folder holds (an existing folder of the same kind is replaced whole)
ST_FILES = ("README.md", "config_sentence_transformers.json", "modules.json", "0_StaticEmbedding")
M2V_FILES = ("README.md", "config.json", "model.safetensors", "tokenizer.json", "modules.json")
ST_MODULE = "sentence_transformers.models.StaticEmbedding"


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


# ---------------------------------------------------------------------------------------
# the tokenizer


@lru_cache(maxsize=1)
def python_classes() -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """``(word, space)``: the code-point ranges (inclusive) that Python's ``re`` matches with
    ``\\w`` and with ``\\s`` in a str pattern, read from ``re`` itself over every code point
    (surrogates left out: no UTF-8 text holds them)."""
    out = []
    for cls in (r"\w+", r"\s+"):
        ranges = []
        for lo, hi in ((0, 0xD7FF), (0xE000, sys.maxunicode)):
            text = "".join(map(chr, range(lo, hi + 1)))
            for m in re.finditer(cls, text):
                ranges.append((lo + m.start(), lo + m.end() - 1))
        out.append(tuple(ranges))
    return out[0], out[1]


@lru_cache(maxsize=1)
def sigma_classes() -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """``(cased, ignorable)``: the code points Python's ``str.lower`` treats as cased (and not
    case-ignorable) and as case-ignorable when it decides whether a capital sigma is final
    (``ς``: after a cased letter, case-ignorable ones between, and not before one), read from
    ``str.lower`` itself. The ``tokenizers`` Lowercase lowers letter by letter (always ``σ``)."""
    codes = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    cased = [c for c in codes if (chr(c) + "\u03a3").lower()[-1] == "\u03c2"]
    taken = set(cased)
    ignorable = [c for c in codes if c not in taken and ("A" + chr(c) + "\u03a3").lower()[-1] == "\u03c2"]
    return code_ranges(cased), code_ranges(ignorable)


def _ranges(ranges) -> str:
    """The inside of an Oniguruma character class: ``\\x{41}-\\x{5a}...``."""
    return "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges)


def token_pattern(version: str) -> str:
    """Our token regex of tokenizer ``version`` with Python's classes spelled out: a word of
    version 3 is ``\\w[\\w MARKS]*`` (:func:`scbow.text.tokenize.mark_ranges`), of versions 1 and
    2 ``\\w+``; then ``(?:['’]WORD)*|[^\\w\\s]``."""
    from ..text.tokenize import mark_ranges

    word, space = python_classes()
    w = f"[{_ranges(word)}]"
    one = f"{w}[{_ranges(word)}{_ranges(mark_ranges())}]*" if version == "3" else f"{w}+"
    return f"{one}(?:['\\x{{2019}}]{one})*|[^{_ranges(word)}{_ranges(space)}]"


SIGMA_LOOKBEHIND = 16


def _lowercase() -> list[dict]:
    """Python's ``str.lower``: a capital sigma made final (``ς``) where Python makes it so, then
    the letter-by-letter Lowercase of ``tokenizers``."""
    cased, ignorable = sigma_classes()
    c, i = f"[{_ranges(cased)}]", f"[{_ranges(ignorable)}]"
    # Python looks back past any number of case-ignorable characters; a lookbehind of unbounded
    # length made the normalizer about 100 times slower (10 ms against 0.1 ms on 2,500 characters),
    # so it looks back past at most SIGMA_LOOKBEHIND of them (an apostrophe or a combining mark
    # or two is what text holds)
    final = f"(?<={c}{i}{{0,{SIGMA_LOOKBEHIND}}})\\x{{3a3}}(?!{i}*{c})"
    return [{"type": "Replace", "pattern": {"Regex": final}, "content": "\u03c2"}, {"type": "Lowercase"}]


# Characters whose NFKC form Python (Unicode 14.0 and later) knows and the NFKC of ``tokenizers``
# (an older table, Unicode 12.0) does not: each is replaced by Python's form before its NFKC.
# Found by checking every code point (tests/test_export.py, the slow test of every character).
NFKC_NEWER = ((0x32FF, 0x32FF), (0xA7F2, 0xA7F4), (0xAB69, 0xAB69), (0x10781, 0x10785), (0x10787, 0x107B0),
              (0x107B2, 0x107BA), (0x1F16C, 0x1F16C), (0x1FBF0, 0x1FBF9))


def _nfkc() -> list[dict]:
    import unicodedata

    fixes = []
    for lo, hi in NFKC_NEWER:
        for c in range(lo, hi + 1):
            target = unicodedata.normalize("NFKC", chr(c))
            if target != chr(c):  # a Python whose table lacks it too: nothing to fix
                fixes.append({"type": "Replace", "pattern": {"String": chr(c)}, "content": target})
    return fixes + [{"type": "NFKC"}]


def _normalizer(version: str) -> dict:
    if version == "1":
        return {"type": "Sequence", "normalizers": _lowercase()}
    if version not in ("2", "3"):  # the two fold alike; they differ in their words (token_pattern)
        raise ModelError(f"tokenizer version {version!r} cannot be exported (this scbow-numba writes 1, 2 and 3)")
    return {"type": "Sequence", "normalizers": [
        *_nfkc(),
        {"type": "Replace", "pattern": {"Regex": "[\\x{2018}\\x{2019}\\x{201a}\\x{201b}]"}, "content": "'"},
        {"type": "Replace", "pattern": {"Regex": "[\\x{201c}\\x{201d}\\x{201e}\\x{201f}]"}, "content": '"'},
        *_lowercase(),
    ]}


def unk_token(words) -> str:
    """``[UNK]``, or ``[UNK1]``... when the vocabulary already has that word (vectors from elsewhere).
    Our tokenizer never yields it: ``[`` is a token of its own."""
    taken = set(words)
    token, n = UNK, 0
    while token in taken:
        n += 1
        token = f"[UNK{n}]"
    return token


def tokenizer_json(words: list[str], version: str) -> dict:
    """A ``tokenizers`` tokenizer (as its JSON) that splits as ``scbow.text.tokenize`` does under
    tokenizer ``version`` and gives word ``words[i]`` id i; any other token gets the id
    ``len(words)``, the unknown token (:func:`unk_token`). The unknown token is not an added
    token: added tokens are matched in the raw text, where ``[UNK]`` is three of our tokens."""
    unk = unk_token(words)
    vocab = {w: i for i, w in enumerate(words)}
    vocab[unk] = len(words)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": _normalizer(str(version)),
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": token_pattern(str(version))}, "behavior": "Removed",
                          "invert": True},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": unk},
    }


# ---------------------------------------------------------------------------------------
# safetensors


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


# ---------------------------------------------------------------------------------------
# the folders


def hash_norm(model) -> float:
    """The norm of the hashed vector ``Model.embed(..., unknown="hash")`` gives an unknown word."""
    return model.unknown_rule[1] * model.unknown_norm()


def export_rows(model, extra_words=(), whole=None) -> tuple[list[str], np.ndarray, list[str], int]:
    """``(words, rows, added, restored)``: the words of the exported vocabulary (the model's, then
    the ``extra_words`` it lacks, in their order, once each), their float32 rows, the unknown
    token's row (zeros) last; ``added``: the extra words kept. An added word's row is the vector
    ``Model.embed(..., unknown="hash")`` of ``whole`` gives it (``whole``: the model that ``model``
    is a :func:`subset` of; default ``model``): its own trained row when ``whole`` has it (one of
    the ``restored``), else its hashed vector at :func:`hash_norm` of ``whole``."""
    from .numeric import hashed_vectors

    words = list(model.vocab.words)
    known = set(words)
    added = []
    for word in extra_words:
        if word not in known and word:
            known.add(word)
            added.append(word)
    rows = np.zeros((len(words) + len(added) + 1, model.dim), dtype=np.float32)
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
    return words + added, rows, added, len(added) - len(hashed)


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
               restored: int = 0) -> str:
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
                 + f"; {model.dim} dimensions; {n_rows:,} rows with the unknown token's")
    shown = ("dim", "word_passes", "word_dim", "epochs", "negatives", "frequency_weight", "common_components",
             "unknown", "seed")
    settings = ", ".join(f"{k} {config[k]}" for k in shown if k in config)
    if settings:
        lines.append(f"- Settings: {settings}")
    rule = {"1": "lowercase, then words and single punctuation marks",
            "2": "NFKC, typographic quotes as ASCII, lowercase, then words and single punctuation marks",
            "3": "NFKC, typographic quotes as ASCII, lowercase, then words (with their combining marks) and single "
                 "punctuation marks"}
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
        lines += ["", "Here unknown words are left out of the average (their hashed vectors cannot travel in this "
                  "format), which scores a little lower than scbow-numba's own hashing when the model hashes."]
    load = ["```python", "from sentence_transformers import SentenceTransformer", "",
            'model = SentenceTransformer("PATH")  # this folder', 'embeddings = model.encode(["A first sentence.", '
            '"A second one."])', "```"]
    if fmt == "model2vec":
        load = ["```python", "from model2vec import StaticModel", "", 'model = StaticModel.from_pretrained("PATH")  '
                "# this folder", 'embeddings = model.encode(["A first sentence.", "A second one."])', "```", "",
                "sentence-transformers loads this folder too: `SentenceTransformer(\"PATH\")`."]
    lines += ["", "## Use", "", *load, "",
              "A sentence with no known word embeds as zeros. Cosine similarities equal scbow-numba's "
              "(`scbow.load(MODEL).embed(sentences, unknown=\"omit\")`)."]
    return "\n".join(front + lines) + "\n"


def write_folder(model, path: os.PathLike, fmt: str, extra_words=(), license: str | None = None,
                 whole=None) -> dict:
    """Write ``model`` as a sentence-transformers or model2vec folder at ``path``, atomically
    (a temporary folder beside it, renamed into place; a folder already there is replaced
    only when it holds nothing but this format's files). ``extra_words``, ``whole``: as
    in :func:`export_rows`. Returns what was written."""
    from ..files import atomic_dir, foreign

    if fmt not in ("sentence-transformers", "model2vec"):
        raise ValueError(f"fmt must be sentence-transformers or model2vec, got {fmt!r}")
    path = Path(path)
    words, rows, added, restored = export_rows(model, extra_words, whole)
    spec = tokenizer_json(words, model.tokenizer_version)
    own = ST_FILES if fmt == "sentence-transformers" else M2V_FILES
    card = model_card(model, fmt, len(rows), len(added), path.name or "model", license, restored)
    from ..reading import os_error_text

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
            "unk": spec["model"]["unk_token"]}


def _json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def subset(model, min_count: int = 0, limit: int = 0):
    """``model`` with only its words seen at least ``min_count`` times (a word without a recorded
    count, 0, is kept) and at most the first ``limit`` of them (0: no limit); ``model`` itself
    when nothing is left out. Its rows stay the model's rows: an exported word embeds as before."""
    from ..text.vocab import Vocab
    from .model import Model

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
    smaller = Model(Vocab(words, counts[rows]), np.asarray(model.vectors[rows]), model.config, model.info)
    return smaller
