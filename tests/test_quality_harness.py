"""The quality benchmark's peers (``benchmarks.peers``) and its goal check: plumbing, never scores.

Each post-processing a peer may get is recomputed here by hand on a small corpus; the
harness must give the same sentence vectors.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from scbow.text.tokenize import tokenize
from scbow.training.corpus import load_corpus
from scbow.vectors.model import HASH_SCALE
from scbow.vectors.numeric import hashed_vector

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.append(ROOT)

from benchmarks import peers, quality  # noqa: E402


@pytest.fixture
def setup(small_corpus_file, tmp_path, monkeypatch):
    monkeypatch.setattr(peers, "SAMPLE", 80)  # a sample smaller than the corpus: the drawing matters
    corpus = load_corpus([small_corpus_file], min_count=1, cache_dir=tmp_path)
    rng = np.random.default_rng(0)
    M = rng.standard_normal((len(corpus.vocab), 16)).astype(np.float32)
    M[:3] += 4.0  # a common direction, as frequent words give real vectors
    return corpus, peers.WordTable(corpus.vocab, M)


def by_hand(corpus, table, sentences, weighted):
    """Averages of known words, each weighted by a/(a + count/raw_tokens) when ``weighted``."""
    counts = corpus.vocab.counts.astype(np.float64)
    a = peers.SIF_A / (peers.SIF_A + counts / corpus.stats["raw_tokens"]) if weighted else np.ones(len(counts))
    out = []
    for s in sentences:
        ids = [corpus.vocab.index[t] for t in tokenize(s) if t in corpus.vocab.index]
        out.append(np.mean([a[i] * table.M[i].astype(np.float64) for i in ids], axis=0) if ids else
                   np.full(table.dim, np.nan))
    return np.array(out)


def corpus_sentences(corpus, pick):
    words = corpus.vocab.words
    return [" ".join(words[t] for t in corpus.tokens[corpus.offsets[p]:corpus.offsets[p + 1]]) for p in pick]


SENTENCES = ["the cat sat on the mat", "a dog ran", "zzqx", "the dog and the zzqx"]


def test_raw_is_the_plain_average_and_omits_unknown_words(setup):
    corpus, table = setup
    out = peers.SentenceEmbedder(table, peers.Variant("omit", "raw"), corpus).embed(SENTENCES)
    np.testing.assert_allclose(out, by_hand(corpus, table, SENTENCES, False), rtol=1e-6)
    assert np.isnan(out[2]).all()  # nothing to average: no embedding


@pytest.mark.parametrize("post", ["sif", "pcr"])
def test_post_processing_is_estimated_on_the_corpus_sample(setup, post):
    corpus, table = setup
    emb = peers.SentenceEmbedder(table, peers.Variant("omit", post), corpus)
    from scbow.training.postprocess import sample_sentences

    pick = sample_sentences(corpus.n_sentences, peers.SAMPLE, 1)
    S = by_hand(corpus, table, corpus_sentences(corpus, pick), post == "sif")
    X = by_hand(corpus, table, SENTENCES[:2], post == "sif")
    if post == "sif":  # remove the first right singular vector of the uncentred sample
        u = np.linalg.svd(S, full_matrices=False)[2][0]
        expected = X - np.outer(X @ u, u)
    else:  # centre, remove the top 10 principal directions
        mu = S.mean(0)
        vecs = np.linalg.svd(S - mu, full_matrices=False)[2][:peers.PCR_COMPONENTS]
        expected = (X - mu) - ((X - mu) @ vecs.T) @ vecs
    np.testing.assert_allclose(emb.embed(SENTENCES[:2]), expected, rtol=1e-6, atol=1e-9)
    # the removal did something: the plain average is elsewhere
    assert np.abs(by_hand(corpus, table, SENTENCES[:2], False) - expected).max() > 0.1


def test_unknown_words_hashed_or_the_systems_own(setup):
    corpus, table = setup
    hashed = peers.SentenceEmbedder(table, peers.Variant("hash", "raw"), corpus).embed(["zzqx", "the zzqx"])
    h = hashed_vector("zzqx", 16)
    h *= HASH_SCALE * table.rare_norm / np.linalg.norm(h)
    np.testing.assert_allclose(hashed[0], h, rtol=1e-6)
    the = table.M[corpus.vocab.index["the"]].astype(np.float64)
    np.testing.assert_allclose(hashed[1], (the + h) / 2, rtol=1e-6)
    table.oov = {"zzqx": np.arange(16.0)}
    own = peers.SentenceEmbedder(table, peers.Variant("own", "raw"), corpus).embed(["zzqx", "qqq"])
    np.testing.assert_allclose(own[0], np.arange(16.0))
    assert np.isnan(own[1]).all()  # no vector of its own for this one


def test_the_weighted_overlap_peer_is_the_evaluate_control(setup):
    """The peer that scored 0.634 ('word overlap', SIF) weighs words as 'evaluate --control overlap' does:
    with its one library rule, so the two differ only by the peer's SIF projection."""
    from scbow.use.evaluate import OverlapControl

    corpus, _ = setup
    table = peers.WordTable.hashed(corpus.vocab, 16)
    embedder = peers.SentenceEmbedder(table, peers.Variant("hash", "sif"), corpus)
    control = OverlapControl.weighted(corpus.vocab.words, corpus.vocab.counts, corpus.stats["raw_tokens"], dim=16)
    np.testing.assert_array_equal(embedder.word_weight, [control.weights[w] for w in corpus.vocab.words])
    embedder.U = np.zeros((0, 16))  # without the projection: the same sentence vectors
    np.testing.assert_allclose(embedder.embed(SENTENCES), control.embed(SENTENCES), rtol=1e-5, atol=1e-7)


def test_the_overlap_table_hashes_every_token(setup):
    corpus, _ = setup
    table = peers.WordTable.hashed(corpus.vocab, 16)
    out = peers.SentenceEmbedder(table, peers.Variant("hash", "raw"), corpus).embed(["the zzqx"])
    expected = (hashed_vector("the", 16) + hashed_vector("zzqx", 16)) / 2
    np.testing.assert_allclose(out[0], expected, rtol=1e-5)


def test_unscorable_pairs_get_the_mean_cosine_and_dev_chooses():
    a = np.array([[1.0, 0], [0, 1], [np.nan, np.nan]])
    b = np.array([[1.0, 0], [1, 0], [1, 0]])
    c, scored = peers.filled_cosines(a, b)
    assert scored == 2 and c.tolist() == pytest.approx([1.0, 0.0, 0.5])
    v = peers.variants_of("word2vec")
    assert len(v) == 6 and {x.unknown for x in v} == {"omit", "hash"}
    assert peers.choose({v[0]: 0.1, v[1]: 0.5, v[2]: 0.5}) == v[1]


def test_word_similarity_uses_the_same_pairs_for_everyone(setup, tmp_path, monkeypatch):
    corpus, table = setup
    words = corpus.vocab.words[:6]
    path = tmp_path / "ws.tsv"
    # gold = the cosines of the table itself: a perfect rank correlation for it
    lines = ["# test"]
    M = table.M.astype(np.float64)
    for i in range(5):
        a, b = corpus.vocab.index[words[i]], corpus.vocab.index[words[i + 1]]
        lines.append(f"{words[i]}\t{words[i + 1]}\t{M[a] @ M[b] / np.linalg.norm(M[a]) / np.linalg.norm(M[b]):.6f}")
    lines.append("notaword\tthe\t5")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(quality, "WORDSIM", {"toy": path})
    out = quality.word_similarity({"self": table, "other": peers.WordTable.hashed(corpus.vocab, 16)}, corpus.vocab)
    assert out["toy"]["pairs"] == 6 and out["toy"]["covered"] == 5
    assert out["toy"]["spearman"]["self"] == pytest.approx(1.0)
    assert out["toy"]["spearman"]["other"] < 0.99


def test_goal_needs_every_line():
    def result(wins, mean, gain, gap):
        summary = {"sets": [{}] * 19, "test_pearson_mean": mean, "dev_pearson": 0.7 + gain, "chosen": "x"}
        return {"systems": {"scbow": summary, "scbow_start": {"dev_pearson": 0.7}},
                "pairwise": {p: {"wins": wins} for p in quality.PEERS},
                "word_similarity": {"WS": {"spearman": {"scbow": 0.5 - gap, "cbow": 0.5}}},
                "timings": {"scbow": {"wall_seconds": 100.0, "cpu_seconds": 190.0}}}

    assert quality._goal(result(14, 0.65, 0.03, 0.1))["met"]
    for bad in (result(13, 0.7, 0.05, 0.0), result(19, 0.649, 0.05, 0.0), result(19, 0.7, 0.029, 0.0),
                result(19, 0.7, 0.05, 0.11)):
        assert not quality._goal(bad)["met"]


# ---------------------------------------------------------------------------------------
# Sent2Vec (benchmarks.sent2vec): its own sentence vectors and the cache of them


def test_sent2vec_variants_hold_its_own_sentence_vectors_and_every_word_variant():
    v = peers.variants_of("sent2vec")
    own = [x for x in v if x.source == "sentences"]
    assert [x.post for x in own] == ["raw", "pc1", "pcr"]
    assert [x for x in v if x.source == "words"] == peers.variants_of("word2vec")
    assert len({x.label for x in v}) == len(v)  # the report keys variants by label


def test_own_sentence_vectors_are_looked_up_by_tokens_and_post_processed_by_hand():
    from benchmarks.peers import OwnSentences

    rng = np.random.default_rng(3)
    sample = rng.standard_normal((50, 6)) + 3.0  # a common direction, as real sentence vectors have
    vectors = {"the cat sat": rng.standard_normal(6), "a dog": rng.standard_normal(6), "zzqx": np.zeros(6)}
    S = sample.copy()
    u = np.linalg.svd(S, full_matrices=False)[2][0]
    mean = S.mean(axis=0)
    C = S - mean
    U = np.linalg.eigh(C.T @ C)[1][:, ::-1][:, :2].T
    sentences = ["The cat sat", "a  dog", "zzqx"]  # tokenized before the lookup
    raw = OwnSentences(vectors, sample, "raw").embed(sentences)
    pc1 = OwnSentences(vectors, sample, "pc1").embed(sentences)
    pcr = OwnSentences(vectors, sample, "pcr", components=2).embed(sentences)
    for k, key in enumerate(["the cat sat", "a dog"]):
        x = vectors[key]
        np.testing.assert_allclose(raw[k], x)
        np.testing.assert_allclose(pc1[k], x - (x @ u) * u, atol=1e-12)
        np.testing.assert_allclose(pcr[k], (x - mean) - U.T @ (U @ (x - mean)), atol=1e-12)
    assert np.isnan(raw[2]).all() and np.isnan(pcr[2]).all()  # no known word: the pair gets the set's mean
    with pytest.raises(ValueError):
        OwnSentences(vectors, sample, "sif")


def test_sent2vec_output_is_checked_for_its_shape():
    from benchmarks.sent2vec import _parse

    out = _parse(b"1 2 3 \n4 5 6 \n", 2, 3, "test")
    assert out.tolist() == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(RuntimeError, match="5 numbers for 2 rows of 3"):
        _parse(b"1 2 3 \n4 5 \n", 2, 3, "test")


def test_cached_sentence_vectors_round_trip_and_damage_is_a_retrain(tmp_path):
    lines = ["the cat sat", "", "é ü"]
    vectors = np.arange(9, dtype=np.float32).reshape(3, 3)
    path = tmp_path / "sentences.npz"
    quality.save_sentences(path, lines, vectors)
    back = quality.load_sentences(path)
    assert list(back) == lines and back["é ü"].tolist() == [6, 7, 8]
    path.write_bytes(path.read_bytes()[:100])
    assert quality.load_sentences(path) is None
    assert quality.load_sentences(tmp_path / "absent.npz") is None
    assert not list(tmp_path.glob("*.tmp-*"))


def test_models_are_keyed_by_the_encoding_not_the_files_mtime(tmp_path, monkeypatch):
    """A copied or remounted corpus (same bytes, new mtime) keeps its cached peer models;
    a changed corpus does not."""
    import os

    monkeypatch.setenv("SCBOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(quality, "WORK", tmp_path / "work")
    text = "the cat sat on the mat .\nthe dog sat on the log .\n\nthe cat saw the dog .\n" * 20
    a = tmp_path / "a.txt"
    a.write_text(text)
    _, key_a, _ = quality.encode_corpus(a, 1)
    os.utime(a, (1_000_000_000, 1_000_000_000))
    _, key_again, timing = quality.encode_corpus(a, 1)
    assert key_again == key_a and timing["reloaded_this_run"] is False  # re-encoded: scbow's key did change
    a.write_text(text.replace("log", "rug"))
    _, key_b, _ = quality.encode_corpus(a, 1)
    assert key_b != key_a
