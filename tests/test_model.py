"""The Model API (scbow.vectors.model), a sentence encoder: encode against plain per-sentence
references, similarity, similarity_pairwise and semantic_search with sentence-transformers' conventions,
repr. The word vectors (model.wv): tests/test_words.py."""

from __future__ import annotations

import math
import sys
import time

import numpy as np
import pytest
from test_semantic import brute_cosines
from test_words import random_model

import scbow
import scbow.vectors.average as average
import scbow.vectors.numeric as model_module
from scbow.config import TrainConfig
from scbow.errors import ConfigError
from scbow.text.tokenize import tokenize
from scbow.text.vocab import Vocab
from scbow.use.describe import describe
from scbow.vectors.export import export_word2vec
from scbow.vectors.model import Model
from scbow.vectors.numeric import mean_rows, row_cosines, semantic_search


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
    """Model.encode(sentences) spelled out: tokenize each sentence, keep the known words."""
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


def test_encode_is_tokenize_then_average(model):
    got = model.encode(ODD)
    assert got.dtype == np.float32 and got.shape == (len(ODD), 16)
    np.testing.assert_array_equal(got, reference_embed(model, ODD))
    for sentence, row in zip(ODD, got):  # one at a time: the same rows
        np.testing.assert_array_equal(model.encode([sentence])[0], row)
    many = [f"{a} {b} the {c}" for a in ("cat", "dog", "x") for b in ("sat", "ran", "") for c in ODD]
    np.testing.assert_array_equal(model.encode(many), reference_embed(model, many))
    # no sentence can hold the token "\n"; a vocabulary that has it changes nothing
    words = model.vocab.words + ["\n"]
    odd = Model(Vocab(words, np.arange(len(words), 0, -1)),
                np.vstack([model.vectors, np.full((1, 16), 7, dtype=np.float32)]))
    np.testing.assert_array_equal(odd.encode(ODD), model.encode(ODD))
    sentence = " ".join(["the cat sat"] * 100_000)  # 300,000 tokens
    expected = np.asarray(model.vectors)[[model.vocab.index[w] for w in ("the", "cat", "sat")]].mean(axis=0)
    np.testing.assert_allclose(model.encode([sentence])[0], expected, rtol=1e-5, atol=1e-6)
    assert model.similarity([sentence], ["sat the cat"])[0, 0] == pytest.approx(1.0, abs=1e-5)


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


def test_encode_takes_one_str_or_any_iterable_of_str_with_sentences_repeated(model):
    sentences = ["the cat", "a dog ran", "the cat", "", "zebra", "", "the cat", "A dog ran"]
    want = model.encode(sentences)
    np.testing.assert_array_equal(want, reference_embed(model, sentences))
    np.testing.assert_array_equal(want[0], want[2])
    for same in (tuple(sentences), np.array(sentences), (s for s in sentences)):  # a generator, read in batches
        np.testing.assert_array_equal(model.encode(same), want)
    np.testing.assert_array_equal(model.encode(sentences, batch_size=1), want)
    np.testing.assert_array_equal(model.encode(iter(sentences), batch_size=3), want)
    one = model.encode("the cat")
    assert one.shape == (16,) and one.dtype == np.float32
    np.testing.assert_array_equal(one, want[0])
    assert model.encode([]).shape == (0, 16)
    # normalize_embeddings, fill and unknown
    sentences = ["the cat sat", "zebra", "a dog"]
    raw = model.encode(sentences)
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
    for bad in (42, b"the cat"):
        with pytest.raises(TypeError, match="iterable of sentences"):
            model.encode(bad)


def test_encode_gives_a_tensor_where_torch_is_and_says_so_where_it_is_not(model, monkeypatch):
    assert model.get_sentence_embedding_dimension() == model.dim == model.encode("the cat").shape[0]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tensor = model.encode(["the cat", "a dog"], convert_to_tensor=True)
        assert isinstance(tensor, torch.Tensor)
        np.testing.assert_array_equal(tensor.numpy(), model.encode(["the cat", "a dog"]))
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails, as where it is not installed
    with pytest.raises(ImportError, match=r"convert_to_tensor=True\) needs torch"):
        model.encode("the cat", convert_to_tensor=True)


def test_ids_and_similarity():
    tiny = Model(Vocab(["the", "cat", "sat", "dog", "."], [5, 4, 3, 2, 1]),
                 np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 2, 1], [1, 1, 1]], dtype=np.float32))
    assert tiny.ids("The zebra sat , quickly") == ([0, 2], ["zebra", ",", "quickly"])
    S = tiny.similarity(["the cat", "cat", "", "qwerty"], ["cat the", "sat", "dog", "the", "xyzzy zebra", "asdf"])
    assert S.shape == (4, 6) and S.dtype == np.float64
    assert S[0, 0] == pytest.approx(1.0) and S[1, 1] == pytest.approx(0.0, abs=1e-7)
    assert S[1, 2] == pytest.approx(2 / math.sqrt(5), rel=1e-6)
    assert np.isnan(S[:, 4:]).all() and np.isnan(S[2:]).all()  # nothing to average: NaN, row and column
    for a, b in ((b"the cat", ["the"]), (["the"], bytearray(b"cat"))):
        with pytest.raises(TypeError, match="a sentence is a str, got"):
            tiny.similarity(a, b)


# ---------------------------------------------------------------- sentence similarities


SENTENCES = ["The cat sat on the mat.", "a big dog ran", "xyzzy quux", "", "red house", "the the cat",
             "A BIG DOG RAN", "small red mat ."]


@pytest.fixture(scope="module")
def model400():
    return random_model()


@pytest.mark.parametrize("unknown", [None, "omit", "hash"])
def test_similarity_is_sentence_transformers(model400, unknown):
    """model.similarity(a, b): the (n, m) cosine matrix of two sets of embeddings, 1-D embeddings
    counting as one row, as sentence-transformers' model.similarity; sentences are encoded first."""
    m = model400
    assert m.similarity_fn_name == "cosine"
    A = m.encode(SENTENCES, unknown=unknown)
    B = m.encode(SENTENCES[:3], unknown=unknown)
    S = m.similarity(A, B)
    assert S.shape == (len(SENTENCES), 3) and S.dtype == np.float64
    np.testing.assert_allclose(S, brute_cosines(A, B), rtol=0, atol=1e-12)
    assert np.isnan(S[3]).all()  # "": no embedding, NaN cosines
    assert (np.isnan(S[2]).all()) == (unknown != "hash")  # unknown words only
    assert m.similarity(A[0], B[1]).shape == (1, 1) and m.similarity(A[0], B).shape == (1, 3)
    assert m.similarity(A, B[0]).shape == (len(SENTENCES), 1)
    assert m.similarity(A[0], B[1])[0, 0] == pytest.approx(S[0, 1], abs=1e-15)
    np.testing.assert_array_equal(m.similarity(SENTENCES, SENTENCES[:3], unknown=unknown), S)  # encoded first
    np.testing.assert_array_equal(m.similarity(SENTENCES, B, unknown=unknown), S)
    np.testing.assert_allclose(m.similarity(SENTENCES[0], SENTENCES[:3], unknown=unknown), S[:1], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(m.similarity(A.tolist(), B), S)  # lists of numbers are embeddings
    assert m.similarity([], B).shape == (0, 3)
    np.testing.assert_array_equal(m.similarity(A, B), scbow.similarity(A, B))
    with pytest.raises(ValueError, match="cannot be compared"):
        m.similarity(A, B[:, :5])
    with pytest.raises(TypeError, match="not a mix"):
        m.similarity(["a cat", A[0]], B)


@pytest.mark.parametrize("unknown", [None, "omit", "hash"])
def test_similarity_pairwise_is_the_diagonal(model400, unknown):
    rng = np.random.default_rng(2)
    pairs = [(SENTENCES[i], SENTENCES[j]) for i, j in rng.integers(0, len(SENTENCES), (40, 2))]
    pairs += [("a big dog ran", "a big dog ran"), ("xyzzy", "the cat")]
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    got = model400.similarity_pairwise(first, second, unknown=unknown)
    assert got.dtype == np.float64 and got.shape == (len(pairs),)
    want = np.diagonal(model400.similarity(first, second, unknown=unknown))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    A, B = model400.encode(first, unknown=unknown), model400.encode(second, unknown=unknown)
    np.testing.assert_allclose(model400.similarity_pairwise(A, B), got, rtol=1e-12, atol=1e-15)  # embeddings too
    if unknown != "hash":
        assert np.isnan(got[-1])
    assert got[-2] == pytest.approx(1.0, abs=1e-12)
    assert model400.similarity_pairwise([], []).shape == (0,)
    with pytest.raises(ValueError, match="one shape"):
        model400.similarity_pairwise(["a", "b"], ["c"])


def test_semantic_search(model400):
    corpus = SENTENCES + ["the cat sat", "a red house on the mat"]
    C = model400.encode(corpus)
    found = model400.semantic_search(["the cat", "xyzzy"], C, top_k=3)
    assert found == semantic_search(model400.encode(["the cat", "xyzzy"]), C, top_k=3)
    assert found == model400.semantic_search(["the cat", "xyzzy"], corpus, top_k=3)  # sentences encoded first
    # which hits, best first, and never a row with no embedding: test_semantic
    assert all(set(h) == {"corpus_id", "score"} for hits in found for h in hits) and len(found[0]) == 3


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
    # the raw token count (out-of-vocabulary tokens too), as train's corpus line and info show it
    corpus = {"files": ["/data/book.txt"], "raw_tokens": 12_335_808, "tokens": 12_231_071}
    m = Model(Vocab(["a", "b"], [3, 2]), np.ones((2, 4), np.float32), {"epochs": 1}, {"corpus": corpus})
    assert "(12,335,808 tokens, 1 epoch)" in repr(m) and "12,231,071" not in repr(m)
    assert any("12,335,808 tokens" in line for line in describe(m, "/m"))
    old = Model(Vocab(["a", "b"], [3, 2]), np.ones((2, 4), np.float32), {}, {"corpus": {"files": ["x"], "tokens": 7}})
    assert repr(old) == "<scbow Model: 2 words x 4 dims, trained on x (7 tokens)>"  # a model without the raw count


def test_encode_from_many_threads_while_the_caches_are_cleared(model, monkeypatch):
    """Threads sharing a model get the rows one thread gets, though the averager's caches, bounded to
    3 words here, are cleared by one call while others use them."""
    from concurrent.futures import ThreadPoolExecutor

    def fresh(rule):
        return Model(model.vocab, model.vectors, {"unknown": rule, "unknown_scale": 1.0})

    batches = [[f"the zebra{i} cat okapi{i % 3}", f"quagga{i} sat on gnu{i + 1} mat", "the cat"] for i in range(12)]
    calls = {
        "encode": lambda m, b: m.encode(b),
        "similarity_pairwise": lambda m, b: m.similarity_pairwise(b[:2], b[1:]),
        "similarity": lambda m, b: m.similarity(b[:1], b[1:]),
        "file": lambda m, b: m.averager.average(m.averager.encode("\n".join(b) + "\n"), m.unknown_rule[0], 1.0,
                                                kernel="serial").rows,
    }
    rules = ("hash", "pieces")
    want = {(r, name, i): call(fresh(r), b) for r in rules for name, call in calls.items() for i, b in enumerate(batches)}
    shared = {r: fresh(r) for r in rules}

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

    for m in shared.values():
        m.averager._hashed, m.averager._split = Yielding(), Yielding()
    monkeypatch.setattr(average, "_CACHE", 3)
    jobs = [(r, name, i) for _ in range(3) for r in rules for name in calls for i in range(len(batches))]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns as often as they can
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda job: calls[job[1]](shared[job[0]], batches[job[2]]), jobs))
    finally:
        sys.setswitchinterval(switch)
    for job, rows in zip(jobs, got):
        np.testing.assert_array_equal(rows, want[job])


def test_the_api_takes_numpy_integers_and_refuses_a_senseless_unknown_scale(model400):
    model, word = model400, "the"
    assert model.wv.most_similar(word, topn=np.int64(3)) == model.wv.most_similar(word, topn=3)
    assert len(model.wv.similar_by_word(word, topn=np.int32(2), min_count=np.int64(0))) == 2
    for bad in (np.True_, 0, -1, 2.5, "3"):
        with pytest.raises(ValueError, match="topn"):
            model.wv.most_similar(word, topn=bad)
    assert np.isfinite(model.encode(["zzqx qqzz"], unknown="hash", unknown_scale=np.float32(0.5))).all()
    for bad in (float("nan"), float("inf"), 0.0, -1.0, True, "1", 1e300, 10**400, 2e6):
        with pytest.raises(ValueError, match="unknown_scale"):
            model.encode(["the cat"], unknown="hash", unknown_scale=bad)


def test_the_api_takes_one_path_a_dict_and_numpy_numbers(small_corpus_file):
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
