"""JSON records read back from disk (scbow.reading.read_json): every parse failure, a document
nested too deep included, is the caller's one error naming the file; every record the tool reads
(a model's config.json, curve.json, a checkpoint's state.json, the cache's meta.json) goes
through it."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import TRAIN, assert_clean_error

from scbow.cli import main
from scbow.errors import ModelError
from scbow.reading import read_json


def deep_json(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("text", [deep_json(), '{"a": ' * 50_000 + "1" + "}" * 50_000, "1" * 5000, "\xff\xfe"])
def test_read_json_turns_every_parse_failure_into_the_given_error(tmp_path, text):
    path = tmp_path / "x.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ModelError, match="x.json: damaged"):
        read_json(path, what="damaged thing")


@pytest.mark.parametrize("make", [lambda p: p.mkdir(), lambda p: p.symlink_to("/dev/zero"), os.mkfifo])
def test_read_json_refuses_what_is_no_regular_file(tmp_path, make):
    make(tmp_path / "x.json")
    with pytest.raises(ModelError, match=r"x.json: damaged thing \(a (directory|pipe or a device) where a file belongs"):
        read_json(tmp_path / "x.json", what="damaged thing")


def test_deep_json_in_every_file_the_tool_reads(tmp_path, runner, healthy):
    # config.json of a model
    model = shutil.copytree(healthy[0], tmp_path / "model")
    (model / "config.json").write_text(deep_json())
    assert_clean_error(runner.invoke(main, ["similarity", "-m", str(model), "a cat", "a dog"]), "nested too deep")
    # curve.json, read by plot
    model = shutil.copytree(healthy[0], tmp_path / "curve-model")
    (model / "curve.json").write_text(deep_json())
    assert_clean_error(runner.invoke(main, ["plot", str(model), "-o", str(tmp_path / "c.png")]), "nested too deep")
    (model / "curve.json").write_text(json.dumps({"points": [{"examples": 10 ** 400, "dev": {"pearson": 1}}]}))
    assert_clean_error(runner.invoke(main, ["plot", "-m", str(model), "-o", str(tmp_path / "c.png")]), "malformed")
    # state.json of a checkpoint
    out = tmp_path / "run"
    ckpt = shutil.copytree(healthy[0], tmp_path / "run.checkpoint")
    (ckpt / "state.json").write_text(deep_json())
    result = runner.invoke(main, ["train", str(healthy[1]), "-o", str(out), *TRAIN, "--resume"])
    assert_clean_error(result, "damaged checkpoint", "nested too deep")
    # meta.json of the cache: test_cache.test_a_damaged_meta_is_listed_and_rebuilt_never_followed


def test_a_short_write_is_named_a_full_disk():
    import errno

    from scbow.reading import os_error_text

    assert os_error_text(OSError("1472700 requested and 18400 written")) == \
        "No space left on device (wrote 18,400 of 1,472,700 bytes)"
    assert os_error_text(OSError(errno.ENOSPC, "No space left on device")) == "No space left on device"
    assert os_error_text(PermissionError(errno.EACCES, "Permission denied", "x")) == "Permission denied"
