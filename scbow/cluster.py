"""Embedding many large files on a Dask cluster: blocks, shards, a manifest, resume.

``scbow-numba embed MODEL INPUT... -o DIR --workers N`` (a local cluster of N worker
processes) or ``--scheduler ADDRESS`` (a running ``dask.distributed`` scheduler: Slurm or
PBS through dask-jobqueue, Kubernetes, a cloud) runs :func:`embed_on_cluster`:

1. :func:`plan_blocks` cuts the inputs into blocks: a plain file into byte ranges of
   about ``block_bytes`` that start at a line and end after a newline; a compressed file
   (gzip, bzip2, xz: it cannot be entered in the middle) is one block.
2. Each block is one task. A worker loads the model once per process (memory-mapped, so
   the workers of one machine share its pages) and embeds its block with the compiled
   kernel of single-process ``embed`` (:func:`scbow.embedding.write_embeddings`) into
   ``DIR/shard-NNNNNN.npy`` and ``.missing.txt``, each written atomically, then writes
   ``shard-NNNNNN.json`` (rows, line count, missing lines) last: a shard is done exactly
   when its JSON exists. A killed worker leaves no partial shard; Dask runs its task again
   elsewhere (and any task that raises is retried ``retries`` times).
3. When every block is done, ``DIR/manifest.json`` lists the shards in input order with
   their file, byte range and line range (1-based, in that file).

Running the same command again skips the shards already done (resume after a lost worker
or a cancelled job). A directory holding shards of other inputs or another model is
refused. :func:`open_shards` reads the shards back, in manifest order, as one
memory-mapped array-like; they equal single-process ``embed`` output of the
concatenated inputs row for row, bit for bit.

Dask is an optional extra: ``pip install 'scbow-numba[dask]'``. Nothing here imports it
until a cluster is asked for.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .errors import CorpusError, ModelError
from .files import atomic_file, read_json

MANIFEST = "manifest.json"
PLAN = "plan.json"
MANIFEST_VERSION = 1
BLOCK_BYTES = 64 << 20  # bytes of plain text per block: about 400K lines, a few seconds of work
INSTALL_HINT = "pip install 'scbow-numba[dask]'"
_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")


@dataclass(frozen=True)
class Block:
    """Bytes ``start:stop`` of ``file`` (``stop = -1``: the whole file, decompressed)."""

    index: int
    file: str
    start: int
    stop: int

    @property
    def name(self) -> str:
        return f"shard-{self.index:06d}"


def _is_compressed(path: Path) -> bool:
    with open(path, "rb") as fh:
        magic = fh.read(6)
    return any(magic.startswith(m) for m in _COMPRESSED)


def plan_blocks(paths, block_bytes: int = BLOCK_BYTES) -> list[Block]:
    """The blocks of ``paths``, in order (see the module's docstring).

    Raises CorpusError, with single-process ``embed``'s messages, for a missing file or a
    directory.
    """
    if block_bytes < 1:
        raise ValueError("block_bytes must be positive")
    blocks: list[Block] = []
    for path in map(Path, paths):
        if str(path) == "-":
            raise CorpusError("a cluster cannot read stdin: give files")
        if path.is_dir():
            raise CorpusError(f"{path}: is a directory, expected a text file with one sentence per line")
        if not path.exists():
            raise CorpusError(f"{path}: no such file")
        name = str(path.resolve())
        try:
            size = path.stat().st_size
            if _is_compressed(path):
                blocks.append(Block(len(blocks), name, 0, -1))
                continue
            cuts = [0]
            with open(path, "rb") as fh:
                while cuts[-1] + block_bytes < size:
                    fh.seek(cuts[-1] + block_bytes - 1)
                    fh.readline()  # to just past the next newline
                    at = fh.tell()
                    if at >= size:
                        break
                    cuts.append(at)
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None
        cuts.append(size)
        for start, stop in zip(cuts, cuts[1:]):
            blocks.append(Block(len(blocks), name, start, stop))
    return blocks


def _identity(model_path: Path, blocks: list[Block], settings: dict) -> dict:
    """What makes two runs the same job: the model's files, the inputs (paths and sizes), the settings."""
    files = {}
    for b in blocks:
        if b.file not in files:
            st = os.stat(b.file)
            files[b.file] = {"bytes": st.st_size, "mtime_ns": st.st_mtime_ns}
    model_stat = {}
    for p in sorted(Path(model_path).iterdir()) if Path(model_path).is_dir() else [Path(model_path)]:
        st = p.stat()
        model_stat[p.name] = [st.st_size, st.st_mtime_ns]
    digest = hashlib.sha256(json.dumps([model_stat, files, settings], sort_keys=True).encode()).hexdigest()
    return {"model": str(Path(model_path).resolve()), "files": files, "settings": settings, "digest": digest}


# -- on a worker -----------------------------------------------------------------------

_MODELS: dict = {}  # model path -> Model, one per worker process


def _model(path: str):
    if path not in _MODELS:
        from .formats import load_model

        _MODELS.clear()
        _MODELS[path] = load_model(path, mmap=True)
    return _MODELS[path]


def shard_done(out_dir: Path, block: Block) -> dict | None:
    """The record of a finished shard, or None (not done, or damaged: it is redone)."""
    info_path = out_dir / f"{block.name}.json"
    if not info_path.is_file():
        return None
    try:
        info = read_json(info_path)
        rows = int(info["rows"])
        ok = (info["block"] == asdict(block) and (out_dir / f"{block.name}.npy").is_file()
              and (out_dir / f"{block.name}.missing.txt").is_file())
        if ok:
            shape = np.load(out_dir / f"{block.name}.npy", mmap_mode="r").shape
            ok = shape[0] == rows
    except (ModelError, KeyError, TypeError, ValueError, OSError):
        return None
    return info if ok else None


def embed_block(model_path: str, block: Block, out_dir: str, fill: float = math.nan,
                unknown: str | None = None) -> dict:
    """Embed one block into its shard (run as a Dask task); returns the shard's record.

    A shard already done is not redone.
    """
    from .embedding import read_blocks, write_embeddings

    out = Path(out_dir)
    done = shard_done(out, block)
    if done is not None:
        return {**done, "skipped": True}
    t0 = time.perf_counter()
    model = _model(model_path)
    byte_range = None if block.stop < 0 else (block.start, block.stop)
    stats = write_embeddings(model, read_blocks(block.file, byte_range=byte_range), out / f"{block.name}.npy",
                             out / f"{block.name}.missing.txt", fill=fill, unknown=unknown, source=block.file)
    info = {"block": asdict(block), "rows": stats.lines, "missing": stats.missing, "tokens": stats.tokens,
            "known_tokens": stats.known_tokens, "seconds": round(time.perf_counter() - t0, 3),
            "bytes_out": (out / f"{block.name}.npy").stat().st_size, "worker_pid": os.getpid()}
    with atomic_file(out / f"{block.name}.json") as tmp:  # last: the mark that the shard is done
        Path(tmp).write_text(json.dumps(info) + "\n", encoding="utf-8")
    return {**info, "skipped": False}


# -- on the client ---------------------------------------------------------------------


@dataclass
class ClusterStats:
    shards: int = 0
    skipped: int = 0  # shards found done, from an earlier run
    lines: int = 0
    missing: int = 0
    tokens: int = 0
    known_tokens: int = 0
    seconds: float = 0.0
    workers: int = 0
    output: str = ""


def client_for(workers: int | None = None, scheduler: str | None = None):
    """A ``dask.distributed`` client: of a local cluster of ``workers`` processes, or of ``scheduler``."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ModelError(f"--workers and --scheduler need Dask; install it with: {INSTALL_HINT}") from None
    if scheduler:
        try:
            return Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise ModelError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=40)
    return Client(cluster)


def _check_output(out_dir: Path, identity: dict) -> None:
    """Refuse a directory holding something else than the shards of this very job."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ModelError(f"{out_dir}: exists and is not a directory (a cluster embed writes a directory of shards)")
    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        return
    plan_file = out_dir / PLAN
    if not plan_file.is_file():
        raise ModelError(f"{out_dir}: directory is not empty and holds no shards of scbow-numba; refusing to write "
                         "into it")
    plan = read_json(plan_file)
    if not isinstance(plan, dict) or plan.get("digest") != identity["digest"]:
        raise ModelError(f"{out_dir}: holds the shards of another job (other inputs, model or settings); give "
                         "another -o, or delete it to start over")


def embed_on_cluster(model_path, inputs, out_dir, workers: int | None = None, scheduler: str | None = None,
                     fill: float = math.nan, unknown: str | None = None, block_bytes: int = BLOCK_BYTES,
                     retries: int = 2, progress=None, client=None, task=embed_block) -> ClusterStats:
    """Embed ``inputs`` into shards in ``out_dir`` on a Dask cluster; see the module's docstring.

    ``client``: an existing ``dask.distributed.Client`` (else one is made from ``workers``
    or ``scheduler`` and closed at the end). ``progress(done, total)`` counts shards.
    ``task``: the function run per block, :func:`embed_block` or a wrapper of it with the
    same arguments (instrumentation; the tests inject faults with it).
    """
    out = Path(out_dir)
    blocks = plan_blocks(inputs, block_bytes)
    settings = {"fill": None if math.isnan(fill) else fill, "unknown": unknown, "block_bytes": block_bytes}
    identity = _identity(Path(model_path), blocks, settings)
    _check_output(out, identity)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_file(out / PLAN) as tmp:
        Path(tmp).write_text(json.dumps({**identity, "blocks": [asdict(b) for b in blocks]}, indent=1) + "\n",
                             encoding="utf-8")
    t0 = time.perf_counter()
    own = client is None
    if own:
        client = client_for(workers, scheduler)
    try:
        from dask.distributed import as_completed

        stats = ClusterStats(shards=len(blocks), output=str(out), workers=len(client.scheduler_info()["workers"]))
        model_arg = str(Path(model_path).resolve())
        futures = [client.submit(task, model_arg, b, str(out.resolve()), fill, unknown, retries=retries,
                                 pure=False, key=f"scbow-embed-{identity['digest'][:12]}-{b.name}") for b in blocks]
        records: dict[int, dict] = {}
        done = 0
        for future in as_completed(futures):
            info = future.result()  # a task's error (a binary file, ...) is raised here, as in one process
            records[info["block"]["index"]] = info
            done += 1
            if progress is not None:
                progress(done, len(blocks))
    finally:
        if own:
            cluster = getattr(client, "cluster", None)
            client.close()
            if cluster is not None:
                cluster.close()
    shards = []
    line_in_file: dict[str, int] = {}
    for b in blocks:
        info = records[b.index]
        first = line_in_file.get(b.file, 1)
        line_in_file[b.file] = first + info["rows"]
        shards.append({"shard": f"{b.name}.npy", "missing_file": f"{b.name}.missing.txt", "file": b.file,
                       "bytes": [b.start, b.stop], "first_line": first, "rows": info["rows"],
                       "missing": info["missing"]})
        stats.skipped += bool(info.get("skipped"))
        stats.lines += info["rows"]
        stats.missing += info["missing"]
        stats.tokens += info.get("tokens", 0)
        stats.known_tokens += info.get("known_tokens", 0)
    manifest = {"manifest_version": MANIFEST_VERSION, **identity, "dim": _dim(out, shards), "rows": stats.lines,
                "shards": shards}
    with atomic_file(out / MANIFEST) as tmp:
        Path(tmp).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    stats.seconds = time.perf_counter() - t0
    return stats


def _dim(out: Path, shards: list[dict]) -> int | None:
    """Columns of the shards (read from the first one's header); None without shards."""
    return int(np.load(out / shards[0]["shard"], mmap_mode="r").shape[1]) if shards else None


# -- reading shards back ---------------------------------------------------------------


class Shards:
    """The shards of a cluster embed, in manifest order, as one read-only array-like.

    ``len()``, ``shape``, ``dtype``; indexing with an int, a slice or an integer array
    returns rows (a copy for slices across shards); ``np.asarray(shards)`` reads them all.
    Each shard is memory-mapped: opening costs nothing, and pages are read when used.
    ``missing_lines()`` lists ``(file, line)`` of the lines with no embedding.
    """

    def __init__(self, directory):
        self.directory = Path(directory)
        manifest = read_json(self.directory / MANIFEST, what="damaged or unfinished shard directory")
        if not isinstance(manifest, dict) or manifest.get("manifest_version") != MANIFEST_VERSION:
            raise ModelError(f"{self.directory / MANIFEST}: not a manifest of scbow-numba shards")
        self.manifest = manifest
        self.parts = [np.load(self.directory / s["shard"], mmap_mode="r") for s in manifest["shards"]]
        for s, part in zip(manifest["shards"], self.parts):
            if part.shape[0] != s["rows"]:
                raise ModelError(f"{self.directory / s['shard']}: {part.shape[0]} rows, the manifest says {s['rows']}")
        self.offsets = np.concatenate([[0], np.cumsum([p.shape[0] for p in self.parts])]).astype(np.int64)
        dim = manifest.get("dim") or 0
        self.shape = (int(self.offsets[-1]), int(dim))
        self.dtype = np.dtype(np.float32)

    def __len__(self) -> int:
        return self.shape[0]

    def _row(self, i: int) -> np.ndarray:
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"row {i} of {len(self)}")
        k = int(np.searchsorted(self.offsets, i, side="right")) - 1
        return self.parts[k][i - self.offsets[k]]

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            return self._row(int(key))
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step == 1:
                pieces = []
                for k, part in enumerate(self.parts):
                    lo, hi = max(start, self.offsets[k]), min(stop, self.offsets[k + 1])
                    if lo < hi:
                        pieces.append(part[lo - self.offsets[k] : hi - self.offsets[k]])
                if len(pieces) == 1:
                    return pieces[0]
                return np.concatenate(pieces) if pieces else np.empty((0, self.shape[1]), self.dtype)
            key = np.arange(start, stop, step)
        idx = np.asarray(key)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        idx = idx.astype(np.int64).ravel()
        idx = np.where(idx < 0, idx + len(self), idx)
        if len(idx) and (idx.min() < 0 or idx.max() >= len(self)):
            raise IndexError(f"rows out of range for {len(self)} rows")
        out = np.empty((len(idx), self.shape[1]), dtype=self.dtype)
        owner = np.searchsorted(self.offsets, idx, side="right") - 1  # the shard of each row
        for k in np.unique(owner).tolist():  # one fancy index per shard touched
            mine = owner == k
            out[mine] = self.parts[k][idx[mine] - self.offsets[k]]
        return out

    def __array__(self, dtype=None, copy=None):
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)

    def __iter__(self):
        for part in self.parts:
            yield from part

    def missing_lines(self) -> list[tuple[str, int]]:
        """``(input file, 1-based line)`` of every line with nothing to average, in order."""
        out = []
        for s in self.manifest["shards"]:
            with open(self.directory / s["missing_file"], encoding="utf-8") as fh:
                for line in fh:
                    if line.strip() and not line.startswith("#"):
                        out.append((s["file"], s["first_line"] - 1 + int(line)))
        return out

    def __repr__(self) -> str:
        return f"<Shards {self.directory}: {len(self):,} x {self.shape[1]} float32 in {len(self.parts)} shards>"


def open_shards(directory) -> Shards:
    """The shards written by a cluster embed into ``directory``, as one memory-mapped array-like."""
    return Shards(directory)
