"""Unknown words at inference: left out (the default) or given hashed random vectors."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from scbow.cli import main
from scbow.text.vocab import Vocab
from scbow.use.embedding import embed_file
from scbow.use.evaluate import OverlapControl
from scbow.vectors.average import HASH_SCALE
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model
from scbow.vectors.numeric import hashed_vector, hashed_vectors
from scbow.vectors.pieces import PIECE_CHARS, Pieces, ngrams, wordpiece_model

WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "a", "big", "small", "red", "house", "."]


def make_model(config=None) -> Model:
    rng = np.random.default_rng(0)
    V = rng.standard_normal((len(WORDS), 16)).astype(np.float32)
    V *= np.linspace(0.5, 2.0, len(WORDS), dtype=np.float32)[:, None]  # norms vary with the row
    return Model(Vocab(WORDS, np.arange(len(WORDS), 0, -1)), V, config)


@pytest.fixture
def model():
    return make_model()


@pytest.mark.parametrize("token", ["\udcff", "a\udcffb", "\ud800", "x\udfff\ud800y"])
def test_a_token_with_a_lone_surrogate_has_a_hashed_vector(model, token):
    # surrogateescape turns bytes that are not UTF-8 (in argv, in file names) into lone surrogates;
    # a surrogate is hashed as the 3 bytes UTF-8 would give its code point
    data = token.encode("utf-8", "surrogatepass")
    seed = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
    want = np.random.default_rng(seed).standard_normal(16)
    np.testing.assert_array_equal(hashed_vector(token, 16), want)
    np.testing.assert_allclose(hashed_vectors([token, "zebra"], 16, 2.0)[0], want * 2.0 / np.linalg.norm(want), rtol=1e-12)
    replaced = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in token)  # what errors="replace" reads
    assert not np.allclose(want, hashed_vector(replaced, 16))
    assert np.isfinite(model.encode([f"the {token} cat"], unknown="hash")).all()


def test_unknown_norm_is_the_median_of_the_rarest_tenth(model):
    rows = np.asarray(model.vectors[-1:], dtype=np.float64)  # 13 words: the rarest tenth is one row
    assert model.unknown_norm() == pytest.approx(float(np.linalg.norm(rows[0])))
    # words with count 0 (no recorded count: added from elsewhere) are not the rarest trained words
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    base = Model(Vocab(words, np.arange(40, 0, -1)), rng.standard_normal((40, 8)).astype(np.float32))
    added = Model(Vocab(words + ["x1", "x2", "x3", "x4", "x5"], list(np.arange(40, 0, -1)) + [0] * 5),
                  np.vstack([base.vectors, 100 * np.ones((5, 8), np.float32)]))
    assert added.unknown_norm() == pytest.approx(base.unknown_norm())


def test_omit_is_the_default(model, tmp_path):
    X = model.encode(["the cat zebra", "zebra quagga"])
    assert np.allclose(X[0], model.vectors[[0, 1]].mean(axis=0), atol=1e-6)
    assert np.isnan(X[1]).all()
    assert np.array_equal(model.encode(["the cat zebra"], unknown="omit"), X[:1])
    with pytest.raises(ValueError, match="unknown must be one of"):
        model.encode(["the cat"], unknown="zero")
    with pytest.raises(ValueError, match="unknown must be one of omit, hash, pieces, got 'HASH'"):
        embed_file(model, __file__, tmp_path / "never.npy", unknown="HASH")  # what a cluster embed runs too


def test_hash_scale_of_a_model_without_a_record_multiplies_the_hashed_part(model):
    # the rule itself, against a plain average: test_average
    z = hashed_vector("zebra", model.dim)
    X = model.encode(["zebra", "the"], unknown="hash")
    np.testing.assert_allclose(X[0], z * HASH_SCALE * model.unknown_norm() / np.linalg.norm(z), rtol=1e-6)
    Y = model.encode(["zebra"], unknown="hash", unknown_scale=2.5)
    assert np.linalg.norm(Y[0]) == pytest.approx(2.5 * model.unknown_norm(), rel=1e-5)
    s1, s2 = "the cat saw zebrafish", "a dog saw zebrafish"  # a shared unknown word raises the similarity
    assert model.similarity([s1], [s2], unknown="hash")[0, 0] > model.similarity([s1], [s2])[0, 0] + 0.05


@pytest.mark.parametrize("rule, pair, notes", [
    ("hash", ["zebra quagga", "the cat"], ["given hashed random vectors: zebra, quagga"]),
    ("pieces", ["the sated cat", "xq cat"], ["split into pieces: sated (sat ##ed)", "xq (none: left out)"]),
    ("hash", [b"the cat \xff sat".decode("utf-8", "surrogateescape"), "the cat"], []),  # argv that is not UTF-8
], ids=["hash", "pieces", "argv-not-utf8"])
def test_similarity_cli_notes_the_unknown_words(model, tmp_path, runner, rule, pair, notes):  # no word, empty: test_cli
    save_model(model, tmp_path / "m")
    r = runner.invoke(main, ["similarity", "-m", str(tmp_path / "m"), "--unknown", rule, *pair])
    assert r.exit_code == 0, r.output
    assert float(r.stdout.strip()) == pytest.approx(model.similarity(pair[:1], pair[1:], unknown=rule)[0, 0], abs=1e-4)
    assert all(note in r.stderr for note in notes), r.stderr


# the values of three hashed vectors, pinned: --unknown hash must give the same vector for a
# token in every process and every version (Python's hash() differs between processes)
PINNED = {
    "zebra": [-0.49348798257488474, 1.2100632775924502, -0.3754441640693805, -1.2665680322816912],
    "Zürich": [-1.1476969442151508, 0.6354372317900553, -0.1938482097671903, -1.2765313714036466],
    "ünknown": [-0.9037815198556747, -2.2558731112032224, -0.038695036301150475, -1.6681386835272258],
}


def test_hashed_vectors_are_pinned_the_same_in_every_process_and_shared_with_the_overlap_control():
    a = hashed_vector("zebra", 16)
    assert a.shape == (16,) and a.dtype == np.float64
    assert np.array_equal(a, hashed_vector("zebra", 16)) and not np.allclose(a, hashed_vector("zebras", 16))
    assert np.array_equal(OverlapControl(dim=16).vector("zebra"), a)
    for token, want in PINNED.items():
        np.testing.assert_allclose(hashed_vector(token, 4), want, rtol=1e-12)
    code = ("import json, sys; from scbow.vectors.numeric import hashed_vector; "
            "print(json.dumps({t: hashed_vector(t, 4).tolist() for t in json.loads(sys.argv[1])}))")
    for seed in ("1", "2"):  # two processes with different str hashes
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code, json.dumps(list(PINNED))], capture_output=True,
                             text=True, env=env, check=True).stdout
        got = json.loads(out)
        for token, want in PINNED.items():
            np.testing.assert_allclose(got[token], want, rtol=1e-12)


# -- pieces: what the exported folders can carry ---------------------------------------

PIECE_VOCAB = ["the", "cat", "sat", "la", "laertes", "king", "kingdom", "über", "naïve", "日本", "a😀b", "##q"]


def plain_ngrams(words, longest):
    first = {w[:a] for w in words for a in range(1, min(longest, len(w)) + 1)}
    inner = {w[i:i + a] for w in words for i in range(1, len(w)) for a in range(1, min(longest, len(w) - i) + 1)}
    return first, inner


def test_ngrams_are_every_run_of_characters_that_starts_or_continues_a_word():
    rng = np.random.default_rng(3)
    alphabet = list("abcdeü日😀\u0301#")
    words = PIECE_VOCAB + ["".join(rng.choice(alphabet, rng.integers(1, 9))) for _ in range(300)]
    for longest in (1, 3, 4):
        assert ngrams(words, longest) == plain_ngrams(words, longest)


def wordpiece_tokenizer(pieces, words):
    """The ``tokenizers`` WordPiece model the exports write, over whitespace-split words: the oracle."""
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {t: i for i, t in enumerate(list(words) + pieces.new + ["[UNK]"])}
    spec = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None, "decoder": None,
            "model": wordpiece_model(vocab, "[UNK]", pieces.max_chars)}
    return tokenizers.Tokenizer.from_str(json.dumps(spec))


def test_pieces_split_words_as_the_exported_wordpiece_tokenizer_does():
    pieces = Pieces(PIECE_VOCAB)
    assert pieces.split("laertes") == ["laertes"]  # a word is its own piece
    assert pieces.split("laert") == ["la", "##er", "##t"]  # the longest piece first
    assert pieces.split("kingdoms") == ["kingdom", "##s"]
    assert pieces.split("catx") == []  # x is in no word: no pieces (the tokenizer's unknown token)
    assert all(len(p.removeprefix("##")) <= PIECE_CHARS for p in pieces.new)
    tokenizer = wordpiece_tokenizer(pieces, PIECE_VOCAB)
    rng = np.random.default_rng(5)
    alphabet = list("abcdegiklnrstüïx日本😀#q")
    words = PIECE_VOCAB + ["".join(rng.choice(alphabet, rng.integers(1, 12))) for _ in range(2000)]
    words += ["a" * pieces.max_chars, "a" * (pieces.max_chars + 1)]
    for word in words:
        got = tokenizer.encode(word, add_special_tokens=False).tokens
        assert pieces.split(word) == ([] if got == ["[UNK]"] else got), word


@pytest.mark.parametrize("rule, share", [("pieces", "50.0%"), ("omit", "25.0%"), ("hash", "100.0%")])
def test_embed_summary_counts_the_words_averaged_under_pieces(model, tmp_path, runner, rule, share):
    """The share of tokens averaged counts words, not pieces: under pieces a word without pieces (xq)
    is not averaged, and a word of two pieces (sated) is one token."""
    save_model(model, tmp_path / "m")
    (tmp_path / "in.txt").write_text("the sated\nxq zq\n", encoding="utf-8")  # 4 tokens; sated: sat ##ed
    r = runner.invoke(main, ["embed", "-m", str(tmp_path / "m"), "--unknown", rule, "-o", str(tmp_path / "o.npy"),
                             str(tmp_path / "in.txt")])
    assert r.exit_code == 0, r.output
    assert f"{share} of tokens averaged" in r.output, r.output
