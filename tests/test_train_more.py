"""Held here until they are folded into test_train.py: what training refuses (settings, corpora
with nothing to learn, a collapse), how it sizes its batches, and what it reports."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import TRAIN, assert_clean_error, files_under, make_runner, train_args

from scbow.cli import main
from scbow.config import ConfigError, TrainConfig
from scbow.training.checkpoint import checkpoint_dir
from scbow.training.session import lock_path
from scbow.vectors.formats import load_model

# ---------------------------------------------------------------- settings


@pytest.mark.parametrize("field, value", [("epochs", 10 ** 20), ("init_std", 1e300), ("negatives", 2.0), ("dim", -3),
                                          ("epochs", -1), ("negatives", -2), ("min_count", -1), ("threads", -4),
                                          ("lr", float("-inf")), ("lr", -1e-9)])
def test_config_refuses_values_out_of_bounds(field, value):
    """Beside test_train.test_config_validation: huge, negative and non-integer values."""
    with pytest.raises(ConfigError, match=field):
        TrainConfig(**{field: value})


@pytest.mark.parametrize("mode", ["document", "uniform"])
def test_negatives_at_least_the_sentences_are_refused(tmp_path, runner, mode):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"sentence number {i} here.\n" for i in range(10)))
    for negatives, ok in ((9, False), (10, False), (100_000, False), (8, True)):
        result = runner.invoke(main, ["train", str(corpus), "-o", str(tmp_path / "m"), *TRAIN, "--negatives",
                                      str(negatives), "--negative-mode", mode])
        if ok:
            assert result.exit_code == 0, result.output
        else:
            assert_clean_error(result, "--negatives", "10 usable sentences", "at most 8")
            assert not (tmp_path / "m").exists()


# ---------------------------------------------------------------- corpora with nothing to learn


@pytest.mark.parametrize(
    "name, content, fragment",
    [
        ("one-sentence.txt", b"The cat sat on the mat.\n", "no training example"),
        ("short-docs.txt", b"One cat.\n\nTwo cats.\n\nThree cats.\n\nFour cats.\n\nFive cats.\n", "no training example"),
        ("one-huge-line.txt", b"the cat sat on the mat and " * 200_000, "no training example"),
    ],
)
def test_corpus_without_training_examples_fails_cleanly(tmp_path, runner, name, content, fragment):
    path = tmp_path / name
    path.write_bytes(content)
    out = tmp_path / "model"
    result = runner.invoke(main, train_args(path, out))
    assert_clean_error(result, fragment)
    assert not out.exists() and not checkpoint_dir(out).exists() and not lock_path(out).exists()


def test_a_vocabulary_that_ends_up_empty(tmp_path, runner, corpus_file):
    result = runner.invoke(main, train_args(corpus_file, tmp_path / "m", "--min-count", "10000000"))
    assert_clean_error(result, "vocabulary is empty", "--min-count")


@pytest.mark.parametrize("bad, message", [(["--min-count", "100000"], "vocabulary is empty"),
                                          (["--threads", "100000"], "threads")])
def test_a_failed_run_leaves_no_directory_behind(tmp_path, corpus_file, runner, bad, message):
    """Nothing written means nothing: not the output, and not the directories made for it;
    an impossible thread count fails before the corpus is read (no cache entry)."""
    out = tmp_path / "new" / "deeper" / "model"
    cache = tmp_path / "cache"
    result = runner.invoke(main, train_args(corpus_file, out, "--cache-dir", str(cache), *bad))
    assert_clean_error(result, message)
    assert not (tmp_path / "new").exists()
    if "--threads" in bad:
        assert files_under(tmp_path) == []  # the corpus was never read, so no cache either


def test_a_few_invalid_utf8_lines_are_replaced_with_a_warning(tmp_path, runner, make_text):
    text = make_text(n_docs=2, sents_per_doc=60, seed=2).encode()
    path = tmp_path / "c.txt"
    path.write_bytes(text + b"\nThe cat \xff\xfe sat.\nA dog \xc3\x28 ran.\n" + text)
    out = tmp_path / "model"
    result = runner.invoke(main, train_args(path, out))
    assert result.exit_code == 0, result.output
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:") and "UTF-8" in line]
    assert len(warning) == 1 and "2 lines of the corpus are not valid UTF-8" in warning[0], result.stderr
    assert "\ufffd" in load_model(out)  # the decision: replace and warn, not refuse


def test_one_enormous_line_among_normal_sentences_trains(tmp_path, runner, make_text):
    # a 1.6 MB line is one sentence of 400,000 tokens: it is read, averaged and trained on
    huge = " ".join(["the cat sat on the mat"] * 66_667) + ".\n"
    path = tmp_path / "c.txt"
    text = make_text(n_docs=2, sents_per_doc=40, seed=4)
    path.write_text(text + huge + text, encoding="utf-8")
    out = tmp_path / "model"
    result = runner.invoke(main, train_args(path, out))
    assert result.exit_code == 0, result.output
    model = load_model(out)
    assert np.isfinite(model.vectors).all()
    assert model.info["corpus"]["tokens"] > 400_000


# ---------------------------------------------------------------- batches


def test_costly_examples_make_smaller_batches(healthy):
    from scbow.training.corpus import load_corpus
    from scbow.training.trainer import BATCH, batch_size

    corpus = load_corpus([healthy[1]], 1, 0, use_cache=False)
    assert batch_size(TrainConfig(), corpus) == BATCH  # the defaults keep the full batch
    sizes = [batch_size(TrainConfig(negatives=n), corpus) for n in (2, 50, 500, 5000, 50_000)]
    assert sizes[0] == BATCH and all(a > b for a, b in zip(sizes, sizes[1:])) and sizes[-1] >= 1
    assert batch_size(TrainConfig(dim=100_000), corpus) < BATCH // 50
    assert batch_size(TrainConfig(dim=100_000, negatives=1_000_000), corpus) == 1
    # the work of one batch stays about constant
    length = len(corpus.tokens) / corpus.n_sentences
    works = [batch_size(TrainConfig(negatives=n), corpus) * (3 + n) * (length + 2) for n in (50, 500, 5000)]
    assert max(works) / min(works) < 1.1
    # the skip-gram term's work counts too (issue 34: --word-window 100 --word-negatives 100 ignored Ctrl-C)
    plain = batch_size(TrainConfig(word_window=5), corpus)
    assert batch_size(TrainConfig(word_window=100, word_negatives=100), corpus) < plain // 100


def test_the_batch_cost_counts_only_the_words_max_length_keeps(tmp_path):
    from scbow.training.corpus import load_corpus
    from scbow.training.trainer import BATCH, BATCH_COST, batch_size

    words = [f"w{i}" for i in range(50)]
    text = "".join(" ".join(words[(i + j) % 50] for j in range(200)) + "\n" for i in range(60))
    (tmp_path / "long.txt").write_text(text)  # sentences of 200 words
    corpus = load_corpus([tmp_path / "long.txt"], 1, 0, use_cache=False)
    config = dict(dim=300, negatives=2)
    uncut = batch_size(TrainConfig(**config), corpus)
    assert uncut == int(BATCH * BATCH_COST / (5 * 202 * 300))
    for cut in (5, 40, 100):  # an example reads at most max_length words of each sentence
        assert batch_size(TrainConfig(**config, max_length=cut), corpus) == min(
            BATCH, int(BATCH * BATCH_COST / (5 * (cut + 2) * 300)))
    assert batch_size(TrainConfig(**config, max_length=5), corpus) == BATCH > uncut


# ---------------------------------------------------------------- a collapse


def test_a_collapsed_run_is_refused_not_saved(tmp_path, runner, gutenberg_slice):
    corpus = gutenberg_slice(20000)
    args = ["train", str(corpus), "--dim", "50", "--threads", "1", "-q", "--no-cache"]
    result = runner.invoke(main, [*args, "-o", str(tmp_path / "hot"), "--lr", "1e6"])
    assert_clean_error(result, "collapsed into a few directions", "learning rate (1e+06)", "smaller --lr")
    assert not (tmp_path / "hot").exists()
    result = runner.invoke(main, [*args, "-o", str(tmp_path / "ok")])
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------- what it reports


def test_train_reports_its_phases_and_the_cache(tmp_path, make_text):
    corpus = tmp_path / "c.txt"
    corpus.write_text(make_text(n_docs=3, sents_per_doc=50, seed=1))
    argv = ["train", str(corpus), "-o", str(tmp_path / "m"), *[a for a in TRAIN if a != "-q"],
            "--cache-dir", str(tmp_path / "cache")]
    result = make_runner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert re.search(r"corpus: [\d,]+ tokens, [\d,]+ words in the vocabulary \(min count 1\), 150 sentences in "
                     r"3 documents; cached in ", err), err
    assert "post-processing:" in err and "saving the model to" in err
    assert "1 thread)" in err and "1 threads" not in err
    assert "corpus cache: wrote" in err and "'scbow-numba cache --clear'" in err
    # again: the cache is read, not written; the model is replaced and the run says so
    again = make_runner().invoke(main, argv).stderr
    assert "from the cache" in again and "corpus cache: wrote" not in again
    assert "holds a model; it is replaced" in again
    # a missing input is the one line: no note about replacing a model that stays
    argv_missing = [a if a != argv[1] else str(tmp_path / "no-such-corpus.txt") for a in argv]
    missing = make_runner().invoke(main, argv_missing)
    assert missing.exit_code == 1 and "replaced" not in missing.output and "no-such-corpus" in missing.output


def test_a_run_that_learned_nothing_says_so(tmp_path, make_text):
    corpus = tmp_path / "c.txt"
    corpus.write_text(make_text(n_docs=2, sents_per_doc=20, seed=3))  # one batch: the loss cannot fall
    result = make_runner().invoke(main, ["train", str(corpus), "-o", str(tmp_path / "m"), *TRAIN])
    assert result.exit_code == 0
    assert "warning: the loss did not fall" in result.stderr
    # the advice agrees with the measured defaults: more text, never more epochs
    warning = next(line for line in result.stderr.splitlines() if line.startswith("warning: the loss"))
    assert "train on more text" in warning and "more --epochs score lower" in warning and "--lr" not in warning
    slow = make_runner().invoke(main, ["train", str(corpus), "-o", str(tmp_path / "m1"), *TRAIN, "--lr", "0.001"])
    assert "or with a larger --lr (this run's is 0.001, the default 0.1)" in slow.stderr
    bigger = tmp_path / "big.txt"
    bigger.write_text(make_text(n_docs=6, sents_per_doc=400, seed=3))
    result = make_runner().invoke(main, ["train", str(bigger), "-o", str(tmp_path / "m2"), *TRAIN, "--epochs", "3"])
    assert result.exit_code == 0
    assert "did not fall" not in result.stderr
