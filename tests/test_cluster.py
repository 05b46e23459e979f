"""Embedding on a Dask cluster (``scbow.cluster``): a local cluster of two worker processes.

The shards, read back in manifest order, must equal single-process ``embed`` of the same
lines bit for bit; a worker killed in the middle of a block, or a task that raises once,
must still give the complete, correct result; a second run must skip the shards done; a
bad input must give single-process ``embed``'s error.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_clean_error, make_runner

pytest.importorskip("dask.distributed")

from dask.distributed import Client, LocalCluster  # noqa: E402

from scbow import open_shards  # noqa: E402
from scbow.cli import main  # noqa: E402
from scbow.cluster import embed_block, embed_on_cluster, plan_blocks  # noqa: E402
from scbow.embedding import embed_file  # noqa: E402
from scbow.errors import CorpusError, ModelError  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=40)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, gutenberg_slice):
    """Two plain files with awkward lines (CRLF, a lone CR, invalid UTF-8, empty lines) and a gzip one."""
    folder = tmp_path_factory.mktemp("inputs")
    text = gutenberg_slice(3000).read_bytes()
    lines = text.split(b"\n")
    a = b"\n".join(lines[:1700]) + b"\n"
    a = a.replace(b"\n", b"\r\n", 40)  # some Windows line ends
    a = a[:5000] + b"a lone\rcarriage return\n\xff\xfe not utf-8 here\n\n\n" + a[5000:]
    b = b"\n".join(lines[1700:]) + b"\nlast line without a newline"
    paths = [folder / "a.txt", folder / "b.txt", folder / "c.txt.gz"]
    paths[0].write_bytes(a)
    paths[1].write_bytes(b)
    paths[2].write_bytes(gzip.compress(b"\n".join(lines[:300]) + b"\n"))
    return paths


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, gutenberg_slice):
    import scbow

    folder = tmp_path_factory.mktemp("model")
    model = scbow.train([gutenberg_slice(3000)], scbow.TrainConfig(dim=16, epochs=1, threads=1, min_count=2),
                        quiet=True, use_cache=False)
    return model.save(folder / "model")


@pytest.fixture
def runner():
    return make_runner()


def single_process(model_dir, paths, tmp_path):
    """Single-process embed of each input, rows concatenated (the reference)."""
    import scbow

    model = scbow.load(model_dir)
    rows, missing = [], []
    for i, p in enumerate(paths):
        out = tmp_path / f"single-{i}.npy"
        embed_file(model, p, out)
        rows.append(np.load(out))
        missing += [(str(Path(p).resolve()), int(x)) for x in
                    (out.with_name(f"single-{i}.missing.txt").read_text().split("\n")[1:]) if x]
    return np.concatenate(rows), missing


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_plan_cuts_plain_files_at_line_starts_and_keeps_compressed_ones_whole(inputs):
    blocks = plan_blocks(inputs, block_bytes=4096)
    assert [b.index for b in blocks] == list(range(len(blocks)))
    for path in inputs[:2]:
        mine = [b for b in blocks if b.file == str(path.resolve())]
        data = path.read_bytes()
        assert mine[0].start == 0 and mine[-1].stop == len(data) and len(mine) > 3
        for x, y in zip(mine, mine[1:]):
            assert x.stop == y.start and data[y.start - 1 : y.start] == b"\n"
    assert [(b.start, b.stop) for b in blocks if b.file.endswith(".gz")] == [(0, -1)]


def test_shards_equal_single_process_embed_bit_for_bit(client, inputs, model_dir, tmp_path):
    out = tmp_path / "shards"
    stats = embed_on_cluster(model_dir, inputs, out, client=client, block_bytes=8192)
    want, want_missing = single_process(model_dir, inputs, tmp_path)
    shards = open_shards(out)
    assert stats.shards == len(shards.parts) > 6 and stats.skipped == 0
    assert len(shards) == len(want) == stats.lines
    assert same_bits(np.asarray(shards), want)
    assert shards.missing_lines() == want_missing and len(want_missing) > 2  # the empty lines at least
    # indexing across shards
    cut = int(shards.offsets[3])
    assert same_bits(shards[cut - 2 : cut + 2], want[cut - 2 : cut + 2])
    assert same_bits(shards[cut], want[cut]) and same_bits(shards[-1], want[-1])
    assert same_bits(shards[[0, cut, len(want) - 1]], want[[0, cut, len(want) - 1]])
    # the manifest says where every row came from
    for s in shards.manifest["shards"]:
        assert s["first_line"] >= 1 and s["rows"] >= 1


def crash_once(model_path, block, out_dir, fill, unknown):
    """A task that kills its worker process in the middle of its first block (before its shard is written)."""
    marker = Path(out_dir) / f".crashed-{block.index}"
    if block.index == 2 and not marker.exists():
        marker.write_text("x")
        os._exit(13)  # the worker dies; the nanny restarts it and the scheduler runs the task again
    return embed_block(model_path, block, out_dir, fill, unknown)


def raise_once(model_path, block, out_dir, fill, unknown):
    marker = Path(out_dir) / f".raised-{block.index}"
    if block.index % 2 == 1 and not marker.exists():
        marker.write_text("x")
        raise RuntimeError("a flaky node")
    return embed_block(model_path, block, out_dir, fill, unknown)


@pytest.mark.parametrize("task", [crash_once, raise_once], ids=["worker-killed", "task-raises-once"])
def test_a_lost_worker_or_a_failing_task_still_gives_the_whole_result(client, inputs, model_dir, tmp_path, task):
    out = tmp_path / "shards"
    embed_on_cluster(model_dir, inputs[:2], out, client=client, block_bytes=8192, task=task)
    want, _ = single_process(model_dir, inputs[:2], tmp_path)
    assert same_bits(np.asarray(open_shards(out)), want)
    assert any(p.name.startswith(".crashed-") or p.name.startswith(".raised-") for p in out.iterdir())
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]  # no partial shard left behind


def test_a_second_run_skips_the_shards_done(client, inputs, model_dir, tmp_path):
    out = tmp_path / "shards"
    first = embed_on_cluster(model_dir, inputs, out, client=client, block_bytes=8192)
    # a run stopped before two shards were finished: their records are missing
    for name in ("shard-000001.json", "shard-000004.json"):
        (out / name).unlink()
    (out / "manifest.json").unlink()
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("shard-*.npy")}
    second = embed_on_cluster(model_dir, inputs, out, client=client, block_bytes=8192)
    assert second.skipped == first.shards - 2
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("shard-*.npy")}
    redone = sorted(n for n in before if before[n] != after[n])
    assert redone == ["shard-000001.npy", "shard-000004.npy"]
    want, _ = single_process(model_dir, inputs, tmp_path)
    assert same_bits(np.asarray(open_shards(out)), want)


def test_a_directory_of_another_job_is_refused(client, inputs, model_dir, tmp_path):
    out = tmp_path / "shards"
    embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192)
    with pytest.raises(ModelError, match="shards of another job"):
        embed_on_cluster(model_dir, inputs[:2], out, client=client, block_bytes=8192)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ModelError, match="not empty"):
        embed_on_cluster(model_dir, inputs[:1], other, client=client)


def test_a_binary_input_fails_as_in_one_process(client, inputs, model_dir, tmp_path, runner):
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"some text\n" * 50 + b"\x00\x01\x02" * 100)
    with pytest.raises(CorpusError) as single:
        embed_file(__import__("scbow").load(model_dir), binary, tmp_path / "x.npy")
    with pytest.raises(CorpusError) as cluster:
        embed_on_cluster(model_dir, [inputs[0], binary], tmp_path / "shards", client=client, block_bytes=8192)
    assert str(cluster.value) == str(single.value)
    assert "contains NUL bytes" in str(single.value)
    with pytest.raises(CorpusError, match="no such file"):
        plan_blocks([tmp_path / "nope.txt"])


def test_cli_embeds_on_a_local_cluster(inputs, model_dir, tmp_path, runner):
    out = tmp_path / "shards"
    result = runner.invoke(main, ["embed", "-m", str(model_dir), str(inputs[0]), str(inputs[2]), "-o", str(out),
                                  "--workers", "2", "--block-mb", "0.01"])
    assert result.exit_code == 0, result.output
    assert "shards" in result.output and (out / "manifest.json").is_file()
    again = runner.invoke(main, ["embed", "-m", str(model_dir), str(inputs[0]), str(inputs[2]), "-o", str(out),
                                 "--workers", "2", "--block-mb", "0.01"])
    assert again.exit_code == 0 and "done by an earlier run" in again.output
    # usage errors, one line each
    assert_clean_error(runner.invoke(main, ["embed", "-m", str(model_dir), str(inputs[0]), str(inputs[1]),
                                            "-o", str(tmp_path / "x.npy")]), "--workers")
    assert_clean_error(runner.invoke(main, ["embed", "-m", str(model_dir), str(inputs[0]), "-o", str(out),
                                            "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"]), "not both")
    assert_clean_error(runner.invoke(main, ["embed", "-m", str(model_dir), str(inputs[0]), "-o",
                                            str(tmp_path / "rows.npy"), "--workers", "2"]), "directory of shards")
    assert_clean_error(runner.invoke(main, ["embed", "-m", str(model_dir), "-", "-o", str(tmp_path / "d"),
                                            "--workers", "2"]), "stdin")
