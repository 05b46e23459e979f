"""The numba.cuda kernels and the ``--device cuda`` backend against ``scbow.reference``.

Without a GPU these run in Numba's CUDA simulator (tests/conftest.py sets
NUMBA_ENABLE_CUDASIM=1 before numba loads): every CUDA thread is a Python thread, so the
inputs are tiny (dimension 8, a few dozen examples). On a machine with a GPU the same tests
run on it, and the quality check against the CPU path runs too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DATA_DIR, assert_grad_close, build_example, pack, seed_of, synthetic_text

import scbow.training.backends.cuda as scuda
from scbow.config import TrainConfig
from scbow.errors import TrainingError
from scbow.reference import loss_and_grad

PROBLEM = scuda.cuda_problem()
needs_cuda = pytest.mark.skipif(PROBLEM is not None, reason=f"CUDA unusable here: {PROBLEM}")
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # simulated uint64 RNG

if PROBLEM is None:
    from numba import cuda

    from scbow.kernels import cuda as KC
    from scbow.kernels import sampling  # the sampler both devices run

    SIMULATOR = KC.SIMULATOR
else:
    SIMULATOR = False

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="module")
def _fast_simulator():
    """The simulator's block manager polls its threads; a short GIL switch interval cuts its waits."""
    before = sys.getswitchinterval()
    if SIMULATOR:
        sys.setswitchinterval(5e-5)
    yield
    sys.setswitchinterval(before)


def run_example(W, tokens, offsets, members, n_pos, *, coef=1.0, decay=0.0, max_len=0, in_place=False, threads=4,
                rate=None):
    """One example through the kernels' example path; returns (loss, out or stepped W)."""
    V, d = W.shape
    kern = KC.build(len(members), d, threads)
    W_d = cuda.to_device(W)
    out_d = W_d if in_place else cuda.to_device(np.zeros_like(W))
    loss_d = cuda.to_device(np.zeros(1))
    kern.example[1, threads](W_d, W_d.reshape(V * d).view(np.int32), out_d, cuda.to_device(tokens),
                             cuda.to_device(offsets), cuda.to_device(np.asarray(members, np.int64)),
                             cuda.to_device(np.ones(V, np.float32) if rate is None else np.asarray(rate, np.float32)),
                             cuda.to_device(np.array([coef, decay])),
                             cuda.to_device(np.array([n_pos, max_len, int(in_place)], np.int64)), loss_d)
    return float(loss_d.copy_to_host()[0]), out_d.copy_to_host()


def decay_loss(W, sentences, decay):
    rows = W[np.concatenate([np.asarray(s) for s in sentences])].astype(np.float64)
    return 0.5 * decay * float((rows * rows).sum())


# ---------------------------------------------------------------------------------------
# One example: loss and gradient


@needs_cuda
@pytest.mark.parametrize("case, n_pos, n_neg, dim, threads", [
    ("distinct", 2, 2, 8, 4),
    ("length1", 1, 1, 8, 4),
    ("repeated", 2, 3, 8, 4),
    ("shared", 2, 2, 8, 4),
    ("mixed_lengths", 1, 5, 8, 4),
    ("shared", 1, 2, 6, 8),  # more threads than columns
    ("distinct", 2, 2, 5, 1),  # one thread does every column
])
@pytest.mark.parametrize("decay", [0.0, 0.3])
def test_example_loss_and_gradient_match_reference(case, n_pos, n_neg, dim, threads, decay):
    seed = seed_of(case, n_pos, n_neg, dim)
    V, target, positives, negatives = build_example(case, n_pos, n_neg, seed=seed)
    W = (0.3 * np.random.default_rng(seed).standard_normal((V, dim))).astype(np.float32)
    tokens, offsets, members = pack([target, *positives, *negatives], shuffle_seed=seed, extra=3)
    loss, grad = run_example(W, tokens, offsets, members, n_pos, decay=decay, threads=threads)
    ref_loss, ref_grad = loss_and_grad(W, target, positives, negatives, weight_decay=decay)
    # the kernel reports the data loss; the decay term is the reference's extra
    assert loss + decay_loss(W, [target, *positives, *negatives], decay) == pytest.approx(ref_loss, rel=1e-4, abs=1e-5)
    assert_grad_close(grad, ref_grad)
    assert not grad[[V - 2, V - 1]].any()  # rows of words outside the example


@needs_cuda
@pytest.mark.parametrize("max_len", [1, 3])
def test_max_len_truncation_matches_reference(max_len):
    seed = seed_of("max_len", max_len)
    V, target, positives, negatives = build_example("mixed_lengths", 2, 4, seed=seed)
    W = (0.3 * np.random.default_rng(seed).standard_normal((V, 8))).astype(np.float32)
    tokens, offsets, members = pack([target, *positives, *negatives], shuffle_seed=seed, extra=2)
    loss, grad = run_example(W, tokens, offsets, members, 2, max_len=max_len)

    def cut(s):
        return s[:max_len]

    ref_loss, ref_grad = loss_and_grad(W, cut(target), [cut(s) for s in positives], [cut(s) for s in negatives])
    assert loss == pytest.approx(ref_loss, rel=1e-4, abs=1e-5)
    assert_grad_close(grad, ref_grad)
    assert abs(loss_and_grad(W, target, positives, negatives)[0] - ref_loss) > 1e-4  # truncation mattered


# ---------------------------------------------------------------------------------------
# One update step, in place


@needs_cuda
@pytest.mark.parametrize("case, decay", [("distinct", 0.0), ("shared", 0.0), ("distinct", 0.1), ("repeated", 0.1),
                                         ("shared", 0.1)])
def test_in_place_step_is_one_sgd_step(case, decay):
    lr = 0.5
    seed = seed_of("sgd", case)
    V, target, positives, negatives = build_example(case, 2, 3, seed=seed)
    W0 = np.random.default_rng(seed).standard_normal((V, 8)).astype(np.float32)
    tokens, offsets, members = pack([target, *positives, *negatives])
    # per-word step factors on the data gradient (the decay step is not scaled)
    rate = np.random.default_rng(V).uniform(0.05, 1.0, V).astype(np.float32)
    loss, W = run_example(W0, tokens, offsets, members, 2, coef=-lr, decay=decay, in_place=True, rate=rate)
    _, data_grad = loss_and_grad(W0, target, positives, negatives)
    ref_loss, ref_grad = loss_and_grad(W0, target, positives, negatives, weight_decay=decay)
    ref_grad = rate.astype(np.float64)[:, None] * data_grad + (ref_grad - data_grad)
    expected = W0.astype(np.float64) - lr * ref_grad
    assert np.abs(W - W0).max() > 1e-2  # large enough to see a write that came before a read
    assert np.abs(W - expected).max() <= 1e-4 * lr * np.abs(ref_grad).max() + 1e-6


@needs_cuda
def test_in_place_decay_of_a_frequent_word_is_capped_at_its_row():
    # word 1 occurs 12 times: the uncapped step would scale its row by 1 - 12 * 0.5 = -5
    sentences = [[1, 2, 1, 1, 1], [1, 3, 1, 1], [1, 4, 1, 1], [5, 1, 6], [7, 8]]
    lr, decay = 0.5, 1.0
    W0 = np.random.default_rng(3).standard_normal((9, 6)).astype(np.float32)
    tokens, offsets, members = pack(sentences)
    _, W = run_example(W0, tokens, offsets, members, 2, coef=-lr, decay=decay, in_place=True)
    _, data_grad = loss_and_grad(W0, sentences[0], sentences[1:3], sentences[3:])
    np.testing.assert_allclose(W[1], -lr * data_grad[1], rtol=1e-4, atol=1e-6)  # zeroed, then the data step
    _, full_grad = loss_and_grad(W0, sentences[0], sentences[1:3], sentences[3:], weight_decay=decay)
    np.testing.assert_allclose(W[7], W0[7] - lr * full_grad[7], rtol=1e-4, atol=1e-6)  # seen once: exact


# ---------------------------------------------------------------------------------------
# Sampling on the device: the CPU sampler's numbers and invariants

DOC_SIZES = (1, 2, 3, 4, 6, 40)


def doc_arrays(sizes=DOC_SIZES):
    sent_doc = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    doc_offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    doc_offsets[1:] = np.cumsum(sizes)
    return sent_doc, doc_offsets


@needs_cuda
@pytest.mark.parametrize("mode", ["document", "uniform"])
def test_device_sampler_draws_what_the_cpu_sampler_draws(mode):
    mode_id = sampling.NEG_DOCUMENT if mode == "document" else sampling.NEG_UNIFORM
    sent_doc, doc_offsets = doc_arrays()
    n_neg, seed = 3, 17
    targets = np.arange(len(sent_doc), dtype=np.int64)
    members = np.full((len(targets), 3 + n_neg), -1, dtype=np.int64)
    kn = np.zeros((len(targets), 2), dtype=np.int64)
    members_d, kn_d = cuda.to_device(members), cuda.to_device(kn)
    KC.sample_kernel[2, 32](cuda.to_device(targets), cuda.to_device(sent_doc), cuda.to_device(doc_offsets),
                            n_neg, mode_id, seed, members_d, kn_d)
    members, kn = members_d.copy_to_host(), kn_d.copy_to_host()
    for i, target in enumerate(targets):
        state = np.zeros(1, dtype=np.uint64)
        sampling.seed_state(seed, i, state)
        want = np.full(3 + n_neg, -1, dtype=np.int64)
        k, n_pos = sampling.fill_example(target, sent_doc, doc_offsets, n_neg, mode_id, state, want)
        assert (kn[i, 0], kn[i, 1]) == (k, n_pos)
        assert members[i, :k].tolist() == want[:k].tolist()
        # and the invariants themselves, checked here too
        doc = sent_doc[target]
        lo, hi = doc_offsets[doc], doc_offsets[doc + 1]
        neighbours = {s for s in (target - 1, target + 1) if lo <= s < hi}
        if not neighbours:
            assert n_pos == 0
            continue
        negs = set(members[i, 1 + n_pos : k].tolist())
        assert set(members[i, 1 : 1 + n_pos].tolist()) == neighbours
        assert target not in negs and not negs & neighbours
        if mode == "document" and hi - lo > 1 + n_pos:
            assert all(lo <= s < hi for s in negs)
    assert kn[:, 1].sum() > 0


# ---------------------------------------------------------------------------------------
# The backend: learning-rate schedule, epochs over a corpus, streaming


def toy_corpus(doc_sizes, seed=0, vocab=30, max_words=6):
    rng = np.random.default_rng(seed)
    sentences = [rng.integers(0, vocab, size=int(rng.integers(1, max_words + 1))).tolist()
                 for _ in range(sum(doc_sizes))]
    tokens = np.array([w for s in sentences for w in s], dtype=np.int32)
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in sentences])
    sent_doc, doc_offsets = doc_arrays(doc_sizes)
    return SimpleNamespace(sentences=sentences, tokens=tokens, offsets=offsets, sent_doc=sent_doc,
                           doc_offsets=doc_offsets, vocab_size=vocab)


def backend_for(corpus, W, total, rate=None, **config_and_backend):
    backend_keys = ("memory_limit", "block_threads", "grid")
    backend_kw = {k: config_and_backend.pop(k) for k in backend_keys if k in config_and_backend}
    config = TrainConfig(dim=W.shape[1], common_components=-1, device="cuda", **config_and_backend)
    return scuda.CudaBackend(W.copy(), corpus, config, total, rate, **backend_kw), config


@needs_cuda
@pytest.mark.parametrize("doc_sizes, mode", [((3, 1), "uniform"), ((4, 1), "document")])
@pytest.mark.parametrize("position", ["start", "middle", "floor"])
def test_one_example_step_follows_the_learning_rate_schedule(doc_sizes, mode, position):
    # target 1: positives 0 and 2; the only sentence either mode may draw as a negative is 3
    corpus = toy_corpus(doc_sizes, seed=5)
    lr, decay, total = 0.4, 0.5, 1000
    done = {"start": 0, "middle": 500, "floor": 1000}[position]
    W0 = (0.5 * np.random.default_rng(1).standard_normal((corpus.vocab_size, 8))).astype(np.float32)
    backend, config = backend_for(corpus, W0, total, lr=lr, weight_decay=decay, negatives=2, negative_mode=mode,
                                  min_lr_fraction=0.01)
    backend.begin_epoch(np.array([1], dtype=np.int64))
    loss_sum, n = backend.run(0, 1, done)
    W = backend.close()
    step_lr = max(lr * 0.01, lr * (1 - done / total))
    s = corpus.sentences
    ref_loss, ref_grad = loss_and_grad(W0, s[1], [s[0], s[2]], [s[3], s[3]], weight_decay=decay)
    assert n == 1
    assert loss_sum + decay_loss(W0, [s[1], s[0], s[2], s[3], s[3]], decay) == pytest.approx(ref_loss, rel=1e-4)
    expected = W0 - step_lr * ref_grad
    assert np.abs(W - W0).max() > 1e-3
    np.testing.assert_allclose(W, expected, rtol=0, atol=1e-4 * step_lr * np.abs(ref_grad).max() + 1e-7)


def emulate_epoch(backend, corpus, W0, config, total, done0=0, rate=None):
    """The backend's epoch replayed on the host in float64: CPU sampler, reference gradient.

    Uses the backend's own grouping of the targets by chunk and the chunks' local
    numbering, so it checks the kernel (sampling stream, positions, learning rates,
    updates) given that plan; the plan is tested on its own below.
    """
    W = W0.astype(np.float64)
    loss_sum = 0.0
    mode = sampling.NEG_DOCUMENT if config.negative_mode == "document" else sampling.NEG_UNIFORM
    for c, (lo, hi) in enumerate(backend.chunks):
        first, _, _, sent_doc, doc_offsets = scuda.chunk_arrays(corpus, lo, hi)
        for pos in range(backend.bounds[c], backend.bounds[c + 1]):
            position = done0 + pos
            state = np.zeros(1, dtype=np.uint64)
            sampling.seed_state(config.seed, position, state)
            members = np.zeros(3 + config.negatives, dtype=np.int64)
            k, n_pos = sampling.fill_example(backend.epoch_order[pos] - first, sent_doc, doc_offsets, config.negatives,
                                        mode, state, members)
            if n_pos == 0:
                continue
            sents = [corpus.sentences[first + m] for m in members[:k]]
            lr = max(config.lr * config.min_lr_fraction, config.lr * (1 - position / total))
            loss, grad = loss_and_grad(W, sents[0], sents[1 : 1 + n_pos], sents[1 + n_pos :],
                                       weight_decay=config.weight_decay)
            if rate is not None:  # the factors scale the data gradient, not the decay
                _, data = loss_and_grad(W, sents[0], sents[1 : 1 + n_pos], sents[1 + n_pos :])
                grad = rate[:, None] * data + (grad - data)
            loss_sum += loss - decay_loss(W, sents, config.weight_decay)
            W -= lr * grad
    return W, loss_sum


@needs_cuda
@pytest.mark.parametrize("streamed, mode", [(False, "uniform"), (True, "document"), (True, "uniform")])
def test_epoch_matches_a_sequential_replay_on_the_reference(streamed, mode):
    corpus = toy_corpus((5, 1, 7, 2, 6), seed=7)
    n = len(corpus.sent_doc)
    targets = np.random.default_rng(2).permutation(n).astype(np.int64)
    total = 3 * n
    W0 = (0.3 * np.random.default_rng(4).standard_normal((corpus.vocab_size, 8))).astype(np.float32)
    # one block at a time (grid=1): examples apply one after the other, as in the replay
    limit = 250 if streamed else None  # bytes: about 4 sentences per chunk
    rate = np.random.default_rng(3).uniform(0.2, 1.0, corpus.vocab_size)
    backend, config = backend_for(corpus, W0, total, rate=rate.astype(np.float32), lr=0.3, weight_decay=0.2,
                                  negatives=2, negative_mode=mode, seed=9, grid=1, memory_limit=limit)
    assert (len(backend.chunks) > 2) == streamed
    backend.begin_epoch(targets)
    done0 = n  # as if in the second epoch
    cut = n // 2
    l1, c1 = backend.run(0, cut, done0)
    l2, c2 = backend.run(cut, n, done0 + cut)
    W = backend.close()
    assert sorted(backend.epoch_order.tolist()) == sorted(targets.tolist())
    W_ref, ref_loss = emulate_epoch(backend, corpus, W0, config, total, done0, rate=rate.astype(np.float32))
    assert c1 + c2 == n - 1  # every sentence but the lone one of document 1
    assert l1 + l2 == pytest.approx(ref_loss, rel=1e-3)
    moved = np.abs(W_ref - W0).max()
    assert moved > 0.05
    assert np.abs(W - W_ref).max() <= 2e-3 * moved


@needs_cuda
def test_many_negatives_take_fewer_threads_then_a_clear_error():
    corpus = toy_corpus((6, 6), seed=1)
    W = np.zeros((corpus.vocab_size, 200), dtype=np.float32)
    backend, _ = backend_for(corpus, W, 100, negatives=60, block_threads=128)
    assert backend.threads < 128
    assert KC.shared_bytes(63, backend.threads) <= scuda.SHARED_LIMIT
    with pytest.raises(TrainingError, match="--negatives 151"):
        backend_for(corpus, W, 100, negatives=151)


def test_the_cuda_tests_run_in_the_simulator_when_asked():
    """CI has no GPU: these tests must run in the simulator there, never skip quietly."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        assert PROBLEM is None and SIMULATOR


def test_chunk_plan_keeps_every_target_example_and_fits_the_budget():
    rng = np.random.default_rng(0)
    corpus = toy_corpus(tuple(int(x) for x in rng.integers(1, 12, size=15)), seed=3, max_words=9)
    n = len(corpus.sent_doc)
    doc_starts = set(corpus.doc_offsets.tolist())
    for budget in (200, 300, 600, 100_000):
        chunks = scuda.plan_chunks(corpus.offsets, corpus.doc_offsets, budget)
        assert chunks[0][0] == 0 and chunks[-1][1] == n
        assert all(a < b for a, b in chunks) and all(chunks[i][1] == chunks[i + 1][0] for i in range(len(chunks) - 1))
        for lo, hi in chunks:
            first, tokens, offsets, sent_doc, doc_offsets = scuda.chunk_arrays(corpus, lo, hi)
            size = len(offsets) - 1
            assert size >= scuda.MIN_SENTENCES  # every target has a negative to draw
            if size > scuda.MIN_SENTENCES:  # else widened past the budget, at most 3 sentences
                assert 4 * len(tokens) + scuda.SENTENCE_BYTES * size <= budget or len(chunks) == 1
                assert first == max(lo - 1, 0) and first + size == min(hi + 1, n)
            assert first <= max(lo - 1, 0) and first + size >= min(hi + 1, n)
            for s in range(lo, hi):
                local = s - first
                assert tokens[offsets[local] : offsets[local + 1]].tolist() == corpus.sentences[s]
                for nb in (s - 1, s + 1):  # a neighbour in the same document is in the chunk, same document
                    if 0 <= nb < n and corpus.sent_doc[nb] == corpus.sent_doc[s]:
                        assert 0 <= nb - first < size and sent_doc[nb - first] == sent_doc[local]
                doc = sent_doc[local]
                g_doc = corpus.sent_doc[s]
                assert doc_offsets[doc] == max(corpus.doc_offsets[g_doc] - first, 0)
                assert doc_offsets[doc + 1] == min(corpus.doc_offsets[g_doc + 1] - first, size)
            # a cut is at a document boundary when one lies in the second half of the chunk
            if hi < n and hi not in doc_starts:
                assert not any(lo + (hi - lo) // 2 < b < hi for b in doc_starts)
        assert (len(chunks) == 1) == (budget == 100_000)
    with pytest.raises(TrainingError, match="GPU memory"):
        scuda.plan_chunks(corpus.offsets, corpus.doc_offsets, 20)


# ---------------------------------------------------------------------------------------
# Through scbow.training.trainer.train and the CLI


@pytest.fixture
def tiny_corpus_file(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(synthetic_text(n_docs=3, sents_per_doc=10, seed=3), encoding="utf-8")
    return path


def mean_reference_loss(W, corpus, negatives):
    """Mean loss of every target with fixed negatives: an objective measured outside the kernels."""
    sents = [corpus.tokens[corpus.offsets[s] : corpus.offsets[s + 1]].tolist() for s in range(corpus.n_sentences)]
    total, count = 0.0, 0
    for s in range(corpus.n_sentences):
        pos = [sents[t] for t in (s - 1, s + 1) if 0 <= t < corpus.n_sentences and corpus.sent_doc[t] == corpus.sent_doc[s]]
        if pos:
            total += loss_and_grad(W, sents[s], pos, [sents[t] for t in negatives[s]])[0]
            count += 1
    return total / count


@needs_cuda
def test_train_on_cuda_gives_a_model_whose_loss_fell(tiny_corpus_file, tmp_path, monkeypatch):
    from scbow.training.corpus import load_corpus
    from scbow.training.hooks import Hook
    from scbow.training.trainer import train
    from scbow.vectors.formats import load_model
    from scbow.vectors.modeldir import save_model

    monkeypatch.setattr(scuda, "LAUNCH_BATCH", 16)  # several batches per epoch: progress and hooks
    corpus = load_corpus([tiny_corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    # the plain objective (no frequency weights): the loss must fall well below the start
    # the sentence part alone: the word part would run on CPU threads after the CUDA one
    config = TrainConfig(dim=8, epochs=2, lr=0.3, weight_decay=0.0, common_components=-1, device="cuda", seed=4,
                         frequency_weight=0.0, count_power=0.0, word_passes=0)
    seen = []

    class Watch(Hook):
        def after_batch(self, state, vectors):
            seen.append((state.done, vectors().copy()))

    result = train(corpus, config, quiet=True, hooks=[Watch()])
    n_targets = corpus.n_sentences  # every document has several sentences
    assert result.examples == 2 * n_targets and seen[-1][0] == result.examples
    assert len(result.losses) == len(seen) == 2 * -(-n_targets // 16)
    assert all(isinstance(W, np.ndarray) and W.dtype == np.float32 for _, W in seen)
    assert np.isfinite(result.losses).all()
    assert result.model.info["training"]["device"] == "cuda"
    np.testing.assert_array_equal(seen[-1][1], result.model.vectors)  # the hook saw the final matrix

    rng = np.random.default_rng(0)
    negatives = rng.integers(0, corpus.n_sentences, size=(corpus.n_sentences, 2))
    from scbow.training.start import init_vectors
    before = mean_reference_loss(init_vectors(len(corpus.vocab), config), corpus, negatives)
    after = mean_reference_loss(result.model.vectors, corpus, negatives)
    assert after < before - 0.1, (before, after)  # about 1.36 -> 1.16

    path = save_model(result.model, tmp_path / "model")
    np.testing.assert_array_equal(load_model(path).vectors, result.model.vectors)


@needs_cuda
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator's numpy scalars see the inf and NaN
def test_cuda_divergence_is_reported_like_on_cpu(tiny_corpus_file, tmp_path):
    import scbow

    config = TrainConfig(dim=8, epochs=1, lr=1e30, weight_decay=0.0, common_components=-1, device="cuda")
    with pytest.raises(TrainingError, match="lr"):
        scbow.train([tiny_corpus_file], config, quiet=True, cache_dir=tmp_path / "cache")


@needs_cuda
def test_cli_trains_on_cuda(tiny_corpus_file, tmp_path):
    from click.testing import CliRunner

    from scbow.cli import main
    from scbow.vectors.formats import load_model

    out = tmp_path / "model"
    result = CliRunner().invoke(main, ["train", str(tiny_corpus_file), "-o", str(out), "--device", "cuda", "--dim", "8",
                                       "--epochs", "1", "--min-count", "1", "--common-components", "-1",
                                       "--word-passes", "0", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    assert "GPU" in result.stderr
    model = load_model(out)
    assert model.info["training"]["device"] == "cuda" and model.vectors.shape[1] == 8


def test_cuda_trains_the_word_part_on_the_cpu_and_says_so(tiny_corpus_file, tmp_path):
    from click.testing import CliRunner

    from scbow.cli import main
    from scbow.vectors.formats import load_model

    out = tmp_path / "model"
    result = CliRunner().invoke(main, ["train", str(tiny_corpus_file), "-o", str(out), "--device", "cuda", "--dim", "8",
                                       "--epochs", "1", "--min-count", "1", "--common-components", "-1",
                                       "--word-passes", "1", "--word-dim", "4", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    assert "the word part trains on the CPU" in result.stderr
    model = load_model(out)
    assert model.parts == {"sentence": (0, 8), "word": (8, 12)}
    assert model.info["training"]["word_part"]["sentences"] > 0


# ---------------------------------------------------------------------------------------
# No GPU, no numba-cuda: one line, exit 1


class NoDevice:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def cuda_error():
        return "\nCUDA driver library cannot be found.\nIf you are sure that a CUDA driver is installed,\n"


def no_numba_cuda():
    raise ImportError("No module named 'numba.cuda'")


@pytest.mark.parametrize("importer, installed, fragments", [
    (NoDevice, False, ["no usable NVIDIA GPU", "CUDA driver library cannot be found", "numba-cuda package is not installed",
                       "pip install 'scbow-numba[cuda]'"]),
    (NoDevice, True, ["no usable NVIDIA GPU", "nvidia-smi"]),
    (no_numba_cuda, False, ["needs numba-cuda", "pip install 'scbow-numba[cuda]'"]),
])
def test_cli_without_gpu_or_numba_cuda_says_what_is_missing(tmp_path, small_corpus_file, monkeypatch, importer,
                                                           installed, fragments):
    from click.testing import CliRunner

    from scbow.cli import main

    monkeypatch.setattr(scuda, "_import_cuda", importer if importer is no_numba_cuda else lambda: importer)
    monkeypatch.setattr(scuda, "_numba_cuda_installed", lambda: installed)
    out = tmp_path / "model"
    result = CliRunner().invoke(main, ["train", str(small_corpus_file), "-o", str(out), "--device", "cuda",
                                       "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --device cuda"), result.output
    for fragment in fragments:
        assert fragment in lines[0]
    assert not out.exists()
    assert not (tmp_path / "cache").exists()  # it failed before reading the corpus

    # the Python API says the same
    import scbow

    with pytest.raises(TrainingError, match="--device cuda"):
        scbow.train([small_corpus_file], TrainConfig(dim=8, epochs=1, device="cuda"), quiet=True, use_cache=False)


def test_cli_without_a_visible_gpu_for_real(tmp_path, small_corpus_file):
    """No mocks: a fresh process without the simulator and with no visible device."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    out = tmp_path / "model"
    proc = subprocess.run([sys.executable, "-m", "scbow", "train", str(small_corpus_file), "-o", str(out),
                           "--device", "cuda", "--cache-dir", str(tmp_path / "cache")],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --device cuda"), proc.stderr
    # the one line cuda_problem() gives in such a process, whichever it is here
    probe = subprocess.run([sys.executable, "-c", "import scbow.training.backends.cuda as c; print(c.cuda_problem())"],
                           capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert lines[0] == "Error: " + probe.stdout.strip()
    if not scuda._numba_cuda_installed():
        assert "pip install 'scbow-numba[cuda]'" in lines[0]
    assert not out.exists()


# ---------------------------------------------------------------------------------------
# On a real GPU only: quality against the CPU path on the 10M corpus

CORPUS_10M = DATA_DIR / "corpus" / "gutenberg-10M.txt.xz"
STSB_DEV = DATA_DIR / "sts-dev" / "stsb.dev.tsv"


@pytest.mark.slow
@needs_cuda
@pytest.mark.skipif(SIMULATOR, reason="needs a real GPU (the simulator would take days on the 10M corpus)")
@pytest.mark.skipif(not (CORPUS_10M.is_file() and STSB_DEV.is_file()), reason="10M corpus or STS-B dev set missing")
def test_gpu_quality_is_within_001_dev_pearson_of_the_cpu_path(tmp_path):  # pragma: no cover - needs a GPU
    from scbow.training.corpus import load_corpus
    from scbow.training.trainer import train
    from scbow.use.evaluate import read_sts, score_set

    corpus = load_corpus([CORPUS_10M], TrainConfig().min_count, TrainConfig().max_vocab, cache_dir=tmp_path / "cache")
    dev = read_sts(STSB_DEV)
    scores = {}
    for device in ("cpu", "cuda"):  # two seeds each: single runs differ by about 0.01 (Hogwild)
        # the sentence part alone: the word part runs on CPU threads whichever the device
        config = TrainConfig(device=device, word_passes=0)
        scores[device] = float(np.mean([score_set(train(corpus, config.replace(seed=seed), quiet=True)
                                                  .model.embed, dev).pearson for seed in (1, 2)]))
    assert abs(scores["cuda"] - scores["cpu"]) <= 0.01, scores


# ---------------------------------------------------------------------------------------
# Real atomics: many blocks on the same rows at once (a real GPU only: the simulator runs
# blocks one at a time, so a plain read-modify-write would pass there)

needs_real_gpu = pytest.mark.skipif(PROBLEM is not None or SIMULATOR,
                                    reason="needs a real GPU: the simulator runs blocks one after the other")


@needs_real_gpu
def test_many_blocks_add_their_gradients_without_losing_one():
    """256 blocks add the gradient of the same example into one array: exactly 256 times it."""
    V, target, positives, negatives = build_example("shared", 2, 3, seed=21)
    W = np.random.default_rng(21).standard_normal((V, 64)).astype(np.float32)
    tokens, offsets, members = pack([target, *positives, *negatives])
    blocks, threads = 256, 64
    kern = KC.build(len(members), 64, threads)
    W_d = cuda.to_device(W)
    out_d = cuda.to_device(np.zeros_like(W))
    kern.example[blocks, threads](W_d, W_d.reshape(V * 64).view(np.int32), out_d, cuda.to_device(tokens),
                                  cuda.to_device(offsets), cuda.to_device(np.asarray(members, np.int64)),
                                  cuda.to_device(np.ones(V, np.float32)), cuda.to_device(np.array([1.0, 0.0])),
                                  cuda.to_device(np.array([2, 0, 0], np.int64)), cuda.to_device(np.zeros(1)))
    _, ref = loss_and_grad(W, target, positives, negatives)
    np.testing.assert_allclose(out_d.copy_to_host(), blocks * ref, rtol=1e-3, atol=1e-4 * blocks * np.abs(ref).max())


@needs_real_gpu
def test_many_blocks_compound_their_weight_decay_on_shared_rows():
    """256 blocks each shrink the rows of one example in place (a vanishing data step): every
    shrink must land, compounded by the compare-and-swap loop, as (1 + f) ** 256."""
    V, target, positives, negatives = build_example("distinct", 2, 3, seed=22)
    W0 = np.random.default_rng(22).standard_normal((V, 64)).astype(np.float32)
    tokens, offsets, members = pack([target, *positives, *negatives])
    blocks, threads, lr, decay = 256, 64, 1e-7, 1e5  # f = -lr * decay = -0.01 per occurrence
    kern = KC.build(len(members), 64, threads)
    W_d = cuda.to_device(W0)
    kern.example[blocks, threads](W_d, W_d.reshape(V * 64).view(np.int32), W_d, cuda.to_device(tokens),
                                  cuda.to_device(offsets), cuda.to_device(np.asarray(members, np.int64)),
                                  cuda.to_device(np.ones(V, np.float32)), cuda.to_device(np.array([-lr, decay])),
                                  cuda.to_device(np.array([2, 0, 1], np.int64)), cuda.to_device(np.zeros(1)))
    W = W_d.copy_to_host()
    used = sorted({w for s in [target, *positives, *negatives] for w in s})
    expected = W0[used].astype(np.float64) * (1 - lr * decay) ** blocks  # each word occurs once ("distinct")
    np.testing.assert_allclose(W[used], expected, rtol=2e-2)
    assert np.abs(W[used]).max() < 0.2 * np.abs(W0[used]).max()  # it really shrank: 0.99 ** 256 = 0.08


# ---------------------------------------------------------------------------------------
# The skip-gram term (TrainConfig.word_window) on the device


def run_words(W, Wo, a, tokens, *, window, n_neg, lr, weight, noise, threads=4, seed=1):
    """The device's skip-gram term over ``tokens`` by one block; returns (loss, W, Wo)."""
    from scbow.training.backends.params import params_record

    kern = KC.build(3, W.shape[1], threads, n_neg)
    W_d, O_d = cuda.to_device(W), cuda.to_device(Wo)
    word = (O_d, cuda.to_device(a), cuda.to_device(np.ones(len(W), np.float32)),
            cuda.to_device(np.asarray(noise, np.int32)))
    loss_d = cuda.to_device(np.zeros(1))
    params = params_record(word_window=window, word_negatives=n_neg, word_weight=weight)
    kern.words[1, threads](W_d, cuda.to_device(np.asarray(tokens, np.int32)), lr, params, word, seed, loss_d)
    return float(loss_d.copy_to_host()[0]), W_d.copy_to_host(), O_d.copy_to_host()


@needs_cuda
@pytest.mark.parametrize("dim, threads", [(8, 4), (5, 2)])
def test_word_term_step_is_one_sgd_step_of_the_reference(dim, threads):
    """Window 1 and a one-word noise table make the step deterministic: W moves by
    ``-lr * weight * a**2 * dL/dW`` less its part along the row (lengths kept), Wo by
    ``-lr * weight * dL/dO`` (to second order in lr)."""
    from test_word_term import turn_only

    from scbow.reference import sgns_loss_and_grad, sgns_sentence_pairs

    rng = np.random.default_rng(seed_of("cuda words", dim))
    V = 12
    W0 = (0.3 * rng.standard_normal((V, dim))).astype(np.float32)
    Wo0 = (0.3 * rng.standard_normal((V, dim + 1))).astype(np.float32)  # rows, then biases
    a = rng.uniform(0.2, 1.0, V).astype(np.float32)
    sentence, noise, lr, weight = [3, 1, 4, 1, 5, 9, 2, 7], 7, 1e-4, 0.5
    loss, W, Wo = run_words(W0, Wo0, a, sentence, window=1, n_neg=2, lr=lr, weight=weight, noise=[noise],
                           threads=threads)
    pairs = [(c, x, [noise, noise] if x != noise else []) for c, x in sgns_sentence_pairs(sentence, 1)]
    ref_loss, gW, gWo = sgns_loss_and_grad(W0, Wo0, pairs, a)
    assert loss == pytest.approx(ref_loss, rel=1e-3)
    expected_W = W0 - lr * weight * (a.astype(np.float64) ** 2)[:, None] * turn_only(W0, gW)
    expected_O = Wo0 - lr * weight * gWo
    assert np.abs(W - W0).max() > 0 and np.abs(Wo - Wo0).max() > 0
    assert np.linalg.norm(W, axis=1) == pytest.approx(np.linalg.norm(W0, axis=1), rel=1e-5)
    assert np.abs(W - expected_W).max() <= 1e-2 * np.abs(W - W0).max()
    assert np.abs(Wo - expected_O).max() <= 1e-2 * np.abs(Wo - Wo0).max()
    untouched = [0, 6, 8, 10, 11]
    assert np.array_equal(W[untouched], W0[untouched]) and np.array_equal(Wo[untouched], Wo0[untouched])


@needs_cuda
def test_word_term_draws_what_the_cpu_kernel_draws():
    """Same seed, same sampler: a wide window and a real noise table step W and Wo as the CPU kernel does
    (up to float32 summation order)."""
    from scbow.kernels import cpu
    from scbow.training.backends.params import params_record

    rng = np.random.default_rng(11)
    V, dim, n_neg = 20, 8, 3
    W0 = (0.3 * rng.standard_normal((V, dim))).astype(np.float32)
    Wo0 = (0.3 * rng.standard_normal((V, dim + 1))).astype(np.float32)  # rows, then biases
    a = rng.uniform(0.2, 1.0, V).astype(np.float32)
    table = rng.integers(0, V, 50).astype(np.int32)
    tokens = rng.integers(0, V, 9).astype(np.int32)
    lr, weight = 0.01, 1.0
    _, W, Wo = run_words(W0, Wo0, a, tokens, window=3, n_neg=n_neg, lr=lr, weight=weight, noise=table)
    Wc, Woc = W0.copy(), Wo0.copy()
    state = np.empty(1, np.uint64)
    sampling.seed_state(1, 0, state)
    buffers = (np.empty(sampling.WORD_SEGMENT, np.int32), np.empty(1 + n_neg, np.int32),
               np.empty(dim, np.float32), np.empty(dim, np.float32))
    params = params_record(word_window=3, word_negatives=n_neg, word_weight=weight)
    cpu.sgns_sentence(Wc, tokens, 0, len(tokens), lr, params, (Woc, a, np.ones(V, np.float32), table), buffers,
                      (0, np.zeros((1, dim), np.float32), np.ones(1, np.float32)), state)
    assert np.abs(Wc - W0).max() > 1e-4
    # the device reads every noise word's row before stepping any of a context's rows, the CPU one after another
    np.testing.assert_allclose(W, Wc, atol=1e-2 * np.abs(Wc - W0).max())
    np.testing.assert_allclose(Wo, Woc, atol=1e-2 * np.abs(Woc - Wo0).max())
    # a different stream would move other rows: the draws are the same
    assert np.array_equal(np.abs(W - W0).max(axis=1) > 0, np.abs(Wc - W0).max(axis=1) > 0)


@needs_cuda
def test_backend_trains_the_word_term_and_hands_back_its_output_matrix():
    corpus = toy_corpus((6, 5), seed=2)
    V, dim = corpus.vocab_size, 8
    W0 = (0.3 * np.random.default_rng(4).standard_normal((V, dim))).astype(np.float32)
    word = (np.zeros((V, dim + 1), np.float32), np.ones(V, np.float32), np.ones(V, np.float32),
            np.arange(V, dtype=np.int32))
    config = TrainConfig(dim=dim, common_components=-1, device="cuda", word_window=2, word_weight=1.0, lr=0.2)
    backend = scuda.CudaBackend(W0.copy(), corpus, config, 8, word=word)
    backend.begin_epoch(np.arange(1, 9, dtype=np.int64))
    _, n = backend.run(0, 8, 0)
    Wo = backend.output()
    W = backend.close()
    assert n > 0 and Wo.shape == (V, dim + 1) and np.abs(Wo).max() > 0 and np.abs(Wo[:, dim]).max() > 0
    # the same run without the term: W differs, and there is no output matrix
    plain = scuda.CudaBackend(W0.copy(), corpus, config.replace(word_window=0), 8)
    plain.begin_epoch(np.arange(1, 9, dtype=np.int64))
    plain.run(0, 8, 0)
    assert plain.output() is None
    assert not np.allclose(plain.close(), W)
