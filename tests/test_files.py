"""What is the tool's own (scbow/files.py): temporaries ``.NAME.tmp-PID-RANDOM`` beside their output,
a dead writer's removed by the next write; outputs replaced in one step; a non-empty directory not of the
output's kind refused (each kind says what makes one: its own module); a link written through, kept."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import TRAIN, assert_clean_error, train_args

from scbow import files, outputs
from scbow.cli import main
from scbow.errors import CorpusError, ModelError
from scbow.files import atomic_dir, atomic_file, leftovers, output_path, remove_leftovers
from scbow.outputs import kind_of, refuse_inside_ours, refuse_overwrite
from scbow.training.cache import MARKER

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
    assert files.writer_alive(os.getpid())
    assert files.writer_alive(1)  # not ours to signal: it runs all the same
    assert not files.writer_alive(dead_pid())


# -- files and directories: replaced whole ----------------------------------------------


def test_a_file_is_replaced_whole_or_left_as_it_was_and_made_with_the_umasks_mode(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old")
    keep = [".out.txt.tmp-mynotes1", ".out.txt.tmp-0-abcdefgh", "out.txt.bak"]  # a user's, named like no temporary
    for name in keep:
        (tmp_path / name).write_text("mine")
    with atomic_file(out) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(f".out.txt.tmp-{os.getpid()}-")
        tmp.write_text("new")
        assert out.read_text() == "old"
    assert out.read_text() == "new"
    with pytest.raises(RuntimeError), atomic_file(out) as tmp:
        tmp.write_text("half")
        raise RuntimeError
    assert out.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == sorted(keep + ["out.txt"])
    left = tmp_path / f".out.txt.tmp-{dead_pid()}-0123abcd"
    left.write_text("half")
    with atomic_file(out) as live:  # the next writer sweeps a dead writer's temporary, never a live one's
        live.write_text("last")
        with atomic_file(out) as tmp:
            tmp.write_text("first")
        assert live.exists() and not left.exists()
    assert out.read_text() == "last"
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


def test_a_directory_is_replaced_whole_by_one_of_its_kind_and_another_kind_kept(tmp_path):
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_a_directory_is_swapped_in_one_step_so_a_kill_never_leaves_neither(tmp_path, monkeypatch):
    """On Linux the old directory and the new one trade places in one rename (RENAME_EXCHANGE): with
    the two-rename fallback broken, the replacement still happens, and nothing else is left."""
    out = tmp_path / "m"
    with atomic_dir(out) as tmp:
        (tmp / "a.txt").write_text("one")

    def no_rename(*args):
        raise AssertionError("renamed aside: a kill here would leave nothing at the output")

    monkeypatch.setattr(os, "rename", no_rename)
    with atomic_dir(out, same_kind=lambda d: None) as tmp:
        (tmp / "a.txt").write_text("two")
    assert (out / "a.txt").read_text() == "two" and sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    with pytest.raises(FileNotFoundError):  # a missing side: an error, and nothing moved
        files.exchange(tmp_path / "none", out)
    assert (out / "a.txt").read_text() == "two"


# -- what is ours: each kind says, in its own module --------------------------------------


def test_each_kind_of_output_is_told_by_its_own_module(tmp_path, good_model):
    assert kind_of(good_model) == "a model directory"
    from test_checkpoint import fake_checkpoint

    assert kind_of(ckpt := fake_checkpoint(tmp_path / "ckpt")) == "a training checkpoint"
    bare = tmp_path / "bare-ckpt"  # a checkpoint's matrix and state alone
    bare.mkdir()
    for name in ("vectors.npy", "state.json"):
        (bare / name).write_text("x")
    assert kind_of(bare) == "a training checkpoint"
    index = tmp_path / "index"
    index.mkdir()
    (index / "index.json").write_text("{}")
    (index / "vectors.faiss").write_text("")
    assert kind_of(index) == "a sentence index"
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "manifest.json").write_text('{"name": "webapp"}')
    (shards / "plan.json").write_text('{"steps": []}')
    assert kind_of(shards) is None  # a manifest.json (and a plan.json of its own) is any web project's
    (shards / "plan.json").write_text(json.dumps({"digest": "abc", "blocks": []}))
    assert kind_of(shards) == "a directory of embedding shards"  # a plan of ours
    (shards / "plan.json").unlink()
    (shards / "shard-000000.npy").write_text("")
    assert kind_of(shards) == "a directory of embedding shards"
    entry = tmp_path / ("0" * 24)
    entry.mkdir()
    (entry / MARKER).write_text("x")
    assert kind_of(entry) == "a corpus cache entry"
    assert kind_of(tmp_path) is None
    for parent in (good_model, ckpt, bare, index, shards, entry):
        with pytest.raises(ModelError, match=f"is inside {parent}, {kind_of(parent)}; refusing to write into it"):
            refuse_inside_ours(parent / "deeper" / "out.npy")
        with pytest.raises(ModelError, match=f"is inside {parent}, {kind_of(parent)}"):
            outputs.check_output_file(parent / "out.txt", "out.txt")
        refuse_inside_ours(parent / ".." / "beside.npy")  # read as written, its parents would include the output


def test_every_kind_is_known_and_files_names_no_file_of_a_higher_layer():
    registering = sorted(
        ".".join(path.relative_to(REPO).with_suffix("").parts)
        for path in (REPO / "scbow").rglob("*.py") if "@register_kind" in path.read_text(encoding="utf-8"))
    assert registering == sorted(outputs.KIND_MODULES)
    source = (REPO / "scbow" / "files.py").read_text(encoding="utf-8")
    for name in ("vectors.npy", "vocab.txt", "config.json", "state.json", "index.json", "vectors.faiss",
                 "manifest.json", "plan.json", "shard-", ".scbow-corpus-cache", "setxattr", "flock"):
        assert name not in source, name
    # ctypes only for the one call Python lacks, renameat2's exchange (test_a_directory_is_swapped_in_one_step...)
    assert source.count("ctypes") == source.split("def exchange", 1)[1].split("\ndef ", 1)[0].count("ctypes") == 3


# -- outputs through symbolic links: followed, the link stays -----------------------------


def test_a_file_output_through_a_link_replaces_the_target_and_keeps_the_link(tmp_path):
    """A dangling link creates its target, only where the target's folder exists."""
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
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to(tmp_path / "new.txt")
    with atomic_file(dangling) as tmp:
        tmp.write_text("made")
    assert dangling.is_symlink() and (tmp_path / "new.txt").read_text() == "made"
    far = tmp_path / "far.txt"
    far.symlink_to(tmp_path / "missing" / "deeper" / "x.txt")
    with pytest.raises(ModelError, match="whose folder does not exist"):
        output_path(far)
    for atomic in (atomic_file, atomic_dir):
        with pytest.raises(ModelError, match="whose folder does not exist"), atomic(far) as tmp:
            pass
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("where", ["same file system", "/dev/shm"])
def test_train_prepare_and_export_write_through_a_link(tmp_path, runner, small_corpus_file, healthy, where):
    """Made, then replaced, at the links' targets: on another file system too (no "Invalid cross-device link"); a
    link into a folder that does not exist is refused, and nothing is made."""
    if where == "/dev/shm" and (not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev):
        pytest.skip("no second file system (/dev/shm) to link onto")
    real = Path(tempfile.mkdtemp(dir="/dev/shm")) if where == "/dev/shm" else tmp_path / "real"
    real.mkdir(exist_ok=True)
    corpus, links = small_corpus_file, ["model", "out.txt", "st", "v.txt"]
    exports = {"st": "sentence-transformers", "v.txt": "word2vec"}  # model2vec: the same folder writer

    def export(out):
        return runner.invoke(main, ["export", "-m", str(healthy[0]), "--format", exports[out.name], "-o", str(out)])

    try:
        for link in links:
            (tmp_path / link).symlink_to(real / link)  # dangling: each command makes its target
        raw = tmp_path / "raw.txt"
        for text in ("One sentence.", "A second document."):  # made, then replaced
            result = runner.invoke(main, train_args(corpus, tmp_path / "model"))
            assert result.exit_code == 0, result.output
            assert kind_of(real / "model") == "a model directory"
            raw.write_text(text + "\n")
            result = runner.invoke(main, ["prepare", str(raw), "-o", str(tmp_path / "out.txt"), "--segmenter", "lines"])
            assert result.exit_code == 0, result.output
            assert (real / "out.txt").read_text() == text + "\n"
            for out in exports:
                assert export(tmp_path / out).exit_code == 0
            assert (real / "st").is_dir() and (real / "v.txt").is_file()
            assert sorted(p.name for p in real.iterdir()) == links  # no temporary beside the targets
            assert all((tmp_path / link).is_symlink() and temporaries(tmp_path, link) == [] for link in links)
    finally:
        shutil.rmtree(real)
    (far := tmp_path / "far").mkdir()
    for link in ("model", *exports):
        (far / link).symlink_to(tmp_path / "nowhere" / link)
    assert_clean_error(runner.invoke(main, train_args(corpus, far / "model")), "whose folder does not exist")
    for out in exports:
        assert_clean_error(export(far / out), "-o", "is a symbolic link to", "whose folder does not exist", exit_code=1)
    assert not (tmp_path / "nowhere").exists()


# -- every command's outputs go through these rules (one CLI test each) ------------------


def snapshot(directory: Path) -> dict:
    return {p.relative_to(directory): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_no_command_writes_inside_a_model(tmp_path, runner, healthy):
    """Every command that writes, with its output inside a model (every other kind of output
    is refused alike: test_each_kind_of_output_is_told_by_its_own_module)."""
    model, corpus = healthy
    target = tmp_path / "target"
    shutil.copytree(model, target)
    before = snapshot(target)
    (tmp_path / "lines.txt").write_text("the cat sat\n")
    m = str(model)
    commands = {
        "prepare over vectors.npy": ["prepare", corpus, "-o", target / "vectors.npy", "--segmenter", "lines", "-q"],
        "prepare beside": ["prepare", corpus, "-o", target / "corpus.txt", "--segmenter", "lines", "-q"],
        "embed": ["embed", "-m", m, tmp_path / "lines.txt", "-o", target / "e.npy", "-q"],
        "embed --missing": ["embed", "-m", m, tmp_path / "lines.txt", "-o", tmp_path / "e.npy",
                            "--missing", target / "missing.txt", "-q"],
        "export": ["export", "-m", m, "-o", target / "vectors.txt"],
        "export deeper": ["export", "-m", m, "-o", target / "sub" / "vectors.txt"],
        "train": ["train", corpus, "-o", target / "sub", "--dim", "8", "--min-count", "1", "-q", "--threads", "1"],
        "plot": ["plot", m, "-o", target / "curve.png"],
    }
    for name, args in commands.items():
        result = runner.invoke(main, [str(a) for a in args])
        if name == "export deeper":
            assert result.exit_code != 0 and "Traceback" not in result.output, result.output
        else:
            assert_clean_error(result, "is inside", f"{target}", "refusing to write into it")
        assert snapshot(target) == before, name
    assert not (tmp_path / "e.npy").exists()


def test_an_output_that_is_a_pipe_or_a_device_is_never_replaced(tmp_path, runner, healthy):
    """Every command that writes a file, over a FIFO; check_output_file, which they call, over a device too."""
    from test_reader import _Alarm

    model, corpus = healthy
    (tmp_path / "a.txt").write_text("the cat sat\n")
    for name in ("o.npy", "o.txt", "m.txt"):
        os.mkfifo(tmp_path / name)
    m = str(model)
    for args in (["export", "-m", m, "-o", tmp_path / "o.txt"],
                 ["embed", "-m", m, tmp_path / "a.txt", "-o", tmp_path / "o.npy", "-q"],
                 ["embed", "-m", m, tmp_path / "a.txt", "-o", tmp_path / "e.npy", "--missing", tmp_path / "m.txt",
                  "-q"],
                 ["prepare", corpus, "-o", tmp_path / "o.txt", "--segmenter", "lines", "-q"]):
        with _Alarm():
            assert_clean_error(runner.invoke(main, [str(a) for a in args]), "not a regular file")
    for name in ("o.npy", "o.txt", "m.txt"):
        assert not (tmp_path / name).is_file()
    assert not (tmp_path / "e.npy").exists()
    (tmp_path / "device").symlink_to("/dev/null")
    for path in (tmp_path / "o.txt", tmp_path / "device"):
        with pytest.raises(CorpusError, match="not a regular file"):
            outputs.check_output_file(path, "x.txt", CorpusError)
    assert (tmp_path / "device").is_symlink() and not os.path.isfile("/dev/null")


def test_outputs_with_no_name_of_their_own(tmp_path, runner, healthy, monkeypatch):
    model, corpus = healthy
    (tmp_path / "a.txt").write_text("the cat sat\n")
    for out in ("/", ".", ".."):
        assert_clean_error(runner.invoke(main, ["embed", "-m", str(model), str(tmp_path / "a.txt"), "-o", out]),
                           "is a directory; give a file name")
    empty = tmp_path / "here"
    empty.mkdir()
    monkeypatch.chdir(empty)  # -o . is the current directory: a model may go there while it is empty
    result = runner.invoke(main, train_args(corpus, ".", "--no-cache"))
    assert result.exit_code == 0, result.output
    assert (empty / "vectors.npy").is_file() and not list(tmp_path.glob("*.checkpoint"))


def test_outputs_that_are_inputs_are_refused(tmp_path, runner, healthy):
    model = shutil.copytree(healthy[0], tmp_path / "model")
    text = tmp_path / "in.txt"
    text.write_text("the cat sat\nthe dog ran\n")
    os.link(text, tmp_path / "hard.txt")
    (tmp_path / "model-link").symlink_to(model)
    cases = [
        (["embed", "-m", model, text, "-o", text], "INPUT"),
        (["embed", "-m", model, text, "-o", tmp_path / "hard.txt"], "INPUT"),  # by inode: a link to it too
        (["embed", "-m", model, text, "-o", tmp_path / "o.npy", "--missing", text], "INPUT"),
        (["embed", "-m", model, text, "-o", model / "vectors.npy"], "vectors.npy of the model"),
        (["embed", "-m", model, text, "-o", tmp_path / "o.npy", "--missing", model / "vocab.txt"], "vocab.txt"),
        (["export", "-m", model, "-o", model / "vectors.npy"], "vectors.npy of the model"),
        (["export", "-m", tmp_path / "model-link", "-o", model / "config.json"], "config.json of the model"),
        (["plot", "-m", model, "-o", model / "config.json"], "config.json of the model"),
        (["train", model / "vocab.txt", "-o", model, *TRAIN], "the corpus"),
        (["train", healthy[1], "-o", tmp_path / "m2", *TRAIN], None),
        (["train", tmp_path / "m2", "-o", tmp_path / "m3", *TRAIN], "not a corpus"),
        # a folder in a corpus folder is not read (train reads its files): a model there, twice
        (["train", tmp_path / "books", "-o", tmp_path / "books" / "m4", *TRAIN], None),
        (["train", tmp_path / "books", "-o", tmp_path / "books" / "m4", *TRAIN], None),
    ]
    (tmp_path / "books").mkdir()
    shutil.copy(healthy[1], tmp_path / "books" / "book.txt")
    snapshot = {p: p.read_bytes() for p in [text, *model.iterdir()]}
    for argv, fragment in cases:
        result = runner.invoke(main, [str(a) for a in argv])
        if fragment is None:
            assert result.exit_code == 0, result.output
        else:
            assert_clean_error(result, fragment, exit_code=1)
    assert {p: p.read_bytes() for p in snapshot} == snapshot
    assert not (tmp_path / "o.npy").exists() and not (tmp_path / "m3").exists()
    assert sorted(os.listdir(tmp_path / "books")) == ["book.txt", "m4"]
    a = tmp_path / "a.txt"
    a.write_text("x")
    refuse_overwrite({"-o": tmp_path / "b.txt"}, {"INPUT": a})  # a new file: fine
    with pytest.raises(ModelError, match="is INPUT"):
        refuse_overwrite({"-o": tmp_path / "sub" / ".." / "a.txt"}, {"INPUT": a})
    with pytest.raises(ModelError, match="the directory holding"):
        refuse_overwrite({"-o": tmp_path}, {"INPUT": a}, replaces_dirs=True)
    refuse_overwrite({"-o": tmp_path}, {"INPUT": a})  # a file command reports "is a directory" itself
    # inside an input folder, at any depth, existing or not: the next run would read it as input
    (tmp_path / "corpus" / "deep").mkdir(parents=True)
    for out in (tmp_path / "corpus" / "model", tmp_path / "corpus" / "deep" / "x" / "out.txt"):
        with pytest.raises(ModelError, match=r"is inside the corpus \(.*corpus\), which is read as input"):
            refuse_overwrite({"-o": out}, {"the corpus": tmp_path / "corpus"}, reads_folders=True)
    refuse_overwrite({"-o": tmp_path / "corpus2"}, {"the corpus": tmp_path / "corpus"}, reads_folders=True)  # beside it
    refuse_overwrite({"-o": tmp_path / "corpus" / ".x" / "o.txt"}, {"the corpus": tmp_path / "corpus"},
                     reads_folders=True)  # below a hidden name, which the walk skips
    (tmp_path / "corpus" / ".o.txt").write_text("an earlier run's")  # hidden in it: not read, so not an input
    refuse_overwrite({"-o": tmp_path / "corpus" / ".o.txt"}, {"the corpus": tmp_path / "corpus"}, reads_folders=True)
    refuse_overwrite({"-o": tmp_path / "corpus" / "deep" / "o"}, {"INPUT": tmp_path / "corpus"})  # a command reads no folder
    (tmp_path / "corpus" / "book.txt").write_text("One sentence. Another one.\n")
    result = runner.invoke(main, ["prepare", str(tmp_path / "corpus"), "-o", str(tmp_path / "corpus" / "out.txt")])
    assert_clean_error(result, "is inside the input folder", exit_code=1)


def test_output_where_nobody_may_write(tmp_path, runner, corpus_file):
    (tmp_path / "plain").write_text("a file, not a directory")
    assert_clean_error(runner.invoke(main, train_args(corpus_file, tmp_path / "plain" / "model")), "cannot create directory")
    # /sys refuses new entries even to root, while os.access() says it is writable
    target = Path("/sys/scbow-robustness-test-model")
    if Path("/sys").is_dir() and not target.exists():
        assert_clean_error(runner.invoke(main, train_args(corpus_file, target)), "not writable")
        assert not target.exists()
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        assert_clean_error(runner.invoke(main, train_args(corpus_file, d / "model")), "not writable")
        assert os.listdir(d) == []
    finally:
        d.chmod(0o755)


def test_every_output_follows_the_umask(tmp_path, runner, healthy):
    trained, umask = healthy[0], 0o077  # others: test_a_file_is_replaced_whole_or_left_as_it_was_and_made_with_the_umasks_mode
    lines = tmp_path / "lines.txt"
    lines.write_text("the cat sat\nthe dog ran\n")
    old = os.umask(umask)
    try:
        for argv in (["export", "-m", trained, "-o", tmp_path / "v.txt"],
                     ["embed", "-m", trained, lines, "-o", tmp_path / "e.npy", "-q"],
                     ["train", healthy[1], "-o", tmp_path / "x", *TRAIN, "--no-cache"]):
            result = runner.invoke(main, [str(a) for a in argv])
            assert result.exit_code == 0, result.output
    finally:
        os.umask(old)
    for path, base in ((tmp_path / "v.txt", 0o666), (tmp_path / "e.npy", 0o666), (tmp_path / "e.missing.txt", 0o666),
                       (tmp_path / "x", 0o777), (tmp_path / "x" / "vectors.npy", 0o666)):
        assert stat.S_IMODE(path.stat().st_mode) == base & ~umask, (path, oct(path.stat().st_mode))
