"""Checkpoints and resume: --checkpoint-every, a checkpoint as a loadable model, resume bit for bit, damaged
checkpoints refused, a resumed run as good as an uninterrupted one. A hook sends this process SIGINT after a
chosen batch, through the real handler, flag and checkpoint path."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DATA_DIR, TRAIN, assert_clean_error, missing_data, same_bits, train_args
from test_curve import write_sts

import scbow
from scbow.cli import main
from scbow.config import TrainConfig
from scbow.errors import CheckpointError, Interrupted, ModelError
from scbow.training import trainer as trainer_mod
from scbow.training.checkpoint import (
    CheckpointWriter,
    check_config,
    checkpoint_dir,
    read_meta,
)
from scbow.training.corpus import load_corpus
from scbow.training.hooks import Hook
from scbow.training.postprocess import remove_common_components
from scbow.training.session import remove_checkpoint, train_session
from scbow.training.start import corpus_weights, init_vectors
from scbow.use.evaluate import read_sts, score_set
from scbow.vectors.formats import load_model
from scbow.vectors.model import Model


class SignalAfter(Hook):
    """Sends SIGINT after batch number ``when``, or after the first batch whose state satisfies ``when(state)``."""

    def __init__(self, when):
        self.when, self.seen = when, 0

    def after_batch(self, state, matrices):
        self.seen += 1
        if self.seen == self.when if isinstance(self.when, int) else self.when is not None and self.when(state):
            self.when = None  # once
            os.kill(os.getpid(), signal.SIGINT)


def cfg(**kw):
    # the sentence part alone (no word part): these tests are about checkpoints of the sentence part
    return TrainConfig(**{"dim": 16, "epochs": 2, "min_count": 1, "threads": 1, "seed": 3, "word_passes": 0, **kw})


def state_of(out) -> dict:
    """The checkpoint's state, its sentence phase's counters beside its position."""
    state = json.loads((checkpoint_dir(out) / "state.json").read_text())["state"]
    return {**state, **state["phases"]["sentence"]}


@pytest.fixture(scope="module", autouse=True)
def batches_of_256(tmp_path_factory):
    """Batches of 256 examples (conftest's small_batches) for the whole module, its fixtures' runs included."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(trainer_mod, "BATCH", 256)
        mp.setenv("SCBOW_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield mp


def spy_checkpoints(mp) -> list:
    """The example counts (``state.done``) of the checkpoints written from now on, in order (patched with ``mp``)."""
    written, write = [], CheckpointWriter.write

    def spy(self, state, *args, **kwargs):
        written.append(state.done)
        return write(self, state, *args, **kwargs)

    mp.setattr(CheckpointWriter, "write", spy)
    return written


@pytest.fixture
def checkpoints_written(monkeypatch):
    return spy_checkpoints(monkeypatch)


@pytest.fixture(scope="module")
def reference(corpus_file, tmp_path_factory, batches_of_256):
    """``cfg()`` run to its end once, with a checkpoint every 1,000 examples and a learning curve: the result,
    its saved model, the example counts after every batch and those of its checkpoints, the curve's dev set."""
    base, boundaries = tmp_path_factory.mktemp("reference"), []
    dev = write_sts(base / "dev.tsv", 40, seed=0)

    class Record(Hook):
        def after_batch(self, state, matrices):
            boundaries.append(state.done)

    with pytest.MonkeyPatch.context() as mp:
        written = spy_checkpoints(mp)
        result = train_session([corpus_file], cfg(), base / "a", quiet=True, checkpoint_every=1000,
                               hooks=[Record()], eval_every=512, eval_dev=dev)
    assert not checkpoint_dir(base / "a").exists()
    return SimpleNamespace(result=result, model=load_model(base / "a"), boundaries=boundaries, written=written, dev=dev)


PLAIN = cfg(dim=8, epochs=1, seed=1)


@pytest.fixture(scope="module")
def plain_checkpoint(corpus_file, tmp_path_factory, batches_of_256):
    """The checkpoint of ``PLAIN`` interrupted after 2 batches (tests copy it)."""
    out = tmp_path_factory.mktemp("interrupted") / "m"
    with pytest.raises(Interrupted):
        train_session([corpus_file], PLAIN, out, quiet=True, hooks=[SignalAfter(2)])
    return checkpoint_dir(out)


def copy_checkpoint(ck, out):
    """A copy of checkpoint ``ck`` as that of a run into ``out``; returns ``out``."""
    shutil.copytree(ck, checkpoint_dir(out))
    return out


def test_resume_is_bit_identical_and_says_where_it_resumes(tmp_path, corpus_file, capsys, reference):
    """Interrupted twice (SIGTERM mid-epoch, then SIGINT in the second epoch), resumed twice. The checkpoint
    is a loadable model of the raw matrix (no common-component removal yet), and all that is left."""
    out, seen = tmp_path / "b", {}

    class Grab(Hook):
        def after_batch(self, state, matrices):
            if state.done == 4 * 256:
                seen["W"] = np.array(matrices["sentence"])
                os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Interrupted) as info:
        train_session([corpus_file], cfg(), out, quiet=True, hooks=[Grab()])
    assert info.value.signum == signal.SIGTERM and "--resume" in info.value.message
    ck = scbow.load(checkpoint_dir(out))
    assert np.array_equal(np.asarray(ck.vectors), seen["W"]) and ck.info["training"]["checkpoint"] is True
    assert sorted(os.listdir(checkpoint_dir(out))) == ["config.json", "state.json", "vectors.npy", "vocab.txt"]
    assert sorted(os.listdir(tmp_path)) == ["b.checkpoint"]  # no model, no lock, no temporary directory
    first = state_of(out)
    assert first["done"] == 4 * 256 and first["epoch"] == 0 and first["lo"] == 4 * 256
    with pytest.raises(Interrupted) as info:
        train_session([corpus_file], cfg(), out, quiet=True, resume=True, hooks=[SignalAfter(9)])
    assert info.value.signum == signal.SIGINT
    assert "resuming" not in capsys.readouterr().err  # quiet: not a word
    second = state_of(out)
    assert second["epoch"] == 1 and second["done"] == second["targets_per_epoch"] + second["lo"] > first["done"]
    resumed = train_session([corpus_file], cfg(), out, resume=True)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("resuming")]
    assert lines == [f"resuming from the checkpoint at example {second['done']:,} of {second['total']:,} (epoch 2 of 2)"]
    assert not checkpoint_dir(out).exists()  # removed once the model is saved
    b = load_model(out)
    assert same_bits(reference.model.vectors, b.vectors)
    assert resumed.losses == reference.result.losses  # the same learning-rate position, batch for batch
    assert resumed.examples == reference.result.examples
    assert b.info["training"]["examples"] == reference.model.info["training"]["examples"]
    # the reference's periodic checkpoints: one at the first batch boundary at or after every multiple of 1000
    bounds = reference.boundaries
    expected = sorted({next(x for x in bounds if x >= k) for k in range(1000, reference.result.examples + 1, 1000)})
    assert reference.written == expected and len(expected) >= 4


STOPS = {"mid-epoch": lambda ref: lambda s: s.done == 5 * 256,
         "at a checkpoint": lambda ref: lambda s: s.done == ref.written[1],
         "end of epoch 0": lambda ref: lambda s: s.epoch == 0 and s.lo == s.targets_per_epoch,
         "end of epoch 1": lambda ref: lambda s: s.epoch == 1 and s.lo == s.targets_per_epoch}


@pytest.mark.parametrize("stop", list(STOPS))
def test_a_resumed_run_checkpoints_and_ends_as_an_uninterrupted_one(tmp_path, corpus_file,
                                                                     checkpoints_written, reference, stop):
    """A resumed run checkpoints where an uninterrupted one does (none after its first batch unless due) and
    ends as it, bit for bit; one at an epoch's last batch (lo == targets) resumes with the next shuffle."""
    written, out = checkpoints_written, tmp_path / "b"
    with pytest.raises(Interrupted):
        train_session([corpus_file], cfg(), out, quiet=True, checkpoint_every=1000,
                      hooks=[SignalAfter(STOPS[stop](reference))])
    at = written[-1]  # the interrupt's checkpoint; the periodic ones before it are the reference's
    assert written[:-1] == [d for d in reference.written if d < at]
    if stop.startswith("end of epoch"):
        state, epoch = state_of(out), int(stop[-1])
        assert state["epoch"] == epoch and state["lo"] == state["targets_per_epoch"]
        assert state["done"] == (epoch + 1) * state["targets_per_epoch"] == at
    written.clear()
    resumed = train_session([corpus_file], cfg(), out, quiet=True, resume=True, checkpoint_every=1000)
    assert written == [d for d in reference.written if d > at]
    assert same_bits(reference.model.vectors, load_model(out).vectors)
    assert resumed.losses == reference.result.losses and resumed.examples == reference.result.examples


def test_a_resumed_run_keeps_the_curve_points_of_before_its_interrupt(tmp_path, corpus_file, reference, monkeypatch):
    """--resume gives the learning curve back its points: an interrupted and resumed run has every
    point an uninterrupted one has (the resumed start adds one more, at the interrupt)."""
    def run(*more, resume=False, every=512, with_curve=True, dev=reference.dev):
        train_session([corpus_file], cfg(), tmp_path / "b", quiet=True, resume=resume, hooks=list(more),
                      eval_every=every if with_curve else None, eval_dev=dev if with_curve else None)

    with pytest.raises(Interrupted):
        run(SignalAfter(5))
    # one curve, one way of recording it: another --eval-every, or none, is refused (points of two kinds were mixed)
    with pytest.raises(CheckpointError, match="recorded its learning curve otherwise .every was 512, now 1024"):
        run(resume=True, every=1024)
    with pytest.raises(CheckpointError, match="recorded a learning curve .--eval-every., which this run would drop"):
        run(resume=True, with_curve=False)
    monkeypatch.chdir(reference.dev.parent)
    run(resume=True, dev=Path(reference.dev.name))  # the same dev set by another path: the same curve
    whole, resumed = ([p["examples"] for p in m.info["curve"]["points"]] for m in (reference.model, load_model(tmp_path / "b")))
    assert len(whole) > 4 and set(whole) <= set(resumed) and len(resumed) == len(whole) + 1
    assert resumed == sorted(resumed)


def test_resume_refuses_another_config_or_corpus(tmp_path, corpus_file, make_text, plain_checkpoint):
    out = copy_checkpoint(plain_checkpoint, tmp_path / "m")
    for change, message in ((dict(lr=0.03), r"--lr was 0\.1, now 0\.03"), (dict(epochs=3), "--epochs was 1, now 3")):
        with pytest.raises(CheckpointError, match=message):
            train_session([corpus_file], PLAIN.replace(**change), out, quiet=True, resume=True)
    other = tmp_path / "other.txt"
    other.write_text(make_text(n_docs=6, sents_per_doc=400, seed=12), encoding="utf-8")
    with pytest.raises(CheckpointError, match="another corpus"):
        train_session([other], PLAIN, out, quiet=True, resume=True)
    with pytest.raises(CheckpointError, match="no checkpoint to resume from"):  # none at all
        train_session([corpus_file], PLAIN, tmp_path / "none", quiet=True, resume=True)
    assert not (tmp_path / "none").exists()
    lines = corpus_file.read_text(encoding="utf-8").split("\n")  # the same sizes and words, two lines swapped
    i = next(i for i in range(1000, len(lines)) if lines[i] and lines[i + 1] and lines[i] != lines[i + 1])
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    swapped = tmp_path / "swapped.txt"
    swapped.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(CheckpointError, match="same sizes and words .* another order"):
        train_session([swapped], PLAIN, out, quiet=True, resume=True)
    # a run read in another --encoding, whose text is another: the message names the encoding to resume with
    latin = tmp_path / "latin.txt"
    latin.write_bytes(corpus_file.read_text(encoding="utf-8").replace("the", "th\u00e9").encode("cp1252"))
    with pytest.raises(CheckpointError, match="another corpus .* it read the corpus as utf-8 text, this run as "
                                              "cp1252: resume with --encoding utf-8"):
        train_session([latin], PLAIN, out, quiet=True, resume=True, encoding="cp1252")
    # what is compared is the text read: the same text in UTF-16 resumes
    (utf16 := tmp_path / "utf16.txt").write_text(corpus_file.read_text(encoding="utf-8"), encoding="utf-16")
    resumed = copy_checkpoint(plain_checkpoint, tmp_path / "u")
    train_session([utf16], PLAIN, resumed, quiet=True, resume=True, encoding="utf-16")
    assert resumed.is_dir() and not checkpoint_dir(resumed).exists()
    # without --resume, an existing checkpoint is never overwritten
    with pytest.raises(CheckpointError, match="--resume"):
        train_session([corpus_file], PLAIN, out, quiet=True)
    assert checkpoint_dir(out).exists() and not out.exists()
    mine = tmp_path / "n.checkpoint"  # a user's file where a run's checkpoint goes: named so, never 'delete it'
    mine.write_text("notes")
    with pytest.raises(CheckpointError, match="is where this run's checkpoint goes, and is a file.* move it away") as info:
        train_session([corpus_file], PLAIN, tmp_path / "n", quiet=True)
    assert "delete" not in str(info.value) and mine.read_text() == "notes"
    mine.unlink()
    (mine / "notes.txt").parent.mkdir()  # a folder of the user's there, too
    (mine / "notes.txt").write_text("notes")
    for resume in (False, True):  # with --resume too: not 'a damaged checkpoint, delete it'
        with pytest.raises(CheckpointError, match="and holds 'notes.txt', which scbow-numba did not write; move it away"):
            train_session([corpus_file], PLAIN, tmp_path / "n", quiet=True, resume=resume)
    (tmp_path / "d.checkpoint").symlink_to(tmp_path / "nowhere")
    with pytest.raises(CheckpointError, match="and is a link to nothing; move it away"):
        train_session([corpus_file], PLAIN, tmp_path / "d", quiet=True)
    moved = tmp_path / "elsewhere.checkpoint"  # a checkpoint moved away and linked back: still a checkpoint
    checkpoint_dir(out).rename(moved)
    checkpoint_dir(out).symlink_to(moved)
    with pytest.raises(CheckpointError, match="add --resume"):
        train_session([corpus_file], PLAIN, out, quiet=True)
    checkpoint_dir(out).unlink()
    moved.rename(checkpoint_dir(out))
    # another thread count or device is fine (they change the speed, not the computation)
    check_config(read_meta(checkpoint_dir(out)), PLAIN.replace(threads=2, device="cuda"), checkpoint_dir(out))
    # and so is the same corpus under another name
    copy = tmp_path / "copy.txt"
    shutil.copy(corpus_file, copy)
    train_session([copy], PLAIN, out, quiet=True, resume=True)
    assert load_model(out).dim == 8 and not checkpoint_dir(out).exists()


def test_a_run_into_a_link_has_the_checkpoint_of_its_target(tmp_path, corpus_file, plain_checkpoint):
    """-o LINK and -o TARGET are one output: a run interrupted under one name resumes under the other."""
    out = copy_checkpoint(plain_checkpoint, tmp_path / "m")
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "out"
    link.symlink_to(out)  # dangling: the model is not there yet
    assert checkpoint_dir(link) == checkpoint_dir(out) == tmp_path / "m.checkpoint"
    with pytest.raises(CheckpointError, match="--resume"):  # never overwritten, whatever the name
        train_session([corpus_file], PLAIN, link, quiet=True)
    train_session([corpus_file], PLAIN, link, quiet=True, resume=True)
    assert load_model(out).dim == 8 and link.is_symlink() and not checkpoint_dir(out).exists()
    assert sorted(os.listdir(tmp_path / "links")) == ["out"]
    (tmp_path / "links" / "out.checkpoint").write_text("notes")  # a user's file of that name: no checkpoint
    assert checkpoint_dir(link) == tmp_path / "m.checkpoint"


DAMAGE = {  # how -> what the error names (a state.json that is no JSON: test_reading)
    "state-missing": "(no state.json)", "state-newer": "newer than this scbow-numba's",
    "state-older": "older than this scbow-numba's",
    "state-inconsistent": "inconsistent training state",
    **dict.fromkeys(("state-negative-seconds", "state-negative-loss", "state-done-past-total"),
                    "inconsistent training state"),
    # one damage to the model files: each other is test_formats test_every_damage_to_a_model_is_one_error...
    "nan-vectors": "the vectors hold NaN or inf", "state-of-another-write": "not the matrix its state.json recorded"}


@pytest.mark.parametrize("how", list(DAMAGE))
def test_damaged_checkpoint_is_refused_cleanly(tmp_path, runner, corpus_file, plain_checkpoint, how):
    out = copy_checkpoint(plain_checkpoint, tmp_path / "m")
    ck = checkpoint_dir(out)
    state = ck / "state.json"
    meta = json.loads(state.read_text())
    if how == "state-missing":
        state.unlink()
    elif how in ("state-newer", "state-older"):  # a checkpoint of format 1 (before phases) is refused too
        meta["checkpoint_version"] += 1 if how == "state-newer" else -1
    elif how == "state-inconsistent":
        meta["state"]["phases"]["sentence"]["done"] += 7
    elif how == "state-of-another-write":  # the state of another checkpoint beside these model files
        meta["matrices"]["sentence"] = "0" * 64
    elif how.startswith("state-"):  # a record a resumed run would report as its own
        s = meta["state"]["phases"]["sentence"]
        key, value = {"state-negative-seconds": ("seconds", -1), "state-negative-loss": ("losses", [-0.5] * len(s["losses"])),
                      "state-done-past-total": ("done", s["total"] + 1)}[how]
        s[key] = value
    else:  # nan-vectors
        W = np.load(ck / "vectors.npy")
        W[3, 2] = np.nan
        np.save(ck / "vectors.npy", W)
    if how.startswith("state-") and how != "state-missing":
        state.write_text(json.dumps(meta))
    result = runner.invoke(main, train_args(corpus_file, out, "--dim", "8", "--seed", "1", "--resume"))
    line = assert_clean_error(result)
    assert DAMAGE[how] in line, line  # each damage named for what it is
    assert not out.exists() and ck.exists()  # a damaged checkpoint is reported, not deleted


@pytest.mark.parametrize("threads", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_resumed_run_reaches_the_same_dev_score(tmp_path, gutenberg_slice, monkeypatch, threads):
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
    a = score_set(load_model(tmp_path / "whole").encode, sts).pearson
    b = score_set(load_model(tmp_path / "resumed").encode, sts).pearson
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
    enc = load_corpus(corpus, config.min_count, 0)
    W0 = init_vectors(len(enc.vocab), config, corpus_weights(enc, config))
    remove_common_components(W0, enc, min(config.common_components, config.dim // 10), config.seed)
    start = score_set(Model(enc.vocab, W0, config.to_dict()).encode, sts).pearson
    assert start > 0.5
    assert min(a, b) > start - 0.05, (a, b, start)


# ---------------- what a checkpoint may hold


def fake_checkpoint(ck):
    ck.mkdir()
    for name in ("vectors.npy", "vocab.txt", "config.json", "state.json"):
        (ck / name).write_text("x")
    return ck


def test_a_finished_runs_checkpoint_goes_but_a_users_file_in_it_stays(tmp_path):
    ck = fake_checkpoint(tmp_path / "model.checkpoint")
    remove_checkpoint(ck)
    assert not ck.exists()
    fake_checkpoint(ck)
    (ck / "mydir").mkdir()
    (ck / "mydir" / "notes.txt").write_text("precious")
    said = []
    remove_checkpoint(ck, said.append)
    assert (ck / "mydir" / "notes.txt").read_text() == "precious" and not (ck / "state.json").exists()
    assert said and "did not write" in said[0]
    other = tmp_path / "not-a-checkpoint"  # only a checkpoint's files are ever removed
    other.mkdir()
    (other / "vectors.npy").write_text("mine")
    remove_checkpoint(other)
    assert (other / "vectors.npy").read_text() == "mine"


def test_a_users_file_in_a_checkpoint_stops_its_replacement_not_the_run(tmp_path, corpus_file, plain_checkpoint,
                                                                        checkpoints_written):
    """A user's file put in an interrupted run's checkpoint, resumed with periodic checkpoints: each
    replacement is a warning, the run goes on and saves its model, the file stays."""
    out = copy_checkpoint(plain_checkpoint, tmp_path / "run")
    (checkpoint_dir(out) / "notes.txt").write_text("precious")
    said = []
    train_session([corpus_file], PLAIN, out, quiet=True, resume=True, checkpoint_every="0.000001s", warn=said.append)
    assert len(checkpoints_written) == 10 - 2  # a duration that is always due: after every batch left (of 10)
    assert (out / "vectors.npy").is_file() and (checkpoint_dir(out) / "notes.txt").read_text() == "precious"
    assert any("notes.txt" in line for line in said) and any("did not write" in line for line in said), said


def test_a_checkpoint_whose_header_claims_too_many_rows(tmp_path, runner, healthy):
    out = tmp_path / "run"
    ckpt = shutil.copytree(healthy[0], tmp_path / "run.checkpoint")
    header = np.lib.format.header_data_from_array_1_0(np.zeros((2, 16), np.float32))
    header["shape"] = (10 ** 12, 16)
    with open(ckpt / "vectors.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, header)
        fh.write(b"\0" * 128)
    (ckpt / "state.json").write_text(json.dumps({"checkpoint_version": 2, "state": {}, "config": {}, "corpus": {},
                                                   "matrices": {}}))
    result = runner.invoke(main, ["train", str(healthy[1]), "-o", str(out), *TRAIN, "--resume"])
    error = assert_clean_error(result, exit_code=1)
    assert "--dim" not in error and "memory" not in error
    # the same file as a model: refused as damaged, never allocated
    shutil.copy(ckpt / "vectors.npy", shutil.copytree(healthy[0], tmp_path / "m") / "vectors.npy")
    with pytest.raises(ModelError, match="cannot read vectors"):
        load_model(tmp_path / "m", mmap=False)
