"""The Python API a gensim user expects (issue 14): lookups, neighbours, pair similarities,
save and load, each checked against plain NumPy or gensim on the same vectors."""

from __future__ import annotations

import numpy as np
import pytest

import scbow
from scbow.text.vocab import Vocab
from scbow.vectors.formats import export_word2vec
from scbow.vectors.model import NEIGHBOUR_MIN_COUNT, Model
from scbow.vectors.numeric import kth_largest

gensim_models = pytest.importorskip("gensim.models")

SENTENCE_WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "a", "big", "small", "red", "house", "."]


def random_model(n_words=400, dim=20, seed=0, config=None, info=None) -> Model:
    rng = np.random.default_rng(seed)
    words = SENTENCE_WORDS + [f"w{i}" for i in range(n_words - len(SENTENCE_WORDS))]
    # every word seen often enough to be a neighbour: most_similar ranks them all, as gensim does
    counts = NEIGHBOUR_MIN_COUNT + np.arange(n_words, 0, -1) * 3
    vectors = rng.standard_normal((n_words, dim)).astype(np.float32)
    return Model(Vocab(words, counts), vectors, config, info)


def as_gensim(model: Model):
    kv = gensim_models.KeyedVectors(model.dim)
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
def model():
    return random_model()


@pytest.fixture(scope="module")
def kv(model):
    return as_gensim(model)


# ---------------------------------------------------------------- lookups


def test_gensim_names(model):
    assert model.index_to_key is model.vocab.words and model.key_to_index is model.vocab.index
    assert model.index_to_key[model.key_to_index["dog"]] == "dog"
    assert model.vector_size == model.dim == 20 and len(model) == 400
    np.testing.assert_array_equal(model[["cat", "mat"]], model.vectors[[1, 6]])
    assert model[[]].shape == (0, 20)
    np.testing.assert_allclose(model.get_vector("cat", norm=True),
                               model["cat"] / np.linalg.norm(model["cat"].astype(np.float64)), rtol=1e-6)
    assert model.get_vector("cat") is not None and np.array_equal(model.get_vector("cat"), model["cat"])


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
def test_most_similar_agrees_with_gensim(model, kv, query):
    positive, negative = query
    vector = np.linspace(-1, 1, model.dim).astype(np.float32)
    positive = [vector if w == "vector" else w for w in positive]
    got = model.most_similar(positive, topn=10, negative=negative)
    assert_same(got, kv.most_similar(positive=positive, negative=negative, topn=10))
    assert_same(got, brute_force(model, positive, negative), atol=1e-12)


def test_most_similar_restrict_vocab(model, kv):
    for n in (1, 2, 15, 60, 399):
        got = model.most_similar("w100", topn=10, restrict_vocab=n)  # the query word itself is outside the range
        assert all(model.key_to_index[w] < n for w, _ in got) and len(got) == min(10, n)
        assert_same(got, kv.most_similar("w100", topn=10, restrict_vocab=n))
        assert_same(got, brute_force(model, ["w100"], restrict=n), atol=1e-12)
    # the query word inside the range is left out of it
    assert len(model.most_similar("cat", topn=5, restrict_vocab=2)) == 1
    assert model.most_similar("cat", topn=5, restrict_vocab=1000) == model.most_similar("cat", topn=5)
    assert model.most_similar("cat", topn=5, restrict_vocab=np.int64(30)) == model.most_similar("cat", topn=5,
                                                                                                  restrict_vocab=30)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="restrict_vocab"):
            model.most_similar("cat", restrict_vocab=bad)


def test_similar_by_vector_and_word(model, kv):
    rng = np.random.default_rng(3)
    for _ in range(3):
        v = rng.standard_normal(model.dim).astype(np.float32)
        got = model.similar_by_vector(v, topn=7)
        assert_same(got, kv.similar_by_vector(v, topn=7))
        assert_same(got, brute_force(model, [v], topn=7), atol=1e-12)
        assert_same(model.similar_by_vector(v, topn=7, restrict_vocab=50), kv.similar_by_vector(v, topn=7, restrict_vocab=50))
    # a word's own vector: the word itself comes first (nothing is left out)
    assert model.similar_by_vector(model["dog"], topn=1)[0][0] == "dog"
    assert model.similar_by_vector(list(map(float, model["dog"])), topn=1)[0][0] == "dog"
    with pytest.raises(ValueError, match="shape"):
        model.similar_by_vector(np.ones(model.dim + 1))
    assert model.similar_by_word("Dog", topn=4) == model.most_similar("dog", topn=4)
    assert_same(model.similar_by_word("dog", topn=4), kv.similar_by_word("dog", topn=4))


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


def test_cache_follows_the_vectors(model):
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


# ---------------------------------------------------------------- similarities


def test_n_similarity_agrees_with_gensim(model, kv):
    for a, b in ((["cat", "dog"], ["mat"]), (["cat"], ["cat"]), (["w1", "w2", "w3"], ["big", "red", "w300"])):
        want = float(kv.n_similarity(a, b))
        mean = lambda ws: np.mean([model.vectors[model.key_to_index[w]].astype(np.float64) for w in ws], axis=0)  # noqa: E731
        x, y = mean(a), mean(b)
        assert model.n_similarity(a, b) == pytest.approx(float(x @ y / np.linalg.norm(x) / np.linalg.norm(y)), abs=1e-12)
        assert model.n_similarity(a, b) == pytest.approx(want, abs=1e-5)
    assert model.n_similarity(["Cat", "DOG"], ["mat"]) == model.n_similarity(["cat", "dog"], ["mat"])
    with pytest.raises(KeyError, match="zebra"):
        model.n_similarity(["cat", "zebra"], ["dog"])
    with pytest.raises(ValueError, match="at least one"):
        model.n_similarity([], ["dog"])


SENTENCES = ["The cat sat on the mat.", "a big dog ran", "xyzzy quux", "", "red house", "the the cat",
             "A BIG DOG RAN", "small red mat ."]


@pytest.mark.parametrize("unknown", [None, "omit", "hash"])
def test_similarities_match_similarity(model, unknown):
    rng = np.random.default_rng(2)
    pairs = [(SENTENCES[i], SENTENCES[j]) for i, j in rng.integers(0, len(SENTENCES), (40, 2))]
    pairs += [("a big dog ran", "a big dog ran"), ("xyzzy", "the cat")]
    got = model.similarities(pairs, unknown=unknown)
    assert got.dtype == np.float64 and got.shape == (len(pairs),)
    want = np.array([model.similarity(a, b, unknown=unknown) for a, b in pairs])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    if unknown != "hash":
        assert np.isnan(got[-1]) and np.isnan(model.similarities([("", "the cat")], unknown=unknown)[0])
    np.testing.assert_array_equal(model.similarities([a for a, _ in pairs], [b for _, b in pairs], unknown=unknown), got)
    assert got[-2] == pytest.approx(1.0, abs=1e-12)


def test_similarities_inputs(model):
    assert model.similarities([]).shape == (0,) and model.similarities([], []).shape == (0,)
    assert model.similarities((p for p in [("cat", "dog")]))[0] == pytest.approx(model.similarity("cat", "dog"))
    with pytest.raises(ValueError, match="2 first sentences but 1"):
        model.similarities(["a", "b"], ["c"])
    with pytest.raises(TypeError):
        model.similarities("the cat", "a dog")
    with pytest.raises(ValueError, match="pair 1"):
        model.similarities([("a", "b"), ("a", "b", "c")])


# ---------------------------------------------------------------- files


def trained_like(dim=8):
    info = {"corpus": {"files": ["/data/a.txt.xz", "/data/b.txt"], "tokens": 1234567, "vocab_size": 40},
            "training": {"examples": 10}}
    return random_model(n_words=40, dim=dim, seed=7, config={"dim": dim, "epochs": 2}, info=info)


def test_save_and_load_round_trip(tmp_path):
    m = trained_like()
    assert m.save(tmp_path / "m") == tmp_path / "m"
    back = scbow.load(tmp_path / "m")
    assert back.vectors.dtype == np.float32 and back.vectors.tobytes() == m.vectors.tobytes()
    assert back.index_to_key == m.index_to_key and back.vocab.counts.tolist() == m.vocab.counts.tolist()
    assert back.config == m.config and back.info == m.info
    # saved again over itself, from its own memory-mapped vectors: replaced in one step
    changed = Model(back.vocab, back.vectors * 2, back.config, back.info)
    changed.save(tmp_path / "m")
    again = scbow.load(tmp_path / "m", mmap=False)
    np.testing.assert_array_equal(again.vectors, m.vectors * 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary left beside it


def test_load_mmap_keyword(tmp_path):
    m = trained_like()
    m.save(tmp_path / "m")
    mapped = scbow.load(tmp_path / "m")
    assert isinstance(mapped.vectors, np.memmap) and not mapped.vectors.flags.writeable
    with pytest.raises(ValueError):
        mapped.vectors[0, 0] = 1.0
    loaded = scbow.load(tmp_path / "m", mmap=False)
    assert not isinstance(loaded.vectors, np.memmap) and loaded.vectors.flags.writeable
    loaded.vectors[0] = 0.0
    loaded.vectors = loaded.vectors
    np.testing.assert_array_equal(scbow.load(tmp_path / "m").vectors, m.vectors)  # the file is unchanged
    assert dict(loaded.most_similar(loaded.index_to_key[1], topn=39))[loaded.index_to_key[0]] == 0.0


def test_repr(tmp_path):
    m = trained_like()
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


# ---------------- what the API takes


def test_the_api_takes_numpy_integers_and_refuses_a_senseless_unknown_scale(healthy):
    import scbow

    model = scbow.load(healthy[0])
    word = model.index_to_key[0]
    assert model.most_similar(word, topn=np.int64(3)) == model.most_similar(word, topn=3)
    assert len(model.similar_by_word(word, topn=np.int32(2), min_count=np.int64(0))) == 2  # a toy corpus's counts
    for bad in (np.True_, 0, -1, 2.5, "3"):
        with pytest.raises(ValueError, match="topn"):
            model.most_similar(word, topn=bad)
    assert np.isfinite(model.embed(["zzqx qqzz"], unknown="hash", unknown_scale=np.float32(0.5))).all()
    for bad in (float("nan"), float("inf"), 0.0, -1.0, True, "1", 1e300, 10**400, 2e6):
        with pytest.raises(ValueError, match="unknown_scale"):
            model.embed(["the cat"], unknown="hash", unknown_scale=bad)


def test_the_api_takes_one_path_a_dict_and_numpy_numbers(tmp_path, healthy):
    import scbow
    from scbow.config import TrainConfig

    _, corpus = healthy
    settings = {"dim": 8, "min_count": 1, "threads": 1, "word_passes": 0}  # about the API's inputs: no word part
    for one in (str(corpus), corpus):  # a single path, as str or Path
        m = scbow.train(one, settings, quiet=True, use_cache=False)
        assert m.dim == 8
    with pytest.raises(TypeError, match="TrainConfig"):
        scbow.train([corpus], "dim=8", quiet=True)
    config = TrainConfig(dim=np.int64(16), lr=np.float32(0.05), seed=np.int32(3))
    assert (config.dim, config.seed) == (16, 3) and isinstance(config.dim, int) and isinstance(config.lr, float)
    from scbow.errors import ConfigError

    with pytest.raises(ConfigError):
        TrainConfig(dim=np.bool_(True))
