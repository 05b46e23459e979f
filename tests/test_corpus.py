"""Tokenizer, vocabulary and the corpus encoder with its on-disk cache."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import train_args
from numba import njit

from scbow.cli import main
from scbow.errors import CorpusError
from scbow.kernels.encode import is_space
from scbow.text.reader import expand
from scbow.text.tokenize import _patterns, fold, mark_ranges, tokenize, tokenize_lines
from scbow.text.vocab import Vocab
from scbow.training import cache as cache_mod
from scbow.training import corpus as corpus_mod
from scbow.training.corpus import load_corpus
from scbow.vectors.model import Model

# ---------------------------------------------------------------- Tokenizer


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("Hello, World!", ["hello", ",", "world", "!"]), ("The CAT sat.", ["the", "cat", "sat", "."]),
        ("Don't stop at five o'clock", ["don't", "stop", "at", "five", "o'clock"]), ("Don\u2019t", ["don't"]),
        ("\u2018King\u2019s\u2019 \u201cyes\u201d \u201emaybe\u201f", ["'", "king's", "'", '"', "yes", '"', '"', "maybe", '"']),
        ("Cafe\u0301 CAF\u00c9", ["caf\u00e9", "caf\u00e9"]),  # NFD and NFC: one word
        ("\ufb01ne \uff21\uff22\uff23 \u2460", ["fine", "abc", "1"]),  # ligature, full-width, circled
        ("'Tis the dogs' bone", ["'", "tis", "the", "dogs", "'", "bone"]), ("rock 'n' roll", ["rock", "'", "n", "'", "roll"]),
        ("État, ÉCOLE", ["état", ",", "école"]), ("In 1984 (or so)", ["in", "1984", "(", "or", "so", ")"]),
        ("e-mail...", ["e", "-", "mail", ".", ".", "."]), ('"Quoted"', ['"', "quoted", '"']),
        ("snake_case #tag", ["snake_case", "#", "tag"]), ("  \t  ", []), ("", []),
        # a word keeps its combining marks: vowel signs and virama, niqqud, the dot lowercasing leaves on i
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),
        ("\u0130stanbul", ["i\u0307stanbul"]), ("שָׁלוֹם!", ["שָׁלוֹם", "!"]),
        ("q\u0304uit q\u0304'q\u0304", ["q\u0304uit", "q\u0304'q\u0304"]),  # a mark NFKC cannot compose
        ("\u0301a \u0301", ["\u0301", "a", "\u0301"]),  # a mark with no letter before it stands alone
    ],
)
def test_tokenize_rules(text, tokens):
    assert tokenize(text) == tokens


def test_a_model_folds_what_is_typed_as_its_corpus_was():
    words = ["don't", "caf\u00e9"]
    model = Model(Vocab(words, [9, 9]), np.eye(2, dtype=np.float32), {"unknown": "omit"})
    np.testing.assert_array_equal(model.encode(["Don\u2019t", "Cafe\u0301"]), model.vectors)
    assert model.wv.get_index("CAFE\u0301") == 1


def test_the_marks_a_word_keeps_are_every_combining_mark():
    """mark_ranges reads planes 0, 1 and 14 only, where Unicode puts every combining mark."""
    every = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c))[0] == "M"]
    assert [c for a, b in mark_ranges() for c in range(a, b + 1)] == every


def test_the_tokenizer_is_its_rule_as_written():
    """The regex for text without units writes WORD(?:['’]WORD)* with WORD = \\w[\\w MARKS]* in a faster
    form: the same tokens, every mark and the characters around the ASCII range in every place a word can
    hold them."""
    marks = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in mark_ranges())
    word = rf"\w[\w{marks}]*"
    rule = re.compile(rf"{word}(?:['\u2019]{word})*|[^\w\s]")
    odd = [chr(c) for c in range(0x20, 0x3000) if unicodedata.category(chr(c)) != "Cs"]
    odd += [chr(c) for a, b in mark_ranges() for c in range(a, b + 1)]
    text = " ".join(f"a{c}b {c}x x{c}{c}'y{c} q'{c} q{c}' 1{c}_" for c in odd)
    assert _patterns()[0].findall(fold(text).lower()) == rule.findall(fold(text).lower())


HINDI = "\u0939\u093f\u0928\u094d\u0926\u0940"  # six characters, three of them marks


def test_a_word_keeps_its_marks(tmp_path, monkeypatch):
    """A corpus is encoded with its marks in its words (and says so); a model tells the word from its
    letters spaced out."""
    (tmp_path / "a.txt").write_text(f"{HINDI} \u092d\u093e\u0937\u093e.\n\u0130stanbul {HINDI}.\n", encoding="utf-8")
    c = load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache")
    assert HINDI in c.vocab and "i\u0307stanbul" in c.vocab and "\u093f" not in c.vocab
    assert c.stats["tokenizer_version"] == "4"
    key = corpus_mod.cache_key([tmp_path / "a.txt"], 1, 0)  # a corpus cached under another version is encoded again
    monkeypatch.setattr(cache_mod, "TOKENIZER_VERSION", "5")
    assert Path(c.cache_path).name == key != corpus_mod.cache_key([tmp_path / "a.txt"], 1, 0)

    letters = list(HINDI)
    words = [HINDI, *letters]
    vectors = np.random.default_rng(0).standard_normal((len(words), 4)).astype(np.float32)
    model = Model(Vocab(words, [9] * len(words)), vectors, {"unknown": "omit"})
    spaced = " ".join(letters)
    assert model.tokenize(HINDI) == [HINDI] and model.tokenize(spaced) == letters
    np.testing.assert_array_equal(model.encode([HINDI])[0], vectors[0])
    assert model.similarity([HINDI], [spaced])[0, 0] < 0.99  # the word and its letters were one sentence: 1.0


def test_folding_keeps_line_ends_and_whitespace():
    # the corpus encoder and the embedder count line ends and cut chunks at whitespace in the raw text
    for c in map(chr, range(sys.maxunicode + 1)):
        if unicodedata.category(c) == "Cs":
            continue
        folded = fold(c)
        assert folded.count("\n") == (c == "\n"), hex(ord(c))
        if c.isspace():
            assert folded.isspace(), hex(ord(c))


def test_vocab_save_load_round_trip(tmp_path):
    v = Vocab(["the", "don't", "état", ","], [10, 3, 3, 1])
    v.save(tmp_path / "vocab.txt")
    w = Vocab.load(tmp_path / "vocab.txt")
    assert w.words == v.words and w.counts.tolist() == [10, 3, 3, 1]
    assert w.index["état"] == 2 and "don't" in w and "cat" not in w
    with pytest.raises(ValueError, match="repeated"):
        Vocab(["a", "a"], [1, 1])
    with pytest.raises(ValueError):
        Vocab(["a"], [1, 2])


# ---------------------------------------------------------------- Encoding

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


def test_small_corpus_by_hand_and_document_boundaries(tmp_path):
    (tmp_path / "a.txt").write_text(TEXT1)
    (tmp_path / "b.txt").write_text(TEXT2)
    c = load_corpus([tmp_path / "a.txt", tmp_path / "b.txt"], min_count=1, cache_dir=tmp_path / "cache")
    check_consistent(c)
    sents, docs = decode(c)
    assert sents == [["the", "cat", "sat", "."], ["the", "dog", "sat", "."], ["a", "cat", "ran", "!"], ["the", "end", "."]]
    # the blank line ends the first document, the end of a.txt the second
    assert docs == [0, 0, 1, 2] and c.doc_offsets.tolist() == [0, 2, 3, 4] and c.offsets.tolist() == [0, 4, 8, 12, 15]
    # leading blank lines, several blank lines, whitespace-only lines, CRLF, no final newline
    text = "\n\nOne a.\r\nTwo a.\r\n\r\n\r\n   \r\nThree a.\n \t \nFour a.\nFive a."
    (tmp_path / "a.txt").write_text(text, encoding="utf-8", newline="")
    (tmp_path / "b.txt").write_text("Six a.\n\n\n")
    c = load_corpus([tmp_path / "a.txt", tmp_path / "b.txt"], min_count=1, cache_dir=tmp_path / "cache")
    check_consistent(c)
    sents, docs = decode(c)
    assert [s[0] for s in sents] == ["one", "two", "three", "four", "five", "six"]
    assert docs == [0, 0, 1, 2, 2, 3]


def test_directory_input_reads_its_text_files_in_order_and_names_what_it_leaves_out(tmp_path, capsys):
    d = tmp_path / "books"
    d.mkdir()
    (d / "b.txt").write_text(TEXT2)
    (d / "a.txt").write_text(TEXT1)
    (d / "help.html").write_text("<p>Ignored words here.</p>\n")
    (d / ".hidden").write_text("x\n")
    c = load_corpus([d], min_count=1, cache_dir=tmp_path / "cache")
    sents, docs = decode(c)
    assert sents[0] == ["the", "cat", "sat", "."] and sents[-1] == ["the", "end", "."]
    assert docs == [0, 0, 1, 2]
    assert "ignored" not in c.vocab
    err = capsys.readouterr().err
    assert "1 file left out (help.html)" in err and ".hidden" not in err
    (d / "help.html").unlink()
    assert expand([d]) == [d / "a.txt", d / "b.txt"] and capsys.readouterr().err == ""  # a file reached twice: test_reader


def test_oov_words_and_empty_sentences_and_documents_are_dropped_and_invalid_utf8_counted(tmp_path):
    # a sentence of rare words only is dropped (its neighbours become neighbours), so is a document of them
    (tmp_path / "a.txt").write_text("x y x y.\nrare1 rare2\ny x rare3 .\n\nrare4 rare5 rare6\n\nx. y.\n")
    c = load_corpus([tmp_path / "a.txt"], min_count=2, cache_dir=tmp_path / "cache")
    check_consistent(c)
    sents, docs = decode(c)
    assert sents == [["x", "y", "x", "y", "."], ["y", "x", "."], ["x", ".", "y", "."]]
    assert docs == [0, 0, 1] and set(c.vocab.words) == {"x", "y", "."} and c.stats["raw_tokens"] == 18
    assert c.stats["oov_rate"] == pytest.approx(6 / 18, abs=1e-6)
    good = "".join(f"Line {i} has words.\n" for i in range(20)).encode()
    (tmp_path / "a.txt").write_bytes(good + b"bad \xff\xfe bytes.\n" + good)
    with pytest.raises(CorpusError, match="a.txt: not valid utf-8 text"):
        load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache")
    c = load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache", encoding="utf-8:replace")
    assert c.stats["invalid_utf8_lines"] == 1 and c.n_sentences == 41 and c.stats["encoding"] == "utf-8:replace"
    assert "\ufffd" in c.vocab  # the replacement character stands for the bad bytes


def test_the_encoding_is_part_of_the_cache_key(tmp_path):
    (tmp_path / "a.txt").write_bytes("Le café était fermé.\n".encode("cp1252"))
    cp1252 = load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache", encoding="cp1252")
    mac = load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache", encoding="mac-roman")
    assert "café" in cp1252.vocab and "café" not in mac.vocab and cp1252.cache_path != mac.cache_path
    again = load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache", encoding="cp1252")
    assert again.from_cache and again.cache_path == cp1252.cache_path and again.stats["encoding"] == "cp1252"


def test_min_count_max_vocab_and_the_vocabulary_order(tmp_path):
    (tmp_path / "a.txt").write_text("a a a a b b b c c d\na b c d e\n")
    # counts: a 5, b 4, c 3, d 2, e 1
    c = load_corpus([tmp_path / "a.txt"], min_count=3, cache_dir=tmp_path / "cache")
    assert c.vocab.words == ["a", "b", "c"]
    c = load_corpus([tmp_path / "a.txt"], min_count=1, max_vocab=2, cache_dir=tmp_path / "cache")
    assert c.vocab.words == ["a", "b"] and c.stats["max_vocab"] == 2
    assert decode(c)[0] == [["a"] * 4 + ["b"] * 3, ["a", "b"]]
    (tmp_path / "a.txt").write_text("b a c\na c\nd c\ne e\n")
    c = load_corpus([tmp_path / "a.txt"], min_count=1, cache_dir=tmp_path / "cache")
    # c:3, a:2, e:2 (a seen first), b:1, d:1 (b seen first)
    assert c.vocab.words == ["c", "a", "e", "b", "d"] and c.vocab.counts.tolist() == [3, 2, 2, 1, 1]


# ---------------------------------------------------------------- Errors


@pytest.mark.parametrize("content, fragment", [
    (b"", "no words"), (b"\n\n\n", "no words"), (b"  \n\t\n\r\n", "no words"),
    (b"some words\n\x00\x01\x02\x00binary\n", "binary"), (b"\xff\xfe\xfa word\n\xc3\x28 x\n\xa0\xa1\n", "not valid utf-8"),
    (np.random.default_rng(0).integers(0, 256, 20000, dtype=np.uint8).tobytes(), "binary"),
    (TEXT1.encode(), "vocabulary is empty"),  # at min_count 1000
], ids=["empty", "blank-lines", "whitespace", "nul", "invalid-utf8", "random", "min-count"])
def test_what_holds_no_corpus_is_refused_and_leaves_nothing_in_the_cache(tmp_path, content, fragment):
    (path := tmp_path / "a.txt").write_bytes(content)
    with pytest.raises(CorpusError, match=fragment):
        load_corpus([path], min_count=1000 if "vocabulary" in fragment else 1, cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    with pytest.raises(CorpusError):
        load_corpus([], cache_dir=tmp_path / "cache")


def test_real_corpus_slice(tmp_path, monkeypatch, gutenberg_slice):
    path = gutenberg_slice(3000)
    text = path.read_text(encoding="utf-8")
    # an independent encoding with the (separately tested) tokenizer
    docs = [[tokenize(line) for line in block.split("\n") if tokenize(line)] for block in re.split(r"\n\s*\n", text)]
    docs = [d for d in docs if d]
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
    new, old = _encode_both(monkeypatch, [gutenberg_slice(3000)])
    assert_same_corpus(new, old)


# ---------------------------------------------------------------- the chunk memo gives the ids of the regex pass

TRICKY_LINES = [
    "The CAT sat. the cat SAT!",
    "ΟΔΟΣ ΟΔΟΣ. ΟΔΟΣ\tΟΔΟΣ,ΟΔΟΣ ΟΔΟΣ.Α Σ ΑΣ\u0301 σας ΣΑΣ",  # final sigma
    "İstanbul İ KIRMIZI ıi",  # Turkish dotted capital I lowercases to two code points
    "Straße STRASSE ß ẞ",
    "don't O’CLOCK o'clock 'quote' dogs' 'tis rock 'n' roll ''",
    "...!!?? --- «»  ()[]{} #tag e-mail a.b.c 1,000.5",
    "tab\tseparated\t\twords\t", "vertical\x0bfeed\x0cfile\x1cgroup\x1drecord\x1eunit\x1fsep",
    "next\x85line\u2028line\u2029para\u3000ideographic\xa0nbsp\u2009thin\u1680ogham", "", "   \t  ", "!!! ... ???",
    "   leading and trailing spaces   ", "\ufffd bad \ufffd\ufffd bytes\ufffd",
    "snake_case ＦＵＬＬＷＩＤＴＨ 数字123 ٣٤ ä̈ a\u0301", "", "", "a new document after blank lines.",
]


def _plain_encode(self, block):
    """The encoder before the chunk memo: one regex pass over the block, one lookup per token."""
    words = tokenize_lines(block)
    return np.fromiter(map(self._types.__getitem__, words), dtype=np.int32, count=len(words))


def _random_text(seed, n_lines=300):
    rng = np.random.default_rng(seed)
    pieces = ["the", "The", "ΟΔΟΣ", "Σ", "σ", "İ", "ß", "don't", "o’clock", "'", "’", ".", ",",
              "!", "-", "é", "E\u0301", "\ufffd", "1984", "_", " ", " ", " ", "\t", "\x0b",
              "\x0c", "\x1c", "\x1f", "\x85", "\u2028", "\u3000", "\xa0"]
    return "".join("".join(rng.choice(pieces, size=rng.integers(0, 12))) + "\n" for _ in range(n_lines))


def memo_gives_the_regex_ids(blocks, **kwargs):
    """Each block through the chunk memo and through the plain regex pass: the same ids, in first-occurrence
    order. Returns the memo, and after each block (table slots, keys, code points of keys, chunks)."""
    types, plain_types = corpus_mod._TypeIds(), corpus_mod._TypeIds()
    chunks, plain = corpus_mod._ChunkIds(types, **kwargs), corpus_mod._ChunkIds(plain_types)
    sizes = []
    for block in blocks:
        got = chunks.encode(block)
        assert got.dtype == np.int32 and got.tolist() == _plain_encode(plain, block).tolist()
        sizes.append((len(chunks._table), len(chunks._key_start), len(chunks._keys), len(chunks)))
    assert list(types.items()) == list(plain_types.items())
    return chunks, sizes


@pytest.mark.parametrize("text", ["\n".join(TRICKY_LINES) + "\n", _random_text(0), _random_text(1),
                                  "no trailing newline ΟΔΟΣ\n", "\n\n\n"])
def test_chunk_memo_gives_the_ids_of_the_regex_pass(text):
    memo_gives_the_regex_ids([text, text])  # the second time every chunk is a memo hit


def test_chunk_memo_that_starts_afresh_gives_the_same_ids(monkeypatch):
    monkeypatch.setattr(corpus_mod, "_MAX_CHUNKS", 5)
    blocks = [_random_text(seed, 20) for seed in range(4)]
    _, sizes = memo_gives_the_regex_ids(blocks)
    assert all(size[3] <= 5 + len(block.split()) for size, block in zip(sizes, blocks))


def _encode_both(monkeypatch, paths, encoding="utf-8"):
    """``load_corpus`` with the chunk memo and with the plain regex pass: the same progress reports."""
    new_progress, old_progress = [], []
    new = load_corpus(paths, min_count=1, use_cache=False, progress=lambda *a: new_progress.append(a),
                      encoding=encoding)
    with monkeypatch.context() as m:
        m.setattr(corpus_mod._ChunkIds, "encode", _plain_encode)
        old = load_corpus(paths, min_count=1, use_cache=False, progress=lambda *a: old_progress.append(a),
                          encoding=encoding)
    assert new_progress == old_progress
    return new, old


def assert_same_corpus(a, b):
    assert a.vocab.words == b.vocab.words
    assert a.vocab.counts.tolist() == b.vocab.counts.tolist()
    for name in ("tokens", "offsets", "sent_doc", "doc_offsets"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.stats == b.stats


@pytest.mark.parametrize("read_hint", [1 << 23, 7])  # one block per file, or many small ones
def test_encoder_matches_the_regex_pass_on_tricky_files(tmp_path, monkeypatch, read_hint):
    monkeypatch.setattr(corpus_mod, "_READ_HINT", read_hint)
    tricky = "\n".join(TRICKY_LINES) + "\n"
    files = [tricky.encode(), tricky.replace("\n", "\r\n").encode(), b"last line without a newline \xce\xa3", b"",
             _random_text(2).encode(), b"good line\nbad \xff\xfe line\n\n\xc3( more\nfine again\n",  # invalid UTF-8
             b"\n\nblank lines first\r\rold Mac line ends\r"]
    for i, data in enumerate(files):
        (tmp_path / f"{i}.txt").write_bytes(data)
    new, old = _encode_both(monkeypatch, [tmp_path / f"{i}.txt" for i in range(len(files))], "utf-8:replace")
    assert_same_corpus(new, old)
    assert new.stats["invalid_utf8_lines"] > 2


def test_blocks_are_the_lines_readlines_gives(tmp_path):
    text = "".join(f"line {i} " + "x" * (i % 13) + ("\r\n" if i % 3 else "\n") for i in range(200))
    (tmp_path / "a.txt").write_bytes(text.encode())
    for hint in (1, 5, 17, 64, 1000):
        with corpus_mod.open_text(tmp_path / "a.txt") as fh:
            want = list(iter(lambda: "".join(fh.readlines(hint)), ""))
        with corpus_mod.open_text(tmp_path / "a.txt") as fh:
            got = list(iter(lambda: fh.read(hint) + fh.readline(), ""))
        assert got == want, hint


def test_the_chunk_memo_assumptions_hold_for_every_code_point():
    every = "".join(map(chr, range(0x110000)))
    regex_space = set(re.findall(r"\s", every))
    # str.split() cuts at exactly the characters the tokenizer's \s skips
    assert set(every) - set("".join(every.split())) == regex_space
    assert {c for c in every if c.isspace()} == regex_space
    # no token can hold whitespace: no character is both \w and \s
    assert not re.findall(r"(?=\w)\s", every)
    # lowercasing a chunk makes no whitespace, and the final-sigma rule stops at whitespace
    assert not regex_space & set("".join(every.split()).lower())
    for w in regex_space:
        for text in ("ΑΣ" + w + "Β", "Α" + w + "ΣΒ", "Α" + w + "Σ", "ΑΣ" + w, "Σ" + w + "Σ"):
            assert text.lower() == w.join(part.lower() for part in text.split(w)), hex(ord(w))
    # the compiled chunk scan cuts at exactly the same characters
    @njit
    def space_mask(n):
        out = np.zeros(n, dtype=np.bool_)
        for c in range(n):
            out[c] = is_space(np.uint32(c))  # the scan passes uint32 code points
        return out

    assert set(map(chr, np.flatnonzero(space_mask(0x110000)))) == regex_space


def test_chunk_memo_grows_its_table_and_key_store():
    # the second: a chunk many times the key store, doubled several times before it fits
    blocks = [_random_text(5), "\n".join(TRICKY_LINES) + "\n" + "Ab" * 500 + " tail\n",
              "lone \ud800 surrogate\udfff\n" + _random_text(6)]
    # room for one chunk at first: a table of 4 slots, 2 keys, 8 code points of keys
    chunks, sizes = memo_gives_the_regex_ids(blocks + blocks, capacity=1)  # the second time, every chunk a hit
    assert len(chunks) == len(set("".join(blocks).split()))
    assert sizes[0][0] >= 4 << 6 and sizes[0][1] >= 2 << 6 and sizes[1][2] >= 2000
    assert sizes[2:] == sizes[2:3] * 4  # nothing grows once every chunk is known


def test_importing_the_encoder_does_not_import_numba():
    code = "import sys, scbow.training.corpus; print('numba' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr


def test_the_corpus_files_are_recorded_and_shown_absolute(tmp_path, monkeypatch, runner, make_text):
    """A corpus typed as a relative path is stored absolute: info and cache mean something from anywhere."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "c.txt").write_text(make_text(n_docs=2, sents_per_doc=30, seed=3), encoding="utf-8")
    monkeypatch.chdir(tmp_path / "work")
    absolute = str(tmp_path / "work" / "c.txt")
    cache = tmp_path / "cache"
    for cached in (False, True):  # encoded, then from the cache
        corpus = corpus_mod.read_corpus(["c.txt"], min_count=1, cache_dir=cache, quiet=True)
        assert corpus.stats["files"] == [absolute] and corpus.from_cache == cached
    result = runner.invoke(main, train_args("c.txt", tmp_path / "m", "--cache-dir", str(cache)))
    assert result.exit_code == 0, result.output
    monkeypatch.chdir(tmp_path)
    info = runner.invoke(main, ["info", "-m", str(tmp_path / "m")])
    assert info.exit_code == 0 and absolute in info.output and "'c.txt'" not in info.output
    listing = runner.invoke(main, ["cache", "--cache-dir", str(cache)])
    assert listing.exit_code == 0 and absolute in listing.stdout
    monkeypatch.chdir(tmp_path / "work")
    meta = Path(corpus.cache_path) / "meta.json"  # an entry of an earlier version: the path as typed
    meta.write_text(meta.read_text(encoding="utf-8").replace(json.dumps(absolute), '"c.txt"'), encoding="utf-8")
    assert corpus_mod.read_corpus(["c.txt"], min_count=1, cache_dir=cache, quiet=True).stats["files"] == [absolute]

