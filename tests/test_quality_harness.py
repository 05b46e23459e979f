"""The quality benchmark's peers (``benchmarks.peers``), Sent2Vec's plumbing and the goal check: never
scores. Each post-processing a peer may get is recomputed here by hand; the harness must agree."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from benchmarks import peers, quality
from scbow.text.tokenize import tokenize
from scbow.training.corpus import load_corpus
from scbow.vectors.average import HASH_SCALE
from scbow.vectors.numeric import hashed_vector

SENTENCES = ["the cat sat on the mat", "a dog ran", "zzqx", "the dog and the zzqx"]


@pytest.fixture
def setup(small_corpus_file, tmp_path, monkeypatch):
    monkeypatch.setattr(peers, "SAMPLE", 80)  # a sample smaller than the corpus: the drawing matters
    corpus = load_corpus([small_corpus_file], min_count=1, cache_dir=tmp_path)
    M = np.random.default_rng(0).standard_normal((len(corpus.vocab), 16)).astype(np.float32)
    M[:3] += 4.0  # a common direction, as frequent words give real vectors
    return corpus, peers.WordTable(corpus.vocab, M)


def by_hand(corpus, table, sentences, weighted):
    """Averages of known words, each weighted by a/(a + count/raw_tokens) when ``weighted``."""
    counts = corpus.vocab.counts.astype(np.float64)
    a = peers.SIF_A / (peers.SIF_A + counts / corpus.stats["raw_tokens"]) if weighted else np.ones(len(counts))
    out = []
    for s in sentences:
        ids = [corpus.vocab.index[t] for t in tokenize(s) if t in corpus.vocab.index]
        out.append(np.mean([a[i] * table.M[i].astype(np.float64) for i in ids], axis=0) if ids else np.full(table.dim, np.nan))
    return np.array(out)


@pytest.mark.parametrize("post", ["sif", "pcr"])
def test_post_processing_is_estimated_on_the_corpus_sample(setup, post):
    from scbow.training.postprocess import sample_sentences

    corpus, table = setup
    words, o = corpus.vocab.words, corpus.offsets
    pick = sample_sentences(corpus.n_sentences, peers.SAMPLE, 1)
    S = by_hand(corpus, table, [" ".join(words[t] for t in corpus.tokens[o[p]:o[p + 1]]) for p in pick], post == "sif")
    X = by_hand(corpus, table, SENTENCES[:2], post == "sif")
    if post == "sif":  # remove the first right singular vector of the uncentred sample
        u = np.linalg.svd(S, full_matrices=False)[2][0]
        expected = X - np.outer(X @ u, u)
    else:  # centre, remove the top 10 principal directions
        mu = S.mean(0)
        vecs = np.linalg.svd(S - mu, full_matrices=False)[2][:peers.PCR_COMPONENTS]
        expected = (X - mu) - ((X - mu) @ vecs.T) @ vecs
    got = peers.SentenceEmbedder(table, peers.Variant("omit", post), corpus).embed(SENTENCES[:2])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)
    assert np.abs(by_hand(corpus, table, SENTENCES[:2], False) - expected).max() > 0.1  # the removal did something


def test_raw_is_the_plain_average_unknown_words_left_out_hashed_or_the_systems_own(setup):
    corpus, table = setup
    out = peers.SentenceEmbedder(table, peers.Variant("omit", "raw"), corpus).embed(SENTENCES)
    np.testing.assert_allclose(out, by_hand(corpus, table, SENTENCES, False), rtol=1e-6)
    assert np.isnan(out[2]).all()  # nothing to average: no embedding
    hashed = peers.SentenceEmbedder(table, peers.Variant("hash", "raw"), corpus).embed(["zzqx", "the zzqx"])
    h = hashed_vector("zzqx", 16)
    h *= HASH_SCALE * table.rare_norm / np.linalg.norm(h)
    np.testing.assert_allclose(hashed[0], h, rtol=1e-6)
    np.testing.assert_allclose(hashed[1], (table.M[corpus.vocab.index["the"]].astype(np.float64) + h) / 2, rtol=1e-6)
    table.oov = {"zzqx": np.arange(16.0)}
    own = peers.SentenceEmbedder(table, peers.Variant("own", "raw"), corpus).embed(["zzqx", "qqq"])
    np.testing.assert_allclose(own[0], np.arange(16.0))
    assert np.isnan(own[1]).all()  # no vector of its own for this one


def test_the_weighted_overlap_peer_is_the_evaluate_control_and_hashes_every_token(setup):
    """The peer that scored 0.634 ('word overlap', SIF) weighs words as 'evaluate --control overlap' does
    (one library rule), so the two differ only by the peer's SIF projection."""
    from scbow.use.evaluate import OverlapControl

    corpus, _ = setup
    table = peers.WordTable.hashed(corpus.vocab, 16)
    raw = peers.SentenceEmbedder(table, peers.Variant("hash", "raw"), corpus).embed(["the zzqx"])
    np.testing.assert_allclose(raw[0], (hashed_vector("the", 16) + hashed_vector("zzqx", 16)) / 2, rtol=1e-5)
    embedder = peers.SentenceEmbedder(table, peers.Variant("hash", "sif"), corpus)
    control = OverlapControl.weighted(corpus.vocab.words, corpus.vocab.counts, corpus.stats["raw_tokens"], dim=16)
    np.testing.assert_array_equal(embedder.word_weight, [control.weights[w] for w in corpus.vocab.words])
    embedder.U = np.zeros((0, 16))  # without the projection: the same sentence vectors
    np.testing.assert_allclose(embedder.embed(SENTENCES), control.embed(SENTENCES), rtol=1e-5, atol=1e-7)


def test_unscorable_pairs_get_the_mean_cosine_and_dev_chooses_among_the_variants():
    c, scored = peers.filled_cosines(np.array([[1.0, 0], [0, 1], [np.nan, np.nan]]), np.array([[1.0, 0], [1, 0], [1, 0]]))
    assert scored == 2 and c.tolist() == pytest.approx([1.0, 0.0, 0.5])
    v = peers.variants_of("word2vec")
    assert len(v) == 6 and {x.unknown for x in v} == {"omit", "hash"}
    assert peers.choose({v[0]: 0.1, v[1]: 0.5, v[2]: 0.5}) == v[1]
    s2v = peers.variants_of("sent2vec")  # its own sentence vectors, and every word variant
    assert [x.post for x in s2v if x.source == "sentences"] == ["raw", "pc1", "pcr"]
    assert [x for x in s2v if x.source == "words"] == v
    assert len({x.label for x in s2v}) == len(s2v)  # the report keys variants by label


def test_word_similarity_uses_the_same_pairs_for_everyone(setup, tmp_path, monkeypatch):
    corpus, table = setup
    words, M = corpus.vocab.words[:6], table.M.astype(np.float64)
    lines = ["# test"]  # gold = the cosines of the table itself: a perfect rank correlation for it
    for i in range(5):
        a, b = corpus.vocab.index[words[i]], corpus.vocab.index[words[i + 1]]
        lines.append(f"{words[i]}\t{words[i + 1]}\t{M[a] @ M[b] / np.linalg.norm(M[a]) / np.linalg.norm(M[b]):.6f}")
    (tmp_path / "ws.tsv").write_text("\n".join(lines + ["notaword\tthe\t5"]) + "\n", encoding="utf-8")
    monkeypatch.setattr(quality, "WORDSIM", {"toy": tmp_path / "ws.tsv"})
    out = quality.word_similarity({"self": table, "other": peers.WordTable.hashed(corpus.vocab, 16)}, corpus.vocab)
    assert out["toy"]["pairs"] == 6 and out["toy"]["covered"] == 5
    assert out["toy"]["spearman"]["self"] == pytest.approx(1.0) and out["toy"]["spearman"]["other"] < 0.99


@pytest.mark.parametrize("wins, mean, gain, gap, absent, met", [
    (14, 0.65, 0.03, 0.1, None, True), (13, 0.7, 0.05, 0.0, None, False), (19, 0.649, 0.05, 0.0, None, False),
    (19, 0.7, 0.029, 0.0, None, False), (19, 0.7, 0.05, 0.11, None, False),
    (19, 0.7, 0.05, 0.0, "cbow", False), (19, 0.7, 0.05, 0.0, "static", True)])  # the opt-in peer may be absent
def test_goal_needs_every_line_and_every_default_peer(wins, mean, gain, gap, absent, met):
    result = {"systems": {"scbow": {"sets": [{}] * 19, "test_pearson_mean": mean, "dev_pearson": 0.7 + gain},
                          "scbow_start": {"dev_pearson": 0.7}},
              "pairwise": {p: {"wins": wins} for p in quality.PEERS if p != absent},
              "word_similarity": {"WS": {"spearman": {"scbow": 0.5 - gap, "cbow": 0.5}}},
              "timings": {"scbow": {"wall_seconds": 100.0, "cpu_seconds": 190.0}}}
    assert quality._goal(result)["met"] is met


def test_own_sentence_vectors_are_looked_up_by_tokens_and_post_processed_by_hand():
    rng = np.random.default_rng(3)
    sample = rng.standard_normal((50, 6)) + 3.0  # a common direction, as real sentence vectors have
    vectors = {"the cat sat": rng.standard_normal(6), "a dog": rng.standard_normal(6), "zzqx": np.zeros(6)}
    u = np.linalg.svd(sample, full_matrices=False)[2][0]
    mean = sample.mean(axis=0)
    U = np.linalg.eigh((sample - mean).T @ (sample - mean))[1][:, ::-1][:, :2].T
    sentences = ["The cat sat", "a  dog", "zzqx"]  # tokenized before the lookup
    raw, pc1, pcr = (peers.OwnSentences(vectors, sample, post, components=2).embed(sentences) for post in ("raw", "pc1", "pcr"))
    for k, x in enumerate((vectors["the cat sat"], vectors["a dog"])):
        np.testing.assert_allclose(raw[k], x)
        np.testing.assert_allclose(pc1[k], x - (x @ u) * u, atol=1e-12)
        np.testing.assert_allclose(pcr[k], (x - mean) - U.T @ (U @ (x - mean)), atol=1e-12)
    assert np.isnan(raw[2]).all() and np.isnan(pcr[2]).all()  # no known word: the pair gets the set's mean
    with pytest.raises(ValueError):
        peers.OwnSentences(vectors, sample, "sif")


def test_sent2vec_output_is_checked_and_its_cached_vectors_round_trip(tmp_path):
    from benchmarks.sent2vec import _parse

    assert _parse(b"1 2 3 \n4 5 6 \n", 2, 3, "test").tolist() == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(RuntimeError, match="5 numbers for 2 rows of 3"):
        _parse(b"1 2 3 \n4 5 \n", 2, 3, "test")
    lines, path = ["the cat sat", "", "é ü"], tmp_path / "sentences.npz"
    quality.save_sentences(path, lines, np.arange(9, dtype=np.float32).reshape(3, 3))
    back = quality.load_sentences(path)
    assert list(back) == lines and back["é ü"].tolist() == [6, 7, 8]
    path.write_bytes(path.read_bytes()[:100])  # damage is a retrain
    assert quality.load_sentences(path) is None and quality.load_sentences(tmp_path / "absent.npz") is None
    assert not list(tmp_path.glob("*.tmp-*"))


def test_models_are_keyed_by_the_encoding_not_the_files_mtime(tmp_path, monkeypatch):
    """A copied or remounted corpus (same bytes, new mtime) keeps its cached peer models; a changed one does not."""
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
    assert quality.encode_corpus(a, 1)[1] != key_a


def test_the_quality_report_renders_the_committed_record():
    markdown = quality.markdown(json.loads((Path(quality.__file__).parent / "results" / "quality.json").read_text()))
    assert markdown.startswith("# Quality") and "## Machine" in markdown and "Siamese CBOW" in markdown
