"""Bad input never loses work: a corpus, settings, outputs or a model that cannot train or be
read give one line ``Error: ...``, a non-zero exit and write nothing.

Cases that test_cli, test_corpus, test_formats and test_train already cover are not
repeated here; the map from each case to its test is in the comments of each section.
Checkpoints and resume are in test_checkpoint, faults of a running session (signals,
SIGKILL, divergence, locks, a full disk) in test_session.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_cli import TRAIN, assert_clean_error

import scbow
from scbow.cli import main
from scbow.config import ConfigError, TrainConfig
from scbow.training.checkpoint import checkpoint_dir
from scbow.training.session import lock_path
from scbow.vectors.formats import load_model


def train_args(corpus, out, *extra):
    return ["train", str(corpus), "-o", str(out), *TRAIN, *extra]


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# =======================================================================================
# Bad input: corpus
#
# covered elsewhere: missing path, empty file, binary data (test_cli.test_train_bad_input
# and test_corpus); invalid UTF-8 through the API (test_corpus: mostly invalid is refused as
# binary, a few bad lines are replaced by U+FFFD and counted); a single sentence and
# documents too short through the API (test_train.test_too_few_sentences,
# test_no_sentence_has_a_neighbour). Added here: the same through the CLI, the warning for
# a few invalid lines, and one enormous line.


@pytest.mark.parametrize(
    "name, content, fragment",
    [
        ("blank.txt", b"\n\n   \n\t\n\n", "no words"),
        ("one-sentence.txt", b"The cat sat on the mat.\n", "no training example"),
        ("short-docs.txt", b"One cat.\n\nTwo cats.\n\nThree cats.\n\nFour cats.\n\nFive cats.\n", "no training example"),
        ("mostly-bad.txt", b"\xff\xfe\xfa word\n\xc3\x28 x\n\xa0\xa1\n", "invalid UTF-8"),
        ("nul.txt", b"words\n\x00\x00\x00\nmore\n", "binary"),
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


def test_directory_without_text_files_through_the_cli(tmp_path, runner):
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "picture.png").write_bytes(b"\x89PNG\r\n")
    result = runner.invoke(main, train_args(d, tmp_path / "model"))
    assert_clean_error(result, "no text files")
    assert not (tmp_path / "model").exists()


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


# =======================================================================================
# Bad input: hyperparameters
#
# covered elsewhere: zero dims, epochs, negatives, min count; negative threads; zero,
# negative, NaN and infinite learning rates; too many threads; an empty vocabulary
# (test_cli.test_train_bad_input, test_train.test_config_validation). Added: negative
# values of the others, through the CLI and the API, and an empty vocabulary by
# --max-vocab with a high --min-count.


@pytest.mark.parametrize("field, value", [("dim", -3), ("epochs", -1), ("negatives", -2), ("min_count", -1),
                                          ("threads", -4), ("lr", float("-inf")), ("lr", -1e-9)])
def test_negative_hyperparameters_through_the_api(field, value):
    with pytest.raises(ConfigError, match=field):
        TrainConfig(**{field: value})


def test_a_vocabulary_that_ends_up_empty(tmp_path, runner, corpus_file):
    result = runner.invoke(main, train_args(corpus_file, tmp_path / "m", "--min-count", "10000000"))
    assert_clean_error(result, "vocabulary is empty", "--min-count")
    with pytest.raises(scbow.training.corpus.CorpusError, match="vocabulary is empty"):
        scbow.train([corpus_file], TrainConfig(min_count=10_000_000, threads=1), quiet=True)


# =======================================================================================
# Bad input: paths
#
# covered elsewhere: output that is an existing file, or a directory of other things
# (test_cli, test_formats); disk full during a save through the API
# (test_formats.test_failed_save_keeps_the_old_model). Added: unwritable directories (three
# ways, since the tests may run as root), and disk full through the CLI (see Faults).


# =======================================================================================
# Bad input: models
#
# covered elsewhere, through the API: missing directory, each file missing, truncated
# vectors, vectors of the wrong dtype, vectors whose shape does not match the vocabulary,
# a config.json that is not JSON or has a newer format version, pickled vectors
# (test_formats). Added: all of them through the CLI, truncated vocab.txt and config.json,
# and proof that loading does not run a pickle's code.


# =======================================================================================
# Bad input: use
#
# covered elsewhere: sentences with no known word (test_cli.test_similarity_without_a_known
# _word_fails_cleanly, test_formats.test_embed). Added: empty strings, very long sentences,
# unusual Unicode, through the API and the CLI.

ODD = ["", "   ", "\t\n", "🙂🙃 🙂", "e\u0301te\u0301", "שלום עולם", "\u200b\u200d\ufeff", "a\ud800b",
       "\x00\x07\x1b[31m", "ﷺ" * 1000, "the\u00a0cat", "CAT SAT", "the cat\r\nsat"]


def test_embed_and_similarity_take_odd_strings(good_model):
    model = load_model(good_model)
    X = model.embed(ODD)
    assert X.shape == (len(ODD), model.dim) and X.dtype == np.float32
    for text, row in zip(ODD, X):
        known = model.ids(text)[0]
        assert np.isnan(row).all() == (not known), text
    assert np.isnan(model.similarity("", "the cat"))
    assert model.similarity("CAT SAT", "the cat\r\nsat") == pytest.approx(
        model.similarity("cat sat", "the cat sat"))


def test_very_long_sentence(good_model):
    model = load_model(good_model)
    sentence = " ".join(["the cat sat"] * 100_000)  # 300,000 tokens
    [row] = model.embed([sentence])
    expected = np.asarray(model.vectors)[[model.vocab.index[w] for w in ("the", "cat", "sat")]].mean(axis=0)
    np.testing.assert_allclose(row, expected, rtol=1e-5, atol=1e-6)
    assert model.similarity(sentence, "sat the cat") == pytest.approx(1.0, abs=1e-5)


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


