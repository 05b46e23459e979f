"""Sent2Vec (Pagliardini, Gupta and Jaggi, NAACL 2018) as a peer of the quality benchmark.

Sent2Vec learns word (and word-bigram) vectors whose average is a sentence vector, by
predicting each word of a sentence from the average of the rest: the same "average of
vectors" interface as Siamese CBOW, a different objective. Its C++ source (a fork of
fastText) is never vendored: clone https://github.com/epfml/sent2vec into
``benchmarks/.work/sent2vec/src`` (ignored by git) or point ``SCBOW_SENT2VEC_SRC`` at a
checkout; :func:`binary` builds it with its own ``make`` in a copy under
``benchmarks/.work/sent2vec/build-<hash of the sources>/`` the first time.

From a trained model (about 2.5 GB with its bigram buckets, then deleted) the benchmark takes
its sentence vectors (``print-sentence-vectors``: the average of the sentence's unigram and
bigram vectors, unknown words left out) of every evaluation sentence and of the corpus sample
the post-processing is estimated on, each given as scbow's tokens joined by spaces; and its
unigram vectors (``print-vocabulary-vectors ... input``), which get every peer's word-vector
post-processings and the word-similarity sets.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from .common import WORK_ROOT, checkout_commit, say

WORK = WORK_ROOT / "sent2vec"
SOURCE_ENV = "SCBOW_SENT2VEC_SRC"
UPSTREAM = "https://github.com/epfml/sent2vec"

# The settings the Sent2Vec paper and README give for book corpora (Toronto books:
# bigrams, 5 epochs at lr 0.2, 10 negatives, subsampling 5e-6, dropoutK 4), at the
# dimension and minimum count every system of the benchmark uses.
PAPER_SETTINGS = {"dim": 300, "minCount": 5, "epoch": 5, "lr": 0.2, "wordNgrams": 2, "loss": "ns", "neg": 10,
                  "t": 5e-6, "dropoutK": 4, "bucket": 2_000_000}


def source_dir() -> Path:
    env = os.environ.get(SOURCE_ENV)
    path = Path(env) if env else WORK / "src"
    if not (path / "Makefile").is_file() or not (path / "src" / "fasttext.cc").is_file():
        sys.exit(f"no Sent2Vec source at {path}: clone {UPSTREAM} there (git clone {UPSTREAM} {WORK / 'src'}) "
                 f"or set {SOURCE_ENV} to a checkout")
    return path


def source_id(src: Path) -> str:
    """A hash of the sources the binary is built from (what the cache keys and the report record)."""
    h = hashlib.sha256()
    for p in sorted([src / "Makefile", *(src / "src").glob("*.cc"), *(src / "src").glob("*.h")]):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def binary() -> Path:
    """The ``fasttext`` binary of Sent2Vec, built from :func:`source_dir` on first use."""
    src = source_dir()
    build = WORK / f"build-{source_id(src)}"
    exe = build / "fasttext"
    if exe.is_file():
        return exe
    tmp = WORK / f"build-tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns(".git", "*.o", "fasttext"))
    say(f"building Sent2Vec from {src} (make)")
    done = subprocess.run(["make", "-j2"], cwd=tmp, capture_output=True, text=True)
    if done.returncode != 0 or not (tmp / "fasttext").is_file():
        sys.exit(f"building Sent2Vec in {tmp} failed:\n{done.stderr[-2000:]}")
    os.replace(tmp, build)
    return exe


def describe() -> str:
    src = source_dir()
    commit = checkout_commit(src)  # None unless src is a git checkout of its own
    return f"epfml/sent2vec {'commit ' + commit[:10] if commit else 'source'} (sources {source_id(src)})"


def train(tokens_path: Path, settings: dict, out_dir: Path) -> Path:
    """Train on the token file; the model's ``.bin`` in ``out_dir`` (its log beside it)."""
    exe = binary()
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = out_dir / "sent2vec"
    args = [str(exe), "sent2vec", "-input", str(tokens_path), "-output", str(prefix)]
    for key, value in settings.items():
        args += [f"-{key}", str(value)]
    say("training Sent2Vec: " + " ".join(args[1:]))
    with open(out_dir / "train.log", "w", encoding="utf-8") as log:
        done = subprocess.run(args, stdout=log, stderr=subprocess.STDOUT)
    model = prefix.with_suffix(".bin")
    if done.returncode != 0 or not model.is_file():
        sys.exit(f"Sent2Vec training failed (exit {done.returncode}); see {out_dir / 'train.log'}")
    return model


def finished_model(out_dir: Path) -> Path | None:
    """The ``.bin`` a training in ``out_dir`` finished (its log's last progress at 100%), else None."""
    model, log = out_dir / "sent2vec.bin", out_dir / "train.log"
    if not model.is_file() or not log.is_file():
        return None
    last = last_progress(log) or ""
    return model if "Progress: 100.0%" in last and model.stat().st_mtime >= log.stat().st_mtime - 60 else None


def last_progress(log: Path) -> str | None:
    """The last progress line of a training log (read from its end: the log grows to hundreds of MB)."""
    with open(log, "rb") as fh:
        fh.seek(max(0, log.stat().st_size - 4096))
        tail = fh.read().decode("utf-8", errors="replace").replace("\r", "\n").splitlines()
    return next((x.strip() for x in reversed(tail) if "Progress:" in x), None)


def _parse(text: bytes, rows: int, dim: int, what: str) -> np.ndarray:
    values = np.array(text.split(), dtype=np.float32)
    if values.size != rows * dim:
        raise RuntimeError(f"Sent2Vec {what}: {values.size} numbers for {rows} rows of {dim}")
    return values.reshape(rows, dim)


def _run(command: str, *args: str, text: bytes | None = None) -> bytes:
    done = subprocess.run([str(binary()), command, *args], input=text, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"Sent2Vec {command} failed: {done.stderr.decode(errors='replace')[-500:]}")
    return done.stdout


def sentence_vectors(model: Path, lines: list[str], dim: int) -> np.ndarray:
    """``print-sentence-vectors`` of ``lines`` (tokens joined by spaces, no newlines): float32 (n, dim)."""
    if any("\n" in s or "\r" in s for s in lines):
        raise ValueError("a sentence for Sent2Vec holds a line break")
    out = _run("print-sentence-vectors", str(model), text=("\n".join(lines) + "\n").encode("utf-8"))
    return _parse(out, len(lines), dim, "sentence vectors")


def vocabulary_vectors(model: Path, dim: int) -> tuple[list[str], np.ndarray]:
    """The model's words and their unigram (input) vectors."""
    words, rows = [], []
    for line in _run("print-vocabulary-vectors", str(model), "input").decode("utf-8").splitlines():
        parts = line.split()
        if len(parts) != dim + 1:
            raise RuntimeError(f"Sent2Vec vocabulary vectors: a line of {len(parts)} fields, not {dim + 1}")
        words.append(parts[0])
        rows.append(parts[1:])
    return words, np.array(rows, dtype=np.float32).reshape(len(words), dim)
