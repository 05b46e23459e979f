"""The one sentence average (scbow.vectors.average): each unknown-word rule against a plain NumPy
average, and every path that embeds text giving its rows."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from test_unknown_words import WORDS, make_model

import scbow.kernels.embed as K
from scbow.training.curve import CurveHook, prepare_set
from scbow.use.embedding import embed_file
from scbow.use.evaluate import STSSet
from scbow.vectors import average
from scbow.vectors.numeric import hashed_vector, row_cosines

SENTENCES = ["the cat sat on the mat .", "the zebra sated", "zebra sated zebra", "xq", "the xq dog", "",
             "a big red house", "sated", "the cat sat on the mat ."]


@pytest.fixture
def model():
    return make_model({"unknown": "pieces", "unknown_scale": 0.35})


def reference(model, sentence: str, rule: str, scale: float) -> np.ndarray:
    """The float64 mean of the vectors of the sentence's tokens under ``rule``, written plainly."""
    rare = np.asarray(model.vectors[-max(1, len(WORDS) // 10):], dtype=np.float64)  # ids are by count
    norm = scale * np.median(np.linalg.norm(rare, axis=1))

    def hashed(token):
        v = hashed_vector(token, model.dim)
        return v * norm / np.linalg.norm(v)

    index, rows = model.vocab.index, []
    for token in model.tokenize(sentence):
        if token in index:
            rows.append(model.vectors[index[token]].astype(np.float64))
        elif rule == "hash":
            rows.append(hashed(token))
        elif rule == "pieces":
            rows += [model.vectors[index[p]].astype(np.float64) if p in index else hashed(p)
                     for p in model.pieces.split(token)]
    return np.mean(rows, axis=0) if rows else np.full(model.dim, np.nan)


@pytest.mark.parametrize("rule", ["omit", "hash", "pieces"])
def test_each_rule_is_the_plain_average_of_its_tokens_vectors(model, rule):
    got = model.averager.embed(SENTENCES, rule, 0.35)
    want = np.array([reference(model, s, rule, 0.35) for s in SENTENCES])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(np.isnan(got).all(axis=1), np.isnan(want).all(axis=1))
    if rule == "pieces":
        assert model.pieces.split("sated") == ["sat", "##ed"] and model.pieces.split("xq") == []


def test_encode_the_embed_file_and_the_curve_give_the_same_rows(model, tmp_path):
    rows = model.encode(SENTENCES)
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    embed_file(model, tmp_path / "in.txt", tmp_path / "out.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), rows)

    first, second = SENTENCES[:4], SENTENCES[4:8]
    sts = STSSet("pairs", np.arange(4.0), first, second)
    prepared = prepare_set(sts, model.averager)
    for side, sentences in zip(prepared.encoded, (first, second)):
        got = model.averager.average(side, "pieces", 0.35, dtype=np.float64).rows
        np.testing.assert_array_equal(got.astype(np.float32), model.encode(sentences))
    hook = CurveHook(sts, every=1, common_components=-1, seed=1, unknown="pieces", unknown_scale=0.35)
    score, raw = hook._score(prepared, (model.averager, None))
    cosines = row_cosines(*(model.averager.average(e, "pieces", 0.35, dtype=np.float64).rows for e in prepared.encoded))
    np.testing.assert_array_equal(score.predictions, cosines)
    assert raw is score


@pytest.mark.parametrize("rule", ["omit", "hash", "pieces"])
def test_many_sentences_take_the_kernel_where_numba_is_loaded_with_the_same_numbers(model, rule, monkeypatch):
    many = SENTENCES * (average.KERNEL_MIN_LINES // len(SENTENCES) + 1)
    calls = []
    real = K.average_lines_serial
    monkeypatch.setattr(K, "average_lines_serial", lambda *a: calls.append(1) or real(*a))
    assert "numba" in sys.modules
    by_kernel = model.averager.embed(many, rule, 0.35)
    monkeypatch.delitem(sys.modules, "numba")  # a process that never loaded it: NumPy sums
    by_numpy = model.averager.embed(many, rule, 0.35)
    assert calls == [1]
    np.testing.assert_array_equal(by_kernel, by_numpy)
    assert len(model.averager.embed(SENTENCES, rule, 0.35)) == len(SENTENCES)  # few: NumPy


def test_new_rows_get_a_new_average(model):
    before = model.encode(["the zebra"])
    model.vectors = model.vectors * 2
    np.testing.assert_allclose(model.encode(["the zebra"]), 2 * before, rtol=1e-6)


@pytest.mark.parametrize("config, rule, scale", [({"unknown": "pieces"}, "pieces", 0.35), ({"unknown": "hash"}, "hash", 0.75),
                                                 ({}, "omit", 0.75)])
def test_a_rule_recorded_without_its_scale_takes_its_own_default(config, rule, scale):
    model = make_model(config)
    assert model.unknown_rule == (rule, scale)
    np.testing.assert_array_equal(model.encode(SENTENCES[1], unknown=rule),
                                  make_model({**config, "unknown_scale": scale}).encode(SENTENCES[1], unknown=rule))
