"""Held here until they are folded into test_cli.py: the commands' own rules (options that
name themselves in their errors, info, help, messages, embed's and neighbors' inputs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import assert_clean_error, make_runner

from scbow.cli import main
from scbow.vectors.formats import export_word2vec, load_model

TRAIN = ["--dim", "16", "--epochs", "1", "--min-count", "1", "--threads", "1", "--word-passes", "0", "-q"]
HUGE = str(10 ** 20)


@pytest.fixture(scope="module")
def trained(healthy):
    """conftest's small CLI-trained model, without a word part (read-only here)."""
    return healthy[0]


@pytest.fixture
def sts_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("4.0\tthe cat sat\tthe cat sat down\n1.0\tthe dog ran\ta cat slept\n"
                    "2.5\tthe cat ran\tthe dog sat\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------- options


INTEGER_OPTIONS = ["--dim", "--negatives", "--min-count", "--max-vocab", "--epochs", "--max-length", "--threads", "--seed",
                   "--common-components", "--count-floor"]


@pytest.mark.parametrize("option, value", [(o, v) for o in INTEGER_OPTIONS for v in (HUGE, "-" + HUGE, "9" * 400)] + [
    ("--eval-every", "1e400"), ("--eval-every", "1e308M"), ("--eval-every", "9" * 100), ("--eval-every", "1e99999"),
    ("--checkpoint-every", "9" * 100), ("--checkpoint-every", "1e400s"), ("--checkpoint-every", "9" * 40 + "h"),
    ("--init-std", "1e300"), ("--init-std", "1e-300"), ("--lr", "nan"), ("--lr", "inf"), ("--weight-decay", "1e300"),
    ("--count-power", "1e300"), ("--unknown-scale", "inf"), ("--frequency-weight", "-1"), ("--min-lr-fraction", "2"),
    ("--dim", "-3"), ("--epochs", "-1"), ("--negatives", "-2"), ("--min-count", "-1"), ("--threads", "-4"),
    ("--lr", "-inf"), ("--lr", "-nan"), ("--max-length", "-1"),
    ("--frequency-weight", "1e-320"), ("--frequency-weight", "1e-12"), ("--unknown-scale", "0"),  # vectors of zero
])
def test_absurd_numbers_in_train_options_name_the_option(tmp_path, runner, healthy, option, value):
    result = runner.invoke(main, ["train", str(healthy[1]), "-o", str(tmp_path / "m"), *TRAIN, option, value])
    assert_clean_error(result, option)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("argv", [
    ["neighbors", "cat", "-n", HUGE], ["evaluate", "--resamples", HUGE], ["expand", "--max-words", HUGE * 2],
    ["embed", "--threads", HUGE],
])
def test_huge_integers_in_other_commands(tmp_path, runner, healthy, sts_file, argv):
    argv = [*argv, "-m", str(healthy[0])]
    if argv[0] == "evaluate":
        argv.append(str(sts_file))
    if argv[0] == "expand":
        argv += ["--source", str(healthy[0]), "-o", str(tmp_path / "x")]
    if argv[0] == "embed":
        argv += [str(sts_file), "-o", str(tmp_path / "x.npy")]
    assert_clean_error(runner.invoke(main, argv), exit_code=2)


def test_every_count_option_takes_counts_as_people_type_them(tmp_path, healthy):
    from conftest import make_runner

    from scbow.cli import main

    _, corpus = healthy
    runner = make_runner()
    base = ["train", str(corpus), "--dim", "8", "--threads", "1", "-q", "--no-cache"]
    for flag, value in (("--min-count", "1e0"), ("--max-vocab", "1k"), ("--count-floor", "1e1"),
                        ("--max-length", "0")):
        result = runner.invoke(main, [*base, "-o", str(tmp_path / flag.strip("-")), flag, value])
        assert result.exit_code == 0, (flag, result.output)
    for flag, value, words in (("--min-count", "0", "positive whole number of occurrences"),
                               ("--max-vocab", "2.5", "whole number of words"),
                               ("--max-vocab", "10G", "at most 2,147,483,647")):
        result = runner.invoke(main, [*base, "-o", str(tmp_path / "bad"), flag, value])
        assert result.exit_code != 0 and words in result.output, (flag, result.output)
        assert "Traceback" not in result.output and not (tmp_path / "bad").exists()


# ---------------------------------------------------------------- info


def test_info_describes_a_model(runner, trained, tmp_path):
    # trained with --word-passes 0 (conftest's healthy): info's word-part line: see test_wordpart
    result = runner.invoke(main, ["info", str(trained)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    model = load_model(trained)
    assert f"{len(model):,} words x 16 dims" in text
    assert "corpus.txt" in text and "min_count=1*" in text and "dim=16*" in text and "negatives=2," in text
    assert "examples in" in text and "loss" in text
    same = runner.invoke(main, ["info", "-m", str(trained)])
    assert same.stdout == text
    as_json = __import__("json").loads(runner.invoke(main, ["info", str(trained), "--json"]).stdout)
    assert as_json["dim"] == 16 and as_json["config"]["min_count"] == 1
    export_word2vec(model, tmp_path / "w.txt")
    w2v = runner.invoke(main, ["info", str(tmp_path / "w.txt")])
    assert "word2vec-text (no training record)" in w2v.stdout
    assert_clean_error(runner.invoke(main, ["info", str(tmp_path / "missing")]), "no such model")


@pytest.mark.parametrize("damage", [
    {"corpus": {"files": 5}}, {"corpus": {"files": [1, None]}}, {"corpus": [1]}, {"corpus": "x"},
    {"corpus": {"raw_tokens": "many", "sentences": 1.5, "oov_rate": "x", "min_count": []}},
    {"training": [1]}, {"training": {"first_loss": "a", "final_loss": None, "examples": "7", "threads": "2",
                                     "kernel_seconds": "slow", "examples_per_second": [], "device": 3}},
    {"training": {"first_loss": float("nan"), "final_loss": float("inf")}},
    {"init_vectors": {"x": float("nan")}}, {"expansions": [float("inf")]}, {"format": 7},
])
def test_info_reads_a_damaged_record_and_prints_strict_json(tmp_path, runner, healthy, damage):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(healthy[0], model)
    meta = json.loads((model / "config.json").read_text())
    meta.update(damage)
    (model / "config.json").write_text(json.dumps(meta))  # NaN and Infinity written as Python's json does
    shown = runner.invoke(main, ["info", str(model)])
    assert shown.exit_code == 0, shown.output
    assert "vectors" in shown.stdout and "Traceback" not in shown.output
    as_json = runner.invoke(main, ["info", str(model), "--json"])
    assert as_json.exit_code == 0, as_json.output
    record = json.loads(as_json.stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert record["words"] > 0


def test_info_bounds_what_it_reads(tmp_path, runner, healthy):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(healthy[0], model)
    meta = json.loads((model / "config.json").read_text())
    meta["training"] = {"examples": 10**400, "examples_per_second": -5, "first_loss": 1e308, "final_loss": 2.0,
                        "kernel_seconds": -1, "threads": 2}
    (model / "config.json").write_text(json.dumps(meta))
    shown = runner.invoke(main, ["info", str(model)])
    assert shown.exit_code == 0, shown.output
    line = next(x for x in shown.stdout.splitlines() if x.startswith("training"))
    assert "0 examples in ? s on 2 threads" in line and "/s" not in line and "loss" not in line, line


# ---------------------------------------------------------------- help and messages


def test_help_lists_whole_descriptions_and_names_the_defaults():
    text = make_runner().invoke(main, ["--help"], terminal_width=100).output
    for line in text.split("Commands:")[1].strip().splitlines():
        assert not line.rstrip().endswith("..."), line
    assert "$XDG_DATA_HOME" in text
    train_help = make_runner().invoke(main, ["train", "--help"], terminal_width=100).output
    assert train_help.count("[default: (off)]") == 2


def test_counts_of_one_are_singular(tmp_path, runner, healthy):
    """'1 lines with no word' was a plural for one: every count line goes through progress.plural."""
    model, _ = healthy
    one = tmp_path / "one.txt"
    one.write_text("\n", encoding="utf-8")
    result = runner.invoke(main, ["embed", "-m", str(model), str(one), "-o", str(tmp_path / "e.npy")])
    assert result.exit_code == 0, result.output
    assert "embedded 1 line as " in result.stderr and "; 1 line with no word" in result.stderr
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("the cat\t\n", encoding="utf-8")
    result = runner.invoke(main, ["similarity", "-m", str(model), "--pairs", str(pairs)])
    assert result.exit_code == 0, result.output
    assert "scored 1 pair; 1 had a side" in result.stderr
    assert not re.search(r"\b1 (lines|pairs|words|points|rows|sentences)\b", result.stderr)


# ---------------------------------------------------------------- similarity, neighbors, embed, expand


@pytest.mark.parametrize("words, negative", [(["cat"], ["cat"]), (["cat", "dog"], ["cat", "dog"]),
                                             (["Cat"], ["cat"])])
def test_a_query_that_cancels_out_is_an_error(runner, healthy, words, negative):
    argv = ["neighbors", "-m", str(healthy[0]), *words, *[f"--negative={w}" for w in negative]]
    assert_clean_error(runner.invoke(main, argv), "zero vector", exit_code=1)


def test_a_sentence_averaging_to_zero_is_an_error_not_nan(tmp_path, runner, healthy):
    model = shutil.copytree(healthy[0], tmp_path / "m")
    vectors = np.load(model / "vectors.npy")
    word = load_model(model).vocab.words[3]
    vectors[3] = 0.0
    np.save(model / "vectors.npy", vectors)
    result = runner.invoke(main, ["similarity", "-m", str(model), word, "the cat"])
    assert_clean_error(result, "zero vector", exit_code=1)
    assert "nan" not in result.stdout


@pytest.mark.parametrize("pair, ok", [(("", "the cat"), False), (("   ", ""), False), (("🙂", "the cat"), False),
                                      (("the\u00a0cat 🙂", "CAT\tSAT"), True), (("a\ud800b the", "cat"), True)])
def test_similarity_cli_with_odd_strings(runner, good_model, pair, ok):
    result = runner.invoke(main, ["similarity", "-m", str(good_model), *pair])
    if ok:
        assert result.exit_code == 0, result.output
        assert -1.0 <= float(result.stdout) <= 1.0
    else:
        assert_clean_error(result, "empty" if not pair[0].strip() else "no word in the vocabulary")


def test_similarity_cli_with_a_very_long_argument_and_bad_bytes_in_a_real_process(tmp_path, good_model):
    long = " ".join(["the cat"] * 12_000)  # a single argument may hold at most 128 KiB
    argv = [os.fsencode(sys.executable), b"-m", b"scbow", b"similarity", b"-m", os.fsencode(good_model),
            long.encode(), b"the \xff\xfe cat"]  # the last one is not UTF-8
    proc = subprocess.run(argv, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert float(proc.stdout) == pytest.approx(1.0, abs=1e-4)
    assert b"Traceback" not in proc.stderr


def test_embed_wants_an_npy_name(tmp_path, runner, trained):
    lines = tmp_path / "lines.txt"
    lines.write_text("the cat\n")
    result = runner.invoke(main, ["embed", "-m", str(trained), str(lines), "-o", str(tmp_path / "out.txt")])
    assert_clean_error(result, ".npy", "out.npy")
    assert not (tmp_path / "out.txt").exists()


def test_expand_refuses_what_it_cannot_fit_or_hold(tmp_path, runner, healthy):
    base = load_model(healthy[0])
    flat = shutil.copytree(healthy[0], tmp_path / "flat")
    np.save(flat / "vectors.npy", np.ones_like(np.load(flat / "vectors.npy")))
    source = tmp_path / "source.txt"
    export_text = "".join(f"{w} {' '.join(str(x) for x in row)}\n" for w, row in zip(base.vocab.words, base.vectors))
    source.write_text(f"{len(base)} {base.dim}\n" + export_text)
    result = runner.invoke(main, ["expand", "-m", str(flat), "--source", str(source), "-o", str(tmp_path / "x1")])
    assert_clean_error(result, "do not vary", exit_code=1)
    small = tmp_path / "small.txt"
    small.write_text(f"{len(base) + 1} {base.dim}\n"
                     + "".join(f"{w} {' '.join(str(x * 1e-6) for x in row)}\n" for w, row in zip(base.vocab.words,
                                                                                                base.vectors))
                     + "zzznew " + " ".join(["1e14"] * base.dim) + "\n")  # mapped: about 1e20
    result = runner.invoke(main, ["expand", "-m", str(healthy[0]), "--source", str(small), "-o", str(tmp_path / "x2")])
    assert_clean_error(result, "not usable", exit_code=1)
    assert "Warning" not in result.output
    assert not (tmp_path / "x1").exists() and not (tmp_path / "x2").exists()
