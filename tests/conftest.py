"""Shared fixtures of the scbow-numba test suite. Real data is read from ``../shared/data`` beside the
repository (never copied into it); every test's cache and default model location are temporary."""

from __future__ import annotations

import itertools
import lzma
import os
import random
import signal
import sys
import traceback
import zlib
from pathlib import Path

import numpy as np
import pytest

from scbow.use.data import checkout_data_dir


def cuda_gpu_present() -> bool:
    """Whether a CUDA driver reports a device; asked through ctypes, so numba stays unloaded."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            lib, count = ctypes.CDLL(name), ctypes.c_int(0)
        except OSError:
            continue
        return lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
    return False


# Without a GPU, the CUDA tests (test_cuda.py) run in Numba's CUDA simulator. Numba reads
# the variable when it is first imported, which is after this file; it changes nothing for
# the CPU kernels. A value set by the caller wins (1 forces the simulator on a GPU machine).
if "NUMBA_ENABLE_CUDASIM" not in os.environ and not cuda_gpu_present():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


def _patch_simulator_race() -> None:
    """Make the simulator's module swap safe with several threads per block: it listed a module's dict with a
    generator another thread may change ("dictionary changed size"); ``list(dict.items())`` is one C call."""
    import threading
    from contextlib import contextmanager

    from numba import cuda
    from numba.core import types
    from numba.cuda.simulator import kernel, kernelapi
    from numba.np import numpy_support

    @contextmanager
    def swapped_cuda_module(fn, fake_cuda_module):
        fn_globs = fn.__globals__
        orig = {k: v for k, v in list(fn_globs.items()) if v is cuda}
        fn_globs.update(dict.fromkeys(orig, fake_cuda_module))
        try:
            yield
        finally:
            fn_globs.update(orig)

    kernel.swapped_cuda_module = swapped_cuda_module

    # shared arrays are made on first use, keyed by the asking line: two threads of a block could each
    # make one and write different arrays (a replay test off by 0.05, rarely); a lock gives one array
    original = kernelapi.FakeCUDAShared.array
    lock = threading.Lock()

    def array(self, shape, dtype):
        if shape == 0:  # dynamic shared memory: one buffer, nothing to race on
            return original(self, shape, dtype)
        caller = tuple(traceback.extract_stack(sys._getframe())[-2][0:2])
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                np_dtype = numpy_support.as_dtype(dtype) if isinstance(dtype, types.Type) else dtype
                res = self._allocations[caller] = np.empty(shape, np_dtype)
        return res

    kernelapi.FakeCUDAShared.array = array


if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    _patch_simulator_race()

# benchmarks/ is not installed: found in the checkout (appended: an installed scbow keeps precedence)
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parents[1]))

# the library's rule for the data folder beside the checkout (scbow.use.data), not a copy of it
DATA_DIR = checkout_data_dir() or Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """``-q`` still names each test file as its first test starts (as pytest's default output does): a slow
    test or fixture is then a wait on a named file, not a silent run. ``-qq`` stays bare."""
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if reporter is not None and config.get_verbosity() == -1:
        reporter.showfspath = True


def make_runner():
    """A click CliRunner that keeps stderr apart from stdout on every click version."""
    from click.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)  # click 8.1: keep stderr apart
    except TypeError:
        return CliRunner()  # click >= 8.2: stdout and stderr are always apart


def assert_clean_error(result, *fragments, exit_code=None):
    """A handled failure: exactly one 'Error: ...' line holding ``fragments``, no traceback;
    ``exit_code`` the status expected (None: any non-zero one)."""
    if exit_code is None:
        assert result.exit_code != 0, result.output
    else:
        assert result.exit_code == exit_code, result.output
    # CliRunner swallows tracebacks: an unhandled exception shows up here instead
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    # the last-resort handler's line for an unforeseen exception is not a failure's own message
    assert "a bug in scbow-numba" not in errors[0], errors[0]
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


def assert_failed(result, *fragments):
    """``assert_clean_error`` of a failure (exit status 1), not a usage error (2)."""
    return assert_clean_error(result, *fragments, exit_code=1)


TRAIN = ["--dim", "16", "--epochs", "1", "--min-count", "1", "--threads", "1", "--word-passes", "0", "-q"]


def train_args(corpus, out, *extra) -> list[str]:
    """``train CORPUS -o OUT`` with small, quick settings; ``extra`` comes last and wins."""
    return ["train", str(corpus), "-o", str(out), *TRAIN, *extra]


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


CORPUS_1M = DATA_DIR / "corpus" / "gutenberg-1M.txt.xz"


@pytest.fixture(scope="session", autouse=True)
def _sigint_as_a_terminal_gives_it():
    """SIGINT as a terminal's shell gives it, also in a suite started with it ignored (nohup, CI), which train
    leaves ignored by design: the tests that interrupt their own runs would interrupt nothing. Put back after."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a child process starts with the default too
    yield
    if before is not None:  # None: a handler not set from Python, which cannot be put back from here
        signal.signal(signal.SIGINT, before)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Point every default location (cache, model, XDG dirs) into a temporary directory."""
    base = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("SCBOW_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("SCBOW_MODEL", str(base / "default-model"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "xdg-cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "xdg-data"))
    monkeypatch.delenv("SCBOW_STS_DIR", raising=False)
    monkeypatch.delenv("SCBOW_STS_DEV", raising=False)
    yield


def missing_data(what: str) -> None:
    """Shared data a test needs is absent: skip on a user's machine; fail in CI (``CI`` set)."""
    message = f"{what} not available (the project's data folder ../shared/data beside the checkout)"
    if os.environ.get("CI"):
        pytest.fail(message + "; CI must have it")
    pytest.skip(message)


def _corpus_slice(tmp_path_factory, n_lines: int) -> Path:
    if not CORPUS_1M.is_file():
        missing_data(f"real corpus {CORPUS_1M}")
    out = tmp_path_factory.mktemp("gutenberg") / f"gutenberg-{n_lines}.txt"
    with lzma.open(CORPUS_1M, "rt", encoding="utf-8") as fh:
        lines = list(itertools.islice(fh, n_lines))
    out.write_text("".join(lines), encoding="utf-8")
    return out


_slices: dict = {}


@pytest.fixture(scope="session")
def gutenberg_slice(tmp_path_factory):
    """``gutenberg_slice(n)``: path of a text file with the first n lines of the 1M corpus."""

    def get(n_lines: int) -> Path:
        if n_lines not in _slices:
            _slices[n_lines] = _corpus_slice(tmp_path_factory, n_lines)
        return _slices[n_lines]

    return get


WORDS = (
    "the a cat dog bird fish tree house river stone sun moon rain wind fire king queen "
    "child man woman ran sat saw ate sang slept walked said found lost big small red old new"
).split()


def synthetic_text(n_docs: int = 4, sents_per_doc: int = 30, seed: int = 0) -> str:
    """Deterministic text: documents separated by blank lines, 3-9 words per sentence."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        sents = []
        for _ in range(sents_per_doc):
            words = [rng.choice(WORDS) for _ in range(rng.randint(3, 9))]
            sents.append(" ".join(words).capitalize() + rng.choice([".", "!", "?"]))
        docs.append("\n".join(sents) + "\n")
    return "\n".join(docs)


@pytest.fixture
def small_corpus_file(tmp_path) -> Path:
    path = tmp_path / "small.txt"
    path.write_text(synthetic_text(), encoding="utf-8")
    return path


CASES = ("distinct", "length1", "repeated", "shared", "mixed_lengths")


def seed_of(*key) -> int:
    """A stable seed for a test case's random data."""
    return zlib.crc32(repr(key).encode())


def same_bits(a, b) -> bool:
    """The same shape and float32 values, bit for bit."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def assert_grad_close(grad, ref, rtol=1e-4):
    """float32 agreement: every entry within rtol of the largest reference entry."""
    scale = np.abs(ref).max()
    assert scale > 0
    err = np.abs(grad - ref).max()
    assert err <= rtol * scale, f"max |kernel - reference| = {err:g}, max |reference| = {scale:g}"


def build_example(case: str, n_pos: int, n_neg: int, seed: int = 0):
    """Sentences of one example as word ids, ``(V, target, positives, negatives)``; ids V-2 and V-1
    unused. ``distinct``: no word shared, lengths 1-5; ``length1``; ``repeated``: inside each sentence;
    ``shared``: a pool of 5 words; ``mixed_lengths``: target of length 1, others 1 to 10 from a pool."""
    rng = np.random.default_rng(seed)
    k = 1 + n_pos + n_neg
    sentences = []
    if case == "distinct":
        nxt = 0
        for n in rng.integers(1, 6, size=k):
            sentences.append(list(range(nxt, nxt + int(n))))
            nxt += int(n)
        used = nxt
    elif case == "length1":
        sentences = [[i] for i in range(k)]
        used = k
    elif case == "repeated":
        for m in range(k):
            a, b = 2 * m, 2 * m + 1
            n = int(rng.integers(3, 7))
            s = [a, a, b] + [int(x) for x in rng.choice([a, b], size=n - 3)]
            sentences.append([int(x) for x in rng.permutation(s)])
        used = 2 * k
    elif case == "shared":
        pool = 5
        for _ in range(k):
            sentences.append([int(x) for x in rng.integers(0, pool, size=int(rng.integers(1, 7)))])
        sentences[1].append(sentences[0][0])  # the target and its first positive share a word
        sentences[-1].append(sentences[0][-1])  # and so does the last sentence
        used = pool
    elif case == "mixed_lengths":
        pool = 8
        sentences.append([0])
        for m in range(1, k):
            n = 1 + (m * 3) % 10
            sentences.append([int(x) for x in rng.integers(0, pool, size=n)])
        used = pool
    else:
        raise ValueError(case)
    V = used + 2
    return V, sentences[0], sentences[1 : 1 + n_pos], sentences[1 + n_pos :]


def pack(sentences, shuffle_seed=None, extra=0):
    """(tokens int32, offsets int64, members int64); with ``shuffle_seed`` the sentences are stored in a
    random order among ``extra`` one-word sentences (word 0), ``members`` saying where each one is."""
    order = list(range(len(sentences)))
    stored = [list(s) for s in sentences]
    if shuffle_seed is not None:
        rng = np.random.default_rng(shuffle_seed)
        stored += [[0]] * extra
        perm = rng.permutation(len(stored))
        stored = [stored[i] for i in perm]
        where = {int(old): new for new, old in enumerate(perm)}
        order = [where[i] for i in order]
    tokens = np.array([w for s in stored for w in s], dtype=np.int32)
    offsets = np.zeros(len(stored) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in stored])
    return tokens, offsets, np.array(order, dtype=np.int64)


@pytest.fixture(scope="session")
def make_text():
    return synthetic_text


@pytest.fixture(scope="module")
def healthy(tmp_path_factory, make_text):
    """A small model trained through the CLI (word part off: rows of --dim columns), and its corpus."""
    from scbow.cli import main

    base = tmp_path_factory.mktemp("hostile")
    corpus = base / "corpus.txt"
    corpus.write_text(make_text(n_docs=4, sents_per_doc=40, seed=5), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCBOW_CACHE_DIR", str(base / "cache"))
        result = make_runner().invoke(main, train_args(corpus, base / "model"))
    assert result.exit_code == 0, result.output
    return base / "model", corpus


@pytest.fixture
def runner():
    """A click CliRunner with stderr apart."""
    return make_runner()


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory, make_text):
    """2,400 generated sentences in 6 documents: about 9 batches of 256 examples per epoch."""
    path = tmp_path_factory.mktemp("robust") / "corpus.txt"
    path.write_text(make_text(n_docs=6, sents_per_doc=400, seed=11), encoding="utf-8")
    return path


@pytest.fixture
def small_batches(monkeypatch):
    """Batches of 256 examples, so that a small corpus makes several."""
    from scbow.training import trainer

    monkeypatch.setattr(trainer, "BATCH", 256)


@pytest.fixture(scope="module")
def good_model(tmp_path_factory):
    """A small healthy model directory (53 words, 8 dims) written by save_model, not trained."""
    from scbow.text.vocab import Vocab
    from scbow.vectors.model import Model
    from scbow.vectors.modeldir import save_model

    words = [f"w{i}" for i in range(50)] + ["the", "cat", "sat"]
    rng = np.random.default_rng(0)
    model = Model(Vocab(words, np.arange(len(words), 0, -1)), rng.standard_normal((len(words), 8)).astype(np.float32),
                  {"dim": 8}, {})
    return save_model(model, tmp_path_factory.mktemp("good") / "model")
