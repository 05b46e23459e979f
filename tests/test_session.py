"""A training session's faults in real processes: signals during training, reading and saving; SIGKILL in
a save; divergence; two trainers into one output; a full disk. ``SHIM`` runs the real CLI with small
batches, a line before each, and can stall inside a save, so that a signal lands where the test wants."""

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
from conftest import assert_clean_error, files_under, make_runner, train_args

import scbow
import scbow.files as files
from scbow.cli import main
from scbow.config import TrainConfig
from scbow.errors import Interrupted, ModelError
from scbow.text.vocab import Vocab
from scbow.training.backends.cpu import CpuBackend
from scbow.training.checkpoint import checkpoint_dir
from scbow.training.session import OutputLock, SignalGuard, lock_path, train_session
from scbow.vectors.formats import load_model
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model

SHIM = r"""
import os, sys, time
import scbow.text.vocab as V
import scbow.training.corpus as C
import scbow.training.trainer as T
from scbow.training.backends.cpu import CpuBackend

env = os.environ.get
T.BATCH = 256
_run, _load, _save, count = CpuBackend.run, C.load_corpus, V.Vocab.save, [0]


def run(self, lo, hi, done):
    print(f"BATCH {done}", flush=True)
    while env("SHIM_HOLD") and not os.path.exists(env("SHIM_HOLD")):  # until the test lets it go on
        time.sleep(0.02)
    time.sleep(float(env("SHIM_SLEEP", "0")))
    return _run(self, lo, hi, done)


def load_corpus(*a, **k):
    if env("SHIM_SLOW_LOAD"):
        print("LOADING", flush=True)
        time.sleep(float(env("SHIM_SLOW_LOAD")))
    return _load(*a, **k)


def save(self, path):  # SHIM_SLOW_SAVE=PREFIX:N:SECONDS: the N-th vocab.txt written into a directory
    if env("SHIM_SLOW_SAVE"):  # named PREFIX* is left half written while the process sleeps
        prefix, nth, seconds = env("SHIM_SLOW_SAVE").split(":")
        if os.path.basename(os.path.dirname(os.path.abspath(path))).startswith(prefix):
            count[0] += 1
            if count[0] == int(nth):
                with open(path, "w") as fh:
                    fh.write("the 1\nha")
                print("SAVING", flush=True)
                time.sleep(float(seconds))
    return _save(self, path)


CpuBackend.run, C.load_corpus, V.Vocab.save = run, load_corpus, save
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
        while (line := self.lines.get(timeout=10)) is not None:
            self.seen.append(line)
        return self.proc.returncode, stderr

    def batches(self):
        return [int(line.split()[1]) for line in self.seen if line.startswith("BATCH ")]


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_signal_during_training_writes_a_checkpoint_and_resume_finishes(tmp_path, corpus_file, small_batches):
    """SIGINT to a real process (SIGTERM, through the same handler, and a run with no model before: test_checkpoint)."""
    out = tmp_path / "model"
    args = train_args(corpus_file, out, "--epochs", "3")
    assert make_runner().invoke(main, train_args(corpus_file, out, "--dim", "8")).exit_code == 0
    old = files_under(out), np.array(load_model(out).vectors)
    shim = Shim(args, SHIM_SLEEP=0.05)
    shim.wait_for("BATCH 1280")
    shim.proc.send_signal(signal.SIGINT)
    sent_after = len(shim.batches())
    code, stderr = shim.finish()
    assert code == 128 + signal.SIGINT
    line = one_line(stderr)
    assert "SIGINT" in line and "--resume" in line and str(checkpoint_dir(out)) in line
    # it stopped after the batch in flight (at most one more had been announced)
    assert len(shim.batches()) <= sent_after + 1, shim.batches()
    assert files_under(out) == old[0]
    np.testing.assert_array_equal(np.array(load_model(out).vectors), old[1])  # every value, not a repr
    assert not lock_path(out).exists()
    meta = json.loads((checkpoint_dir(out) / "state.json").read_text())
    assert meta["state"]["phases"]["sentence"]["done"] == shim.batches()[-1] + 256  # the last batch run is in it
    assert scbow.load(checkpoint_dir(out)).vectors.shape[1] == 16

    resumed = Shim([*args, "--resume"])
    code, stderr = resumed.finish()
    assert code == 0, stderr
    assert resumed.batches()[0] == meta["state"]["phases"]["sentence"]["done"]  # continues where it stopped
    # the model is an uninterrupted run's, bit for bit: test_checkpoint.test_resume_is_bit_identical_and_says_...
    assert not checkpoint_dir(out).exists() and load_model(out).dim == 16


@pytest.mark.parametrize("when, env, signum, code, words, left", [
    ("LOADING", dict(SHIM_SLOW_LOAD=30), signal.SIGINT, 128 + signal.SIGINT, "nothing was written", []),
    ("SAVING", dict(SHIM_SLOW_SAVE=".model.tmp-:1:1.5"), signal.SIGTERM, 0, "the run ends as finished", ["model"]),
], ids=["while reading the corpus", "while saving the model"])
def test_a_signal_outside_training(tmp_path, corpus_file, when, env, signum, code, words, left):
    """Before training (reading) a signal stops at once and nothing is written; after it, it waits for the
    save, and the run, whose model is whole, ends as finished: status 0 and its summary."""
    out = tmp_path / "model"
    args = [a for a in train_args(corpus_file, out, *(["--checkpoint-every", "256"] if not left else [])) if a != "-q"]
    shim = Shim(args, **env)
    shim.wait_for(when)
    shim.proc.send_signal(signum)
    returned, stderr = shim.finish()
    assert returned == code, stderr
    assert words in stderr and "Traceback" not in stderr
    assert sorted(os.listdir(tmp_path)) == left
    if left:
        assert np.isfinite(load_model(out).vectors).all()
        assert "\ntrained 1 epoch" in stderr  # the summary
    else:
        assert shim.batches() == []


def test_signal_guard_restores_handlers_and_a_second_signal_stops_at_once_unless_saving():
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
    # while the model is saved every signal waits, a second one too: the save ends whole
    try:
        with SignalGuard() as guard:
            guard.mode = "defer"
            for signum in (signal.SIGINT, signal.SIGINT, signal.SIGTERM):
                os.kill(os.getpid(), signum)
                time.sleep(0.01)
    except Interrupted:
        pytest.fail("a signal while the model is saved stopped the save")
    assert guard.signum == signal.SIGINT
    # a signal ignored on entry (nohup, a background job of a script) stays ignored
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with SignalGuard():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_tests_that_send_sigint_pass_in_a_suite_started_with_it_ignored():
    """conftest gives SIGINT its default in a suite started with it ignored (nohup, CI: 33 tests failed):
    such a suite runs a test that interrupts this process and one that interrupts a child."""
    here = Path(__file__)
    started_ignoring = ("import signal, subprocess, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                        "sys.exit(subprocess.call(sys.argv[1:]))")
    tests = [f"{here.name}::test_signal_guard_restores_handlers_and_a_second_signal_stops_at_once_unless_saving",
             f"{here.name}::test_a_signal_outside_training[while reading the corpus]"]
    done = subprocess.run([sys.executable, "-c", started_ignoring, sys.executable, "-m", "pytest", "-q",
                           "-p", "no:cacheprovider", *tests], cwd=here.parent, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_sigkill_in_the_middle_of_a_checkpoint_keeps_the_previous_one(tmp_path, corpus_file):
    """SIGKILL while the second checkpoint is half written: the first stays whole; the next run takes the
    stale lock, removes the temporary and resumes. (A model's save killed: the next test, test_files.)"""
    out = tmp_path / "model"
    previous = checkpoint_dir(out)
    shim = Shim(train_args(corpus_file, out, "--checkpoint-every", "1024"), SHIM_SLOW_SAVE=".model.checkpoint.tmp-:2:60")
    shim.wait_for("SAVING")
    before, state_before = files_under(previous), (previous / "state.json").read_text()
    vectors_before = np.array(load_model(previous).vectors)
    assert any(p.name.startswith(f".{previous.name}.tmp-") for p in tmp_path.iterdir())  # the half-written one
    shim.proc.kill()
    shim.finish()
    assert files_under(previous) == before and (previous / "state.json").read_text() == state_before
    assert np.array_equal(np.array(load_model(previous).vectors), vectors_before)
    assert json.loads(state_before)["state"]["phases"]["sentence"]["done"] == 1024 and lock_path(out).exists()
    result = make_runner().invoke(main, train_args(corpus_file, out, "--resume"))
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(tmp_path)) == ["model"] and load_model(out).dim == 16


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
    """Each kill leaves one whole model, old or new, and what a kill in a save leaves beside it (a temporary,
    or the old model set aside) is removed by the next save."""
    rng = np.random.default_rng(0)
    path = tmp_path / "m"
    left = 0
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
        left += len(os.listdir(tmp_path)) > 1
    assert left  # (each kill lands where a save has one about 4 times in 5)
    save_model(model, path)
    assert os.listdir(tmp_path) == ["m"]


# ---------------------------------------------------------------- NaN or inf


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
    assert json.loads((checkpoint_dir(out) / "state.json").read_text())["state"]["phases"]["sentence"]["done"] == 4 * 256


def test_divergence_without_checkpoints_names_the_cause(tmp_path, runner, corpus_file):
    result = runner.invoke(main, train_args(corpus_file, tmp_path / "m", "--lr", "1e30", "--weight-decay", "0"))
    line = assert_clean_error(result, "too high")
    assert "checkpoint" not in line
    assert not (tmp_path / "m").exists() and not checkpoint_dir(tmp_path / "m").exists()


# ---------------------------------------------------------------- two trainers, one output: the second refuses


def test_second_trainer_into_the_same_output_refuses(tmp_path, corpus_file):
    out = tmp_path / "model"
    go = tmp_path / "go"  # the first holds its first batch until the second is done, however slow its start
    first = Shim(train_args(corpus_file, out, "--epochs", "2"), SHIM_HOLD=go)
    first.wait_for("BATCH")
    second = subprocess.run([sys.executable, "-m", "scbow", *train_args(corpus_file, out)], capture_output=True,
                            text=True, timeout=120)
    go.touch()
    assert second.returncode == 1
    line = one_line(second.stderr)
    assert line.startswith("Error:") and "another scbow-numba process" in line and f"pid {first.proc.pid}" in line
    code, stderr = first.finish()
    assert code == 0, stderr  # the first one was not disturbed
    assert load_model(out).dim == 16 and not lock_path(out).exists()


def test_lock_in_one_process(tmp_path):
    # the CLI's line: test_second_trainer_into_the_same_output_refuses
    out = tmp_path / "model"
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "out").symlink_to(out)  # dangling until the model is saved
    with OutputLock(out):
        assert lock_path(out).read_text().strip() == str(os.getpid())
        # every name of the output has the one lock: -o LINK locks beside the link's target, not the link
        for name in (out, tmp_path / "links" / "out", tmp_path / "links" / ".." / "model"):
            assert lock_path(name) == tmp_path / "model.lock"
            with pytest.raises(ModelError, match=f"pid {os.getpid()}"):
                OutputLock(name).acquire()
    assert not lock_path(out).exists() and sorted(os.listdir(tmp_path / "links")) == ["out"]
    # never a link, a folder, a user's file, nor a pid-like file with a second name: refused, touched not
    (tmp_path / "userfile").write_text("12345\n")
    (tmp_path / "m1.lock").symlink_to(tmp_path / "userfile")
    (tmp_path / "m2.lock").write_text("my notes\n")
    (tmp_path / "m3.lock").mkdir()
    os.link(tmp_path / "userfile", tmp_path / "m4.lock")
    for name in ("m1", "m2", "m3", "m4"):
        with pytest.raises(ModelError, match=f"{name}.lock: is there and is not a lock file"):
            OutputLock(tmp_path / name).acquire()
    assert (tmp_path / "userfile").read_text() == "12345\n" and (tmp_path / "m1.lock").is_symlink()
    assert (tmp_path / "m2.lock").read_text() == "my notes\n" and (tmp_path / "m3.lock").is_dir()
    (tmp_path / "m5.lock").write_text("12345\n")  # a lock file left by a killed run: ours, reused and removed
    with OutputLock(tmp_path / "m5"):
        pass
    assert not (tmp_path / "m5.lock").exists()


@pytest.mark.parametrize("where", ["model", "checkpoint", "cache"])
def test_a_full_disk(tmp_path, runner, corpus_file, small_batches, monkeypatch, where):
    """vocab.txt's write raises ENOSPC after a partial file: a model's save or the cache fails cleanly, nothing
    partial left (an old model kept: test_formats); a periodic checkpoint's is a warning, training goes on."""
    out = tmp_path / "model"
    marker = {"checkpoint": ".model.checkpoint.tmp-", "cache": ".tmp-"}.get(where, ".model.tmp-")  # cache: .KEY.tmp-*
    original = Vocab.save

    def save(self, path):
        if marker in Path(path).parent.name:
            Path(path).write_text("the 1\n")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return original(self, path)

    monkeypatch.setattr(Vocab, "save", save)
    # 1k: --checkpoint-every takes a count as --eval-every does (tests/test_units.py: the parser)
    extra = {"checkpoint": ["--checkpoint-every", "1k"], "cache": ["--cache-dir", str(tmp_path / "cache")]}
    result = runner.invoke(main, train_args(corpus_file, out, *extra.get(where, [])))
    if where == "checkpoint":
        assert result.exit_code == 0, result.output
        warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
        assert warnings and all("No space left on device" in w and "training goes on" in w for w in warnings)
        assert np.isfinite(load_model(out).vectors).all()
    else:
        assert_clean_error(result, *(["cannot write model"] if where == "model" else []), "No space left on device")
    assert sorted(os.listdir(tmp_path)) == {"model": [], "cache": ["cache"]}.get(where, ["model"])  # nothing partial
    if where == "cache":
        assert list((tmp_path / "cache").iterdir()) == []


def test_a_failure_between_the_two_renames_puts_the_old_model_back(tmp_path, monkeypatch, good_model):
    # where there is no one-step swap (files.exchange), a directory is replaced by renaming the old
    # one aside, then the new one in: a failure between the two must not leave the output without its model
    monkeypatch.setattr(files, "exchange", lambda a, b: False)
    path = tmp_path / "model"
    shutil.copytree(good_model, path)
    before = np.array(load_model(path).vectors)
    real_rename = os.rename
    calls = []

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # the new model into place
            raise OSError(errno.EIO, "Input/output error")
        return real_rename(src, dst)

    monkeypatch.setattr(files.os, "rename", rename)
    new = Model(Vocab(["a", "b"], [2, 1]), np.ones((2, 3), np.float32), {}, {})
    with pytest.raises(ModelError, match="Input/output error"):
        save_model(new, path)
    monkeypatch.setattr(files.os, "rename", real_rename)
    assert np.array_equal(np.array(load_model(path).vectors), before) and sorted(os.listdir(tmp_path)) == ["model"]
    save_model(new, path)
    assert load_model(path).vocab.words == ["a", "b"] and sorted(os.listdir(tmp_path)) == ["model"]


def test_an_unsure_collapse_is_a_warning_and_the_model_is_saved(tmp_path, small_corpus_file):
    """An unsure collapse verdict reaches warn (even with -q) and the run is saved: 120 generated sentences of
    38 words (close by nature) lose most of their gap at --dim 8, too little evidence to throw it away."""
    warnings = []
    out = tmp_path / "m"
    result = train_session([small_corpus_file], TrainConfig(dim=8, epochs=2, min_count=1, threads=1, word_passes=0),
                           out, quiet=True, use_cache=False, warn=warnings.append)
    collapsing = [w for w in warnings if "collapsing" in w]
    assert collapsing == [warnings[-1]] == result.warnings
    assert collapsing[0].startswith("warning: the sentence vectors may be collapsing")
    assert "too few to be sure" in collapsing[0] and "the model is saved" in collapsing[0]
    check = load_model(out).info["training"]["collapse_check"]
    assert check["verdict"] == "unsure" and check["gap_ratio"] < 0.35 and check["words"] < 100
