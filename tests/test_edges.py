"""The newer edges as safe as the core (hostile inputs by class, several members each).

1. Nothing is removed that the tool cannot prove it wrote: ``cache --clear`` on a folder
   that holds anything else removes nothing, never follows a link out, and clears only
   its own entries.
2. Every reader of text turns every decompression failure (truncated or corrupt gzip,
   bzip2, xz) into the one damaged-file line naming the file.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from conftest import assert_clean_error

from scbow.cli import main

# tab-separated pairs, so that one file is a corpus, a sentence file and a pairs file
# ---------------------------------------------------------------- 2. damaged compressed text


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


# ---------------------------------------------------------------- 7. no output inside a model


# ---------------------------------------------------------------- 5. JSON read against its shape


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


def test_spanned_fraction_tells_a_collapse_from_a_spread():
    from scbow.training.trainer import COLLAPSED, spanned_fraction

    rng = np.random.default_rng(0)
    spread = rng.standard_normal((3000, 50))
    assert spanned_fraction(spread) > 0.9
    lines = rng.standard_normal((3, 50))  # every row near one of three directions, either way
    collapsed = lines[rng.integers(0, 3, 3000)] * rng.choice([-1, 1], (3000, 1)) + 0.01 * spread
    assert spanned_fraction(collapsed) < 3.5 / 50 < COLLAPSED
    assert spanned_fraction(spread[:20]) > 0.5  # 20 rows can span only 20 directions: not a collapse
    assert spanned_fraction(np.zeros((10, 4))) == 1.0 and spanned_fraction(spread[:1]) == 1.0


def test_a_shared_common_direction_is_not_a_collapse():
    """Frequent words of a long run share a strong common direction (the default run on
    gutenberg-100M spans 0.15 of its directions) and are still spread around it: not a
    collapse. Rows near three directions, nothing else, are one."""
    from scbow.training.trainer import KEPT_ENERGY, collapsed, energy_beyond_common, spanned_fraction

    rng = np.random.default_rng(0)
    spread = rng.standard_normal((3000, 300)) / np.sqrt(300)
    c = rng.standard_normal(300)
    common = spread + c / np.linalg.norm(c) * rng.choice([0.6, 1.0], (3000, 1))
    assert spanned_fraction(common) < 0.05  # the old rule alone called this collapsed
    assert energy_beyond_common(common) > 0.5 > KEPT_ENERGY and collapsed(common) is None
    lines = rng.standard_normal((3, 300))
    near_lines = lines[rng.integers(0, 3, 3000)] * rng.choice([-1, 1], (3000, 1)) + 0.01 * spread
    assert energy_beyond_common(near_lines) < 0.01 and collapsed(near_lines) == spanned_fraction(near_lines)
    assert collapsed(near_lines[:500]) is None  # too few words to judge


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


@pytest.fixture
def sts_pairs(tmp_path):
    path = tmp_path / "sts.tsv"
    path.write_text("4.0\tthe cat sat\tthe cat sat down\n1.0\tthe dog ran\ta cat slept\n2.5\tthe cat ran\tthe dog sat\n",
                    encoding="utf-8")
    return path


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


# ---------------------------------------------------------------- third red team


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
