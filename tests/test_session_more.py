"""Held here until they are folded into test_session.py: the output lock, and Ctrl-C in a run of
costly examples."""

from __future__ import annotations

import signal
import time

from conftest import assert_clean_error
from test_session import Shim

from scbow.cli import main


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


def test_ctrl_c_stops_a_run_of_costly_examples_within_seconds(tmp_path, make_text):
    """15,000 negatives an example: one batch of the old fixed size (here the whole epoch) took minutes."""
    corpus = tmp_path / "c.txt"
    corpus.write_text(make_text(n_docs=20, sents_per_doc=1000, seed=2), encoding="utf-8")
    out = tmp_path / "m"
    argv = ["train", corpus, "-o", out, "--dim", "300", "--min-count", "1", "--threads", "1", "-q",
            "--negatives", "15000", "--negative-mode", "uniform"]
    shim = Shim(argv, SHIM_BATCH=1 << 15)  # the real batch size: the run sizes its batches itself
    shim.wait_for("BATCH 0")
    shim.wait_for("BATCH", timeout=60)  # the second batch: training is under way
    sent = time.monotonic()
    shim.proc.send_signal(signal.SIGINT)
    code, stderr = shim.finish()
    assert code == 130, stderr
    assert time.monotonic() - sent < 10, "Ctrl-C waited for a long batch"
    assert "checkpoint written" in stderr and not out.exists()
