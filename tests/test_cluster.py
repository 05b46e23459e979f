"""Embedding on a local Dask cluster of two worker processes (``scbow.use.cluster``): shards equal to
single-process ``embed`` bit for bit whatever workers die or tasks fail; a rerun skips the shards done and
redoes any whose record lies; a bad input gives ``embed``'s error once (reading shards back: test_shards)."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_clean_error, same_bits
from test_files import dead_pid

pytest.importorskip("dask.distributed")

import scbow  # noqa: E402
from scbow import open_shards  # noqa: E402
from scbow.cli import main  # noqa: E402
from scbow.errors import CorpusError, ModelError  # noqa: E402
from scbow.use.cluster import client_for, embed_block, embed_on_cluster, plan_blocks  # noqa: E402
from scbow.use.embedding import embed_file  # noqa: E402


def _local_cluster():
    c = client_for(workers=2)  # the local cluster of `embed --workers 2`
    yield c
    c.close()
    c.cluster.close()


client = pytest.fixture(scope="module", name="client")(_local_cluster)
# for tests that kill or count workers: a killed worker can leave a shared cluster one short for good
own_client = pytest.fixture(name="own_client")(_local_cluster)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, gutenberg_slice):
    """Two plain files with awkward lines (CRLF, a lone CR, empty lines) and a gzip one."""
    folder = tmp_path_factory.mktemp("inputs")
    text = gutenberg_slice(3000).read_bytes()
    lines = text.split(b"\n")
    a = b"\n".join(lines[:1700]) + b"\n"
    a = a.replace(b"\n", b"\r\n", 40)  # some Windows line ends
    a = a[:5000] + b"a lone\rcarriage return\nthen a plain line\n\n\n" + a[5000:]
    b = b"\n".join(lines[1700:]) + b"\nlast line without a newline"
    paths = [folder / "a.txt", folder / "b.txt", folder / "c.txt.gz"]
    paths[0].write_bytes(a)
    paths[1].write_bytes(b)
    paths[2].write_bytes(gzip.compress(b"\n".join(lines[:300]) + b"\n"))
    return paths


@pytest.fixture(scope="module")
def model_dir(healthy):
    return healthy[0]


def single_process(model_dir, paths, tmp_path):
    """Single-process embed of each input, rows concatenated (the reference)."""
    model = scbow.load(model_dir)
    rows, missing = [], []
    for i, p in enumerate(paths):
        out = tmp_path / f"single-{i}.npy"
        embed_file(model, p, out)
        rows.append(np.load(out))
        missing += [(str(Path(p).resolve()), int(x)) for x in
                    (out.with_name(f"single-{i}.missing.txt").read_text().split("\n")[1:]) if x]
    return np.concatenate(rows), missing


def same_as_single(out, model_dir, paths, tmp_path) -> bool:
    want, want_missing = single_process(model_dir, paths, tmp_path)
    shards = open_shards(out)
    return same_bits(np.asarray(shards), want) and shards.missing_lines() == want_missing


def _lines(data: bytes) -> list[str]:
    """Lines as embed reads them (UTF-8, bad bytes replaced, universal newlines)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline=None).readlines()


def test_shards_equal_single_process_embed_and_the_manifest_says_where_each_row_came_from(client, inputs, model_dir,
                                                                                          tmp_path):
    out = tmp_path / "shards"
    stats = embed_on_cluster(model_dir, inputs, out, client=client, block_bytes=8192)
    want, want_missing = single_process(model_dir, inputs, tmp_path)
    # open_shards checks the manifest against itself, the shards and the texts (first lines, rows: test_shards)
    shards = open_shards(out)
    assert stats.shards == len(shards.parts) > 6 and stats.skipped == 0
    assert len(shards) == len(want) == stats.lines
    assert same_bits(np.asarray(shards), want)
    assert shards.missing_lines() == want_missing and len(want_missing) > 2  # the empty lines at least
    # the manifest: each text's shards in input order, with the byte ranges of their lines
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [s["file"] for s in manifest["shards"]] == sorted((s["file"] for s in manifest["shards"]),
                                                             key=[str(p.resolve()) for p in inputs].index)
    for path in inputs:
        data = path.read_bytes()
        mine = [s for s in manifest["shards"] if s["file"] == str(path.resolve())]
        if path.suffix == ".gz":
            assert [s["bytes"] for s in mine] == [[0, -1]] and mine[0]["rows"] == len(_lines(gzip.decompress(data)))
            continue
        lines = _lines(data)
        assert len(mine) > 3 and mine[0]["bytes"][0] == 0 and mine[-1]["bytes"][1] == len(data)
        assert sum(s["rows"] for s in mine) == len(lines)
        for s, t in zip(mine, mine[1:]):
            assert s["bytes"][1] == t["bytes"][0]
        for s in mine:  # the bytes of the range are exactly the lines first_line .. first_line + rows - 1
            start, stop = s["bytes"]
            assert _lines(data[start:stop]) == lines[s["first_line"] - 1 : s["first_line"] - 1 + s["rows"]]


def crash_once(model_path, block, out_dir, *options):
    """A task that kills its worker process in the middle of its first block (before its shard is written)."""
    marker = Path(out_dir) / f".crashed-{block.index}"
    if block.index == 2 and not marker.exists():
        marker.write_text("x")
        os._exit(13)  # the worker dies; the nanny restarts it and the scheduler runs the task again
    return embed_block(model_path, block, out_dir, *options)


def raise_once(model_path, block, out_dir, *options):
    marker = Path(out_dir) / f".raised-{block.index}"
    if block.index % 2 == 1 and not marker.exists():
        marker.write_text("x")
        raise RuntimeError("a flaky node")
    return embed_block(model_path, block, out_dir, *options)


@pytest.mark.parametrize("task", [crash_once, raise_once], ids=["worker-killed", "task-raises-once"])
def test_a_lost_worker_or_a_failing_task_still_gives_the_whole_result(own_client, inputs, model_dir, tmp_path, task):
    out = tmp_path / "shards"
    embed_on_cluster(model_dir, inputs[:2], out, client=own_client, block_bytes=8192, task=task)
    assert same_as_single(out, model_dir, inputs[:2], tmp_path)
    assert any(p.name.startswith(".crashed-") or p.name.startswith(".raised-") for p in out.iterdir())
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]  # no partial shard left behind


def always_dies(model_path, block, out_dir, *options):
    """A block whose worker dies every time (as one out of memory would)."""
    if block.index == 1:
        os._exit(13)
    return embed_block(model_path, block, out_dir, *options)


def test_a_block_that_kills_every_worker_ends_in_one_message(own_client, inputs, model_dir, tmp_path):
    with pytest.raises(ModelError) as err:  # run again on a fresh worker a few times first, then given up
        embed_on_cluster(model_dir, inputs[:1], tmp_path / "shards", client=own_client, block_bytes=8192,
                         task=always_dies)
    # Dask names the task that ran out of allowed failures: block 1, or a block that shared the
    # dying worker with it every time (both "kept dying"; a block-2 message was seen in CI)
    assert re.match(rf"{re.escape(str(inputs[0]))}: the workers embedding its block \d+ kept dying", str(err.value))


@pytest.mark.parametrize("edit", ["none", "fields-edited", "another-jobs-plan"])
def test_a_directory_of_another_job_is_refused_and_its_shards_kept(client, inputs, model_dir, tmp_path, edit):
    """Also where its plan.json was edited to name the other job (anything else: ..._only_a_plans_temporary)."""
    from dataclasses import asdict

    from scbow.use.cluster import job

    out = tmp_path / "shards"
    embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    blocks = plan_blocks(inputs[1:2], 8192)  # job B: the second input, same model and settings
    other = {**job(Path(model_dir), blocks, {"fill": None, "unknown": None, "block_bytes": 8192, "encoding": "utf-8"}),
             "blocks": [asdict(b) for b in blocks]}
    plan = json.loads((out / "plan.json").read_text())
    if edit == "fields-edited":  # its inputs edited to B's, its digest left as it was
        plan.update(files=other["files"], blocks=other["blocks"])
    elif edit == "another-jobs-plan":  # B's own plan (consistent in itself): the shards' records still name A's input
        plan = other
    (out / "plan.json").write_text(json.dumps(plan))
    before["plan.json"] = (out / "plan.json").read_bytes()
    with pytest.raises(ModelError, match="holds the shards of another job"):
        embed_on_cluster(model_dir, inputs[1:2], out, client=client, block_bytes=8192)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_cli_embeds_on_a_local_cluster(inputs, model_dir, tmp_path, runner):
    out = tmp_path / "shards"
    args = ["embed", "-m", str(model_dir), str(inputs[0]), str(inputs[2]), "-o", str(out), "--workers", "2",
            "--block-mb", "0.01"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "shards" in result.output and (out / "manifest.json").is_file()
    again = runner.invoke(main, args)
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


def test_inputs_in_another_encoding_give_the_shards_of_their_utf8_text(client, inputs, model_dir, tmp_path):
    """--encoding on a cluster: each block is decoded as the whole file is; a rerun in another encoding
    is another job; an encoding whose line end is not the byte \\n (UTF-16) is refused up front."""
    text = inputs[0].read_bytes().decode("utf-8", "replace").replace("\ufffd", "?") + "the café sat\n" * 50
    (latin := tmp_path / "latin.txt").write_bytes(text.encode("cp1252", "replace"))
    (utf8 := tmp_path / "utf8.txt").write_bytes(text.encode("cp1252", "replace").decode("cp1252").encode("utf-8"))
    out = tmp_path / "shards"
    stats = embed_on_cluster(model_dir, [latin], out, client=client, block_bytes=8192, encoding="cp1252")
    assert stats.shards > 6
    want, want_missing = single_process(model_dir, [utf8], tmp_path)
    assert same_bits(np.asarray(open_shards(out)), want)
    assert [n for _, n in open_shards(out).missing_lines()] == [n for _, n in want_missing]
    # the same codec however spelt is the same job: the rerun finds every shard done
    again = embed_on_cluster(model_dir, [latin], out, client=client, block_bytes=8192, encoding="windows-1252")
    assert again.skipped == stats.shards
    with pytest.raises(ModelError, match="another job"):
        embed_on_cluster(model_dir, [latin], out, client=client, block_bytes=8192, encoding="latin-1")
    with pytest.raises(CorpusError, match="not valid utf-8"):
        embed_on_cluster(model_dir, [latin], tmp_path / "u", client=client, block_bytes=8192)
    with pytest.raises(CorpusError, match="a cluster cuts its inputs at the line-end byte"):
        embed_on_cluster(model_dir, [latin], tmp_path / "w", client=client, encoding="utf-16")
    assert not (tmp_path / "w").exists()


def test_a_running_scheduler_by_its_address(own_client, inputs, model_dir, tmp_path):
    """--scheduler ADDRESS: a client of its own (closed at the end), not made the process's default."""
    from dask.distributed import default_client

    stats = embed_on_cluster(model_dir, inputs[:1], tmp_path / "shards", scheduler=own_client.scheduler.address,
                             block_bytes=8192)
    assert stats.workers == 2 and same_as_single(tmp_path / "shards", model_dir, inputs[:1], tmp_path)
    assert default_client() is own_client


@pytest.mark.parametrize("address, fragment", [("not a url", "not a Dask scheduler address"),  # or any Dask refuses
                                               ("", "not a Dask scheduler address"),
                                               ("tcp://127.0.0.1:1", "cannot reach the Dask scheduler")])
def test_a_bad_or_unreachable_scheduler_is_one_line_and_writes_nothing(inputs, model_dir, tmp_path, runner,
                                                                      monkeypatch, address, fragment):
    monkeypatch.setattr("scbow.use.cluster.SCHEDULER_TIMEOUT", "0.5s")
    out = tmp_path / "o13"
    args = ["embed", "-m", str(model_dir), "--scheduler", address, str(inputs[0]), "-o", str(out)]
    assert_clean_error(runner.invoke(main, args), fragment)
    assert not out.exists()
    out.mkdir()  # an empty directory given: left empty
    assert_clean_error(runner.invoke(main, args), fragment)
    assert list(out.iterdir()) == []


# -- a damaged input: the single-process message, once, no retry, no Dask logs ----------------


def counting(model_path, block, out_dir, *options):
    """embed_block, leaving a file per run of a block beside the output (how often Dask ran it)."""
    (Path(out_dir).parent / "runs" / f"{block.index}-{uuid.uuid4().hex}").touch()
    return embed_block(model_path, block, out_dir, *options)


def test_a_damaged_input_fails_once_with_the_single_process_message(client, inputs, model_dir, tmp_path):
    """A binary block (each kind of damaged compressed file is the reader's rule: test_reader)."""
    text = inputs[1].read_bytes()
    bad = tmp_path / "data.bin"
    bad.write_bytes(text[:2000] + b"\x00\x01\x02" * 100 + text[2000:4000])
    with pytest.raises(CorpusError) as single:
        embed_file(scbow.load(model_dir), bad, tmp_path / "x.npy")
    (tmp_path / "runs").mkdir()
    with pytest.raises(CorpusError) as cluster:
        embed_on_cluster(model_dir, [inputs[0], bad], tmp_path / "shards", client=client, block_bytes=1 << 20,
                         task=counting)
    assert str(cluster.value) == str(single.value) and str(bad) in str(single.value)
    assert "contains NUL bytes" in str(single.value)
    bad_block = len(plan_blocks([inputs[0]], 1 << 20))  # the index of the damaged file's (only) block
    runs = [p.name.split("-")[0] for p in (tmp_path / "runs").iterdir()]
    assert runs.count(str(bad_block)) == 1  # not retried: running it again cannot mend it
    assert not (tmp_path / "shards" / "manifest.json").exists()


def test_a_damaged_input_on_the_command_line_prints_one_line(inputs, model_dir, tmp_path):
    """A real `embed --workers 2` process: the terminal gets the single-process line, nothing else."""
    from test_reader import damaged

    bad, _ = damaged(tmp_path, "gzip-corrupt-deflate")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    def embed(*args):
        return subprocess.run([sys.executable, "-m", "scbow", "embed", "-m", str(model_dir), *args],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)

    single = embed(bad.name, "-o", "single.npy")
    cluster = embed(str(inputs[0]), bad.name, "-o", "shards", "--workers", "2")
    assert single.returncode == cluster.returncode == 1
    assert single.stderr.startswith(f"Error: {bad.name}: damaged or truncated gzip file")
    assert cluster.stderr == single.stderr and cluster.stderr.count("\n") == 1, cluster.stderr
    assert cluster.stdout == ""


# -- a done-record is read against the shape embed writes, and its shard checked: else it is redone --


def _record(key, value):
    """The shard's done-record with ``key`` set to ``value`` (``...``: deleted; callable: of the record)."""

    def damage(d: Path, name: str) -> None:
        info = json.loads((d / f"{name}.json").read_text())
        if value is ...:
            del info[key]
        else:
            info[key] = value(info) if callable(value) else value
        (d / f"{name}.json").write_text(json.dumps(info))

    return damage


def _write(suffix: str, text: str):
    return lambda d, name: (d / f"{name}{suffix}").write_text(text)


def _rows(change):
    """The shard's array replaced by ``change`` of it (its record left saying it is done)."""
    return lambda d, name: np.save(d / f"{name}.npy", change(np.load(d / f"{name}.npy")))


def _replaced(suffix: str, by):
    """The shard's file ``suffix`` unlinked, then ``by(path)`` (a directory, a FIFO) in its place, or nothing."""
    return lambda d, name: ((d / f"{name}{suffix}").unlink(), by(d / f"{name}{suffix}"))


DONE_DAMAGE = {  # one damage of a shard's array or list each: test_shards has every other (shard_done reads them alike)
    "record-gone": _replaced(".json", lambda p: None),  # a run stopped before the shard was finished
    "missing-a-word": _record("missing", "many"),
    "missing-negative": _record("missing", -5),
    "missing-over-rows": _record("missing", lambda r: r["rows"] + 1),
    "missing-not-its-list": _record("missing", lambda r: r["missing"] + 1),  # the .missing.txt names fewer
    "missing-a-float": _record("missing", lambda r: r["missing"] + 0.0),
    "rows-a-bool": _record("rows", True),
    "rows-gone": _record("rows", ...),
    "known-over-tokens": _record("known_tokens", lambda r: r["tokens"] + 1),
    "block-of-another-size": _record("block", lambda r: {**r["block"], "size": r["block"]["size"] + 1}),
    "block-a-string": _record("block", "shard 1"),
    "a-list": _write(".json", "[1, 2]"),
    "not-json": _write(".json", '{"rows": '),
    "a-directory": _replaced(".json", Path.mkdir),
    "list-beyond-rows": _write(".missing.txt", "# lines\n1000000\n"),
    "shard-short": _rows(lambda x: x[:-3]),
    "shard-narrow": _rows(lambda x: x[:, :5]),
    "record-fifo": _replaced(".json", os.mkfifo),  # redone, never opened (it would block)
}


@pytest.fixture(scope="module")
def done(client, inputs, model_dir, tmp_path_factory):
    """A finished shard directory of the first input (tests damage copies of it), and its plan."""
    out = tmp_path_factory.mktemp("done") / "shards"
    embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192)
    return out, plan_blocks(inputs[:1], 8192)


@pytest.mark.parametrize("kind", DONE_DAMAGE)
def test_a_damaged_done_record_or_shard_means_not_done(done, tmp_path, kind):
    from scbow.use.cluster import shard_done

    sound, blocks = done
    # a shard with some lines missing and some not, so that every damage above is one
    block = next(b for b in blocks if 0 < json.loads((sound / f"{b.name}.json").read_text())["missing"]
                 < json.loads((sound / f"{b.name}.json").read_text())["rows"])
    assert shard_done(sound, block, 16)["block"]["index"] == block.index
    copy = tmp_path / "shards"
    shutil.copytree(sound, copy)
    DONE_DAMAGE[kind](copy, block.name)
    assert shard_done(copy, block, 16) is None


@pytest.mark.parametrize("name", ["shard-000000.json", "manifest.json"])  # (a shard's .npy: a name as its .json)
def test_a_directory_in_place_of_a_shard_file_is_refused_and_kept(client, done, inputs, model_dir, tmp_path, name):
    out = shutil.copytree(done[0], tmp_path / "shards")
    (out / name).unlink()
    (out / name / "notes").mkdir(parents=True)  # the user's: never removed
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    with pytest.raises(ModelError, match=f"{name}: is a directory where a cluster embed writes a file"):
        embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before and (out / name / "notes").is_dir()


def test_a_second_run_into_a_directory_in_use_is_refused(client, done, inputs, model_dir, tmp_path):
    """The first run holds a flock on the directory (here the test holds it): a second at once is refused."""
    from scbow.use.cluster import _hold

    out = shutil.copytree(done[0], tmp_path / "shards")
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    fd = _hold(out)
    try:
        with pytest.raises(ModelError, match="another scbow-numba embed is writing into it"):
            embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192)
    finally:
        os.close(fd)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192).skipped > 0  # then it runs


def test_a_worker_refuses_a_model_saved_at_the_path_since_the_plan(done, model_dir, tmp_path, monkeypatch):
    """A worker loads the model by its path: another model saved there since the plan (its model_id) is refused."""
    from scbow.use import cluster

    out = shutil.copytree(done[0], tmp_path / "shards")
    monkeypatch.setattr(cluster, "_MODELS", {})
    monkeypatch.setattr(cluster, "_PLANNED", {})
    block = done[1][0]
    assert "error" not in cluster.embed_block(str(model_dir), block, str(out))
    plan = json.loads((out / "plan.json").read_text())
    (out / "plan.json").unlink()  # the next run's plan (a new file, as a run writes it)
    (out / "plan.json").write_text(json.dumps({**plan, "model_id": "f" * 32}))
    for fresh in (False, True):  # a worker that served the run before (its model cached), and a fresh one
        if fresh:
            monkeypatch.setattr(cluster, "_MODELS", {})
        result = cluster.embed_block(str(model_dir), block, str(out))
        assert "is not the model this embed began with" in result["error"] and result["error_type"] == "model"
        assert f"give another -o, or delete {out} to start over" in result["error"]
    # a worker that outlives a run (--scheduler): the model retrained at the path, and the next run planned with it
    from scbow.vectors.formats import load_model
    from scbow.vectors.modeldir import model_id, save_model

    odd = shutil.copytree(model_dir, tmp_path / "odd")
    for retrained in (False, True):
        if retrained:
            save_model(load_model(odd, mmap=False), odd)  # a new model_id
        (out / "plan.json").unlink()
        (out / "plan.json").write_text(json.dumps({**plan, "model_id": model_id(odd)}))
        assert "error" not in cluster.embed_block(str(odd), block, str(out))  # the cached model is not the one: reloaded
    assert cluster._MODELS[str(odd)][1] == model_id(odd)


def test_ctrl_c_says_the_shards_done_are_kept_and_a_rerun_goes_on(client, inputs, model_dir, tmp_path):
    from scbow.errors import Interrupted

    def ctrl_c(done, total):  # the client's progress callback: where a Ctrl-C lands, in the client
        if done >= 3:
            raise KeyboardInterrupt

    out = tmp_path / "shards"
    with pytest.raises(Interrupted, match=r"interrupted; [\d,]+ of [\d,]+ shards are done and kept in .*shards: run the "
                                          "same command again"):
        embed_on_cluster(model_dir, inputs, out, client=client, block_bytes=8192, progress=ctrl_c)
    assert embed_on_cluster(model_dir, inputs, out, client=client, block_bytes=8192).skipped >= 3
    assert same_as_single(out, model_dir, inputs, tmp_path)


def test_an_output_through_a_link_is_its_target(client, inputs, model_dir, tmp_path):
    """-o LINK, dangling: the target directory is made (its folder exists) and the link stays; a link whose
    target's folder is missing is refused in one line (both said 'exists and is not a directory')."""
    (tmp_path / "link").symlink_to(tmp_path / "target")
    embed_on_cluster(model_dir, inputs[:1], tmp_path / "link", client=client, block_bytes=8192)
    assert (tmp_path / "link").is_symlink() and (tmp_path / "target" / "manifest.json").is_file()
    (tmp_path / "far").symlink_to(tmp_path / "missing" / "target")
    with pytest.raises(ModelError, match="whose folder does not exist"):
        embed_on_cluster(model_dir, inputs[:1], tmp_path / "far", client=client, block_bytes=8192)
    assert not (tmp_path / "missing").exists()


# -- an output inside a model: refused, also where an earlier version left a directory --------------


def test_an_output_in_a_model_directory_is_refused_every_time(inputs, model_dir, tmp_path, runner):
    model = shutil.copytree(model_dir, tmp_path / "model")
    before = sorted(p.name for p in model.iterdir())
    for out in (model / "shards", model):
        args = ["embed", "-m", str(model_dir), str(inputs[0]), "-o", str(out), "--workers", "2"]
        first = assert_clean_error(runner.invoke(main, args), "model directory", str(model.resolve()))
        if out != model:
            assert "inside" in first
            out.mkdir()  # as a run of an earlier version left it: a resume says the same
            assert assert_clean_error(runner.invoke(main, args)) == first
            out.rmdir()
    assert sorted(p.name for p in model.iterdir()) == before


# -- temporaries: only a temporary of the directory's own files, with a dead writer's pid, is ours -----


def killed_while_writing(directory: Path, *names: str) -> list[Path]:
    """The temporaries a run killed while writing ``names`` into ``directory`` leaves (those of a real kill, made
    by the same files.new_temporary: test_session test_sigkill_at_random_moments_of_repeated_saves)."""
    left = [directory / f".{name}.tmp-{dead_pid()}-0123abcd" for name in names]
    for path in left:
        path.write_bytes(b"part of a shard")
    return left


def test_a_killed_runs_temporaries_are_removed_and_nothing_else(client, inputs, model_dir, tmp_path):
    """Only the temporaries of the directory's own files (each other look-alike, a live writer's: test_files)."""
    out = tmp_path / "shards"
    first = embed_on_cluster(model_dir, inputs[:2], out, client=client, block_bytes=8192)
    (out / "shard-000001.json").unlink()  # the run was killed while writing shard 1, and while a worker was
    # writing shard 3 again, whose first copy is done: not rewritten, its leftovers removed too
    temps = killed_while_writing(out, "shard-000001.npy", "shard-000001.missing.txt", "shard-000001.json",
                                 "manifest.json", "plan.json", "shard-000003.npy", "shard-000003.missing.txt",
                                 "shard-000003.json")
    keep = [out / f".notes.txt.tmp-{dead_pid()}-0123abcd",  # a dead writer's, of a file not the directory's own
            out / ".shard-000002.npy.tmp-abcdefgh"]  # no writer's pid: no temporary
    for p in keep:
        p.write_text("not ours")
    second = embed_on_cluster(model_dir, inputs[:2], out, client=client, block_bytes=8192)
    assert second.skipped == first.shards - 1
    assert not any(p.exists() for p in temps)
    assert all(p.read_text() == "not ours" for p in keep)
    assert same_as_single(out, model_dir, inputs[:2], tmp_path)


def test_a_directory_holding_only_a_plans_temporary(client, inputs, model_dir, tmp_path):
    """A killed writer's: a run killed before its plan, taken by the next; beside anything else, or a
    look-alike with no writer's pid (someone's): no proof, refused, nothing removed."""
    out = tmp_path / "shards"
    out.mkdir()
    temps = killed_while_writing(out, "plan.json")
    embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192)
    assert not temps[0].exists() and (out / "manifest.json").is_file()
    other, look_alike = tmp_path / "other", tmp_path / "look-alike"
    other.mkdir()
    temps = killed_while_writing(other, "plan.json")
    (other / "mine.txt").write_text("mine")
    look_alike.mkdir()
    (look_alike / ".plan.json.tmp-mydraft1").write_text("data\n")
    for d in (other, look_alike):
        with pytest.raises(ModelError, match="not empty"):
            embed_on_cluster(model_dir, inputs[:1], d, client=client, block_bytes=8192)
    assert temps[0].exists() and (other / "mine.txt").read_text() == "mine"
    assert (look_alike / ".plan.json.tmp-mydraft1").read_text() == "data\n"


# -- a run that fails takes back what it wrote, unless a shard is done ------------------------------


def partial_then_fails(model_path, block, out_dir, *options):
    """Block 0: a shard's array and list written (its record not yet), a killed writer's temporary, a
    look-alike that is not ours; then a failure no retry mends."""
    out = Path(out_dir)
    if block.index == 0:
        np.save(out / "shard-000000.npy", np.zeros((2, 16), np.float32))
        (out / "shard-000000.missing.txt").write_text("")
        killed_while_writing(out, "shard-000000.json")
        if "look-alike" in out.name:
            (out / ".shard-000000.json.tmp-mynotes1").write_text("someone's\n")
    return {"block": block.__dict__, "error": f"{block.file}: damaged", "error_type": "corpus"}


def test_a_failed_run_with_no_shard_done_leaves_nothing(client, inputs, model_dir, tmp_path):
    from test_reader import damaged

    bad, _ = damaged(tmp_path, "gzip-corrupt-deflate")
    # the damaged input alone, into a directory (and parents) the run creates: all of it gone again
    out = tmp_path / "new" / "deeper" / "shards"
    with pytest.raises(CorpusError, match="damaged or truncated gzip"):
        embed_on_cluster(model_dir, [bad], out, client=client)
    assert not (tmp_path / "new").exists()
    # what a worker wrote before the failure, and a killed writer's temporary, too
    for out in (tmp_path / "made", tmp_path / "given"):
        if out.name == "given":
            out.mkdir()
        with pytest.raises(CorpusError, match="damaged"):
            embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=1 << 30, task=partial_then_fails)
        assert (out.name == "given") == out.exists() and (not out.exists() or list(out.iterdir()) == [])
    # what the tool cannot prove it wrote stays, and so does the directory holding it
    out = tmp_path / "look-alike"
    with pytest.raises(CorpusError, match="damaged"):
        embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=1 << 30, task=partial_then_fails)
    assert sorted(p.name for p in out.iterdir()) == [".shard-000000.json.tmp-mynotes1"]


def fails_after_block_0(model_path, block, out_dir, *options):
    """Block 2 fails, once block 0's shard is done (on the other worker)."""
    if block.index != 2:
        return embed_block(model_path, block, out_dir, *options)
    deadline = time.monotonic() + 60
    while not (Path(out_dir) / "shard-000000.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return {"block": block.__dict__, "error": f"{block.file}: damaged", "error_type": "corpus"}


def test_a_failed_run_keeps_the_shards_done_and_an_earlier_runs_plan(client, inputs, model_dir, tmp_path):
    out = tmp_path / "shards"
    with pytest.raises(CorpusError, match="damaged"):
        embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192, task=fails_after_block_0)
    assert (out / "plan.json").is_file() and (out / "shard-000000.json").is_file()  # resumed by the next run
    (out / "shard-000000.json").unlink()
    with pytest.raises(CorpusError, match="damaged"):  # no shard done now, but the plan is an earlier run's
        embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192, task=partial_then_fails)
    assert (out / "plan.json").is_file()
    stats = embed_on_cluster(model_dir, inputs[:1], out, client=client, block_bytes=8192)
    assert stats.shards > 1 and same_as_single(out, model_dir, inputs[:1], tmp_path)


# -- inputs that are not regular files, or given twice: refused before anything runs -----------


def test_an_input_missing_not_a_regular_file_or_given_twice_is_refused_up_front(inputs, model_dir, tmp_path, runner,
                                                                                monkeypatch):
    """Each kind (a device, a link to one) is the reader's rule: test_reader."""
    with pytest.raises(CorpusError, match="no such file"):
        plan_blocks([tmp_path / "nope.txt"])
    odd = tmp_path / "fifo.txt"
    os.mkfifo(odd)
    with pytest.raises(CorpusError, match=f"^{odd}: not a regular file"):
        plan_blocks([inputs[0], odd])
    text = tmp_path / "s.txt"
    shutil.copy(inputs[0], text)
    (tmp_path / "link.txt").symlink_to(text)
    os.link(text, tmp_path / "hard.txt")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    for twice in ["./s.txt", str(text), "sub/../s.txt", "link.txt", "hard.txt"]:
        with pytest.raises(CorpusError, match=r"given twice \(inputs 1 and 3 are the same file\)"):
            plan_blocks(["s.txt", inputs[1], twice])
    # the command line: one line, before any cluster starts (a FIFO would block a worker for ever)
    embed = ["embed", "-m", str(model_dir), "-o", "shards", "--workers", "2"]
    assert_clean_error(runner.invoke(main, [*embed, str(inputs[0]), str(odd)]), f"{odd}: not a regular file")
    assert_clean_error(runner.invoke(main, [*embed, "s.txt", "./s.txt"]), "s.txt: given twice (inputs 1 and 2 are the same file)")
    assert not (tmp_path / "shards").exists()


# -- an input that changes while it is embedded, or between two runs ----------------------------


def _copies(paths, folder: Path) -> list[Path]:
    folder.mkdir()
    for p in paths:
        shutil.copy2(p, folder / p.name)
    return [folder / p.name for p in paths]


def _later(path: Path, data: bytes) -> None:
    """``path`` rewritten with ``data``, and a modification time surely later than before."""
    before = path.stat()
    path.write_bytes(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))


CHANGES = {  # of size, of time, gone (shards.changed_file; a shorter text: test_a_text_changed_after_a_run...)
    "grown": lambda p: _later(p, p.read_bytes() + b"one more line\n"),
    "rewritten-same-size": lambda p: _later(p, b"".join(p.read_bytes().splitlines(keepends=True)[::-1])),  # text still
    "removed": lambda p: p.unlink(),
}


def _settle(client, timeout: float = 30) -> None:
    """Wait until no worker runs a task: the tasks of a failed run already running end on their own."""
    def busy(dask_worker):
        return sum(ts.state not in ("memory", "released", "error", "forgotten")
                   for ts in dask_worker.state.tasks.values())

    deadline, idle = time.monotonic() + timeout, 0
    while idle < 3:  # idle three times in a row: no task between two others
        idle = idle + 1 if not any(client.run(busy).values()) else 0
        assert time.monotonic() < deadline, "the workers are still busy"
        time.sleep(0.05)


def changing(model_path, block, out_dir, *options):
    """embed_block; the first time block 2 is run, its file is first changed as ``OUT/../change`` says."""
    order = Path(out_dir).parent / "change"
    if block.index == 2 and order.exists():
        kind = order.read_text()
        order.unlink()
        CHANGES[kind](Path(block.file))
    return embed_block(model_path, block, out_dir, *options)


@pytest.mark.parametrize("when,kind", [("during", k) for k in CHANGES] + [("at-the-end", "grown"),
                                                                           ("at-the-end", "rewritten-same-size")])
def test_an_input_changed_while_it_is_embedded_fails_and_the_next_run_redoes_it(client, inputs, model_dir,
                                                                                 tmp_path, when, kind):
    texts = _copies(inputs[:2], tmp_path / "texts")
    original = texts[0].read_bytes()
    out = tmp_path / "shards"
    (tmp_path / "change").write_text(kind)

    def at_the_end(done, total):  # after the last shard, before the manifest
        if done == total and (tmp_path / "change").exists():
            (tmp_path / "change").unlink()
            CHANGES[kind](texts[0])

    with pytest.raises(CorpusError) as err:
        embed_on_cluster(model_dir, texts, out, client=client, block_bytes=8192,
                         task=changing if when == "during" else embed_block,
                         progress=at_the_end if when == "at-the-end" else None)
    message = str(err.value)
    assert message.startswith(f"{texts[0]}: changed while it was being embedded (") and "\n" not in message
    assert message.endswith("; run embed again")
    assert not (out / "manifest.json").exists()
    _settle(client)  # the tasks of the failed run still running on the shared cluster end first
    # run again, as the message says: the shards of the text as it is now, none of the old one's
    if kind == "removed":
        texts[0].write_bytes(original)
    again = embed_on_cluster(model_dir, texts, out, client=client, block_bytes=8192)
    assert same_as_single(out, model_dir, texts, tmp_path)
    assert sorted(p.name for p in out.glob("shard-*.npy")) == [f"shard-{i:06d}.npy" for i in range(again.shards)]


def test_a_text_changed_after_a_run_is_redone_by_the_next(client, inputs, model_dir, tmp_path):
    texts = _copies(inputs[:2], tmp_path / "texts")
    out = tmp_path / "shards"
    first = embed_on_cluster(model_dir, texts, out, client=client, block_bytes=8192)
    _later(texts[1], texts[1].read_bytes()[:3000])  # open_shards refuses it now: test_shards
    kept = len(plan_blocks(texts[:1], 8192))  # the unchanged text's shards
    second = embed_on_cluster(model_dir, texts, out, client=client, block_bytes=8192)
    assert second.skipped == kept and second.shards < first.shards
    assert same_as_single(out, model_dir, texts, tmp_path)
    # the shards numbered beyond the new plan were the earlier plan's: gone; nothing else is touched
    assert sorted(p.name for p in out.glob("shard-*.npy")) == [f"shard-{i:06d}.npy" for i in range(second.shards)]
    # another model or other settings are still another job
    with pytest.raises(ModelError, match="shards of another job"):
        embed_on_cluster(model_dir, texts, out, client=client, block_bytes=4096)
