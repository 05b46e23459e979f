"""Tokenizer, vocabulary and the corpus encoder with its on-disk cache."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import time
from collections import Counter

import numpy as np
import pytest

import scbow
from scbow import corpus as corpus_mod
from scbow.corpus import CorpusError, load_corpus
from scbow.tokenize import tokenize, tokenize_lines
from scbow.vocab import Vocab

# ---------------------------------------------------------------------------------------
# Tokenizer


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("Hello, World!", ["hello", ",", "world", "!"]),
        ("The CAT sat.", ["the", "cat", "sat", "."]),
        ("Don't stop at five o'clock", ["don't", "stop", "at", "five", "o'clock"]),
        ("Don\u2019t", ["don\u2019t"]),
        ("'Tis the dogs' bone", ["'", "tis", "the", "dogs", "'", "bone"]),
        ("rock 'n' roll", ["rock", "'", "n", "'", "roll"]),
        ("État, ÉCOLE", ["état", ",", "école"]),
        ("In 1984 (or so)", ["in", "1984", "(", "or", "so", ")"]),
        ("e-mail...", ["e", "-", "mail", ".", ".", "."]),
        ('"Quoted"', ['"', "quoted", '"']),
        ("snake_case #tag", ["snake_case", "#", "tag"]),
        ("  \t  ", []),
        ("", []),
    ],
)
def test_tokenize_rules(text, tokens):
    assert tokenize(text) == tokens


def test_tokenize_is_exported_and_lines_keep_newlines():
    assert scbow.tokenize is tokenize
    assert tokenize_lines("A b.\n\nC!\n") == ["a", "b", ".", "\n", "\n", "c", "!", "\n"]
    assert tokenize("A b.\nC!") == ["a", "b", ".", "c", "!"]


def test_vocab_save_load_round_trip(tmp_path):
    v = Vocab(["the", "don't", "état", ","], [10, 3, 3, 1])
    v.save(tmp_path / "vocab.txt")
    w = Vocab.load(tmp_path / "vocab.txt")
    assert w.words == v.words
    assert w.counts.tolist() == [10, 3, 3, 1]
    assert w.index["état"] == 2 and "don't" in w and "cat" not in w
    with pytest.raises(ValueError, match="repeated"):
        Vocab(["a", "a"], [1, 1])
    with pytest.raises(ValueError):
        Vocab(["a"], [1, 2])


# ---------------------------------------------------------------------------------------
# Encoding

TEXT1 = "The cat sat.\nThe dog sat.\n\nA cat ran!\n"
TEXT2 = "The end.\n"


def decode(c):
    """Sentences as lists of words, and the document of each."""
    words = c.vocab.words
    sents = [[words[t] for t in c.tokens[c.offsets[s] : c.offsets[s + 1]]] for s in range(c.n_sentences)]
    return sents, c.sent_doc.tolist()


def check_consistent(c):
    assert c.tokens.dtype == np.int32 and c.offsets.dtype == np.int64
    assert c.sent_doc.dtype == np.int32 and c.doc_offsets.dtype == np.int64
    assert c.offsets[0] == 0 and c.offsets[-1] == len(c.tokens)
    assert (np.diff(c.offsets) >= 1).all()  # no empty sentence
    assert len(c.sent_doc) == c.n_sentences
    assert c.doc_offsets[0] == 0 and c.doc_offsets[-1] == c.n_sentences
    assert (np.diff(c.doc_offsets) >= 1).all()  # no empty document
    for d in range(c.n_documents):
        assert (c.sent_doc[c.doc_offsets[d] : c.doc_offsets[d + 1]] == d).all()
    assert ((c.tokens >= 0) & (c.tokens < len(c.vocab))).all()
    assert (np.diff(c.vocab.counts) <= 0).all()  # most frequent first
    st = c.stats
    assert (st["tokens"], st["sentences"], st["documents"], st["vocab_size"]) == (
        len(c.tokens), c.n_sentences, c.n_documents, len(c.vocab))


def test_small_corpus_by_hand(tmp_path):
    (tmp_path / "a.txt").write_text(TEXT1)
    (tmp_path / "b.txt").write_text(TEXT2)
    c = load_corpus([tmp_path / "a.txt", tmp_path / "b.txt"], min_count=1, cache_dir=tmp_path / "cache")
    check_consistent(c)
    sents, docs = decode(c)
    assert sents == [
        ["the", "cat", "sat", "."],
        ["the", "dog", "sat", "."],
        ["a", "cat", "ran", "!"],
        ["the", "end", "."],
    ]
    # the blank line ends the first document, the end of a.txt the second
    assert docs == [0, 0, 1, 2]
    assert c.doc_offsets.tolist() == [0, 2, 3, 4]
    assert c.offsets.tolist() == [0, 4, 8, 12, 15]


def test_vocab_ordered_by_count_then_first_occurrence(tmp_path):
    (tmp_path / "a.txt").write_text("b a c\na c\nd c\ne e\n")
    c = load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache")
    # c:3, a:2, e:2 (a seen first), b:1, d:1 (b seen first)
    assert c.vocab.words == ["c", "a", "e", "b", "d"]
    assert c.vocab.counts.tolist() == [3, 2, 2, 1, 1]


@pytest.mark.parametrize("opener, suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2"), (lzma.open, ".xz")])
def test_compressed_files_give_identical_arrays(tmp_path, make_text, opener, suffix):
    text = make_text(n_docs=3, sents_per_doc=20, seed=1)
    plain = tmp_path / "plain.txt"
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / ("packed.txt" + suffix)
    with opener(packed, "wt", encoding="utf-8") as fh:
        fh.write(text)
    a = load_corpus([plain], min_count=2, cache_dir=tmp_path / "cache")
    b = load_corpus([packed], min_count=2, cache_dir=tmp_path / "cache")
    assert a.cache_path != b.cache_path
    assert a.vocab.words == b.vocab.words
    assert a.vocab.counts.tolist() == b.vocab.counts.tolist()
    for name in ("tokens", "offsets", "sent_doc", "doc_offsets"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.n_documents == 3


def test_compression_is_detected_by_content_not_name(tmp_path):
    path = tmp_path / "looks-plain.txt"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(TEXT1)
    c = load_corpus([path], min_count=1, cache_dir=tmp_path / "cache")
    assert decode(c)[0][0] == ["the", "cat", "sat", "."]


def test_document_boundaries(tmp_path):
    # leading blank lines, several blank lines, whitespace-only lines, CRLF, no final newline
    text = "\n\nOne a.\r\nTwo a.\r\n\r\n\r\n   \r\nThree a.\n \t \nFour a.\nFive a."
    (tmp_path / "a.txt").write_text(text, encoding="utf-8", newline="")
    (tmp_path / "b.txt").write_text("Six a.\n\n\n")
    c = load_corpus([tmp_path / "a.txt", tmp_path / "b.txt"], min_count=1, cache_dir=tmp_path / "cache")
    check_consistent(c)
    sents, docs = decode(c)
    assert [s[0] for s in sents] == ["one", "two", "three", "four", "five", "six"]
    assert docs == [0, 0, 1, 2, 2, 3]


def test_directory_input_reads_its_text_files_in_order(tmp_path):
    d = tmp_path / "books"
    d.mkdir()
    (d / "b.txt").write_text(TEXT2)
    (d / "a.txt").write_text(TEXT1)
    (d / "notes.md").write_text("Ignored words here.\n")
    c = load_corpus([d], min_count=1, cache_dir=tmp_path / "cache")
    sents, docs = decode(c)
    assert sents[0] == ["the", "cat", "sat", "."] and sents[-1] == ["the", "end", "."]
    assert docs == [0, 0, 1, 2]
    assert "ignored" not in c.vocab


def test_oov_words_and_empty_sentences_and_documents_are_dropped(tmp_path):
    text = (
        "x y x y.\n"           # doc 0
        "rare1 rare2\n"        # only rare words: dropped, neighbours become neighbours
        "y x rare3 .\n"
        "\n"
        "rare4 rare5 rare6\n"  # a document with only rare words disappears
        "\n"
        "x. y.\n"
    )
    (tmp_path / "a.txt").write_text(text)
    c = load_corpus([tmp_path / "a.txt"], min_count=2, cache_dir=tmp_path / "cache")
    check_consistent(c)
    sents, docs = decode(c)
    assert sents == [["x", "y", "x", "y", "."], ["y", "x", "."], ["x", ".", "y", "."]]
    assert docs == [0, 0, 1]
    assert set(c.vocab.words) == {"x", "y", "."}
    assert c.stats["raw_tokens"] == 18
    assert c.stats["oov_rate"] == pytest.approx(6 / 18, abs=1e-6)


def test_min_count_and_max_vocab(tmp_path):
    (tmp_path / "a.txt").write_text("a a a a b b b c c d\na b c d e\n")
    # counts: a 5, b 4, c 3, d 2, e 1
    c = load_corpus([tmp_path / "a.txt"], min_count=3, cache_dir=tmp_path / "cache")
    assert c.vocab.words == ["a", "b", "c"]
    c = load_corpus([tmp_path / "a.txt"], min_count=1, max_vocab=2, cache_dir=tmp_path / "cache")
    assert c.vocab.words == ["a", "b"]
    assert decode(c)[0] == [["a"] * 4 + ["b"] * 3, ["a", "b"]]
    assert c.stats["max_vocab"] == 2


def test_cache_hit_does_not_rebuild(tmp_path, monkeypatch, small_corpus_file):
    cache = tmp_path / "cache"
    first = load_corpus([small_corpus_file], min_count=1, cache_dir=cache)
    assert first.cache_path is not None and first.cache_path.startswith(str(cache))
    meta = os.path.join(first.cache_path, "meta.json")
    mtime = os.stat(meta).st_mtime_ns
    time.sleep(0.01)

    def no_build(*args, **kwargs):
        raise AssertionError("the cache was not used")

    monkeypatch.setattr(corpus_mod, "_build", no_build)
    second = load_corpus([small_corpus_file], min_count=1, cache_dir=cache)
    assert second.cache_path == first.cache_path
    assert os.stat(meta).st_mtime_ns == mtime
    assert np.array_equal(second.tokens, first.tokens)
    assert isinstance(second.tokens, np.memmap)  # memory-mapped from the cache
    # another setting is another cache entry
    monkeypatch.undo()
    third = load_corpus([small_corpus_file], min_count=2, cache_dir=cache)
    assert third.cache_path != first.cache_path
    # no temporary build directories are left behind
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        os.path.basename(p) for p in (first.cache_path, third.cache_path))


def test_cache_key_changes_when_the_file_changes(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text(TEXT1)
    a = load_corpus([path], min_count=1, cache_dir=tmp_path / "cache")
    path.write_text(TEXT1 + "A new sentence.\n")
    b = load_corpus([path], min_count=1, cache_dir=tmp_path / "cache")
    assert b.cache_path != a.cache_path
    assert b.n_sentences == a.n_sentences + 1
    assert "new" in b.vocab and "new" not in a.vocab


def test_broken_cache_is_rebuilt(tmp_path, small_corpus_file):
    a = load_corpus([small_corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    expected = np.array(a.tokens)
    os.unlink(os.path.join(a.cache_path, "tokens.npy"))
    b = load_corpus([small_corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    assert np.array_equal(b.tokens, expected)


def test_default_cache_dir_follows_env(tmp_path, monkeypatch, small_corpus_file):
    monkeypatch.setenv("SCBOW_CACHE_DIR", str(tmp_path / "envcache"))
    c = load_corpus([small_corpus_file], min_count=1)
    assert c.cache_path.startswith(str(tmp_path / "envcache"))


def test_no_cache_writes_nothing_to_the_cache_dir(tmp_path, small_corpus_file):
    c = load_corpus([small_corpus_file], min_count=1, cache_dir=tmp_path / "cache", use_cache=False)
    assert c.n_sentences == 120
    assert not (tmp_path / "cache").exists()


# ---------------------------------------------------------------------------------------
# Errors


def test_missing_path(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        load_corpus([tmp_path / "nope.txt"], cache_dir=tmp_path / "cache")


def test_no_paths(tmp_path):
    with pytest.raises(CorpusError):
        load_corpus([], cache_dir=tmp_path / "cache")


def test_directory_without_text_files(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "image.png").write_bytes(b"\x89PNG")
    with pytest.raises(CorpusError, match="no text files"):
        load_corpus([d], cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("content", [b"", b"\n\n\n", b"  \n\t\n\r\n"], ids=["empty", "blank-lines", "whitespace"])
def test_no_words(tmp_path, content):
    (tmp_path / "a.txt").write_bytes(content)
    with pytest.raises(CorpusError, match="no words"):
        load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache")
    # a failed build leaves no temporary directory in the cache
    assert not any((tmp_path / "cache").iterdir())


def test_nul_bytes_are_binary(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"some words\n\x00\x01\x02\x00binary\n")
    with pytest.raises(CorpusError, match="binary"):
        load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache")


def test_random_bytes_are_binary(tmp_path):
    (tmp_path / "a.bin").write_bytes(np.random.default_rng(0).integers(0, 256, 20000, dtype=np.uint8).tobytes())
    with pytest.raises(CorpusError, match="binary"):
        load_corpus([tmp_path / "a.bin"], min_count=1, cache_dir=tmp_path / "cache")


def test_invalid_utf8_without_nul_is_binary(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"\xff\xfe\xfa word\n\xc3\x28 x\n\xa0\xa1\n")
    with pytest.raises(CorpusError, match="invalid UTF-8"):
        load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache")


def test_a_few_invalid_utf8_lines_are_counted_not_fatal(tmp_path):
    good = "".join(f"Line {i} has words.\n" for i in range(20)).encode()
    (tmp_path / "a.txt").write_bytes(good + b"bad \xff\xfe bytes.\n" + good)
    c = load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache")
    assert c.stats["invalid_utf8_lines"] == 1
    assert c.n_sentences == 41
    assert "\ufffd" in c.vocab  # the replacement character stands for the bad bytes


def test_corrupt_compressed_file(tmp_path):
    data = gzip.compress(TEXT1.encode() * 50)
    (tmp_path / "a.txt.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CorpusError, match="cannot read"):
        load_corpus([tmp_path / "a.txt.gz"], min_count=1, cache_dir=tmp_path / "cache")


def test_min_count_too_high_gives_empty_vocab(tmp_path):
    (tmp_path / "a.txt").write_text(TEXT1)
    with pytest.raises(CorpusError, match="vocabulary is empty"):
        load_corpus([tmp_path / "a.txt"], min_count=1000, cache_dir=tmp_path / "cache")


# ---------------------------------------------------------------------------------------
# Real data


def test_real_corpus_slice(tmp_path, gutenberg_slice):
    path = gutenberg_slice(3000)
    lines = path.read_text(encoding="utf-8").split("\n")
    # an independent encoding with the (separately tested) tokenizer
    docs, cur = [], []
    for line in lines:
        toks = tokenize(line)
        if toks:
            cur.append(toks)
        elif cur:
            docs.append(cur)
            cur = []
    if cur:
        docs.append(cur)
    counts = Counter(w for d in docs for s in d for w in s)

    c = load_corpus([path], min_count=1, cache_dir=tmp_path / "cache")
    check_consistent(c)
    assert c.n_documents == len(docs) >= 1
    assert c.n_sentences == sum(len(d) for d in docs) > 2500
    assert len(c.tokens) == sum(counts.values())
    assert c.stats["oov_rate"] == 0.0 and c.stats["invalid_utf8_lines"] == 0
    assert dict(zip(c.vocab.words, c.vocab.counts.tolist())) == dict(counts)
    assert c.vocab.words[0] in {"the", ",", "."}
    sents, _ = decode(c)
    assert sents == [s for d in docs for s in d]

    c5 = load_corpus([path], min_count=5, cache_dir=tmp_path / "cache")
    check_consistent(c5)
    assert set(c5.vocab.words) == {w for w, n in counts.items() if n >= 5}
    kept = sum(n for n in counts.values() if n >= 5)
    assert c5.stats["oov_rate"] == pytest.approx(1 - kept / sum(counts.values()), abs=1e-6)
    assert 0.0 < c5.stats["oov_rate"] < 0.2
    assert c5.n_sentences <= c.n_sentences
