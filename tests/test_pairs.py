"""Sentence pairs (``similarity --pairs``): every pair scored as one ``similarity`` would; nothing printed
before a damaged or absurd line is found; an empty file is an error, not silence."""

from __future__ import annotations

import gzip

import pytest
from conftest import assert_clean_error

from scbow.cli import main
from scbow.vectors.formats import load_model


def similarity(runner, model, *args, **kwargs):
    return runner.invoke(main, ["similarity", "-m", str(model), *map(str, args)], **kwargs)


def test_similarity_pairs_matches_one_at_a_time(tmp_path, runner, healthy):
    trained = healthy[0]
    pairs = [("the cat sat", "the dog ran"), ("a cat", "a cat"), ("", "the dog"), ("the man walked", "zzz qqq")]
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{a}\t{b}\n" for a, b in pairs[:2]) + "".join(f"3.5\t{a}\t{b}\n" for a, b in pairs[2:]))
    result = similarity(runner, trained, "--pairs", path)
    assert result.exit_code == 0, result.output
    got = result.stdout.splitlines()
    assert len(got) == len(pairs)
    model = load_model(trained)
    expected = [model.similarity([a], [b])[0, 0] for a, b in pairs]
    for line, value in zip(got, expected):
        assert (line == "nan") if value != value else float(line) == pytest.approx(value, abs=1e-4)
    unscored = sum(value != value for value in expected)  # the empty side; zzz qqq too when it has no pieces
    assert unscored >= 1 and f"{unscored} had a side with nothing to average" in result.stderr
    assert similarity(runner, trained, "--pairs", "-", input=path.read_text()).stdout == result.stdout
    (tmp_path / "bad.tsv").write_text("a\tb\nonly one field\n")
    assert_clean_error(similarity(runner, trained, "--pairs", tmp_path / "bad.tsv"), "line 2")
    assert_clean_error(similarity(runner, trained, "a"), "give two sentences")
    assert_clean_error(similarity(runner, trained, "a", "b", "--pairs", path), "not both")


def test_pairs_refuse_binary_text_absurd_gold_and_name_damage_before_printing(tmp_path, runner, healthy):
    model, _ = healthy
    for data, fragment in ((b"a\x00b\tc d\n", "NUL bytes"), (gzip.compress(b"x" * 100), "NUL bytes"),
                           (b"4\tthe cat\tthe dog\nnan\ta\tb\n", "line 2: gold score 'nan'"),
                           (b"1e300\ta\tb\n", "gold score '1e300'"), (b"abc\ta\tb\n", "gold score 'abc'"),
                           (b"4_5\ta\tb\n", "gold score '4_5'")):
        result = similarity(runner, model, "--pairs", "-", input=data)
        assert_clean_error(result, fragment)
        assert result.stdout == ""
    # a bit flipped in the middle of a .gz: its checksum fails at the end; nothing is printed first
    packed = bytearray(gzip.compress("".join(f"the cat number {i}\tthe dog {i}\n" for i in range(20000)).encode()))
    packed[len(packed) // 2] ^= 0x01
    (tmp_path / "p.tsv.gz").write_bytes(bytes(packed))
    result = similarity(runner, model, "--pairs", tmp_path / "p.tsv.gz")
    assert_clean_error(result, "damaged or truncated gzip file")
    assert result.stdout == ""


def test_nothing_to_search_or_score_is_an_error_not_silence(tmp_path, runner, healthy):
    model, _ = healthy
    for content in ("", "\n\n\n"):
        (tmp_path / "e.txt").write_text(content)
        assert_clean_error(runner.invoke(main, ["neighbors", "-m", str(model), "--sentence", "the cat",
                                                "--in", str(tmp_path / "e.txt")]), "e.txt")
    (tmp_path / "e.txt").write_text("")
    assert_clean_error(similarity(runner, model, "--pairs", tmp_path / "e.txt"), "no sentence pairs")
    assert_clean_error(similarity(runner, model, "--pairs", "-", input=""), "no sentence pairs")


def test_pairs_skip_a_byte_order_mark_and_blank_lines_as_evaluate_does(tmp_path, runner, healthy):
    model, _ = healthy
    (tmp_path / "plain.tsv").write_text("4\tthe cat sat\tthe cat sat\n1\ta cat\tthe man\n")
    (tmp_path / "blank.tsv").write_text("\n4\tthe cat sat\tthe cat sat\n \t \n\n1\ta cat\tthe man\n\n")
    (tmp_path / "bom.tsv").write_bytes(b"\xef\xbb\xbfthe cat sat\tthe cat sat\na cat\tthe man\n")  # the mark on a word
    plain, blank, bom = (similarity(runner, model, "--pairs", tmp_path / f"{name}.tsv") for name in ("plain", "blank", "bom"))
    assert blank.exit_code == 0 and bom.exit_code == 0, blank.output + bom.output
    assert blank.stdout == bom.stdout == plain.stdout and plain.stdout.splitlines()[0] == "1.0000"
    assert len(plain.stdout.splitlines()) == 2 and "scored 2 pairs" in blank.stderr
    assert similarity(runner, model, "--pairs", "-", input=(tmp_path / "bom.tsv").read_bytes()).stdout == plain.stdout
    assert runner.invoke(main, ["evaluate", "-m", str(model), str(tmp_path / "blank.tsv")]).exit_code == 0
    assert "blank lines are skipped" in " ".join(similarity(runner, model, "--help").stdout.split())


def test_pairs_with_no_stdout_drop_the_scores_as_click_echo_does(tmp_path, healthy, monkeypatch):
    import sys

    from scbow.use.pairs import score_pairs

    (tmp_path / "p.tsv").write_text("the cat sat\tthe dog ran\n")
    monkeypatch.setattr(sys, "stdout", None)  # what Python sets when the shell closed it: >&-
    assert score_pairs(load_model(healthy[0]), tmp_path / "p.tsv") == (1, 0)


def test_pairs_not_utf8_are_refused_or_read_with_u_fffd_as_the_trainer_does(tmp_path, runner, healthy):
    model, _ = healthy
    data = b"the cat \xff sat\tthe dog ran\n\xfe\xfe\ta cat\nthe man\tthe cat\n" + b"a dog\tthe cat\n" * 3
    (tmp_path / "bad.tsv").write_bytes(data)
    assert_clean_error(similarity(runner, model, "--pairs", tmp_path / "bad.tsv"), "bad.tsv: not valid utf-8 text")
    result = similarity(runner, model, "--pairs", tmp_path / "bad.tsv", "--encoding", "utf-8:replace")
    assert result.exit_code == 0, result.output
    assert f"warning: 2 lines of {tmp_path / 'bad.tsv'} are not valid in the encoding; their bad bytes were read " \
        "as U+FFFD" in result.stderr
    fixed = similarity(runner, model, "--pairs", "-", input=data.decode("utf-8", "replace").encode())
    assert fixed.stdout == result.stdout  # the same scores as the text with U+FFFD written in
    # --encoding without --pairs would be ignored: it is refused, saying what it is for
    assert_clean_error(similarity(runner, model, "the cat", "a dog", "--encoding", "cp1252"),
                       "--encoding cp1252: it is the encoding of the --pairs file, and none is given")
    assert "warning: 2 lines of <stdin> are not valid" in similarity(runner, model, "--pairs", "-", "--encoding",
                                                                     "utf-8:replace", input=data).stderr
