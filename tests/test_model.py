"""Model.embed and mean_rows against plain per-sentence references (the fast paths of STS scoring)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scbow.vectors.numeric as model_module
from scbow.text.tokenize import tokenize
from scbow.text.vocab import Vocab
from scbow.use.evaluate import pair_cosines, row_cosines
from scbow.vectors.formats import load_model
from scbow.vectors.model import NEIGHBOUR_MIN_COUNT, Model
from scbow.vectors.numeric import mean_rows


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
       "ΟΔΟΣ ς", "Σ", "ΑΣ\nΣ", "DON'T  naïve\tcat", "a\ud800b the", "\u2028the\x85cat\x1c", "cat " * 40 + "dog"]


def test_embed_is_tokenize_then_average(model):
    got = model.embed(ODD)
    assert got.dtype == np.float32 and got.shape == (len(ODD), 16)
    np.testing.assert_array_equal(got, reference_embed(model, ODD))
    for sentence, row in zip(ODD, got):  # one at a time: the same rows
        np.testing.assert_array_equal(model.embed([sentence])[0], row)
    many = [f"{a} {b} the {c}" for a in ("cat", "dog", "x") for b in ("sat", "ran", "") for c in ODD]
    np.testing.assert_array_equal(model.embed(many), reference_embed(model, many))


def test_embed_repeated_sentences(model):
    sentences = ["the cat", "a dog ran", "the cat", "", "zebra", "", "the cat", "A dog ran"]
    got = model.embed(sentences)
    np.testing.assert_array_equal(got, reference_embed(model, sentences))
    np.testing.assert_array_equal(got[0], got[2])
    np.testing.assert_array_equal(model.embed(tuple(sentences)), got)
    np.testing.assert_array_equal(model.embed(np.array(sentences)), got)
    assert model.embed([]).shape == (0, 16)


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


def test_pair_cosines_of_a_model(model):
    first = ["the cat sat", "zebra", "the dog ran.", "the cat sat"]
    second = ["a cat sat on the mat", "the cat", "the dog ran.", ""]
    a = reference_embed(model, first).astype(np.float64)
    b = reference_embed(model, second).astype(np.float64)
    expected = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    got = pair_cosines(model.embed, first, second)
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    assert np.isnan(got[[1, 3]]).all() and got[2] == pytest.approx(1.0)


def test_repr_counts_the_corpus_tokens_as_train_and_info_do():
    """train's corpus line and info show the raw token count (out-of-vocabulary tokens too): so does repr."""
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


# ---------------------------------------------------------------------------------------
# encode: sentence-transformers' conventions over embed (one implementation)


def test_encode_is_embed_with_sentence_transformers_shapes(model):
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


def test_encode_normalizes_and_fills(model):
    sentences = ["the cat sat", "zebra", "a dog"]
    raw = model.embed(sentences)
    unit = model.encode(sentences, normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(unit[[0, 2]], axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(unit[0], raw[0] / np.linalg.norm(raw[0]), rtol=1e-5)
    assert np.isnan(unit[1]).all()  # nothing to average: no embedding
    zeros = model.encode(sentences, fill=0.0)
    assert (zeros[1] == 0).all() and np.array_equal(zeros[[0, 2]], raw[[0, 2]])
    assert (model.encode("zebra", fill=0.0) == 0).all()
    hashed = model.encode(["zebra"], unknown="hash")
    assert np.isfinite(hashed).all()


@pytest.mark.parametrize("bad, error", [(dict(batch_size=0), ValueError), (dict(batch_size=True), ValueError),
                                        (dict(fill="zero"), TypeError)])
def test_encode_refuses_bad_arguments(model, bad, error):
    with pytest.raises(error):
        model.encode(["the cat"], **bad)


def test_encode_names_a_sentence_that_is_not_a_string(model):
    with pytest.raises(TypeError, match="sentence 1 is a bytes"):
        model.encode(["the cat", b"the dog"])
    with pytest.raises(TypeError, match="iterable of sentences"):
        model.encode(42)


# ---------------------------------------------------------------------------------------
# gensim's word methods, against gensim on the same vectors


def test_gensim_word_methods_agree_with_gensim(tmp_path):
    KeyedVectors = pytest.importorskip("gensim.models").KeyedVectors
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(60)]
    vectors = rng.standard_normal((60, 10)).astype(np.float32)
    counts = np.arange(600, 0, -10)
    model = Model(Vocab(words, counts), vectors)
    kv = KeyedVectors(10)
    kv.add_vectors(words, vectors)
    assert model.get_vecattr("w3", "count") == 570
    np.testing.assert_allclose(model.get_normed_vectors(), kv.get_normed_vectors(), rtol=1e-6)
    assert model.distance("w1", "w2") == pytest.approx(kv.distance("w1", "w2"), rel=1e-6)
    np.testing.assert_allclose(model.distances("w1", ["w2", "w9"]), kv.distances("w1", ["w2", "w9"]), rtol=1e-5)
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
    np.testing.assert_array_equal(KeyedVectors.load_word2vec_format(str(tmp_path / "v.bin"), binary=True)["w4"],
                                  vectors[4])
    with pytest.raises(KeyError):
        model.get_vecattr("w1", "colour")


def test_word_methods_use_the_word_part():
    words = ["a", "b", "c"]
    S = np.array([[1, 0], [1, 0.01], [0, 1]], dtype=np.float32)
    G = np.array([[1, 0], [0, 1], [1, 0.01]], dtype=np.float32)
    m = Model(Vocab(words, [9, 9, 9]), np.concatenate([S, G], axis=1), {"dim": 2, "word_passes": 1, "word_dim": 2})
    assert m.rank("a", "c") == 1 and m.distance("a", "c") < 1e-3 and m.doesnt_match(["a", "c", "b"]) == "b"
    assert m.get_normed_vectors().shape == (3, 2)


# -- one model identity: the model_id a save records ---------------------------------------------


def test_every_save_records_a_new_id_and_a_model_saved_before_ids_gets_one_from_its_config(tmp_path, good_model):
    import json
    import shutil

    from scbow.vectors.formats import export_word2vec, load_model
    from scbow.vectors.modeldir import model_id, save_model

    recorded = json.loads((good_model / "config.json").read_text())["model_id"]
    assert model_id(good_model) == recorded and len(recorded) == 32
    copy = tmp_path / "copy"
    shutil.copytree(good_model, copy)
    assert model_id(copy) == recorded  # a copy is the same model
    again = save_model(load_model(good_model), tmp_path / "again")
    assert model_id(again) not in (None, recorded)  # saved again: another model
    old = tmp_path / "old"  # saved by a version before ids
    shutil.copytree(good_model, old)
    meta = json.loads((old / "config.json").read_text())
    del meta["model_id"]
    (old / "config.json").write_text(json.dumps(meta))
    derived = model_id(old)
    assert derived.startswith("config-") and model_id(old) == derived
    assert load_model(old).vocab.words == load_model(good_model).vocab.words  # it still loads
    meta["training"] = {"seconds": 1.5}  # another run's record: another id
    (old / "config.json").write_text(json.dumps(meta))
    assert model_id(old).startswith("config-") and model_id(old) != derived
    w2v = export_word2vec(load_model(good_model), tmp_path / "m.txt")
    assert model_id(w2v).startswith("file-") and model_id(tmp_path / "missing") is None


# ---------------- odd strings and very long sentences


ODD_STRINGS = ["", "   ", "\t\n", "🙂🙃 🙂", "e\u0301te\u0301", "שלום עולם", "\u200b\u200d\ufeff", "a\ud800b",
       "\x00\x07\x1b[31m", "ﷺ" * 1000, "the\u00a0cat", "CAT SAT", "the cat\r\nsat"]


def test_embed_and_similarity_take_odd_strings(good_model):
    model = load_model(good_model)
    X = model.embed(ODD_STRINGS)
    assert X.shape == (len(ODD_STRINGS), model.dim) and X.dtype == np.float32
    for text, row in zip(ODD_STRINGS, X):
        known = model.ids(text)[0]
        assert np.isnan(row).all() == (not known), text
    assert np.isnan(model.similarity("", "the cat"))
    assert model.similarity("CAT SAT", "the cat\r\nsat") == pytest.approx(
        model.similarity("cat sat", "the cat sat"))


def test_very_long_sentence(good_model):
    model = load_model(good_model)
    sentence = " ".join(["the cat sat"] * 100_000)  # 300,000 tokens
    [row] = model.embed([sentence])
    expected = np.asarray(model.vectors)[[model.vocab.index[w] for w in ("the", "cat", "sat")]].mean(axis=0)
    np.testing.assert_allclose(row, expected, rtol=1e-5, atol=1e-6)
    assert model.similarity(sentence, "sat the cat") == pytest.approx(1.0, abs=1e-5)


# ---------------------------------------------------------------------------------------
# Lookups, similarity and neighbours of a small hand-made model


@pytest.fixture
def tiny():
    words = ["the", "cat", "sat", "dog", "."]
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 2, 1], [1, 1, 1]], dtype=np.float32)
    return Model(Vocab(words, np.array([5, 4, 3, 2, 1]) * NEIGHBOUR_MIN_COUNT), vectors)  # all frequent enough to be neighbours


def test_embed(tiny):
    out = tiny.embed(["The cat!", "xyzzy plugh", "", "cat cat dog", "."])
    assert out.dtype == np.float32 and out.shape == (5, 3)
    np.testing.assert_allclose(out[0], [0.5, 0.5, 0])  # "!" is unknown and left out
    assert np.isnan(out[1]).all() and np.isnan(out[2]).all()
    np.testing.assert_allclose(out[3], [0, 4 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(out[4], [1, 1, 1])
    assert tiny.embed([]).shape == (0, 3)
    with pytest.raises(TypeError):
        tiny.embed("a single string")


def test_ids_names_unknown_words(tiny):
    assert tiny.ids("The zebra sat , quickly") == ([0, 2], ["zebra", ",", "quickly"])


def test_similarity(tiny):
    assert tiny.similarity("the cat", "cat the") == pytest.approx(1.0)
    assert tiny.similarity("cat", "sat") == pytest.approx(0.0, abs=1e-7)
    assert tiny.similarity("cat", "dog") == pytest.approx(2 / math.sqrt(5), rel=1e-6)
    assert math.isnan(tiny.similarity("the cat", "xyzzy zebra"))
    assert math.isnan(tiny.similarity("", "the"))
    assert math.isnan(tiny.similarity("qwerty", "asdf"))


def test_model_rejects_mismatched_vectors():
    with pytest.raises(ValueError):
        Model(Vocab(["a", "b"], [1, 1]), np.zeros((3, 2), dtype=np.float32))
