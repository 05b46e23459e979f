"""Issue 6: bad input, interrupts and faults never lose work.

Bad input gives one line ``Error: ...``, a non-zero exit and writes nothing. Cases that
test_cli, test_corpus, test_formats and test_train already cover are not repeated here;
the map from each case of the issue to its test is in the comments of each section.

Faults are tested with real processes where the point is what a process does when it is
stopped: a small shim (``SHIM`` below) runs the real CLI with smaller batches, prints a
line before every batch so the test knows when training runs, and can stall inside a
save, so that a signal or SIGKILL lands exactly where the test wants it.
"""

from __future__ import annotations

import errno
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_cli import TRAIN, assert_clean_error, make_runner

import scbow
from scbow.cli import main
from scbow.config import ConfigError, TrainConfig
from scbow.errors import CheckpointError, Interrupted, ModelError
from scbow.text.vocab import Vocab
from scbow.training import trainer as trainer_mod
from scbow.training.backends.cpu import CpuBackend
from scbow.training.checkpoint import Every, checkpoint_dir, parse_every
from scbow.training.hooks import Hook
from scbow.training.session import OutputLock, SignalGuard, lock_path, train_session
from scbow.vectors.formats import load_model
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model


@pytest.fixture
def runner():
    return make_runner()


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory, make_text):
    """2,400 sentences in 6 documents: about 9 batches of 256 examples per epoch."""
    path = tmp_path_factory.mktemp("robust") / "corpus.txt"
    path.write_text(make_text(n_docs=6, sents_per_doc=400, seed=11), encoding="utf-8")
    return path


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
    assert len(warning) == 1 and "2 line(s)" in warning[0], result.stderr
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


@pytest.mark.parametrize("flag, value", [("--dim", "-3"), ("--epochs", "-1"), ("--negatives", "-2"),
                                         ("--min-count", "-1"), ("--threads", "-4"), ("--lr", "-inf"),
                                         ("--lr", "-nan"), ("--max-length", "-1")])
def test_negative_hyperparameters_through_the_cli(tmp_path, runner, corpus_file, flag, value):
    out = tmp_path / "model"
    result = runner.invoke(main, train_args(corpus_file, out, flag, value))
    assert_clean_error(result, flag)
    assert not out.exists()


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


def test_output_under_a_file_is_refused(tmp_path, runner, corpus_file):
    (tmp_path / "plain").write_text("a file, not a directory")
    result = runner.invoke(main, train_args(corpus_file, tmp_path / "plain" / "model"))
    assert_clean_error(result, "cannot create directory")


def test_output_in_a_read_only_directory(tmp_path, runner, corpus_file):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories; see the /sys test")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        result = runner.invoke(main, train_args(corpus_file, d / "model"))
        assert_clean_error(result, "not writable")
        assert os.listdir(d) == []
    finally:
        d.chmod(0o755)


def test_output_on_a_file_system_nobody_may_write(runner, corpus_file):
    # /sys refuses new entries even to root, while os.access() says it is writable
    target = Path("/sys/scbow-robustness-test-model")
    if not Path("/sys").is_dir() or target.exists():
        pytest.skip("no /sys here")
    result = runner.invoke(main, train_args(corpus_file, target))
    assert_clean_error(result, "not writable")
    assert not target.exists()


# =======================================================================================
# Bad input: models
#
# covered elsewhere, through the API: missing directory, each file missing, truncated
# vectors, vectors of the wrong dtype, vectors whose shape does not match the vocabulary,
# a config.json that is not JSON or has a newer format version, pickled vectors
# (test_formats). Added: all of them through the CLI, truncated vocab.txt and config.json,
# and proof that loading does not run a pickle's code.


class _Payload:
    """Unpickling this calls ``open(marker, "w")``: it creates the file ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _damage(model_dir: Path, how: str, tmp_path: Path) -> None:
    if how.startswith("missing-"):
        (model_dir / how[len("missing-"):]).unlink()
    elif how.startswith("truncated-"):
        f = model_dir / how[len("truncated-"):]
        data = f.read_bytes()
        f.write_bytes(data[: len(data) // 2])
    elif how == "empty-vectors":
        (model_dir / "vectors.npy").write_bytes(b"")
    elif how == "shape":
        np.save(model_dir / "vectors.npy", np.zeros((3, 4), dtype=np.float32))
    elif how == "config-not-json":
        (model_dir / "config.json").write_text("this is not json {")
    elif how == "config-newer":
        meta = json.loads((model_dir / "config.json").read_text())
        meta["format_version"] += 1
        (model_dir / "config.json").write_text(json.dumps(meta))
    elif how == "pickle":
        np.save(model_dir / "vectors.npy", np.array([_Payload(tmp_path / "pwned")], dtype=object),
                allow_pickle=True)
    else:
        raise ValueError(how)


DAMAGE = ["missing-vectors.npy", "missing-vocab.txt", "missing-config.json", "truncated-vectors.npy",
          "truncated-vocab.txt", "truncated-config.json", "empty-vectors", "shape", "config-not-json",
          "config-newer", "pickle"]


@pytest.fixture(scope="module")
def good_model(tmp_path_factory):
    words = [f"w{i}" for i in range(50)] + ["the", "cat", "sat"]
    rng = np.random.default_rng(0)
    model = Model(Vocab(words, np.arange(len(words), 0, -1)), rng.standard_normal((len(words), 8)).astype(np.float32),
                  {"dim": 8}, {})
    return save_model(model, tmp_path_factory.mktemp("good") / "model")


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_model_through_the_cli(tmp_path, runner, good_model, how):
    model_dir = tmp_path / "model"
    shutil.copytree(good_model, model_dir)
    _damage(model_dir, how, tmp_path)
    before = files_under(model_dir)
    for argv in (["similarity", "-m", str(model_dir), "the cat", "the cat sat"],
                 ["export", "-m", str(model_dir), "-o", str(tmp_path / "v.txt")]):
        assert_clean_error(runner.invoke(main, argv))
    assert not (tmp_path / "v.txt").exists()
    assert files_under(model_dir) == before  # reading never repairs or deletes
    assert not (tmp_path / "pwned").exists()  # nothing was unpickled


def test_loading_never_runs_a_pickle(tmp_path, good_model):
    model_dir = tmp_path / "model"
    shutil.copytree(good_model, model_dir)
    _damage(model_dir, "pickle", tmp_path)
    for mmap in (True, False):
        with pytest.raises(ModelError):
            load_model(model_dir, mmap=mmap)
    assert not (tmp_path / "pwned").exists()
    # the payload does work when unpickled: the test above can fail
    np.load(model_dir / "vectors.npy", allow_pickle=True)
    assert (tmp_path / "pwned").exists()


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


# =======================================================================================
# --checkpoint-every


@pytest.mark.parametrize("text, expected", [("500000", Every(examples=500_000)), ("1_000", Every(examples=1000)),
                                            ("30s", Every(seconds=30)), ("10m", Every(seconds=600)),
                                            ("1.5h", Every(seconds=5400)), ("2 min", Every(seconds=120)),
                                            (250, Every(examples=250))])
def test_parse_every(text, expected):
    assert parse_every(text) == expected


@pytest.mark.parametrize("text", ["0", "-5", "0s", "abc", "10x", "nan", "infm", "1e5", "", "m"])
def test_bad_checkpoint_every_is_one_clean_line(tmp_path, runner, corpus_file, text):
    with pytest.raises(ValueError):
        parse_every(text)
    out = tmp_path / "model"
    result = runner.invoke(main, train_args(corpus_file, out, "--checkpoint-every", text))
    assert_clean_error(result, "--checkpoint-every")
    assert not out.exists()


# =======================================================================================
# Checkpoints and resume, in process
#
# A hook sends this very process SIGINT after a chosen batch: the signal goes through the
# real handler, flag and checkpoint path.


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(trainer_mod, "BATCH", 256)


class SignalAfter(Hook):
    def __init__(self, batches, signum=signal.SIGINT):
        self.batches, self.signum, self.seen = batches, signum, 0

    def after_batch(self, state, vectors):
        self.seen += 1
        if self.seen == self.batches:
            os.kill(os.getpid(), self.signum)


def cfg(**kw):
    return TrainConfig(**{"dim": 16, "epochs": 2, "min_count": 1, "threads": 1, "seed": 3, **kw})


def test_resume_is_bit_identical_to_an_uninterrupted_run(tmp_path, corpus_file, small_batches):
    config = cfg()
    reference = train_session([corpus_file], config, tmp_path / "a", quiet=True)
    out = tmp_path / "b"
    # interrupted twice (mid-epoch, then in the second epoch), resumed twice
    with pytest.raises(Interrupted) as info:
        train_session([corpus_file], config, out, quiet=True, hooks=[SignalAfter(4)])
    assert info.value.signum == signal.SIGINT and "--resume" in info.value.message
    assert not out.exists()
    first = json.loads((checkpoint_dir(out) / "state.json").read_text())["state"]
    assert first["done"] == 4 * 256 and first["epoch"] == 0 and first["lo"] == 4 * 256
    with pytest.raises(Interrupted):
        train_session([corpus_file], config, out, quiet=True, resume=True, hooks=[SignalAfter(9)])
    second = json.loads((checkpoint_dir(out) / "state.json").read_text())["state"]
    assert second["epoch"] == 1 and second["done"] == second["targets_per_epoch"] + second["lo"] > first["done"]
    resumed = train_session([corpus_file], config, out, quiet=True, resume=True)
    assert not checkpoint_dir(out).exists()  # removed once the model is saved
    a, b = load_model(tmp_path / "a"), load_model(out)
    assert np.array_equal(np.asarray(a.vectors).view(np.uint32), np.asarray(b.vectors).view(np.uint32))
    assert resumed.losses == reference.losses  # the same learning-rate position, batch for batch
    assert resumed.examples == reference.examples
    assert b.info["training"]["examples"] == a.info["training"]["examples"]
    # equality is no accident of the setup: another random stream gives other vectors
    other = train_session([corpus_file], config.replace(seed=4), tmp_path / "c", quiet=True)
    assert not np.array_equal(np.asarray(a.vectors), np.asarray(load_model(tmp_path / "c").vectors))
    assert other.losses != reference.losses


def test_a_checkpoint_is_a_loadable_model_of_the_raw_matrix(tmp_path, corpus_file, small_batches):
    out = tmp_path / "m"
    seen = {}

    class Grab(Hook):
        def after_batch(self, state, vectors):
            if state.done == 3 * 256:
                seen["W"] = np.array(vectors())
                os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Interrupted) as info:
        train_session([corpus_file], cfg(), out, quiet=True, hooks=[Grab()])
    assert info.value.signum == signal.SIGTERM
    ck = scbow.load(checkpoint_dir(out))
    assert np.array_equal(np.asarray(ck.vectors), seen["W"])  # raw: no common-component removal yet
    assert ck.info["training"]["checkpoint"] is True
    assert sorted(os.listdir(checkpoint_dir(out))) == ["config.json", "state.json", "vectors.npy", "vocab.txt"]
    assert sorted(os.listdir(tmp_path)) == ["m.checkpoint"]  # no model, no lock, no temporary directory
    assert not lock_path(out).exists()


def test_periodic_checkpoints(tmp_path, corpus_file, small_batches, monkeypatch):
    from scbow.training.checkpoint import CheckpointWriter

    written = []
    original = CheckpointWriter.write

    def spy(self, state, W):
        written.append(state.done)
        return original(self, state, W)

    monkeypatch.setattr(CheckpointWriter, "write", spy)
    boundaries = []

    class Record(Hook):
        def after_batch(self, state, vectors):
            boundaries.append(state.done)

    result = train_session([corpus_file], cfg(), tmp_path / "m", quiet=True, checkpoint_every=1000,
                           hooks=[Record()])
    # one checkpoint at the first batch boundary at or after every multiple of 1000
    expected = sorted({next(b for b in boundaries if b >= k) for k in range(1000, result.examples + 1, 1000)})
    assert written == expected and len(written) >= 4
    assert not checkpoint_dir(tmp_path / "m").exists()
    written.clear()
    train_session([corpus_file], cfg(), tmp_path / "t", quiet=True, checkpoint_every="0.000001s")
    assert len(written) >= 10  # a duration that is always due: after every batch


def test_resume_refuses_another_config_or_corpus(tmp_path, corpus_file, make_text, small_batches):
    out = tmp_path / "m"
    with pytest.raises(Interrupted):
        train_session([corpus_file], cfg(), out, quiet=True, hooks=[SignalAfter(2)])
    with pytest.raises(CheckpointError, match=r"--lr was 0\.1, now 0\.03"):
        train_session([corpus_file], cfg(lr=0.03), out, quiet=True, resume=True)
    with pytest.raises(CheckpointError, match="--epochs was 2, now 3"):
        train_session([corpus_file], cfg(epochs=3), out, quiet=True, resume=True)
    other = tmp_path / "other.txt"
    other.write_text(make_text(n_docs=6, sents_per_doc=400, seed=12), encoding="utf-8")
    with pytest.raises(CheckpointError, match="another corpus"):
        train_session([other], cfg(), out, quiet=True, resume=True)
    # without --resume, an existing checkpoint is never overwritten
    with pytest.raises(CheckpointError, match="--resume"):
        train_session([corpus_file], cfg(), out, quiet=True)
    assert checkpoint_dir(out).exists() and not out.exists()
    # another thread count or device is fine (they change the speed, not the computation)
    from scbow.training.checkpoint import check_config, read_meta

    check_config(read_meta(checkpoint_dir(out)), cfg(threads=2, device="cuda"), checkpoint_dir(out))
    # and so is the same corpus under another name
    copy = tmp_path / "copy.txt"
    shutil.copy(corpus_file, copy)
    train_session([copy], cfg(), out, quiet=True, resume=True)
    assert load_model(out).dim == 16 and not checkpoint_dir(out).exists()


def test_resume_without_a_checkpoint(tmp_path, runner, corpus_file):
    result = runner.invoke(main, train_args(corpus_file, tmp_path / "m", "--resume"))
    assert_clean_error(result, "no checkpoint")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("how", ["state-not-json", "state-missing", "state-newer", "state-inconsistent",
                                 "truncated-vectors.npy", "missing-vocab.txt", "nan-vectors", "shape"])
def test_damaged_checkpoint_is_refused_cleanly(tmp_path, runner, corpus_file, small_batches, how):
    out = tmp_path / "m"
    with pytest.raises(Interrupted):
        train_session([corpus_file], cfg(dim=8, epochs=1, threads=1, seed=1), out, quiet=True, hooks=[SignalAfter(2)])
    ck = checkpoint_dir(out)
    state = ck / "state.json"
    meta = json.loads(state.read_text())
    if how == "state-not-json":
        state.write_text(state.read_text()[:40])
    elif how == "state-missing":
        state.unlink()
    elif how == "state-newer":
        meta["checkpoint_version"] += 1
        state.write_text(json.dumps(meta))
    elif how == "state-inconsistent":
        meta["state"]["done"] += 7
        state.write_text(json.dumps(meta))
    elif how == "nan-vectors":
        W = np.load(ck / "vectors.npy")
        W[3, 2] = np.nan
        np.save(ck / "vectors.npy", W)
    elif how == "shape":
        np.save(ck / "vectors.npy", np.zeros((5, 8), dtype=np.float32))
    else:
        _damage(ck, how, tmp_path)
    result = runner.invoke(main, train_args(corpus_file, out, "--dim", "8", "--seed", "1", "--resume"))
    line = assert_clean_error(result)
    expected = {"state-not-json": "damaged checkpoint (not valid JSON: Expecting value", "state-missing": "(no state.json)",
                "state-newer": "newer than this scbow-numba understands", "state-inconsistent": "inconsistent training state",
                "truncated-vectors.npy": "cannot read vectors", "missing-vocab.txt": "missing vocab.txt",
                "nan-vectors": "the vectors hold NaN or inf", "shape": "the vocabulary has 38 words but the vectors have 5 rows"}
    assert expected[how] in line, line  # each damage named for what it is
    assert not out.exists() and ck.exists()  # a damaged checkpoint is reported, not deleted


# =======================================================================================
# Faults in real processes

SHIM = r"""
import os, sys, time
import scbow.training.trainer as T
from scbow.training.backends.cpu import CpuBackend

T.BATCH = int(os.environ.get("SHIM_BATCH", "256"))
_run = CpuBackend.run


def run(self, lo, hi, done):
    print(f"BATCH {done}", flush=True)
    time.sleep(float(os.environ.get("SHIM_SLEEP", "0")))
    return _run(self, lo, hi, done)


CpuBackend.run = run

if os.environ.get("SHIM_SLOW_LOAD"):
    import scbow.training.corpus as C
    _load = C.load_corpus

    def load_corpus(*a, **k):
        print("LOADING", flush=True)
        time.sleep(float(os.environ["SHIM_SLOW_LOAD"]))
        return _load(*a, **k)

    C.load_corpus = load_corpus

if os.environ.get("SHIM_SLOW_SAVE"):
    # PREFIX:N:SECONDS: the N-th vocab.txt written into a directory named PREFIX* is left
    # half written while the process sleeps
    prefix, nth, seconds = os.environ["SHIM_SLOW_SAVE"].split(":")
    import scbow.text.vocab as V
    _save = V.Vocab.save
    count = [0]

    def save(self, path):
        if os.path.basename(os.path.dirname(os.path.abspath(path))).startswith(prefix):
            count[0] += 1
            if count[0] == int(nth):
                with open(path, "w") as fh:
                    fh.write("the 1\nha")
                print("SAVING", flush=True)
                time.sleep(float(seconds))
        return _save(self, path)

    V.Vocab.save = save

from scbow.cli import main
main(sys.argv[1:], prog_name="scbow-numba")
"""


class Shim:
    """The CLI in a child process, its stdout lines readable with a timeout."""

    def __init__(self, argv, **env):
        self.proc = subprocess.Popen([sys.executable, "-c", SHIM, *map(str, argv)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **{k: str(v) for k, v in env.items()}})
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, prefix, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                self.proc.kill()
                raise AssertionError(f"no {prefix!r} line within {timeout} s; saw {self.seen[-5:]}")
            if line is None:
                raise AssertionError(f"exited ({self.proc.wait()}) before {prefix!r}: {self.proc.stderr.read()[-3000:]}")
            self.seen.append(line)
            if line.startswith(prefix):
                return line

    def finish(self, timeout=120):
        try:
            self.proc.wait(timeout=timeout)  # a liveness bound, not a speed test
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("the process did not stop")
        stderr = self.proc.stderr.read()
        while True:
            line = self.lines.get(timeout=10)
            if line is None:
                break
            self.seen.append(line)
        return self.proc.returncode, stderr

    def batches(self):
        return [int(line.split()[1]) for line in self.seen if line.startswith("BATCH ")]


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize("signum, extra, previous", [(signal.SIGINT, [], True),
                                                      (signal.SIGTERM, ["--checkpoint-every", "600"], False)],
                         ids=["SIGINT", "SIGTERM"])
def test_signal_during_training_writes_a_checkpoint_and_resume_finishes(tmp_path, corpus_file, small_batches,
                                                                        signum, extra, previous):
    out = tmp_path / "model"
    args = train_args(corpus_file, out, "--epochs", "3", *extra)
    if previous:
        assert make_runner().invoke(main, train_args(corpus_file, out, "--dim", "8")).exit_code == 0
        old = files_under(out), np.array(load_model(out).vectors)
    # the same run, uninterrupted, in this process (with the shim's batch size)
    config = TrainConfig(dim=16, epochs=3, min_count=1, threads=1)
    train_session([corpus_file], config, tmp_path / "reference", quiet=True)
    shim = Shim(args, SHIM_SLEEP=0.05)
    shim.wait_for("BATCH 1280")
    shim.proc.send_signal(signum)
    sent_after = len(shim.batches())
    code, stderr = shim.finish()
    assert code == 128 + signum
    line = one_line(stderr)
    assert signal.Signals(signum).name in line and "--resume" in line and str(checkpoint_dir(out)) in line
    # it stopped after the batch in flight (at most one more had been announced)
    assert len(shim.batches()) <= sent_after + 1, shim.batches()
    if previous:
        assert files_under(out) == old[0]
        np.testing.assert_array_equal(np.array(load_model(out).vectors), old[1])  # every value, not a repr
    else:
        assert not out.exists()
    assert not lock_path(out).exists()
    meta = json.loads((checkpoint_dir(out) / "state.json").read_text())
    assert meta["state"]["done"] == shim.batches()[-1] + 256  # the last batch run is in it
    assert scbow.load(checkpoint_dir(out)).vectors.shape[1] == 16

    resumed = Shim([*args, "--resume"])
    code, stderr = resumed.finish()
    assert code == 0, stderr
    assert resumed.batches()[0] == meta["state"]["done"]  # continues where it stopped
    assert not checkpoint_dir(out).exists()
    a, b = load_model(tmp_path / "reference"), load_model(out)
    assert np.array_equal(np.asarray(a.vectors), np.asarray(b.vectors))  # --threads 1: bit-identical


def test_signal_while_reading_the_corpus_writes_nothing(tmp_path, corpus_file):
    out = tmp_path / "model"
    shim = Shim(train_args(corpus_file, out, "--checkpoint-every", "256"), SHIM_SLOW_LOAD=30)
    shim.wait_for("LOADING")
    shim.proc.send_signal(signal.SIGINT)
    code, stderr = shim.finish()
    assert code == 130
    assert "nothing was written" in one_line(stderr)
    assert shim.batches() == []
    assert sorted(os.listdir(tmp_path)) == []


def test_signal_while_saving_the_model_waits_for_the_save(tmp_path, corpus_file):
    out = tmp_path / "model"
    shim = Shim(train_args(corpus_file, out), SHIM_SLOW_SAVE=".model.tmp-:1:1.5")
    shim.wait_for("SAVING")
    shim.proc.send_signal(signal.SIGTERM)
    code, stderr = shim.finish()
    assert code == 143
    line = one_line(stderr)
    assert "model was saved" in line
    assert np.isfinite(load_model(out).vectors).all()
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_signal_guard_restores_handlers_and_a_second_signal_stops_at_once():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with SignalGuard() as guard:
        guard.mode = "flag"
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)
        assert guard.signum == signal.SIGTERM
        with pytest.raises(Interrupted):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    assert {s: signal.getsignal(s) for s in before} == before


@pytest.mark.parametrize("where", ["model", "checkpoint"])
def test_sigkill_in_the_middle_of_a_save_keeps_the_previous_one(tmp_path, corpus_file, where):
    out = tmp_path / "model"
    if where == "model":
        assert make_runner().invoke(main, train_args(corpus_file, out, "--dim", "8")).exit_code == 0
        previous = out
        shim = Shim(train_args(corpus_file, out), SHIM_SLOW_SAVE=".model.tmp-:1:60")
    else:
        previous = checkpoint_dir(out)
        shim = Shim(train_args(corpus_file, out, "--checkpoint-every", "1024"),
                    SHIM_SLOW_SAVE=".model.checkpoint.tmp-:2:60")
        # the first checkpoint completes; wait until it is in place
    shim.wait_for("SAVING")
    before = files_under(previous)
    state_before = (previous / "state.json").read_text() if where == "checkpoint" else None
    vectors_before = np.array(load_model(previous).vectors)
    # the half-written new one exists beside it
    assert any(p.name.startswith(f".{previous.name}.tmp-") for p in tmp_path.iterdir())
    shim.proc.kill()
    shim.finish()
    assert files_under(previous) == before
    assert np.array_equal(np.array(load_model(previous).vectors), vectors_before)
    if where == "checkpoint":
        assert (previous / "state.json").read_text() == state_before
        assert json.loads(state_before)["state"]["done"] == 1024
    # the stale lock file and temporary directory are taken over and cleaned by the next run
    assert lock_path(out).exists()
    result = make_runner().invoke(main, train_args(corpus_file, out, *(["--resume"] if where == "checkpoint" else [])))
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(tmp_path)) == ["model"]
    assert load_model(out).dim == 16


SAVE_LOOP = r"""
import sys
import numpy as np
from scbow.vectors.modeldir import save_model
from scbow.vectors.model import Model
from scbow.text.vocab import Vocab

words = [f"w{i}" for i in range(20000)]
models = [Model(Vocab(words, np.ones(len(words))), np.full((len(words), 64), float(v), np.float32), {"v": v}, {})
          for v in (1, 2)]
n = 0
while True:
    save_model(models[n % 2], sys.argv[1])
    if n == 0:
        print("READY", flush=True)
    n += 1
"""


def test_sigkill_at_random_moments_of_repeated_saves(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "m"
    for attempt in range(6):
        proc = subprocess.Popen([sys.executable, "-c", SAVE_LOOP, str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "READY"
        time.sleep(float(rng.uniform(0.0, 0.4)))
        proc.kill()
        proc.wait()
        model = load_model(path, mmap=False)  # always one whole model, old or new
        v = model.config["v"]
        assert v in (1, 2) and np.all(model.vectors == v) and len(model) == 20000
        assert sorted(os.listdir(path)) == ["config.json", "vectors.npy", "vocab.txt"]


# =======================================================================================
# NaN or inf


@pytest.mark.parametrize("where", ["matrix", "loss"])
def test_divergence_stops_with_the_cause_and_keeps_the_last_good_checkpoint(tmp_path, runner, corpus_file,
                                                                            small_batches, monkeypatch, where):
    original = CpuBackend.run
    calls = []

    def run(self, lo, hi, done):
        calls.append(done)
        loss, n = original(self, lo, hi, done)
        if len(calls) == 5:
            if where == "matrix":
                self.W[7, 3] = np.inf  # the loss of this batch was fine; the matrix is not
            else:
                loss = float("nan")
        return loss, n

    monkeypatch.setattr(CpuBackend, "run", run)
    out = tmp_path / "model"
    result = runner.invoke(main, train_args(corpus_file, out, "--checkpoint-every", "256"))
    line = assert_clean_error(result, "learning rate", "too high", "--lr", "last good checkpoint")
    assert f"({4 * 256:,} examples)" in line and str(checkpoint_dir(out)) in line
    assert not out.exists()
    ck = load_model(checkpoint_dir(out))
    assert np.isfinite(ck.vectors).all()
    assert json.loads((checkpoint_dir(out) / "state.json").read_text())["state"]["done"] == 4 * 256


def test_divergence_without_checkpoints_names_the_cause(tmp_path, runner, corpus_file):
    result = runner.invoke(main, train_args(corpus_file, tmp_path / "m", "--lr", "1e30", "--weight-decay", "0"))
    line = assert_clean_error(result, "too high")
    assert "checkpoint" not in line
    assert not (tmp_path / "m").exists() and not checkpoint_dir(tmp_path / "m").exists()


# =======================================================================================
# Two trainers, one output: the second refuses (a lock)


def test_second_trainer_into_the_same_output_refuses(tmp_path, corpus_file):
    out = tmp_path / "model"
    first = Shim(train_args(corpus_file, out, "--epochs", "2"), SHIM_SLEEP=0.1)
    first.wait_for("BATCH")
    second = subprocess.run([sys.executable, "-m", "scbow", *train_args(corpus_file, out)], capture_output=True,
                            text=True, timeout=120)
    assert second.returncode == 1
    line = one_line(second.stderr)
    assert line.startswith("Error:") and "another scbow-numba process" in line and f"pid {first.proc.pid}" in line
    code, stderr = first.finish()
    assert code == 0, stderr  # the first one was not disturbed
    assert load_model(out).dim == 16 and not lock_path(out).exists()


def test_lock_in_one_process_and_a_stale_lock_file(tmp_path, runner, corpus_file):
    out = tmp_path / "model"
    with OutputLock(out):
        assert lock_path(out).read_text().strip() == str(os.getpid())
        with pytest.raises(ModelError, match=f"pid {os.getpid()}"):
            OutputLock(out).acquire()
        result = runner.invoke(main, train_args(corpus_file, out))
        assert_clean_error(result, "another scbow-numba process")
    assert not lock_path(out).exists()
    # a lock file left by a dead process (SIGKILL) holds no lock: it is taken over
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock_path(out).write_text(f"{dead.pid}\n")
    result = runner.invoke(main, train_args(corpus_file, out))
    assert result.exit_code == 0, result.output
    assert not lock_path(out).exists()


# =======================================================================================
# Disk full (simulated: the write that would fill the disk raises ENOSPC)


def _full_disk_under(monkeypatch, marker: str):
    """Make vocab.txt writes into directories whose name contains ``marker`` fail with ENOSPC."""
    original = Vocab.save

    def save(self, path):
        if marker in Path(path).parent.name:
            with open(path, "w") as fh:
                fh.write("the 1\n")  # a partial file, as a full disk leaves
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return original(self, path)

    monkeypatch.setattr(Vocab, "save", save)


@pytest.mark.parametrize("previous", [False, True])
def test_disk_full_while_saving_the_model(tmp_path, runner, corpus_file, monkeypatch, previous):
    out = tmp_path / "model"
    if previous:
        assert runner.invoke(main, train_args(corpus_file, out, "--dim", "8")).exit_code == 0
        before = np.array(load_model(out).vectors)
    _full_disk_under(monkeypatch, ".model.tmp-")
    result = runner.invoke(main, train_args(corpus_file, out))
    assert_clean_error(result, "cannot write model", "No space left on device")
    assert sorted(os.listdir(tmp_path)) == (["model"] if previous else [])  # no partial output
    if previous:
        assert np.array_equal(np.array(load_model(out).vectors), before)


def test_disk_full_while_writing_a_checkpoint_warns_and_training_goes_on(tmp_path, runner, corpus_file,
                                                                         small_batches, monkeypatch):
    out = tmp_path / "model"
    _full_disk_under(monkeypatch, ".model.checkpoint.tmp-")
    result = runner.invoke(main, train_args(corpus_file, out, "--checkpoint-every", "1000"))
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings and all("No space left on device" in w and "training goes on" in w for w in warnings)
    assert np.isfinite(load_model(out).vectors).all()
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_disk_full_while_caching_the_corpus(tmp_path, runner, corpus_file, monkeypatch):
    cache = tmp_path / "cache"
    _full_disk_under(monkeypatch, ".tmp-")  # the cache builds in KEY.tmp-*
    out = tmp_path / "model"
    result = runner.invoke(main, train_args(corpus_file, out, "--cache-dir", str(cache)))
    assert_clean_error(result, "No space left on device")
    assert not out.exists() and list(cache.iterdir()) == []


def test_install_dir_without_an_atomic_swap_puts_the_old_model_back(tmp_path, monkeypatch, good_model):
    # where directories cannot be swapped in one step, a failure between the two renames
    # must not leave the output without its model
    import scbow.files as files

    path = tmp_path / "model"
    shutil.copytree(good_model, path)
    before = np.array(load_model(path).vectors)
    monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    real_replace = os.replace
    calls = []

    def replace(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # the new model into place
            raise OSError(errno.EIO, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    new = Model(Vocab(["a", "b"], [2, 1]), np.ones((2, 3), np.float32), {}, {})
    with pytest.raises(ModelError, match="Input/output error"):
        save_model(new, path)
    monkeypatch.setattr(files.os, "replace", real_replace)
    assert np.array_equal(np.array(load_model(path).vectors), before)
    # and with the swap, the new model replaces the old one completely
    monkeypatch.undo()
    save_model(new, path)
    assert load_model(path).vocab.words == ["a", "b"] and sorted(os.listdir(tmp_path)) == ["model"]


# =======================================================================================
# A resumed run reaches the quality of an uninterrupted one (STS-B dev Pearson)


@pytest.mark.parametrize("threads", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_resumed_run_reaches_the_same_dev_score(tmp_path, gutenberg_slice, monkeypatch, threads):
    from conftest import DATA_DIR, missing_data

    from scbow.use.evaluate import read_sts, score_set

    dev = DATA_DIR / "sts-dev" / "stsb.dev.tsv"
    if not dev.is_file():
        missing_data(f"STS-B dev set {dev}")
    if threads > 1 and __import__("numba").config.NUMBA_NUM_THREADS < threads:
        pytest.skip("numba has a single thread here")
    monkeypatch.setattr(trainer_mod, "BATCH", 2048)
    corpus = [gutenberg_slice(20000)]
    config = TrainConfig(dim=32, epochs=2, min_count=2, threads=threads, lr=0.05)
    sts = read_sts(dev)
    whole = train_session(corpus, config, tmp_path / "whole", quiet=True)
    with pytest.raises(Interrupted):
        train_session(corpus, config, tmp_path / "resumed", quiet=True, hooks=[SignalAfter(12)])
    resumed = train_session(corpus, config, tmp_path / "resumed", quiet=True, resume=True)
    a = score_set(load_model(tmp_path / "whole").embed, sts).pearson
    b = score_set(load_model(tmp_path / "resumed").embed, sts).pearson
    assert len(resumed.losses) == len(whole.losses) and resumed.examples == whole.examples
    if threads == 1:
        assert a == b and resumed.losses == whole.losses  # bit-identical, so the same score
    else:
        # Hogwild runs differ from run to run (about 0.03 on this corpus), so: within noise,
        # and the run went on from where it stopped instead of starting over
        assert abs(a - b) < 0.06, (a, b)
        before, after = resumed.losses[11], resumed.losses[12]
        assert abs(after - before) < abs(after - resumed.losses[0]), resumed.losses
    # scores of a trained model, not NaN or a degenerate one: near its own untrained start
    # (SIF-weighted word overlap; on this small slice two epochs move it a little either way)
    from scbow.training.corpus import load_corpus
    from scbow.training.postprocess import remove_common_components
    from scbow.training.start import corpus_weights, init_vectors
    from scbow.vectors.model import Model

    enc = load_corpus(corpus, config.min_count, 0)
    W0 = init_vectors(len(enc.vocab), config, corpus_weights(enc, config))
    remove_common_components(W0, enc, min(config.common_components, config.dim // 10), config.seed)
    start = score_set(Model(enc.vocab, W0, config.to_dict()).embed, sts).pearson
    assert start > 0.5
    assert min(a, b) > start - 0.05, (a, b, start)


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


def test_a_checkpoint_from_before_the_frequency_weights_resumes_only_with_its_settings():
    """A checkpoint written before a setting existed trained with that setting's old value;
    resuming it under the new defaults would mix two objectives, so it is refused."""
    from scbow.training.checkpoint import BEFORE_THEY_EXISTED, _config_differences

    old = {k: v for k, v in TrainConfig(lr=0.02, weight_decay=10.0).to_dict().items() if k not in BEFORE_THEY_EXISTED}
    diffs = _config_differences(old, TrainConfig(lr=0.02, weight_decay=10.0))
    assert any(d.startswith("--frequency-weight was 0.0 (the checkpoint predates") for d in diffs), diffs
    assert any(d.startswith("--unknown was 'omit'") for d in diffs), diffs
    same = TrainConfig(lr=0.02, weight_decay=10.0, **BEFORE_THEY_EXISTED)
    assert _config_differences(old, same) == []
