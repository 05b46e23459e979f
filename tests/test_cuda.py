"""The numba.cuda kernels (one example's: test_kernels, with the CPU's) and the ``--device cuda`` backend against
``scbow.reference``. Without a GPU, in Numba's CUDA simulator (conftest.py): a Python thread a CUDA thread, so the
inputs are tiny; on a GPU the same tests, and the quality check against the CPU path too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DATA_DIR, assert_clean_error, build_example, pack, synthetic_text
from test_kernels import PROBLEM, _fast_simulator, doc_arrays, needs_cuda, reference_step, run_example, toy_corpus  # noqa: F401
from test_wordpart import SignalInWordPart, tiny_problem, train_sentences, word_record

import scbow
import scbow.training.backends.cuda as scuda
from scbow.cli import main
from scbow.config import TrainConfig
from scbow.errors import TrainingError
from scbow.reference import loss_and_grad
from scbow.training.corpus import load_corpus
from scbow.training.hooks import Hook
from scbow.training.start import init_vectors
from scbow.training.trainer import train
from scbow.vectors.formats import load_model

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # simulated uint64 RNG

if PROBLEM is None:
    from numba import cuda

    from scbow.kernels import cuda as KC
    from scbow.kernels import sampling  # the sampler both devices run

    SIMULATOR = KC.SIMULATOR
else:
    SIMULATOR = False

REPO = Path(__file__).resolve().parents[1]


# -- Sampling on the device: the CPU sampler's numbers and invariants ------------------------------

@needs_cuda
@pytest.mark.parametrize("mode", ["document", "uniform"])
def test_device_sampler_draws_what_the_cpu_sampler_draws(mode):
    """The CPU sampler's numbers, whose invariants test_kernels.test_fill_example_invariants pins."""
    mode_id = sampling.NEG_DOCUMENT if mode == "document" else sampling.NEG_UNIFORM
    sent_doc, doc_offsets = doc_arrays((1, 2, 3, 4, 6, 40))
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
    assert kn[:, 1].sum() > 0


# -- The backend: learning-rate schedule, epochs over a corpus, streaming --------------------------


def backend_for(corpus, W, total, rate=None, **config_and_backend):
    backend_keys = ("memory_limit", "block_threads", "grid")
    backend_kw = {k: config_and_backend.pop(k) for k in backend_keys if k in config_and_backend}
    config = TrainConfig(dim=W.shape[1], common_components=-1, device="cuda", **config_and_backend)
    return scuda.CudaBackend(W.copy(), corpus, config, total, rate, **backend_kw), config


def emulate_epoch(backend, corpus, W0, config, total, done0=0, rate=None):
    """The backend's epoch replayed on the host in float64 (CPU sampler, reference gradient) with the backend's
    own plan of chunks, so it checks the kernel given that plan; the plan is tested on its own below."""
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
            loss, grad = reference_step(W, (sents[0], sents[1 : 1 + n_pos], sents[1 + n_pos :]), config.weight_decay,
                                        rate)
            loss_sum += loss
            W -= lr * grad
    return W, loss_sum


@needs_cuda
@pytest.mark.parametrize("streamed, mode", [(False, "uniform"), (True, "document"), (True, "uniform")])
def test_epoch_matches_a_sequential_replay_on_the_reference(streamed, mode):
    corpus = toy_corpus(7, (5, 1, 7, 2, 6), vocab=30, max_words=6)
    n = len(corpus.sent_doc)
    targets = np.random.default_rng(2).permutation(n).astype(np.int64)
    total = 2 * n  # the rate falls from lr / 2 to its floor, lr / 5, in the epoch's last 40%
    W0 = (0.3 * np.random.default_rng(4).standard_normal((corpus.vocab_size, 8))).astype(np.float32)
    # one block at a time (grid=1): examples apply one after the other, as in the replay
    limit = 250 if streamed else None  # bytes: about 4 sentences per chunk
    rate = np.random.default_rng(3).uniform(0.2, 1.0, corpus.vocab_size)
    backend, config = backend_for(corpus, W0, total, rate=rate.astype(np.float32), lr=0.3, weight_decay=0.2,
                                  min_lr_fraction=0.2, negatives=2, negative_mode=mode, seed=9, grid=1,
                                  memory_limit=limit)
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
    corpus = toy_corpus(1, (6, 6), vocab=30, max_words=6)
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
    corpus = toy_corpus(3, tuple(int(x) for x in rng.integers(1, 12, size=15)), vocab=30, max_words=9)
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


# -- Through scbow.training.trainer.train and the CLI ----------------------------------------------


def spy_on_launches(monkeypatch) -> list:
    """The (blocks, examples or sentences) of every kernel launch of the backends from now on."""
    launches, launch = [], scuda.launch

    def spy(kernel, grid, threads, args, stats_d, simulator):
        lo, hi = (args[6], args[7]) if len(args) == 10 else (args[4], args[5])
        launches.append((grid, hi - lo))
        return launch(kernel, grid, threads, args, stats_d, simulator)

    monkeypatch.setattr(scuda, "launch", spy)
    return launches


@pytest.fixture
def tiny_corpus_file(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(synthetic_text(n_docs=3, sents_per_doc=10, seed=3), encoding="utf-8")
    return path


@needs_cuda
def test_train_on_cuda_runs_the_trainers_batches_and_hooks_on_the_device_matrix(tiny_corpus_file, tmp_path, monkeypatch):
    """The GPU's epochs are the reference's SGD (test_epoch_matches_a_sequential_replay_on_the_reference) and SGD lowers
    the loss (test_trainer): here the trainer drives the backend, its hooks see the device's matrix as it trains."""
    import scbow.training.trainer as trainer_module

    # several batches per epoch: progress and hooks (a corpus this small gets the trainer's batches)
    monkeypatch.setattr(trainer_module, "BATCH", 16)
    corpus = load_corpus([tiny_corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    # the sentence part alone: this test is about its launches
    config = TrainConfig(dim=8, epochs=2, lr=0.3, weight_decay=0.0, common_components=-1, device="cuda", seed=4,
                         frequency_weight=0.0, count_power=0.0, word_passes=0)
    seen = []

    class Watch(Hook):
        def after_batch(self, state, matrices):
            seen.append((state.done, matrices["sentence"].copy()))

    result = train(corpus, config, quiet=True, hooks=[Watch()])
    n_targets = corpus.n_sentences  # every document has several sentences
    assert result.examples == 2 * n_targets and seen[-1][0] == result.examples
    assert len(result.losses) == len(seen) == 2 * -(-n_targets // 16)
    assert all(isinstance(W, np.ndarray) and W.dtype == np.float32 for _, W in seen)
    assert np.isfinite(result.losses).all()
    assert result.model.info["training"]["device"] == "cuda"
    np.testing.assert_array_equal(seen[-1][1], result.model.vectors)  # the hook saw the final matrix
    start = init_vectors(len(corpus.vocab), config)
    assert np.abs(seen[0][1] - start).max() > 1e-3 and np.abs(seen[-1][1] - seen[0][1]).max() > 1e-3  # it trained


@needs_cuda
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator's numpy scalars see the inf and NaN
def test_cuda_divergence_is_reported_like_on_cpu(tiny_corpus_file, tmp_path, monkeypatch):
    """At lr 1e30 both devices stop with the same error and save nothing. (The H200 saved a model: one
    launch of all 30 examples read only the start rows, as the next test shows; the simulator runs blocks one
    after the other, so the launches are checked: one example each on a corpus this small.)"""
    from scbow.training.session import train_session

    launches = spy_on_launches(monkeypatch)
    errors = {}
    for device in ("cpu", "cuda"):
        config = TrainConfig(device=device, dim=8, epochs=1, lr=1e30, weight_decay=0.0, min_count=1,
                             common_components=-1, word_passes=0)
        with pytest.raises(TrainingError, match="the loss became nan after 30 examples.*--lr") as info:
            train_session([tiny_corpus_file], config, tmp_path / device, quiet=True, cache_dir=tmp_path / "cache")
        errors[device] = str(info.value)
        assert not (tmp_path / device).exists()
    assert errors["cuda"] == errors["cpu"]
    assert launches and all(examples == 1 for _, examples in launches)


@needs_cuda
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator's numpy scalars see the overflow
def test_examples_that_all_read_the_start_rows_hide_a_divergence():
    """Why the H200 saved a model at --lr 1e30: 30 examples reading the start rows (one launch) have a finite
    loss and leave finite rows (over 1e28); the next example to read them overflows their squared norms."""
    V, target, positives, negatives = build_example("shared", 2, 2, seed=5)
    W0 = np.random.default_rng(5).standard_normal((V, 8)).astype(np.float32)
    example = pack([target, *positives, *negatives])
    loss, step = run_example(W0, *example, 2, coef=-1e30, blocks=30)
    W1 = W0 + step
    assert np.isfinite(loss) and np.isfinite(W1).all() and np.abs(W1).max() > 1e28
    after, _ = run_example(W1, *example, 2)
    assert np.isnan(after)


@needs_cuda
def test_cli_trains_the_whole_model_on_cuda(tiny_corpus_file, tmp_path, runner):
    """Both parts train on the GPU: the summary and ``info`` say so, and no CPU thread is named for the word part."""
    out = tmp_path / "model"
    result = runner.invoke(main, ["train", str(tiny_corpus_file), "-o", str(out), "--device", "cuda", "--dim", "8",
                                  "--epochs", "1", "--min-count", "1", "--common-components", "-1",
                                  "--word-passes", "1", "--word-dim", "4", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    assert "/s, GPU)" in result.stderr and "/s, GPU), loss" in result.stderr.split("word part:")[1]
    assert "on the CPU" not in result.stderr
    model = load_model(out)
    assert model.info["training"]["device"] == "cuda" and model.parts == {"sentence": (0, 8), "word": (8, 12)}
    w = model.info["training"]["word_part"]
    assert w["sentences"] == 30 and w["device"] == "cuda" and w["final_loss"] != w["first_loss"]
    info = runner.invoke(main, ["info", str(out)])
    assert info.exit_code == 0 and "/s) on GPU, loss" in info.output.split("word part   30 sentences in")[1]


# -- No GPU, no numba-cuda: one line, exit 1 -------------------------------------------------------


NoDevice = SimpleNamespace(is_available=lambda: False, cuda_error=lambda: "\nCUDA driver library cannot be found.\n"
                           "If you are sure that a CUDA driver is installed,\n")


def no_numba_cuda():
    raise ImportError("No module named 'numba.cuda'")


def no_row_stack():
    raise AttributeError("module 'numpy' has no attribute 'row_stack'")


@pytest.mark.parametrize("importer, installed, fragments", [
    (NoDevice, False, ["--device cuda found no usable NVIDIA GPU", "CUDA driver library cannot be found",
                       "numba-cuda package is not installed", "pip install 'scbow-numba[cuda]'"]),
    (NoDevice, True, ["--device cuda found no usable NVIDIA GPU", "nvidia-smi"]),
    (no_numba_cuda, False, ["--device cuda needs numba-cuda", "pip install 'scbow-numba[cuda]'"]),
    # numba-cuda 0.30.4 with numpy 2.5 (no np.row_stack) failed at the first compile, as 'unexpected
    # AttributeError': cuda_problem loads what the compiler loads and names the cause and the fix
    pytest.param(None, True, ["numba-cuda 0.30.4 does not work with numpy 2.5.2", "row_stack", "pip install 'numpy<2.5'"],
                 marks=needs_cuda),
])
def test_cli_without_gpu_numba_cuda_or_a_numpy_it_works_with_says_what_is_missing(tmp_path, runner, small_corpus_file,
                                                                                  monkeypatch, importer, installed,
                                                                                  fragments):
    import importlib.metadata

    if importer is None:
        versions = {"numpy": "2.5.2", "numba-cuda": "0.30.4"}
        monkeypatch.setattr(scuda, "_load_compiler", no_row_stack)
        monkeypatch.setattr(importlib.metadata, "version", lambda name: versions[name])
    else:
        monkeypatch.setattr(scuda, "_import_cuda", importer if importer is no_numba_cuda else lambda: importer)
        monkeypatch.setattr(scuda, "_numba_cuda_installed", lambda: installed)
    out = tmp_path / "model"
    result = runner.invoke(main, ["train", str(small_corpus_file), "-o", str(out), "--device", "cuda",
                                  "--cache-dir", str(tmp_path / "cache")])
    line = assert_clean_error(result, *fragments, exit_code=1)
    assert line.startswith("Error: " + fragments[0]) and result.output.strip() == line
    assert not out.exists()
    assert not (tmp_path / "cache").exists()  # it failed before reading the corpus
    with pytest.raises(TrainingError, match=re.escape(fragments[0])):  # the Python API says the same
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


# -- On a real GPU only: quality against the CPU path on the 10M corpus ----------------------------

CORPUS_10M = DATA_DIR / "corpus" / "gutenberg-10M.txt.xz"
STSB_DEV = DATA_DIR / "sts-dev" / "stsb.dev.tsv"


@pytest.mark.slow
@needs_cuda
@pytest.mark.skipif(SIMULATOR, reason="needs a real GPU (the simulator would take days on the 10M corpus)")
@pytest.mark.skipif(not (CORPUS_10M.is_file() and STSB_DEV.is_file()), reason="10M corpus or STS-B dev set missing")
def test_gpu_quality_is_within_001_dev_pearson_of_the_cpu_path(tmp_path):  # pragma: no cover - needs a GPU
    from scbow.use.evaluate import read_sts, score_set

    corpus = load_corpus([CORPUS_10M], TrainConfig().min_count, TrainConfig().max_vocab, cache_dir=tmp_path / "cache")
    dev = read_sts(STSB_DEV)
    scores = {}
    for device in ("cpu", "cuda"):  # two seeds each: single runs differ by about 0.01 (Hogwild)
        # the sentence part alone (benchmarks/gpu_check.py compares the defaults, word part included)
        config = TrainConfig(device=device, word_passes=0)
        scores[device] = float(np.mean([score_set(train(corpus, config.replace(seed=seed), quiet=True)
                                                  .model.encode, dev).pearson for seed in (1, 2)]))
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
    _, out = run_example(W, *pack([target, *positives, *negatives]), 2, threads=64, blocks=256)
    _, ref = loss_and_grad(W, target, positives, negatives)
    np.testing.assert_allclose(out, 256 * ref, rtol=1e-3, atol=1e-4 * 256 * np.abs(ref).max())


@needs_real_gpu
def test_many_blocks_compound_their_weight_decay_on_shared_rows():
    """256 blocks each shrink the rows of one example in place (a vanishing data step): every
    shrink must land, compounded by the compare-and-swap loop, as (1 + f) ** 256."""
    V, target, positives, negatives = build_example("distinct", 2, 3, seed=22)
    W0 = np.random.default_rng(22).standard_normal((V, 64)).astype(np.float32)
    blocks, lr, decay = 256, 1e-7, 1e5  # f = -lr * decay = -0.01 per occurrence
    _, W = run_example(W0, *pack([target, *positives, *negatives]), 2, coef=-lr, decay=decay, in_place=True, threads=64,
                       blocks=blocks)
    used = sorted({w for s in [target, *positives, *negatives] for w in s})
    expected = W0[used].astype(np.float64) * (1 - lr * decay) ** blocks  # each word occurs once ("distinct")
    np.testing.assert_allclose(W[used], expected, rtol=2e-2)
    assert np.abs(W[used]).max() < 0.2 * np.abs(W0[used]).max()  # it really shrank: 0.99 ** 256 = 0.08


# -- The word part (scbow.training.wordpart) on the device -----------------------------------------


@needs_cuda
@pytest.mark.parametrize("d, threads, blocks", [(8, 4, 1), (5, 2, 1), (4, 2, 3)])
def test_word_part_kernel_is_the_cpu_kernel_sentence_by_sentence(d, threads, blocks):
    """One block trains the sentences one after the other, as one CPU thread does: the same draws from the same
    streams, the same steps, to float32 summation order; the learning rate follows the same schedule, to its floor.
    Several blocks stride over a launch's sentences, each trained once from its own stream (at a vanishing rate:
    on a GPU the blocks run at once)."""
    tokens, offsets, Wi, Wo, keep, table = tiny_problem(d=d, n_tokens=70)
    offsets = np.array([0, 12, 30, 41, 55, 70], dtype=np.int64)
    lr = 0.05 if blocks == 1 else 1e-6
    params, done = word_record(lr=lr, lr_min=lr / 5, total=40), 30  # the last sentence's rate is the floor
    Wg, Og, loss, pairs = train_sentences("cuda", Wi, Wo, tokens, offsets, 0, 5, keep, table, params, done, threads,
                                          blocks)
    Wc, Oc, c_loss, c_pairs = train_sentences("cpu", Wi, Wo, tokens, offsets, 0, 5, keep, table, params, done)
    assert blocks > 1 or (np.abs(Wc - Wi).max() > 0.02 and np.abs(Oc[:, d] - Wo[:, d]).max() > 0.01)  # rows, biases moved
    np.testing.assert_allclose(Wg, Wc, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(Og, Oc, rtol=1e-5, atol=1e-5)
    assert pairs == c_pairs > 20 and loss == pytest.approx(c_loss, rel=1e-5)


@needs_cuda
def test_a_word_part_batch_of_several_launches_goes_on_where_the_last_launch_ended(tiny_corpus_file, tmp_path):
    """Each launch of a batch gets its sentences' run positions (streams, rates): one block in launches of 4
    sentences trains the rows one launch of the batch does, and the CPU, to float32 summation order."""
    from scbow.training import wordpart
    from scbow.training.backends.cuda import CudaWordPart

    corpus = load_corpus([tiny_corpus_file], min_count=1, cache_dir=tmp_path / "cache")
    config = TrainConfig(dim=8, min_count=1, device="cuda", seed=3, word_passes=1, word_dim=4,
                         word_lr=0.2)
    cpu = wordpart.WordPart(corpus, config, 1)
    start = cpu.Wi.copy()
    launches = []
    for size in (4, corpus.n_sentences):
        part = CudaWordPart(corpus, config, block_threads=2, grid=1)
        part.launch = size
        launches.append((part.run(0), part.matrices()))
        part.close()
    n, loss, pairs = cpu.run(0)
    assert n == corpus.n_sentences > 4 and pairs > 0 and np.abs(cpu.Wi - start).max() > 1e-2
    for (g_n, g_loss, g_pairs), rows in launches:
        assert (g_n, g_pairs) == (n, pairs) and g_loss == pytest.approx(loss, rel=1e-5)
        for name, M in cpu.matrices().items():
            np.testing.assert_allclose(rows[name], M, rtol=1e-5, atol=1e-6)
    cpu.close()


@needs_cuda
def test_resume_inside_the_word_part_on_cuda(tiny_corpus_file, tmp_path, monkeypatch):
    """A run interrupted inside the GPU's word part resumes to the same model bit for bit, as on the CPU
    (test_wordpart): the rows saved are the device's, each sentence's draws from its own stream."""
    from scbow.errors import Interrupted
    from scbow.training import wordpart
    from scbow.training.checkpoint import checkpoint_dir, read_meta
    from scbow.training.session import train_session

    monkeypatch.setattr(wordpart, "WORD_BATCH", 5)  # 6 word batches a pass
    config = TrainConfig(dim=8, epochs=1, min_count=1, common_components=-1, device="cuda", seed=3, word_passes=2,
                         word_dim=4)

    def run(out, **kw):
        return train_session([tiny_corpus_file], config, out, quiet=True, checkpoint_every=10,
                             cache_dir=tmp_path / "cache", **kw)

    whole = np.asarray(run(tmp_path / "a").model.vectors)
    with pytest.raises(Interrupted):
        run(tmp_path / "b", hooks=[SignalInWordPart(5)])
    assert read_meta(checkpoint_dir(tmp_path / "b"))["state"]["phases"]["word"]["done"] == 25
    # the checkpoint holds the device's rows, 25 sentences on from the start
    start = wordpart.WordPart(load_corpus([tiny_corpus_file], min_count=1, cache_dir=tmp_path / "cache"), config, 1)
    saved = np.load(checkpoint_dir(tmp_path / "b") / "word_in.npy")
    assert saved.shape == start.Wi.shape and 1e-4 < np.abs(saved - start.Wi).max() < 1
    resumed = run(tmp_path / "b", resume=True)
    assert resumed.model.info["training"]["word_part"]["device"] == "cuda"
    assert np.array_equal(whole.view(np.uint32), np.asarray(load_model(tmp_path / "b").vectors).view(np.uint32))


def test_a_launch_runs_a_sixteenth_of_the_corpus_at_most():
    """launch_size, both parts: 30 sentences one at a time (the H200's loss rose with 4), gutenberg-1M in 16
    launches an epoch, 10M within the 32K-512K the H200 scored alike, 100M tokens (10M x 10) in whole batches."""
    full, words = scuda.LAUNCH_BATCH, scuda.WORD_BATCH
    assert scuda.launch_size(30, full) == scuda.launch_size(30, words) == 1
    assert scuda.launch_size(3, full) == 1
    assert scuda.launch_size(69_332, full) == 4_333 and scuda.launch_size(69_332, words) == 4_333
    assert 32_768 <= scuda.launch_size(690_000, full) < full
    assert scuda.launch_size(6_900_000, full) == full and scuda.launch_size(6_900_000, words) == words


@needs_cuda
def test_the_backends_launch_what_launch_size_allows(tmp_path, monkeypatch):
    """Both parts' launches hold at most launch_size(sentences) examples or sentences, and together all of them."""
    path = tmp_path / "small.txt"
    path.write_text(synthetic_text(n_docs=2, sents_per_doc=24, seed=5), encoding="utf-8")
    corpus = load_corpus([path], min_count=1, cache_dir=tmp_path / "cache")
    n = corpus.n_sentences
    allowed = scuda.launch_size(n, scuda.LAUNCH_BATCH)
    assert n == 48 and allowed == 3
    launches = spy_on_launches(monkeypatch)
    config = TrainConfig(dim=4, epochs=1, common_components=-1, device="cuda", word_passes=1, word_dim=4)
    train(corpus, config, quiet=True)
    assert all(examples <= allowed and grid <= examples for grid, examples in launches)
    sentence_part, word_part = launches[:n // allowed], launches[n // allowed:]
    assert sum(e for _, e in sentence_part) == n and sum(e for _, e in word_part) == n
    assert max(e for _, e in launches) == allowed
