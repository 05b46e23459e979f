"""A run started from pretrained vectors, and vocabulary expansion (scbow.training.pretrained): ``train
--init-vectors`` and ``expand``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import assert_failed as assert_clean_error

import scbow
from scbow.cli import main
from scbow.config import TrainConfig
from scbow.errors import ModelError
from scbow.text.vocab import Vocab
from scbow.training.pretrained import expand_vocabulary, fit_linear_map, pretrained_init
from scbow.training.start import init_vectors
from scbow.vectors.export import export_word2vec
from scbow.vectors.formats import load_model
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model


def make_model(dim, words):
    rng = np.random.default_rng(0)
    return Model(Vocab(words, np.arange(len(words), 0, -1) * 10), rng.standard_normal((len(words), dim)).astype(np.float32))


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
        np.testing.assert_allclose(model.wv[word], source.wv[word] * info["scale"] * weight, rtol=1e-5)
    plain = scbow.train([small_corpus_file], config, quiet=True, cache_dir=tmp_path)
    np.testing.assert_allclose(model.wv["the"], plain.wv["the"], rtol=1e-5)  # others: the usual random start


def test_train_cli_init_vectors(small_corpus_file, tmp_path, runner):
    export_word2vec(make_model(dim=8, words=["cat", "dog", "tree", "unused"]), tmp_path / "w2v.bin", binary=True)

    def train(out, *extra):
        return runner.invoke(main, ["train", str(small_corpus_file), "-o", str(tmp_path / out), "--dim", "8", "--epochs",
                                    "1", "--min-count", "1", "--threads", "1", "--cache-dir", str(tmp_path / "cache"), *extra])

    result = train("m", "--init-vectors", str(tmp_path / "w2v.bin"))
    assert result.exit_code == 0, result.output
    vocab_size = len(load_model(tmp_path / "m"))
    assert f"initialised 3 of {vocab_size} rows from {tmp_path / 'w2v.bin'}" in result.stderr
    meta = json.loads((tmp_path / "m" / "config.json").read_text())
    assert meta["init_vectors"]["rows_initialised"] == 3 and meta["init_vectors"]["rows"] == vocab_size
    # a dimension mismatch fails before the corpus is read; nothing is written
    assert_clean_error(train("m2", "--dim", "9", "--init-vectors", str(tmp_path / "w2v.bin")), "8-dimensional", "--dim is 9")
    assert_clean_error(train("m2", "--init-vectors", str(tmp_path / "none.txt")), "none.txt")
    (tmp_path / "other.txt").write_text("1 8\nzebra " + " ".join(["0.5"] * 8) + "\n")
    assert_clean_error(train("m2", "--init-vectors", str(tmp_path / "other.txt")), "no word")
    assert not (tmp_path / "m2").exists()
    # a model of ours with a word part: --dim is compared with its sentence part, not its whole rows (8 + 4)
    result = train("a", "--word-passes", "1", "--word-dim", "4")
    assert result.exit_code == 0, result.output
    assert load_model(tmp_path / "a").dim == 12
    result = train("b", "--init-vectors", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "b" / "config.json").read_text())["init_vectors"]["rows_initialised"] > 0
    assert_clean_error(train("c", "--dim", "12", "--init-vectors", str(tmp_path / "a")),
                       "8-dimensional vectors in their sentence part", "--dim is 12", "pass --dim 8")


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
    ours.info.update(curve={"points": []}, benchmark={"pearson": 0.7})  # scores of the model before: not the new one's
    new, report = expand_vocabulary(ours, source)
    assert "curve" not in new.info and "benchmark" not in new.info
    assert report["shared"] == 151 and report["added"] == 400 - 150 and report["skipped_not_token"] == 1
    assert report["r2"] == pytest.approx(1.0, abs=1e-9) and report["heldout_cosine"] == pytest.approx(1.0, abs=1e-6)
    assert new.vocab.words[: len(ours)] == ours.vocab.words  # our ids unchanged
    np.testing.assert_array_equal(new.vectors[: len(ours)], ours.vectors)
    assert new.vocab.words[len(ours):] == [f"w{i}" for i in range(150, 400)]
    assert new.vocab.counts[len(ours):].tolist() == [0] * 250
    np.testing.assert_allclose(new.vectors[len(ours):], X[150:400].astype(np.float64) @ M, atol=1e-5)
    assert "a.b" not in new.wv and "onlyours" in new.wv and len(new) == report["vocab_after"] == len(ours) + 250
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


@pytest.mark.parametrize("version, added", [("2", False), ("3", True)])
def test_expansion_adds_only_words_the_models_own_tokenizer_makes(version, added):
    """A word with combining marks is one token from tokenizer version 3 on: a model of version 2
    would never look it up (it cuts the word at its marks), so it gets no row there."""
    ours, source, M, X = synthetic_spaces()
    ours.info["corpus"] = {"tokenizer_version": version}
    word = "\u0939\u093f\u0928\u094d\u0926\u0940"
    source = Model(Vocab([*source.vocab.words, word], np.zeros(len(source.vocab) + 1)), np.vstack([X, X[:1]]))
    new, report = expand_vocabulary(ours, source)
    assert (word in new.wv) == added and report["skipped_not_token"] == 1 + (not added)


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
    np.testing.assert_allclose(new.wv["w399"], X[399].astype(np.float64) @ M, atol=1e-4)
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
    # spaces that no linear map relates: expanded all the same, with a warning
    unrelated = Model(ours.vocab, np.random.default_rng(9).standard_normal(ours.vectors.shape).astype(np.float32))
    save_model(unrelated, tmp_path / "u")
    result = runner.invoke(main, ["expand", "-m", str(tmp_path / "u"), "--source", str(tmp_path / "src.txt"),
                                  "-o", str(tmp_path / "big2")])
    assert result.exit_code == 0, result.output
    assert "warning: the map explains only" in result.stderr
