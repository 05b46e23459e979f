"""STS learning curves: ``train --eval-every``, curve.json, and ``scbow-numba plot``."""

from __future__ import annotations

import json
import random
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import WORDS, make_runner
from conftest import assert_clean_error as _assert_clean_error
from conftest import assert_failed as assert_clean_error

import scbow.use.data as data_mod
from scbow.cli import main
from scbow.config import TrainConfig
from scbow.training import trainer as trainer_mod
from scbow.training.corpus import load_corpus
from scbow.training.curve import CurveHook
from scbow.training.hooks import Hook
from scbow.training.postprocess import CommonComponents, remove_common_components
from scbow.use.evaluate import read_sts, score_set
from scbow.vectors.formats import load_model
from scbow.vectors.model import Model
from scbow.vectors.numeric import mean_rows

TRAIN = ["--dim", "16", "--epochs", "2", "--min-count", "1", "--threads", "1", "-q", "--common-components", "1",
         "--word-passes", "0"]
WORD_PART = ["--word-passes", "2", "--word-dim", "8"]  # given after TRAIN, these win
BATCH = 16
EVERY = 40


def write_sts(path, n_pairs: int, seed: int):
    """Pairs of sentences of the corpus's words; gold = 5 x word overlap (Jaccard)."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_pairs):
        a = [rng.choice(WORDS) for _ in range(rng.randint(3, 7))]
        b = [rng.choice(WORDS) for _ in range(rng.randint(3, 7))]
        b[: rng.randint(0, 3)] = a[: 3]  # some overlap, varying
        gold = 5 * len(set(a) & set(b)) / len(set(a) | set(b))
        lines.append(f"{gold:.3f}\t{' '.join(a)}.\t{' '.join(b)}.\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def setup(tmp_path, small_corpus_file, monkeypatch):
    monkeypatch.setattr(trainer_mod, "BATCH", BATCH)  # several batches per epoch
    dev = write_sts(tmp_path / "dev.tsv", 40, seed=1)
    tests = tmp_path / "tests"
    tests.mkdir()
    write_sts(tests / "a.tsv", 25, seed=2)
    write_sts(tests / "b.tsv", 30, seed=3)
    monkeypatch.setenv("SCBOW_STS_DEV", str(dev))
    return {"corpus": small_corpus_file, "dev": dev, "tests": tests, "tmp": tmp_path}


def train_cli(setup, out, *extra):
    result = make_runner().invoke(main, ["train", str(setup["corpus"]), "-o", str(out), *TRAIN, *extra])
    assert result.exit_code == 0, result.output
    return load_model(out)


def expected_examples(per_epoch: int, epochs: int, batch: int, every: int) -> list[int]:
    """Points: before training, the first batch end at or past every multiple of ``every``, epoch ends."""
    ends = [e * per_epoch + min(lo + batch, per_epoch) for e in range(epochs) for lo in range(0, per_epoch, batch)]
    total = per_epoch * epochs
    points = {0} | {e * per_epoch for e in range(1, epochs + 1)}
    points |= {min(x for x in ends if x >= m) for m in range(every, total + 1, every)}
    return sorted(points)


def test_train_writes_curve(setup):
    out = setup["tmp"] / "model"
    model = train_cli(setup, out, "--eval-every", str(EVERY), "--eval-sets", str(setup["tests"]))
    curve = json.loads((out / "curve.json").read_text())
    meta = json.loads((out / "config.json").read_text())
    assert "curve" not in meta
    per_epoch = meta["training"]["targets_per_epoch"]
    assert per_epoch > 2 * BATCH  # several batches per epoch, or the test proves little
    points = curve["points"]
    examples = [p["examples"] for p in points]
    assert examples == expected_examples(per_epoch, 2, BATCH, EVERY) == sorted(set(examples))
    assert [p["epoch_end"] for p in points] == [x > 0 and x % per_epoch == 0 for x in examples]
    assert points[0]["loss"] is None and all(p["loss"] > 0 for p in points[1:])
    assert [p["fraction"] for p in points] == pytest.approx([x / (2 * per_epoch) for x in examples], abs=1e-6)
    assert [p["epoch"] for p in points] == pytest.approx([x / per_epoch for x in examples], abs=1e-6)
    for p in points:
        assert all(-1 <= p[key][stat] <= 1 for key in ("dev", "dev_raw") for stat in ("pearson", "spearman"))
        assert p["dev"]["pairs"] == 40 and p["dev"]["scored"] == 40
        assert set(p["test"]["pearson"]) == {"a", "b"}
        assert p["test"]["pearson_mean"] == pytest.approx(np.mean(list(p["test"]["pearson"].values())), abs=1e-5)
        assert p["eval_seconds"] >= 0 and p["seconds"] >= 0
    seconds = [p["seconds"] for p in points]
    assert seconds == sorted(seconds)
    assert curve["evaluations"] == len(points) and curve["every"] == EVERY
    assert [t["name"] for t in curve["test"]] == ["a", "b"]
    # the evaluation time is recorded, and kept out of the kernel timing
    t = meta["training"]
    assert t["evaluations"] == len(points)
    assert t["hook_seconds"] >= t["eval_seconds"] - 0.01
    assert t["wall_seconds"] >= t["kernel_seconds"] + t["hook_seconds"] - 0.01
    assert model.info["curve"] == curve  # load_model exposes the curve


def test_no_post_processing_scores_vectors_as_trained(setup):
    args = list(TRAIN)
    args[args.index("--common-components") + 1] = "-1"
    model = train_cli(setup, setup["tmp"] / "raw", *args, "--eval-every", "1k")
    curve = model.info["curve"]
    assert curve["post_processing"] is None
    assert [p["examples"] for p in curve["points"]][0] == 0 and all(p["epoch_end"] for p in curve["points"][1:])
    assert all(p["dev"]["pearson"] == p["dev_raw"]["pearson"] for p in curve["points"])
    dev = score_set(model.encode, read_sts(setup["dev"]))
    assert curve["points"][-1]["dev"]["pearson"] == pytest.approx(dev.pearson, abs=1e-5)


def test_common_components_match_the_trainer(small_corpus_file, tmp_path):
    """The estimator applied to averages equals remove_common_components applied to the rows."""
    corpus = load_corpus([small_corpus_file], 1, 0, cache_dir=tmp_path / "cache")
    rng = np.random.default_rng(5)
    W = rng.standard_normal((len(corpus.vocab), 12)).astype(np.float32)
    W[:, 0] += 2.0  # a common direction for the post-processing to find
    expected = W.copy()
    remove_common_components(expected, corpus, 3, seed=7, sample=50)
    mean, U = CommonComponents(corpus, 3, seed=7, sample=50).fit(W)
    assert U.shape == (3, 12)
    assert np.allclose(U.astype(np.float64) @ U.T, np.eye(3), atol=1e-6)
    ids = np.asarray(corpus.tokens[: corpus.offsets[20]], dtype=np.int64)
    lengths = np.diff(np.asarray(corpus.offsets[:21]))
    got = CommonComponents.apply(mean_rows(W, ids, lengths), mean, U)
    assert np.allclose(got, mean_rows(expected, ids, lengths), atol=1e-5)
    # a different sample gives a different estimate (the test can tell them apart)
    mean2, _ = CommonComponents(corpus, 3, seed=8, sample=50).fit(W)
    assert not np.allclose(mean, mean2)


def test_bad_eval_options(setup, monkeypatch):
    out = setup["tmp"] / "model"
    args = ["train", str(setup["corpus"]), "-o", str(out), *TRAIN, "--eval-every", "100"]

    def refused(argv, *fragments, usage=False):
        # a value given on the command line is a usage error (2); what the data holds exits 1
        _assert_clean_error(make_runner().invoke(main, argv), *fragments, exit_code=2 if usage else 1)

    refused([*args[:-1], "1.5"], "--eval-every", "'1.5'", usage=True)  # the other bad counts: test_units.py
    monkeypatch.setenv("SCBOW_STS_DEV", str(setup["tmp"] / "nope.tsv"))
    refused(args, "SCBOW_STS_DEV", "no such file")
    monkeypatch.delenv("SCBOW_STS_DEV")
    monkeypatch.chdir(setup["tmp"])  # no shared/data/sts-dev from here, nor (patched) beside the checkout
    monkeypatch.setattr(data_mod, "data_places", lambda name: [Path("shared/data") / name])
    refused(args, "no STS dev set", "--eval-dev")
    refused(args + ["--eval-dev", "missing.tsv"], "missing.tsv", usage=True)
    refused(args + ["--eval-dev", str(setup["dev"]), "--eval-sets", "nothing-here"], "nothing-here")
    bad = setup["tmp"] / "bad.tsv"
    bad.write_text("1.0\tonly two fields\n", encoding="utf-8")
    refused(args + ["--eval-dev", str(bad)], "bad.tsv")
    refused(["train", str(setup["corpus"]), "-o", str(out), *TRAIN, "--eval-dev", str(setup["dev"])], "--eval-every", usage=True)
    assert not out.exists()


@pytest.fixture(scope="module")
def curved_model(tmp_path_factory, make_text):
    """A model trained with --eval-every 50 (batches of 16), shared by the plot tests, which only read it."""
    base = tmp_path_factory.mktemp("curved")
    (base / "corpus.txt").write_text(make_text(), encoding="utf-8")  # small_corpus_file's text
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(trainer_mod, "BATCH", BATCH)
        mp.setenv("SCBOW_STS_DEV", str(write_sts(base / "dev.tsv", 40, seed=1)))
        mp.setenv("SCBOW_CACHE_DIR", str(base / "cache"))
        train_cli({"corpus": base / "corpus.txt"}, base / "model", "--eval-every", "50")
    return base / "model"


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plot_errors(curved_model, healthy, tmp_path, monkeypatch, runner):
    """Each found before matplotlib (an optional extra) is imported."""
    plain = healthy[0]  # trained without --eval-every
    assert not (plain / "curve.json").exists()
    assert_clean_error(runner.invoke(main, ["plot", str(plain), "-o", str(tmp_path / "x.png")]),
                       "no learning curve", "--eval-every")
    assert_clean_error(runner.invoke(main, ["plot", str(tmp_path / "nothing")]), "no such model")
    (tmp_path / "notes.txt").write_text("mine")  # a PNG under another name: refused, the file kept
    for name in ("notes.txt", "curve.pdf"):
        assert_clean_error(runner.invoke(main, ["plot", str(curved_model), "-o", str(tmp_path / name)]), "a .png name")
    assert (tmp_path / "notes.txt").read_text() == "mine" and not (tmp_path / "curve.pdf").exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert_clean_error(runner.invoke(main, ["plot", str(bad)]), "bad.json", "not valid JSON")
    bad.write_text('{"points": 3}', encoding="utf-8")
    assert_clean_error(runner.invoke(main, ["plot", str(bad)]), "not a learning curve")
    for pearson in (1e308, 2.0, -1e300):
        bad.write_text(json.dumps({"points": [{"examples": 1, "dev": {"pearson": pearson}}]}))
        assert_clean_error(runner.invoke(main, ["plot", str(bad), "-o", str(tmp_path / "p.png")]), "not a correlation")
    assert_clean_error(runner.invoke(main, ["plot", str(curved_model), "-o", str(tmp_path / "no" / "dir.png")]),
                       "no such directory")
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "p.png").exists()
    monkeypatch.setenv("SCBOW_MODEL", str(plain))  # the default model location is used without MODEL
    assert_clean_error(runner.invoke(main, ["plot"]), str(plain))


def test_plot_without_matplotlib(curved_model, tmp_path, monkeypatch):  # plot --help: test_cli.py
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    monkeypatch.delitem(sys.modules, "scbow.use.plot", raising=False)
    result = make_runner().invoke(main, ["plot", str(curved_model), "-o", str(tmp_path / "c.png")])
    assert_clean_error(result, "matplotlib", "pip install 'scbow-numba[plot]'")
    assert not (tmp_path / "c.png").exists()


@pytest.mark.parametrize("unknown", ["pieces", "hash", "omit"])
@pytest.mark.parametrize("word", [[], WORD_PART], ids=["sentence-part", "word-part"])
def test_last_point_scores_the_saved_model_with_unknown_words(setup, unknown, word):
    """Words outside the vocabulary count in the curve as the saved model counts them."""
    rng = random.Random(4)
    lines = []
    for n in range(40):
        # unknown words of known words' letters (pieces they have), and of letters no word has (none)
        rare = [WORDS[k] + WORDS[k + 1] + WORDS[k + 2] for k in range(7)]
        a = [rng.choice(WORDS) for _ in range(rng.randint(2, 5))] + [rare[n % 7], f"zork{n % 7}"]
        b = a[:2] + [rare[(n + rng.randint(0, 1)) % 7], f"quux{n}"]
        lines.append(f"{rng.uniform(0, 5):.3f}\t{' '.join(a)}.\t{' '.join(b)}.\n")
    dev = setup["tmp"] / f"dev-{unknown}.tsv"
    dev.write_text("".join(lines), encoding="utf-8")
    model = train_cli(setup, setup["tmp"] / "model", *word, "--eval-every", "1k", "--eval-dev", str(dev),
                      "--unknown", unknown)
    assert model.unknown_rule[0] == unknown
    # with a word part the last point scores the saved rows, both parts; the points before, the sentence part
    curve = model.info["curve"]
    assert [bool(p.get("word_part")) for p in curve["points"]][-2:] == [False, bool(word)]
    assert curve["unknown"] == unknown
    sts = read_sts(dev)
    saved = score_set(model.encode, sts).pearson
    assert curve["points"][-1]["dev"]["pearson"] == pytest.approx(saved, abs=1e-4)
    other = score_set(lambda s: model.encode(s, unknown="omit" if unknown != "omit" else "hash"), sts).pearson
    assert abs(saved - other) > 1e-3  # the unknown words matter here, so the rule was really followed


def test_intermediate_points_score_the_post_processed_vectors_of_that_moment(setup, tmp_path):
    """Each point within the run is the score of the vectors at that moment after the
    post-processing estimated on the hook's sample, recomputed here from a copy of them."""
    config = TrainConfig(dim=16, epochs=2, min_count=1, threads=1, common_components=2, seed=3)
    corpus = load_corpus([setup["corpus"]], 1, cache_dir=tmp_path / "c")
    dev = read_sts(setup["dev"])
    hook = CurveHook(dev, every=EVERY, common_components=2, seed=config.seed, sample=60)
    with pytest.raises(ValueError):
        CurveHook(dev, every=0, common_components=2, seed=1)
    copies = {}

    class Recorder(Hook):
        def after_batch(self, state, matrices):
            copies[state.done] = np.array(matrices["sentence"], copy=True)

    result = trainer_mod.train(corpus, config, quiet=True, hooks=[hook, Recorder()])
    hook.attach(result.model)  # the Python API's way to the curve
    assert result.model.info["curve"]["post_processing"]["common_components"] == 2
    inner = [p for p in hook.points if 0 < p["examples"] < 2 * corpus.n_sentences and not p["epoch_end"]]
    assert len(inner) >= 2
    post = CommonComponents(corpus, 2, config.seed, 60)
    for p in inner:
        W = copies[p["examples"]]
        mean, U = post.fit(W)
        raw = Model(corpus.vocab, W, {"unknown": "omit"}).encode
        expected = score_set(lambda sentences: CommonComponents.apply(raw(sentences).astype(np.float64), mean, U),
                             dev).pearson
        assert p["dev"]["pearson"] == pytest.approx(expected, abs=1e-6)
        assert p["dev_raw"]["pearson"] == pytest.approx(score_set(raw, dev).pearson, abs=1e-6)
        assert abs(expected - score_set(raw, dev).pearson) > 1e-4  # the post-processing changes the score


def test_plot_writes_png_and_draws_text_as_it_reads(curved_model, tmp_path, monkeypatch, runner):
    """The legend sits below the axes: inside, it covered the end of the dashed 'as trained' curve. A $ is a
    dollar sign, not matplotlib's TeX (which mangled 'cost $5 and $' and failed on '$\\frac{$'); a title that
    is not text (bytes of another encoding in argv) is one Error line."""
    pytest.importorskip("matplotlib")
    from scbow.use import plot as plot_mod

    result = runner.invoke(main, ["plot", str(curved_model), "-o", str(tmp_path / "m.png")])
    assert result.exit_code == 0, result.output
    width, height = png_size(tmp_path / "m.png")
    assert width > 100 and height > 100
    curve = json.loads((curved_model / "curve.json").read_text())
    curve["dev"]["name"] = "dev $\\frac{$ \ud800"  # a damaged curve.json: TeX and a lone surrogate
    (tmp_path / "curve.json").write_text(json.dumps(curve))
    for title in ("cost $5 and $", "price $\\frac{$"):  # a curve.json file on its own works too
        result = runner.invoke(main, ["plot", str(tmp_path / "curve.json"), "-o", str(tmp_path / "c.png"), "--title", title])
        assert result.exit_code == 0, result.output
        png_size(tmp_path / "c.png")
    assert not list(tmp_path.glob(".*.tmp-*"))
    result = runner.invoke(main, ["plot", str(curved_model), "-o", str(tmp_path / "s.png"), "--title", "bad \udcff"])
    assert_clean_error(result, "--title: not UTF-8 text")
    assert not (tmp_path / "s.png").exists()
    figures = []
    close = plot_mod.plt.close
    monkeypatch.setattr(plot_mod.plt, "close", lambda fig=None: figures.append(fig))
    try:
        plot_mod.plot_curve(curve, tmp_path / "d.png", title="cost $5 and $")
        fig = figures[-1]
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        legend, axes = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
        assert legend.y1 <= axes.y0  # wholly below the plotting area
        assert 0 <= legend.y0 and 0 <= legend.x0 and legend.x1 <= fig.bbox.x1  # and inside the picture
        assert ax.get_title() == "cost $5 and $" and not ax.title.get_parse_math()
        names = [text.get_text() for text in ax.get_legend().get_texts()]
        assert names[0] == "dev $\\frac{$ ? (as saved)" and not any(t.get_parse_math() for t in ax.get_legend().get_texts())
    finally:
        for fig in figures:
            close(fig)
