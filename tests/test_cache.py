"""The corpus cache (scbow.training.cache, load_corpus's use of it): a hit is read; a changed file or setting
is another entry; a damaged entry is rebuilt, never followed; an entry is the cache's only with its marker
and its key's name, and ``cache --clear`` removes only those, or nothing at all."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_clean_error
from test_files import dead_pid, snapshot

from scbow.cli import main
from scbow.errors import CorpusError
from scbow.training import corpus as corpus_mod
from scbow.training.cache import MARKER, MARKER_TEXT, cache_entries, clear_cache, describe, is_ours, remove_entry
from scbow.training.corpus import load_corpus

TEXT1 = "The cat sat.\nThe dog sat.\n\nA cat ran!\n"


# ---------------------------------------------------------------- hits, keys and damage


def test_a_cache_hit_is_not_rebuilt_and_a_change_is_another_entry(tmp_path, monkeypatch, small_corpus_file):
    cache = tmp_path / "cache"
    first = load_corpus([small_corpus_file], min_count=1, cache_dir=cache)
    assert first.cache_path is not None and first.cache_path.startswith(str(cache))
    meta = os.path.join(first.cache_path, "meta.json")
    os.utime(meta, ns=(1, 1))  # a rewrite would change it

    def no_build(*args, **kwargs):
        raise AssertionError("the cache was not used")

    monkeypatch.setattr(corpus_mod, "_build", no_build)
    second = load_corpus([small_corpus_file], min_count=1, cache_dir=cache)
    assert second.cache_path == first.cache_path
    assert os.stat(meta).st_mtime_ns == 1
    assert np.array_equal(second.tokens, first.tokens)
    assert isinstance(second.tokens, np.memmap)  # memory-mapped from the cache
    # another setting is another cache entry
    monkeypatch.undo()
    third = load_corpus([small_corpus_file], min_count=2, cache_dir=cache)
    assert third.cache_path != first.cache_path
    # no temporary build directories are left behind
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        os.path.basename(p) for p in (first.cache_path, third.cache_path))
    path = tmp_path / "a.txt"
    path.write_text(TEXT1)
    a = load_corpus([path], min_count=1, cache_dir=tmp_path / "cache")
    path.write_text(TEXT1 + "A new sentence.\n")
    b = load_corpus([path], min_count=1, cache_dir=tmp_path / "cache")
    assert b.cache_path != a.cache_path
    assert b.n_sentences == a.n_sentences + 1
    assert "new" in b.vocab and "new" not in a.vocab
    monkeypatch.setenv("SCBOW_CACHE_DIR", str(tmp_path / "envcache"))
    assert load_corpus([small_corpus_file], min_count=1).cache_path.startswith(str(tmp_path / "envcache"))
    c = load_corpus([small_corpus_file], min_count=1, cache_dir=tmp_path / "unused", use_cache=False)
    assert c.n_sentences == 120 and not (tmp_path / "unused").exists()


@pytest.mark.parametrize("damage", ["tokens-missing", "token-out-of-range", "offsets-backwards", "wrong-dtype",
                                    "document-moved", "documents-merged", "document-skipped"])
def test_a_damaged_entry_is_rebuilt_into_the_same_corpus(tmp_path, small_corpus_file, damage):
    a = load_corpus([small_corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    expected = {name: np.array(getattr(a, name)) for name in ("tokens", "offsets", "sent_doc", "doc_offsets")}
    assert a.doc_offsets.tolist() == [0, 30, 60, 90, 120]
    entry = Path(a.cache_path)
    if damage == "tokens-missing":
        (entry / "tokens.npy").unlink()
    elif damage == "token-out-of-range":
        tokens = np.load(entry / "tokens.npy")
        tokens[5] = 10 ** 9
        np.save(entry / "tokens.npy", tokens)
    elif damage == "offsets-backwards":
        offsets = np.load(entry / "offsets.npy")
        offsets[3], offsets[4] = offsets[4], offsets[3] - 1
        np.save(entry / "offsets.npy", offsets)
    elif damage == "wrong-dtype":
        np.save(entry / "sent_doc.npy", np.load(entry / "sent_doc.npy").astype(np.float64))
    elif damage == "document-moved":  # in order and in bounds, but not where sent_doc says
        np.save(entry / "doc_offsets.npy", np.array([0, 10, 60, 90, 120]))
    elif damage == "documents-merged":  # the same sizes sent_doc implies, all in one document
        np.save(entry / "doc_offsets.npy", np.array([0, 120, 120, 120, 120]))
    else:  # sent_doc jumps over a document, which then has no sentence
        sent_doc = np.load(entry / "sent_doc.npy")
        sent_doc[30:] += 1
        np.save(entry / "sent_doc.npy", sent_doc)
        np.save(entry / "doc_offsets.npy", np.array([0, 30, 30, 60, 90, 120]))
    b = load_corpus([small_corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    for name, array in expected.items():
        assert np.array_equal(getattr(b, name), array) and getattr(b, name).dtype == array.dtype, name


@pytest.mark.parametrize("damage", [  # each way once: not a dict, its files not a list (of text), a count not one
    '{"files": 5}', '{"files": [1, 2]}', "[1]", "{", "[" * 100_000 + "]" * 100_000, {"raw_tokens": "x"},
    {"files": "corpus.txt"},
], ids=lambda d: str(d)[:24])
def test_a_damaged_meta_is_listed_and_rebuilt_never_followed(tmp_path, runner, healthy, damage):
    _, corpus = healthy
    cache = tmp_path / "cache"
    entry = _cache_with_one_entry(corpus, cache)
    meta_path = entry / "meta.json"
    if isinstance(damage, dict):
        damage = json.dumps({**json.loads(meta_path.read_text()), **damage})
    meta_path.write_text(damage)
    listing = runner.invoke(main, ["cache", "--cache-dir", str(cache)])
    assert listing.exit_code == 0 and "Traceback" not in listing.output, listing.output
    assert entry.name in listing.stdout and "1 cached corpus" in listing.stderr
    c = load_corpus([corpus], min_count=1, cache_dir=cache)  # as train loads it: rebuilt
    assert c.n_sentences > 0 and meta_path.read_text() != damage
    assert json.loads(meta_path.read_text())["sentences"] == c.n_sentences


def test_a_broken_entry_that_is_not_ours_is_left_and_the_corpus_still_loads(tmp_path, healthy):
    from scbow.training.corpus import cache_key, expand_inputs

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


# ---------------------------------------------------------------- what is the cache's, and clearing it


def _cache_with_one_entry(corpus: Path, cache: Path) -> Path:
    entry = Path(load_corpus([corpus], min_count=1, cache_dir=cache).cache_path)
    assert [entry] == list(cache.iterdir()) and (entry / MARKER).is_file() and is_ours(entry)
    return entry


def test_clear_removes_its_own_entries_and_leftovers_and_refuses_a_folder_with_anything_else(tmp_path, runner, healthy):
    _, corpus = healthy
    project = tmp_path / "project"
    project.mkdir()
    entry = _cache_with_one_entry(corpus, project)
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
    cache = tmp_path / "cache"
    entry = _cache_with_one_entry(corpus, cache)
    # an encoding killed part way (SIGKILL): a temporary entry with the files it had written
    left = cache / f".{entry.name}.tmp-{dead_pid()}-0123abcd"
    left.mkdir()
    (left / MARKER).write_text(MARKER_TEXT)
    (left / "raw.i32").write_bytes(b"\0" * 64)
    listing = runner.invoke(main, ["cache", "--cache-dir", str(cache)])
    assert "(an unfinished encoding)" in listing.stdout and "2 cached corpora" in listing.stderr
    assert str(corpus) in listing.stdout  # each entry says which corpus it holds
    result = runner.invoke(main, ["cache", "--cache-dir", str(cache), "--clear"])
    assert result.exit_code == 0, result.output
    assert "removed 2 cached corpora" in result.stderr
    assert list(cache.iterdir()) == []
    empty = runner.invoke(main, ["cache", "--cache-dir", str(tmp_path / "none")])
    assert empty.exit_code == 0 and "0 cached corpora" in empty.stderr
    # a cache folder that is a file, or that cannot be read
    (tmp_path / "afile").write_text("x")
    assert_clean_error(runner.invoke(main, ["cache", "--cache-dir", str(tmp_path / "afile"), "--clear"]),
                       "not a directory")


@pytest.mark.parametrize("lookalike", ["foreign-file", "subfolder", "symlink-out", "symlink-entry", "wrong-name",
                                       "no-marker", "temporary-without-pid"])
def test_lookalike_entries_are_never_ours(tmp_path, lookalike):
    """A copy of a real entry, changed in one way: never the cache's, never removed, and
    ``clear`` removes nothing while it is there."""
    (tmp_path / "a.txt").write_text(TEXT1)
    real = _cache_with_one_entry(tmp_path / "a.txt", tmp_path / "elsewhere")
    cache = tmp_path / "cache"
    cache.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep\n")
    entry = cache / "0123456789abcdef01234567"
    if lookalike == "symlink-entry":
        entry.symlink_to(outside, target_is_directory=True)
    else:
        shutil.copytree(real, entry)
        assert is_ours(entry)
        if lookalike == "foreign-file":
            (entry / "thesis.tex").write_text("mine")
        elif lookalike == "subfolder":
            (entry / "tokens.npy").unlink()
            (entry / "tokens.npy").mkdir()
        elif lookalike == "symlink-out":
            (entry / "vocab.txt").unlink()
            (entry / "vocab.txt").symlink_to(outside / "precious.txt")
        elif lookalike == "no-marker":
            (entry / MARKER).unlink()
        else:
            new = cache / ("wrong-name" if lookalike == "wrong-name" else f"{entry.name}.tmp-mine")
            entry = entry.rename(new)
    assert not is_ours(entry)
    assert not remove_entry(entry)
    with pytest.raises(CorpusError, match="did not write"):
        clear_cache(cache)
    assert (outside / "precious.txt").read_text() == "keep\n"
    assert os.path.lexists(entry) and (lookalike == "symlink-entry" or (entry / "meta.json").is_file())
    assert cache_entries(cache) == []


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


def test_an_uncached_encoding_left_by_a_killed_run_is_removed_by_the_next(tmp_path, monkeypatch, small_corpus_file):
    """``--no-cache`` encodes into a temporary of $TMPDIR named with its writer's pid; one whose
    writer died without its atexit (SIGKILL) is removed by the next uncached run, nothing else."""
    import stat
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    a = load_corpus([small_corpus_file], min_count=1, use_cache=False)
    work = Path(a.cache_path)
    assert work.parent == tmp and work.name.startswith(f".scbow-corpus-uncached.tmp-{os.getpid()}-")
    assert stat.S_IMODE(work.stat().st_mode) == 0o700 and (work / "tokens.npy").is_file()
    killed = work.with_name(work.name.replace(f"-{os.getpid()}-", f"-{dead_pid()}-"))
    shutil.copytree(work, killed)  # what a run killed by SIGKILL leaves: no atexit ran
    (tmp / ".scbow-corpus-uncached.tmp-notes").write_text("mine\n")  # no writer's pid: not ours
    (tmp / "scbow-corpus-abc123").mkdir()  # a name of mkdtemp's: not ours either
    b = load_corpus([small_corpus_file], min_count=1, use_cache=False)
    assert not os.path.lexists(killed)
    assert work.is_dir() and Path(b.cache_path).is_dir() and b.cache_path != a.cache_path  # writers still running
    assert (tmp / ".scbow-corpus-uncached.tmp-notes").read_text() == "mine\n" and (tmp / "scbow-corpus-abc123").is_dir()
    assert np.array_equal(a.tokens, b.tokens)


def test_the_corpus_cache_never_goes_into_a_model(tmp_path, healthy):
    """Another kind of output, or inside one (each kind: test_files)."""
    model, corpus = healthy
    target = shutil.copytree(model, tmp_path / "target")
    before = snapshot(target)
    for cache, says in ((target, "is a model directory"), (target / "sub", "is inside")):
        with pytest.raises(CorpusError, match=f"--cache-dir {cache}: {says}"):
            load_corpus([corpus], min_count=1, cache_dir=cache)
    assert snapshot(target) == before


def test_clear_on_a_cache_it_cannot_change_says_so(tmp_path, runner, healthy, monkeypatch):
    """A read-only cache (simulated: root may write anywhere) is one error and exit 1, never
    "removed 0 cached corpora"; the entry stays."""
    _, corpus = healthy
    cache = tmp_path / "cache"
    entry = _cache_with_one_entry(corpus, cache)

    def read_only(path, *a, **k):
        raise PermissionError(13, "Read-only file system", str(path))

    monkeypatch.setattr("scbow.training.cache.os.unlink", read_only)
    assert_clean_error(runner.invoke(main, ["cache", "--cache-dir", str(cache), "--clear"]),
                       "cannot remove the cached corpus", "Read-only file system", "removed 0 of 1")
    assert entry.is_dir()
