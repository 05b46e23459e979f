"""Reading shards back (``scbow.open_shards``, ``scbow.use.shards``): a damaged manifest or shard is a
ModelError naming the file, never wrong rows; shards of a text or a model changed since are refused."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_clean_error

pytest.importorskip("dask.distributed")

import scbow  # noqa: E402
from scbow.cli import main  # noqa: E402
from scbow.errors import ModelError  # noqa: E402
from scbow.use.cluster import embed_on_cluster  # noqa: E402


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def _texts(folder: Path, corpus: Path) -> list[Path]:
    """Three inputs: a plain file (several blocks), an empty one (a shard of 0 rows), a gzip one."""
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "a.txt", folder / "empty.txt", folder / "b.txt.gz"]
    paths[0].write_text("".join(lines[:100]), encoding="utf-8")
    paths[1].write_text("")
    paths[2].write_bytes(gzip.compress("".join(lines[100:]).encode(), mtime=0))
    return paths


def _embed(client, model, texts, out):
    embed_on_cluster(model, texts, out, client=client, block_bytes=1024)
    return out


@pytest.fixture(scope="module")
def sound(healthy, client, tmp_path_factory):
    """A shard directory as a cluster embed writes it (tests damage copies of it)."""
    model, corpus = healthy
    base = tmp_path_factory.mktemp("shards")
    return _embed(client, model, _texts(base / "texts", corpus), base / "shards")


@pytest.fixture
def copy(sound, tmp_path):
    out = tmp_path / "shards"
    shutil.copytree(sound, out)
    return out


def test_a_sound_directory_opens_as_written(sound):
    shards = scbow.open_shards(sound)
    manifest = json.loads((sound / "manifest.json").read_text())
    parts = [np.load(sound / s["shard"]) for s in manifest["shards"]]
    assert len(parts) > 4 and 0 in [len(p) for p in parts]  # the empty text's shard has no rows
    want = np.concatenate(parts)
    assert shards.shape == want.shape == (len(want), 16) and shards.dtype == np.float32
    assert np.array_equal(np.asarray(shards), want, equal_nan=True)
    cut = int(shards.offsets[3])  # where a.txt's last shard ends and the empty text's shard is
    mask = np.arange(len(want)) % 3 == 0
    for key in (slice(cut - 2, cut + 2), slice(cut, cut), cut, -1, np.int32(cut), slice(None, None, -7), mask,
                (cut, slice(2, 4)), [[0, 1], [cut, 2]], True):  # rows read alone, or as NumPy indexes the whole
        assert np.array_equal(np.asarray(shards[key]).view(np.uint32), want[key].view(np.uint32)), key
    for key in (1.5, "3", len(want), -len(want) - 1, [-len(want) - 1], (0, 1, 2)):
        with pytest.raises(IndexError):
            shards[key]
    shards.check_sources()  # the texts are as they were embedded


def test_an_index_of_shards_finds_each_rows_line(sound, tmp_path):
    """index takes the rows and their texts from the manifest: across shards, an empty text, a compressed one."""
    pytest.importorskip("faiss")
    from scbow.use.index import build_index, open_index

    a, _, packed = texts = [sound.parent / "texts" / n for n in ("a.txt", "empty.txt", "b.txt.gz")]
    lines = a.read_text().splitlines() + gzip.decompress(packed.read_bytes()).decode().splitlines()
    x = np.asarray(scbow.open_shards(sound))
    info = build_index(sound, None, tmp_path / "idx", M=16, ef_construction=100)
    assert info["embeddings"]["kind"] == "shards" and info["rows"] == len(x) == len(lines)
    assert [(f["file"], f["rows"]) for f in info["files"]] == [(str(t.resolve()), n) for t, n in zip(texts, (100, 0, 63))]
    index = open_index(tmp_path / "idx")
    assert scbow.open_shards(sound).offsets[1] < 50  # row 50 is in a later shard of a.txt
    assert index.line(50) == (str(a.resolve()), 51, lines[50])
    assert index.line(105) == (str(packed.resolve()), 6, lines[105])
    ids, scores = index.search(x[130], 1)
    assert index.line(int(ids[0, 0]))[2] == lines[130] and scores[0, 0] > 0.999
    with pytest.raises(ModelError, match="no text file"):
        build_index(sound, a, tmp_path / "idx2")


def _save(path: Path, array) -> None:
    with open(path, "wb") as fh:  # np.save would add .npy to a name without it
        np.save(fh, array, allow_pickle=True)


def _rows(d: Path) -> np.ndarray:
    return np.load(d / "shard-000001.npy")


SHARD_DAMAGE = {
    "truncated": (lambda d: (d / "shard-000001.npy").write_bytes((d / "shard-000001.npy").read_bytes()[:-10]),
                  "damaged shard (truncated"),
    "longer": (lambda d: (d / "shard-000001.npy").write_bytes((d / "shard-000001.npy").read_bytes() + b"\0" * 8),
               "longer than its rows"),
    "narrow": (lambda d: _save(d / "shard-000001.npy", _rows(d)[:, :3]), "rows of 3 values, the manifest says 16"),
    "float64": (lambda d: _save(d / "shard-000001.npy", _rows(d).astype(np.float64)), "float64"),
    "one-dim": (lambda d: _save(d / "shard-000001.npy", _rows(d).ravel()), "shape"),
    "short": (lambda d: _save(d / "shard-000001.npy", _rows(d)[:-1]), "the manifest says"),
    "not-npy": (lambda d: (d / "shard-000001.npy").write_bytes(b"just some text\n"), "not a .npy array"),
    "missing": (lambda d: (d / "shard-000001.npy").unlink(), "missing"),
    "a-directory": (lambda d: ((d / "shard-000001.npy").unlink(), (d / "shard-000001.npy").mkdir()),
                    "is a directory"),
    # a FIFO would block the open for ever: refused before it is opened (behind a link too: test_reader)
    "fifo": (lambda d: _fifo(d / "shard-000001.npy"), "not a regular file"),
}


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _list(d: Path) -> Path:
    return d / "shard-000002.missing.txt"


LIST_DAMAGE = {  # a shard's list of missing lines
    "list-damaged": (lambda d: _list(d).write_text("# lines\nseven\n"), "damaged"),
    "list-beyond-rows": (lambda d: _list(d).write_text("# lines\n100000\n"), "damaged"),
    "list-out-of-order": (lambda d: _list(d).write_text("2\n1\n"), "damaged list"),
    "list-gone": (lambda d: _list(d).unlink(), "missing"),
    "list-fifo": (lambda d: _fifo(_list(d)), "not a regular file"),
}


def test_the_missing_count_must_be_the_lines_listed(copy):
    """A shard's "missing" is the number of lines its list names: both ways checked on open."""
    _edit(**{"shards.1.missing": 0})(copy)
    (copy / "shard-000001.missing.txt").write_text("# lines with nothing to average\n2\n")
    with pytest.raises(ModelError) as err:
        scbow.open_shards(copy)
    assert str(err.value) == (f"{copy / 'shard-000001.missing.txt'}: damaged list of missing lines (it lists 1 "
                              "lines, the manifest says 0)")
    _edit(**{"shards.1.missing": 2})(copy)
    with pytest.raises(ModelError, match="it lists 1 lines, the manifest says 2"):
        scbow.open_shards(copy)


def _edit(**changes):
    """A damage of the manifest: ``changes`` maps a key (``shards.0.rows``) to a value (``...``: delete it)."""

    def damage(d: Path) -> None:
        manifest = json.loads((d / "manifest.json").read_text())
        for key, value in changes.items():
            *path, last = key.split(".")
            node = manifest
            for part in path:
                node = node[int(part)] if isinstance(node, list) else node[part]
            if isinstance(node, list):
                last = int(last)
            if value is ...:
                del node[last]
            else:
                node[last] = value(node[last]) if callable(value) else value
        (d / "manifest.json").write_text(json.dumps(manifest))

    return damage


def _swap_texts(d: Path) -> None:
    """The last shard of the first text listed after the (empty) shard of the second one."""
    manifest = json.loads((d / "manifest.json").read_text())
    shards = manifest["shards"]
    j = next(i for i, s in enumerate(shards) if s["file"] != shards[0]["file"])
    shards[j - 1], shards[j] = shards[j], shards[j - 1]
    (d / "manifest.json").write_text(json.dumps(manifest))


def _first_file(d: Path) -> str:
    return json.loads((d / "manifest.json").read_text())["shards"][0]["file"]


MANIFEST_DAMAGE = {
    # what the issue saw: a dim that disagrees with the rows, named at the first shard
    "dim-disagrees": (_edit(dim=7), "shard-000000.npy", "the manifest says 7"),
    "dim-string": (_edit(dim="16"), "manifest.json", '"dim"'),
    "dim-gone": (_edit(dim=...), "manifest.json", '"dim"'),
    "rows-wrong": (_edit(rows=lambda r: r + 1), "manifest.json", '"rows"'),
    "rows-gone": (_edit(rows=...), "manifest.json", '"rows"'),
    "shards-gone": (_edit(shards=...), "manifest.json", '"shards" is not a list'),
    "shard-a-number": (_edit(**{"shards.1": 5}), "manifest.json", "shard 2 of"),
    "shard-rows-gone": (_edit(**{"shards.1.rows": ...}), "manifest.json", '"rows"'),
    "shard-rows-negative": (_edit(**{"shards.1.rows": -1}), "manifest.json", '"rows"'),
    "missing-over-rows": (_edit(**{"shards.1.missing": 10**6}), "manifest.json", '"missing"'),
    "shard-name-gone": (_edit(**{"shards.1.shard": ...}), "manifest.json", '"shard"'),
    "shard-name-escapes": (_edit(**{"shards.1.shard": "../shard-000001.npy"}), "manifest.json", '"shard"'),
    "shard-twice": (_edit(**{"shards.2.shard": "shard-000001.npy"}), "manifest.json", "listed twice"),
    "missing-file-list": (_edit(**{"shards.1.missing_file": ["x"]}), "manifest.json", '"missing_file"'),
    "first-line-zero": (_edit(**{"shards.0.first_line": 0}), "manifest.json", '"first_line"'),
    "file-number": (_edit(**{"shards.0.file": 5}), "manifest.json", '"file"'),
    "file-unknown": (_edit(**{"shards.0.file": "/elsewhere/other.txt"}), "manifest.json", "not among"),
    # without its files the manifest could not tell a changed text: it is required
    "files-gone": (_edit(files=...), "manifest.json", '"files" is missing'),
    "files-empty": (_edit(files={}), "manifest.json", "not among the manifest's files"),
    # a line number must follow the rows of the shards of its text before it
    "first-line-huge": (_edit(**{"shards.1.first_line": 10**30}), "manifest.json", '"first_line" is 10000'),
    "first-line-not-first": (_edit(**{"shards.0.first_line": 5}), "manifest.json", "the 0 lines"),
    "shards-apart": (lambda d: _swap_texts(d), "manifest.json", "are not listed together"),
    "files-entry": (lambda d: _edit(files=lambda f: {**f, _first_file(d): {"bytes": "1", "mtime_ns": 0}})(d),
                    "manifest.json", '"files"'),
    "model-number": (_edit(model=5), "manifest.json", '"model"'),
    "version-string": (_edit(manifest_version="1"), "manifest.json", "not a manifest"),
    "version-2": (_edit(manifest_version=2), "manifest.json", "not a manifest"),
    "a-list": (lambda d: (d / "manifest.json").write_text("[1, 2]"), "manifest.json", "not a manifest"),
    # read through read_json (its every parse failure: test_reading)
    "nested": (lambda d: (d / "manifest.json").write_text("[" * 100000 + "]" * 100000), "manifest.json", "nested"),
    "gone": (lambda d: (d / "manifest.json").unlink(), "manifest.json", "missing"),
    "manifest-fifo": (lambda d: _fifo(d / "manifest.json"), "manifest.json", "not a regular file"),
    # the model is recorded with its id, or a model retrained since could not be told
    "model-id-gone": (_edit(model_id=...), "manifest.json", '"model_id"'),
}


DAMAGE = {**{k: (damage, "shard-000001.npy", fragment) for k, (damage, fragment) in SHARD_DAMAGE.items()},
          **{k: (damage, "shard-000002.missing.txt", fragment) for k, (damage, fragment) in LIST_DAMAGE.items()},
          **MANIFEST_DAMAGE}


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_shard_or_manifest_is_named(copy, kind):
    damage, name, fragment = DAMAGE[kind]
    damage(copy)
    with pytest.raises(ModelError) as err:
        scbow.open_shards(copy)
    message = str(err.value)
    assert message.startswith(f"{copy / name}: ") and fragment in message, message
    assert "\n" not in message


# -- shards of a text that has changed since -------------------------------------------------


def test_shards_of_a_changed_text_are_refused(healthy, client, tmp_path, runner):
    """index reads shards through open_shards (an index of sound shards: test_an_index_of_shards_finds_each_rows_line)."""
    pytest.importorskip("faiss")
    model, corpus = healthy
    texts = _texts(tmp_path / "texts", corpus)
    out = _embed(client, model, texts, tmp_path / "shards")
    index = ["index", str(out), "-o", str(tmp_path / "idx"), "-q", "--threads", "1"]

    def stale(path: Path, data: bytes) -> None:
        before, original = path.stat(), path.read_bytes()
        path.write_bytes(data)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # a later write, whatever the clock
        for opening in (lambda: scbow.open_shards(out), lambda: scbow.open_shards(out, check_sources=False)
                        .check_sources()):
            with pytest.raises(ModelError, match="changed since it was embedded") as err:
                opening()  # open_shards checks the texts itself, unless told not to
            assert str(err.value).startswith(f"{path.resolve()}: ") and "run embed again" in str(err.value)
        assert len(scbow.open_shards(out, check_sources=False)) == rows  # for a user who knows
        assert_clean_error(runner.invoke(main, index), str(path.resolve()), "changed since it was embedded")
        assert not (tmp_path / "idx").exists()
        path.write_bytes(original)  # as it was embedded again
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        scbow.open_shards(out).check_sources()

    rows = len(scbow.open_shards(out))
    plain, _, packed = texts
    original = plain.read_bytes()
    lines = original.decode().splitlines(keepends=True)
    stale(plain, "".join(reversed(lines)).encode())  # the same lines, the same size, in another order
    stale(plain, original)  # the same bytes, written again after the embed: cannot be told apart, refused
    # the same number of lines, other contents, compressed
    packed_lines = gzip.decompress(packed.read_bytes()).decode().splitlines(keepends=True)
    stale(packed, gzip.compress("".join(line.upper() for line in packed_lines).encode(), mtime=0))
    # a text that is gone is index's own message
    packed.unlink()
    assert_clean_error(runner.invoke(main, index), "no such file")
    assert len(scbow.open_shards(out)) == rows  # reading the rows back needs no text: a gone one is not checked


# -- shards of a model that has changed since ------------------------------------------------------


def test_shards_of_a_model_retrained_since_are_refused(healthy, client, tmp_path, runner):
    """What the red team saw: embed -m mX; train ... -o mX; index: the index recorded the new mX."""
    pytest.importorskip("faiss")
    model, corpus = healthy
    mx = tmp_path / "mX"
    shutil.copytree(model, mx)
    out = _embed(client, mx, _texts(tmp_path / "texts", corpus), tmp_path / "shX")
    scbow.open_shards(out).check_model()  # as embedded
    scbow.load(mx).save(mx)  # retrained in place: a new model directory at the same path
    with pytest.raises(ModelError) as err:
        scbow.open_shards(out).check_model()
    assert str(err.value) == f"{mx.resolve()}: changed since these shards ({out}) were embedded; embed again"
    for model_args in ([], ["-m", str(mx)]):
        result = runner.invoke(main, ["index", str(out), "-o", str(tmp_path / "ixX"), "-q", "--threads", "1",
                                      *model_args])
        assert_clean_error(result, f"{mx.resolve()}: changed since these shards")
        assert not (tmp_path / "ixX").exists()
    assert len(scbow.open_shards(out))  # the rows themselves are still read back
