"""The speed harness (``python -m benchmarks.run speed``): plumbing on a tiny corpus, never timings.

The PyTorch peer is checked against ``scbow.reference`` (loss and gradient), its example
builder against the kernel's rules; the whole harness runs once on a synthetic corpus and
a few STS pairs and must write a report with every section and every target.
"""

from __future__ import annotations

import json
import lzma
import sys
from pathlib import Path

import numpy as np
import pytest

from scbow.reference import loss_and_grad

# benchmarks/ is not installed: it is found in the checkout (appended, so that an installed
# scbow keeps precedence over the checkout's for the rest of the suite)
ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.append(ROOT)

from benchmarks import speed  # noqa: E402
from benchmarks.torch_scbow import build_members, pack_batch, tokens_per_example  # noqa: E402

SENTENCES = [[1, 2, 3], [4, 5], [2, 6, 7, 7], [8], [9, 10, 1], [11, 12], [3, 3, 4]]


def packed():
    tokens = np.array([w for s in SENTENCES for w in s], dtype=np.int32)
    offsets = np.zeros(len(SENTENCES) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in SENTENCES])
    return tokens, offsets


@pytest.mark.parametrize("members, n_pos", [([1, 0, 2, 4, 5], 2), ([0, -1, 1, 3, 6], 1), ([2, 1, 3, 2, 6], 2)])
@pytest.mark.parametrize("weight_decay", [0.0, 10.0])
def test_torch_loss_and_grad_equal_the_reference(members, n_pos, weight_decay):
    pytest.importorskip("torch")
    from benchmarks.torch_scbow import TorchSiameseCBOW

    rng = np.random.default_rng(3)
    W = rng.standard_normal((14, 6)).astype(np.float32)
    tokens, offsets = packed()
    model = TorchSiameseCBOW(W, lr=0.1, weight_decay=weight_decay)
    batch = model.tensors(np.array([members]), np.array([n_pos]), tokens, offsets)
    loss = model.loss(batch)
    loss.backward()
    grad = model.W.grad.to_dense().numpy()
    ids = [m for m in members if m >= 0]
    ref_loss, ref_grad = loss_and_grad(W.astype(np.float64), SENTENCES[ids[0]],
                                       [SENTENCES[i] for i in ids[1:1 + n_pos]],
                                       [SENTENCES[i] for i in ids[1 + n_pos:]], weight_decay=weight_decay)
    assert float(loss.detach()) == pytest.approx(ref_loss, rel=1e-5)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-4, atol=1e-5)


def test_torch_batch_mean_and_sgd_step():
    pytest.importorskip("torch")
    from benchmarks.torch_scbow import TorchSiameseCBOW

    W = np.random.default_rng(4).standard_normal((14, 6)).astype(np.float32)
    tokens, offsets = packed()
    members = np.array([[1, 0, 2, 4, 5], [0, -1, 1, 3, 6]])
    n_pos = np.array([2, 1])
    model = TorchSiameseCBOW(W, lr=0.1)
    loss = float(model.loss(model.tensors(members, n_pos, tokens, offsets)).detach())
    one = [float(model.loss(model.tensors(members[i:i + 1], n_pos[i:i + 1], tokens, offsets)).detach())
           for i in range(2)]
    assert loss == pytest.approx(np.mean(one), rel=1e-6)
    model.step(model.tensors(members, n_pos, tokens, offsets))
    changed = np.flatnonzero(np.abs(model.W.detach().numpy() - W).sum(axis=1))
    assert set(changed) <= set(tokens.tolist())  # only rows of words in the batch move
    assert len(changed) > 0


def test_build_members_follows_the_kernel_rules():
    # 3 documents: 5 sentences, 1 sentence (no example), 3 sentences (too small for 2 negatives)
    sent_doc = np.array([0, 0, 0, 0, 0, 1, 2, 2, 2], dtype=np.int32)
    doc_offsets = np.array([0, 5, 6, 9], dtype=np.int64)
    targets = np.array([0, 1, 2, 3, 4, 6, 7, 8] * 50, dtype=np.int64)
    members, n_pos = build_members(targets, sent_doc, doc_offsets, 2, "document", np.random.default_rng(0))
    assert members.shape == (len(targets), 5)
    for (t, prev, nxt, *negs), k in zip(members, n_pos):
        assert prev == (t - 1 if t > 0 and sent_doc[t - 1] == sent_doc[t] else -1)
        assert nxt == (t + 1 if t + 1 < len(sent_doc) and sent_doc[t + 1] == sent_doc[t] else -1)
        assert k == int(prev >= 0) + int(nxt >= 0)
        for n in negs:
            assert n not in (t, prev, nxt)
            if sent_doc[t] == 0:  # a document large enough: negatives from it
                assert sent_doc[n] == 0
    with pytest.raises(ValueError):
        build_members(np.array([5]), sent_doc, doc_offsets, 2, "document", np.random.default_rng(0))


def test_pack_batch_and_tokens_per_example():
    tokens, offsets = packed()
    members = np.array([[0, -1, 1, 3, 6]])
    flat, bag_offsets, lengths = pack_batch(members, tokens, offsets)
    assert lengths.tolist() == [3, 0, 2, 1, 3]
    assert bag_offsets.tolist() == [0, 3, 3, 5, 6]
    assert flat.tolist() == [1, 2, 3, 4, 5, 8, 3, 3, 4]
    assert tokens_per_example(members, offsets) == 9.0
    assert pack_batch(members, tokens, offsets, max_length=2)[2].tolist() == [2, 0, 2, 1, 2]


@pytest.fixture
def tiny_data(tmp_path, make_text):
    """A data folder like ../shared/data: a small corpus under the 1M name, two STS sets."""
    data = tmp_path / "data"
    (data / "corpus").mkdir(parents=True)
    with lzma.open(data / "corpus" / "gutenberg-1M.txt.xz", "wt", encoding="utf-8") as fh:
        fh.write(make_text(n_docs=6, sents_per_doc=40, seed=1))
    (data / "sts").mkdir()
    (data / "sts" / "a.tsv").write_text("4.0\tthe cat sat\ta cat sat\n1.0\tthe dog ran\tthe sun\n"
                                        "2.5\tred fish\tqueen\n", encoding="utf-8")
    (data / "sts" / "b.tsv").write_text("3.0\tthe king sang\tthe queen sang\n0.5\txyzzy\tthe moon\n",
                                        encoding="utf-8")
    return data


def test_speed_harness_in_process_sections(tiny_data, tmp_path, monkeypatch):
    """The sections that run in this process (no worker processes), one thread, and the report."""
    monkeypatch.setenv("SCBOW_DATA", str(tiny_data))
    monkeypatch.setattr(speed, "WORK_DIR", tmp_path / "work")
    out = tmp_path / "report" / "speed"
    speed.main(["--quick", "--threads", "1", "--only", "preprocess,kernel,inference", "--no-torch",
                "--out", str(out)])
    report = json.loads(out.with_name("speed.json").read_text())
    assert report["settings"]["sections"] == ["preprocess", "kernel", "inference"]
    assert report["inference"]["pairs"] == 5 and report["inference"]["sets"] == 2
    assert report["preprocess"]["raw_tokens"] == report["corpus"]["raw_tokens"] > 0
    assert report["kernel"]["rows"]["serial-1"]["examples_per_s"]["n"] == 1
    assert report["kernel"]["torch"]["available"] is False
    assert report["bandwidth"]["bytes_per_example"] > 0
    by_name = {t["target"]: t for t in report["targets"]}
    assert any("end to end" in name and t["met"] is None for name, t in by_name.items())  # not run
    assert any("reload" in name and t["met"] is True for name, t in by_name.items())
    markdown = out.with_name("speed.md").read_text()
    assert "## Targets" in markdown and "sections not run: e2e, memory" in markdown


@pytest.mark.slow
def test_speed_harness_runs_every_section_on_a_tiny_corpus(tiny_data, tmp_path, monkeypatch):
    """The whole harness with its worker processes, one thread (no parallel compile), every target."""
    monkeypatch.setenv("SCBOW_DATA", str(tiny_data))
    monkeypatch.setattr(speed, "WORK_DIR", tmp_path / "work")
    out = tmp_path / "report" / "speed"
    speed.main(["--quick", "--threads", "1", "--e2e-threads", "1", "--torch-batches", "2", "--out", str(out)])
    report = json.loads(out.with_name("speed.json").read_text())
    markdown = out.with_name("speed.md").read_text()
    assert report["settings"]["sections"] == list(speed.SECTIONS)
    assert report["inference"]["pairs"] == 5 and report["inference"]["sets"] == 2
    assert report["preprocess"]["raw_tokens"] > 0
    assert report["kernel"]["rows"]["serial-1"]["examples_per_s"]["n"] == 1
    assert report["memory"]["rows"]["1M"]["token_bytes"] > 0
    from scbow.config import TrainConfig

    assert f"scbow-{TrainConfig().dim}" in report["e2e"]["rows"]
    names = " ".join(t["target"] for t in report["targets"])
    for word in ("end to end", "kernel", "preprocessing", "reload", "STS", "memory"):
        assert word in names
    for t in report["targets"]:
        assert t["met"] in (True, False, None)
    try:
        import torch  # noqa: F401
    except ImportError:
        assert report["kernel"]["torch"]["available"] is False
    else:
        assert report["kernel"]["torch"]["rows"]["1"]["examples_per_s"]["n"] == 1
    assert "## Targets" in markdown and "## Machine" in markdown
    assert not list((tmp_path / "work").glob("run-*"))  # the run's scratch is removed


def test_run_entry_point_lists_suites(capsys):
    from benchmarks import run

    with pytest.raises(SystemExit) as exc:
        run.main(["--help"])
    assert exc.value.code == 0
    assert "speed" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        run.main(["nonsense"])


def test_the_speed_harness_checks_the_torch_peer_against_the_oracle(small_corpus_file, tmp_path):
    """The peer's worker checks its loss and gradient on real examples before any timing,
    and the check fails for a peer that computes something else."""
    pytest.importorskip("torch")
    from benchmarks import torch_scbow
    from scbow.config import TrainConfig
    from scbow.corpus import load_corpus
    from scbow.trainer import init_vectors

    config = TrainConfig(dim=8, min_count=1)
    corpus = load_corpus([small_corpus_file], 1, cache_dir=tmp_path)
    members, n_pos = torch_scbow.prepare(corpus, config, 1, batch_size=8)[0]
    W = init_vectors(len(corpus.vocab), config)
    good = torch_scbow.oracle_check(W, corpus, members, n_pos, config)
    assert good["passed"] and good["examples"] == 3, good
    original = torch_scbow.TorchSiameseCBOW.__init__

    def with_decay(self, W, lr, weight_decay=0.0, sparse=True):  # a peer that adds a term the oracle lacks
        original(self, W, lr, weight_decay=5.0, sparse=sparse)

    torch_scbow.TorchSiameseCBOW.__init__ = with_decay
    try:
        bad = torch_scbow.oracle_check(W, corpus, members, n_pos, config)
    finally:
        torch_scbow.TorchSiameseCBOW.__init__ = original
    assert not bad["passed"], bad
