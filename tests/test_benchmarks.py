"""The benchmark harness (``python -m benchmarks.run SUITE``): plumbing on tiny corpora, never timings.

The entry point must register every suite; the harness is no import circle and reaches training
only through ``scbow.training``'s public names; the kernel figures are ``train``'s own; the
targets table must judge as it says; the PyTorch peer is checked against ``scbow.reference``
(loss and gradient), its example builder against the kernel's rules; the speed suite runs
once on a synthetic corpus and a few STS pairs and must write a report with every section
and every target; the A/B suite runs both sides in fresh processes of the chosen checkouts.
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
    speed.main(["--quick", "--threads", "1", "--only", "preprocess,kernel,wordpart,inference", "--no-torch",
                "--out", str(out)])
    report = json.loads(out.with_name("speed.json").read_text())
    assert report["settings"]["sections"] == ["preprocess", "kernel", "wordpart", "inference"]
    assert report["wordpart"]["rows"][0]["sentences_per_second"] > 0 and report["wordpart"]["sample"] > 0
    assert report["inference"]["pairs"] == 5 and report["inference"]["sets"] == 2
    assert report["preprocess"]["raw_tokens"] == report["corpus"]["raw_tokens"] > 0
    assert report["kernel"]["rows"]["serial-1"]["examples_per_s"]["n"] == 1
    assert report["kernel"]["torch"]["available"] is False
    assert report["bandwidth"]["bytes_per_example"] > 0
    by_name = {t["target"]: t for t in report["targets"]}
    assert any("end to end" in name and t["met"] is None for name, t in by_name.items())  # not run
    assert any("reload" in name and t["met"] is True for name, t in by_name.items())
    markdown = out.with_name("speed.md").read_text()
    assert "## Targets" in markdown and "## The word part" in markdown and "sections not run: e2e, memory" in markdown


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


def test_run_entry_point_lists_every_suite(capsys):
    """Every module of benchmarks/ with a main() is a registered suite, listed with a line in --help."""
    import ast

    from benchmarks import run

    with pytest.raises(SystemExit) as exc:
        run.main(["--help"])
    assert exc.value.code == 0
    listing = capsys.readouterr().out
    bench_dir = Path(run.__file__).parent
    helpers = {"run", "common", "targets", "peers", "sent2vec", "torch_scbow", "speed_workers", "ab_worker", "__init__"}
    with_main = set()
    for path in bench_dir.glob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body):
            with_main.add(path.stem)
    suites = {s.module for s in run.SUITES.values()}
    assert with_main - helpers <= suites, f"suites not registered in run.py: {with_main - helpers - suites}"
    for name in ("speed", "ab", "quality", "embed_speed", "most_similar", "gpu", "cluster", "index"):
        assert name in run.SUITES
        assert any(line.split()[:1] == [name] for line in listing.splitlines()), name
    assert not (bench_dir / "throughput.py").exists()  # folded into the speed suite
    with pytest.raises(SystemExit) as exc:
        run.main(["nonsense"])
    assert "unknown suite" in str(exc.value.code)


@pytest.mark.parametrize("name", ["speed", "ab", "quality", "embed", "most_similar", "gpu", "cluster", "index"])
def test_each_suite_answers_help_through_the_entry_point(name, capsys):
    from benchmarks import run

    with pytest.raises(SystemExit) as exc:
        run.main([name, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"python -m benchmarks.run {run.ALIASES.get(name, name)}" in out  # prog names the entry point


def test_the_kernel_section_times_train_on_the_sentence_part(small_corpus_file, tmp_path):
    """The kernel figures are train()'s own: one epoch of the sentence part, its kernel seconds."""
    from scbow.config import TrainConfig
    from scbow.training import load_corpus, train

    config = TrainConfig(dim=16, min_count=1, epochs=3, word_passes=2)
    corpus = load_corpus([small_corpus_file], 1, cache_dir=tmp_path)
    got = speed.sentence_epoch(corpus, config, 1)
    want = train(corpus, config.replace(epochs=1, threads=1, word_passes=0, common_components=-1), quiet=True)
    assert got["examples"] == want.examples > 0 and got["seconds"] > 0
    assert got["mean_loss"] == pytest.approx(float(np.mean(want.losses)))  # the serial kernel is deterministic
    c = speed.compile_times(speed.tiny_corpus(tmp_path, config), config, [1, 2])
    assert c["serial_first_call_seconds"] >= 0 and c["parallel_threads"] == 2 and c["parallel_first_call_seconds"] >= 0


def test_targets_table_judges_and_the_speed_suite_reads_it():
    from benchmarks import targets

    k = targets.TARGETS["kernel_examples_per_s"]
    assert (k.value, k.unit) == (150_000, "examples/s")
    assert k.met(150_000) is True and k.met(149_999) is False and k.met(None) is None
    assert targets.TARGETS["e2e_over_gensim"].met(0.5) is True and targets.TARGETS["e2e_over_gensim"].met(0.51) is False
    assert targets.TARGETS["cached_reload_s"].met(1.0) is False  # strictly below
    assert speed.T_KERNEL_EPS == k.value and speed.T_PREPROCESS == targets.TARGETS["preprocess_tokens_per_s"].value
    for t in targets.TARGETS.values():
        assert t.source and t.measured_against and t.sense in ("at_least", "at_most", "below")
    assert targets.SUPERSEDED["kernel_examples_per_s"][0] == 120_000  # the old goal, replaced, judged by nothing


def test_common_memory_workers_and_checkout(tmp_path):
    from benchmarks import common

    mem = common.memory_mib()
    assert mem["VmHWM"] > 0 and common.peak_rss_mib() == pytest.approx(mem["VmHWM"], rel=0.5)
    if "VmRSS" in mem:
        assert mem["VmHWM"] >= mem["VmRSS"] > 0
    s = common.stats([1.0, 2.0, 4.0])
    assert s == {"median": 2.0, "min": 1.0, "max": 4.0, "n": 3, "spread": 1.5}
    with pytest.raises(common.WorkerError, match="failed with status"):
        common.run_worker("benchmarks_no_such_module", [], timeout=60)
    # a linked worktree: .git is a file naming its git dir, HEAD a branch found in packed-refs
    main_git = tmp_path / "repo" / ".git"
    (main_git / "worktrees" / "wt").mkdir(parents=True)
    (main_git / "packed-refs").write_text("# pack-refs\n" + "ab" * 20 + " refs/heads/topic\n")
    (main_git / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/topic\n")
    (main_git / "worktrees" / "wt" / "commondir").write_text("../..\n")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {main_git / 'worktrees' / 'wt'}\n")
    assert common.checkout_commit(wt) == "ab" * 20
    (main_git / "worktrees" / "wt" / "HEAD").write_text("cd" * 20 + "\n")  # detached
    assert common.checkout_commit(wt) == "cd" * 20
    assert common.checkout_commit(tmp_path / "nowhere") is None


def test_ab_summary_and_verdict():
    from benchmarks import ab

    runs = [{"side": side, "threads": 1, "examples_per_s": eps} for side, eps in
            [("before", 100.0), ("after", 110.0), ("before", 90.0), ("after", 100.0), ("before", 110.0), ("after", 90.0)]]
    row = ab.summarize(runs, [1])["1"]
    assert row["before"]["rounds"] == [100.0, 90.0, 110.0] and row["after"]["median"] == 100.0
    assert row["ratio_after_over_before"] == 1.0
    assert row["ratio_by_round"] == [1.1, 1.1111, 0.8182]
    assert row["spread_max"] == pytest.approx(0.2)
    assert ab.verdict(row).startswith("within run-to-run spread")
    runs_fast = [dict(r, examples_per_s=r["examples_per_s"] * (2 if r["side"] == "after" else 1)) for r in runs]
    assert ab.verdict(ab.summarize(runs_fast, [1])["1"]).startswith("faster")


def test_ab_suite_alternates_fresh_processes_of_each_checkout(tiny_data, tmp_path, monkeypatch):
    """Both sides run in fresh processes that import scbow from their own checkout (here both
    are this checkout, reached by two paths), warm first, then alternate."""
    from benchmarks import ab
    from benchmarks.common import REPO_ROOT

    monkeypatch.setenv("SCBOW_DATA", str(tiny_data))
    monkeypatch.setenv("SCBOW_BENCH_NO_GIT", "1")
    monkeypatch.setattr(ab, "WORK_DIR", tmp_path / "work")
    monkeypatch.setattr(ab, "WARM_LINES", 150)
    other = tmp_path / "other"
    other.symlink_to(REPO_ROOT, target_is_directory=True)
    out = tmp_path / "report" / "ab_speed"
    report = ab.main(["--base", str(other), "--lines", "200", "--rounds", "2", "--threads", "1", "--out", str(out)])
    assert [(r["round"], r["side"]) for r in report["runs"]] == [(1, "before"), (1, "after"), (2, "before"), (2, "after")]
    assert all(r["examples"] > 0 and r["examples_per_s"] > 0 for r in report["runs"])
    assert report["runs"][0]["examples"] == report["runs"][1]["examples"]  # the same work on both sides
    row = report["rows"]["1"]
    assert len(row["before"]["rounds"]) == 2 and row["ratio_after_over_before"] > 0
    assert report["settings"]["before"]["scbow_file"].startswith(str(REPO_ROOT.resolve()))
    markdown = out.with_name("ab_speed.md").read_text()
    assert "# A/B kernel speed" in markdown and "## Machine" in markdown and "after / before" in markdown
    assert json.loads(out.with_name("ab_speed.json").read_text())["rows"]["1"]["threads"] == 1
    assert not list((tmp_path / "work").glob("run-*"))  # scratch removed


def test_the_speed_harness_checks_the_torch_peer_against_the_oracle(small_corpus_file, tmp_path):
    """The peer's worker checks its loss and gradient on real examples before any timing,
    and the check fails for a peer that computes something else."""
    pytest.importorskip("torch")
    from benchmarks import torch_scbow
    from scbow.config import TrainConfig
    from scbow.training import load_corpus, untrained_start

    config = TrainConfig(dim=8, min_count=1)
    corpus = load_corpus([small_corpus_file], 1, cache_dir=tmp_path)
    members, n_pos = torch_scbow.prepare(corpus, config, 1, batch_size=8)[0]
    W = untrained_start(corpus, config)
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


# the harness's shape (issue 33): no import circle, training only through its public door


def benchmark_imports() -> dict[str, set[str]]:
    """module -> the modules (benchmarks.* and scbow.*) and names it imports, read from the source."""
    import ast

    bench = Path(ROOT) / "benchmarks"
    out = {}
    for path in bench.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = ("benchmarks" + ("." + node.module if node.module else "")) if node.level else node.module
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in node.names)
        out[f"benchmarks.{path.stem}"] = {m for m in found if m.split(".")[0] in ("benchmarks", "scbow")}
    return out


def test_the_harness_has_no_import_circle():
    graph = benchmark_imports()
    edges = {m: {t for t in targets if t in graph and t != m} for m, targets in graph.items()}

    def reaches(start, goal, seen=()):
        return any(t == goal or (t not in seen and reaches(t, goal, (*seen, t))) for t in edges[start])

    assert sorted(m for m in edges if reaches(m, m)) == []
    assert "benchmarks.harness" not in graph and "benchmarks.speed_report" not in graph  # merged, not moved


# ab_worker also measures older checkouts, which have no public door: it falls back to their modules
OLD_CHECKOUTS = {"scbow.training.corpus", "scbow.training.trainer", "scbow.corpus", "scbow.trainer"}


def test_the_harness_trains_through_the_public_door_only():
    import scbow.training

    bad = []
    for module, targets in benchmark_imports().items():
        for t in targets:
            name = t.rpartition(".")[2]
            if t.startswith("scbow.") and name.startswith("_") and not name.startswith("__"):
                bad.append((module, t))  # nobody's underscored names
            if t.startswith("scbow.training.") and t.count(".") == 2 and name in scbow.training.__all__:
                continue  # from scbow.training import NAME
            if t.startswith(("scbow.training.", "scbow.trainer", "scbow.corpus")) and not (
                    module == "benchmarks.ab_worker" and {t, t.rsplit(".", 1)[0]} & OLD_CHECKOUTS):
                bad.append((module, t))
    assert bad == []
    for name in scbow.training.__all__:
        assert getattr(scbow.training, name) is not None


def test_the_quality_report_renders_the_committed_record():
    from benchmarks import quality

    result = json.loads((Path(ROOT) / "benchmarks" / "results" / "quality.json").read_text(encoding="utf-8"))
    markdown = quality.markdown(result)
    assert markdown.startswith("# Quality") and "## Machine" in markdown and "Siamese CBOW" in markdown



def test_index_suite_measures_faiss_and_exact_search_on_small_vectors(tmp_path):
    pytest.importorskip("faiss")
    from benchmarks import ann_index

    rng = np.random.default_rng(0)
    for name, n in (("base", 600), ("queries", 20)):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        np.save(tmp_path / f"{name}.npy", x / np.linalg.norm(x, axis=1, keepdims=True))
    truth = ann_index._truth(tmp_path, block=256)
    exact = ann_index.worker({"lib": "exact", "kind": "exact", "params": {}, "efforts": [None], "exact_single": 5,
                              "work": str(tmp_path), "threads": 1})
    assert exact["sweep"][0]["recall"] == 1.0 and truth.shape == (20, ann_index.K)
    hnsw = ann_index.worker({"lib": "faiss-cpu", "kind": "hnsw", "params": {"M": 8, "ef_construction": 40},
                             "efforts": [16, 64], "work": str(tmp_path), "threads": 1})
    assert [s["effort"] for s in hnsw["sweep"]] == [16, 64] and hnsw["sweep"][-1]["recall"] > 0.5
    assert "open_ms" in hnsw["reopen"]["mmap"]


def test_the_doors_helpers_are_what_train_starts_from(small_corpus_file, tmp_path):
    """untrained_start is the matrix train() starts from; first_epoch its first order of targets."""
    from scbow.config import TrainConfig
    from scbow.training import Hook, first_epoch, load_corpus, train, untrained_start
    from scbow.training.start import trainable_targets
    from scbow.training.trainer import epoch_orders

    config = TrainConfig(dim=8, min_count=1, epochs=1, threads=1, word_passes=0)
    corpus = load_corpus([small_corpus_file], 1, cache_dir=tmp_path)
    seen = {}

    class Start(Hook):
        def before_training(self, state, vectors, corpus):
            seen["W"] = np.array(vectors())

    train(corpus, config, quiet=True, hooks=[Start()])
    np.testing.assert_array_equal(seen["W"], untrained_start(corpus, config))
    np.testing.assert_array_equal(first_epoch(corpus, config), next(epoch_orders(trainable_targets(corpus), config.seed)))
    processed = untrained_start(corpus, config, post_process=True)
    assert processed.shape == seen["W"].shape and not np.array_equal(processed, seen["W"])


def test_the_modern_peer_pairs_each_sentence_with_the_next_of_its_book(small_corpus_file):
    from benchmarks.static_peer import pairs_of
    from scbow.training import load_corpus

    corpus = load_corpus([small_corpus_file], min_count=1)
    pairs = pairs_of(corpus)
    assert len(pairs) == corpus.n_sentences - corpus.n_documents
    assert (pairs[:, 1] == pairs[:, 0] + 1).all()
    assert (corpus.sent_doc[pairs[:, 0]] == corpus.sent_doc[pairs[:, 1]]).all()


def test_the_modern_peer_trains_with_sentence_transformers(small_corpus_file, monkeypatch):
    pytest.importorskip("sentence_transformers", reason="sentence-transformers (with torch) is not installed")
    from benchmarks import static_peer
    from scbow.training import load_corpus

    corpus = load_corpus([small_corpus_file], min_count=1)
    monkeypatch.setattr(static_peer, "BATCH", 16)
    table, info = static_peer.train_one(corpus, 0.2, 1, say=lambda line: None)
    assert table.shape == (len(corpus.vocab), static_peer.DIM) and np.isfinite(table).all()
    assert info["steps"] == len(static_peer.pairs_of(corpus)) // 16 > 1 and np.isfinite(info["loss_last"])
