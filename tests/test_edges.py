"""The newer edges as safe as the core (hostile inputs by class, several members each).

1. Nothing is removed that the tool cannot prove it wrote: ``cache --clear`` on a folder
   that holds anything else removes nothing, never follows a link out, and clears only
   its own entries.
2. Every reader of text turns every decompression failure (truncated or corrupt gzip,
   bzip2, xz) into the one damaged-file line naming the file.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_clean_error
from test_files import dead_pid

from scbow.cli import main
from scbow.errors import CorpusError
from scbow.text.reader import open_bytes, open_text
from scbow.training.cache import MARKER, MARKER_TEXT, cache_entries, clear_cache, describe, is_ours, remove_entry

# tab-separated pairs, so that one file is a corpus, a sentence file and a pairs file
TEXT = "".join(f"the cat number {i} sat on the mat\tthe dog ran far away {i}\n" for i in range(6000)).encode()


def _flip(data: bytes, lo: int, hi: int) -> bytes:
    b = bytearray(data)
    for i in range(lo, min(hi, len(b))):
        b[i] ^= 0x55
    return bytes(b)


DAMAGE = {  # name -> (file suffix, damaged bytes, the format named in the error)
    "gzip-truncated": (".gz", lambda: gzip.compress(TEXT)[: len(gzip.compress(TEXT)) // 2], "gzip"),
    "gzip-corrupt-deflate": (".gz", lambda: _flip(gzip.compress(TEXT), 40, 80), "gzip"),  # a zlib.error
    "gzip-bad-crc": (".gz", lambda: _flip(gzip.compress(TEXT), len(gzip.compress(TEXT)) - 8,
                                          len(gzip.compress(TEXT)) - 6), "gzip"),
    "bzip2-truncated": (".bz2", lambda: bz2.compress(TEXT)[: len(bz2.compress(TEXT)) // 2], "bzip2"),
    "bzip2-corrupt": (".bz2", lambda: _flip(bz2.compress(TEXT), 40, 80), "bzip2"),
    "xz-truncated": (".xz", lambda: lzma.compress(TEXT)[: len(lzma.compress(TEXT)) // 2], "xz"),
    "xz-corrupt": (".xz", lambda: _flip(lzma.compress(TEXT), 60, 90), "xz"),
    "xz-header-only": (".xz", lambda: lzma.compress(TEXT)[:12], "xz"),
}


def damaged(tmp_path: Path, kind: str) -> tuple[Path, str]:
    suffix, make, fmt = DAMAGE[kind]
    path = tmp_path / f"damaged{suffix}"
    path.write_bytes(make())
    return path, fmt



# ---------------------------------------------------------------- 2. damaged compressed text


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_the_one_reader_names_every_damaged_file(tmp_path, kind):
    path, fmt = damaged(tmp_path, kind)
    with pytest.raises(CorpusError) as info:
        with open_text(path) as fh:
            for _ in fh:
                pass
    assert str(info.value).startswith(f"{path}: damaged or truncated {fmt} file (")
    with pytest.raises(CorpusError, match=f"damaged or truncated {fmt} file"):
        with open_bytes(path) as fh:
            while fh.read(1 << 12):
                pass


def test_the_one_reader_reads_what_it_should(tmp_path):
    plain = tmp_path / "a.txt"
    plain.write_bytes(b"\xef\xbb\xbfone\r\ntwo\rthree\n")  # a byte order mark, three kinds of line end
    for path, data in [(plain, plain.read_bytes()), (tmp_path / "a.gz", gzip.compress(plain.read_bytes())),
                       (tmp_path / "a.bz2", bz2.compress(plain.read_bytes())),
                       (tmp_path / "a.xz", lzma.compress(plain.read_bytes()))]:
        path.write_bytes(data)
        with open_text(path) as fh:
            assert fh.read().split("\n") == ["one", "two", "three", ""], path
        with open_bytes(path) as fh:
            assert fh.read() == plain.read_bytes()
    for bad, fragment in [(tmp_path / "nope.txt", "no such file"), (tmp_path, "is a directory")]:
        with pytest.raises(CorpusError, match=fragment):
            open_text(bad)


def _every_text_reader(model: Path, text: Path, tmp: Path) -> dict:
    """Each command that reads a text file the user gives, reading ``text``."""
    return {
        "train": ["train", text, "-o", tmp / "out-model", "--dim", "8", "--min-count", "1", "--threads", "1",
                  "-q", "--no-cache"],
        "embed": ["embed", "-m", model, text, "-o", tmp / "out.npy", "-q"],
        "neighbors --in": ["neighbors", "-m", model, "--sentence", "the cat", "--in", text],
        "similarity --pairs": ["similarity", "-m", model, "--pairs", text],
        "prepare": ["prepare", text, "-o", tmp / "prepared.txt", "--segmenter", "lines", "-q"],
        "vectors file": ["similarity", "-m", text, "the cat", "the dog"],
    }


@pytest.mark.parametrize("kind", ["gzip-truncated", "gzip-corrupt-deflate", "bzip2-truncated", "xz-corrupt"])
def test_every_command_gives_the_damaged_file_line(tmp_path, runner, healthy, kind):
    model, _ = healthy
    path, fmt = damaged(tmp_path, kind)
    for name, args in _every_text_reader(model, path, tmp_path).items():
        result = runner.invoke(main, [str(a) for a in args])
        assert_clean_error(result, f"{path}: damaged or truncated {fmt} file")
        assert "unexpected" not in result.output, (name, result.output)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != path.name]
    assert leftovers == [], leftovers  # nothing half written


def test_pairs_with_a_byte_order_mark_score_the_first_pair_right(tmp_path, runner, healthy):
    model, _ = healthy
    pairs = "the cat sat\tthe cat sat\nthe dog ran\tthe cat sat\n"
    (tmp_path / "bom.tsv").write_bytes(b"\xef\xbb\xbf" + pairs.encode())
    (tmp_path / "plain.tsv").write_bytes(pairs.encode())
    with_bom = runner.invoke(main, ["similarity", "-m", str(model), "--pairs", str(tmp_path / "bom.tsv")])
    plain = runner.invoke(main, ["similarity", "-m", str(model), "--pairs", str(tmp_path / "plain.tsv")])
    assert with_bom.exit_code == 0 and plain.exit_code == 0, with_bom.output
    assert with_bom.stdout == plain.stdout
    assert with_bom.stdout.splitlines()[0] == "1.0000"
    from_stdin = runner.invoke(main, ["similarity", "-m", str(model), "--pairs", "-"],
                               input=b"\xef\xbb\xbf" + pairs.encode())
    assert from_stdin.stdout == plain.stdout


# ---------------------------------------------------------------- 1. removing only what is ours


def _cache_with_one_entry(runner, corpus: Path, cache: Path) -> Path:
    result = runner.invoke(main, ["train", str(corpus), "-o", str(cache.parent / "m"), "--dim", "8",
                                  "--min-count", "1", "--threads", "1", "-q", "--cache-dir", str(cache)])
    assert result.exit_code == 0, result.output
    [entry] = [p for p in cache.iterdir()]
    assert (entry / MARKER).is_file() and is_ours(entry)
    return entry


def test_clear_refuses_a_folder_that_holds_anything_else(tmp_path, runner, healthy):
    _, corpus = healthy
    project = tmp_path / "project"
    project.mkdir()
    entry = _cache_with_one_entry(runner, corpus, project)
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("print('mine')\n")
    (project / "notes.txt").write_text("mine\n")
    result = runner.invoke(main, ["cache", "--cache-dir", str(project), "--clear"])
    assert_clean_error(result, "did not write", "src/", "nothing was removed")
    assert (project / "src" / "main.py").read_text() == "print('mine')\n"
    assert (project / "notes.txt").is_file() and entry.is_dir()
    # the listing names the cache's own entry and leaves the rest alone
    listing = runner.invoke(main, ["cache", "--cache-dir", str(project)])
    assert listing.exit_code == 0 and entry.name in listing.stdout
    assert "src" not in listing.stdout and "unfinished" not in listing.stdout
    assert "2 items scbow-numba did not write" in listing.stderr


@pytest.mark.parametrize("lookalike", ["foreign-file", "subfolder", "symlink-out", "symlink-entry", "wrong-name"])
def test_lookalike_entries_are_never_ours(tmp_path, lookalike):
    cache = tmp_path / "cache"
    cache.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep\n")
    key = "0123456789abcdef01234567"
    entry = cache / key
    if lookalike == "symlink-entry":
        entry.symlink_to(outside, target_is_directory=True)
    else:
        entry.mkdir()
        (entry / "meta.json").write_text("{}")
        (entry / MARKER).write_text("x")
        if lookalike == "foreign-file":
            (entry / "thesis.tex").write_text("mine")
        elif lookalike == "subfolder":
            (entry / "tokens.npy").mkdir()
        elif lookalike == "symlink-out":
            (entry / "vocab.txt").symlink_to(outside / "precious.txt")
        elif lookalike == "wrong-name":
            entry.rename(cache / "my-folder")
            entry = cache / "my-folder"
    assert not is_ours(entry)
    assert not remove_entry(entry)
    with pytest.raises(CorpusError, match="did not write"):
        clear_cache(cache)
    assert (outside / "precious.txt").read_text() == "keep\n"
    assert os.path.lexists(entry)
    assert cache_entries(cache) == []


def test_clear_removes_its_own_entries_and_leftovers(tmp_path, runner, healthy):
    _, corpus = healthy
    cache = tmp_path / "cache"
    entry = _cache_with_one_entry(runner, corpus, cache)
    # an encoding killed part way (SIGKILL): a temporary entry with the files it had written
    left = cache / f".{entry.name}.tmp-{dead_pid()}-0123abcd"
    left.mkdir()
    (left / MARKER).write_text(MARKER_TEXT)
    (left / "raw.i32").write_bytes(b"\0" * 64)
    older = cache / f"{entry.name}.tmp-abcd_123"  # one killed under a version before pids were in the name
    older.mkdir()
    (older / MARKER).write_text(MARKER_TEXT)
    listing = runner.invoke(main, ["cache", "--cache-dir", str(cache)])
    assert "(an unfinished encoding)" in listing.stdout and "3 cached corpora" in listing.stderr
    result = runner.invoke(main, ["cache", "--cache-dir", str(cache), "--clear"])
    assert result.exit_code == 0, result.output
    assert "removed 3 cached corpora" in result.stderr
    assert list(cache.iterdir()) == []
    # a cache folder that is a file, or that cannot be read
    (tmp_path / "afile").write_text("x")
    assert_clean_error(runner.invoke(main, ["cache", "--cache-dir", str(tmp_path / "afile"), "--clear"]),
                       "not a directory")


def test_a_broken_entry_that_is_not_ours_is_left_and_the_corpus_still_loads(tmp_path, healthy):
    from scbow.training.corpus import cache_key, expand_inputs, load_corpus

    _, corpus = healthy
    cache = tmp_path / "cache"
    cache.mkdir()
    squatter = cache / cache_key(expand_inputs([corpus]), 1, 0)
    squatter.mkdir()
    (squatter / "meta.json").write_text("not json")
    (squatter / "mine.txt").write_text("keep")
    c = load_corpus([corpus], min_count=1, cache_dir=cache)
    assert c.n_sentences > 0
    assert (squatter / "mine.txt").read_text() == "keep"


# ---------------------------------------------------------------- 7. no output inside a model


def _snapshot(directory: Path) -> dict:
    return {p.relative_to(directory): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("where", ["model", "checkpoint"])
def test_no_command_writes_inside_a_model(tmp_path, runner, healthy, where):
    import shutil

    model, corpus = healthy
    target = tmp_path / "target"
    shutil.copytree(model, target)
    if where == "checkpoint":  # a checkpoint directory: vectors.npy and state.json
        for name in ("vocab.txt", "config.json"):
            (target / name).unlink()
        (target / "state.json").write_text("{}")
    before = _snapshot(target)
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
        "expand": ["expand", "-m", m, "--source", m, "-o", target / "sub"],
        "plot": ["plot", m, "-o", target / "curve.png"],
    }
    for name, args in commands.items():
        result = runner.invoke(main, [str(a) for a in args])
        if name == "export deeper":
            assert result.exit_code != 0 and "Traceback" not in result.output, result.output
        else:
            assert_clean_error(result, "is inside", f"{target}", "refusing to write into it")
        assert _snapshot(target) == before, name
    assert not (tmp_path / "e.npy").exists()


# ---------------------------------------------------------------- 5. JSON read against its shape


@pytest.mark.parametrize("damage", [
    {"corpus": {"files": 5}}, {"corpus": {"files": [1, None]}}, {"corpus": [1]}, {"corpus": "x"},
    {"corpus": {"raw_tokens": "many", "sentences": 1.5, "oov_rate": "x", "min_count": []}},
    {"training": [1]}, {"training": {"first_loss": "a", "final_loss": None, "examples": "7", "threads": "2",
                                     "kernel_seconds": "slow", "examples_per_second": [], "device": 3}},
    {"training": {"first_loss": float("nan"), "final_loss": float("inf")}},
    {"init_vectors": {"x": float("nan")}}, {"expansions": [float("inf")]}, {"format": 7},
])
def test_info_reads_a_damaged_record_and_prints_strict_json(tmp_path, runner, healthy, damage):
    import json
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


@pytest.mark.parametrize("meta", ['{"files": 5}', '{"files": [1, 2]}', "[1]", '"text"', "{", '{"files": {"a": 1}}'])
def test_cache_lists_entries_with_a_damaged_meta(tmp_path, runner, healthy, meta):
    _, corpus = healthy
    cache = tmp_path / "cache"
    entry = _cache_with_one_entry(runner, corpus, cache)
    (entry / "meta.json").write_text(meta)
    listing = runner.invoke(main, ["cache", "--cache-dir", str(cache)])
    assert listing.exit_code == 0 and "Traceback" not in listing.output, listing.output
    assert entry.name in listing.stdout and "1 cached corpus" in listing.stderr
    # and train rebuilds it instead of following it
    again = runner.invoke(main, ["train", str(corpus), "-o", str(tmp_path / "m2"), "--dim", "8", "--min-count", "1",
                                 "--threads", "1", "-q", "--cache-dir", str(cache)])
    assert again.exit_code == 0, again.output


# ---------------------------------------------------------------- 8. temporaries of killed writers


def test_a_killed_prepare_leaves_a_temporary_that_the_next_run_removes(tmp_path, make_text):
    import signal
    import subprocess
    import sys
    import time

    src = tmp_path / "raw.txt"
    src.write_text(make_text(n_docs=40, sents_per_doc=2000, seed=3), encoding="utf-8")
    out = tmp_path / "corpus.txt.xz"
    cmd = [sys.executable, "-m", "scbow", "prepare", str(src), "-o", str(out), "--segmenter", "lines", "-q"]
    proc = subprocess.Popen(cmd)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".corpus.txt.xz.tmp-*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    [left] = list(tmp_path.glob(".corpus.txt.xz.tmp-*"))
    assert not out.exists()
    # beside it: look-alikes that are not ours, and a temporary a live writer holds
    (tmp_path / ".corpus.txt.xz.tmp-notes").write_text("mine")  # not a temporary's name (no pid)
    (tmp_path / ".corpus.txt.xz.tmp-abcdefgh").symlink_to(src)
    from scbow.files import atomic_file

    with atomic_file(out) as live:
        live.write_text("being written")
        result = subprocess.run(cmd, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert live.exists()  # a live writer's temporary is left alone
        assert not left.exists()  # the killed run's is gone
        assert (tmp_path / ".corpus.txt.xz.tmp-notes").read_text() == "mine"
        assert (tmp_path / ".corpus.txt.xz.tmp-abcdefgh").is_symlink() and src.exists()
    assert out.read_text() == "being written"  # the live writer finished last


# ---------------------------------------------------------------- 8. the smaller ones


def test_a_collapsed_run_is_refused_not_saved(tmp_path, runner, gutenberg_slice):
    corpus = gutenberg_slice(20000)
    args = ["train", str(corpus), "--dim", "50", "--threads", "1", "-q", "--no-cache"]
    result = runner.invoke(main, [*args, "-o", str(tmp_path / "hot"), "--lr", "1e6"])
    assert_clean_error(result, "collapsed into a few directions", "learning rate (1e+06)", "smaller --lr")
    assert not (tmp_path / "hot").exists()
    result = runner.invoke(main, [*args, "-o", str(tmp_path / "ok")])
    assert result.exit_code == 0, result.output


def test_the_api_takes_numpy_integers_and_refuses_a_senseless_unknown_scale(healthy):
    import scbow

    model = scbow.load(healthy[0])
    word = model.index_to_key[0]
    assert model.most_similar(word, topn=np.int64(3)) == model.most_similar(word, topn=3)
    assert len(model.similar_by_word(word, topn=np.int32(2), min_count=np.int64(0))) == 2  # a toy corpus's counts
    for bad in (np.True_, 0, -1, 2.5, "3"):
        with pytest.raises(ValueError, match="topn"):
            model.most_similar(word, topn=bad)
    assert np.isfinite(model.embed(["zzqx qqzz"], unknown="hash", unknown_scale=np.float32(0.5))).all()
    for bad in (float("nan"), float("inf"), 0.0, -1.0, True, "1"):
        with pytest.raises(ValueError, match="unknown_scale"):
            model.embed(["the cat"], unknown="hash", unknown_scale=bad)


# ---------------------------------------------------------------- pipes, devices and empty inputs


class _Alarm:
    """Fail instead of hanging: SIGALRM after ``seconds`` raises in the main thread (a blocked
    open() of a FIFO or an endless read of /dev/zero is interrupted by it)."""

    def __init__(self, seconds: int = 20):
        self.seconds = seconds

    def __enter__(self):
        import signal

        def ring(signum, frame):
            raise TimeoutError("the command blocked on its input")

        self.old = signal.signal(signal.SIGALRM, ring)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        import signal

        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_pipes_and_devices_are_refused_never_read(tmp_path, runner, healthy, sts_pairs, kind):
    model, corpus = healthy
    path = tmp_path / f"input-{kind}.txt"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    m = str(model)
    commands = {
        "embed": ["embed", "-m", m, path, "-o", tmp_path / "out.npy", "-q"],
        "neighbors --in": ["neighbors", "-m", m, "--sentence", "the cat", "--in", path],
        "evaluate": ["evaluate", "-m", m, path],
        "similarity --pairs": ["similarity", "-m", m, "--pairs", path],
        "prepare": ["prepare", path, "-o", tmp_path / "p.txt", "--segmenter", "lines", "-q"],
        "train": ["train", path, "-o", tmp_path / "m", "--dim", "8", "-q", "--no-cache"],
        "train --eval-dev": ["train", corpus, "-o", tmp_path / "m", "--dim", "8", "--min-count", "1", "-q",
                             "--no-cache", "--eval-every", "100", "--eval-dev", path],
    }
    for name, args in commands.items():
        with _Alarm():
            result = runner.invoke(main, [str(a) for a in args])
        assert_clean_error(result, "not a regular file")
        assert not (tmp_path / "out.npy").exists() and not (tmp_path / "m").exists(), name


@pytest.fixture
def sts_pairs(tmp_path):
    path = tmp_path / "sts.tsv"
    path.write_text("4.0\tthe cat sat\tthe cat sat down\n1.0\tthe dog ran\ta cat slept\n2.5\tthe cat ran\tthe dog sat\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_empty_or_plain_files_under_a_compressed_name_are_named(tmp_path, runner, healthy, suffix):
    model, _ = healthy
    for content in (b"", b"the cat sat\tthe dog ran\n"):
        path = tmp_path / f"input.txt{suffix}"
        path.write_bytes(content)
        for args in (["embed", "-m", model, path, "-o", tmp_path / "o.npy", "-q"],
                     ["similarity", "-m", model, "--pairs", path],
                     ["neighbors", "-m", model, "--sentence", "the cat", "--in", path]):
            assert_clean_error(runner.invoke(main, [str(a) for a in args]), "named like a", "does not start like one")
    assert not (tmp_path / "o.npy").exists()


def test_nothing_to_search_or_score_is_an_error_not_silence(tmp_path, runner, healthy):
    model, _ = healthy
    for content in ("", "\n\n\n"):
        (tmp_path / "e.txt").write_text(content)
        assert_clean_error(runner.invoke(main, ["neighbors", "-m", str(model), "--sentence", "the cat",
                                                "--in", str(tmp_path / "e.txt")]), "e.txt")
    (tmp_path / "e.txt").write_text("")
    assert_clean_error(runner.invoke(main, ["similarity", "-m", str(model), "--pairs", str(tmp_path / "e.txt")]),
                       "no sentence pairs")
    assert_clean_error(runner.invoke(main, ["similarity", "-m", str(model), "--pairs", "-"], input=""),
                       "no sentence pairs")


def test_sts_files_go_through_the_one_reader(tmp_path, runner, healthy, sts_pairs):
    model, _ = healthy
    plain = runner.invoke(main, ["evaluate", "-m", str(model), str(sts_pairs), "--json"])
    assert plain.exit_code == 0, plain.output
    packed = tmp_path / "packed" / "sts.tsv.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(sts_pairs.read_bytes()))
    result = runner.invoke(main, ["evaluate", "-m", str(model), str(packed), "--json"])
    assert result.exit_code == 0, result.output
    import json

    assert json.loads(result.stdout)["sets"][0]["pearson"] == json.loads(plain.stdout)["sets"][0]["pearson"]
    packed.write_bytes(gzip.compress(sts_pairs.read_bytes())[:20])
    assert_clean_error(runner.invoke(main, ["evaluate", "-m", str(model), str(packed)]),
                       "damaged or truncated gzip file")


def test_a_cache_key_named_folder_is_ours_only_with_the_marker(tmp_path, runner, healthy):
    _, corpus = healthy
    cache = tmp_path / "cache"
    entry = _cache_with_one_entry(runner, corpus, cache)
    user = cache / "012345678901234567890abc"  # a key's name, a user's file
    user.mkdir()
    (user / "vocab.txt").write_text("mine\n")
    user_tmp = cache / "0123456789012345678900aa.tmp-mine"
    user_tmp.mkdir()
    (user_tmp / "tokens.npy").write_text("x")
    forged = cache / "0123456789012345678900bb"  # the marker, and a user's file beside it
    forged.mkdir()
    (forged / MARKER).write_text("mine")
    (forged / "thesis.tex").write_text("mine")
    old = cache / "0123456789012345678900cc"  # a whole entry, but no marker: not provably the cache's
    import shutil

    shutil.copytree(entry, old)
    (old / MARKER).unlink()
    assert is_ours(entry)
    assert not any(is_ours(p) for p in (user, user_tmp, forged, old))
    assert_clean_error(runner.invoke(main, ["cache", "--cache-dir", str(cache), "--clear"]), "4 items", "did not write")
    assert (user / "vocab.txt").read_text() == "mine\n" and entry.exists() and old.exists()
    for p in (user, user_tmp, forged, old):
        shutil.rmtree(p)
    result = runner.invoke(main, ["cache", "--cache-dir", str(cache), "--clear"])
    assert result.exit_code == 0 and "removed 1 cached corpus" in result.stderr
    assert list(cache.iterdir()) == []


def test_a_live_encoding_is_left_alone_by_clear(tmp_path):
    from scbow.training.cache import in_use, new_entry

    cache = tmp_path / "cache"
    cache.mkdir()
    live = new_entry(cache / "0123456789abcdef01234567")  # what load_corpus encodes into: this process's
    (live / "raw.i32").write_bytes(b"\0" * 8)
    assert in_use(live)
    [entry] = cache_entries(cache)
    assert entry["in_use"] and "being encoded now" in describe(entry)
    assert clear_cache(cache) == (0, 0) and (live / "raw.i32").exists()
    dead = live.with_name(live.name.replace(f"-{os.getpid()}-", f"-{dead_pid()}-"))
    live.rename(dead)  # its writer gone
    assert not in_use(dead)
    assert clear_cache(cache)[0] == 1 and not dead.exists()


@pytest.mark.parametrize("where", ["model", "inside-model", "checkpoint"])
def test_the_corpus_cache_never_goes_into_a_model(tmp_path, runner, healthy, where):
    import shutil

    model, corpus = healthy
    target = tmp_path / "target"
    shutil.copytree(model, target)
    if where == "checkpoint":
        (target / "state.json").write_text("{}")
    before = _snapshot(target)
    cache = target / "sub" if where == "inside-model" else target
    result = runner.invoke(main, ["train", str(corpus), "-o", str(tmp_path / "m"), "--dim", "8", "--min-count", "1",
                                  "-q", "--cache-dir", str(cache)])
    assert_clean_error(result, "--cache-dir")
    assert _snapshot(target) == before and not (tmp_path / "m").exists()


def test_no_command_writes_inside_an_index_shards_or_a_cache_entry(tmp_path, runner, healthy):
    model, corpus = healthy
    index = tmp_path / "idx"
    index.mkdir()
    (index / "index.json").write_text("{}")
    (index / "vectors.faiss").write_bytes(b"x")
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "plan.json").write_text("{}")
    (shards / "shard-000000.json").write_text("{}")
    entry = tmp_path / "cache" / "0123456789abcdef01234567"
    entry.mkdir(parents=True)
    (entry / MARKER).write_text(MARKER_TEXT)
    (tmp_path / "lines.txt").write_text("the cat sat\n")
    for where, what in ((index, "a sentence index"), (shards, "a directory of embedding shards"),
                        (entry, "a corpus cache entry")):
        before = _snapshot(where)
        for args in (["prepare", corpus, "-o", where / "c.txt", "--segmenter", "lines", "-q"],
                     ["export", "-m", model, "-o", where / "text-000.txt"],
                     ["embed", "-m", model, tmp_path / "lines.txt", "-o", where / "e.npy", "-q"],
                     ["embed", "-m", model, tmp_path / "lines.txt", "-o", tmp_path / "e.npy", "--missing",
                      where / "m.txt", "-q"]):
            assert_clean_error(runner.invoke(main, [str(a) for a in args]), "is inside", what)
        assert _snapshot(where) == before


# ---------------------------------------------------------------- second red team: what is never touched


def test_the_lock_never_follows_a_link_nor_takes_a_users_file(tmp_path, runner, healthy):
    _, corpus = healthy
    args = ["train", str(corpus), "--dim", "8", "--min-count", "1", "--threads", "1", "-q", "--no-cache"]
    (tmp_path / "userfile").write_text("user data\n")
    (tmp_path / "m1.lock").symlink_to(tmp_path / "userfile")
    (tmp_path / "m2.lock").write_text("my notes\n")
    (tmp_path / "m3.lock").mkdir()
    for out in ("m1", "m2", "m3"):
        assert_clean_error(runner.invoke(main, [*args, "-o", str(tmp_path / out)]), f"{out}.lock", "not a lock file")
        assert not (tmp_path / out).exists()
    assert (tmp_path / "userfile").read_text() == "user data\n" and (tmp_path / "m1.lock").is_symlink()
    assert (tmp_path / "m2.lock").read_text() == "my notes\n" and (tmp_path / "m3.lock").is_dir()
    (tmp_path / "m4.lock").write_text("12345\n")  # a lock file left by a killed run: ours, reused and removed
    result = runner.invoke(main, [*args, "-o", str(tmp_path / "m4")])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "m4.lock").exists()


def test_a_finished_runs_checkpoint_goes_but_a_users_file_in_it_stays(tmp_path):
    from scbow.training.session import remove_checkpoint

    ck = tmp_path / "model.checkpoint"
    ck.mkdir()
    for name in ("vectors.npy", "vocab.txt", "config.json", "state.json"):
        (ck / name).write_text("x")
    remove_checkpoint(ck)
    assert not ck.exists()
    ck.mkdir()
    for name in ("vectors.npy", "vocab.txt", "config.json", "state.json"):
        (ck / name).write_text("x")
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


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_an_output_that_is_a_pipe_or_a_device_is_never_replaced(tmp_path, runner, healthy, kind):
    model, corpus = healthy
    (tmp_path / "a.txt").write_text("the cat sat\n")
    for name in ("o.npy", "o.txt", "c.png", "m.txt"):
        target = tmp_path / name
        if kind == "fifo":
            os.mkfifo(target)
        else:
            target.symlink_to("/dev/null")
    m = str(model)
    for args in (["export", "-m", m, "-o", tmp_path / "o.txt"],
                 ["embed", "-m", m, tmp_path / "a.txt", "-o", tmp_path / "o.npy", "-q"],
                 ["embed", "-m", m, tmp_path / "a.txt", "-o", tmp_path / "e.npy", "--missing", tmp_path / "m.txt",
                  "-q"],
                 ["prepare", corpus, "-o", tmp_path / "o.txt", "--segmenter", "lines", "-q"]):
        with _Alarm():
            assert_clean_error(runner.invoke(main, [str(a) for a in args]), "not a regular file")
    for name in ("o.npy", "o.txt", "m.txt"):
        assert not (tmp_path / name).is_file() or (tmp_path / name).is_symlink()
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_a_folder_with_a_manifest_of_its_own_is_no_shard_directory(tmp_path):
    import json

    from scbow.files import kind_of

    web = tmp_path / "proj"
    web.mkdir()
    (web / "manifest.json").write_text('{"name": "webapp"}')
    (web / "plan.json").write_text('{"steps": []}')
    assert kind_of(web) is None
    (web / "plan.json").write_text(json.dumps({"digest": "abc", "blocks": []}))
    assert kind_of(web) == "a directory of embedding shards"


def test_pairs_refuse_binary_text_absurd_gold_and_name_damage_before_printing(tmp_path, runner, healthy):
    model, _ = healthy
    m = str(model)
    for data, fragment in ((b"a\x00b\tc d\n", "NUL bytes"), (gzip.compress(b"x" * 100), "NUL bytes"),
                           (b"4\tthe cat\tthe dog\nnan\ta\tb\n", "line 2: gold score 'nan'"),
                           (b"1e300\ta\tb\n", "gold score '1e300'"), (b"abc\ta\tb\n", "gold score 'abc'")):
        result = runner.invoke(main, ["similarity", "-m", m, "--pairs", "-"], input=data)
        assert_clean_error(result, fragment)
        assert result.stdout == ""
    # a bit flipped in the middle of a .gz: its checksum fails at the end; nothing is printed first
    pairs = "".join(f"the cat number {i}\tthe dog {i}\n" for i in range(20000)).encode()
    packed = bytearray(gzip.compress(pairs))
    packed[len(packed) // 2] ^= 0x01
    (tmp_path / "p.tsv.gz").write_bytes(bytes(packed))
    result = runner.invoke(main, ["similarity", "-m", m, "--pairs", str(tmp_path / "p.tsv.gz")])
    assert_clean_error(result, "damaged or truncated gzip file")
    assert result.stdout == ""


def test_train_refuses_a_shard_directory_or_an_index_as_its_corpus(tmp_path, runner):
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "shard-000000.missing.txt").write_text("# lines\n1\n2\n")
    (shards / "shard-000000.json").write_text("{}")
    (shards / "manifest.json").write_text("{}")
    index = tmp_path / "idx"
    index.mkdir()
    (index / "index.json").write_text("{}")
    (index / "vectors.faiss").write_bytes(b"x")
    (index / "text-000.txt").write_text("the cat sat\n" * 50)
    for corpus, what in ((shards, "a directory of embedding shards"), (index, "a sentence index")):
        result = runner.invoke(main, ["train", str(corpus), "-o", str(tmp_path / "m"), "--dim", "8", "-q"])
        assert_clean_error(result, what, "not text")
        assert not (tmp_path / "m").exists()


def test_the_api_takes_one_path_a_dict_and_numpy_numbers_and_bounds_the_hash_scale(tmp_path, healthy):
    import scbow
    from scbow.config import TrainConfig

    model_dir, corpus = healthy
    settings = {"dim": 8, "min_count": 1, "threads": 1, "word_passes": 0}  # about the API's inputs: no word part
    for one in (str(corpus), corpus):  # a single path, as str or Path
        m = scbow.train(one, settings, quiet=True, use_cache=False)
        assert m.dim == 8
    with pytest.raises(TypeError, match="TrainConfig"):
        scbow.train([corpus], "dim=8", quiet=True)
    config = TrainConfig(dim=np.int64(16), lr=np.float32(0.05), seed=np.int32(3))
    assert (config.dim, config.seed) == (16, 3) and isinstance(config.dim, int) and isinstance(config.lr, float)
    from scbow.errors import ConfigError

    with pytest.raises(ConfigError):
        TrainConfig(dim=np.bool_(True))
    model = scbow.load(model_dir)
    for bad in (1e300, 10**400, 1e6 * 2):
        with pytest.raises(ValueError, match="unknown_scale"):
            model.embed(["zzqx"], unknown="hash", unknown_scale=bad)


def test_info_bounds_what_it_reads(tmp_path, runner, healthy):
    import json
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


# ---------------------------------------------------------------- third red team


def test_outputs_with_no_name_of_their_own(tmp_path, runner, healthy, monkeypatch):
    model, corpus = healthy
    (tmp_path / "a.txt").write_text("the cat sat\n")
    for out in ("/", ".", ".."):
        assert_clean_error(runner.invoke(main, ["embed", "-m", str(model), str(tmp_path / "a.txt"), "-o", out]),
                           "is a directory; give a file name")
    empty = tmp_path / "here"
    empty.mkdir()
    monkeypatch.chdir(empty)  # -o . is the current directory: a model may go there while it is empty
    result = runner.invoke(main, ["train", str(corpus), "-o", ".", "--dim", "8", "--min-count", "1", "--threads", "1",
                                  "-q", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert (empty / "vectors.npy").is_file() and not list(tmp_path.glob("*.checkpoint"))
    (tmp_path / "num.txt").write_text("12345\n")
    os.link(tmp_path / "num.txt", tmp_path / "g.lock")  # a pid-like file with a second name: a user's
    assert_clean_error(runner.invoke(main, ["train", str(corpus), "-o", str(tmp_path / "g"), "--dim", "8", "-q"]),
                       "not a lock file")
    assert (tmp_path / "num.txt").read_text() == "12345\n"


def test_a_users_file_in_a_checkpoint_stops_its_replacement_not_the_run(tmp_path, corpus_file, small_batches):
    from scbow.files import atomic_dir
    from scbow.training.checkpoint import only_checkpoint_files
    from scbow.training.session import train_session

    ck = tmp_path / "m.checkpoint"
    ck.mkdir()
    for name in ("vectors.npy", "vocab.txt", "config.json", "state.json"):
        (ck / name).write_text("x")
    (ck / "notes.txt").write_text("precious")
    with pytest.raises(FileExistsError, match="notes.txt"):
        with atomic_dir(ck, same_kind=only_checkpoint_files) as tmp:
            (tmp / "state.json").write_text("{}")
    assert (ck / "notes.txt").read_text() == "precious" and (ck / "state.json").read_text() == "x"
    # in a run: interrupted with a checkpoint, a user's file put in it, resumed with periodic checkpoints:
    # each replacement is a warning, the run goes on and saves its model, the file stays
    from test_checkpoint import SignalAfter

    from scbow.config import TrainConfig
    from scbow.errors import Interrupted

    config = TrainConfig(dim=8, epochs=2, min_count=1, threads=1)
    out = tmp_path / "run"
    with pytest.raises(Interrupted):
        train_session([corpus_file], config, out, quiet=True, hooks=[SignalAfter(2)])
    (tmp_path / "run.checkpoint" / "notes.txt").write_text("precious")
    said = []
    train_session([corpus_file], config, out, quiet=True, resume=True, checkpoint_every=256, warn=said.append)
    assert (out / "vectors.npy").is_file()
    assert (tmp_path / "run.checkpoint" / "notes.txt").read_text() == "precious"
    assert any("notes.txt" in line for line in said) and any("did not write" in line for line in said), said


def test_prepare_warns_when_a_run_without_whitespace_is_cut(tmp_path, runner):
    (tmp_path / "giant.txt").write_text("a" * 300_000 + "\n")
    result = runner.invoke(main, ["prepare", str(tmp_path / "giant.txt"), "-o", str(tmp_path / "g.txt"),
                                  "--segmenter", "lines"])
    assert result.exit_code == 0, result.output
    assert "with no whitespace" in result.stderr and "cut where a chunk ended" in result.stderr
