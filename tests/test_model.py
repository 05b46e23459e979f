"""The Model API (scbow.vectors.model): embed and encode against plain per-sentence references,
lookups, neighbours and similarities against plain NumPy and gensim on the same vectors, repr."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import assert_clean_error as _assert_clean_error

import scbow
import scbow.vectors.numeric as model_module
from scbow.cli import main
from scbow.text.tokenize import tokenize
from scbow.text.vocab import Vocab
from scbow.vectors.export import export_word2vec
from scbow.vectors.model import NEIGHBOUR_MIN_COUNT, Model
from scbow.vectors.modeldir import save_model
from scbow.vectors.numeric import kth_largest, mean_rows, row_cosines


def assert_clean_error(result, *fragments):
    _assert_clean_error(result, *fragments, exit_code=1)


def sequential_means(vectors, ids, lengths) -> np.ndarray:
    """float64 sums row after row from 0, as the embedding kernels do; NaN for an empty group."""
    out = np.full((len(lengths), vectors.shape[1]), np.nan)
    pos = 0
    for n, length in enumerate(lengths):
        if length:
            acc = np.zeros(vectors.shape[1])
            for i in ids[pos:pos + length]:
                acc = acc + vectors[i].astype(np.float64)
            out[n] = acc / length
        pos += length
    return out


def reference_embed(model: Model, sentences) -> np.ndarray:
    """Model.embed(sentences) spelled out: tokenize each sentence, keep the known words."""
    ids, lengths = [], []
    for sentence in sentences:
        known = [model.vocab.index[t] for t in tokenize(sentence) if t in model.vocab.index]
        ids += known
        lengths.append(len(known))
    return sequential_means(np.asarray(model.vectors), ids, lengths).astype(np.float32)


@pytest.mark.parametrize("dim", [1, 3, 300])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mean_rows_sums_in_order(dim, dtype, monkeypatch):
    monkeypatch.setattr(model_module, "_CHUNK_ROWS", 7)  # long groups cross several chunks
    rng = np.random.default_rng(dim)
    # magnitudes 1e-6 .. 1e6: the float64 sums depend on the order of the additions
    vectors = (rng.standard_normal((50, dim)) * 10.0 ** rng.integers(-6, 7, (50, dim))).astype(np.float32)
    many = np.concatenate([rng.integers(0, 6, 40), [0, 1, 30, 25, 60], rng.integers(0, 12, 20)])
    for lengths in (many, np.array([0, 13, 1, 40]), np.array([25])):  # by position, then one by one
        ids = rng.integers(0, 50, lengths.sum())
        got = mean_rows(vectors, ids, lengths, dtype=dtype)
        assert got.dtype == dtype and got.shape == (len(lengths), dim)
        np.testing.assert_array_equal(got, sequential_means(vectors, ids, lengths).astype(dtype))


def test_mean_rows_edge_cases(tmp_path):
    vectors = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert mean_rows(vectors, np.array([], dtype=np.int64), np.array([], dtype=np.int64)).shape == (0, 3)
    assert np.isnan(mean_rows(vectors, np.array([], dtype=np.int64), np.array([0, 0]))).all()
    got = mean_rows(vectors, [3, 1, 2], [0, 1, 0, 2])  # lists are taken too
    np.testing.assert_array_equal(got[[1, 3]], [[9, 10, 11], [4.5, 5.5, 6.5]])
    assert np.isnan(got[[0, 2]]).all()
    np.save(tmp_path / "v.npy", vectors)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")  # as scbow.load gives them
    np.testing.assert_array_equal(mean_rows(mapped, [3, 1, 2], [0, 1, 0, 2]), got)


@pytest.fixture
def model():
    words = ["the", "cat", "sat", "on", "mat", ".", "ς", "σ", "οδος", "don't", "naïve", "a", "dog", "ran"]
    rng = np.random.default_rng(0)
    vectors = (rng.standard_normal((len(words), 16)) * 10.0 ** rng.integers(-4, 4, (len(words), 16)))
    return Model(Vocab(words, np.arange(len(words), 0, -1)), vectors.astype(np.float32))


ODD = ["The cat sat on the mat.", "", "   ", "zebra", "the cat\nsat", "the cat\r\nsat\n", "\n", "ΟΔΟΣ",
       "ΟΔΟΣ ς", "Σ", "ΑΣ\nΣ", "DON'T  naïve\tcat", "a\ud800b the", "\u2028the\x85cat\x1c", "cat " * 40 + "dog",
       "\t\n", "🙂🙃 🙂", "e\u0301te\u0301", "שלום עולם", "\u200b\u200d\ufeff", "\x00\x07\x1b[31m", "ﷺ" * 1000,
       "the\u00a0cat", "CAT SAT"]


def test_embed_is_tokenize_then_average(model):
    got = model.embed(ODD)
    assert got.dtype == np.float32 and got.shape == (len(ODD), 16)
    np.testing.assert_array_equal(got, reference_embed(model, ODD))
    for sentence, row in zip(ODD, got):  # one at a time: the same rows
        np.testing.assert_array_equal(model.embed([sentence])[0], row)
    many = [f"{a} {b} the {c}" for a in ("cat", "dog", "x") for b in ("sat", "ran", "") for c in ODD]
    np.testing.assert_array_equal(model.embed(many), reference_embed(model, many))


def test_embed_takes_any_iterable_of_str_with_sentences_repeated(model):
    sentences = ["the cat", "a dog ran", "the cat", "", "zebra", "", "the cat", "A dog ran"]
    got = model.embed(sentences)
    np.testing.assert_array_equal(got, reference_embed(model, sentences))
    np.testing.assert_array_equal(got[0], got[2])
    for same in (tuple(sentences), np.array(sentences), (s for s in sentences)):
        np.testing.assert_array_equal(model.embed(same), got)
    assert model.embed([]).shape == (0, 16)
    with pytest.raises(TypeError, match="wrap a single sentence"):
        model.embed("a single string")
    with pytest.raises(TypeError, match="got bytes"):
        model.embed(b"the cat")
    with pytest.raises(TypeError, match="sentence 1 is a bytes"):
        model.embed(["the cat", b"a dog"])


def test_embed_with_a_line_end_in_the_vocabulary(model):
    # no sentence can hold the token "\n"; a vocabulary that has it changes nothing
    words = model.vocab.words + ["\n"]
    odd = Model(Vocab(words, np.arange(len(words), 0, -1)),
                np.vstack([model.vectors, np.full((1, 16), 7, dtype=np.float32)]))
    np.testing.assert_array_equal(odd.embed(ODD), model.embed(ODD))


def test_row_cosines_match_the_formula():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 50, 300)) * 10.0 ** rng.integers(-3, 3, (2, 50, 1))
    a[3] = 0.0
    b[5] = np.nan
    a[7] = -b[7]
    with np.errstate(invalid="ignore"):
        expected = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    got = row_cosines(a, b)
    assert np.isnan(got[[3, 5]]).all() and got[7] == pytest.approx(-1.0, abs=1e-15)
    ok = np.isfinite(expected)
    assert np.isnan(got[~ok]).all()
    np.testing.assert_allclose(got[ok], expected[ok], rtol=1e-14, atol=1e-15)


def test_encode_is_embed_with_sentence_transformers_conventions(model):
    sentences = ["the cat sat", "zebra", "a dog ran .", "the cat sat"]
    want = model.embed(sentences)
    np.testing.assert_array_equal(model.encode(sentences), want)
    np.testing.assert_array_equal(model.encode(tuple(sentences)), want)
    np.testing.assert_array_equal(model.encode(s for s in sentences), want)  # a generator, read in batches
    np.testing.assert_array_equal(model.encode(sentences, batch_size=1), want)
    np.testing.assert_array_equal(model.encode(iter(sentences), batch_size=3), want)
    one = model.encode("the cat sat")
    assert one.shape == (16,) and one.dtype == np.float32
    np.testing.assert_array_equal(one, want[0])
    assert model.encode([]).shape == (0, 16)
    # normalize_embeddings, fill and unknown
    sentences = ["the cat sat", "zebra", "a dog"]
    raw = model.embed(sentences)
    unit = model.encode(sentences, normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(unit[[0, 2]], axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(unit[0], raw[0] / np.linalg.norm(raw[0]), rtol=1e-5)
    assert np.isnan(unit[1]).all()  # nothing to average: no embedding
    zeros = model.encode(sentences, fill=0.0)
    assert (zeros[1] == 0).all() and np.array_equal(zeros[[0, 2]], raw[[0, 2]])
    assert (model.encode("zebra", fill=0.0) == 0).all()
    assert np.isfinite(model.encode(["zebra"], unknown="hash")).all()
    for bad, error in ((dict(batch_size=0), ValueError), (dict(batch_size=True), ValueError), (dict(fill="zero"), TypeError)):
        with pytest.raises(error):
            model.encode(["the cat"], **bad)
    with pytest.raises(TypeError, match="sentence 1 is a bytes"):
        model.encode(["the cat", b"the dog"])
    with pytest.raises(TypeError, match="iterable of sentences"):
        model.encode(42)


def test_a_sentence_of_300000_tokens(model):
    sentence = " ".join(["the cat sat"] * 100_000)
    expected = np.asarray(model.vectors)[[model.vocab.index[w] for w in ("the", "cat", "sat")]].mean(axis=0)
    np.testing.assert_allclose(model.embed([sentence])[0], expected, rtol=1e-5, atol=1e-6)
    assert model.similarity(sentence, "sat the cat") == pytest.approx(1.0, abs=1e-5)


def test_ids_and_similarity():
    tiny = Model(Vocab(["the", "cat", "sat", "dog", "."], [5, 4, 3, 2, 1]),
                 np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 2, 1], [1, 1, 1]], dtype=np.float32))
    assert tiny.ids("The zebra sat , quickly") == ([0, 2], ["zebra", ",", "quickly"])
    assert tiny.similarity("the cat", "cat the") == pytest.approx(1.0)
    assert tiny.similarity("cat", "sat") == pytest.approx(0.0, abs=1e-7)
    assert tiny.similarity("cat", "dog") == pytest.approx(2 / math.sqrt(5), rel=1e-6)
    assert math.isnan(tiny.similarity("the cat", "xyzzy zebra"))
    assert math.isnan(tiny.similarity("", "the"))
    assert math.isnan(tiny.similarity("qwerty", "asdf"))


# ---------------------------------------------------------------- lookups


SENTENCE_WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "a", "big", "small", "red", "house", "."]


def random_model(n_words=400, dim=20, seed=0, config=None, info=None) -> Model:
    rng = np.random.default_rng(seed)
    words = SENTENCE_WORDS + [f"w{i}" for i in range(n_words - len(SENTENCE_WORDS))]
    # every word seen often enough to be a neighbour: most_similar ranks them all, as gensim does
    counts = NEIGHBOUR_MIN_COUNT + np.arange(n_words, 0, -1) * 3
    vectors = rng.standard_normal((n_words, dim)).astype(np.float32)
    return Model(Vocab(words, counts), vectors, config, info)


def as_gensim(model: Model):
    kv = pytest.importorskip("gensim.models").KeyedVectors(model.dim)
    kv.add_vectors(list(model.index_to_key), np.asarray(model.vectors, dtype=np.float32))
    return kv


def brute_force(model: Model, positive, negative=(), topn=10, restrict=None):
    """Nearest words by float64 cosine to the mean of the unit terms; query words left out, ties to the lower id."""
    V = np.asarray(model.vectors, dtype=np.float64)
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    row = lambda w: V[model.key_to_index[w.lower() if w not in model.key_to_index else w]]  # noqa: E731
    terms = [unit(row(w) if isinstance(w, str) else np.asarray(w, np.float64)) for w in positive]
    terms += [-unit(row(w) if isinstance(w, str) else np.asarray(w, np.float64)) for w in negative]
    q = unit(np.mean(terms, axis=0))
    norms = np.linalg.norm(V, axis=1)
    scores = V @ q / np.where(norms > 0, norms, 1.0)
    n = len(V) if restrict is None else min(restrict, len(V))
    skip = {model.get_index(w) for w in list(positive) + list(negative) if isinstance(w, str)}
    ids = [i for i in range(n) if i not in skip]
    ids.sort(key=lambda i: (-scores[i], i))
    return [(model.index_to_key[i], float(scores[i])) for i in ids[:topn]]


def assert_same(got, want, atol=1e-5):
    assert [w for w, _ in got] == [w for w, _ in want]
    np.testing.assert_allclose([c for _, c in got], [c for _, c in want], rtol=0, atol=atol)


@pytest.fixture(scope="module")
def model400():
    return random_model()


@pytest.fixture(scope="module")
def kv(model400):
    return as_gensim(model400)


def test_gensim_names(model400):
    assert model400.index_to_key is model400.vocab.words and model400.key_to_index is model400.vocab.index
    assert model400.index_to_key[model400.key_to_index["dog"]] == "dog"
    assert model400.vector_size == model400.dim == 20 and len(model400) == 400
    np.testing.assert_array_equal(model400[["cat", "mat"]], model400.vectors[[1, 6]])
    assert model400[[]].shape == (0, 20)
    np.testing.assert_allclose(model400.get_vector("cat", norm=True),
                               model400["cat"] / np.linalg.norm(model400["cat"].astype(np.float64)), rtol=1e-6)
    assert model400.get_vector("cat") is not None and np.array_equal(model400.get_vector("cat"), model400["cat"])


def test_lookup_lowercases_like_the_cli():
    m = Model(Vocab(["king", "Apple", "apple", "x"], np.array([4, 3, 2, 1]) * NEIGHBOUR_MIN_COUNT),
              np.eye(4, dtype=np.float32))
    np.testing.assert_array_equal(m["King"], m["king"])  # not in the vocabulary as typed: lowercased
    np.testing.assert_array_equal(m["KING"], m.vectors[0])
    np.testing.assert_array_equal(m["Apple"], m.vectors[1])  # the exact spelling wins
    np.testing.assert_array_equal(m["APPLE"], m.vectors[2])
    assert m.get_index("King") == 0 and m.get_index("Zebra", -1) == -1
    # `in` agrees with [], exact membership is key_to_index's
    assert "King" in m and "king" in m and "King" not in m.key_to_index
    assert "zebra" not in m and 0 not in m and ["king"] not in m
    with pytest.raises(KeyError, match=r"'Zebra' is not in the vocabulary \(nor is 'zebra'\)"):
        m["Zebra"]
    with pytest.raises(KeyError, match="'zebra' is not in the vocabulary"):
        m.get_index("zebra")
    assert [w for w, _ in m.most_similar("KING", topn=4)] == [w for w, _ in m.most_similar("king", topn=4)]
    assert len(m.most_similar("king", topn=4)) == 3
    assert "king" not in [w for w, _ in m.most_similar("King", topn=4)]  # the query word is left out as found
    assert m.n_similarity(["King"], ["APPLE"]) == m.n_similarity(["king"], ["apple"])


# ---------------------------------------------------------------- neighbours


@pytest.mark.parametrize("query", [
    (["cat"], []), (["dog", "mat"], []), (["cat", "big"], ["small"]), (["w7"], ["w9", "w11"]), (["vector"], []),
])
def test_most_similar_agrees_with_gensim(model400, kv, query):
    positive, negative = query
    vector = np.linspace(-1, 1, model400.dim).astype(np.float32)
    positive = [vector if w == "vector" else w for w in positive]
    got = model400.most_similar(positive, topn=10, negative=negative)
    assert_same(got, kv.most_similar(positive=positive, negative=negative, topn=10))
    assert_same(got, brute_force(model400, positive, negative), atol=1e-12)


def test_most_similar_restrict_vocab(model400, kv):
    for n in (1, 2, 15, 60, 399):
        got = model400.most_similar("w100", topn=10, restrict_vocab=n)  # the query word itself is outside the range
        assert all(model400.key_to_index[w] < n for w, _ in got) and len(got) == min(10, n)
        assert_same(got, kv.most_similar("w100", topn=10, restrict_vocab=n))
        assert_same(got, brute_force(model400, ["w100"], restrict=n), atol=1e-12)
    # the query word inside the range is left out of it
    assert len(model400.most_similar("cat", topn=5, restrict_vocab=2)) == 1
    assert model400.most_similar("cat", topn=5, restrict_vocab=1000) == model400.most_similar("cat", topn=5)
    assert model400.most_similar("cat", topn=5, restrict_vocab=np.int64(30)) == model400.most_similar("cat", topn=5,
                                                                                                  restrict_vocab=30)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="restrict_vocab"):
            model400.most_similar("cat", restrict_vocab=bad)


def test_similar_by_vector_and_word(model400, kv):
    rng = np.random.default_rng(3)
    for _ in range(3):
        v = rng.standard_normal(model400.dim).astype(np.float32)
        got = model400.similar_by_vector(v, topn=7)
        assert_same(got, kv.similar_by_vector(v, topn=7))
        assert_same(got, brute_force(model400, [v], topn=7), atol=1e-12)
        assert_same(model400.similar_by_vector(v, topn=7, restrict_vocab=50), kv.similar_by_vector(v, topn=7, restrict_vocab=50))
    # a word's own vector: the word itself comes first (nothing is left out)
    assert model400.similar_by_vector(model400["dog"], topn=1)[0][0] == "dog"
    assert model400.similar_by_vector(list(map(float, model400["dog"])), topn=1)[0][0] == "dog"
    with pytest.raises(ValueError, match="shape"):
        model400.similar_by_vector(np.ones(model400.dim + 1))
    assert model400.similar_by_word("Dog", topn=4) == model400.most_similar("dog", topn=4)
    assert_same(model400.similar_by_word("dog", topn=4), kv.similar_by_word("dog", topn=4))


def test_most_similar_large_vocabulary_matches_float64(seed=4):
    """Enough words for the sampled top-k selection; near ties that float32 cannot order."""
    rng = np.random.default_rng(seed)
    n, dim = 6000, 16
    V = rng.standard_normal((n, dim))
    base = rng.standard_normal(dim)
    near = rng.choice(n, 40, replace=False)
    V[near] = base + 1e-4 * rng.standard_normal((40, dim))  # cosines to base 1 - ~1e-8: float32 cannot tell
    V[near[:4]] = base  # exact ties: the more frequent word first
    words = [f"v{i}" for i in range(n)]
    m = Model(Vocab(words, np.arange(n, 0, -1)), V.astype(np.float32))
    for query in ([base], [words[7]], [words[near[5]]], [words[1], words[2], words[3]]):
        for topn in (1, 10, 35):
            assert_same(m.most_similar(query, topn=topn), brute_force(m, query, topn=topn), atol=1e-12)
    # gensim orders these near ties by float32 rounding: the same cosines, not the same words
    theirs = as_gensim(m).most_similar([base], topn=10)
    np.testing.assert_allclose([c for _, c in m.most_similar([base], topn=10)], [c for _, c in theirs], atol=1e-6)


def test_most_similar_odd_rows_are_never_nan():
    V = np.array([[1, 0, 0], [0, 0, 0], [1e-35, 1e-35, 0], [3e35, 1e35, 0], [0, 1, 0], [1, 1, 1]], dtype=np.float32)
    m = Model(Vocab(["q", "zero", "tiny", "huge", "y", "d"], np.arange(6, 0, -1) * NEIGHBOUR_MIN_COUNT), V)
    got = m.most_similar("q", topn=5)
    assert all(np.isfinite(c) for _, c in got)
    assert_same(got, brute_force(m, ["q"], topn=5), atol=1e-12)
    assert dict(got)["zero"] == 0.0 and dict(got)["tiny"] == pytest.approx(2 ** -0.5, abs=1e-6)
    assert [w for w, _ in m.most_similar("q", topn=2)] == ["huge", "tiny"]
    with pytest.raises(ValueError, match="zero"):
        m.most_similar("q", negative=["Q"])  # cancelled out
    f64 = Model(m.vocab, V.astype(np.float64))  # not float32: a float32 copy is scored, float64 decides
    assert f64.most_similar("q", topn=5) == got


def test_kth_largest():
    rng = np.random.default_rng(1)
    for n in (1, 7, 700, 5000, 40000):
        v = rng.standard_normal(n).astype(np.float32)
        v[: n // 3] = np.round(v[: n // 3])  # many ties
        v[rng.integers(0, n, n // 10)] = -np.inf
        desc = np.sort(v)[::-1]
        for k in sorted({k for k in (1, 2, 10, 100, n) if k <= n}):
            assert kth_largest(v, k) == desc[k - 1]


def test_cache_follows_the_vectors():
    m = random_model(seed=5)
    before = m.most_similar("cat", topn=5)
    m.unknown_norm()
    new = np.random.default_rng(9).standard_normal(m.vectors.shape).astype(np.float32)
    m.vectors = new  # assigned: norms and unknown-word scale recomputed
    assert_same(m.most_similar("cat", topn=5), brute_force(m, ["cat"], topn=5), atol=1e-12)
    assert m.most_similar("cat", topn=5) != before
    assert m.unknown_norm() == Model(m.vocab, new.copy()).unknown_norm()
    new[1:] *= np.linspace(0.1, 3, len(new) - 1, dtype=np.float32)[:, None]  # in place: reassign to tell the model
    m.vectors = m.vectors
    assert_same(m.most_similar("cat", topn=5), brute_force(m, ["cat"], topn=5), atol=1e-12)
    with pytest.raises(ValueError, match="vocabulary has 400 words"):
        m.vectors = new[:10]
    with pytest.raises(ValueError):
        Model(m.vocab, new[:10])


def test_most_similar_takes_what_gensim_takes(model400):
    """negative=None is "none"; a huge but finite vector is a direction; bytes are not words."""
    assert model400.most_similar("cat", negative=None) == model400.most_similar("cat")
    v = model400["cat"].astype(np.float64)
    assert [w for w, _ in model400.similar_by_vector(1e300 * v)] == [w for w, _ in model400.similar_by_vector(v)]
    with pytest.raises(ValueError, match="NaN or inf"):
        model400.similar_by_vector(np.full(model400.dim, np.inf))
    with pytest.raises(TypeError, match="a query word is a str, got bytes"):
        model400.most_similar(b"cat")


def rare_word_model():
    """'cat' is nearest to 'mezzanine' (seen 3 times) by cosine, then to 'dog' (seen 500 times),
    and to 'kitten', whose count is unknown (0: a word added by expand or read from a word2vec file)."""
    words = ["the", "cat", "dog", "mat", "mezzanine", "padoie", "kitten"]
    counts = [1000, 800, 500, 200, 3, 7, 0]
    vectors = np.array([[0, 0, 1], [1, 0, 0], [0.8, 0.6, 0], [0, 1, 0], [1, 0.01, 0], [0.99, 0.1, 0],
                        [0.9, 0.3, 0]], dtype=np.float32)
    return Model(Vocab(words, counts), vectors)


def near_model():
    """The default minimum count written out (every other check derives its counts from the constant)."""
    return Model(Vocab(["the", "cat", "seen-99", "seen-100"], [1000, 500, 99, 100]),
                 np.array([[0, 1], [1, 0], [1, 0.01], [1, 0.5]], dtype=np.float32))


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
    near = near_model()
    assert [w for w, _ in near.most_similar("cat", topn=2)] == ["seen-100", "the"]
    assert [w for w, _ in near.most_similar("cat", topn=1, min_count=99)] == ["seen-99"]
    assert [w for w, _ in near.similar_by_vector(near["cat"], topn=2)] == ["cat", "seen-100"]


def test_neighbors_cli(tmp_path, runner, model400):
    save_model(model400, tmp_path / "m")
    m = ["neighbors", "-m", str(tmp_path / "m")]
    result = runner.invoke(main, [*m, "CAT", "-n", "4"])  # not in the vocabulary as typed: lowercased
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [w for w, _ in rows] == [w for w, _ in model400.most_similar("cat", topn=4)]
    assert [float(c) for _, c in rows] == pytest.approx([c for _, c in model400.most_similar("cat", topn=4)], abs=6e-5)
    result = runner.invoke(main, [*m, "cat", "dog", "--negative", "mat", "-n", "3"])
    assert result.exit_code == 0, result.output
    want = model400.most_similar(["cat", "dog"], topn=3, negative=["mat"])
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [w for w, _ in want]
    assert_clean_error(runner.invoke(main, [*m, "zebra"]), "'zebra' is not in the vocabulary")
    assert_clean_error(runner.invoke(main, m), "give a WORD")
    # --min-count
    save_model(rare_word_model(), tmp_path / "r")
    m = ["neighbors", "-m", str(tmp_path / "r"), "cat"]

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
    assert "--min-count" in help_text and "default: 100" in help_text
    for bad, says in (("-1", "is not a whole number of occurrences"), ("2.5", "is not a whole number"),
                      ("lots", "is not a whole number"), ("1e30", "is more occurrences than any run has")):
        result = runner.invoke(main, [*m, "--min-count", bad])
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert f"Invalid value for '--min-count': {bad!r} {says}" in result.output
    save_model(Model(Vocab(["cat", "mezzanine"], [3, 2]), np.eye(2, dtype=np.float32)), tmp_path / "rare")
    assert_clean_error(runner.invoke(main, ["neighbors", "-m", str(tmp_path / "rare"), "cat"]),
                       f"no other word is seen at least {NEIGHBOUR_MIN_COUNT} times", "--min-count")
    for query in (["cat", "mezzanine"], ["cat", "--negative", "mezzanine"], ["cat", "mezzanine", "--min-count", "0"]):
        assert_clean_error(runner.invoke(main, ["neighbors", "-m", str(tmp_path / "rare"), *query]),
                           "no other word: the query holds every word of the model (2)")
    src = tmp_path / "s.txt"
    src.write_text("the cat\n", encoding="utf-8")
    assert_clean_error(runner.invoke(main, [*m[:3], "--sentence", "cat", "--in", str(src), "--min-count", "5"]),
                       "--min-count is for nearest words")
    save_model(near_model(), tmp_path / "near")
    result = runner.invoke(main, ["neighbors", "-m", str(tmp_path / "near"), "cat", "-n", "1"])
    assert result.exit_code == 0 and result.stdout.split("\t")[0] == "seen-100", result.output


# ---------------------------------------------------------------- similarities


def test_n_similarity_agrees_with_gensim(model400, kv):
    for a, b in ((["cat", "dog"], ["mat"]), (["cat"], ["cat"]), (["w1", "w2", "w3"], ["big", "red", "w300"])):
        want = float(kv.n_similarity(a, b))
        mean = lambda ws: np.mean([model400.vectors[model400.key_to_index[w]].astype(np.float64) for w in ws], axis=0)  # noqa: E731
        x, y = mean(a), mean(b)
        assert model400.n_similarity(a, b) == pytest.approx(float(x @ y / np.linalg.norm(x) / np.linalg.norm(y)), abs=1e-12)
        assert model400.n_similarity(a, b) == pytest.approx(want, abs=1e-5)
    assert model400.n_similarity(["Cat", "DOG"], ["mat"]) == model400.n_similarity(["cat", "dog"], ["mat"])
    with pytest.raises(KeyError, match="zebra"):
        model400.n_similarity(["cat", "zebra"], ["dog"])
    with pytest.raises(ValueError, match="at least one"):
        model400.n_similarity([], ["dog"])


SENTENCES = ["The cat sat on the mat.", "a big dog ran", "xyzzy quux", "", "red house", "the the cat",
             "A BIG DOG RAN", "small red mat ."]


@pytest.mark.parametrize("unknown", [None, "omit", "hash"])
def test_similarities_match_similarity(model400, unknown):
    rng = np.random.default_rng(2)
    pairs = [(SENTENCES[i], SENTENCES[j]) for i, j in rng.integers(0, len(SENTENCES), (40, 2))]
    pairs += [("a big dog ran", "a big dog ran"), ("xyzzy", "the cat")]
    got = model400.similarities(pairs, unknown=unknown)
    assert got.dtype == np.float64 and got.shape == (len(pairs),)
    want = np.array([model400.similarity(a, b, unknown=unknown) for a, b in pairs])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    if unknown != "hash":
        assert np.isnan(got[-1]) and np.isnan(model400.similarities([("", "the cat")], unknown=unknown)[0])
    np.testing.assert_array_equal(model400.similarities([a for a, _ in pairs], [b for _, b in pairs], unknown=unknown), got)
    assert got[-2] == pytest.approx(1.0, abs=1e-12)


def test_similarities_inputs(model400):
    assert model400.similarities([]).shape == (0,) and model400.similarities([], []).shape == (0,)
    assert model400.similarities((p for p in [("cat", "dog")]))[0] == pytest.approx(model400.similarity("cat", "dog"))
    with pytest.raises(ValueError, match="2 first sentences but 1"):
        model400.similarities(["a", "b"], ["c"])
    with pytest.raises(TypeError):
        model400.similarities("the cat", "a dog")
    with pytest.raises(ValueError, match="pair 1"):
        model400.similarities([("a", "b"), ("a", "b", "c")])


def test_gensim_word_methods_agree_with_gensim(tmp_path):
    model = random_model(n_words=80, dim=10, seed=5)
    kv = as_gensim(model)
    rng = np.random.default_rng(5)
    assert model.get_vecattr("w3", "count") == NEIGHBOUR_MIN_COUNT + (80 - 16) * 3  # w3 is row 16
    np.testing.assert_allclose(model.get_normed_vectors(), kv.get_normed_vectors(), rtol=1e-6)
    assert model.distance("w1", "w2") == pytest.approx(kv.distance("w1", "w2"), rel=1e-6)
    np.testing.assert_allclose(model.distances("w1", ["w2", "w9"]), kv.distances("w1", ["w2", "w9"]), rtol=1e-5)
    np.testing.assert_array_equal(model.distances("w1", np.array(["w2", "w9"])), model.distances("w1", ["w2", "w9"]))
    np.testing.assert_array_equal(model.distances("w1", None), model.distances("w1"))  # None: every word, as gensim
    np.testing.assert_allclose(model.distances("w1"), kv.distances("w1"), rtol=1e-5, atol=1e-6)
    for a, b in (("w1", "w2"), ("w7", "w40"), ("w0", "w59")):
        assert model.rank(a, b) == kv.rank(a, b)
    group = ["w1", "w2", "w3", "w4", "w5"]
    assert model.doesnt_match(group) == kv.doesnt_match(group)
    pairs = tmp_path / "pairs.tsv"
    # no pair twice in two orders: float32 (gensim) and float64 (here) would break that tie differently
    pairs.write_text("# a comment\n" + "".join(f"w{i}\tw{i + 20}\t{rng.uniform(0, 10):.2f}\n" for i in range(40))
                     + "w1\tnot-a-word\t5.0\n")
    pearson, spearman, oov = model.evaluate_word_pairs(pairs)
    theirs = kv.evaluate_word_pairs(str(pairs), delimiter="\t")
    assert pearson == pytest.approx(theirs[0][0], rel=1e-5) and spearman == pytest.approx(theirs[1][0], rel=1e-5)
    assert oov == pytest.approx(theirs[2] / 100)
    model.save_word2vec_format(tmp_path / "v.bin", binary=True)
    with pytest.raises(TypeError, match="binary must be True or False"):
        model.save_word2vec_format(tmp_path / "v.txt", binary="no")  # truthy: it wrote binary
    np.testing.assert_array_equal(type(kv).load_word2vec_format(str(tmp_path / "v.bin"), binary=True)["w4"], model["w4"])
    with pytest.raises(KeyError):
        model.get_vecattr("w1", "colour")


def test_word_methods_use_the_word_part():
    words = ["a", "b", "c"]
    S = np.array([[1, 0], [1, 0.01], [0, 1]], dtype=np.float32)
    G = np.array([[1, 0], [0, 1], [1, 0.01]], dtype=np.float32)
    m = Model(Vocab(words, [9, 9, 9]), np.concatenate([S, G], axis=1), {"dim": 2, "word_passes": 1, "word_dim": 2})
    assert m.rank("a", "c") == 1 and m.distance("a", "c") < 1e-3 and m.doesnt_match(["a", "c", "b"]) == "b"
    assert m.get_normed_vectors().shape == (3, 2)


# ---------------------------------------------------------------- the rest


def test_repr(tmp_path):
    info = {"corpus": {"files": ["/data/a.txt.xz", "/data/b.txt"], "tokens": 1234567, "vocab_size": 40},
            "training": {"examples": 10}}
    m = random_model(n_words=40, dim=8, seed=7, config={"dim": 8, "epochs": 2}, info=info)
    assert repr(m) == "<scbow Model: 40 words x 8 dims, trained on a.txt.xz and 1 more file (1,234,567 tokens, 2 epochs)>"
    assert repr(random_model(n_words=13, dim=3)) == "<scbow Model: 13 words x 3 dims>"
    export_word2vec(m, tmp_path / "v.txt")
    text = repr(scbow.load(tmp_path / "v.txt"))
    assert text.startswith("<scbow Model: 40 words x 8 dims, from word2vec-text file ") and str(tmp_path / "v.txt") in text
    m.save(tmp_path / "m")
    assert repr(scbow.load(tmp_path / "m")) == repr(m)
    big = Model(Vocab([f"w{i}" for i in range(1234)], np.ones(1234)), np.ones((1234, 300), np.float32), {"epochs": 1},
                {"corpus": {"files": ["x"]}, "expansions": [{"source": "glove.txt", "added": 1000}]})
    assert repr(big) == "<scbow Model: 1,234 words x 300 dims, trained on x (1 epoch), expanded by 1,000 words from glove.txt>"
    # the raw token count (out-of-vocabulary tokens too), as train's corpus line and info show it
    from scbow.use.describe import describe

    corpus = {"files": ["/data/book.txt"], "raw_tokens": 12_335_808, "tokens": 12_231_071}
    m = Model(Vocab(["a", "b"], [3, 2]), np.ones((2, 4), np.float32), {"epochs": 1}, {"corpus": corpus})
    assert "(12,335,808 tokens, 1 epoch)" in repr(m) and "12,231,071" not in repr(m)
    assert any("12,335,808 tokens" in line for line in describe(m, "/m"))
    old = Model(Vocab(["a", "b"], [3, 2]), np.ones((2, 4), np.float32), {}, {"corpus": {"files": ["x"], "tokens": 7}})
    assert repr(old) == "<scbow Model: 2 words x 4 dims, trained on x (7 tokens)>"  # a model without the raw count


def test_embed_from_many_threads_while_the_hash_cache_is_cleared(model, monkeypatch):
    """Threads sharing a model (or a LineEncoder) get the rows one thread gets, though the cache
    of hashed vectors, bounded to 3 words here, is cleared by one call while others use it (issue 34)."""
    import sys
    import time
    from concurrent.futures import ThreadPoolExecutor

    import scbow.use.embedding as embedding
    import scbow.vectors.model as model_api

    def hashing():
        return Model(model.vocab, model.vectors, {"unknown": "hash", "unknown_scale": 1.0})

    batches = [[f"the zebra{i} cat okapi{i % 3}", f"quagga{i} sat on gnu{i + 1} mat", "the cat"] for i in range(12)]
    calls = {
        "embed": lambda m, b: m.embed(b),
        "similarities": lambda m, b: m.similarities(b[:2], b[1:]),
        "similarity": lambda m, b: np.array(m.similarity(b[0], b[1])),
    }
    want = {(name, i): call(hashing(), b) for name, call in calls.items() for i, b in enumerate(batches)}
    shared = hashing()
    lines = [[s + "\n" for s in b] for b in batches]
    encoder_want = [embedding.LineEncoder(hashing()).encode(block) for block in lines]
    encoder = embedding.LineEncoder(shared)

    class Yielding(dict):  # a cache that lets other threads in after every change and look-up
        def __setitem__(self, key, value):
            super().__setitem__(key, value)
            time.sleep(0)

        def update(self, *args):
            super().update(*args)
            time.sleep(0)

        def clear(self):
            super().clear()
            time.sleep(0)

        def get(self, key, default=None):
            time.sleep(0)
            return super().get(key, default)

    shared._hashed, encoder._seen = Yielding(), Yielding()
    monkeypatch.setattr(model_api, "_HASH_CACHE", 3)
    monkeypatch.setattr(embedding, "_HASH_CACHE", 3)
    jobs = [(name, i) for _ in range(4) for name in calls for i in range(len(batches))]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns as often as they can
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda job: calls[job[0]](shared, batches[job[1]]), jobs))
            got_encoded = list(pool.map(lambda j: encoder.encode(lines[j % len(lines)]), range(4 * len(lines))))
    finally:
        sys.setswitchinterval(switch)
    for job, rows in zip(jobs, got):
        np.testing.assert_array_equal(rows, want[job])
    for j, (ids, extra) in enumerate(got_encoded):
        np.testing.assert_array_equal(ids, encoder_want[j % len(lines)][0])
        np.testing.assert_array_equal(extra, encoder_want[j % len(lines)][1])


def test_the_api_takes_numpy_integers_and_refuses_a_senseless_unknown_scale(model400):
    model, word = model400, "the"
    assert model.most_similar(word, topn=np.int64(3)) == model.most_similar(word, topn=3)
    assert len(model.similar_by_word(word, topn=np.int32(2), min_count=np.int64(0))) == 2
    for bad in (np.True_, 0, -1, 2.5, "3"):
        with pytest.raises(ValueError, match="topn"):
            model.most_similar(word, topn=bad)
    assert np.isfinite(model.embed(["zzqx qqzz"], unknown="hash", unknown_scale=np.float32(0.5))).all()
    for bad in (float("nan"), float("inf"), 0.0, -1.0, True, "1", 1e300, 10**400, 2e6):
        with pytest.raises(ValueError, match="unknown_scale"):
            model.embed(["the cat"], unknown="hash", unknown_scale=bad)


def test_the_api_takes_one_path_a_dict_and_numpy_numbers(small_corpus_file):
    from scbow.config import TrainConfig
    from scbow.errors import ConfigError

    # a single path as a str (as a Path: test_trainer's test_the_python_api_reports_through_logging)
    settings = {"dim": 8, "min_count": 1, "threads": 1, "word_passes": 0}
    assert scbow.train(str(small_corpus_file), settings, quiet=True, use_cache=False).dim == 8
    # a generator of paths, read once (it was read twice: the second time found no file)
    assert scbow.train((p for p in [small_corpus_file]), settings, quiet=True, use_cache=False).dim == 8
    with pytest.raises(TypeError, match="TrainConfig"):
        scbow.train([small_corpus_file], "dim=8", quiet=True)
    for bad, named in ((str(small_corpus_file).encode(), "bytes"), (5, "int"), ([small_corpus_file, None], "NoneType")):
        with pytest.raises(TypeError, match=f"corpus must be paths of text files .* not {named}$"):
            scbow.train(bad, settings, quiet=True)
    config = TrainConfig(dim=np.int64(16), lr=np.float32(0.05), seed=np.int32(3))
    assert (config.dim, config.seed) == (16, 3) and isinstance(config.dim, int) and isinstance(config.lr, float)
    with pytest.raises(ConfigError):
        TrainConfig(dim=np.bool_(True))
