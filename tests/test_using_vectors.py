"""Using trained vectors: embed files, neighbours, a pretrained start, vocabulary expansion,
and other systems' word2vec files scored like our models (issue 7)."""

from __future__ import annotations

import gzip
import io
import json
import math
import os

import numpy as np
import pytest
from conftest import assert_clean_error as _assert_clean_error

import scbow
from scbow.cli import main
from scbow.config import TrainConfig
from scbow.errors import CorpusError, ModelError
from scbow.text.vocab import Vocab
from scbow.training.pretrained import expand_vocabulary, fit_linear_map, pretrained_init
from scbow.training.start import init_vectors
from scbow.use.embedding import embed_file, embed_lines, missing_path_for, nearest_sentences, npy_header
from scbow.vectors.formats import export_word2vec, load_model
from scbow.vectors.model import NEIGHBOUR_MIN_COUNT, Model
from scbow.vectors.modeldir import save_model

WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "a", "big", "small", "red", "house", ".", "don't", "café"]

LINES = [
    "The cat sat on the mat.",
    "",
    "xyzzy quux",  # no known word
    "A big dog ran!",
    "  the   the the  cat  ",  # repeated words count every time
    "Don't — CAFÉ?",  # apostrophe, a dash nobody knows, unicode
    "small red house",
    "?!",  # punctuation only: unknown
    "mat",
]


def make_model(dim=6, seed=0, words=WORDS):
    rng = np.random.default_rng(seed)
    counts = NEIGHBOUR_MIN_COUNT + np.arange(len(words), 0, -1) * 10  # every word a candidate neighbour
    return Model(Vocab(words, counts), rng.standard_normal((len(words), dim)).astype(np.float32))


@pytest.fixture
def model():
    return make_model()



def assert_clean_error(result, *fragments):
    _assert_clean_error(result, *fragments, exit_code=1)


def brute_force_embed(model, line):
    """The rule, independently: mean of the rows of the known tokens, NaN without one."""
    rows = [model.vectors[model.vocab.index[t]].astype(np.float64) for t in scbow.tokenize(line) if t in model]
    return np.mean(rows, axis=0) if rows else np.full(model.dim, np.nan)


# ---------------------------------------------------------------- embedding files


def test_npy_header_is_numpys():
    for shape in [(0, 1), (5, 3), (123456789, 300), (10**18, 100000)]:
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": shape})
        assert npy_header(*shape) == buf.getvalue()


def test_embed_lines_follows_the_averaging_rule(model):
    X, counts = embed_lines(model, LINES)
    assert X.dtype == np.float32 and X.shape == (len(LINES), model.dim)
    for row, line in zip(X, LINES):
        np.testing.assert_allclose(row, brute_force_embed(model, line), rtol=1e-6, equal_nan=True)
    assert counts.tolist() == [sum(t in model for t in scbow.tokenize(line)) for line in LINES]
    assert counts.tolist()[:5] == [7, 0, 0, 4, 4]
    np.testing.assert_array_equal(X, model.embed(LINES))  # the same numbers as Model.embed


def hashing_model(dim=6):
    """A model whose own rule hashes unknown words (as every model trained now does)."""
    m = make_model(dim=dim)
    return Model(m.vocab, m.vectors, {"unknown": "hash", "unknown_scale": 1.0})


@pytest.mark.parametrize("block_chars", [1 << 22, 30])
def test_embed_file_follows_the_models_unknown_rule(tmp_path, block_chars):
    """A model that hashes unknown words embeds a file exactly as Model.embed does."""
    model = hashing_model()
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES), encoding="utf-8")
    out = tmp_path / "out.npy"
    stats = embed_file(model, src, out, block_chars=block_chars)
    X = np.load(out)
    expected = model.embed(LINES)
    np.testing.assert_allclose(X, expected, rtol=1e-5, atol=1e-7, equal_nan=True)
    assert not np.isnan(X[2]).any()  # "xyzzy quux": unknown words only, embedded all the same
    assert np.isnan(X[1]).all()  # an empty line still has nothing to average
    missing = (tmp_path / "out.missing.txt").read_text().splitlines()
    assert missing[0].startswith("#") and "no word" in missing[0] and missing[1:] == ["2"]
    assert stats.missing == 1
    # the same file, told to omit, gives the known-words averages
    embed_file(model, src, out, unknown="omit", block_chars=block_chars)
    np.testing.assert_array_equal(np.load(out), model.embed(LINES, unknown="omit"))
    rows, counts = embed_lines(model, LINES)
    np.testing.assert_allclose(rows, expected, rtol=1e-5, atol=1e-7, equal_nan=True)
    assert counts[2] == 2


def test_nearest_sentences_with_hashed_unknown_words(tmp_path):
    model = hashing_model(dim=256)  # enough dimensions that random directions barely meet
    src = tmp_path / "in.txt"
    src.write_text("the cat\nxyzzy quux\nquux dog\n", encoding="utf-8")
    got = nearest_sentences(model, "xyzzy quux", src, topn=3)
    assert got[0][1] == 2 and got[0][0] == pytest.approx(1.0, abs=1e-5)  # the same unknown words
    assert got[1][1] == 3  # shares one of them


def test_embed_file_writes_rows_and_the_missing_lines(tmp_path, model):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES), encoding="utf-8")  # no newline after the last line
    out = tmp_path / "out.npy"
    stats = embed_file(model, src, out)
    X = np.load(out, mmap_mode="r", allow_pickle=False)
    assert X.dtype == np.float32 and X.shape == (len(LINES), model.dim)
    np.testing.assert_array_equal(X, model.embed(LINES))
    missing = [n for n, line in enumerate(LINES, 1) if np.isnan(brute_force_embed(model, line)).all()]
    assert missing == [2, 3, 8]
    record = (tmp_path / "out.missing.txt").read_text().splitlines()
    assert record[0].startswith("#") and [int(x) for x in record[1:]] == missing
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "out.missing.txt", dtype=int, ndmin=1), missing)
    assert stats.lines == len(LINES) and stats.missing == 3
    assert stats.tokens == sum(len(scbow.tokenize(line)) for line in LINES)
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.missing.txt", "out.npy"]  # no temporary left


@pytest.mark.parametrize("threads", [1, 2])
def test_embed_file_in_many_blocks_is_the_same(tmp_path, model, threads):
    rng = np.random.default_rng(1)
    lines = [" ".join(rng.choice(WORDS + ["zzz", "Qq"], size=rng.integers(0, 9))) for _ in range(3000)]
    src = tmp_path / "in.txt.gz"
    with gzip.open(src, "wt", encoding="utf-8", newline="") as fh:
        fh.write("\r\n".join(lines) + "\r\n")  # compressed, Windows line ends
    one = tmp_path / "one.npy"
    embed_file(model, src, one, threads=threads)
    many = tmp_path / "many.npy"
    stats = embed_file(model, src, many, tmp_path / "many-missing.txt", threads=threads, block_chars=500)
    X = np.load(many)
    np.testing.assert_array_equal(X, np.load(one))  # blocks and kernels never change a number
    np.testing.assert_array_equal(X, model.embed(lines))
    assert stats.lines == 3000
    recorded = np.loadtxt(tmp_path / "many-missing.txt", dtype=int, ndmin=1)
    np.testing.assert_array_equal(recorded, np.flatnonzero(np.isnan(X[:, 0])) + 1)
    assert stats.missing == len(recorded) > 0


def test_embed_fill_zero_and_empty_input(tmp_path, model):
    src = tmp_path / "in.txt"
    src.write_text("cat\n\nzzz\n", encoding="utf-8")
    embed_file(model, src, tmp_path / "z.npy", fill=0.0)
    X = np.load(tmp_path / "z.npy")
    np.testing.assert_array_equal(X[1:], 0)
    np.testing.assert_array_equal(X[0], model["cat"])
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    stats = embed_file(model, empty, tmp_path / "e.npy")
    assert np.load(tmp_path / "e.npy").shape == (0, model.dim) and stats.lines == 0


def test_missing_path_for():
    assert missing_path_for("a/b.npy").as_posix() == "a/b.missing.txt"
    assert missing_path_for("a/b.bin").as_posix() == "a/b.bin.missing.txt"


def test_embed_failure_keeps_the_old_output(tmp_path, model):
    out = tmp_path / "out.npy"
    np.save(out, np.ones((2, 2), dtype=np.float32))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"the cat\n" * 2000 + b"dog\x00\x01\x02\n")  # binary data after the first block
    with pytest.raises(CorpusError, match="NUL"):
        embed_file(model, bad, out, block_chars=1000)
    np.testing.assert_array_equal(np.load(out), np.ones((2, 2)))
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "out.npy"]


def test_embed_cli(tmp_path, runner, model):
    save_model(model, tmp_path / "m")
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    result = runner.invoke(main, ["embed", "-m", str(tmp_path / "m"), str(src), "-o", str(tmp_path / "x.npy")])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert f"embedded {len(LINES)} lines" in result.stderr and "3 lines with no known word" in result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), model.embed(LINES))
    assert (tmp_path / "x.missing.txt").is_file()
    # stdin, --fill zero, --missing elsewhere
    result = runner.invoke(main, ["embed", "-m", str(tmp_path / "m"), "-", "-o", str(tmp_path / "y.npy"), "--fill",
                                  "zero", "--missing", str(tmp_path / "y.txt"), "-q"], input="cat\nzzz\n")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), [model["cat"], np.zeros(model.dim)])
    assert (tmp_path / "y.txt").read_text().splitlines()[1:] == ["2"]


def test_embed_cli_errors(tmp_path, runner, model):
    save_model(model, tmp_path / "m")
    src = tmp_path / "in.txt"
    src.write_text("cat\n")
    m = ["embed", "-m", str(tmp_path / "m")]
    assert_clean_error(runner.invoke(main, [*m, str(tmp_path / "nope.txt"), "-o", str(tmp_path / "x.npy")]),
                       "nope.txt", "no such file")
    assert_clean_error(runner.invoke(main, [*m, str(src), "-o", str(tmp_path)]), "is a directory")
    assert_clean_error(runner.invoke(main, [*m, str(src), "-o", str(tmp_path / "no" / "x.npy")]), "no such directory")
    assert_clean_error(runner.invoke(main, [*m, str(tmp_path), "-o", str(tmp_path / "x.npy")]), "is a directory")
    binary = tmp_path / "bin.dat"
    binary.write_bytes(bytes(range(256)) * 10)
    assert_clean_error(runner.invoke(main, [*m, str(binary), "-o", str(tmp_path / "x.npy")]), "binary")
    assert_clean_error(runner.invoke(main, ["embed", "-m", str(tmp_path / "nomodel"), str(src), "-o",
                                            str(tmp_path / "x.npy")]), "no such model")
    nan = runner.invoke(main, [*m, str(src), "-o", str(tmp_path / "x.npy"), "--block-mb", "nan"])
    assert nan.exit_code == 2 and "'nan' is not a number" in nan.stderr
    assert not (tmp_path / "x.npy").exists() and not (tmp_path / "x.missing.txt").exists()


# ---------------------------------------------------------------- neighbours


def brute_force_neighbours(model, positive, negative=()):
    """Cosines to the mean of the unit query vectors, by loops; query words left out."""
    unit = lambda v: np.asarray(v, dtype=np.float64) / np.linalg.norm(v)  # noqa: E731
    terms = [unit(model[w] if isinstance(w, str) else w) for w in positive]
    terms += [-unit(model[w] if isinstance(w, str) else w) for w in negative]
    q = np.mean(terms, axis=0)
    skip = {w for w in list(positive) + list(negative) if isinstance(w, str)}
    scores = [(w, float(unit(model[w]) @ unit(q))) for w in model.vocab.words if w not in skip]
    return sorted(scores, key=lambda x: -x[1])


@pytest.mark.parametrize("query", [("cat",), ("cat", "dog"), ("cat", "dog", "-mat"), ("vector",)])
def test_most_similar_matches_brute_force(model, query):
    vector = np.linspace(-1, 1, model.dim)
    positive = [vector if q == "vector" else q for q in query if not q.startswith("-")]
    negative = [q[1:] for q in query if q.startswith("-")]
    got = model.most_similar(positive if len(positive) > 1 else positive[0], topn=5, negative=negative)
    want = brute_force_neighbours(model, positive, negative)[:5]
    assert [w for w, _ in got] == [w for w, _ in want]
    np.testing.assert_allclose([c for _, c in got], [c for _, c in want], rtol=1e-6)


def test_most_similar_edges(model):
    assert len(model.most_similar("cat", topn=1000)) == len(model) - 1
    # ties go to the more frequent word (lower id)
    tied = Model(Vocab(["q", "b", "c", "a"], np.array([4, 3, 2, 1]) * NEIGHBOUR_MIN_COUNT),
                 np.array([[1, 0], [1, 1], [0, 1], [1, 1]], dtype=np.float32))
    assert [w for w, _ in tied.most_similar("q", topn=2)] == ["b", "a"]
    assert [w for w, _ in tied.most_similar("q", topn=1)] == ["b"]
    with pytest.raises(KeyError, match="zebra"):
        model.most_similar(["cat", "zebra"])
    with pytest.raises(ValueError, match="shape"):
        model.most_similar(np.ones(model.dim + 1))
    with pytest.raises(ValueError, match="topn"):
        model.most_similar("cat", topn=0)
    with pytest.raises(ValueError, match="zero"):
        model.most_similar("cat", negative=["cat"])
    assert "cat" in model and "zebra" not in model and len(model) == len(WORDS)
    np.testing.assert_array_equal(model["dog"], model.vectors[2])


def test_most_similar_takes_what_gensim_takes(model):
    """negative=None is "none"; a huge but finite vector is a direction; bytes are not words."""
    assert model.most_similar("cat", negative=None) == model.most_similar("cat")
    v = model["cat"].astype(np.float64)
    assert [w for w, _ in model.similar_by_vector(1e300 * v)] == [w for w, _ in model.similar_by_vector(v)]
    with pytest.raises(ValueError, match="NaN or inf"):
        model.similar_by_vector(np.full(model.dim, np.inf))
    with pytest.raises(TypeError, match="a query word is a str, got bytes"):
        model.most_similar(b"cat")


def test_embed_takes_any_iterable_of_str(model):
    sentences = ["the cat", "a dog sat", "the cat"]
    np.testing.assert_array_equal(model.embed(s for s in sentences), model.embed(sentences))
    with pytest.raises(TypeError, match="got bytes"):
        model.embed(b"the cat")
    with pytest.raises(TypeError, match="sentence 1 is a bytes"):
        model.embed(["the cat", b"a dog"])


def test_neighbors_cli_words(tmp_path, runner, model):
    save_model(model, tmp_path / "m")
    m = ["neighbors", "-m", str(tmp_path / "m")]
    result = runner.invoke(main, [*m, "CAT", "-n", "4"])  # not in the vocabulary as typed: lowercased
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [w for w, _ in rows] == [w for w, _ in model.most_similar("cat", topn=4)]
    assert [float(c) for _, c in rows] == pytest.approx([c for _, c in model.most_similar("cat", topn=4)], abs=6e-5)
    result = runner.invoke(main, [*m, "cat", "dog", "--negative", "mat", "-n", "3"])
    assert result.exit_code == 0, result.output
    want = model.most_similar(["cat", "dog"], topn=3, negative=["mat"])
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [w for w, _ in want]
    assert_clean_error(runner.invoke(main, [*m, "zebra"]), "'zebra' is not in the vocabulary")
    assert_clean_error(runner.invoke(main, m), "give a WORD")


def rare_word_model():
    """'cat' is nearest to 'mezzanine' (seen 3 times) by cosine, then to 'dog' (seen 500 times),
    and to 'kitten', whose count is unknown (0: a word added by expand or read from a word2vec file)."""
    words = ["the", "cat", "dog", "mat", "mezzanine", "padoie", "kitten"]
    counts = [1000, 800, 500, 200, 3, 7, 0]
    vectors = np.array([[0, 0, 1], [1, 0, 0], [0.8, 0.6, 0], [0, 1, 0], [1, 0.01, 0], [0.99, 0.1, 0],
                        [0.9, 0.3, 0]], dtype=np.float32)
    return Model(Vocab(words, counts), vectors)


def test_most_similar_leaves_rare_words_out_by_default():
    m = rare_word_model()
    plain = [w for w, _ in m.most_similar("cat", topn=4, min_count=0)]
    assert plain == ["mezzanine", "padoie", "kitten", "dog"]  # by cosine the rare words come first
    assert [w for w, _ in m.most_similar("cat", topn=4, min_count=1)] == plain
    assert NEIGHBOUR_MIN_COUNT > 7  # the default leaves out words seen 3 and 7 times
    assert [w for w, _ in m.most_similar("cat", topn=2)] == ["kitten", "dog"]  # no count recorded: kept
    assert [w for w, _ in m.most_similar("cat", topn=3, min_count=5)] == ["padoie", "kitten", "dog"]
    # the cosines returned are the plain ones, whatever the rule
    assert dict(m.most_similar("cat", topn=10))["dog"] == dict(m.most_similar("cat", topn=10, min_count=0))["dog"]
    assert len(m.most_similar("cat", topn=10, min_count=600)) == 2  # 'the' and 'kitten'; 'cat' is the query
    assert m.most_similar("cat", topn=10, min_count=10**6) == [("kitten", pytest.approx(0.9 / np.hypot(0.9, 0.3)))]
    # the query's own words may be rare; gensim's names take the rule too
    assert [w for w, _ in m.most_similar("mezzanine", topn=1)] == ["cat"]
    assert [w for w, _ in m.similar_by_word("cat", topn=1)] == ["kitten"]
    assert [w for w, _ in m.similar_by_word("cat", topn=1, min_count=0)] == ["mezzanine"]
    assert [w for w, _ in m.similar_by_vector(m["cat"], topn=2)] == ["cat", "kitten"]
    assert [w for w, _ in m.similar_by_vector(m["cat"], topn=2, min_count=0)] == ["cat", "mezzanine"]
    # with restrict_vocab both rules apply ('the' and 'mat' tie at 0: the more frequent first)
    assert [w for w, _ in m.most_similar("cat", topn=5, restrict_vocab=6, min_count=0)] == ["mezzanine", "padoie",
                                                                                            "dog", "the", "mat"]
    assert [w for w, _ in m.most_similar("cat", topn=5, restrict_vocab=6)] == ["dog", "the", "mat"]
    # a rare row float32 cannot score (scored apart, in float64) is left out alike
    odd = Model(Vocab(["q", "huge", "y"], [500, 3, 400]), np.array([[1, 0], [3e35, 1e34], [1, 1]], dtype=np.float32))
    assert [w for w, _ in odd.most_similar("q", topn=2)] == ["y"]
    assert [w for w, _ in odd.most_similar("q", topn=2, min_count=0)] == ["huge", "y"]
    for bad in (-1, 2.5, True, "5", None):
        with pytest.raises(ValueError, match="min_count"):
            m.most_similar("cat", min_count=bad)


def test_neighbors_cli_min_count(tmp_path, runner):
    save_model(rare_word_model(), tmp_path / "m")
    m = ["neighbors", "-m", str(tmp_path / "m"), "cat"]

    def words(*extra):
        result = runner.invoke(main, [*m, *extra])
        assert result.exit_code == 0, result.output
        return [line.split("\t")[0] for line in result.stdout.splitlines()]

    assert words("-n", "2") == ["kitten", "dog"]  # the default leaves the rare words out
    assert words("-n", "2", "--min-count", "0") == ["mezzanine", "padoie"]
    assert words("-n", "2", "--min-count", "1") == ["mezzanine", "padoie"]
    assert words("-n", "3", "--min-count", "5") == ["padoie", "kitten", "dog"]
    assert words("-n", "9", "--min-count", "2k") == ["kitten"]  # counts as other options take them
    help_text = runner.invoke(main, ["neighbors", "--help"]).output
    assert "--min-count" in help_text and f"default: {NEIGHBOUR_MIN_COUNT}" in help_text
    for bad, says in (("-1", "is not a whole number of occurrences"), ("2.5", "is not a whole number"),
                      ("lots", "is not a whole number"), ("1e30", "is more occurrences than any run has")):
        result = runner.invoke(main, [*m, "--min-count", bad])
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert f"Invalid value for '--min-count': {bad!r} {says}" in result.output
    only_rare = Model(Vocab(["cat", "mezzanine"], [3, 2]), np.eye(2, dtype=np.float32))
    save_model(only_rare, tmp_path / "rare")
    assert_clean_error(runner.invoke(main, ["neighbors", "-m", str(tmp_path / "rare"), "cat"]),
                       f"no other word is seen at least {NEIGHBOUR_MIN_COUNT} times", "--min-count")
    src = tmp_path / "s.txt"
    src.write_text("the cat\n", encoding="utf-8")
    assert_clean_error(runner.invoke(main, [*m[:3], "--sentence", "cat", "--in", str(src), "--min-count", "5"]),
                       "--min-count is for nearest words")


def test_the_neighbours_default_minimum_count_is_a_hundred(tmp_path, runner):
    """The default itself, written out (issue 34 item 11: every other test derives its counts from
    the constant, so 100 -> 10 passed them all): a word seen 99 times is left out, one seen 100
    times is not, in the API and in the CLI."""
    near = Model(Vocab(["the", "cat", "seen-99", "seen-100"], [1000, 500, 99, 100]),
                 np.array([[0, 1], [1, 0], [1, 0.01], [1, 0.5]], dtype=np.float32))
    assert [w for w, _ in near.most_similar("cat", topn=2)] == ["seen-100", "the"]
    assert [w for w, _ in near.most_similar("cat", topn=1, min_count=99)] == ["seen-99"]
    assert [w for w, _ in near.similar_by_vector(near["cat"], topn=2)] == ["cat", "seen-100"]
    save_model(near, tmp_path / "m")
    result = runner.invoke(main, ["neighbors", "-m", str(tmp_path / "m"), "cat", "-n", "1"])
    assert result.exit_code == 0 and result.stdout.split("\t")[0] == "seen-100", result.output
    assert "default: 100" in runner.invoke(main, ["neighbors", "--help"]).output


@pytest.mark.parametrize("sentence, rule, has, lacks, note", [
    ("the cat", None, True, "no word in the vocabulary", None),
    ("the xyzzy", None, True, "no word in the vocabulary", "unknown words left out: xyzzy"),
    ("xyzzy quux", None, False, "no word in the vocabulary", "unknown words left out: xyzzy, quux"),
    ("xyzzy quux", "hash", True, "no word", "unknown words given hashed random vectors: xyzzy, quux"),
    ("", "hash", False, "no word", None),
])
def test_the_rule_of_what_has_an_embedding(model, sentence, rule, has, lacks, note):
    """scbow.use.embedding.sentence_words: the rule 'similarity' and 'neighbors --sentence' share
    (issue 33 item 7: it lived in the commands). It agrees with what Model.embed does."""
    from scbow.use.embedding import sentence_words

    words = sentence_words(model, sentence, rule)
    assert (words.has_embedding, words.lacks, words.unknown_note()) == (has, lacks, note)
    assert words.has_embedding == bool(np.isfinite(model.embed([sentence], unknown=rule)).all())


def test_embed_summary_is_the_commands_line(tmp_path, model):
    from scbow.use.embedding import embed_file, embed_summary

    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    stats = embed_file(model, src, tmp_path / "out.npy")
    line = embed_summary(stats, model)
    assert line.startswith(f"embedded {len(LINES)} lines as 6-dim rows in ")
    assert f"with no known word (listed in {tmp_path / 'out.missing.txt'}); wrote {tmp_path / 'out.npy'}" in line


def test_nearest_sentences(tmp_path, model):
    rng = np.random.default_rng(2)
    lines = [" ".join(rng.choice(WORDS + ["zzz"], size=rng.integers(0, 7))) for _ in range(400)]
    src = tmp_path / "s.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    query = "the big red cat"
    got = nearest_sentences(model, query, src, topn=7)
    got_blocks = nearest_sentences(model, query, src, topn=7, block_chars=300)
    assert got == got_blocks
    scores = [(model.similarity(query, line), n) for n, line in enumerate(lines, 1)]
    want = sorted(((s, n) for s, n in scores if not math.isnan(s)), key=lambda x: (-x[0], x[1]))[:7]
    assert [n for _, n, _ in got] == [n for _, n in want]
    np.testing.assert_allclose([c for c, _, _ in got], [s for s, _ in want], rtol=1e-5)
    assert all(lines[n - 1] == text for _, n, text in got)
    with pytest.raises(ValueError, match="no word"):
        nearest_sentences(model, "zzz", src)


def test_neighbors_cli_sentences(tmp_path, runner, model):
    save_model(model, tmp_path / "m")
    src = tmp_path / "s.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    m = ["neighbors", "-m", str(tmp_path / "m")]
    result = runner.invoke(main, [*m, "--sentence", "the cat on a mat zebra", "--in", str(src), "-n", "3"])
    assert result.exit_code == 0, result.output
    assert "unknown words left out: zebra" in result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    want = nearest_sentences(model, "the cat on a mat", src, topn=3)
    assert [(int(n), t) for _, n, t in rows] == [(n, t) for _, n, t in want]
    assert all(LINES[int(n) - 1] == t for _, n, t in rows)
    assert_clean_error(runner.invoke(main, [*m, "--sentence", "cat"]), "--in")
    assert_clean_error(runner.invoke(main, [*m, "--in", str(src)]), "--sentence")
    assert_clean_error(runner.invoke(main, [*m, "cat", "--sentence", "cat", "--in", str(src)]), "not both")
    assert_clean_error(runner.invoke(main, [*m, "--sentence", "zebra", "--in", str(src)]), "no word")
    assert_clean_error(runner.invoke(main, [*m, "--sentence", "cat", "--in", str(tmp_path / "no.txt")]), "no such")


# ---------------------------------------------------------------- pretrained start


def test_pretrained_init_rows_and_scale():
    vocab = Vocab(["the", "cat", "dog", "zebra"], [4, 3, 2, 1])
    source = make_model(dim=8, words=["dog", "mouse", "the", "Cat"])  # 'Cat' is not 'cat'
    config = TrainConfig(dim=8, init_std=0.01, seed=3)
    W, info = pretrained_init(vocab, source, config, name="src.txt")
    random_rows = init_vectors(4, config)
    assert info["rows_initialised"] == 2 and info["rows"] == 4 and info["source"] == "src.txt"
    np.testing.assert_array_equal(W[[1, 3]], random_rows[[1, 3]])  # the usual random start
    P = source.vectors[[2, 0]].astype(np.float64)
    np.testing.assert_allclose(W[[0, 2]], P * info["scale"], rtol=1e-6)
    assert np.sqrt(np.mean(W[[0, 2]].astype(np.float64) ** 2)) == pytest.approx(0.01, rel=1e-5)
    W_raw, _ = pretrained_init(vocab, source, config, rescale=False)
    np.testing.assert_array_equal(W_raw[[0, 2]], source.vectors[[2, 0]])
    with pytest.raises(ModelError, match="dimensions"):
        pretrained_init(vocab, source, TrainConfig(dim=9))
    with pytest.raises(ModelError, match="no word"):
        pretrained_init(Vocab(["x"], [1]), source, config)


def test_training_starts_from_the_pretrained_rows(small_corpus_file, tmp_path):
    """With a vanishing learning rate, the trained matrix is the starting one."""
    config = TrainConfig(dim=8, epochs=1, min_count=1, threads=1, lr=1e-12, weight_decay=0.0, common_components=-1,
                         word_passes=0)  # the sentence part's start: no word part
    source = make_model(dim=8, words=["cat", "dog", "tree", "unused"])
    info = {}

    def init(vocab):
        W, summary = pretrained_init(vocab, source, config)
        info.update(summary)
        return W

    model = scbow.train([small_corpus_file], config, quiet=True, cache_dir=tmp_path, init=init)
    assert info["rows_initialised"] == 3
    # the start is weighted like the random one: row w is a(w) times the pretrained row
    from scbow.training.corpus import load_corpus
    from scbow.training.start import corpus_weights

    corpus = load_corpus([small_corpus_file], config.min_count, 0, cache_dir=tmp_path)
    a = corpus_weights(corpus, config)
    assert a.min() < 0.5 and a.max() <= 1.0  # frequent words are weighted down
    for word in ("cat", "dog", "tree"):
        weight = a[corpus.vocab.index[word]]
        np.testing.assert_allclose(model[word], source[word] * info["scale"] * weight, rtol=1e-5)
    plain = scbow.train([small_corpus_file], config, quiet=True, cache_dir=tmp_path)
    np.testing.assert_allclose(model["the"], plain["the"], rtol=1e-5)  # others: the usual random start


def test_train_cli_init_vectors(small_corpus_file, tmp_path, runner):
    source = make_model(dim=8, words=["cat", "dog", "tree", "unused"])
    export_word2vec(source, tmp_path / "w2v.bin", binary=True)
    args = ["train", str(small_corpus_file), "-o", str(tmp_path / "m"), "--dim", "8", "--epochs", "1",
            "--min-count", "1", "--threads", "1", "--cache-dir", str(tmp_path / "cache")]
    result = runner.invoke(main, [*args, "--init-vectors", str(tmp_path / "w2v.bin")])
    assert result.exit_code == 0, result.output
    vocab_size = len(load_model(tmp_path / "m"))
    assert f"initialised 3 of {vocab_size} rows from {tmp_path / 'w2v.bin'}" in result.stderr
    meta = json.loads((tmp_path / "m" / "config.json").read_text())
    assert meta["init_vectors"]["rows_initialised"] == 3 and meta["init_vectors"]["rows"] == vocab_size
    # a dimension mismatch fails before the corpus is read; nothing is written
    result = runner.invoke(main, [*args[:3], str(tmp_path / "m2"), *args[4:], "--dim", "9",
                                  "--init-vectors", str(tmp_path / "w2v.bin")])
    assert_clean_error(result, "8-dimensional", "--dim is 9")
    assert_clean_error(runner.invoke(main, [*args, "--init-vectors", str(tmp_path / "none.txt")]), "none.txt")
    (tmp_path / "other.txt").write_text("1 8\nzebra " + " ".join(["0.5"] * 8) + "\n")
    assert_clean_error(runner.invoke(main, [*args, "--init-vectors", str(tmp_path / "other.txt")]), "no word")
    assert not (tmp_path / "m2").exists()


def test_train_cli_init_vectors_from_a_model_with_a_word_part(small_corpus_file, tmp_path, runner):
    """A model of ours with a word part (the default) starts a run's sentence part from its own:
    --dim is compared with its sentence part (it was compared with the whole rows, so such a model
    could start no run: --dim 8 was refused as not 12, and --dim 12 as not 8)."""
    args = [str(small_corpus_file), "--epochs", "1", "--min-count", "1", "--threads", "1", "--dim", "8",
            "--cache-dir", str(tmp_path / "cache")]
    result = runner.invoke(main, ["train", *args, "-o", str(tmp_path / "a"), "--word-passes", "1", "--word-dim", "4"])
    assert result.exit_code == 0, result.output
    assert load_model(tmp_path / "a").dim == 12
    result = runner.invoke(main, ["train", *args, "-o", str(tmp_path / "b"), "--init-vectors", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "b" / "config.json").read_text())["init_vectors"]["rows_initialised"] > 0
    result = runner.invoke(main, ["train", *args[:-2], "--dim", "12", "--cache-dir", str(tmp_path / "cache"),
                                  "-o", str(tmp_path / "c"), "--init-vectors", str(tmp_path / "a")])
    assert_clean_error(result, "8-dimensional vectors in their sentence part", "--dim is 12", "pass --dim 8")


# ---------------------------------------------------------------- vocabulary expansion


def synthetic_spaces(n_src=400, p=12, q=5, shared=150, noise=0.0, bias=None, seed=0):
    """A source space and ours, ours = source @ M (+ bias) (+ noise) on the shared words."""
    rng = np.random.default_rng(seed)
    src_words = [f"w{i}" for i in range(n_src)] + ["House", "a.b"]  # the last two are no tokens of ours
    X = rng.standard_normal((len(src_words), p)).astype(np.float32)
    M = rng.standard_normal((p, q))
    ours_idx = list(range(shared)) + [n_src]  # ... and 'House' is shared, as an oddity of the source
    words = [src_words[i] for i in ours_idx] + ["onlyours"]
    Y = X[ours_idx].astype(np.float64) @ M + (0 if bias is None else bias)
    Y = Y + noise * rng.standard_normal(Y.shape)
    Y = np.vstack([Y, rng.standard_normal((1, q))]).astype(np.float32)
    ours = Model(Vocab(words, np.arange(len(words), 0, -1)), Y, {"dim": q}, {"corpus": {"x": 1}})
    source = Model(Vocab(src_words, np.zeros(len(src_words))), X)
    return ours, source, M, X


def test_expansion_recovers_a_known_map():
    ours, source, M, X = synthetic_spaces()
    new, report = expand_vocabulary(ours, source)
    assert report["shared"] == 151 and report["added"] == 400 - 150 and report["skipped_not_token"] == 1
    assert report["r2"] == pytest.approx(1.0, abs=1e-9) and report["heldout_cosine"] == pytest.approx(1.0, abs=1e-6)
    assert new.vocab.words[: len(ours)] == ours.vocab.words  # our ids unchanged
    np.testing.assert_array_equal(new.vectors[: len(ours)], ours.vectors)
    assert new.vocab.words[len(ours):] == [f"w{i}" for i in range(150, 400)]
    assert new.vocab.counts[len(ours):].tolist() == [0] * 250
    np.testing.assert_allclose(new.vectors[len(ours):], X[150:400].astype(np.float64) @ M, atol=1e-5)
    assert "a.b" not in new and "onlyours" in new and len(new) == report["vocab_after"] == len(ours) + 250
    assert new.info["expansions"][0]["added"] == 250 and new.info["corpus"] == {"x": 1}


def test_expansion_with_noise_bias_and_a_word_limit():
    ours, source, M, X = synthetic_spaces(noise=0.05, seed=1)
    new, report = expand_vocabulary(ours, source, max_words=10)
    assert 0.9 < report["r2"] < 1.0 and 0.9 < report["heldout_cosine"] < 1.0
    assert report["added"] == 10 and report["skipped_max_words"] == 240
    err = new.vectors[len(ours):].astype(np.float64) - X[150:160].astype(np.float64) @ M
    assert np.abs(err).max() < 0.1  # close to the true map, not equal to it
    bias = np.arange(5.0)
    ours, source, M, X = synthetic_spaces(bias=bias, seed=2)
    _, linear = expand_vocabulary(ours, source)
    new, affine = expand_vocabulary(ours, source, intercept=True)
    assert affine["r2"] == pytest.approx(1.0, abs=1e-9) and linear["r2"] < 0.99
    np.testing.assert_allclose(new.vectors[len(ours):], X[150:400].astype(np.float64) @ M + bias, atol=1e-5)


def test_fit_linear_map_and_too_few_shared_words():
    rng = np.random.default_rng(0)
    X, M = rng.standard_normal((50, 4)), rng.standard_normal((4, 3))
    got, r2 = fit_linear_map(X, X @ M)
    np.testing.assert_allclose(got, M, atol=1e-10)
    assert r2 == pytest.approx(1.0)
    ours, source, _, _ = synthetic_spaces(shared=5, p=12)
    with pytest.raises(ModelError, match="only 6 words are shared"):
        expand_vocabulary(ours, source)


def test_expand_cli(tmp_path, runner):
    ours, source, M, X = synthetic_spaces()
    save_model(ours, tmp_path / "m")
    export_word2vec(source, tmp_path / "src.txt")
    result = runner.invoke(main, ["expand", "-m", str(tmp_path / "m"), "--source", str(tmp_path / "src.txt"),
                                  "-o", str(tmp_path / "big")])
    assert result.exit_code == 0, result.output
    assert "151 shared words" in result.stderr and "added 250 words (152 -> 402)" in result.stderr
    assert "warning" not in result.stderr
    new = load_model(tmp_path / "big")
    np.testing.assert_allclose(new["w399"], X[399].astype(np.float64) @ M, atol=1e-4)
    meta = json.loads((tmp_path / "big" / "config.json").read_text())
    assert meta["expansions"][0]["shared"] == 151 and meta["config"] == {"dim": 5}
    # a new word now has an embedding
    sim = runner.invoke(main, ["similarity", "-m", str(tmp_path / "big"), "w399 w1", "w399"])
    assert sim.exit_code == 0, sim.output
    assert_clean_error(runner.invoke(main, ["expand", "-m", str(tmp_path / "m"), "--source",
                                            str(tmp_path / "nope.txt"), "-o", str(tmp_path / "x")]), "nope.txt")
    (tmp_path / "tiny.txt").write_text("2 12\n" + "".join(f"w{i} " + " ".join(["1"] * 12) + "\n" for i in range(2)))
    assert_clean_error(runner.invoke(main, ["expand", "-m", str(tmp_path / "m"), "--source",
                                            str(tmp_path / "tiny.txt"), "-o", str(tmp_path / "x")]), "only 2 words")
    assert not (tmp_path / "x").exists()


# ---------------------------------------------------------------- other systems' vectors


@pytest.mark.parametrize("binary", [False, True])
def test_word2vec_files_score_like_models(tmp_path, runner, binary):
    model = make_model(dim=5, seed=4)
    save_model(model, tmp_path / "m")
    vec = tmp_path / ("v.bin" if binary else "v.txt")
    export_word2vec(model, vec, binary=binary)
    loaded = scbow.load(vec)
    assert loaded.similarity("the cat sat", "a dog ran") == pytest.approx(model.similarity("the cat sat", "a dog ran"),
                                                                          rel=1e-5)
    sts = tmp_path / "sts.tsv"
    sts.write_text("".join(f"{g}\t{a}\t{b}\n" for g, a, b in [
        (4.5, "the cat sat on the mat", "a cat sat on a mat"), (1.0, "the big dog", "small red house"),
        (3.0, "a dog ran", "the dog sat"), (0.5, "café", "the mat"), (2.0, "the red cat", "a big cat")]))
    scores = []
    for m in (tmp_path / "m", vec):
        result = runner.invoke(main, ["evaluate", "-m", str(m), str(sts), "--json"])
        assert result.exit_code == 0, result.output
        scores.append(json.loads(result.stdout)["sets"][0]["pearson"])
    assert scores[0] == pytest.approx(scores[1], abs=1e-5)
    sim = runner.invoke(main, ["similarity", "-m", str(vec), "the cat", "a dog"])
    assert sim.exit_code == 0 and float(sim.stdout) == pytest.approx(model.similarity("the cat", "a dog"), abs=1e-4)


def test_gensim_vectors_can_be_scored(tmp_path, runner):
    gensim_models = pytest.importorskip("gensim.models")
    kv = gensim_models.KeyedVectors(vector_size=4)
    rng = np.random.default_rng(5)
    words = ["the", "cat", "dog", "sat", "ran"]
    kv.add_vectors(words, rng.standard_normal((5, 4)).astype(np.float32))
    kv.save_word2vec_format(str(tmp_path / "g.bin"), binary=True)
    model = scbow.load(tmp_path / "g.bin")
    assert model.similarity("the cat", "the dog") == pytest.approx(
        float(np.dot(kv["the"] + kv["cat"], kv["the"] + kv["dog"])
              / np.linalg.norm(kv["the"] + kv["cat"]) / np.linalg.norm(kv["the"] + kv["dog"])), rel=1e-5)
    got = model.most_similar("cat", topn=3)
    want = kv.most_similar("cat", topn=3)
    assert [w for w, _ in got] == [w for w, _ in want]
    np.testing.assert_allclose([c for _, c in got], [c for _, c in want], rtol=1e-5)


def test_expand_cli_warns_when_the_spaces_are_unrelated(tmp_path, runner):
    ours, source, _, _ = synthetic_spaces()
    rng = np.random.default_rng(9)
    unrelated = Model(ours.vocab, rng.standard_normal(ours.vectors.shape).astype(np.float32))
    save_model(unrelated, tmp_path / "m")
    export_word2vec(source, tmp_path / "src.txt")
    result = runner.invoke(main, ["expand", "-m", str(tmp_path / "m"), "--source", str(tmp_path / "src.txt"),
                                  "-o", str(tmp_path / "big")])
    assert result.exit_code == 0, result.output
    assert "warning: the map explains only" in result.stderr
