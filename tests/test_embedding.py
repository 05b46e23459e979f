"""Embedding text files and searching them (scbow.use.embedding): ``embed`` and ``neighbors --sentence``."""

from __future__ import annotations

import gzip
import io
import math
import os

import numpy as np
import pytest
from conftest import assert_failed as assert_clean_error

import scbow
from scbow.cli import main
from scbow.errors import CorpusError
from scbow.text.vocab import Vocab
from scbow.use.embedding import embed_file, missing_path_for, nearest_sentences, npy_header
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model
from scbow.vectors.neighbours import NEIGHBOUR_MIN_COUNT

WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "a", "big", "small", "red", "house", ".", "don't", "café"]

LINES = [
    "The cat sat on the mat.",
    "",
    "xyzzy quux",  # no known word
    "A big dog ran!",
    "  the   the the  cat  ",  # repeated words count every time
    "Don't — CAFÉ?",  # apostrophe, a dash nobody knows, unicode
    "small red house",
    "?!",  # punctuation only: unknown
    "mat",
]


def make_model(dim=6, config=None):
    rng = np.random.default_rng(0)
    counts = NEIGHBOUR_MIN_COUNT + np.arange(len(WORDS), 0, -1) * 10
    return Model(Vocab(WORDS, counts), rng.standard_normal((len(WORDS), dim)).astype(np.float32), config)


def hashing_model(dim=6):
    """A model whose own rule hashes unknown words (as every model trained now does)."""
    return make_model(dim, {"unknown": "hash", "unknown_scale": 1.0})


@pytest.fixture
def model():
    return make_model()


def test_npy_header_is_numpys_and_missing_path_for():
    for shape in [(0, 1), (5, 3), (123456789, 300), (10**18, 100000)]:
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": shape})
        assert npy_header(*shape) == buf.getvalue()
    assert missing_path_for("a/b.npy").as_posix() == "a/b.missing.txt"
    assert missing_path_for("a/b.bin").as_posix() == "a/b.bin.missing.txt"


@pytest.mark.parametrize("block_chars", [1 << 22, 30])
def test_embed_file_writes_rows_and_the_missing_lines(tmp_path, model, block_chars):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES), encoding="utf-8")  # no newline after the last line
    out = tmp_path / "out.npy"
    stats = embed_file(model, src, out, block_chars=block_chars)
    X = np.load(out, mmap_mode="r", allow_pickle=False)
    assert X.dtype == np.float32 and X.shape == (len(LINES), model.dim)
    np.testing.assert_array_equal(X, model.encode(LINES))
    record = (tmp_path / "out.missing.txt").read_text().splitlines()
    assert record[0].startswith("#") and [int(x) for x in record[1:]] == [2, 3, 8]  # no known word
    assert (stats.lines, stats.missing) == (len(LINES), 3)
    assert stats.tokens == sum(len(scbow.tokenize(line)) for line in LINES)
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.missing.txt", "out.npy"]  # no temporary left
    model = hashing_model()  # a model that hashes unknown words embeds a file as its Model.encode does
    stats = embed_file(model, src, out, block_chars=block_chars)
    X = np.load(out)
    np.testing.assert_array_equal(X, model.encode(LINES))
    assert not np.isnan(X[2]).any()  # "xyzzy quux": unknown words only, embedded all the same
    assert np.isnan(X[1]).all()  # an empty line still has nothing to average
    record = (tmp_path / "out.missing.txt").read_text().splitlines()
    assert record[0].startswith("#") and "no word" in record[0] and record[1:] == ["2"] and stats.missing == 1
    embed_file(model, src, out, unknown="omit", block_chars=block_chars)  # told to omit: the known-words averages
    np.testing.assert_array_equal(np.load(out), model.encode(LINES, unknown="omit"))


@pytest.mark.parametrize("threads", [1, 2])
def test_embed_file_in_many_blocks_is_the_same(tmp_path, model, threads):
    rng = np.random.default_rng(1)
    lines = [" ".join(rng.choice(WORDS + ["zzz", "Qq"], size=rng.integers(0, 9))) for _ in range(3000)]
    src = tmp_path / "in.txt.gz"
    with gzip.open(src, "wt", encoding="utf-8", newline="") as fh:
        fh.write("\r\n".join(lines) + "\r\n")  # compressed, Windows line ends
    one = tmp_path / "one.npy"
    embed_file(model, src, one, threads=threads)
    many = tmp_path / "many.npy"
    stats = embed_file(model, src, many, tmp_path / "many-missing.txt", threads=threads, block_chars=500)
    X = np.load(many)
    np.testing.assert_array_equal(X, np.load(one))  # blocks and kernels never change a number
    np.testing.assert_array_equal(X, model.encode(lines))
    assert stats.lines == 3000
    recorded = np.loadtxt(tmp_path / "many-missing.txt", dtype=int, ndmin=1)
    np.testing.assert_array_equal(recorded, np.flatnonzero(np.isnan(X[:, 0])) + 1)
    assert stats.missing == len(recorded) > 0


def test_embed_failure_keeps_the_old_output_and_an_empty_input_has_no_rows(tmp_path, model):
    out = tmp_path / "out.npy"
    np.save(out, np.ones((2, 2), dtype=np.float32))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"the cat\n" * 2000 + b"dog\x00\x01\x02\n")  # binary data after the first block
    with pytest.raises(CorpusError, match="NUL"):
        embed_file(model, bad, out, block_chars=1000)
    np.testing.assert_array_equal(np.load(out), np.ones((2, 2)))
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "out.npy"]
    (empty := tmp_path / "empty.txt").write_text("")  # (--fill zero: test_embed_cli)
    assert embed_file(model, empty, out).lines == 0 and np.load(out).shape == (0, model.dim)


def test_embed_cli(tmp_path, runner, model):
    save_model(model, tmp_path / "m")
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    m = ["embed", "-m", str(tmp_path / "m")]
    result = runner.invoke(main, [*m, str(src), "-o", str(tmp_path / "x.npy")])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"embedded {len(LINES)} lines as 6-dim rows in ")  # embed_command's line
    assert (f"3 lines with no word in the vocabulary (listed in {tmp_path / 'x.missing.txt'}); "
            f"wrote {tmp_path / 'x.npy'}") in result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), model.encode(LINES))
    assert (tmp_path / "x.missing.txt").is_file()
    odd = tmp_path / "in\udcff.txt"  # a file name that is not UTF-8 (byte 0xff): its bytes shown in the list
    odd.write_bytes(src.read_bytes())
    result = runner.invoke(main, [*m, str(odd), "-o", str(tmp_path / "odd.npy")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "odd.missing.txt").read_text(encoding="utf-8").startswith(f"# lines of {tmp_path}/in\\xff.txt ")
    # stdin, --fill zero, --missing elsewhere
    result = runner.invoke(main, [*m, "-", "-o", str(tmp_path / "y.npy"), "--fill", "zero", "--missing",
                                  str(tmp_path / "y.txt"), "-q"], input="cat\nzzz\n")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), [model.vectors[model.wv.get_index("cat")], np.zeros(model.dim)])
    assert (tmp_path / "y.txt").read_text().splitlines()[1:] == ["2"]
    # --encoding reaches the reader (which names a wrong encoding: test_reader)
    (cp := tmp_path / "cp.txt").write_bytes("the café sat\nthe dog ran\n".encode("cp1252"))
    assert runner.invoke(main, [*m, str(cp), "-q", "-o", str(tmp_path / "b.npy"), "--encoding", "cp1252"]).exit_code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), model.encode(["the café sat", "the dog ran"]))
    # errors (an input or a model that is not there: test_reader, test_formats)
    x = str(tmp_path / "x2.npy")
    assert_clean_error(runner.invoke(main, [*m, str(src), "-o", str(tmp_path / "no" / "x.npy")]), "no such directory")
    nan = runner.invoke(main, [*m, str(src), "-o", x, "--block-mb", "nan"])
    assert nan.exit_code == 2 and "'nan' is not a number" in nan.stderr
    assert not (tmp_path / "x2.npy").exists() and not (tmp_path / "x2.missing.txt").exists()


# ---------------------------------------------------------------- nearest sentences


@pytest.mark.parametrize("sentence, rule, has, lacks, note", [
    ("the cat", None, True, "no word in the vocabulary", None),
    ("the xyzzy", None, True, "no word in the vocabulary", "unknown words left out: xyzzy"),
    ("xyzzy quux", None, False, "no word in the vocabulary", "unknown words left out: xyzzy, quux"),
    ("xyzzy quux", "hash", True, "no word", "unknown words given hashed random vectors: xyzzy, quux"),
    ("", "hash", False, "no word", None),
])
def test_the_rule_of_what_has_an_embedding(model, sentence, rule, has, lacks, note):
    """sentence_words: the rule 'similarity' and 'neighbors --sentence' share; it agrees with Model.encode."""
    from scbow.use import embedding

    words = embedding.sentence_words(model, sentence, rule)
    assert (words.has_embedding, embedding.lacks(words.rule), words.unknown_note()) == (has, lacks, note)
    assert words.has_embedding == bool(np.isfinite(model.encode([sentence], unknown=rule)).all())


def test_nearest_sentences(tmp_path, model):
    rng = np.random.default_rng(2)
    lines = [" ".join(rng.choice(WORDS + ["zzz"], size=rng.integers(0, 7))) for _ in range(400)]
    src = tmp_path / "s.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    query = "the big red cat"
    got = nearest_sentences(model, query, src, topn=7)
    assert got == nearest_sentences(model, query, src, topn=7, block_chars=300)
    scores = [(model.similarity([query], [line])[0, 0], n) for n, line in enumerate(lines, 1)]
    want = sorted(((s, n) for s, n in scores if not math.isnan(s)), key=lambda x: (-x[0], x[1]))[:7]
    assert [n for _, n, _ in got] == [n for _, n in want]
    np.testing.assert_allclose([c for c, _, _ in got], [s for s, _ in want], rtol=1e-5)
    assert all(lines[n - 1] == text for _, n, text in got)
    with pytest.raises(ValueError, match="no word"):
        nearest_sentences(model, "zzz", src)
    model = hashing_model(dim=256)  # enough dimensions that random directions barely meet
    src.write_text("the cat\nxyzzy quux\nquux dog\n", encoding="utf-8")
    got = nearest_sentences(model, "xyzzy quux", src, topn=3)
    assert got[0][1] == 2 and got[0][0] == pytest.approx(1.0, abs=1e-5)  # the same unknown words
    assert got[1][1] == 3  # shares one of them


def test_neighbors_cli_sentences(tmp_path, runner, model):
    save_model(model, tmp_path / "m")
    src = tmp_path / "s.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    m = ["neighbors", "-m", str(tmp_path / "m")]
    result = runner.invoke(main, [*m, "--sentence", "the cat on a mat zebra", "--in", str(src), "-n", "3"])
    assert result.exit_code == 0, result.output
    assert "unknown words left out: zebra" in result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    want = nearest_sentences(model, "the cat on a mat", src, topn=3)
    assert [(int(n), t) for _, n, t in rows] == [(n, t) for _, n, t in want]
    assert all(LINES[int(n) - 1] == t for _, n, t in rows)
    assert_clean_error(runner.invoke(main, [*m, "--sentence", "cat"]), "--in")
    assert_clean_error(runner.invoke(main, [*m, "--in", str(src)]), "--sentence")
    assert_clean_error(runner.invoke(main, [*m, "cat", "--sentence", "cat", "--in", str(src)]), "not both")
    assert_clean_error(runner.invoke(main, [*m, "--sentence", "zebra", "--in", str(src)]), "no word")
    # --encoding reaches the reader, and stdin is named <stdin>
    bad = b"the cat \xff sat\nthe dog ran\n\xfe big red house\n"
    stdin = [*m, "--sentence", "the cat", "--in", "-"]
    result = runner.invoke(main, [*stdin, "--encoding", "utf-8:replace"], input=bad)
    assert result.exit_code == 0 and "warning: 2 lines of <stdin> are not valid" in result.stderr, result.output
    assert_clean_error(runner.invoke(main, stdin, input=bad), "<stdin>: not valid utf-8 text")


def test_nearest_sentences_read_bytes_that_are_not_utf8_as_u_fffd_only_when_asked(tmp_path, model):
    src = tmp_path / "s.txt"
    src.write_bytes(b"the cat \xff sat\nthe dog ran\n\xfe big red house\n" + b"a small cat\n" * 3)
    said = []
    with pytest.raises(CorpusError, match="s.txt: not valid utf-8 text"):
        nearest_sentences(model, "the cat sat", src, topn=3, warn=said.append)
    got = nearest_sentences(model, "the cat sat", src, topn=3, warn=said.append, encoding="utf-8:replace")
    assert said == [f"warning: 2 lines of {src} are not valid in the encoding; their bad bytes were read as U+FFFD "
                    "(the replacement character), as asked"]
    fixed = tmp_path / "fixed.txt"
    fixed.write_text(src.read_bytes().decode("utf-8", "replace"), encoding="utf-8")
    assert nearest_sentences(model, "the cat sat", fixed, topn=3, warn=said.append) == got  # the same results


@pytest.mark.parametrize("dim", [6, 64, 300])
def test_nearest_sentences_give_equal_lines_equal_scores_earliest_first(tmp_path, dim):
    model = hashing_model(dim)
    src = tmp_path / "s.txt"
    for line in ("the cat sat", "a big red house", "dog", "the mat xyzzy"):
        src.write_text(f"{line}\n" * 50 + "the cat\n", encoding="utf-8")
        for query in ("the cat", "a big dog", "red mat"):
            got = nearest_sentences(model, query, src, topn=3)
            if got[0][1] != 51:  # the repeated line nearest: its first three, the same score
                assert [n for _, n, _ in got] == [1, 2, 3] and len({c for c, _, _ in got}) == 1, (line, query, got)
            assert got == nearest_sentences(model, query, src, topn=3, block_chars=100)
