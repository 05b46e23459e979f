"""The training driver on a slice of the real corpus, and on tiny synthetic ones."""

from __future__ import annotations

import importlib
import logging
import re

import numba  # noqa: E402  (a dependency: an import error must fail, not skip)
import numpy as np
import pytest
from conftest import TRAIN, assert_clean_error, files_under, train_args

import scbow
import scbow.kernels
from scbow import kernels as cpu  # the CPU kernels' constants live in the package, compiled by nothing
from scbow.cli import main
from scbow.config import ConfigError, TrainConfig
from scbow.training import start as start_mod
from scbow.training.backends import cpu as cpu_backend
from scbow.training.backends.cpu import CpuBackend, compiled_already
from scbow.training.backends.params import WORD_STREAM, kernel_params, word_params
from scbow.training.checkpoint import checkpoint_dir
from scbow.training.collapse import Spread, Verdict, spread_of
from scbow.training.corpus import load_corpus, read_corpus
from scbow.training.hooks import Hook, TrainState
from scbow.training.session import lock_path
from scbow.training.trainer import BATCH, BATCH_COST, TrainingError, batch_size, train
from scbow.training.wordpart import WordPart
from scbow.vectors.formats import load_model

# the submodule, not the top-level function scbow.train
train_mod = importlib.import_module("scbow.training.trainer")


@pytest.fixture(scope="module")
def corpus(gutenberg_slice, tmp_path_factory):
    """The first 20,000 lines of gutenberg-1M (about 20k sentences in 6 books)."""
    return load_corpus([gutenberg_slice(20000)], min_count=2, cache_dir=tmp_path_factory.mktemp("cache"))


FIELDS = TrainConfig.__dataclass_fields__
# Pinned instead of the tuned defaults: the paper's plain objective (no weight decay), the vectors as
# SGD left them (no post-processing) and the sentence part alone (the word part: tests/test_wordpart.py).
PLAIN = {k: v for k, v in (("weight_decay", 0.0), ("common_components", -1), ("word_passes", 0)) if k in FIELDS}


def config(**kw):
    return TrainConfig(**{**dict(dim=32, epochs=1, threads=1, seed=7, lr=0.05, **PLAIN), **kw})


@pytest.fixture(scope="module")
def trained(corpus):
    """``trained(**settings)``: ``train(corpus, config(**settings))``, run once per settings in this module."""
    runs = {}

    def get(**kw):
        cfg = config(**kw)
        if cfg not in runs:
            runs[cfg] = train(corpus, cfg, quiet=True)
        return runs[cfg]

    return get


def neighbour_margin(W, c, seed=0):
    """Mean cosine of neighbouring sentences minus that of random pairs of sentences."""
    sums = np.add.reduceat(np.asarray(W, dtype=np.float32)[c.tokens], c.offsets[:-1], axis=0)
    unit = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    same = c.sent_doc[1:] == c.sent_doc[:-1]
    neighbours = (unit[1:] * unit[:-1]).sum(axis=1)[same].mean()
    perm = np.random.default_rng(seed).permutation(len(unit))
    return float(neighbours - (unit * unit[perm]).sum(axis=1).mean())


def test_loss_falls_and_neighbours_come_closer(corpus, monkeypatch):
    """One loss per batch (each batch's run position: test_the_kernel_sees_the_run_position_across_epochs)."""
    monkeypatch.setattr(train_mod, "BATCH", 2048)  # several loss readings per epoch
    result = train(corpus, config(epochs=4), quiet=True)
    assert len(result.losses) == 4 * -(-len(start_mod.trainable_targets(corpus)) // 2048) >= 20
    losses = np.array(result.losses)
    assert np.isfinite(losses).all()
    first, last = losses[:3].mean(), losses[-3:].mean()
    assert first < 1.45  # chance is log 4 = 1.386 for 2 positives and 2 negatives
    assert last < first - 0.08, losses
    # the objective, measured apart from the reported loss: neighbours become closer than random pairs
    before = neighbour_margin(start_mod.init_vectors(len(corpus.vocab), config(epochs=4)), corpus)
    after = neighbour_margin(result.model.vectors, corpus)
    assert after > before + 0.2, (before, after)
    info = result.model.info["training"]
    assert info["first_loss"] == result.losses[0] and info["examples"] == result.examples


def test_same_seed_is_bit_identical_another_seed_differs_and_the_model_carries_its_config(corpus, trained):
    a, b, c = trained(epochs=2), train(corpus, config(epochs=2), quiet=True), trained(epochs=2, seed=4)
    va, vb, vc = (np.asarray(r.model.vectors) for r in (a, b, c))
    assert va.dtype == np.float32 and va.shape == (len(corpus.vocab), 32) and np.isfinite(va).all()
    assert np.array_equal(va.view(np.uint32), vb.view(np.uint32)) and a.losses == b.losses
    assert not np.allclose(va, vc)
    cfg = config(negatives=3, negative_mode="uniform", max_length=20)  # the model carries its config and corpus stats
    model = trained(negatives=3, negative_mode="uniform", max_length=20).model
    assert model.config == cfg.to_dict() and TrainConfig.from_dict(model.config) == cfg
    assert model.vocab.words == corpus.vocab.words and model.dim == 32 and len(model) == len(corpus.vocab)
    assert model.info["corpus"] == dict(corpus.stats) and model.info["corpus"]["sentences"] == corpus.n_sentences


def test_two_threads_train(corpus):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread here")
    result = train(corpus, config(epochs=2, threads=2), quiet=True)
    v = np.asarray(result.model.vectors)
    assert np.isfinite(v).all() and result.model.info["training"]["threads"] == 2
    assert result.examples == 2 * len(start_mod.trainable_targets(corpus))
    assert result.losses[-1] < result.losses[0]
    assert np.abs(v - start_mod.init_vectors(len(corpus.vocab), config())).max() > 1e-3


def test_weight_decay_shrinks_frequent_words(trained):
    plain, decayed = trained(epochs=2).model.vectors, trained(epochs=2, weight_decay=1e-2).model.vectors
    assert np.isfinite(decayed).all()
    top = slice(0, 10)  # the vocabulary is sorted by frequency
    ratio = np.linalg.norm(decayed[top], axis=1).mean() / np.linalg.norm(plain[top], axis=1).mean()
    assert ratio < 0.7, ratio


@pytest.mark.parametrize("k", [0, 3])
def test_common_components_are_a_linear_map_of_the_trained_vectors(corpus, trained, k):
    raw = np.asarray(trained().model.vectors, np.float64)  # config(): common_components -1
    post = np.asarray(trained(common_components=k).model.vectors, np.float64)
    # the sentence averages of the whole corpus (fewer sentences than the sample size)
    starts, lengths = np.asarray(corpus.offsets[:-1]), np.diff(corpus.offsets)[:, None]
    S = np.add.reduceat(raw[corpus.tokens], starts, axis=0) / lengths
    mean = S.mean(axis=0)
    U = np.linalg.svd(S - mean, full_matrices=False)[2][:k]
    expected = (raw - mean) - ((raw - mean) @ U.T) @ U
    assert np.abs(post - expected).max() < 1e-4 * np.abs(raw).max()
    # so the averages of the new vectors are centred and have nothing along U
    S_post = np.add.reduceat(post[corpus.tokens], starts, axis=0) / lengths
    assert np.abs(S_post.mean(axis=0)).max() < 1e-4 * np.abs(S).max()
    if k:
        assert np.abs(S_post @ U.T).max() < 1e-4 * np.abs(S).max()


def test_minimal_trainable_corpus(tmp_path):
    # 4 sentences in one document: the middle ones have two positives and one candidate
    # negative left; the sampler must not hang
    (tmp_path / "a.txt").write_text("a b.\nb c.\nc d.\nd a.\n")
    corpus = load_corpus([tmp_path / "a.txt"], 1, 0, use_cache=False)
    for mode in ("document", "uniform"):
        result = train(corpus, TrainConfig(dim=8, min_count=1, threads=1, negatives=2, negative_mode=mode, epochs=2),
                       quiet=True)
        assert result.examples == 8 and np.isfinite(result.model.vectors).all()


def test_a_matrix_that_ends_not_finite_is_never_a_model(corpus, monkeypatch):
    """The check on the final vectors, apart from the loss check: finite losses throughout,
    but the matrix handed back holds an inf (as a racing write could leave)."""
    original = CpuBackend.close

    def close(self):
        W = original(self)
        W[5, 3] = np.inf
        return W

    monkeypatch.setattr(CpuBackend, "close", close)
    with pytest.raises(TrainingError, match="embeddings hold NaN or inf"):
        train(corpus, config(), quiet=True)


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize("field, value, words", [
    *[(f, v, f) for f, v in [
        ("dim", 0), ("dim", 2.5), ("dim", True), ("negatives", 0), ("negatives", 2.0), ("min_count", 0), ("epochs", 0),
        ("max_vocab", -1), ("max_length", -1), ("threads", -1), ("lr", 0.0), ("lr", float("nan")), ("lr", float("inf")),
        ("lr", -1e-9), ("init_std", 0.0), ("init_std", 1e300), ("min_lr_fraction", 1.5), ("min_lr_fraction", float("nan")),
        ("weight_decay", -0.1), ("weight_decay", float("nan")), ("negative_mode", "random"), ("device", "tpu"),
        ("seed", 1.5), ("seed", -1), ("seed", 2**63), ("word_passes", -1), ("word_dim", 0), ("word_mix", float("nan")),
        ("weight_decay", 1e300), ("count_power", 1e300), ("unknown_scale", float("inf")), ("unknown_scale", 0.0),
        ("frequency_weight", -1.0), ("frequency_weight", 1e-12), ("frequency_weight", 1e-320),  # underflows float32
        *((f, v) for f in ("dim", "negatives", "min_count", "max_vocab", "epochs", "max_length", "threads", "seed",
                           "common_components", "count_floor") for v in (10**20, -10**20))]],
    ("word_mix", 1e-300, "word_mix must be a number >= 1e-06"),  # its word part underflowed to zeros
    ("word_mix", 0.0, "word_mix must be a number >= 1e-06"),
])
def test_config_validation(field, value, words):
    """Every bad value is one ConfigError line naming its field (seeds outside [0, 2**63) too)."""
    with pytest.raises(ConfigError) as info:
        TrainConfig(**{field: value})
    assert words in str(info.value) and "\n" not in str(info.value)


def test_config_round_trip():
    cfg = config(dim=12, lr=0.1, negative_mode="uniform")
    assert TrainConfig.from_dict({**cfg.to_dict(), "unknown_future_field": 1}) == cfg
    assert cfg.replace(dim=13).dim == 13
    with pytest.raises(ConfigError):
        cfg.replace(dim=-1)


def test_kernel_params_take_each_field_from_its_own_setting():
    """Hot rows are buffered only with several threads (one thread: plain per-example SGD, reproducible);
    the fields have values all different, so that one read from another fails here."""
    one, two = kernel_params(config(), 1, 100), kernel_params(config(), 2, 100)
    assert one.hot == 0 and one.chunks == 1 and two.chunks == 2
    assert two.hot == cpu.HOT_ROWS > 0 and two.flush == cpu.FLUSH_EVERY > 0
    assert one.total == 100 and one.lr == config().lr and one.negatives == config().negatives
    cfg = TrainConfig(negatives=2, lr=0.125, dim=8, weight_decay=0.0, max_length=11, seed=13, word_context=3,
                      word_noise=7, word_lr=0.045, min_lr_fraction=0.5)
    p = kernel_params(cfg, 1, 100)
    assert (int(p.negatives), float(p.lr), int(p.max_len), int(p.seed), float(p.total)) == (2, 0.125, 11, 13, 100.0)
    w = word_params(cfg, 50)
    assert (int(w.window), int(w.negatives), float(w.lr), float(w.lr_min), int(w.seed), float(w.total),
            int(w.stream)) == (3, 7, 0.045, 0.0225, 13, 50.0, WORD_STREAM)


def test_word_weights_and_step_rates_follow_their_formulas():
    counts = np.array([5000, 100, 10, 3], dtype=np.int64)
    a = start_mod.word_weights(counts, 10_000, 1e-3)
    np.testing.assert_allclose(a, 1e-3 / (1e-3 + counts / 10_000), rtol=1e-6)
    assert a.dtype == np.float32 and np.all(np.diff(a) > 0)  # rarer words weigh more
    np.testing.assert_array_equal(start_mod.word_weights(counts, 10_000, 0.0), np.ones(4, np.float32))
    r = start_mod.step_rates(a, counts, TrainConfig(count_power=0.5, count_floor=10))
    damp = np.array([(10 / 5000) ** 0.5, (10 / 100) ** 0.5, 1.0, 1.0])
    np.testing.assert_allclose(r, a.astype(np.float64) ** 2 * damp, rtol=1e-6)
    plain = start_mod.step_rates(np.ones(4, np.float32), counts, TrainConfig(count_power=0.0))
    np.testing.assert_array_equal(plain, np.ones(4, np.float32))  # no weights, no damping: plain SGD


def test_untrained_start_is_weighted_random_rows(corpus, trained):
    """The starting matrix is a(w) times the unweighted random rows: its plain average is
    SIF-weighted word overlap. A vanishing learning rate leaves it as it is."""
    cfg = config(lr=1e-12)
    a = start_mod.corpus_weights(corpus, cfg)
    W0 = start_mod.init_vectors(len(corpus.vocab), cfg)
    np.testing.assert_allclose(trained(lr=1e-12).model.vectors, W0 * a[:, None], rtol=1e-5, atol=1e-9)
    assert a[0] < 0.1 < a[-1]  # the most frequent word is weighted far down, the rarest not
    np.testing.assert_allclose(trained(lr=1e-12, frequency_weight=0.0).model.vectors, W0, rtol=1e-5, atol=1e-9)


def test_frequent_words_move_less_than_plain_sgd_moves_them(corpus, trained):
    """Frequency weights and count damping slow the frequent rows relative to the rare ones."""
    start = start_mod.init_vectors(len(corpus.vocab), config())
    moved = {}
    for name, extra in (("plain", dict(frequency_weight=0.0, count_power=0.0)), ("damped", {})):
        W0 = start * start_mod.corpus_weights(corpus, config(**extra))[:, None]
        rel = np.linalg.norm(trained(**extra).model.vectors - W0, axis=1) / np.linalg.norm(W0, axis=1)
        moved[name] = (float(np.median(rel[:20])), float(np.median(rel[-1000:])))
    assert moved["damped"][0] < 0.5 * moved["plain"][0]  # the 20 most frequent words
    assert moved["damped"][0] < moved["damped"][1]  # move less than the rarest ones


def test_the_kernel_sees_the_run_position_across_epochs(tmp_path, make_text, monkeypatch):
    """The rate decays over the whole run and the negatives' streams are keyed by run position: a batch of
    epoch e starts at e * targets + lo. (A generated corpus: this must not depend on the data folder.)"""
    path = tmp_path / "corpus.txt"
    path.write_text(make_text(n_docs=30, sents_per_doc=300, seed=7), encoding="utf-8")
    corpus = load_corpus([path], min_count=1, use_cache=False)
    calls = []
    original = CpuBackend.run

    def run(self, lo, hi, done):
        calls.append((lo, hi, done, float(self.params.total)))
        return original(self, lo, hi, done)

    monkeypatch.setattr(train_mod, "BATCH", 4096)
    monkeypatch.setattr(CpuBackend, "run", run)
    result = train(corpus, config(epochs=3), quiet=True)
    n = len(start_mod.trainable_targets(corpus))
    assert result.examples == 3 * n and len(calls) == 3 * -(-n // 4096)
    epoch = 0
    for lo, hi, done, total in calls:
        if lo == 0 and done > 0:
            epoch += 1
        assert done == epoch * n + lo and total == 3 * n
    assert epoch == 2


def test_a_start_of_the_wrong_shape_is_a_clear_error(corpus):
    with pytest.raises(TrainingError, match="initial vectors have shape"):
        train(corpus, config(), quiet=True, init=np.zeros((3, 32), np.float32))


def test_compiled_already_tells_a_first_compilation_from_numba_cache(tmp_path, monkeypatch):
    """What decides the 'compiling the training kernels' line: numba's memory, then its on-disk cache."""
    (tmp_path / "fresh_kernel_mod.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef twice(x):\n    return 2 * x\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("fresh_kernel_mod")
    assert compiled_already(mod.twice, (3,)) is False  # never compiled: the line is printed
    assert mod.twice(3) == 6
    assert compiled_already(mod.twice, (3,)) is True  # in memory
    mod = importlib.reload(mod)  # a new process's dispatcher: from the on-disk cache
    assert compiled_already(mod.twice, (3,)) is True
    assert compiled_already(mod.twice, (3.5,)) is False  # another signature compiles again
    assert compiled_already(object(), (3,)) is None  # not a dispatcher: cannot tell


@pytest.mark.parametrize("ready, quiet, expected", [(False, False, "compiling the training kernels (first run only"),
                                                    (None, False, "loading or compiling the training kernels"),
                                                    (True, False, None), (False, True, None)])
def test_train_says_when_it_compiles_the_kernels(tmp_path, small_corpus_file, monkeypatch, capsys, ready, quiet,
                                                  expected):
    monkeypatch.setattr(cpu_backend, "compiled_already", lambda kernel, args: ready)
    cfg = TrainConfig(dim=8, epochs=1, min_count=1, threads=1)
    train(read_corpus([small_corpus_file], cfg.min_count, cfg.max_vocab, cache_dir=tmp_path / "cache", quiet=True), cfg,
          quiet=quiet)
    lines = [line for line in capsys.readouterr().err.splitlines() if "kernels" in line]
    assert lines == ([] if expected is None else [lines[0]]) and (expected is None or expected in lines[0])


def test_train_enters_start_once_and_resolves_the_threads_once(corpus, monkeypatch):
    """One start.prepare(...) per run, one resolution of the thread count (the
    word part's threads are the sentence part's)."""
    calls = {"prepare": 0, "threads": 0}
    prepare, resolve = start_mod.prepare, scbow.kernels.resolve_threads

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(train_mod, "prepare", counted("prepare", prepare))
    monkeypatch.setattr(scbow.kernels, "resolve_threads", counted("threads", resolve))
    result = train(corpus, config(dim=16, word_passes=1, word_dim=8), quiet=True)
    assert calls == {"prepare": 1, "threads": 1}
    assert result.model.info["training"]["word_part"]["threads"] == result.model.info["training"]["threads"] == 1


# ---------------------------------------------------------------- the collapse check
# (scbow.training.collapse; the measurements behind its bounds are in docs/robustness.md)


def spread(gap, kept, sentences=5000, words=5000):
    return Spread(gap, kept, sentences, words)


@pytest.mark.parametrize("end, kind", [
    (spread(0.55, 0.6), "healthy"),
    (spread(0.06, 0.6), "collapsed"),               # a tenth of the start's gap left (--dim 8 at --lr 1e6)
    (spread(0.5, 0.01), "collapsed"),               # the variance fell into the removed directions
    (spread(0.24, 0.6), "unsure"),                  # 0.4 of the gap: between collapses and healthy runs
    (spread(0.5, 0.1), "unsure"),                   # 0.125 of the variance
    (spread(0.06, 0.01, 120, 38), "unsure"),        # too little evidence to throw a run away
    (spread(0.06, 0.01, 5000, 60), "unsure"),
    (None, "unjudged"),
])
def test_the_collapse_verdict(end, kind):
    verdict = Verdict(spread(0.6, 0.8), end)
    assert verdict.kind == kind and verdict.to_dict()["verdict"] == kind
    assert (verdict.warning() is not None) == (kind == "unsure")


def test_the_spread_sees_a_collapse_and_not_a_shared_direction():
    """Sentence averages near three lines keep next to no variance outside the five directions removed at 50
    dims; at 20 (two removed) the third line is left, the gap next to nothing; a shared direction changes neither."""
    rng = np.random.default_rng(0)
    for d in (50, 20):
        spread = rng.standard_normal((2000, d))
        lines = rng.standard_normal((3, d))
        collapsed = lines[rng.integers(0, 3, 2000)] * rng.choice([-1, 1], (2000, 1)) + 0.01 * spread
        common = spread + 30 * rng.standard_normal(d)
        healthy = spread_of(spread)
        assert healthy.sentences == 2000 and healthy.gap > 0.05 and healthy.kept > 0.7
        if d == 50:  # the five directions removed hold the three lines
            assert spread_of(collapsed).kept < 0.01 * healthy.kept
        else:  # the two removed leave one line
            assert spread_of(collapsed).gap < 0.01 * healthy.gap
        same = spread_of(common)
        assert same.gap == pytest.approx(healthy.gap, rel=1e-6) and same.kept == pytest.approx(healthy.kept, rel=1e-6)
    assert spread_of(spread[:2]) is None and spread_of(np.full((10, 4), np.nan)) is None
    assert Spread.from_dict(healthy.to_dict()).gap == pytest.approx(healthy.gap, abs=1e-6)
    assert Spread.from_dict({"gap": "x", "kept": 0.5}) is None and Spread.from_dict(None) is None


@pytest.mark.parametrize("settings, kind", [
    (dict(dim=50), "healthy"),
    (dict(dim=8, lr=1e6), "collapsed"),                  # missed by the old rule
    (dict(dim=50, max_vocab=900, lr=1e6), "collapsed"),  # missed by the old rule (a small vocabulary)
])
def test_a_run_is_judged_against_its_own_start(corpus, gutenberg_slice, settings, kind):
    if "max_vocab" in settings:
        corpus = read_corpus([gutenberg_slice(20000)], 2, settings["max_vocab"], use_cache=False, quiet=True)
    warned = []
    cfg = config(**{"lr": 0.1, **settings})
    if kind == "collapsed":  # refused as soon as the sentence part is trained: the word part never runs
        with pytest.MonkeyPatch.context() as mp, pytest.raises(
                TrainingError, match=r"collapsed into a few directions.*learning rate \(1e\+06\).*smaller --lr"):
            mp.setattr(WordPart, "run", lambda *a, **k: pytest.fail("the word part ran"))
            train(corpus, cfg.replace(word_passes=1), quiet=True, warn=warned.append)
        return
    check = train(corpus, cfg, quiet=True, warn=warned.append).model.info["training"]["collapse_check"]
    assert check["verdict"] == kind and check["gap_ratio"] > 0.45 and check["kept_ratio"] > 0.15 and not warned


def test_a_resumed_run_is_judged_against_the_start_of_the_run(corpus, monkeypatch):
    """The start's measures travel in the state (a checkpoint's state.json), not re-measured on
    the checkpoint's matrix."""

    class Stop(Exception):
        pass

    class Interrupt(Hook):
        def after_batch(self, state, matrices):
            if state.done >= 4096:
                self.state, self.W = TrainState.from_dict(state.to_dict()), np.array(matrices["sentence"])
                raise Stop

    monkeypatch.setattr(train_mod, "BATCH", 2048)
    cfg = config(dim=24)
    whole = train(corpus, cfg, quiet=True).model.info["training"]["collapse_check"]
    hook = Interrupt()
    with pytest.raises(Stop):
        train(corpus, cfg, quiet=True, hooks=[hook])
    assert {k: round(v, 4) for k, v in hook.state.collapse_start.items()} == whole["start"]
    resumed = train(corpus, cfg, quiet=True, start=hook.state, matrices={"sentence": hook.W})
    assert resumed.model.info["training"]["collapse_check"] == whole


def test_a_run_that_ends_with_every_vector_zero_is_refused(small_corpus_file):
    """One start vector for every word: centring leaves zeros, a model every reader refuses (it was
    saved, and the collapse check, with no spread at the start to judge against, said nothing)."""
    corpus = load_corpus([small_corpus_file], 1, 0, use_cache=False)
    config = TrainConfig(dim=8, epochs=1, threads=1, word_passes=0)
    with pytest.raises(TrainingError, match="every vector zero or nearly so .* the same vector"):
        train(corpus, config, quiet=True, init=np.ones((len(corpus.vocab), 8), dtype=np.float32))


# ---------------------------------------------------------------- the command line


def test_negatives_at_least_the_sentences_are_refused(tmp_path, runner):
    """Whatever the --negative-mode (a sampler given more negatives than candidates: test_minimal_trainable_corpus)."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"sentence number {i} here.\n" for i in range(10)))
    for negatives, ok in ((9, False), (100_000, False), (8, True)):
        result = runner.invoke(main, train_args(corpus, tmp_path / "m", "--negatives", str(negatives)))
        if ok:
            assert result.exit_code == 0, result.output
        else:
            assert_clean_error(result, "--negatives", "10 usable sentences", "at most 8")
            assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("content", [
    b"One cat.\nTwo cats.\nThree cats.\n",  # too few sentences
    b"One cat.\n\nTwo cats.\n\nThree cats.\n\nFour cats.\n\nFive cats.\n",  # no sentence has a neighbour
], ids=["three-sentences", "short-docs"])
def test_corpus_without_training_examples_fails_cleanly(tmp_path, runner, content):
    path = tmp_path / "c.txt"
    path.write_bytes(content)
    out = tmp_path / "model"
    assert_clean_error(runner.invoke(main, train_args(path, out)), "no training example")
    assert not out.exists() and not checkpoint_dir(out).exists() and not lock_path(out).exists()


@pytest.mark.parametrize("bad, message", [(["--min-count", "100000"], ("vocabulary is empty", "--min-count")),
                                          (["--threads", str(numba.config.NUMBA_NUM_THREADS + 1)], ("threads",))])
def test_a_failed_run_leaves_no_directory_behind(tmp_path, corpus_file, runner, bad, message):
    """Nothing written means nothing: not the output, and not the directories made for it;
    an impossible thread count (one more than numba's) fails before the corpus is read (no cache entry)."""
    out = tmp_path / "new" / "deeper" / "model"
    result = runner.invoke(main, train_args(corpus_file, out, "--cache-dir", str(tmp_path / "cache"), *bad))
    assert_clean_error(result, *message)
    assert not (tmp_path / "new").exists()
    if "--threads" in bad:
        assert files_under(tmp_path) == []  # the corpus was never read, so no cache either


def test_bad_bytes_and_an_enormous_line_are_read_and_trained_on(tmp_path, runner, make_text):
    """With --encoding utf-8:replace invalid UTF-8 is read as U+FFFD with a warning (refused without: test_corpus),
    said in the model's corpus info; a 1.6 MB line is one sentence of 400,000 tokens: read, averaged, trained on."""
    text = make_text(n_docs=2, sents_per_doc=60, seed=2).encode()
    huge = (" ".join(["the cat sat on the mat"] * 66_667) + ".\n").encode()
    path, out = tmp_path / "c.txt", tmp_path / "model"
    path.write_bytes(text + b"\nThe cat \xff\xfe sat.\nA dog \xc3\x28 ran.\n" + huge + text)
    result = runner.invoke(main, train_args(path, out, "--encoding", "utf-8:replace"))
    assert result.exit_code == 0, result.output
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:") and "U+FFFD" in line]
    assert len(warning) == 1 and "2 lines of the corpus are not valid in the encoding" in warning[0], result.stderr
    model = load_model(out)
    assert model.info["corpus"]["encoding"] == "utf-8:replace"
    assert "\ufffd" in model.wv and np.isfinite(model.vectors).all() and model.info["corpus"]["tokens"] > 400_000


def test_train_reports_its_phases_and_the_cache(tmp_path, runner, small_corpus_file):
    argv = ["train", str(small_corpus_file), "-o", str(tmp_path / "m"), *[a for a in TRAIN if a != "-q"],
            "--cache-dir", str(tmp_path / "cache")]
    result = runner.invoke(main, argv)
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert re.search(r"corpus: [\d,]+ tokens, [\d,]+ words in the vocabulary \(min count 1\), 120 sentences in "
                     r"4 documents; cached in ", err), err
    assert "post-processing:" in err and "saving the model to" in err
    assert "1 thread)" in err and "1 threads" not in err
    assert "corpus cache: wrote" in err and "'scbow-numba cache --clear'" in err
    # again: the cache is read, not written; the model is replaced and the run says so
    again = runner.invoke(main, argv).stderr
    assert "from the cache" in again and "corpus cache: wrote" not in again
    assert "holds a model; it is replaced" in again
    # a missing input is the one line: no note about replacing a model that stays
    missing = runner.invoke(main, [a if a != argv[1] else str(tmp_path / "no-such-corpus.txt") for a in argv])
    assert missing.exit_code == 1 and "replaced" not in missing.output and "no-such-corpus" in missing.output


def test_a_run_that_learned_nothing_says_so(tmp_path, runner, make_text, corpus_file, small_batches):
    corpus = tmp_path / "c.txt"
    corpus.write_text(make_text(n_docs=2, sents_per_doc=20, seed=3))  # one batch: the loss cannot fall
    result = runner.invoke(main, train_args(corpus, tmp_path / "m"))
    assert result.exit_code == 0
    # the advice agrees with the measured defaults: more text, never more epochs
    warning = next(line for line in result.stderr.splitlines()
                   if line.startswith("warning: the whole run was one batch (40 examples), too little text"))
    assert "train on more text" in warning and "more --epochs score lower" in warning and "--lr" not in warning
    slow = runner.invoke(main, train_args(corpus, tmp_path / "m1", "--lr", "0.001"))
    assert "or with a larger --lr (this run's is 0.001, the default 0.1)" in slow.stderr
    result = runner.invoke(main, train_args(corpus_file, tmp_path / "m2", "--epochs", "3"))  # 2,400 sentences
    assert result.exit_code == 0 and "learned little" not in result.stderr
    flat = runner.invoke(main, train_args(corpus_file, tmp_path / "m3", "--lr", "1e-9"))  # batches, no fall
    assert "warning: the loss did not fall (" in flat.stderr and "or with a larger --lr" in flat.stderr


def test_the_python_api_reports_through_logging(tmp_path, small_corpus_file, caplog, capsys):
    """scbow.train: the phases at INFO and "the model learned little" at WARNING on logger "scbow" (the
    command line's warning, not skipped), and nothing written to stderr by itself."""
    with caplog.at_level(logging.INFO, logger="scbow"):
        scbow.train(small_corpus_file, {"dim": 8, "epochs": 1, "min_count": 1, "threads": 1, "word_passes": 0,
                                        "lr": 1e-9}, cache_dir=tmp_path / "cache")
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "scbow"]
    assert any(level == "INFO" and "post-processing" in text for level, text in records)
    assert any(level == "WARNING" and "the model learned little" in text for level, text in records)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- batches


def test_costly_examples_make_smaller_batches(small_corpus_file, tmp_path):
    corpus = load_corpus([small_corpus_file], 1, 0, use_cache=False)
    assert batch_size(TrainConfig(), corpus) == BATCH  # the defaults keep the full batch
    sizes = [batch_size(TrainConfig(negatives=n), corpus) for n in (2, 50, 500, 5000, 50_000)]
    assert sizes[0] == BATCH and all(a > b for a, b in zip(sizes, sizes[1:])) and sizes[-1] >= 1
    assert batch_size(TrainConfig(dim=100_000), corpus) < BATCH // 50
    assert batch_size(TrainConfig(dim=100_000, negatives=1_000_000), corpus) == 1
    # the work of one batch stays about constant
    length = len(corpus.tokens) / corpus.n_sentences
    works = [batch_size(TrainConfig(negatives=n), corpus) * (3 + n) * (length + 2) for n in (50, 500, 5000)]
    assert max(works) / min(works) < 1.1
    # only the words max_length keeps count: sentences of 200 words
    words = [f"w{i}" for i in range(50)]
    (tmp_path / "long.txt").write_text("".join(" ".join(words[(i + j) % 50] for j in range(200)) + "\n"
                                               for i in range(60)))
    corpus = load_corpus([tmp_path / "long.txt"], 1, 0, use_cache=False)
    uncut = batch_size(TrainConfig(dim=300, negatives=2), corpus)
    assert uncut == int(BATCH * BATCH_COST / (5 * 202 * 300))
    for cut in (5, 40, 100):  # an example reads at most max_length words of each sentence
        assert batch_size(TrainConfig(dim=300, negatives=2, max_length=cut), corpus) == min(
            BATCH, int(BATCH * BATCH_COST / (5 * (cut + 2) * 300)))
    assert batch_size(TrainConfig(dim=300, negatives=2, max_length=5), corpus) == BATCH > uncut
