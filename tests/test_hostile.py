"""Issue 15: hostile and damaged inputs, tested by class, several members each.

1. Damaged numbers in a model (NaN, inf, no dimensions, a config that disagrees) are an
   error for every command that reads a model, word2vec file or checkpoint.
2. No value a handler does not expect ends in a traceback: huge integers in every option
   and file, JSON nested deep in every JSON file the tool reads, queries that cancel out.
3. Every run can be stopped: senseless settings are refused, and costly examples make
   smaller batches, so Ctrl-C lands within about a second.
4. No output may be one of the command's inputs or a file inside a model it reads.
5. The smaller cases: STS files with a byte-order mark or absurd gold scores, --init-std
   named in its error, a checkpoint whose header claims more rows than memory.
"""

from __future__ import annotations

import json
import shutil
import signal
import time

import numpy as np
import pytest
from test_cli import TRAIN, assert_clean_error
from test_session import Shim

from scbow.cli import main
from scbow.config import TrainConfig
from scbow.errors import ConfigError, ModelError
from scbow.reading import read_json
from scbow.vectors.formats import load_model


@pytest.fixture
def sts_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("4.0\tthe cat sat\tthe cat sat down\n1.0\tthe dog ran\ta cat slept\n"
                    "2.5\tthe cat ran\tthe dog sat\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------
# 1. Damaged numbers


# ---------------------------------------------------------------------------------------
# 2. No traceback from unexpected values


def deep_json(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("text", [deep_json(), '{"a": ' * 50_000 + "1" + "}" * 50_000, "1" * 5000, "\xff\xfe"])
def test_read_json_turns_every_parse_failure_into_the_given_error(tmp_path, text):
    path = tmp_path / "x.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ModelError, match="x.json: damaged"):
        read_json(path, what="damaged thing")


def test_deep_json_in_every_file_the_tool_reads(tmp_path, runner, healthy, sts_file):
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
    # meta.json of the corpus cache: a damaged cache is rebuilt, not followed
    cache = tmp_path / "cache"
    argv = ["train", str(healthy[1]), "-o", str(tmp_path / "fresh"), *TRAIN, "--cache-dir", str(cache)]
    assert runner.invoke(main, argv).exit_code == 0
    (meta,) = cache.glob("*/meta.json")
    meta.write_text(deep_json())
    shutil.rmtree(tmp_path / "fresh")
    result = runner.invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert json.loads(meta.read_text())["sentences"] > 0  # rebuilt


# ---------------------------------------------------------------------------------------
# 3. Every run can be stopped


@pytest.mark.parametrize("mode", ["document", "uniform"])
def test_negatives_at_least_the_sentences_are_refused(tmp_path, runner, mode):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"sentence number {i} here.\n" for i in range(10)))
    for negatives, ok in ((9, False), (10, False), (100_000, False), (8, True)):
        result = runner.invoke(main, ["train", str(corpus), "-o", str(tmp_path / "m"), *TRAIN, "--negatives",
                                      str(negatives), "--negative-mode", mode])
        if ok:
            assert result.exit_code == 0, result.output
        else:
            assert_clean_error(result, "--negatives", "10 usable sentences", "at most 8")
            assert not (tmp_path / "m").exists()


def test_costly_examples_make_smaller_batches(healthy):
    from scbow.training.corpus import load_corpus
    from scbow.training.trainer import BATCH, batch_size

    corpus = load_corpus([healthy[1]], 1, 0, use_cache=False)
    assert batch_size(TrainConfig(), corpus) == BATCH  # the defaults keep the full batch
    sizes = [batch_size(TrainConfig(negatives=n), corpus) for n in (2, 50, 500, 5000, 50_000)]
    assert sizes[0] == BATCH and all(a > b for a, b in zip(sizes, sizes[1:])) and sizes[-1] >= 1
    assert batch_size(TrainConfig(dim=100_000), corpus) < BATCH // 50
    assert batch_size(TrainConfig(dim=100_000, negatives=1_000_000), corpus) == 1
    # the work of one batch stays about constant
    length = len(corpus.tokens) / corpus.n_sentences
    works = [batch_size(TrainConfig(negatives=n), corpus) * (3 + n) * (length + 2) for n in (50, 500, 5000)]
    assert max(works) / min(works) < 1.1
    # the skip-gram term's work counts too (issue 34: --word-window 100 --word-negatives 100 ignored Ctrl-C)
    plain = batch_size(TrainConfig(word_window=5), corpus)
    assert batch_size(TrainConfig(word_window=100, word_negatives=100), corpus) < plain // 100


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


# ---------------------------------------------------------------------------------------
# 4. Outputs never overwrite inputs


# ---------------------------------------------------------------------------------------
# 5. The smaller ones


def test_sts_files_with_a_bom_and_absurd_gold_scores(tmp_path, runner, healthy):
    bom = tmp_path / "bom.tsv"
    bom.write_bytes("\ufeff5.000\tthe cat sat\tthe cat sat\n1.0\tthe dog\ta cat\n2\tcat\tdog\n".encode("utf-8"))
    result = runner.invoke(main, ["evaluate", "-m", str(healthy[0]), str(bom)])
    assert result.exit_code == 0, result.output
    for gold in ("1e308", "-1e308", "1e7"):
        bad = tmp_path / "bad.tsv"
        bad.write_text(f"1.0\tthe cat\ta cat\n{gold}\tthe dog\ta dog\n")
        assert_clean_error(runner.invoke(main, ["evaluate", "-m", str(healthy[0]), str(bad)]), "line 2", "out of range")


def test_a_checkpoint_whose_header_claims_too_many_rows(tmp_path, runner, healthy):
    out = tmp_path / "run"
    ckpt = shutil.copytree(healthy[0], tmp_path / "run.checkpoint")
    header = np.lib.format.header_data_from_array_1_0(np.zeros((2, 16), np.float32))
    header["shape"] = (10 ** 12, 16)
    with open(ckpt / "vectors.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, header)
        fh.write(b"\0" * 128)
    (ckpt / "state.json").write_text(json.dumps({"checkpoint_version": 1, "state": {}, "config": {}, "corpus": {}}))
    result = runner.invoke(main, ["train", str(healthy[1]), "-o", str(out), *TRAIN, "--resume"])
    error = assert_clean_error(result, exit_code=1)
    assert "--dim" not in error and "memory" not in error
    # the same file as a model: refused as damaged, never allocated
    shutil.copy(ckpt / "vectors.npy", shutil.copytree(healthy[0], tmp_path / "m") / "vectors.npy")
    with pytest.raises(ModelError, match="cannot read vectors"):
        load_model(tmp_path / "m", mmap=False)


def test_config_bounds_hold_in_the_api():
    for bad in (dict(epochs=10 ** 20), dict(dim=0), dict(dim=True), dict(init_std=1e300), dict(negatives=2.0)):
        with pytest.raises(ConfigError):
            TrainConfig(**bad)


# ---------------------------------------------------------------------------------------
# Found by a second pass of the same classes (a red-team run): numbers that are finite but
# still no model, and the messages around them


@pytest.mark.parametrize("pearson", [1e308, 2.0, -1e300])
def test_a_curve_with_impossible_correlations_is_damaged(tmp_path, runner, pearson):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"points": [{"examples": 1, "dev": {"pearson": pearson}}]}))
    assert_clean_error(runner.invoke(main, ["plot", str(path), "-o", str(tmp_path / "p.png")]), "not a correlation")


def test_the_batch_cost_counts_only_the_words_max_length_keeps(tmp_path):
    from scbow.training.corpus import load_corpus
    from scbow.training.trainer import BATCH, BATCH_COST, batch_size

    words = [f"w{i}" for i in range(50)]
    text = "".join(" ".join(words[(i + j) % 50] for j in range(200)) + "\n" for i in range(60))
    (tmp_path / "long.txt").write_text(text)  # sentences of 200 words
    corpus = load_corpus([tmp_path / "long.txt"], 1, 0, use_cache=False)
    config = dict(dim=300, negatives=2)
    uncut = batch_size(TrainConfig(**config), corpus)
    assert uncut == int(BATCH * BATCH_COST / (5 * 202 * 300))
    for cut in (5, 40, 100):  # an example reads at most max_length words of each sentence
        assert batch_size(TrainConfig(**config, max_length=cut), corpus) == min(
            BATCH, int(BATCH * BATCH_COST / (5 * (cut + 2) * 300)))
    assert batch_size(TrainConfig(**config, max_length=5), corpus) == BATCH > uncut
