"""The skip-gram term (``TrainConfig.word_window``): the CPU kernel against the float64 oracle
``scbow.reference.sgns_loss_and_grad``, its sampling, and the term inside training."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_grad_close, seed_of

from scbow.config import TrainConfig
from scbow.kernels import cpu, sampling
from scbow.reference import sgns_loss_and_grad, sgns_sentence_pairs
from scbow.training.backends.params import params_record
from scbow.training.corpus import load_corpus
from scbow.training.start import NOISE_POWER, keep_probabilities, noise_table, output_biases
from scbow.training.trainer import train

V, D = 12, 8


def matrices(seed, scale=0.5, dim=D):
    rng = np.random.default_rng(seed)
    W = (scale * rng.standard_normal((V, dim))).astype(np.float32)
    Wo = (scale * rng.standard_normal((V, dim + 1))).astype(np.float32)  # rows, then biases
    a = rng.uniform(0.2, 1.0, V).astype(np.float32)
    return W, Wo, a


CENTRE_CASES = {
    # (centre, [(context, noise...)]): noise -1 is skipped (a draw equal to the context)
    "one context": (3, [(5, 1, 2)]),
    "several contexts": (0, [(1, 7, 8), (2, 9, -1), (4, 4, 11)]),
    "repeats": (6, [(6, 6, 6), (5, 5, 2), (5, 2, 2)]),   # the centre as its own context, a noise word twice
}


@pytest.mark.parametrize("case", sorted(CENTRE_CASES))
@pytest.mark.parametrize("weighted", [False, True])
def test_centre_gradient_matches_reference(case, weighted):
    W, Wo, a = matrices(seed_of("sgns", case, weighted))
    if not weighted:
        a[:] = 1.0
    centre, rows = CENTRE_CASES[case]
    gW = np.zeros((V, D))
    gWo = np.zeros((V, D + 1))
    loss = cpu.sgns_centre_gradient(W, Wo, a, centre, np.array(rows), gW, gWo)
    pairs = [(centre, r[0], [n for n in r[1:] if n >= 0]) for r in rows]
    ref_loss, ref_W, ref_O = sgns_loss_and_grad(W, Wo, pairs, a)
    assert loss == pytest.approx(ref_loss, rel=1e-4)
    assert_grad_close(gW, ref_W)
    assert_grad_close(gWo, ref_O)
    # only the centre's row of W and the rows of the context and noise words of Wo
    assert not np.delete(gW, centre, axis=0).any()
    touched = {int(x) for r in rows for x in r if x >= 0}
    assert not gWo[[w for w in range(V) if w not in touched]].any()


def turn_only(W, G):
    """Each row of ``G`` less its part along the same row of ``W``: the steps the term takes."""
    W = W.astype(np.float64)
    along = (W * G).sum(1) / np.maximum((W * W).sum(1), 1e-300)
    return G - along[:, None] * W


def cpu_sentence_step(W, Wo, a, tokens, window, n_neg, lr, weight, table, hot=0):
    """``cpu.sgns_sentence`` over ``tokens``, in place, with the random stream the CUDA tests' device run
    uses, no subsampling and the noise ``table``; returns its loss."""
    dim = W.shape[1]
    params = params_record(word_window=window, word_negatives=n_neg, word_weight=weight)
    word = (Wo, a, np.ones(len(W), np.float32), np.asarray(table, np.int32))
    buffers = (np.empty(sampling.WORD_SEGMENT, np.int32), np.empty(1 + n_neg, np.int32),
               np.empty(dim, np.float32), np.empty(dim, np.float32))
    pending = np.zeros((max(hot, 1), dim), np.float32)
    keep = np.ones(max(hot, 1), np.float32)
    state = np.empty(1, np.uint64)
    sampling.seed_state(1, 0, state)
    loss = cpu.sgns_sentence(W, np.asarray(tokens, np.int32), 0, len(tokens), lr, params, word, buffers,
                             (hot, pending, keep), state)
    assert not pending.any()  # the term writes every row in place, the hot ones too
    return loss


def sentence_step(sentence, window, n_neg, lr, weight, noise_word, hot=0):
    """One SGD step of ``sgns_sentence`` with a one-word noise table: ``(W0, Wo0, a, W, Wo, loss)``."""
    W0, Wo0, a = matrices(0, scale=0.3)
    W, Wo = W0.copy(), Wo0.copy()
    loss = cpu_sentence_step(W, Wo, a, sentence, window, n_neg, lr, weight, [noise_word], hot)
    return W0, Wo0, a, W, Wo, loss


SENTENCE, NOISE, LR, WEIGHT = [3, 1, 4, 1, 5, 9, 2, 6], 7, 1e-4, 0.5  # rows 0, 8, 10 and 11 in neither


def check_word_step(W0, Wo0, a, W, Wo, loss, exact=True):
    """A step over SENTENCE, 2 negatives all NOISE, at LR and WEIGHT (the CUDA tests use it too): W moves
    by ``-lr * weight * a**2 * dL/dW`` (SGD on W / a) less its part along the row, and keeps its rows'
    lengths; Wo moves by ``-lr * weight * dL/dO``. ``exact=False`` (a window wider than 1, drawn at
    random): only the lengths and the rows left alone are checked."""
    if exact:
        pairs = [(c, x, [NOISE, NOISE] if x != NOISE else []) for c, x in sgns_sentence_pairs(SENTENCE, 1)]
        ref_loss, gW, gWo = sgns_loss_and_grad(W0, Wo0, pairs, a)
        assert loss == pytest.approx(ref_loss, rel=1e-3)
        # second order only: the kernels step Wo at once and W once per centre
        expected_W = W0 - LR * WEIGHT * (a.astype(np.float64) ** 2)[:, None] * turn_only(W0, gW)
        assert np.abs(W - expected_W).max() <= 1e-2 * np.abs(W - W0).max()
        assert np.abs(Wo - (Wo0 - LR * WEIGHT * gWo)).max() <= 1e-2 * np.abs(Wo - Wo0).max()
    assert np.abs(W - W0).max() > 0 and np.abs(Wo - Wo0).max() > 0
    # the term turns rows, never stretches them
    assert np.linalg.norm(W, axis=1) == pytest.approx(np.linalg.norm(W0, axis=1), rel=1e-5)
    assert np.array_equal(W[[0, 8, 10, 11]], W0[[0, 8, 10, 11]])
    assert np.array_equal(Wo[[0, 8, 10, 11]], Wo0[[0, 8, 10, 11]])


@pytest.mark.parametrize("hot", [0, 4])
@pytest.mark.parametrize("window", [1, 2])
def test_sentence_step_is_one_sgd_step_of_the_reference(hot, window):
    check_word_step(*sentence_step(SENTENCE, window, 2, LR, WEIGHT, NOISE, hot=hot), exact=window == 1)


@pytest.mark.parametrize("window", [1, 3])
def test_a_large_step_turns_rows_and_puts_them_back_to_their_length(window):
    """The row-length restoring step of ``sgns_sentence`` on the CPU (issue 34 item 11: only the
    CUDA-against-CPU comparison caught its loss). A step orthogonal to a row stretches it to
    second order, which the small steps above cannot see; at this step the rows would grow tenfold
    (on gutenberg-1M without it, the frequent words' mean row length went 0.109 -> 0.356). The rows
    must turn, and keep their lengths."""
    sentence = [3, 1, 4, 1, 5, 9, 2, 6, 3, 5]
    W0, _, a, W, _, _ = sentence_step(sentence, window, 3, 20.0, 1.0, 7)
    moved = sorted(set(sentence))
    cos = (W[moved] * W0[moved]).sum(1) / np.linalg.norm(W[moved], axis=1) / np.linalg.norm(W0[moved], axis=1)
    assert cos.min() < 0.95  # the rows turned by a large angle
    assert np.linalg.norm(W, axis=1) == pytest.approx(np.linalg.norm(W0, axis=1), rel=1e-5)


def test_windows_reach_only_as_far_as_drawn():
    sentence = list(range(10))
    for window in (1, 3):
        W0, Wo0, a, W, Wo, _ = sentence_step(sentence, window, 1, 1e-3, 1.0, 11)
        # every word of the sentence is a context of a neighbour
        assert (np.abs(Wo[:10] - Wo0[:10]).max(axis=1) > 0).all()
    state = np.empty(1, np.uint64)
    sampling.seed_state(3, 0, state)
    drawn = {sampling.centre_window(5, state) for _ in range(500)}
    assert drawn == {1, 2, 3, 4, 5}
    assert sampling.centre_window(1, state) == 1


def test_subsampling_keeps_words_with_their_probability():
    keep = np.array([1.0, 0.0, 0.5], np.float32)
    tokens = np.array([0, 1, 2] * 2000, np.int32)
    state = np.empty(1, np.uint64)
    sampling.seed_state(1, 2, state)
    kept = np.empty(sampling.WORD_SEGMENT, np.int32)
    counts = np.zeros(3)
    t = 0
    while t < len(tokens):
        n, t = sampling.keep_words(tokens, t, len(tokens), keep, state, kept)
        assert n <= sampling.WORD_SEGMENT
        counts += np.bincount(kept[:n], minlength=3)
    assert counts[0] == 2000 and counts[1] == 0
    assert 850 < counts[2] < 1150


def test_noise_table_and_keep_probabilities_follow_word2vec():
    counts = np.array([1000, 100, 10, 1])
    table = noise_table(counts, size=100_000)
    share = np.bincount(table, minlength=4) / len(table)
    assert share == pytest.approx(counts ** 0.75 / (counts ** 0.75).sum(), abs=1e-4)
    p = keep_probabilities(counts, 1111, 1e-2)
    t = 1e-2 * 1111
    assert p == pytest.approx(np.minimum((np.sqrt(counts / t) + 1) * t / counts, 1), rel=1e-6)
    assert (keep_probabilities(counts, 1111, 0.0) == 1).all()
    row = np.empty(4, np.int32)
    state = np.empty(1, np.uint64)
    sampling.seed_state(1, 0, state)
    sampling.draw_noise(2, 3, np.array([2, 2], np.int32), state, row)
    assert list(row) == [2, -1, -1, -1]  # noise equal to the context is skipped


def test_output_biases_start_at_their_optimum_for_zero_rows():
    """sigmoid(b) / (sigmoid(b) + k sigmoid(-b)) ... at b = log(p_context / (k p_noise)) the expected
    gradient of a bias with zero rows, p_context (1 - sigmoid(b)) - k p_noise sigmoid(b), is 0."""
    counts = np.array([5000.0, 700.0, 40.0, 6.0])
    keep = np.array([0.3, 0.8, 1.0, 1.0])
    k = 5
    b = output_biases(counts, keep, k).astype(np.float64)
    p_ctx = counts * keep / (counts * keep).sum()
    p_noise = counts ** NOISE_POWER / (counts ** NOISE_POWER).sum()
    sig = 1 / (1 + np.exp(-b))
    assert p_ctx * (1 - sig) - k * p_noise * sig == pytest.approx(np.zeros(4), abs=1e-7)


def test_training_with_the_term_moves_words_that_share_contexts_together(tmp_path):
    """Two words that never share a sentence but always have the same neighbours end up closer
    with the term than without it (the term's signal reaches the saved vectors)."""
    rng = np.random.default_rng(0)
    lines = []
    for doc in range(40):
        for s in range(12):
            twin = "alpha" if rng.random() < 0.5 else "omega"
            words = [f"w{i}" for i in rng.integers(0, 60, 3)]
            lines.append(" ".join(["the", "red", twin, "sat", "down"] + words))
        lines.append("")
    (tmp_path / "c.txt").write_text("\n".join(lines) + "\n")
    corpus = load_corpus([tmp_path / "c.txt"], 1, 0, use_cache=False)

    def cosine(config):
        W = train(corpus, config, quiet=True).model.vectors
        x, y = W[corpus.vocab.index["alpha"]], W[corpus.vocab.index["omega"]]
        return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))

    base = TrainConfig(dim=16, threads=1, common_components=-1, min_count=1, epochs=3, frequency_weight=0.0)
    assert cosine(base.replace(word_window=2, word_weight=1.0, word_sample=0.0)) > cosine(base) + 0.2
