"""The one rule for what is the tool's own (scbow/files.py), tested where it lives.

A temporary is ``.NAME.tmp-PID-RANDOM`` beside its output; the next write to the same output
removes the temporaries of that output whose writer is dead, and nothing else; outputs are
replaced in one step (a file by ``os.replace``, a directory renamed aside, the new one renamed
in, the old one removed); a non-empty directory that is not an output of the same kind is
refused. Each kind of output says in its own module what makes a directory one of its kind.
An output given as a symbolic link is written through it: the link's target is replaced,
the temporary made beside the target, the link left in place.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import make_runner, synthetic_text

from scbow import files
from scbow.errors import CorpusError, ModelError
from scbow.files import atomic_dir, atomic_file, kind_of, leftovers, output_path, refuse_inside_ours, remove_leftovers

REPO = Path(__file__).resolve().parents[1]


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def temporaries(directory: Path, name: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(f".{name}.tmp-"))


# -- leftovers: our name, and a writer that is dead ---------------------------------------


def test_only_the_temporaries_of_dead_writers_of_that_output_are_removed(tmp_path):
    dead = dead_pid()
    (tmp_path / f".out.tmp-{dead}-0123abcd").write_text("half")  # a killed writer's file
    (tmp_path / f".out.tmp-{dead}-4567abcd").mkdir()  # and directory, with what it held
    (tmp_path / f".out.tmp-{dead}-4567abcd" / "vectors.npy").write_text("x")
    (tmp_path / f".out.tmp-{dead}-89abcdef").symlink_to(tmp_path / "elsewhere")  # a link: unlinked, never followed
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep").write_text("mine")
    live = [f".out.tmp-{os.getpid()}-0123abcd", ".out.tmp-1-0123abcd"]  # this process; init, alive
    others = [".out.tmp-notes", f".out.tmp-{dead}-abc", f".other.tmp-{dead}-0123abcd", f".out.old-{dead}-0123abcd",
              f"out.tmp-{dead}-0123abcd"]
    for name in live + others:
        (tmp_path / name).write_text("keep")
    assert len(leftovers(tmp_path / "out")) == 3
    removed = remove_leftovers(tmp_path / "out")
    assert sorted(p.name for p in removed) == sorted([f".out.tmp-{dead}-0123abcd", f".out.tmp-{dead}-4567abcd",
                                                      f".out.tmp-{dead}-89abcdef"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(live + others + ["elsewhere"])
    assert (tmp_path / "elsewhere" / "keep").read_text() == "mine"


def test_a_writer_alive_is_any_process_that_runs():
    assert files.writer_alive(os.getpid())
    assert files.writer_alive(1)  # not ours to signal: it runs all the same
    assert not files.writer_alive(dead_pid())


# -- files ------------------------------------------------------------------------------


def test_a_file_is_replaced_whole_or_left_as_it_was(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old")
    with atomic_file(out) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(f".out.txt.tmp-{os.getpid()}-")
        tmp.write_text("new")
        assert out.read_text() == "old"
    assert out.read_text() == "new"
    with pytest.raises(RuntimeError), atomic_file(out) as tmp:
        tmp.write_text("half")
        raise RuntimeError
    assert out.read_text() == "new" and temporaries(tmp_path, "out.txt") == []


def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path):
    before = os.umask(0o027)
    try:
        with atomic_file(tmp_path / "f") as tmp:
            tmp.write_text("x")
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "a").write_text("x")
    finally:
        os.umask(before)
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o750


# -- directories ------------------------------------------------------------------------


def test_a_directory_is_replaced_whole_by_one_of_its_kind(tmp_path):
    out = tmp_path / "m"
    for content in ("one", "two"):
        with atomic_dir(out, same_kind=lambda d: None) as tmp:
            (tmp / "a.txt").write_text(content)
        assert (out / "a.txt").read_text() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    with pytest.raises(RuntimeError), atomic_dir(out, same_kind=lambda d: None) as tmp:
        (tmp / "a.txt").write_text("half")
        raise RuntimeError
    assert (out / "a.txt").read_text() == "two" and sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_a_directory_of_another_kind_is_refused_and_kept(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("a user's file")
    refuse = lambda d: "holds what is not ours"  # noqa: E731
    with pytest.raises(FileExistsError, match="holds what is not ours"), atomic_dir(out, same_kind=refuse) as tmp:
        (tmp / "a.txt").write_text("x")
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]
    assert temporaries(tmp_path, "mine") == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError, match="not a directory"), atomic_dir(tmp_path / "file") as tmp:
        pass
    empty = tmp_path / "empty"
    empty.mkdir()
    with atomic_dir(empty, same_kind=refuse) as tmp:  # an empty directory holds nothing to lose
        (tmp / "a.txt").write_text("x")
    assert (empty / "a.txt").is_file()


# -- what is ours: each kind says, in its own module --------------------------------------


def test_each_kind_of_output_is_told_by_its_own_module(tmp_path, good_model):
    from scbow.training.cache import MARKER

    assert kind_of(good_model) == "a model directory"
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    for name in ("vectors.npy", "vocab.txt", "config.json", "state.json"):
        (ckpt / name).write_text("x")
    assert kind_of(ckpt) == "a training checkpoint"
    index = tmp_path / "index"
    index.mkdir()
    (index / "index.json").write_text("{}")
    (index / "vectors.faiss").write_text("")
    assert kind_of(index) == "a sentence index"
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "manifest.json").write_text("{}")
    assert kind_of(shards) is None  # a manifest.json alone is any web project's
    (shards / "shard-000000.npy").write_text("")
    assert kind_of(shards) == "a directory of embedding shards"
    entry = tmp_path / ("0" * 24)
    entry.mkdir()
    (entry / MARKER).write_text("x")
    assert kind_of(entry) == "a corpus cache entry"
    assert kind_of(tmp_path) is None
    for parent in (good_model, ckpt, index, shards, entry):
        with pytest.raises(ModelError, match=f"is inside {parent}"):
            refuse_inside_ours(parent / "deeper" / "out.npy")


def test_every_module_that_registers_a_kind_is_listed_so_every_kind_is_known():
    registering = sorted(
        ".".join(path.relative_to(REPO).with_suffix("").parts)
        for path in (REPO / "scbow").rglob("*.py") if "@register_kind" in path.read_text(encoding="utf-8"))
    assert registering == sorted(files.KIND_MODULES)


def test_files_names_no_file_of_a_higher_layer():
    source = (REPO / "scbow" / "files.py").read_text(encoding="utf-8")
    for name in ("vectors.npy", "vocab.txt", "config.json", "state.json", "index.json", "vectors.faiss",
                 "manifest.json", "plan.json", "shard-", ".scbow-corpus-cache", "setxattr", "flock", "ctypes"):
        assert name not in source, name


# -- outputs through symbolic links: followed, the link stays -----------------------------


def test_a_file_output_through_a_link_replaces_the_target_and_keeps_the_link(tmp_path):
    target_dir = tmp_path / "real"
    target_dir.mkdir()
    (target_dir / "out.txt").write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target_dir / "out.txt")
    with atomic_file(link) as tmp:
        assert tmp.parent == target_dir  # beside the target: the rename stays on its file system
        tmp.write_text("new")
    assert link.is_symlink() and (target_dir / "out.txt").read_text() == "new"
    assert temporaries(target_dir, "out.txt") == [] and sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "real"]


def test_a_dangling_link_creates_its_target_only_where_its_folder_exists(tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "new.txt")
    with atomic_file(link) as tmp:
        tmp.write_text("made")
    assert link.is_symlink() and (tmp_path / "new.txt").read_text() == "made"
    far = tmp_path / "far.txt"
    far.symlink_to(tmp_path / "missing" / "deeper" / "x.txt")
    with pytest.raises(ModelError, match="whose folder does not exist"):
        output_path(far)
    with pytest.raises(ModelError, match="whose folder does not exist"), atomic_dir(far) as tmp:
        pass
    assert not (tmp_path / "missing").exists()


def train_args(corpus: Path, out: Path) -> list[str]:
    return ["train", str(corpus), "-o", str(out), "--dim", "8", "--epochs", "1", "--min-count", "1", "--threads", "1",
            "--word-passes", "0", "-q"]


def test_train_and_prepare_write_through_a_link(tmp_path):
    from scbow.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(synthetic_text(n_docs=4, sents_per_doc=30, seed=3), encoding="utf-8")
    real = tmp_path / "real"
    real.mkdir()
    runner = make_runner()
    link = tmp_path / "model"
    link.symlink_to(real / "model")  # dangling: train makes the target
    for _ in range(2):  # a new model, then one replacing it
        result = runner.invoke(main, train_args(corpus, link))
        assert result.exit_code == 0, result.output
        assert link.is_symlink() and kind_of(real / "model") == "a model directory"
        assert temporaries(real, "model") == [] and temporaries(tmp_path, "model") == []
    far = tmp_path / "far"
    far.symlink_to(tmp_path / "nowhere" / "model")
    result = runner.invoke(main, train_args(corpus, far))
    assert result.exit_code == 1 and "whose folder does not exist" in result.output
    assert not (tmp_path / "nowhere").exists()

    raw = tmp_path / "raw.txt"
    raw.write_text("One sentence here. And another one.\n\nA second document.\n", encoding="utf-8")
    (real / "prepared.txt").write_text("old")
    plink = tmp_path / "prepared.txt"
    plink.symlink_to(real / "prepared.txt")
    result = runner.invoke(main, ["prepare", str(raw), "-o", str(plink)])
    assert result.exit_code == 0, result.output
    assert plink.is_symlink() and "second document" in (real / "prepared.txt").read_text()
    assert temporaries(real, "prepared.txt") == []
    dangling = tmp_path / "p2.txt"
    dangling.symlink_to(tmp_path / "nowhere" / "p2.txt")
    result = runner.invoke(main, ["prepare", str(raw), "-o", str(dangling)])
    assert result.exit_code == 1 and "whose folder does not exist" in result.output
    assert not (tmp_path / "nowhere").exists()


def test_a_link_onto_another_file_system_is_written_there(tmp_path):
    import shutil
    import tempfile

    from scbow.cli import main

    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system (/dev/shm) to link onto")
    far = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        corpus = tmp_path / "corpus.txt"
        corpus.write_text(synthetic_text(n_docs=4, sents_per_doc=30, seed=3), encoding="utf-8")
        (tmp_path / "model").symlink_to(far / "model")
        (tmp_path / "out.txt").symlink_to(far / "out.txt")
        runner = make_runner()
        for _ in range(2):  # made, then replaced, across the file systems (no "Invalid cross-device link")
            result = runner.invoke(main, train_args(corpus, tmp_path / "model"))
            assert result.exit_code == 0, result.output
            result = runner.invoke(main, ["prepare", str(corpus), "-o", str(tmp_path / "out.txt")])
            assert result.exit_code == 0, result.output
        assert kind_of(far / "model") == "a model directory" and (far / "out.txt").stat().st_size > 0
        assert sorted(p.name for p in far.iterdir()) == ["model", "out.txt"]
        assert (tmp_path / "model").is_symlink() and (tmp_path / "out.txt").is_symlink()
    finally:
        shutil.rmtree(far)


# -- the leak: a save killed at any point leaves nothing the next run keeps ---------------

SAVER = """
import sys
import numpy as np
from scbow.text.vocab import Vocab
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model
words = [f"w{i}" for i in range(20000)]
model = Model(Vocab(words, np.arange(len(words), 0, -1)), np.ones((len(words), 64), np.float32), {"dim": 64}, {})
print("ready", flush=True)
while True:
    save_model(model, sys.argv[1])
"""


def test_saves_killed_at_random_points_leave_nothing_after_the_next_run(tmp_path):
    from scbow.cli import main

    out = tmp_path / "m"
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    left = 0
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(out)], stdout=subprocess.PIPE, env=env)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.3))  # a save takes some milliseconds: somewhere in one
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left += bool(temporaries(tmp_path, "m"))  # a temporary, or the old model set aside
    assert left  # (each kill lands where a save has one about 4 times in 5)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(synthetic_text(n_docs=4, sents_per_doc=30, seed=3), encoding="utf-8")
    result = make_runner().invoke(main, train_args(corpus, out))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "m"]
    assert json.loads((out / "config.json").read_text())["model_id"]
    assert np.load(out / "vectors.npy").shape[1] == 8


def test_a_user_file_named_like_no_temporary_survives_every_write(tmp_path):
    out = tmp_path / "out.npy"
    keep = [".out.npy.tmp-mynotes1", ".out.npy.tmp-0-abcdefgh", "out.npy.bak"]
    for name in keep:
        (tmp_path / name).write_text("mine")
    with atomic_file(out) as tmp:
        tmp.write_text("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep + ["out.npy"])


def test_check_output_file_refuses_a_pipe_and_a_path_inside_ours(tmp_path, good_model):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(CorpusError, match="not a regular file"):
        files.check_output_file(fifo, "x.txt", CorpusError)
    with pytest.raises(ModelError, match="a model directory"):
        files.check_output_file(good_model / "x.npy", "x.npy")
