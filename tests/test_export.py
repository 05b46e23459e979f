"""``export`` (scbow.vectors.export): its table of formats; word2vec files (by default the word part); folders
sentence-transformers and model2vec load offline, whose ``encode`` equals ``Model.encode``, with a tokenizer that splits
as ours does. What StaticEmbedding computes is also checked without sentence-transformers, from the folder's files."""

from __future__ import annotations

import contextlib
import io
import json
import lzma
import os
import random
import re
import shlex
import shutil
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from conftest import CORPUS_1M, DATA_DIR, assert_clean_error, make_runner, missing_data

import scbow
from scbow.cli import main
from scbow.errors import CorpusError
from scbow.outputs import kind_of
from scbow.text.vocab import Vocab
from scbow.use.evaluate import read_sts
from scbow.vectors.card import languages, model_card
from scbow.vectors.export import FORMATS, export, export_format
from scbow.vectors.formats import load_word2vec
from scbow.vectors.hubfolder import write_safetensors
from scbow.vectors.model import Model
from scbow.vectors.numeric import row_cosines

STS_DIR = DATA_DIR / "sts"
CORPUS_10M = DATA_DIR / "corpus" / "gutenberg-10M.txt.xz"
TRAIN = ["--dim", "24", "--epochs", "1", "--word-passes", "0", "--threads", "1", "-q"]


def sts_sentences() -> list[str]:
    if not STS_DIR.is_dir():
        missing_data(f"STS test sets {STS_DIR}")
    out = []
    for path in sorted(STS_DIR.glob("*.tsv")):
        sts = read_sts(path)
        out += sts.first + sts.second
    return list(dict.fromkeys(out))


@pytest.fixture(scope="module")
def corpus(gutenberg_slice):
    return gutenberg_slice(20000)


@pytest.fixture(scope="module")
def ruled(tmp_path_factory, corpus):
    """A small model trained on the slice under each rule for unknown words: {"pieces" (the default), "hash", "omit"}."""
    base = tmp_path_factory.mktemp("export-models")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCBOW_CACHE_DIR", str(base / "cache"))
        for rule in ("pieces", "hash", "omit"):
            flag = [] if rule == "pieces" else ["--unknown", rule]
            result = make_runner().invoke(main, ["train", str(corpus), "-o", str(base / rule), *TRAIN, *flag])
            assert result.exit_code == 0, result.output
    return {rule: base / rule for rule in ("pieces", "hash", "omit")}


@pytest.fixture(scope="module")
def trained(ruled):
    return ruled["pieces"]


@pytest.fixture(scope="module")
def folders(trained, tmp_path_factory):
    base = tmp_path_factory.mktemp("export-folders")
    out = {}
    for fmt in ("model2vec", "sentence-transformers"):
        out[fmt] = base / fmt
        result = make_runner().invoke(main, ["export", "-m", str(trained), "--format", fmt, "-o", str(out[fmt])])
        assert result.exit_code == 0, result.output
    return out


def split(tok, text: str) -> list[str]:
    """The tokens ``tok`` makes of ``text`` (its normalizer, then its pre-tokenizer)."""
    return [piece for piece, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(text))]


def need_tokenizers():
    return pytest.importorskip("tokenizers", reason="tokenizers (installed with model2vec, the test extra) is absent")


def check_lines(tok, model, lines) -> int:
    """Token strings and ids of ``tok`` against ``model.tokenize`` (an unknown word's: its pieces' when ``tok`` is
    a WordPiece model, else the unknown token's); returns the lines checked."""
    index, unk = model.vocab.index, tok.token_to_id(tok.model.unk_token)
    pieces = type(tok.model).__name__ == "WordPiece"
    assert unk == tok.get_vocab_size() - 1 and (pieces or unk == len(model.vocab))

    def ids(token):
        if token in index:
            return [index[token]]
        return [tok.token_to_id(p) for p in model.pieces.split(token)] or [unk] if pieces else [unk]

    for start in range(0, len(lines), 5000):
        block = lines[start:start + 5000]
        for line, enc in zip(block, tok.encode_batch(block, add_special_tokens=False)):
            ours = model.tokenize(line)
            assert split(tok, line) == ours, line
            assert enc.ids == [i for t in ours for i in ids(t)], line
    return len(lines)


# ---------------------------------------------------------------------------------------
# the tokenizer


@pytest.mark.parametrize("corpus_file", [CORPUS_1M, pytest.param(CORPUS_10M, marks=pytest.mark.slow)], ids=["1M", "10M"])
def test_tokenizer_matches_on_sts_and_every_corpus_line(trained, folders, corpus_file):
    if not corpus_file.is_file():
        missing_data(f"real corpus {corpus_file}")
    tok = need_tokenizers().Tokenizer.from_file(str(folders["model2vec"] / "tokenizer.json"))
    with lzma.open(corpus_file, "rt", encoding="utf-8") as fh:
        lines = sts_sentences() + fh.read().splitlines()
    assert check_lines(tok, scbow.load(trained), lines) > (590000 if corpus_file == CORPUS_10M else 85000)


def generated_strings(n: int, seed: int = 0) -> list[str]:
    """``n`` sentences of words, the tokenizer libraries' special tokens (``[UNK]``, ``##s``, ``<s>``...), characters
    NFKC changes, and runs of characters of every Unicode category (drawn from each category in turn)."""
    rng = random.Random(seed)
    categories: dict[str, list[str]] = {}
    for c in range(sys.maxunicode + 1):
        if not 0xD800 <= c <= 0xDFFF:
            categories.setdefault(unicodedata.category(chr(c)), []).append(chr(c))
    names = sorted(categories)
    folding = [ch for chars in categories.values() for ch in chars if unicodedata.normalize("NFKC", ch) != ch]
    specials = ["[UNK]", "[unk]", "[UNK1]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "<s>", "</s>", "<unk>", "##", "##s",
                "\u2581", "\u0120", "\ufeff", "\x00"]
    words = ["the", "man", "road", "king", "İSTANBUL", "ΟΔΟΣ", "naïve", "don’t", "日本語", "ภาษา", "1⅞", "x²"]
    out = []
    for i in range(n):
        parts = []
        for j in range(rng.randint(1, 8)):
            kind = rng.random()
            if kind < 0.3:
                parts.append(rng.choice(words))
            elif kind < 0.5:
                parts.append(rng.choice(specials))
            elif kind < 0.7:
                parts.append(rng.choice(folding))
            else:
                chars = categories[names[(i + j) % len(names)]]
                parts.append("".join(rng.choice(chars) for _ in range(rng.randint(1, 3))))
        out.append(rng.choice([" ", "", "  "]).join(parts) + " the")
    return out


def test_folders_encode_generated_strings_as_encode(trained, tmp_path):
    """The folder embeds odd strings as ``Model.encode`` does: literal special-token spellings,
    characters NFKC expands, every Unicode category."""
    model2vec = pytest.importorskip("model2vec", reason="model2vec (the test extra) is absent")
    model = scbow.load(trained)
    model.export(tmp_path / "m2v", "model2vec")
    sentences = generated_strings(3000)
    ours = model.encode(sentences)
    theirs = model2vec.StaticModel.from_pretrained(str(tmp_path / "m2v")).encode(sentences)
    assert not np.isnan(ours).any()  # every sentence ends in "the"
    assert row_cosines(ours, theirs).min() >= 0.99999


# ---------------------------------------------------------------------------------------
# the libraries


@pytest.mark.parametrize("fmt", ["model2vec", "sentence-transformers"])
def test_either_folder_encodes_as_ours(trained, folders, fmt):
    """model2vec's StaticModel loads either folder and encodes as ours; so does what sentence-transformers'
    StaticEmbedding computes from the folder's own files: encode_batch(add_special_tokens=False), then an EmbeddingBag
    mean over the ids (unknown ones included: their zero row scales, never turns)."""
    model2vec = pytest.importorskip("model2vec", reason="model2vec (the test extra) is absent")
    from safetensors.numpy import load_file  # installed with model2vec

    loaded = model2vec.StaticModel.from_pretrained(str(folders[fmt]))
    # unknown words in pieces; a word of a letter no word has (no pieces); past 512 tokens
    sentences = sts_sentences() + ["", "zzzqqq xxyyq", "ⱥⱥⱥ", "the " * 700 + "end"]
    model = scbow.load(trained)
    assert model.unknown_rule[0] == "pieces" and model.ids("zzzqqq xxyyq")[1] == ["zzzqqq", "xxyyq"]
    ours = model.encode(sentences)  # the model's own rule: its unknown words split into pieces
    theirs = loaded.encode(sentences)
    ok = ~np.isnan(ours).any(axis=1)
    assert ok.sum() > 18000 and ok[-3] and not ok[-2]
    # by value, not only by cosine: a folder saying "normalize": true would give unit vectors of our directions
    np.testing.assert_allclose(theirs[ok], ours[ok], rtol=2e-4, atol=2e-6)
    assert (theirs[~ok] == 0).all()  # nothing to average: zeros there, NaN here
    assert loaded.max_length is None  # long sentences are not cut
    folder = folders[fmt]
    modules = json.loads((folder / "modules.json").read_text())
    assert modules[0]["type"] == "sentence_transformers.models.StaticEmbedding"
    inner = folder / modules[0]["path"]
    weights = load_file(str(inner / "model.safetensors"))
    rows = weights["embedding.weight"] if "embedding.weight" in weights else weights["embeddings"]  # as its load() reads
    tok = need_tokenizers().Tokenizer.from_file(str(inner / "tokenizer.json"))
    static = np.zeros((len(sentences), rows.shape[1]), dtype=np.float32)
    for i, enc in enumerate(tok.encode_batch(sentences, add_special_tokens=False)):
        if enc.ids:
            static[i] = rows[enc.ids].mean(axis=0)
    assert row_cosines(ours[ok], static[ok]).min() >= 0.9999


def test_sentence_transformers_encode_equals_ours(trained, folders):
    st = pytest.importorskip("sentence_transformers",
                             reason="sentence-transformers (the optional st extra, with torch) is not installed")
    sentences = sts_sentences()
    ours = scbow.load(trained).encode(sentences)
    for fmt in ("sentence-transformers", "model2vec"):  # it loads both folders
        loaded = st.SentenceTransformer(str(folders[fmt]), device="cpu")
        theirs = loaded.encode(sentences, convert_to_numpy=True)
        ok = ~np.isnan(ours).any(axis=1)
        assert row_cosines(ours[ok], theirs[ok]).min() >= 0.9999


@pytest.mark.parametrize("smaller", [[], ["--min-count", "40"]], ids=["all-words", "min-count"])
def test_add_words_carry_our_hashed_vectors(ruled, corpus, tmp_path, runner, smaller):
    """A hashing model's added rows (the corpus's words below the minimum count) hold our hashed vectors: a
    sentence of them embeds as ours under unknown="hash"; a word --min-count left out gets its own row."""
    model2vec = pytest.importorskip("model2vec", reason="model2vec (the test extra) is absent")
    trained = ruled["hash"]
    out = tmp_path / "m2v"
    result = runner.invoke(main, ["export", "-m", str(trained), "--format", "model2vec", "-o", str(out),
                                  "--add-words", str(corpus), *smaller])
    assert result.exit_code == 0, result.output
    assert "added word" in result.output
    model = scbow.load(trained)
    loaded = model2vec.StaticModel.from_pretrained(str(out))
    lines = corpus.read_text(encoding="utf-8").splitlines()[:3000]
    if smaller:
        assert "rarer word" in result.output and (np.asarray(model.vocab.counts) < 40).sum() > 100
        assert "left out by --min-count/--limit, with their own rows" in result.output
        assert "of them left out above with their trained rows" in (out / "README.md").read_text(encoding="utf-8")
    unknown = [s for s in lines if s.strip() and (smaller or model.ids(s)[1])]
    assert len(unknown) > 100
    np.testing.assert_allclose(loaded.encode(unknown), model.encode(unknown, unknown="hash"), rtol=2e-4, atol=2e-6)


def test_the_folders_of_the_other_rules(ruled, tmp_path, runner):
    """A hashing model exports pieces (its card says so) and embeds as under unknown="pieces"; an omitting one
    exports a plain word table."""
    model2vec = pytest.importorskip("model2vec", reason="model2vec (the test extra) is absent")
    sentences = sts_sentences()[:3000] + ["zzzqqq xxyyq"]
    for rule, pieces in (("hash", "pieces"), ("omit", "omit")):
        out = tmp_path / rule
        result = runner.invoke(main, ["export", "-m", str(ruled[rule]), "--format", "model2vec", "-o", str(out)])
        assert result.exit_code == 0, result.output
        assert ("pieces that unknown words are split into" in result.output) == (rule == "hash")
        spec = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
        assert spec["model"]["type"] == ("WordPiece" if rule == "hash" else "WordLevel")
        model = scbow.load(ruled[rule])
        ours = model.encode(sentences, unknown=pieces)
        ok = ~np.isnan(ours).any(axis=1)
        np.testing.assert_allclose(model2vec.StaticModel.from_pretrained(str(out)).encode(sentences)[ok], ours[ok],
                                   rtol=2e-4, atol=2e-6)
        assert ok[-1] == (rule == "hash")
    assert "hashed vector, which a table of tokens cannot carry" in (tmp_path / "hash" / "README.md").read_text("utf-8")


def test_safetensors_by_hand_reads_back(tmp_path):
    load_file = pytest.importorskip("safetensors.numpy", reason="safetensors (installed with model2vec) is absent").load_file

    a = np.random.default_rng(0).standard_normal((40000, 7)).astype(np.float32)
    write_safetensors(tmp_path / "x.safetensors", {"embeddings": a, "b": a[:3, :2]})
    back = load_file(str(tmp_path / "x.safetensors"))
    np.testing.assert_array_equal(back["embeddings"], a)
    np.testing.assert_array_equal(back["b"], a[:3, :2])


def test_model_card(folders, trained):
    yaml = pytest.importorskip("yaml", reason="PyYAML is absent")
    for fmt, library in (("sentence-transformers", "sentence-transformers"), ("model2vec", "model2vec")):
        text = (folders[fmt] / "README.md").read_text(encoding="utf-8")
        head = yaml.safe_load(re.match(r"---\n(.*?)\n---\n", text, re.S).group(1))
        assert head["library_name"] == library and head["language"] == ["en"]
        assert library in head["tags"] and "static-embeddings" in head["tags"]
        assert "gutenberg-20000.txt" in text and "tokenizer version 4" in text


def test_model_card_language_and_scores():
    """The card's language from the commonest words; its scores from the learning curve."""
    english = ["the", ",", ".", "of", "and", "to", "a", "in", "that", "he", "was", "it", "his"]
    assert languages(english) == ["en"]
    assert languages(["の", "、", "。", "に", "た", "は", "人"]) == ["ja"]
    assert languages(["的", "，", "。", "了", "是", "我"]) == ["zh"]
    assert languages(["ที่", "การ", "ไม่", "มี"]) == ["th"]
    assert languages(["이", "의", "는", "을"]) == ["ko"]
    assert languages(["de", "la", "et", "le", "les", "des", "en", "du", "un"]) == []  # not told apart: left out
    curve = {"unknown": "hash", "points": [{"dev": {"pearson": 0.5, "spearman": 0.5, "pairs": 1500}},
                                           {"dev": {"pearson": 0.7483, "spearman": 0.748, "pairs": 1500},
                                            "test": {"pearson_mean": 0.6431, "pearson": {"a": 0.6, "b": 0.7}}}]}
    info = {"corpus": {"files": ["/x/books.txt.xz"], "raw_tokens": 1234567, "sentences": 89, "min_count": 5,
                       "tokenizer_version": "4"}, "curve": curve}
    model = Model(Vocab(["the", "cat"], [9, 5]), np.ones((2, 4), dtype=np.float32), {"dim": 4, "epochs": 1}, info)
    card = model_card(model, "model2vec", 3, 0, "books", license="cc-by-4.0")
    assert "license: \"cc-by-4.0\"" in card and "books.txt.xz (1,234,567 tokens, 89 sentences)" in card
    assert "Pearson 0.7483" in card and "Mean Pearson over 2 STS test sets: 0.6431" in card
    curve["points"][-1]["dev"]["spearman"] = None  # the curve's record of a correlation that was NaN
    assert "Pearson 0.7483, Spearman n/a." in model_card(model, "model2vec", 3, 0, "books")


# ---------------------------------------------------------------------------------------
# the table, and word2vec files


def test_the_table_of_formats():
    """Each format is one row: a writer, a line of description, a folder's loader; the
    command's --format lists the table's names (its help is written out: --help imports no numpy)."""
    from scbow.cli.vectors import export as command
    for name, spec in FORMATS.items():
        assert spec.name == name and callable(spec.writer) and spec.description and "\n" not in spec.description
        assert spec.folder == bool(spec.load)
    assert export_format("ST") is FORMATS["sentence-transformers"] and export_format("Model2Vec").name == "model2vec"
    fmt = next(p for p in command.params if p.name == "fmt")
    assert fmt.metavar == "[" + "|".join(FORMATS) + "]"


def word_part_model():
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(30)]
    return Model(Vocab(words, list(range(60, 30, -1))), rng.standard_normal((30, 5)).astype(np.float32),
                 {"dim": 2, "word_passes": 1, "word_dim": 3})


@pytest.mark.parametrize("name, args, part, binary", [
    ("v.bin", [], "word", True), ("v.bin", ["--part", "word"], "word", True), ("v.bin", ["--part", "all"], "all", True),
    ("v.bin", ["--part", "sentence"], "sentence", True), ("V.BIN", [], "word", True), ("v.bin", ["--text"], "word", False),
    ("v.txt", [], "word", False), ("v.vec", ["--binary"], "word", True)])
def test_word2vec_writes_the_word_part_by_default_binary_for_a_bin_name(tmp_path, runner, name, args, part, binary):
    """What a gensim user wants by default: the word vectors, the word part's columns, binary for a .bin name
    unless told; the line says what was written."""
    model = word_part_model()
    model.save(tmp_path / "m")
    out = tmp_path / name
    result = runner.invoke(main, ["export", "-m", str(tmp_path / "m"), "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    lo, hi = {"word": (2, 5), "all": (0, 5), "sentence": (0, 2)}[part]
    back = load_word2vec(out)
    assert back.vocab.words == model.vocab.words and np.array_equal(back.vectors, model.vectors[:, lo:hi])
    what = {"word": "30 word vectors (the word part, 3 columns)", "all": "30 vectors (whole rows, 5 columns)",
            "sentence": "30 vectors (the sentence part, 2 columns)"}[part]
    assert result.stderr.strip() == f"wrote {what} to {out} (word2vec {'binary' if binary else 'text'})"
    assert back.info["format"] == f"word2vec-{'binary' if binary else 'text'}"  # gensim reads both: test_formats
    if name == "v.bin" and not args:  # Python writes the same default
        model.wv.save_word2vec_format(tmp_path / "py.bin", binary=True)
        assert (tmp_path / "py.bin").read_bytes() == out.read_bytes()
        written = export(model, tmp_path / "e.txt", limit=10)
        assert (written.format, written.part, written.rows, written.columns, written.left_out, written.binary) == \
            ("word2vec", "word", 10, 3, 20, False)


def test_python_export_of_a_folder(tmp_path):
    """The one entry point writes a folder too, and says what it wrote."""
    model = word_part_model()
    written = model.export(tmp_path / "m2v", "model2vec", min_count=40)
    assert (written.format, written.rows, written.columns, written.words, written.left_out) == ("model2vec", 22, 5, 21, 9)
    assert written.lines()[-1] == f"load it with StaticModel.from_pretrained({str(tmp_path / 'm2v')!r})"
    assert sorted(os.listdir(tmp_path / "m2v")) == sorted(("README.md", "config.json", "model.safetensors",
                                                           "tokenizer.json", "modules.json"))
    with pytest.raises(Exception, match="--part sentence: a sentence-transformers folder"):
        export(model, tmp_path / "st", "sentence-transformers", part="sentence")
    assert not (tmp_path / "st").exists()


# ---------------------------------------------------------------------------------------
# the command


def test_word2vec_export_min_count_and_limit(trained, tmp_path, runner):
    model = scbow.load(trained)
    result = runner.invoke(main, ["export", "-m", str(trained), "-o", str(tmp_path / "v.txt"), "--min-count", "20",
                                  "--limit", "300"])
    assert result.exit_code == 0, result.output
    kept = load_word2vec(tmp_path / "v.txt")
    counts = model.vocab.counts
    assert len(kept) == min(300, int((counts >= 20).sum())) and "left out" in result.output
    np.testing.assert_array_equal(kept.vectors[5], model.vectors[model.vocab.index[kept.vocab.words[5]]])


@pytest.mark.parametrize("args, fragments", [
    (["--format", "onnx"], ["--format 'onnx'", "sentence-transformers"]),
    (["--format", "model2vec", "--part", "word"], ["--part applies to --format word2vec"]),
    (["--format", "model2vec", "--binary"], ["--binary/--text apply to --format word2vec"]),
    (["--format", "model2vec", "--add-words", "{tmp}/nope.txt"], ["--add-words", "nope.txt: no such file"]),
    (["--add-words", "{corpus}"], ["--add-words applies to the folder formats"]),
    # a model of pieces: its folders embed every word
    (["--format", "model2vec", "--add-words", "{corpus}"], ["--add-words: this model splits unknown words into pieces"]),
    (["--part", "word"], ["no word part"]),  # the model has none (--word-passes 0)
])
def test_bad_export_options_are_one_line_and_write_nothing(trained, corpus, tmp_path, runner, args, fragments):
    args = [a.format(tmp=tmp_path, corpus=corpus) for a in args]
    result = runner.invoke(main, ["export", "-m", str(trained), "-o", str(tmp_path / "x"), *args])
    assert_clean_error(result, *fragments, exit_code=1)
    assert "reading" not in result.output and not (tmp_path / "x").exists()


@pytest.mark.parametrize("fmt", ["sentence-transformers", "model2vec"])
def test_hostile_outputs(trained, corpus, tmp_path, monkeypatch, runner, fmt):
    monkeypatch.chdir(tmp_path)

    def export(out, *more):
        return runner.invoke(main, ["export", "-m", str(trained), "--format", fmt, "-o", str(out), *more])

    before = sorted(os.listdir(trained))
    assert_clean_error(export(trained), "refusing to overwrite an input", exit_code=1)
    assert_clean_error(export(trained / "inside"), "refusing to write into it", exit_code=1)
    assert sorted(os.listdir(trained)) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert_clean_error(export(mine), "notes.txt", exit_code=1)
    assert (mine / "notes.txt").read_text() == "keep me" and os.listdir(mine) == ["notes.txt"]
    other = tmp_path / "other"
    other_fmt = "model2vec" if fmt == "sentence-transformers" else "sentence-transformers"
    assert runner.invoke(main, ["export", "-m", str(trained), "--format", other_fmt, "-o", str(other)]).exit_code == 0
    assert_clean_error(export(other), f"holds a {other_fmt} export", exit_code=1)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert_clean_error(export(a_file), "is not a folder", exit_code=1)
    assert_clean_error(export("."), "give the new folder a name", exit_code=1)
    assert_clean_error(export(tmp_path / "sub" / ".."), "give the new folder a name", exit_code=1)
    (tmp_path / "loop").symlink_to("loop")  # a link to itself: refused, and kept
    assert_clean_error(export(tmp_path / "loop"), "loop", exit_code=1)
    assert (tmp_path / "loop").is_symlink()
    (tmp_path / "loop").unlink()
    # the same kind is replaced whole; no temporaries are left beside it
    out = tmp_path / "out"
    assert export(out).exit_code == 0
    assert export(out).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "mine", "other", "out"]
    # an exported folder is one of the tool's outputs: a file written into it would make the next export of it
    # refuse to replace it (a user's file there), so it is refused up front
    assert kind_of(out) == f"a {fmt} folder"
    inside = sorted(os.listdir(out))
    for args in (["export", "-m", str(trained), "-o", str(out / "v.txt")],
                 ["embed", "-m", str(trained), str(corpus), "-o", str(out / "e.npy")]):
        assert_clean_error(runner.invoke(main, args), f"is inside {out.resolve()}, a {fmt} folder")
    assert sorted(os.listdir(out)) == inside


def test_the_example_in_docs_export_md(tmp_path, monkeypatch, runner, gutenberg_slice):
    """docs/export.md's example, its code read from the doc: train, export, search."""
    pytest.importorskip("model2vec", reason="model2vec (the test extra) is absent")
    doc = (Path(__file__).resolve().parents[1] / "docs" / "export.md").read_text(encoding="utf-8")
    example = doc[doc.index("## Example"):]
    shell = re.search(r"```bash\n(.*?)```", example, re.S).group(1)
    python = re.search(r"```python\n(.*?)```", example, re.S).group(1)
    shutil.copy(gutenberg_slice(5000), tmp_path / "my-text.txt")
    monkeypatch.chdir(tmp_path)
    for line in shell.strip().splitlines():
        args = shlex.split(line)
        assert args[0] == "scbow-numba"
        result = runner.invoke(main, args[1:])
        assert result.exit_code == 0, result.output
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(python, "docs/export.md", "exec"), {"__name__": "__example__"})
    lines = out.getvalue().splitlines()
    assert lines[0] == "a ship in a storm at sea" and len(lines) == 8, lines
    scores = [float(line.split()[0]) for line in lines[1:4] + lines[5:8]]
    assert all(-1.0001 <= s <= 1.0001 for s in scores) and scores[0] >= scores[2]


def tiny_model(words, config):
    rows = np.random.default_rng(0).standard_normal((len(words), 6)).astype(np.float32)
    return Model(Vocab(words, np.arange(len(words), 0, -1) * 10), rows, config)


def test_added_words_of_a_model_that_omits_hold_what_its_hash_rule_gives(tmp_path):
    """--add-words on a model whose rule is omit (its recorded scale the pieces default) gives an added word
    the vector ``Model.encode(unknown="hash")`` gives it: the hash rule's norm, not the recorded scale's."""
    model2vec = pytest.importorskip("model2vec", reason="model2vec (the test extra) is absent")
    model = tiny_model(["the", "cat", "sat", "on", "a", "mat", "dog", "ran"],
                       {"unknown": "omit", "unknown_scale": 0.35, "frequency_weight": 0.001})
    assert model.unknown_scale("hash") == 1.0  # the hash rule's own norm for a model with frequency weights
    extra = tmp_path / "extra.txt"
    extra.write_text("the zorblax sat\n", encoding="utf-8")
    model.export(tmp_path / "m2v", "model2vec", add_words=[str(extra)])
    loaded = model2vec.StaticModel.from_pretrained(str(tmp_path / "m2v"))
    sentences = ["zorblax", "the zorblax sat"]
    np.testing.assert_allclose(loaded.encode(sentences), model.encode(sentences, unknown="hash"), rtol=2e-5, atol=1e-6)


def test_add_words_files_in_another_encoding_and_their_words_as_first_pieces(trained, tmp_path, runner):
    """--add-words files are read in --encoding (UTF-8 unless given; text not valid in it refused as every command
    refuses it); --encoding without --add-words names what it is for. As docs/export.md says, the folder's WordPiece
    vocabulary holds the added words: an unknown word that begins with one takes it as its first piece."""
    tokenizers = need_tokenizers()
    model = tiny_model(["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "zone", "blue", "axes"],
                       {"unknown": "hash", "unknown_scale": 1.0})
    (extra := tmp_path / "extra.txt").write_bytes("the café sat zorblax\n".encode("cp1252"))
    with pytest.raises(CorpusError, match="may be Latin-1"):
        model.export(tmp_path / "a", "model2vec", add_words=[str(extra)])
    assert not (tmp_path / "a").exists()
    model.export(tmp_path / "b", "model2vec", add_words=[str(extra)], encoding="cp1252")
    assert "café" in json.loads((tmp_path / "b" / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    tok = tokenizers.Tokenizer.from_file(str(tmp_path / "b" / "tokenizer.json"))
    assert tok.encode("zorblaxes").tokens == ["zorblax", "##es"]
    assert model.pieces.split("zorblaxes") != ["zorblax", "##es"]  # the model itself knows no zorblax
    result = runner.invoke(main, ["export", "-m", str(trained), "--format", "model2vec", "-o", str(tmp_path / "c"),
                                  "--encoding", "cp1252"])
    assert_clean_error(result, "--encoding cp1252: it is the encoding of the --add-words files, and none is given")
