"""The word part (scbow.training.wordpart): its kernel against scbow.reference, the assembled rows,
the word-level API on the word columns, and checkpoints inside the word part."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import assert_clean_error
from test_checkpoint import SignalAfter, cfg

from scbow.cli import main
from scbow.errors import Interrupted
from scbow.kernels.cpu import word_part_chunk, word_part_gradient
from scbow.kernels.sampling import WORD_SEGMENT
from scbow.reference import sgns_loss_and_grad
from scbow.text.vocab import Vocab
from scbow.training import trainer, wordpart
from scbow.training.checkpoint import CheckpointWriter, checkpoint_dir, describe, read_meta
from scbow.training.hooks import Hook
from scbow.training.session import train_session
from scbow.vectors.formats import export_word2vec, load_model, load_word2vec
from scbow.vectors.model import Model, row_parts


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


def test_the_word_part_gradient_is_the_reference_one():
    tokens, offsets, Wi, Wo, keep, table = tiny_problem()
    loss, gWi, gWo, drawn = word_part_gradient(Wi, Wo, tokens, offsets, 1, keep, table, 3, 4, 7, 11)
    assert len(drawn) > 20
    pairs = [(w, int(row[0]), [int(o) for o in row[1:] if o >= 0]) for w, row in drawn]
    ref_loss, ref_gW, ref_gO = sgns_loss_and_grad(Wi, Wo, pairs)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    np.testing.assert_allclose(gWi, ref_gW, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(gWo, ref_gO, rtol=1e-4, atol=1e-6)
    # the reference's own gradient: test_reference.test_sgns_gradient_is_the_derivative_of_its_loss


@pytest.mark.parametrize("lr", [1e-4, 3e-4])
def test_one_sentence_of_the_kernel_is_one_sgd_step(lr):
    """A sentence trained by ``word_part_chunk`` at a small rate moves the rows by ``-lr`` times the
    reference gradient, to first order (the steps are sequential, so equal up to O(lr^2))."""
    tokens, offsets, Wi, Wo, keep, table = tiny_problem(seed=2)
    _, gWi, gWo, _ = word_part_gradient(Wi, Wo, tokens, offsets, 1, keep, table, 3, 4, 5, 9)
    Wi2, Wo2 = Wi.copy(), Wo.copy()
    buffers = (np.empty(WORD_SEGMENT, dtype=np.int32), np.empty(5, dtype=np.int32), np.empty(8, dtype=np.float32))
    # total far larger than done: the rate stays lr for the sentence
    word_part_chunk(Wi2, Wo2, tokens, offsets, 1, 2, keep, table, 3, 4, lr, 0.0, 0, 10**12, 5, 9, buffers)
    moved_i = (Wi2.astype(np.float64) - Wi) / -lr
    moved_o = (Wo2.astype(np.float64) - Wo) / -lr
    scale_i, scale_o = np.abs(gWi).max(), np.abs(gWo).max()
    assert np.abs(moved_i - gWi).max() < 0.02 * scale_i
    assert np.abs(moved_o - gWo).max() < 0.02 * scale_o


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
    assert m.most_similar("a", topn=1)[0][0] == "c"
    assert m.similar_by_vector(m["a"], topn=2)[1][0] == "c"  # a whole row is cut to its word columns
    assert m.similar_by_vector(G[0], topn=2)[1][0] == "c"
    assert m.n_similarity(["a"], ["c"]) > 0.99
    with pytest.raises(ValueError, match="shape"):
        m.similar_by_vector(np.ones(3))
    # a sentence is the whole row's average
    np.testing.assert_allclose(m.embed(["a b"])[0], (m["a"] + m["b"]) / 2)
    plain = Model(Vocab(words, [500] * 4), S, {"dim": 2})
    assert plain.most_similar("a", topn=1)[0][0] == "b"


@pytest.fixture
def word_batches(monkeypatch, small_batches):
    monkeypatch.setattr(wordpart, "WORD_BATCH", 300)  # several word batches per pass of 2,400 sentences


class SignalInWordPart(SignalAfter):
    def after_batch(self, state, vectors):
        pass

    def after_word_batch(self, state, vectors):
        SignalAfter.after_batch(self, state, vectors)


WORD_PART = cfg(word_passes=2, word_dim=12, word_mix=0.5)


def spy_on_checkpoints(monkeypatch):
    """The (examples, sentences) of the checkpoints written from now on, in order."""
    written, write = [], CheckpointWriter.write

    def spy(self, state, *args, **kwargs):
        written.append((state.done, state.word_done))
        return write(self, state, *args, **kwargs)

    monkeypatch.setattr(CheckpointWriter, "write", spy)
    return written


@pytest.fixture(scope="module")
def word_run(corpus_file, tmp_path_factory):
    """``WORD_PART`` trained once (batches of 256 and of 300 sentences) with a checkpoint every 1,000 examples:
    the result, the model, the (examples, sentences) of its checkpoints, what a hook saw, the warnings."""
    base, seen, warnings = tmp_path_factory.mktemp("word-part"), [], []

    class Watch(Hook):
        def after_batch(self, state, vectors):
            seen.append(("sentence", state.word_done))

        def after_word_batch(self, state, vectors):
            Wi, Wo = vectors.word()
            seen.append(("word", state.word_done, Wi.shape, Wo.shape))

        def after_training(self, state, vectors):
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


def test_resume_inside_the_word_part(tmp_path, corpus_file, word_batches, monkeypatch, runner, word_run):
    """Hooks see the word part after the sentence part. A resume inside it is bit-identical, from the saved
    matrices. --checkpoint-every N counts the sentence part's examples, then the word part's sentences: a
    resumed run writes its checkpoints where an uninterrupted one does (issue 34 item 11: only the sentence
    part's resume was pinned); a finished run whose last checkpoint was in the word part removes word_in.npy
    and word_out.npy with the rest, so nothing blocks the next run into its output (word_run)."""
    kinds = [s[0] for s in word_run.seen]
    assert kinds[-1] == "end" and kinds.index("word") > max(i for i, k in enumerate(kinds) if k == "sentence")
    assert word_run.seen[-2][2][1] == 12 and word_run.seen[-2][3][1] == 13
    reference, whole = word_run.written, np.asarray(word_run.model.vectors)
    assert sum(w > 0 for _, w in reference) >= 3 and word_run.warnings == []  # checkpoints inside the word part
    written, out = spy_on_checkpoints(monkeypatch), tmp_path / "b"

    def run(out, **kw):
        return train_session([corpus_file], WORD_PART, out, quiet=True, checkpoint_every=1000, **kw)

    with pytest.raises(Interrupted) as info:
        run(out, hooks=[SignalInWordPart(5)])
    assert "of the word part" in info.value.message
    assert describe(read_meta(checkpoint_dir(out))) == f"1,500 of {2 * 2400:,} sentences of the word part"
    meta = json.loads((checkpoint_dir(out) / "state.json").read_text())
    assert meta["state"]["word_done"] == 5 * 300 and meta["state"]["epoch"] == 2
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
    # the resumed word part started from the saved matrices: zeroed ones land elsewhere
    saved = checkpoint_dir(tmp_path / "zeroed") / "word_in.npy"
    np.save(saved, np.zeros_like(np.load(saved)))
    run(tmp_path / "zeroed", resume=True)
    assert not np.array_equal(whole, np.asarray(load_model(tmp_path / "zeroed").vectors))
    # and a checkpoint in the word part without its matrices is refused
    (checkpoint_dir(tmp_path / "missing") / "word_out.npy").unlink()
    args = ["train", str(corpus_file), "-o", str(tmp_path / "missing"), "--dim", "16", "--epochs", "2", "--min-count",
            "1", "--threads", "1", "--seed", "3", "--word-passes", "2", "--word-dim", "12", "--word-mix", "0.5", "--resume"]
    assert_clean_error(runner.invoke(main, args), "word_out.npy")
