"""The ``scbow-numba`` command line, through click's CliRunner and a few real processes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import TRAIN, assert_clean_error, make_runner, train_args

from scbow.cli import main
from scbow.vectors.export import export_word2vec
from scbow.vectors.formats import load_model, load_word2vec

HUGE = str(10 ** 20)


@pytest.fixture(scope="module")
def trained(healthy):
    """conftest's small CLI-trained model, without a word part (read-only here)."""
    return healthy[0]


def test_train_writes_a_model_by_default_where_the_other_commands_look(tmp_path, runner, small_corpus_file, monkeypatch):
    out = tmp_path / "model"
    result = runner.invoke(main, ["train", str(small_corpus_file), "-o", str(out), "--dim", "16", "--epochs", "1",
                                  "--min-count", "1", "--threads", "1", "--seed", "5", "--word-dim", "8",
                                  "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(out)) == ["config.json", "vectors.npy", "vocab.txt"]
    model = load_model(out)
    # the default trains a word part: rows are [sentence part (--dim) ; word part (--word-dim)]
    assert model.vectors.shape == (len(model.vocab), 16 + 8) and model.dim == 16 + 8
    assert model.parts == {"sentence": (0, 16), "word": (16, 16 + 8)}
    assert model.config["seed"] == 5 and model.config["min_count"] == 1
    assert "cat" in model.wv and np.isfinite(model.vectors).all()
    assert "trained 1 epoch" in result.stderr  # the summary goes to stderr, not stdout
    assert result.stdout == ""
    assert any((tmp_path / "cache").iterdir())
    home = tmp_path / "share" / "model"
    monkeypatch.setenv("SCBOW_MODEL", str(home))
    result = runner.invoke(main, ["train", str(small_corpus_file), *TRAIN])
    assert result.exit_code == 0, result.output
    assert (home / "vectors.npy").is_file()
    sim = runner.invoke(main, ["similarity", "the cat", "the dog"])
    assert sim.exit_code == 0, sim.output
    assert -1 <= float(sim.stdout) <= 1
    exported = runner.invoke(main, ["export", "-o", str(tmp_path / "v.txt")])
    assert exported.exit_code == 0, exported.output
    assert load_word2vec(tmp_path / "v.txt").vocab.words == load_model(home).vocab.words
    # training again replaces the default model
    again = runner.invoke(main, ["train", str(small_corpus_file), *TRAIN[:-1], "--dim", "8", "-q"])
    assert again.exit_code == 0, again.output
    assert load_model(home).dim == 8


def test_similarity_prints_a_float_and_names_unknown_words(runner, trained):
    """A model trained now records unknown="pieces"; stderr says what became of the unknown words (each
    rule's note: test_unknown_words test_similarity_cli_notes_the_unknown_words)."""
    result = runner.invoke(main, ["similarity", "-m", str(trained), "The cat sat xyzzy.", "A dog ran!"])
    assert result.exit_code == 0, result.output
    assert float(result.stdout) == pytest.approx(load_model(trained).similarity(["The cat sat xyzzy."], ["A dog ran!"])[0, 0],
                                                 abs=1e-4)
    assert "xyzzy" in result.stderr and "sentence 1" in result.stderr and "sentence 2" not in result.stderr
    assert load_model(trained).unknown_rule == ("pieces", 0.35)


@pytest.mark.parametrize("pair, fragment", [
    (("the cat", "qwerty zxcv"), "no similarity: sentence 2 has no word in the vocabulary"),
    (("qwerty", "asdf"), "sentence 1 and sentence 2 has no word in the vocabulary"),
    (("🙂", "the cat"), "no similarity: sentence 1 has no word in the vocabulary"),
    (("", "the cat"), "sentence 1 is empty"), (("the cat", "   "), "sentence 2 is empty"),
    (("   ", ""), "sentence 1 and sentence 2 are empty"),
])
def test_similarity_without_two_sentences_to_compare_fails_cleanly(runner, trained, pair, fragment):
    result = runner.invoke(main, ["similarity", "-m", str(trained), "--unknown", "omit", *pair])
    assert_clean_error(result, fragment)
    assert result.stdout == ""  # no invented number


# ---------------------------------------------------------------- Bad input: one line 'Error: ...', exit 1, nothing written


# The CLI's part only: each way a bad value fails (a TrainConfig field, renamed to its flag; a count;
# --eval-every and --checkpoint-every), one line, nothing written. Every field's bounds: test_trainer.py.
ABSURD = [("--dim", HUGE), ("--common-components", "-" + HUGE), ("--seed", "9" * 400), ("--lr", "nan"),
          ("--frequency-weight", "1e-12"), ("--min-count", HUGE), ("--max-vocab", "-5"),
          ("--eval-every", "1e400"), ("--eval-every", "1e308M"), ("--eval-every", "9" * 100),
          ("--eval-every", "1e99999"), ("--checkpoint-every", "9" * 100), ("--checkpoint-every", "1e400s")]


@pytest.mark.parametrize("args, fragment", [
    (["{missing}"], "no such file"), (["{corpus}", "--cache-dir", "{corpus}"], "cache"),
    (["{corpus}", "{missing}"], "no such file"), *((["{corpus}", option, value], option) for option, value in ABSURD),
    # a corpus cache in the model (or its checkpoint) would leave it a folder that holds no model
    (["{corpus}", "--cache-dir", "{out}"], "--cache-dir {out}: is -o {out}"),
    (["{corpus}", "--cache-dir", "{out}/cache"], "--cache-dir {out}/cache: is inside -o {out}"),
    (["{corpus}", "--cache-dir", "{out}.checkpoint"], "is the checkpoint of -o {out}.checkpoint"),
    (["{corpus}", "--cache-dir", "{out}/../model/c"], "is inside -o {out}"),
], ids=lambda v: " ".join(v)[:60] if isinstance(v, list) else "")
def test_train_bad_input_is_one_line_and_writes_nothing(tmp_path, runner, small_corpus_file, args, fragment):
    out = tmp_path / "out" / "model"
    paths = {"missing": tmp_path / "missing.txt", "corpus": small_corpus_file, "out": out}
    fragment = fragment.format(**paths)
    # small, valid settings first: the flag under test comes later and wins
    argv = ["train", "-o", str(out), "--cache-dir", str(tmp_path / "cache"), *TRAIN, *[a.format(**paths) for a in args]]
    result = runner.invoke(main, argv)
    assert_clean_error(result, fragment)
    assert not out.exists() and result.stdout == ""


def test_train_refuses_the_default_corpus_cache_inside_its_output(tmp_path, runner, small_corpus_file, monkeypatch):
    monkeypatch.setenv("SCBOW_CACHE_DIR", str(tmp_path / "m" / "cache"))
    assert_clean_error(runner.invoke(main, ["train", str(small_corpus_file), "-o", str(tmp_path / "m"), *TRAIN]),
                       f"the corpus cache {tmp_path / 'm' / 'cache'}: is inside -o {tmp_path / 'm'}")
    assert os.listdir(tmp_path) == [small_corpus_file.name]
    result = runner.invoke(main, ["train", str(small_corpus_file), "-o", str(tmp_path / "m"), *TRAIN, "--no-cache"])
    assert result.exit_code == 0, result.output


def test_train_output_that_is_a_file_or_holds_other_things_is_kept(tmp_path, runner, small_corpus_file):
    (tmp_path / "file").write_text("not a model")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "notes.txt").write_text("keep me")
    for out, fragment in ((tmp_path / "file", "not a directory"), (tmp_path / "dir", "refusing")):
        assert_clean_error(runner.invoke(main, ["train", str(small_corpus_file), "-o", str(out), *TRAIN]), fragment)
    assert (tmp_path / "file").read_text() == "not a model" and os.listdir(tmp_path / "dir") == ["notes.txt"]


# ---------------------------------------------------------------- Real processes


def test_every_failure_is_one_line_and_out_of_memory_names_only_options_the_command_has(tmp_path, runner,
                                                                                        small_corpus_file, monkeypatch):
    """similarity ran out of memory (reading a vectors file) and said to try a smaller --dim or
    --max-vocab, options it does not have. An unforeseen exception is one line too, named a bug."""
    from scbow.training import session
    from scbow.vectors import formats

    def raising(exc):
        def load(*args, **kwargs):
            raise exc
        return load

    similarity = ["similarity", "-m", str(tmp_path / "m"), "a b", "c d"]
    for exc, line in ((MemoryError(), "Error: out of memory"),
                      (RecursionError(), "Error: input nested too deeply to read (a damaged file?)"),
                      (TypeError("boom\nmore"), "Error: unexpected TypeError: boom (a bug in scbow-numba: please "
                                                 "report it; SCBOW_DEBUG=1 shows where)")):
        monkeypatch.setattr(formats, "load_model", raising(exc))
        result = runner.invoke(main, similarity)
        assert (result.exit_code, result.stderr) == (1, line + "\n")
    monkeypatch.setenv("SCBOW_DEBUG", "1")
    assert isinstance(runner.invoke(main, similarity).exception, TypeError)
    monkeypatch.setattr(formats, "load_model", raising(KeyboardInterrupt()))
    result = runner.invoke(main, similarity)
    assert (result.exit_code, result.stderr) == (130, "\ninterrupted; nothing was written\n")
    monkeypatch.setattr(session, "train_session", raising(MemoryError()))
    assert_clean_error(runner.invoke(main, train_args(small_corpus_file, tmp_path / "m")),
                       "out of memory; try a smaller --dim or --max-vocab", exit_code=1)


def test_a_real_process_takes_any_argument(good_model):
    """A real process's one-line error: test_session test_second_trainer_into_the_same_output_refuses."""
    long = " ".join(["the cat"] * 12_000)  # a single argument may hold at most 128 KiB
    argv = [os.fsencode(sys.executable), b"-m", b"scbow", b"similarity", b"-m", os.fsencode(good_model),
            long.encode(), b"the \xff\xfe cat"]  # the last one is not UTF-8
    proc = subprocess.run(argv, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert float(proc.stdout) == pytest.approx(1.0, abs=1e-4)
    assert b"Traceback" not in proc.stderr


HELP_IMPORTS = """
import sys
from scbow.cli import main
try:
    main(sys.argv[1:], prog_name="scbow-numba")
except SystemExit as exc:
    assert exc.code == 0, exc.code
print("HEAVY=" + ",".join(m for m in ("numpy", "numba", "scipy", "matplotlib") if m in sys.modules))
"""


@pytest.mark.parametrize("argv, allowed", [(["--help"], set()), (["train", "--help"], set()), (["plot", "--help"], set()),
                                           (["similarity", "--help"], {"numpy"}), (["evaluate", "--help"], {"numpy"})])
def test_help_imports_nothing_heavy(argv, allowed):
    proc = subprocess.run([sys.executable, "-c", HELP_IMPORTS, *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Usage:" in proc.stdout, proc.stderr
    heavy = set(proc.stdout.rstrip().rsplit("HEAVY=", 1)[1].split(",")) - {""}
    assert heavy <= allowed, heavy


@pytest.mark.parametrize("command", sorted(main.commands))
def test_help_fits_an_80_column_terminal_and_uses_a_wider_one(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = make_runner().invoke(main, [command, "--help"], terminal_width=80)
    assert result.exit_code == 0
    too_long = [line for line in result.output.splitlines() if len(line) > 80]
    assert too_long == [], f"{command} --help runs past 80 columns"
    if command == "train":
        wide = make_runner().invoke(main, [command, "--help"], terminal_width=120).output
        assert max(map(len, wide.splitlines())) > 80  # wraps at the terminal, not at click's 80


@pytest.mark.parametrize("argv, fragment", [(["train", "--bogus"], "No such option '--bogus'"),
                                            (["nosuch"], "No such command 'nosuch'"),
                                            (["train", "x.txt", "--dim", "abc"], "'abc' is not a valid integer"),
                                            (["train", "x.txt", "--dim", "0"], "--dim must be a positive integer"),
                                            (["train", "x.txt", "--checkpoint-every", "10x"],
                                             "--checkpoint-every takes a number"),
                                            (["neighbors", "cat", "-n", HUGE], f"{HUGE} is not in the range 1<=x<="),
                                            (["evaluate", "--resamples", HUGE], f"{HUGE} is not in the range 100<=x<="),
                                            (["embed", "x.txt", "-o", "x.npy", "--threads", HUGE],
                                             f"{HUGE} is not in the range 0<=x<=")])
def test_a_usage_error_is_one_line_and_exit_status_2(argv, fragment):
    result = make_runner().invoke(main, argv)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [result.stderr.strip()] and result.stderr.startswith("Error: ")
    assert fragment in result.stderr and "--help')" in result.stderr


def test_every_count_option_takes_counts_as_people_type_them(tmp_path, runner, healthy):
    _, corpus = healthy
    base = ["train", str(corpus), "--dim", "8", "--threads", "1", "-q", "--no-cache"]
    result = runner.invoke(main, [*base, "-o", str(tmp_path / "m"), "--min-count", "1e0", "--max-vocab", "1k",
                                  "--count-floor", "1e1", "--max-length", "0"])
    assert result.exit_code == 0, result.output
    config = load_model(tmp_path / "m").config
    assert [config[k] for k in ("min_count", "max_vocab", "count_floor", "max_length")] == [1, 1000, 10, 0]
    for flag, value, words in (("--min-count", "0", "positive whole number of occurrences"),
                               ("--max-vocab", "2.5", "whole number of words"),
                               ("--max-vocab", "10G", "at most 2,147,483,647")):
        result = runner.invoke(main, [*base, "-o", str(tmp_path / "bad"), flag, value])
        assert result.exit_code != 0 and words in result.output, (flag, result.output)
        assert "Traceback" not in result.output and not (tmp_path / "bad").exists()


# ---------------------------------------------------------------- info


def test_info_describes_a_model_and_fits_the_terminal(runner, trained, tmp_path, monkeypatch):
    """trained with --word-passes 0 (conftest's healthy): info's word-part line: see test_wordpart."""
    monkeypatch.setenv("COLUMNS", "60")
    result = runner.invoke(main, ["info", str(trained)])
    lines = result.stdout.splitlines()
    assert len(lines) > 5 and all(len(line) <= 60 or " " not in line[12:].strip() for line in lines), lines
    assert any(line.startswith(" " * 12 + "min_count=1*") or " min_count=1*" in line for line in lines)
    assert result.exit_code == 0, result.output
    text, model = result.stdout, load_model(trained)
    assert "corpus.txt" in text and "dim=16*" in text and "negatives=2," in text
    assert "examples in" in text and "loss" in text
    same = runner.invoke(main, ["info", "-m", str(trained)])
    assert same.stdout == text
    as_json = json.loads(runner.invoke(main, ["info", str(trained), "--json"]).stdout)
    assert as_json["dim"] == 16 and as_json["config"]["min_count"] == 1
    assert as_json["dims"] == {"rows": 16, "sentence_part": 16, "word_part": 0}  # no word part: --dim is the row
    assert f"{len(model):,} words x 16 dims a row;" in text
    export_word2vec(model, tmp_path / "w.txt")
    w2v = runner.invoke(main, ["info", str(tmp_path / "w.txt")])
    assert "word2vec-text (no training record)" in w2v.stdout
    assert_clean_error(runner.invoke(main, ["info", str(tmp_path / "missing")]), "no such model")
    assert_clean_error(runner.invoke(main, ["info", str(trained), "-m", str(tmp_path)]), "give the model once")


BOUNDED = {"examples": 10**400, "examples_per_second": -5, "first_loss": 1e308, "final_loss": 2.0, "kernel_seconds": -1,
           "threads": 2}  # info bounds what it reads: its training line is "? examples in ? s on 2 threads", no rate or loss
CHECKPOINT = {"checkpoint": True, "raw_vectors": True, "examples": 2817885, "of_examples": 5000000}  # no time, no threads


@pytest.mark.parametrize("damage", [
    {"corpus": {"files": 5}}, {"corpus": {"files": [1, None]}}, {"corpus": [1]}, {"corpus": "x"},
    {"corpus": {"raw_tokens": "many", "sentences": 1.5, "oov_rate": "x", "min_count": []}},
    {"training": [1]}, {"training": {"first_loss": "a", "final_loss": None, "examples": "7", "threads": "2",
                                     "kernel_seconds": "slow", "examples_per_second": [], "device": 3}},
    {"training": {"first_loss": float("nan"), "final_loss": float("inf")}},
    {"init_vectors": {"x": float("nan")}}, {"expansions": [float("inf")]}, {"format": 7}, {"training": BOUNDED},
    {"training": CHECKPOINT}, {"corpus": {"files": ["c.txt"], "raw_tokens": 70, "sentences": -5}},
    {"dim": 7, "words": 3, "path": "/elsewhere"},  # a record's own fields never stand for the model's
])
def test_info_reads_a_damaged_record_and_prints_strict_json(tmp_path, runner, healthy, damage):
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
    if damage == {"training": BOUNDED}:
        line = next(x for x in shown.stdout.splitlines() if x.startswith("training"))
        assert " ? examples in ? s on 2 threads" in line and "/s" not in line and "loss" not in line, line
    if damage == {"training": CHECKPOINT}:  # a missing value is unknown, never 0
        line = next(x for x in shown.stdout.splitlines() if x.startswith("training"))
        assert "2,817,885 examples in ? s on ? threads; a checkpoint" in line, line
    if isinstance(damage.get("corpus"), dict) and damage["corpus"].get("sentences") == -5:
        assert "70 tokens, ? sentences in ? documents;" in shown.stdout, shown.stdout
    if "dim" in damage:
        truth = load_model(model)
        assert (record["path"], record["words"], record["dim"]) == (str(model), len(truth), truth.dim)


# ---------------------------------------------------------------- help and messages


def test_help_lists_whole_descriptions_names_the_defaults_and_groups_trains_options():
    from scbow.cli.train import TRAIN_OPTION_GROUPS

    text = make_runner().invoke(main, ["--help"], terminal_width=100).output
    for line in text.split("Commands:")[1].strip().splitlines():
        assert not line.rstrip().endswith("..."), line
    assert "$XDG_DATA_HOME" in text
    train_help = make_runner().invoke(main, ["train", "--help"], terminal_width=100).output
    assert train_help.count("[default: (off)]") == 2
    result = make_runner().invoke(main, ["train", "--help"], terminal_width=80)
    assert result.exit_code == 0
    headings = [line[:-1] for line in result.output.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert headings == ["Data", "Model", "Optimisation", "Run control", "Evaluation", "Other options"]
    options = [p.name for p in main.commands["train"].params if p.param_type_name == "option"]
    grouped = [name for _, names in TRAIN_OPTION_GROUPS for name in names]
    assert sorted(grouped) == sorted(options) and len(set(grouped)) == len(grouped)  # each option once
    assert result.output.index("--lr FLOAT") > result.output.index("Optimisation:") > result.output.index("--dim")
    export_help = " ".join(make_runner().invoke(main, ["export", "--help"], terminal_width=200).output.split())
    assert "unknown words split into the model's pieces" in export_help  # what export's folders do with them


def test_counts_of_one_are_singular_and_embed_wants_an_npy_name(tmp_path, runner, trained):
    """'1 lines with no word' was a plural for one: every count line goes through progress.plural."""
    one = tmp_path / "one.txt"
    one.write_text("\n", encoding="utf-8")
    result = runner.invoke(main, ["embed", "-m", str(trained), str(one), "-o", str(tmp_path / "e.npy")])
    assert result.exit_code == 0, result.output
    assert "embedded 1 line as " in result.stderr and "; 1 line with no word" in result.stderr
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("the cat\t\n", encoding="utf-8")
    result = runner.invoke(main, ["similarity", "-m", str(trained), "--pairs", str(pairs)])
    assert result.exit_code == 0, result.output
    assert "scored 1 pair; 1 had a side" in result.stderr
    assert not re.search(r"\b1 (lines|pairs|words|points|rows|sentences)\b", result.stderr)
    lines = tmp_path / "lines.txt"
    lines.write_text("the cat\n")
    result = runner.invoke(main, ["embed", "-m", str(trained), str(lines), "-o", str(tmp_path / "out.txt")])
    assert_clean_error(result, ".npy", "out.npy")
    assert not (tmp_path / "out.txt").exists()


# ---------------------------------------------------------------- similarity, neighbors, embed


def test_neighbours_is_neighbors_and_a_query_or_sentence_averaging_to_zero_is_an_error(tmp_path, runner, trained):
    for words, negative in ((["cat"], ["cat"]), (["cat", "dog"], ["cat", "dog"]), (["Cat"], ["cat"])):  # cancels out
        argv = ["neighbors", "-m", str(trained), *words, *[f"--negative={w}" for w in negative]]
        assert_clean_error(runner.invoke(main, argv), "zero vector", exit_code=1)
    model = shutil.copytree(trained, tmp_path / "m")
    vectors = np.load(model / "vectors.npy")
    word = load_model(model).vocab.words[3]
    vectors[3] = 0.0
    np.save(model / "vectors.npy", vectors)
    result = runner.invoke(main, ["similarity", "-m", str(model), word, "the cat"])
    assert_clean_error(result, "zero vector", exit_code=1)
    assert "nan" not in result.stdout
    word = load_model(trained).vocab.words[5]
    a = runner.invoke(main, ["neighbors", "-m", str(trained), word, "--min-count", "0"])
    b = runner.invoke(main, ["neighbours", "-m", str(trained), word, "--min-count", "0"])
    assert a.exit_code == b.exit_code == 0 and a.stdout == b.stdout != ""
