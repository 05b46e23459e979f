"""The word vectors (scbow.vectors.words, ``model.wv``): lookups, neighbours and word similarities
against plain NumPy and gensim on the same vectors; gensim's rules that tie the methods together
(without gensim too); the view on the model."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import assert_failed as assert_clean_error

import scbow
from scbow.cli import main
from scbow.text.vocab import Vocab
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model
from scbow.vectors.neighbours import NEIGHBOUR_MIN_COUNT
from scbow.vectors.numeric import kth_largest
from scbow.vectors.words import WordVectors, read_word_pairs

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
    kv = pytest.importorskip("gensim.models").KeyedVectors(model.wv.vector_size)
    kv.add_vectors(list(model.wv.index_to_key), np.asarray(model.wv.vectors, dtype=np.float32))
    return kv


def brute_force(model: Model, positive, negative=(), topn=10, restrict=None):
    """Nearest words by float64 cosine to the mean of the unit terms; query words left out, ties to the lower id."""
    V = np.asarray(model.wv.vectors, dtype=np.float64)
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    row = lambda w: V[model.wv.key_to_index[w.lower() if w not in model.wv.key_to_index else w]]  # noqa: E731
    terms = [unit(row(w) if isinstance(w, str) else np.asarray(w, np.float64)) for w in positive]
    terms += [-unit(row(w) if isinstance(w, str) else np.asarray(w, np.float64)) for w in negative]
    q = unit(np.mean(terms, axis=0))
    norms = np.linalg.norm(V, axis=1)
    scores = V @ q / np.where(norms > 0, norms, 1.0)
    n = len(V) if restrict is None else min(restrict, len(V))
    skip = {model.wv.get_index(w) for w in list(positive) + list(negative) if isinstance(w, str)}
    ids = [i for i in range(n) if i not in skip]
    ids.sort(key=lambda i: (-scores[i], i))
    return [(model.wv.index_to_key[i], float(scores[i])) for i in ids[:topn]]


def assert_same(got, want, atol=1e-5):
    assert [w for w, _ in got] == [w for w, _ in want]
    np.testing.assert_allclose([c for _, c in got], [c for _, c in want], rtol=0, atol=atol)


@pytest.fixture(scope="module")
def model400():
    return random_model()


@pytest.fixture(scope="module")
def kv(model400):
    return as_gensim(model400)


def test_lookup_lowercases_like_the_cli():
    m = Model(Vocab(["king", "Apple", "apple", "x"], np.array([4, 3, 2, 1]) * NEIGHBOUR_MIN_COUNT),
              np.eye(4, dtype=np.float32))
    np.testing.assert_array_equal(m.wv["King"], m.wv["king"])  # not in the vocabulary as typed: lowercased
    np.testing.assert_array_equal(m.wv["KING"], m.vectors[0])
    np.testing.assert_array_equal(m.wv["Apple"], m.vectors[1])  # the exact spelling wins
    np.testing.assert_array_equal(m.wv["APPLE"], m.vectors[2])
    assert m.wv.get_index("King") == 0 and m.wv.get_index("Zebra", -1) == -1
    # `in` agrees with [], exact membership is key_to_index's
    assert "King" in m.wv and "king" in m.wv and "King" not in m.wv.key_to_index
    assert "zebra" not in m.wv and 0 not in m.wv and ["king"] not in m.wv
    with pytest.raises(KeyError, match=r"'Zebra' is not in the vocabulary \(nor is 'zebra'\)"):
        m.wv["Zebra"]
    with pytest.raises(KeyError, match="'zebra' is not in the vocabulary"):
        m.wv.get_index("zebra")
    assert [w for w, _ in m.wv.most_similar("KING", topn=4)] == [w for w, _ in m.wv.most_similar("king", topn=4)]
    assert len(m.wv.most_similar("king", topn=4)) == 3
    assert "king" not in [w for w, _ in m.wv.most_similar("King", topn=4)]  # the query word is left out as found
    assert m.wv.n_similarity(["King"], ["APPLE"]) == m.wv.n_similarity(["king"], ["apple"])


# ---------------------------------------------------------------- neighbours


@pytest.mark.parametrize("query", [
    (["cat"], []), (["dog", "mat"], []), (["cat", "big"], ["small"]), (["w7"], ["w9", "w11"]), (["vector"], []),
    ([], ["cat"]),  # as gensim's, negative words alone: nearest to the opposite of "cat"
])
def test_most_similar_agrees_with_gensim(model400, kv, query):
    positive, negative = query
    vector = np.linspace(-1, 1, model400.dim).astype(np.float32)
    positive = [vector if w == "vector" else w for w in positive]
    got = model400.wv.most_similar(positive, topn=10, negative=negative)
    assert_same(got, kv.most_similar(positive=positive, negative=negative, topn=10))
    assert_same(got, brute_force(model400, positive, negative), atol=1e-12)


def test_most_similar_restrict_vocab(model400, kv):
    for n in (1, 2, 15, 60, 399):
        got = model400.wv.most_similar("w100", topn=10, restrict_vocab=n)  # the query word itself is outside the range
        assert all(model400.wv.key_to_index[w] < n for w, _ in got) and len(got) == min(10, n)
        assert_same(got, kv.most_similar("w100", topn=10, restrict_vocab=n))
        assert_same(got, brute_force(model400, ["w100"], restrict=n), atol=1e-12)
    # the query word inside the range is left out of it
    assert len(model400.wv.most_similar("cat", topn=5, restrict_vocab=2)) == 1
    assert model400.wv.most_similar("cat", topn=5, restrict_vocab=1000) == model400.wv.most_similar("cat", topn=5)
    assert model400.wv.most_similar("cat", topn=5, restrict_vocab=np.int64(30)) == model400.wv.most_similar("cat", topn=5,
                                                                                                  restrict_vocab=30)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="restrict_vocab"):
            model400.wv.most_similar("cat", restrict_vocab=bad)


def test_similar_by_vector_and_word(model400, kv):
    rng = np.random.default_rng(3)
    for _ in range(3):
        v = rng.standard_normal(model400.dim).astype(np.float32)
        got = model400.wv.similar_by_vector(v, topn=7)
        assert_same(got, kv.similar_by_vector(v, topn=7))
        assert_same(got, brute_force(model400, [v], topn=7), atol=1e-12)
        assert_same(model400.wv.similar_by_vector(v, topn=7, restrict_vocab=50),
                    kv.similar_by_vector(v, topn=7, restrict_vocab=50))
    # a word's own vector: the word itself comes first (nothing is left out)
    assert model400.wv.similar_by_vector(model400.wv["dog"], topn=1)[0][0] == "dog"
    assert model400.wv.similar_by_vector(list(map(float, model400.wv["dog"])), topn=1)[0][0] == "dog"
    with pytest.raises(ValueError, match="shape"):
        model400.wv.similar_by_vector(np.ones(model400.dim + 1))
    assert model400.wv.similar_by_word("Dog", topn=4) == model400.wv.most_similar("dog", topn=4)
    assert_same(model400.wv.similar_by_word("dog", topn=4), kv.similar_by_word("dog", topn=4))
    # vectors as given, weighted words as gensim's
    v = 3.0 * model400.wv["dog"] + model400.wv["w7"]  # not of length 1: it outweighs the unit vector of "cat"
    for positive, negative in ((["cat", v], []), ([("cat", 2.0), "mat"], ["red"]), ([("cat", 0.5), (v, 2.0)], [("big", -1.5)])):
        assert_same(model400.wv.most_similar(positive, negative=negative, topn=8),
                    kv.most_similar(positive, negative=negative, topn=8))


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
            assert_same(m.wv.most_similar(query, topn=topn), brute_force(m, query, topn=topn), atol=1e-12)
    # gensim orders these near ties by float32 rounding: the same cosines, not the same words
    theirs = as_gensim(m).most_similar([base], topn=10)
    np.testing.assert_allclose([c for _, c in m.wv.most_similar([base], topn=10)], [c for _, c in theirs], atol=1e-6)


def test_most_similar_odd_rows_are_never_nan():
    V = np.array([[1, 0, 0], [0, 0, 0], [1e-35, 1e-35, 0], [3e35, 1e35, 0], [0, 1, 0], [1, 1, 1]], dtype=np.float32)
    m = Model(Vocab(["q", "zero", "tiny", "huge", "y", "d"], np.arange(6, 0, -1) * NEIGHBOUR_MIN_COUNT), V)
    got = m.wv.most_similar("q", topn=5)
    assert all(np.isfinite(c) for _, c in got)
    assert_same(got, brute_force(m, ["q"], topn=5), atol=1e-12)
    assert dict(got)["zero"] == 0.0 and dict(got)["tiny"] == pytest.approx(2 ** -0.5, abs=1e-6)
    assert [w for w, _ in m.wv.most_similar("q", topn=2)] == ["huge", "tiny"]
    with pytest.raises(ValueError, match="zero"):
        m.wv.most_similar("q", negative=["Q"])  # cancelled out
    f64 = Model(m.vocab, V.astype(np.float64))  # not float32: a float32 copy is scored, float64 decides
    assert f64.wv.most_similar("q", topn=5) == got


def test_kth_largest():
    rng = np.random.default_rng(1)
    for n in (1, 7, 700, 5000, 40000):
        v = rng.standard_normal(n).astype(np.float32)
        v[: n // 3] = np.round(v[: n // 3])  # many ties
        v[rng.integers(0, n, n // 10)] = -np.inf
        desc = np.sort(v)[::-1]
        for k in sorted({k for k in (1, 2, 10, 100, n) if k <= n}):
            assert kth_largest(v, k) == desc[k - 1]


def test_wv_is_a_light_view_that_follows_the_vectors():
    m = random_model(seed=5)
    wv = m.wv
    before = wv.most_similar("cat", topn=5)
    m.unknown_norm()
    new = np.random.default_rng(9).standard_normal(m.vectors.shape).astype(np.float32)
    m.vectors = new  # assigned: seen at once, norms and unknown-word scale recomputed
    assert wv.vectors is m.vectors and m.wv is wv
    assert_same(wv.most_similar("cat", topn=5), brute_force(m, ["cat"], topn=5), atol=1e-12)
    assert wv.most_similar("cat", topn=5) != before
    assert m.unknown_norm() == Model(m.vocab, new.copy()).unknown_norm()
    new[1:] *= np.linspace(0.1, 3, len(new) - 1, dtype=np.float32)[:, None]  # in place: reassign to tell the model
    m.vectors = m.vectors
    assert_same(m.wv.most_similar("cat", topn=5), brute_force(m, ["cat"], topn=5), atol=1e-12)
    with pytest.raises(ValueError, match="vocabulary has 400 words"):
        m.vectors = new[:10]
    with pytest.raises(ValueError):
        Model(m.vocab, new[:10])
    twin = copy.copy(m)  # a copy has a view of its own
    twin.vectors = m.vectors[:, ::-1].copy()
    assert twin.wv is not wv and twin.wv._model is twin
    assert_same(twin.wv.most_similar("cat", topn=3), brute_force(twin, ["cat"], topn=3), atol=1e-12)
    m.config = {"dim": 17, "word_passes": 1, "word_dim": 3}  # now it has a word part: the search table follows
    assert wv.vector_size == 3
    assert_same(wv.most_similar("cat", topn=3), brute_force(m, ["cat"], topn=3), atol=1e-12)


def test_the_word_methods_take_what_gensim_takes(model400):
    """negative=None is "none", positive=None too; a huge but finite vector is a direction; bytes are not words, nor
    is a str a list of them."""
    assert model400.wv.most_similar("cat", negative=None) == model400.wv.most_similar("cat")
    assert model400.wv.most_similar(negative=["cat"], topn=5) == model400.wv.most_similar(positive=None, negative="cat", topn=5)
    with pytest.raises(ValueError, match="needs at least one word or vector"):
        model400.wv.most_similar()
    v = model400.wv["cat"].astype(np.float64)
    assert [w for w, _ in model400.wv.similar_by_vector(1e300 * v)] == [w for w, _ in model400.wv.similar_by_vector(v)]
    with pytest.raises(ValueError, match="NaN or inf"):
        model400.wv.similar_by_vector(np.full(model400.dim, np.inf))
    with pytest.raises(TypeError, match="a query word is a str, got bytes"):
        model400.wv.most_similar(b"cat")
    with pytest.raises(TypeError, match="takes a list of words, not a str"):
        model400.wv.doesnt_match("a cat sat on the mat")


def rare_word_model():
    """'cat' is nearest to 'mezzanine' (seen 3 times) by cosine, then to 'dog' (seen 500 times),
    and to 'kitten', whose count is unknown (0: a word read from a word2vec file, say)."""
    words = ["the", "cat", "dog", "mat", "mezzanine", "padoie", "kitten"]
    counts = [1000, 800, 500, 200, 3, 7, 0]
    vectors = np.array([[0, 0, 1], [1, 0, 0], [0.8, 0.6, 0], [0, 1, 0], [1, 0.01, 0], [0.99, 0.1, 0],
                        [0.9, 0.3, 0]], dtype=np.float32)
    return Model(Vocab(words, counts), vectors)


def near_model():
    """The default minimum count written out (every other check derives its counts from the constant)."""
    return Model(Vocab(["the", "cat", "seen-99", "seen-100"], [1000, 500, 99, 100]),
                 np.array([[0, 1], [1, 0], [1, 0.01], [1, 0.5]], dtype=np.float32))


def test_most_similar_ranks_every_word_unless_given_a_minimum_count():
    m = rare_word_model()
    plain = [w for w, _ in m.wv.most_similar("cat", topn=4)]
    assert plain == ["mezzanine", "padoie", "kitten", "dog"]  # by cosine the rare words come first, as in gensim
    assert [w for w, _ in as_gensim(m).most_similar("cat", topn=4)] == plain
    assert [w for w, _ in m.wv.most_similar("cat", topn=4, min_count=1)] == plain
    assert NEIGHBOUR_MIN_COUNT > 7  # the CLI's rule leaves out words seen 3 and 7 times
    # no count recorded: kept
    assert [w for w, _ in m.wv.most_similar("cat", topn=2, min_count=NEIGHBOUR_MIN_COUNT)] == ["kitten", "dog"]
    assert [w for w, _ in m.wv.most_similar("cat", topn=3, min_count=5)] == ["padoie", "kitten", "dog"]
    # the cosines returned are the plain ones, whatever the rule
    assert dict(m.wv.most_similar("cat", topn=10, min_count=50))["dog"] == dict(m.wv.most_similar("cat", topn=10))["dog"]
    assert len(m.wv.most_similar("cat", topn=10, min_count=600)) == 2  # 'the' and 'kitten'; 'cat' is the query
    assert m.wv.most_similar("cat", topn=10, min_count=10**6) == [("kitten", pytest.approx(0.9 / np.hypot(0.9, 0.3)))]
    # the query's own words may be rare; gensim's names take the rule too
    assert [w for w, _ in m.wv.most_similar("mezzanine", topn=1, min_count=NEIGHBOUR_MIN_COUNT)] == ["cat"]
    assert [w for w, _ in m.wv.similar_by_word("cat", topn=1, min_count=NEIGHBOUR_MIN_COUNT)] == ["kitten"]
    assert [w for w, _ in m.wv.similar_by_word("cat", topn=1, min_count=0)] == ["mezzanine"]
    assert [w for w, _ in m.wv.similar_by_vector(m.wv["cat"], topn=2, min_count=NEIGHBOUR_MIN_COUNT)] == ["cat", "kitten"]
    assert [w for w, _ in m.wv.similar_by_vector(m.wv["cat"], topn=2, min_count=0)] == ["cat", "mezzanine"]
    # with restrict_vocab both rules apply ('the' and 'mat' tie at 0: the more frequent first)
    assert [w for w, _ in m.wv.most_similar("cat", topn=5, restrict_vocab=6, min_count=0)] == ["mezzanine", "padoie",
                                                                                            "dog", "the", "mat"]
    assert [w for w, _ in m.wv.most_similar("cat", topn=5, restrict_vocab=6, min_count=NEIGHBOUR_MIN_COUNT)] \
        == ["dog", "the", "mat"]
    # a rare row float32 cannot score (scored apart, in float64) is left out alike
    odd = Model(Vocab(["q", "huge", "y"], [500, 3, 400]), np.array([[1, 0], [3e35, 1e34], [1, 1]], dtype=np.float32))
    assert [w for w, _ in odd.wv.most_similar("q", topn=2, min_count=NEIGHBOUR_MIN_COUNT)] == ["y"]
    assert [w for w, _ in odd.wv.most_similar("q", topn=2, min_count=0)] == ["huge", "y"]
    for bad in (-1, 2.5, True, "5", None):
        with pytest.raises(ValueError, match="min_count"):
            m.wv.most_similar("cat", min_count=bad)
    near = near_model()
    assert [w for w, _ in near.wv.most_similar("cat", topn=2, min_count=NEIGHBOUR_MIN_COUNT)] == ["seen-100", "the"]
    assert [w for w, _ in near.wv.most_similar("cat", topn=1, min_count=99)] == ["seen-99"]
    assert [w for w, _ in near.wv.similar_by_vector(near.wv["cat"], topn=2, min_count=NEIGHBOUR_MIN_COUNT)] == ["cat", "seen-100"]


def test_neighbors_cli(tmp_path, runner, model400):
    """The command's own part: its output, its default --min-count, its refusals; the rules: the tests above."""
    save_model(model400, tmp_path / "m")
    m = ["neighbors", "-m", str(tmp_path / "m")]
    result = runner.invoke(main, [*m, "CAT", "dog", "--negative", "mat", "-n", "3"])
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    want = model400.wv.most_similar(["cat", "dog"], topn=3, negative=["mat"])
    assert [w for w, _ in rows] == [w for w, _ in want]
    assert [float(c) for _, c in rows] == pytest.approx([c for _, c in want], abs=6e-5)
    assert_clean_error(runner.invoke(main, [*m, "zebra"]), "'zebra' is not in the vocabulary")
    assert_clean_error(runner.invoke(main, m), "give a WORD")
    save_model(rare_word_model(), tmp_path / "r")
    m = ["neighbors", "-m", str(tmp_path / "r"), "cat"]

    def words(*extra):
        result = runner.invoke(main, [*m, *extra])
        assert result.exit_code == 0, result.output
        return [line.split("\t")[0] for line in result.stdout.splitlines()]

    assert words("-n", "2") == ["kitten", "dog"]  # the default leaves the rare words out
    assert words("-n", "2", "--min-count", "0") == ["mezzanine", "padoie"]
    assert words("-n", "9", "--min-count", "2k") == ["kitten"]  # counts as other options take them
    assert "default: 100" in runner.invoke(main, ["neighbors", "--help"]).output
    result = runner.invoke(main, [*m, "--min-count", "2.5"])
    assert result.exit_code == 2 and "Invalid value for '--min-count': '2.5' is not a whole number" in result.output
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


# ---------------------------------------------------------------- similarities


def test_n_similarity_is_the_cosine_of_the_means(model400):
    for a, b in ((["cat", "dog"], ["mat"]), (["cat"], ["cat"]), (["w1", "w2", "w3"], ["big", "red", "w300"])):
        mean = lambda ws: np.mean([model400.vectors[model400.wv.key_to_index[w]].astype(np.float64) for w in ws], axis=0)  # noqa: E731
        x, y = mean(a), mean(b)
        assert model400.wv.n_similarity(a, b) == pytest.approx(float(x @ y / np.linalg.norm(x) / np.linalg.norm(y)), abs=1e-12)
    assert model400.wv.n_similarity(["Cat", "DOG"], ["mat"]) == model400.wv.n_similarity(["cat", "dog"], ["mat"])
    with pytest.raises(KeyError, match="zebra"):
        model400.wv.n_similarity(["cat", "zebra"], ["dog"])
    with pytest.raises(ValueError, match="at least one"):
        model400.wv.n_similarity([], ["dog"])


def test_the_other_gensim_word_methods_agree_with_gensim(tmp_path):
    model = random_model(n_words=80, dim=10, seed=5)
    kv = as_gensim(model)
    rng = np.random.default_rng(5)
    assert model.wv.rank("cat", "cat") == 1 == kv.rank("cat", "cat")  # a word among its own neighbours
    assert all(model.wv.rank("w1", f"w{i}") == kv.rank("w1", f"w{i}") for i in range(2, 40, 3))
    groups = [[f"w{i}" for i in range(j, j + 5)] for j in range(0, 60, 5)]
    assert [model.wv.doesnt_match(g) for g in groups] == [kv.doesnt_match(g) for g in groups]
    assert model.wv.get_vecattr("w3", "count") == NEIGHBOUR_MIN_COUNT + (80 - 16) * 3  # w3 is row 16
    np.testing.assert_allclose(model.wv.get_normed_vectors(), kv.get_normed_vectors(), rtol=1e-6)
    np.testing.assert_allclose(model.wv.distances("w1", ["w2", "w9"]), kv.distances("w1", ["w2", "w9"]), rtol=1e-5)
    np.testing.assert_array_equal(model.wv.distances("w1", np.array(["w2", "w9"])), model.wv.distances("w1", ["w2", "w9"]))
    np.testing.assert_array_equal(model.wv.distances("w1", None), model.wv.distances("w1"))  # None: every word, as gensim
    np.testing.assert_allclose(model.wv.distances("w1"), kv.distances("w1"), rtol=1e-5, atol=1e-6)
    pairs = tmp_path / "pairs.tsv"
    # no pair twice in two orders: float32 (gensim) and float64 (here) would break that tie differently
    pairs.write_text("# a comment\n" + "".join(f"w{i}\tw{i + 20}\t{rng.uniform(0, 10):.2f}\n" for i in range(40))
                     + "w1\tnot-a-word\t5.0\n")
    pearson, spearman, oov = model.wv.evaluate_word_pairs(pairs)
    theirs = kv.evaluate_word_pairs(str(pairs), delimiter="\t")
    # gensim's shape: (pearson, p), scipy's Spearman result, the share left out in percent
    np.testing.assert_allclose(pearson, theirs[0], rtol=1e-5)
    np.testing.assert_allclose(tuple(spearman), tuple(theirs[1]), rtol=1e-5)
    assert spearman.statistic == spearman[0] and oov == pytest.approx(theirs[2]) and oov == pytest.approx(100 / 41)
    with pytest.raises(FileNotFoundError):
        kv.evaluate_word_pairs(str(tmp_path / "missing.tsv"))
    with pytest.raises(FileNotFoundError):
        model.wv.evaluate_word_pairs(tmp_path / "missing.tsv")
    model.wv.save_word2vec_format(tmp_path / "v.bin", binary=True)
    with pytest.raises(TypeError, match="binary must be True or False"):
        model.wv.save_word2vec_format(tmp_path / "v.txt", binary="no")  # truthy: it wrote binary
    np.testing.assert_array_equal(type(kv).load_word2vec_format(str(tmp_path / "v.bin"), binary=True)["w4"], model.wv["w4"])
    with pytest.raises(KeyError):
        model.wv.get_vecattr("w1", "colour")


# ---------------------------------------------------------------- one set of vectors, gensim's rules


WORDSIM = scbow.__path__[0] + "/../benchmarks/data/wordsim353.tsv"


def word_part_model(seed=11, dim=12, word_dim=8) -> Model:
    """Random rows [sentence part ; word part] over the words of WordSim-353 (every count high enough
    to be a neighbour), with a config that says so: ``parts`` has "word"."""
    words = sorted({w for a, b, _ in read_word_pairs(WORDSIM) for w in (a.lower(), b.lower())})
    words += [f"x{i}" for i in range(60)]
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((len(words), dim + word_dim)).astype(np.float32)
    vectors[-1, dim:] = 0.0  # a zero word vector: cosines 0, as gensim's similarity gives (its most_similar: NaN)
    counts = NEIGHBOUR_MIN_COUNT + np.arange(len(words), 0, -1)
    return Model(Vocab(words, counts), vectors, {"dim": dim, "word_passes": 2, "word_dim": word_dim})


@pytest.fixture(scope="module")
def wp_model():
    return word_part_model()


def test_the_word_vectors_are_the_word_part_or_the_whole_rows(wp_model, model400, tmp_path):
    m, wv = wp_model, wp_model.wv
    assert isinstance(wv, WordVectors) and m.wv is wv and m.parts["word"] == (12, 20) == wv.columns
    assert wv.vector_size == 8 and wv.vectors.shape == (len(m), 8) and len(wv) == len(m)
    np.testing.assert_array_equal(wv["tiger"], m.vectors[wv.get_index("tiger"), 12:])
    np.testing.assert_array_equal(wv[["tiger", "cat"]], wv.vectors[[wv.get_index("tiger"), wv.get_index("cat")]])
    wv.save_word2vec_format(tmp_path / "w.txt")
    back = scbow.load(tmp_path / "w.txt")
    assert back.vocab.words == m.vocab.words and back.dim == 8
    np.testing.assert_array_equal(back.vectors, wv.vectors)  # what wv[word] gives, written
    plain = model400  # no word part: the whole rows, under gensim's names
    assert plain.wv.vectors is plain.vectors and plain.wv.columns == (0, 20)
    assert "word part" in repr(wv) and "whole rows" in repr(plain.wv)
    assert plain.wv.index_to_key is plain.vocab.words and plain.wv.key_to_index is plain.vocab.index
    assert plain.wv.index_to_key[plain.wv.key_to_index["dog"]] == "dog"
    assert plain.wv.vector_size == plain.dim == 20 and len(plain) == 400
    np.testing.assert_array_equal(plain.wv[["cat", "mat"]], plain.vectors[[1, 6]])
    assert plain.wv[[]].shape == (0, 20)
    np.testing.assert_allclose(plain.wv.get_vector("cat", norm=True),
                               plain.wv["cat"] / np.linalg.norm(plain.wv["cat"].astype(np.float64)), rtol=1e-6)
    assert plain.wv.get_vector("cat") is not None and np.array_equal(plain.wv.get_vector("cat"), plain.wv["cat"])
    S = np.array([[1, 0], [1, 0.01], [0, 1]], dtype=np.float32)  # a and b alike in the sentence part, a and c in the word part
    G = np.array([[1, 0], [0, 1], [1, 0.01]], dtype=np.float32)
    m = Model(Vocab(["a", "b", "c"], [9, 9, 9]), np.concatenate([S, G], axis=1), {"dim": 2, "word_passes": 1, "word_dim": 2})
    assert m.wv.rank("a", "c") == 1 and m.wv.distance("a", "c") < 1e-3 and m.wv.doesnt_match(["a", "c", "b"]) == "b"
    assert m.wv.get_normed_vectors().shape == (3, 2)


def test_gensim_rules_hold_without_gensim(wp_model):
    """The rules gensim's methods keep with each other, on a model with a word part (CI's test
    extra may lack gensim: these need none)."""
    wv = wp_model.wv
    rng = np.random.default_rng(1)
    words = [wv.index_to_key[i] for i in rng.choice(len(wv), 30, replace=False)] + ["x59"]  # x59: a zero vector
    for a, b in zip(words, words[1:]):
        assert wv.similarity(a, b) + wv.distance(a, b) == pytest.approx(1.0, abs=1e-15)
        assert wv.similarity(a, b) == pytest.approx(wv.similarity(b, a), abs=1e-15)
        assert wv.n_similarity([a], [b]) == pytest.approx(wv.similarity(a, b), abs=1e-12) or wv.similarity(a, b) == 0
        assert wv.distances(a, [b])[0] == pytest.approx(wv.distance(a, b), abs=1e-12)
        u, v = wv[a].astype(np.float64), wv[b].astype(np.float64)
        if np.linalg.norm(u) and np.linalg.norm(v):
            assert wv.similarity(a, b) == pytest.approx(u @ v / np.linalg.norm(u) / np.linalg.norm(v), abs=1e-12)
    assert wv.similarity("x59", "cat") == 0.0 and wv.distance("x59", "cat") == 1.0
    for word in words[:8]:
        found = wv.most_similar(word, topn=20, min_count=0)
        for other, cos in found:
            assert cos == pytest.approx(wv.similarity(word, other), abs=1e-12)
        assert wv.rank(word, found[0][0]) == 1 and wv.rank(word, found[7][0]) <= 8
        assert [w for w, _ in found] == [w for w, _ in wv.similar_by_vector(wv[word], topn=21, min_count=0)][1:] \
            or found[0][1] == pytest.approx(1.0)  # the word itself first by its own vector
    # a whole row as a query is cut to its word part
    row = wp_model.vectors[wv.get_index("tiger")]
    assert wv.similar_by_vector(row, topn=3) == wv.similar_by_vector(wv["tiger"], topn=3)
    pearson, spearman, oov = wv.evaluate_word_pairs([(a, b, i) for i, (a, b) in enumerate(zip(words, words[1:]))])
    from scipy.stats import pearsonr

    cos = [wv.similarity(a, b) for a, b in zip(words, words[1:])]
    assert pearson[0] == pytest.approx(pearsonr(range(len(cos)), cos)[0], abs=1e-12) and oov == 0.0


def test_word_analogies_score_as_gensim(tmp_path):
    model = random_model(n_words=60, dim=6, seed=8)
    rows = model.vectors.copy()
    words = model.wv.key_to_index
    rows[words["cat"]], rows[words["dog"]] = [3, 3, 0, 0, 0, 0], [3, -3, 0, 0, 0, 0]  # cat - mat + red = dog
    rows[words["mat"]], rows[words["red"]] = [0, 3, 0, 0, 0, 0], [0, -3, 0, 0, 0, 0]
    model.vectors = rows
    kv = as_gensim(model)
    path = tmp_path / "questions-words.txt"
    path.write_text(": capital-common\nmat cat red dog\nMAT Cat red DOG\nthe a big small\nmat cat zebra dog\n"
                    "a line of five words\n: family\nw1 w2 w3 w4\nred dog mat cat\nw5 w6 w7\n: empty\n")
    for kwargs in ({}, {"dummy4unknown": True}, {"restrict_vocab": 15}, {"case_insensitive": False}):
        score, sections = model.wv.evaluate_word_analogies(path, **kwargs)
        assert (score, sections) == kv.evaluate_word_analogies(str(path), **kwargs), kwargs
    assert [s["section"] for s in sections] == ["capital-common", "family", "empty", "Total accuracy"]
    assert ("mat", "cat", "red", "dog") in sections[0]["correct"]  # case_insensitive=False: as written
    with pytest.raises(FileNotFoundError):
        model.wv.evaluate_word_analogies(tmp_path / "missing.txt")
    (tmp_path / "headless.txt").write_text("mat cat red dog\n")
    with pytest.raises(ValueError, match="line 1 comes before the first ': SECTION' line"):
        model.wv.evaluate_word_analogies(tmp_path / "headless.txt")
