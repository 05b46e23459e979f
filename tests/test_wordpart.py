"""The word part (scbow.training.wordpart): its kernel against scbow.reference, the assembled rows,
the word-level API on the word columns, and checkpoints inside the word part."""

from __future__ import annotations

import json
import random
import re
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from test_checkpoint import SignalAfter, cfg
from test_kernels import DEVICES

from scbow import progress
from scbow.cli import main
from scbow.config import TrainConfig
from scbow.errors import CheckpointError, Interrupted, TrainingError
from scbow.kernels.cpu import log1p_unit, sgns_window, word_part_buffers, word_part_chunk, word_part_windows
from scbow.reference import sgns_window_loss_and_grad
from scbow.text.vocab import Vocab
from scbow.training import trainer, wordpart
from scbow.training.backends.params import WORD_PARAMS, params_record
from scbow.training.checkpoint import CheckpointWriter, checkpoint_dir, describe, read_meta
from scbow.training.corpus import read_corpus
from scbow.training.hooks import Hook
from scbow.training.session import learned_nothing, summary_lines, train_session
from scbow.training.start import corpus_weights, keep_probabilities
from scbow.use.describe import describe as describe_model
from scbow.use.describe import model_record
from scbow.vectors.export import export_word2vec
from scbow.vectors.formats import load_model, load_word2vec
from scbow.vectors.model import Model
from scbow.vectors.words import row_parts


def word_record(**fields):
    """A word part's parameter record: window 3, 4 noise words, seed 5, stream 9, a constant rate."""
    return params_record(WORD_PARAMS, **{"window": 3, "negatives": 4, "seed": 5, "stream": 9, "total": 10**12, **fields})


def tiny_problem(seed=0, V=40, d=8, n_tokens=60):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, V, n_tokens).astype(np.int32)
    offsets = np.array([0, 25, n_tokens], dtype=np.int64)
    Wi = (rng.standard_normal((V, d)) * 0.3).astype(np.float32)
    Wo = (rng.standard_normal((V, d + 1)) * 0.3).astype(np.float32)
    keep = np.ones(V, dtype=np.float32)
    keep[:5] = 0.5  # a few subsampled words: the kernel and its gradient draw alike
    table = rng.integers(0, V, 1000).astype(np.int32)
    return tokens, offsets, Wi, Wo, keep, table


def train_sentences(device, Wi, Wo, tokens, offsets, lo, hi, keep, table, params, done=0, threads=4, blocks=1):
    """Sentences ``lo..hi-1`` trained from copies of ``Wi, Wo`` by one CPU thread (``word_part_chunk``) or by
    ``blocks`` blocks of ``kernels.cuda.build_word_part``'s kernel: ``(Wi, Wo, loss, pairs)``."""
    if device == "cpu":
        Wi, Wo = Wi.copy(), Wo.copy()
        return Wi, Wo, *word_part_chunk(Wi, Wo, tokens, offsets, lo, hi, keep, table, params, done,
                                        word_part_buffers(params, Wi.shape[1]))
    from numba import cuda

    from scbow.kernels import cuda as KC

    kern = KC.build_word_part(Wi.shape[1], threads, int(params.window), int(params.negatives))
    Wi_d, Wo_d, stats = cuda.to_device(Wi), cuda.to_device(Wo), cuda.to_device(np.zeros((blocks, 2)))
    kern.train[blocks, threads](Wi_d, Wo_d, cuda.to_device(tokens), cuda.to_device(offsets), lo, hi, cuda.to_device(keep),
                                cuda.to_device(table), params, done, stats)
    s = stats.copy_to_host()
    return Wi_d.copy_to_host(), Wo_d.copy_to_host(), float(s[:, 0].sum()), int(s[:, 1].sum())


def window_problem(seed=4, V=30, d=16):
    rng = np.random.default_rng(seed)
    Wi = (rng.standard_normal((V, d)) * 0.4).astype(np.float32)
    Wo = (rng.standard_normal((V, d + 1)) * 0.4).astype(np.float32)
    ins = np.array([3, 7, 3, 12, 9, 0], dtype=np.int32)  # a context word twice
    outs = np.array([5, 8, -1, 8, 21, 2], dtype=np.int32)  # a noise word twice, one skipped
    return Wi, Wo, ins, outs


def test_the_loss_log1p_is_float32_exact():
    """The windows' ``log1p`` (a series where the C library's call cost a tenth of the kernel's time) is
    within float32's precision of the true one over all it is given, [0, 1], tiny values too."""
    e = np.concatenate([np.linspace(0, 1, 20001), np.logspace(-37, 0, 400)]).astype(np.float32)  # normal floats
    got = np.array([log1p_unit(x) for x in e], dtype=np.float64)
    true = np.log1p(e.astype(np.float64))
    assert np.all(np.abs(got - true) <= 4e-7 * true)  # a few float32 ulps


@pytest.mark.parametrize("n_out", [6, 5])  # the word part's 6 outputs (written out for them), and any other count
@pytest.mark.parametrize("k", [1, 4, 6])
def test_a_window_is_one_exact_sgd_step(k, n_out):
    """One window moves every row it reads by exactly ``-lr`` times the reference gradient at the rows before
    it, even at a large rate; a repeated input or noise word gets both its steps."""
    Wi, Wo, ins, outs = window_problem()
    outs = np.ascontiguousarray(outs[:n_out])
    lr = 0.7
    _, gWi, gWo = sgns_window_loss_and_grad(Wi, Wo, [(ins[:k], outs[0], [o for o in outs[1:] if o >= 0])])
    Wi2, Wo2 = Wi.copy(), Wo.copy()
    scratch = word_part_buffers(word_record(negatives=len(outs) - 1), Wi.shape[1])[3:]
    sgns_window(Wi2, Wo2, ins, k, outs, np.float32(-lr), Wi2, Wo2, scratch)
    np.testing.assert_allclose(Wi2, Wi - lr * gWi, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(Wo2, Wo - lr * gWo, rtol=1e-5, atol=1e-5)
    assert np.abs(gWo[8]).max() > 0 and np.abs(gWi[3]).max() > 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("lr", [1e-4, 3e-4])
def test_one_sentence_of_the_kernel_is_one_sgd_step(device, lr):
    """A sentence trained at a small rate moves the rows by ``-lr`` times the reference gradient of the windows
    drawn (each context against the centre and the window's shared noise words), to first order (the windows
    step one after the other, so equal up to O(lr^2)); scored, not stepped, they have the reference's loss."""
    tokens, offsets, Wi, Wo, keep, table = tiny_problem(seed=2)
    scored, drawn = word_part_windows(Wi, Wo, tokens, offsets, 1, keep, table, word_record())
    assert len(drawn) > 20 and any(-1 in outs for _, outs in drawn)  # a noise word equal to the centre: skipped
    ref_loss, gWi, gWo = sgns_window_loss_and_grad(Wi, Wo, [(ins, outs[0], [o for o in outs[1:] if o >= 0])
                                                            for ins, outs in drawn])
    assert scored == pytest.approx(ref_loss, rel=1e-5)
    # total far larger than done: the rate stays lr for the sentence
    Wi2, Wo2, loss, pairs = train_sentences(device, Wi, Wo, tokens, offsets, 1, 2, keep, table, word_record(lr=lr))
    assert pairs == sum(len(ins) for ins, _ in drawn) and loss == pytest.approx(ref_loss, rel=1e-3)  # stepped as it goes
    for moved, g in (((Wi2.astype(np.float64) - Wi) / -lr, gWi), ((Wo2.astype(np.float64) - Wo) / -lr, gWo)):
        assert np.abs(moved - g).max() < 0.02 * np.abs(g).max()


def test_the_rate_falls_with_the_sentences_done():
    """A sentence's rate is ``lr0 * (1 - position / total)`` over all passes, never below ``lr_min``: the same
    sentence and draws step half as far halfway through the run, and ``lr_min`` at its end."""
    tokens, offsets, Wi, Wo, keep, table = tiny_problem(seed=3)
    lr0, total = 2e-4, 1000

    def moved(done, lr_min=0.0):
        Wi2, Wo2 = Wi.copy(), Wo.copy()
        word_part_chunk(Wi2, Wo2, tokens, offsets, 1, 2, keep, table,
                        word_record(lr=lr0, lr_min=lr_min, total=total, stream=9 - done), done,
                        word_part_buffers(word_record(), 8))
        return np.concatenate([(Wi2 - Wi).ravel(), (Wo2 - Wo).ravel()]).astype(np.float64)

    start = moved(0)
    assert np.abs(start).max() > 0
    for done, ratio in ((500, 0.5), (900, 0.1)):
        np.testing.assert_allclose(moved(done), ratio * start, rtol=0.02, atol=1e-3 * np.abs(start).max())
    np.testing.assert_allclose(moved(total, lr_min=lr0 / 4), start / 4, rtol=0.02, atol=1e-3 * np.abs(start).max())


def topic_text(n_topics=12, per_topic=8, n_docs=20, sents_per_doc=500, seed=5) -> str:
    """Sentences of 5-9 words drawn from one of ``n_topics`` disjoint sets of words: text whose words
    predict their neighbours, so skip-gram's loss must fall on it."""
    rng = random.Random(seed)
    topics = [[f"topic{t}word{i}" for i in range(per_topic)] for t in range(n_topics)]
    docs = []
    for _ in range(n_docs):
        docs.append("\n".join(" ".join(rng.choice(topic) for _ in range(rng.randint(5, 9)))
                              for topic in (rng.choice(topics) for _ in range(sents_per_doc))) + "\n")
    return "\n".join(docs)


def test_the_word_part_loss_is_measured_on_the_same_sentences_and_falls(tmp_path):
    """The reported loss is a fixed sample's (not the batches', of other books at other rates), before the
    first pass and after each: on text whose words predict their neighbours it falls pass after pass."""
    text = tmp_path / "topics.txt"
    text.write_text(topic_text(), encoding="utf-8")
    warnings = []
    result = train_session([text], cfg(word_passes=3, word_dim=16, epochs=1), tmp_path / "m", quiet=True,
                           warn=warnings.append)
    w = result.model.info["training"]["word_part"]
    losses = w["pass_losses"]
    assert len(losses) == 4 and w["first_loss"] == pytest.approx(losses[0]) and w["final_loss"] == pytest.approx(losses[-1])
    assert all(b < a for a, b in zip(losses, losses[1:])) and losses[-1] < losses[0] - 0.5, losses
    assert not [x for x in warnings if "word part" in x]
    # the sample's loss is a measure, not a step: the same rows give the same figure and stay as they were
    corpus = read_corpus([text], min_count=1, cache_dir=tmp_path / "cache")
    part = wordpart.WordPart(corpus, cfg(word_passes=1, word_dim=16), 1)
    before = part.Wi.copy(), part.Wo.copy()
    assert part.sample_loss() == part.sample_loss() == pytest.approx(losses[0], rel=0.2)
    assert np.array_equal(before[0], part.Wi) and np.array_equal(before[1], part.Wo)


def test_the_loss_sample_is_spread_over_the_whole_corpus(tmp_path, corpus_file, monkeypatch):
    """The sample's sentences are evenly spaced from the first sentence to the last, not the corpus's first
    LOSS_SAMPLE: the sample is shrunk here so that the corpus is many times its size."""
    monkeypatch.setattr(wordpart, "LOSS_SAMPLE", 8)
    corpus = read_corpus([corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    part = wordpart.WordPart(corpus, cfg(word_passes=1, word_dim=8), 1)
    scored, kernel = [], part.K.word_part_loss

    def word_part_loss(*args):
        scored.append(np.array(args[4]))
        return kernel(*args)

    part.K = SimpleNamespace(word_part_loss=word_part_loss)
    part.sample_loss()
    (sentences,) = scored
    n = corpus.n_sentences
    gaps = np.diff(sentences)
    assert n > 100 * 8 and len(sentences) == 8 and sentences[0] == 0 and sentences[-1] == n - 1
    assert gaps.min() >= (n - 1) // 7 and gaps.max() <= (n - 1) // 7 + 1
    part.close()


def test_the_loss_samples_windows_and_noise_words_are_fixed(tmp_path, corpus_file):
    """The sample scores the same windows and noise words however far the part has trained: with zero output
    rows (scores: the biases alone) a trained part and a fresh one score the same, another seed otherwise."""
    corpus = read_corpus([corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    config = cfg(word_passes=1, word_dim=8)
    trained = wordpart.WordPart(corpus, config, 1)
    done = 0
    for _ in range(3):
        done += trained.run(done)[0]
    trained.Wo[:, :-1] = 0
    fresh = wordpart.WordPart(corpus, config, 1, Wo=trained.Wo.copy())
    other_seed = wordpart.WordPart(corpus, cfg(word_passes=1, word_dim=8, seed=4), 1, Wo=trained.Wo.copy())
    assert np.abs(trained.Wi - fresh.Wi).max() > 1e-3  # the input rows differ
    assert trained.sample_loss() == pytest.approx(fresh.sample_loss(), rel=1e-6)
    assert abs(other_seed.sample_loss() - fresh.sample_loss()) > 1e-3
    for part in (trained, fresh, other_seed):
        part.close()


def test_a_batch_is_bounded_by_its_cost_and_split_by_tokens(tmp_path, monkeypatch):
    """A batch holds at most WORD_BATCH sentences and WORD_BATCH_COST tokens x dims (one sentence at least);
    the threads' shares hold equal tokens to within a sentence; the batches tile each pass."""
    rng = random.Random(2)
    words = [f"w{i}" for i in range(50)]
    lengths = [4] * 50 + [rng.choices([4, 3000, 12000], [8, 1, 1])[0] for _ in range(100)]
    lines = [" ".join(rng.choice(words) for _ in range(length)) for length in lengths]
    text = tmp_path / "long.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    corpus = read_corpus([text], min_count=1, cache_dir=tmp_path / "cache")
    monkeypatch.setattr(wordpart, "WORD_BATCH", 40)
    monkeypatch.setattr(wordpart, "WORD_BATCH_COST", 9000 * 20)  # 9,000 tokens at 20 dims
    part = wordpart.WordPart(corpus, cfg(word_passes=2, word_dim=20), 2)
    offsets, n = np.asarray(corpus.offsets), corpus.n_sentences
    done, sizes = 0, []
    while done < 2 * n:
        cuts = part.batch(done)
        lo, hi = cuts[0][0], cuts[-1][1]
        assert lo == done % n and all(a <= b for a, b in cuts) and cuts[0][1] == cuts[1][0]
        tokens = offsets[hi] - offsets[lo]
        assert hi - lo <= 40 and (hi - lo == 1 or tokens <= 9000) and hi <= n
        shares = [offsets[b] - offsets[a] for a, b in cuts]
        assert abs(shares[0] - shares[1]) <= np.diff(offsets[lo:hi + 1]).max()
        sizes.append(hi - lo)
        done += hi - lo
    assert done == 2 * n and min(sizes) == 1 and max(sizes) == 40  # a longer line alone, short ones 40 at a time


def test_two_threads_train_both_shares_and_draw_as_one_thread(tmp_path, corpus_file):
    """With 2 threads each share of a batch trains on its own thread: at a rate of zero (rows unchanged) one
    thread and two score the same loss on the same pairs (a sentence's draws do not depend on its thread),
    and at the run's rate the rows move by both shares."""
    corpus = read_corpus([corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    config = cfg(word_passes=2, word_dim=8)
    parts = one, two, trained, first_only = [wordpart.WordPart(corpus, config, t) for t in (1, 2, 2, 2)]
    start = one.Wi.copy()
    (a0, b0), (a1, b1) = two.batch(0)
    assert b0 > a0 and b1 > a1
    runs = []
    for part in (one, two):
        part.params.lr = part.params.lr_min = 0.0
        runs.append([part.run(0), part.run(corpus.n_sentences)])  # a batch of the first pass, one of the second
    assert np.array_equal(two.Wi, start) and runs[1][0][0] == b1 - a0
    for (n1, loss1, pairs1), (n2, loss2, pairs2) in zip(*runs):
        assert n1 == n2 and pairs1 == pairs2 > 0 and loss1 == pytest.approx(loss2, rel=1e-9)
    assert runs[0][0][1] != pytest.approx(runs[0][1][1], rel=1e-6)  # the second pass draws anew
    # the rows moved by both shares: beyond the first share's steps by a like amount (not 0: never trained)
    trained.run(0)
    first_only._chunk(a0, b0, 0, 0)
    assert np.linalg.norm(trained.Wi - first_only.Wi) > 0.3 * np.linalg.norm(first_only.Wi - start)
    for part in parts:
        part.close()


def test_the_word_part_starts_from_word2vecs_rows_and_the_optimal_biases(corpus_file, tmp_path):
    """``Wi`` uniform in +-0.5 / word_dim from the run's seed, ``Wo``'s rows zero and its biases those at which
    zero rows have a zero bias gradient (``output_biases``, from the subsampling of ``sample_threshold``)."""
    corpus = read_corpus([corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    config = cfg(word_passes=1, word_dim=12, word_noise=4)
    part = wordpart.WordPart(corpus, config, 1)
    assert np.abs(part.Wi).max() <= 0.5 / 12 and part.Wi.std() > 0.2 / 12 and not part.Wo[:, :-1].any()
    counts = np.asarray(corpus.vocab.counts, dtype=np.float64)
    raw = corpus.stats["raw_tokens"]
    assert part.sample == wordpart.sample_threshold(raw, config)
    np.testing.assert_array_equal(part.keep, keep_probabilities(counts, raw, part.sample))
    b = part.Wo[:, -1].astype(np.float64)
    context = counts * part.keep / (counts * part.keep).sum()
    noise = counts ** 0.75 / (counts ** 0.75).sum()
    sigmoid = 1 / (1 + np.exp(-b))
    # d/db of context * softplus(-b) + k * noise * softplus(b)
    np.testing.assert_allclose(context * (sigmoid - 1) + config.word_noise * noise * sigmoid, 0, atol=1e-7)


@pytest.mark.parametrize("tokens, threshold", [(10**9, 1e-5), (10**8, 1e-5), (10**7, 1e-4), (2 * 10**6, 5e-4),
                                               (10**6, 1e-3), (10**4, 1e-3)])
def test_the_subsampling_threshold_is_a_thousand_occurrences(tokens, threshold):
    """A word is subsampled once seen about 1,000 times (word2vec's 1e-5 on 100M tokens, 1e-4 on 10M),
    never below 1e-5 nor above 1e-3; ``word_sample_count`` moves it."""
    assert wordpart.sample_threshold(tokens, cfg()) == pytest.approx(threshold)
    assert wordpart.sample_threshold(tokens, cfg(word_sample_count=100)) == pytest.approx(min(1e-3, max(1e-5, 100 / tokens)))


def test_the_word_rows_are_frequency_weighted_and_scaled_by_the_mix(corpus_file, tmp_path):
    """``assemble``: the word columns are ``g * a[w] * Wi[w]`` (``a`` the frequency weights), ``g`` giving the
    sentence averages of the word columns an RMS length of ``word_mix``; the sentence columns untouched."""
    corpus = read_corpus([corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    rng = np.random.default_rng(1)
    V = len(corpus.vocab)
    S, Wi = rng.standard_normal((V, 16)).astype(np.float32), rng.standard_normal((V, 6)).astype(np.float32)
    config = cfg(word_passes=1, word_dim=6, common_components=-1, word_mix=0.5)
    out = wordpart.assemble(S, Wi, corpus, config)
    a = corpus_weights(corpus, config)
    assert a.std() > 0.1 * a.mean()  # the weights differ from word to word
    g = out[:, 16:] / (a[:, None] * Wi)
    np.testing.assert_allclose(g, g[0, 0], rtol=1e-4)
    assert wordpart.unit_average_scale(out[:, 16:], corpus, config.seed) == pytest.approx(1 / 0.5, rel=1e-4)
    quarter = wordpart.assemble(S, Wi, corpus, config.replace(word_mix=0.25))
    np.testing.assert_allclose(quarter[:, 16:], out[:, 16:] / 2, rtol=1e-5)
    np.testing.assert_array_equal(quarter[:, :16], out[:, :16])


def test_row_parts():
    assert row_parts({"dim": 300, "word_passes": 3, "word_dim": 100}, 400) == {"sentence": (0, 300), "word": (300, 400)}
    assert row_parts({"dim": 300, "word_passes": 0, "word_dim": 100}, 300) == {"sentence": (0, 300)}
    assert row_parts({"dim": 300}, 300) == {"sentence": (0, 300)}  # a model from before the word part
    assert row_parts({}, 50) == {"sentence": (0, 50)}  # vectors from elsewhere


def test_words_are_ranked_by_the_word_part_and_sentences_by_whole_rows():
    # two words alike in the sentence columns, two others alike in the word columns
    words = ["a", "b", "c", "d"]
    S = np.array([[1, 0], [1, 0.01], [0, 1], [0.5, 0.5]], dtype=np.float32)
    G = np.array([[1, 0], [0, 1], [1, 0.01], [0.5, 0.5]], dtype=np.float32)
    m = Model(Vocab(words, [500] * 4), np.concatenate([S, G], axis=1),
              {"dim": 2, "word_passes": 1, "word_dim": 2, "unknown": "omit"})
    assert m.parts == {"sentence": (0, 2), "word": (2, 4)}
    assert m.wv.most_similar("a", topn=1)[0][0] == "c"
    assert m.wv.similar_by_vector(m.vectors[0], topn=2)[1][0] == "c"  # a whole row is cut to its word columns
    assert m.wv.similar_by_vector(G[0], topn=2)[1][0] == "c"
    assert m.wv.n_similarity(["a"], ["c"]) > 0.99
    with pytest.raises(ValueError, match="shape"):
        m.wv.similar_by_vector(np.ones(3))
    # a sentence is the whole row's average
    np.testing.assert_allclose(m.encode(["a b"])[0], (m.vectors[0] + m.vectors[1]) / 2)
    plain = Model(Vocab(words, [500] * 4), S, {"dim": 2})
    assert plain.wv.most_similar("a", topn=1)[0][0] == "b"


@pytest.fixture
def word_batches(monkeypatch, small_batches):
    monkeypatch.setattr(wordpart, "WORD_BATCH", 300)  # several word batches per pass of 2,400 sentences


class SignalInWordPart(SignalAfter):
    def after_batch(self, state, matrices):
        if state.phase == "word":
            SignalAfter.after_batch(self, state, matrices)


WORD_PART = cfg(word_passes=2, word_dim=12, word_mix=0.5)


def spy_on_checkpoints(monkeypatch):
    """The (examples, sentences) of the checkpoints written from now on, in order."""
    written, write = [], CheckpointWriter.write

    def spy(self, state, *args, **kwargs):
        written.append((state.done, state["word"].done))
        return write(self, state, *args, **kwargs)

    monkeypatch.setattr(CheckpointWriter, "write", spy)
    return written


@pytest.fixture(scope="module")
def word_run(corpus_file, tmp_path_factory):
    """``WORD_PART`` trained once (batches of 256 and of 300 sentences) with a checkpoint every 1,000 examples:
    the result, the model, the (examples, sentences) of its checkpoints, what a hook saw, the warnings."""
    base, seen, warnings = tmp_path_factory.mktemp("word-part"), [], []

    class Watch(Hook):
        def after_batch(self, state, matrices):
            if state.phase == "sentence":
                seen.append(("sentence", state["word"].done))
            else:
                seen.append(("word", state["word"].done, matrices["word_in"].shape, matrices["word_out"].shape))

        def after_training(self, state, matrices):
            seen.append(("end",))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(trainer, "BATCH", 256)
        mp.setattr(wordpart, "WORD_BATCH", 300)
        written = spy_on_checkpoints(mp)
        result = train_session([corpus_file], WORD_PART, base / "m", quiet=True, checkpoint_every=1000,
                               hooks=[Watch()], warn=warnings.append, cache_dir=base / "cache")
        assert not checkpoint_dir(base / "m").exists()
        # word_in.npy and word_out.npy went with the rest: the next run into the output is not refused
        train_session([corpus_file], WORD_PART, base / "m", quiet=True, cache_dir=base / "cache")
    return SimpleNamespace(result=result, model=load_model(base / "m"), written=written, seen=seen, warnings=warnings)


def test_a_run_with_the_word_part_saves_both_parts(tmp_path, corpus_file, small_batches, word_run):
    m = word_run.model
    assert m.vectors.shape == (len(m.vocab), 16 + 12) and m.parts == {"sentence": (0, 16), "word": (16, 28)}
    for part, width in (("word", 12), ("sentence", 16), ("all", 28)):
        back = load_word2vec(export_word2vec(m, tmp_path / f"{part}.txt", part=part))
        lo, hi = m.parts.get(part, (0, 28))
        np.testing.assert_allclose(back.vectors, np.asarray(m.vectors)[:, lo:hi], atol=1e-6)
        assert back.vectors.shape[1] == width
    info = m.info["training"]["word_part"]
    assert info["passes"] == 2 and info["sentences"] == 2 * m.info["corpus"]["sentences"]
    # 0 passes: the sentence part alone, the same bits as the sentence part of a run with it
    alone = train_session([corpus_file], cfg(word_passes=0), tmp_path / "s", quiet=True)
    assert alone.model.vectors.shape[1] == 16 and alone.losses == word_run.result.losses
    S = np.asarray(alone.model.vectors, dtype=np.float64)
    part = np.asarray(m.vectors[:, :16], dtype=np.float64)
    ratio = part[np.abs(S) > 1e-3] / S[np.abs(S) > 1e-3]
    assert np.allclose(ratio, ratio[0], rtol=1e-4)  # the same rows, scaled to unit-length averages


def test_resume_inside_the_word_part(tmp_path, corpus_file, word_batches, monkeypatch, word_run):
    """Hooks see the word part after the sentence part; a resume inside it is bit-identical and checkpoints
    where an uninterrupted run does (--checkpoint-every: examples, then sentences); a finished run removes
    the checkpoint's word_in.npy and word_out.npy too (word_run)."""
    kinds = [s[0] for s in word_run.seen]
    assert kinds[-1] == "end" and kinds.index("word") > max(i for i, k in enumerate(kinds) if k == "sentence")
    assert word_run.seen[-2][2][1] == 12 and word_run.seen[-2][3][1] == 13
    reference, whole = word_run.written, np.asarray(word_run.model.vectors)
    assert sum(w > 0 for _, w in reference) >= 3  # checkpoints inside the word part
    # no warning but the honest one: random words (the test corpus) give skip-gram nothing to learn
    assert [w for w in word_run.warnings if "the word part's loss on its fixed sample" not in w] == []
    written, out = spy_on_checkpoints(monkeypatch), tmp_path / "b"

    def run(out, **kw):
        return train_session([corpus_file], WORD_PART, out, quiet=True, checkpoint_every=1000, **kw)

    with pytest.raises(Interrupted) as info:
        run(out, hooks=[SignalInWordPart(5)])
    assert "of the word part" in info.value.message
    assert describe(read_meta(checkpoint_dir(out))) == f"1,500 of {2 * 2400:,} sentences of the word part"
    meta = json.loads((checkpoint_dir(out) / "state.json").read_text())
    assert meta["state"]["phases"]["word"]["done"] == 5 * 300 and meta["state"]["epoch"] == 2
    assert (checkpoint_dir(out) / "word_in.npy").is_file() and (checkpoint_dir(out) / "word_out.npy").is_file()
    at = written[-1]  # the interrupt's checkpoint, in the word part: 4,800 examples and 1,500 sentences,
    # so that the resumed run's first batch (to 6,600) is not due (the next is at 7,000)
    assert at == (4800, 1500) and written[:-1] == [d for d in reference if sum(d) < sum(at)]
    for name in ("zeroed", "missing"):
        shutil.copytree(checkpoint_dir(out), checkpoint_dir(tmp_path / name))
    written.clear()
    run(out, resume=True)
    assert written == [d for d in reference if sum(d) > sum(at)]
    assert np.array_equal(whole.view(np.uint32), np.asarray(load_model(out).vectors).view(np.uint32))
    # the word matrices are tied to their state: changed ones, or another run's of the same shape, are
    # refused (they resumed with exit 0 into another model), and missing ones too
    saved = checkpoint_dir(tmp_path / "zeroed") / "word_in.npy"
    np.save(saved, np.zeros_like(np.load(saved)))
    with pytest.raises(CheckpointError, match="not the matrix its state.json recorded"):
        run(tmp_path / "zeroed", resume=True)
    other = tmp_path / "other"
    with pytest.raises(Interrupted):
        train_session([corpus_file], WORD_PART.replace(seed=4), other, quiet=True, checkpoint_every=1000,
                      hooks=[SignalInWordPart(5)])
    borrowed = tmp_path / "borrowed"
    shutil.copytree(checkpoint_dir(tmp_path / "missing"), checkpoint_dir(borrowed))
    for name in ("word_in.npy", "word_out.npy"):
        shutil.copy(checkpoint_dir(other) / name, checkpoint_dir(borrowed) / name)
    with pytest.raises(CheckpointError, match="not the matrix its state.json recorded"):
        run(borrowed, resume=True)
    (checkpoint_dir(tmp_path / "missing") / "word_out.npy").unlink()
    with pytest.raises(CheckpointError, match="word_out.npy"):
        run(tmp_path / "missing", resume=True)


def test_a_word_part_that_diverges_names_its_last_checkpoint_in_sentences(tmp_path, corpus_file, word_batches):
    """A run whose word part turns to NaN after a checkpoint inside it names that checkpoint by the word
    part's sentences (it was named by the sentence part's examples)."""

    class Poison(Hook):
        calls = 0

        def after_batch(self, state, matrices):
            self.calls += state.phase == "word"
            if self.calls == 6:
                matrices["word_in"][:] = np.nan

    with pytest.raises(TrainingError) as info:
        train_session([corpus_file], WORD_PART, tmp_path / "m", quiet=True, checkpoint_every=1000, hooks=[Poison()])
    meta = read_meta(checkpoint_dir(tmp_path / "m"))
    done = meta["state"]["phases"]["word"]["done"]
    assert done > 0 and f"the last good checkpoint ({done:,} sentences into the word part)" in str(info.value)


class PoisonWordRows(Hook):
    """Sets the word part's input rows to NaN after its word batch number ``after`` (or its last, at None)."""

    def __init__(self, after=None):
        self.after, self.batches = after, 0

    def after_batch(self, state, matrices):
        if state.phase != "word":
            return
        self.batches += 1
        if self.batches == self.after or (self.after is None and state["word"].done == state["word"].total):
            matrices["word_in"][:] = np.nan


@pytest.mark.parametrize("after, batches, message", [
    (3, 3, "the word part's loss became nan after 1,200 sentences"),  # 4 batches of 300
    (None, 16, "the word part's vectors hold NaN or inf"),
])
def test_word_rows_that_turn_not_finite_stop_the_run(tmp_path, corpus_file, word_batches, after, batches, message):
    """The batch after the rows turned to NaN has a NaN loss: the run stops there, saying so in sentences;
    rows that turn to NaN after the last batch (no loss is measured after it) are caught at the end."""
    corpus = read_corpus([corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    poison = PoisonWordRows(after=after)
    with pytest.raises(TrainingError) as info:
        trainer.train(corpus, WORD_PART, quiet=True, hooks=[poison])
    assert str(info.value) == message and poison.batches == batches


def test_train_shows_one_eta_for_the_whole_run_across_the_parts(tmp_path, gutenberg_slice, monkeypatch, runner):
    """A real run, a progress line per batch, one ETA each: the sentence part's last line still counts the word
    part's passes to come (not a per-part 0:00:00); the run's last line reads 0:00:00."""
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0)  # a plain line at every batch
    monkeypatch.setattr(trainer, "BATCH", 2048)
    monkeypatch.setattr(wordpart, "WORD_BATCH", 2048)
    result = runner.invoke(main, ["train", str(gutenberg_slice(20000)), "-o", str(tmp_path / "m"), "--threads", "1",
                                  "--word-passes", "5", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if re.match(r"\[\d+:\d\d:\d\d\] (epoch|word part) ", line)]
    sentence = [line for line in lines if "] epoch " in line]
    word = [line for line in lines if "] word part " in line]
    assert len(sentence) >= 5 and len(word) >= 5 * 5, result.stderr
    assert all(line.count("ETA") == 1 for line in lines), lines
    etas = [re.search(r"ETA (\S+)", line).group(1) for line in lines]
    assert etas[len(sentence) - 1] not in ("-:--:--", "0:00:00"), sentence[-1]  # the word part is still to come
    assert all(eta != "-:--:--" for eta in etas[len(sentence):]), word  # estimated, then measured: never unknown
    assert etas[-1] == "0:00:00"


def test_info_names_the_widths_of_a_row_and_of_its_two_parts(word_run, runner):
    """--dim is the sentence part's width, not the row's: info says both (text and JSON), and train's
    --help says which option is which part's width."""
    m = word_run.model  # --dim 16 --word-dim 12
    record = json.loads(model_record(m, "/m"))
    assert record["dims"] == {"rows": 28, "sentence_part": 16, "word_part": 12}
    assert record["dim"] == 28 and record["config"]["dim"] == 16 and record["config"]["word_dim"] == 12  # kept as they were
    assert f"{len(m):,} words x 28 dims a row (sentence part 16 + word part 12);" in describe_model(m, "/m")[1]
    text = " ".join(runner.invoke(main, ["train", "--help"]).stdout.split())
    assert "--dim INTEGER Width of the sentence part" in text and "--word-dim INTEGER Width of the word part" in text
    assert "--dim 300 --word-dim 150: rows of 450" in text


def word_result(pass_losses, sentences=592_252):
    """A finished run's result as summary_lines and learned_nothing read it, with the word part's losses."""
    training = {"first_loss": 1.37, "final_loss": 1.30, "examples_per_second": 95_000.0, "threads": 2,
                "word_part": {"sentences": 3 * sentences, "kernel_seconds": 29.1, "sentences_per_second": 61_000.0,
                              "threads": 2, "device": "cpu", "pass_losses": pass_losses, "loss_sentences": 2048,
                              "first_loss": pass_losses[0], "final_loss": pass_losses[-1]}}
    model = SimpleNamespace(info={"training": training, "corpus": {"vocab_size": 40_438, "sentences": sentences}},
                            config=TrainConfig().to_dict())
    return SimpleNamespace(model=model, examples=sentences, seconds=6.2, losses=[1.37, 1.30], cache=None, curve=None)


class Described:
    """What info reads of a model: a default run's 40,438 rows of 300 + 150 dims, with ``model``'s record."""

    dim, unknown_rule, parts = 450, ("hash",), {"sentence": (0, 300), "word": (300, 450)}

    def __init__(self, model):
        self.info, self.config = model.info, model.config

    def __len__(self):
        return 40_438


@pytest.mark.parametrize("losses, says", [
    ([2.6175, 2.6324, 2.5189, 2.4091], "rose first"),  # the 10M quick-start model's
    ([2.6, 2.5, 2.45, 2.4], "fell"),
    ([2.4214, 2.4500, 2.4400, 2.4372], "no fall"),
])
def test_the_word_part_loss_is_said_for_what_it_is_and_a_rise_is_never_bare(losses, says):
    """The summary names the loss (a fixed sample's) and its path; a first pass above the start, the last
    below, is explained; a last pass no lower than the start is a warning, and info says the same."""
    result, warnings = word_result(losses), []
    lines = summary_lines(result, TrainConfig(), "/m")
    learned_nothing(result, warnings.append)
    word = next(line for line in lines if line.startswith("word part: "))
    after = ", ".join(f"{x:.4f}" for x in losses[1:])
    assert (f"loss {losses[0]:.4f} -> {losses[-1]:.4f} on a fixed sample of 2,048 sentences (before the first pass, "
            f"after the last; after each: {after})") in word
    explained = [line for line in lines if "the first pass, at the highest learning rate, ended above that start" in line]
    word_warnings = [w for w in warnings if "the word part's loss" in w]
    shown = next(line for line in describe_model(Described(result.model), "/m") if line.startswith("word part "))
    assert after in shown
    if says == "rose first":
        assert len(explained) == 1 and word_warnings == []
        assert "the first pass, at the highest learning rate, ended above the start" in shown
    elif says == "fell":
        assert explained == [] and word_warnings == [] and "above the start" not in shown
    else:  # no explanation line of a fall that did not happen: the warning says what the start is
        assert explained == [] and len(word_warnings) == 1
        assert "(2.4214 -> 2.4372)" in word_warnings[0] and "the word frequencies alone" in word_warnings[0]
        assert "no lower than the start" in shown
