"""``scbow-numba embed ... --workers N | --scheduler ADDRESS``: on a Dask cluster, one task per block of
the inputs, each writing its shard as ``embed`` would, its record last; then the manifest. A rerun skips
the shards done; another job's directory is refused; a run failing before any shard is done takes back
what it wrote. The layout: :mod:`scbow.use.shards`.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import math
import os
import re
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import CorpusError, Interrupted, ModelError
from ..files import atomic_file, leftovers, output_path, remove_leftovers
from ..outputs import refuse_other_kind
from ..reading import read_json, short_message
from ..text.reader import DEFAULT_ENCODING, check_regular, compression, encoding_name, text_codec
from . import shards

BLOCK_BYTES = 64 << 20  # bytes of plain text per block: about 400K lines, a few seconds of work
INSTALL_HINT = "pip install 'scbow-numba[dask]'"
SCHEDULER_TIMEOUT = "20s"  # how long --scheduler ADDRESS is tried before the run is given up
# the temporaries of the directory's own files (scbow.files: ".NAME.tmp-PID-RANDOM")
_OWN_TEMPORARY = re.compile(r"\.(shard-\d{6}\.(?:npy|missing\.txt|json)|plan\.json|manifest\.json)\.tmp-\d+-[0-9a-f]{8}")


@dataclass(frozen=True)
class Block:
    """Bytes ``start:stop`` of ``file`` (``stop = -1``: all, decompressed), with its planned ``size`` and ``mtime_ns``."""

    index: int
    file: str
    start: int
    stop: int
    size: int = -1
    mtime_ns: int = 0

    @property
    def name(self) -> str:
        return f"shard-{self.index:06d}"


def plan_blocks(paths, block_bytes: int = BLOCK_BYTES) -> list[Block]:
    """The blocks of ``paths``: a plain file cut after a newline about every ``block_bytes``, a compressed one
    whole. CorpusError for stdin, a missing or irregular file or one given twice."""
    if block_bytes < 1:
        raise ValueError("block_bytes must be positive")
    blocks: list[Block] = []
    seen: dict = {}  # (device, inode) -> the number of the input it was first given as
    for number, path in enumerate(map(Path, paths), 1):
        if str(path) == "-":
            raise CorpusError("a cluster cannot read stdin: give files")
        st = check_regular(path, expected="a text file with one sentence per line",
                           why="a cluster embed reads files it can cut into blocks and check for changes; "
                               "copy it into a file first")
        first = seen.setdefault((st.st_dev, st.st_ino), number)
        if first != number:
            raise CorpusError(f"{path}: given twice (inputs {first} and {number} are the same file); give each "
                              "input once")
        name, size = str(path.resolve()), st.st_size
        cuts = [0]
        try:
            if compression(path) is None:
                with open(path, "rb") as fh:
                    while cuts[-1] + block_bytes < size:
                        fh.seek(cuts[-1] + block_bytes - 1)
                        fh.readline()  # to just past the next newline
                        if fh.tell() >= size:
                            break
                        cuts.append(fh.tell())
                cuts.append(size)
            else:
                cuts.append(-1)
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None
        blocks += [Block(len(blocks) + i, name, a, b, size, st.st_mtime_ns) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))]
    return blocks


def changed_message(name: str, why: str) -> str:
    return f"{name}: changed while it was being embedded ({why}); run embed again"


def digest(value) -> str:
    """The digest that names a job: of its model id, inputs and settings."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def job(model_path: Path, blocks: list[Block], settings: dict) -> dict:
    """What makes two runs the same job: the model's id, the inputs (paths, sizes, times), the settings."""
    from ..vectors.modeldir import model_id

    files = {b.file: {"bytes": b.size, "mtime_ns": b.mtime_ns} for b in blocks}
    model = model_id(model_path)
    if model is None:
        raise ModelError(f"{model_path}: no such model, or it cannot be read or records no model_id (save it again)")
    return {"model": str(Path(model_path).resolve()), "files": files, "settings": settings,
            "digest": digest([model, files, settings]), "model_id": model}


# -- on a worker -----------------------------------------------------------------------

_MODELS: dict = {}  # model path -> (Model, its model_id), one per worker process
_PLANNED: dict = {}  # (output directory, its plan.json's inode and time) -> the model_id the plan records


def shard_done(out_dir: Path, block: Block, dim: int | None = None) -> dict | None:
    """The record of the finished shard of ``block`` whose files agree with it, or None (redone)."""
    try:
        check_regular(out_dir / f"{block.name}.json", error=ModelError)
        info = read_json(out_dir / f"{block.name}.json")
        if not (isinstance(info, dict) and info.get("block") == asdict(block)):
            return None
        counts = [info.get(k) for k in ("rows", "missing", "tokens", "known_tokens")]
        if not all(type(n) is int and n >= 0 for n in counts) or counts[1] > counts[0] or counts[3] > counts[2]:
            return None
        shards.check_shard(out_dir / f"{block.name}.npy", counts[0], dim)
        shards.read_missing(out_dir / f"{block.name}.missing.txt", counts[0], counts[1])
    except (ModelError, OSError):
        return None
    return {key: info[key] for key in ("block", "rows", "missing", "tokens", "known_tokens")}


def embed_block(model_path: str, block: Block, out_dir: str, fill: float = math.nan,
                unknown: str | None = None, encoding: str = DEFAULT_ENCODING) -> dict:
    """Embed one block into its shard (a Dask task) unless done; its record. A failure no rerun can mend is
    returned as ``{"block", "error", "error_type"}``, so Dask retries nothing."""
    from .embedding import read_blocks, write_embeddings

    out = Path(out_dir)
    planned = {"bytes": block.size, "mtime_ns": block.mtime_ns}
    try:
        try:  # each run writes its plan anew (another file): read once per run a worker serves
            st = os.stat(out / shards.PLAN)
            plan_key = (str(out), st.st_ino, st.st_mtime_ns)
        except OSError:
            plan_key = None
        if plan_key not in _PLANNED:
            if len(_PLANNED) > 64:
                _PLANNED.clear()
            _PLANNED[plan_key] = (shards.read_plan(out) or {}).get("model_id")
        began_with = _PLANNED[plan_key]
        cached = _MODELS.get(model_path)
        if cached is None or (began_with is not None and cached[1] != began_with):  # a worker outlives a run
            from ..vectors.formats import load_model
            from ..vectors.modeldir import model_id

            _MODELS.clear()
            model = load_model(model_path, mmap=True)  # memory-mapped: a machine's workers share it
            loaded = model.info.get("model_id")
            if not (isinstance(loaded, str) and loaded):  # as model_id reads it: a word2vec file by its bytes, ...
                loaded = model_id(model_path)
            _MODELS[model_path] = (model, loaded)
        model, loaded = _MODELS[model_path]
        if began_with is not None and loaded != began_with:
            raise ModelError(f"{model_path}: is not the model this embed began with (another model was saved at its "
                             f"path since); the shards in {out} are of the model before: give another -o, or delete "
                             f"{out} to start over")
        done = shard_done(out, block, model.dim)
        if done is not None:
            return {**done, "skipped": True}
        why = shards.changed_file(block.file, planned)
        if why is not None:
            raise CorpusError(changed_message(block.file, why))
        t0 = time.perf_counter()
        byte_range = None if block.stop < 0 else (block.start, block.stop)
        stats = write_embeddings(model, read_blocks(block.file, byte_range=byte_range, encoding=encoding),
                                 out / f"{block.name}.npy", out / f"{block.name}.missing.txt", fill=fill, unknown=unknown,
                                 source=block.file, sweep=False)  # the run sweeps its directory once, at its start
        why = shards.changed_file(block.file, planned)  # rewritten while it was read: these rows may not be its lines
        if why is not None:
            raise CorpusError(changed_message(block.file, why))
        info = {"block": asdict(block), "rows": stats.lines, "missing": stats.missing, "tokens": stats.tokens,
                "known_tokens": stats.known_tokens, "seconds": round(time.perf_counter() - t0, 3),
                "bytes_out": (out / f"{block.name}.npy").stat().st_size, "worker_pid": os.getpid()}
        with atomic_file(out / f"{block.name}.json", sweep=False) as tmp:  # last: the mark that the shard is done
            Path(tmp).write_text(json.dumps(info) + "\n", encoding="utf-8")
        return {**info, "skipped": False}
    except (CorpusError, ModelError) as exc:
        why = shards.changed_file(block.file, planned)  # read while it was being rewritten: that is the failure to report
        error = CorpusError(changed_message(block.file, why)) if why is not None else exc
        return {"block": asdict(block), "error": str(error),
                "error_type": "corpus" if isinstance(error, CorpusError) else "model"}


# -- on the client ---------------------------------------------------------------------


@dataclass
class ClusterStats:
    shards: int = 0
    skipped: int = 0  # shards found done, from an earlier run
    lines: int = 0
    missing: int = 0
    seconds: float = 0.0
    workers: int = 0

    def summary(self, output) -> str:
        """The line ``embed --workers/--scheduler`` prints at the end."""
        rate = self.lines / self.seconds * 60 if self.seconds > 0 else 0
        resumed = f" ({self.skipped:,} done by an earlier run)" if self.skipped else ""
        return (f"embedded {self.lines:,} lines into {self.shards:,} shards{resumed} on {self.workers} "
                f"workers in {self.seconds:.1f} s ({rate:,.0f} lines/min); {self.missing:,} lines with nothing "
                f"to average; wrote {output}/manifest.json")


def client_for(workers: int | None = None, scheduler: str | None = None):
    """A ``dask.distributed`` client: of a local cluster of ``workers`` processes, or of ``scheduler``."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ModelError(f"--workers and --scheduler need Dask; install it with: {INSTALL_HINT}") from None
    if scheduler is None:
        import signal
        import threading

        # the workers inherit Ctrl-C ignored: a terminal sends it to the whole group, each printing a traceback
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                                   silence_logs=logging.CRITICAL)
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        return Client(cluster)
    if not scheduler.strip():  # dask would take it for "no address": a local cluster, or the current client
        raise ModelError("--scheduler '': not a Dask scheduler address (empty); give one such as tcp://HOST:8786")
    try:
        return Client(scheduler, timeout=SCHEDULER_TIMEOUT, set_as_default=False)
    except Exception as exc:
        if isinstance(exc, ValueError):  # "missing port number in address", "unknown address scheme"
            error = ModelError(f"--scheduler {scheduler!r}: not a Dask scheduler address ({short_message(exc, 100)}); "
                               "give one such as tcp://HOST:8786")
        elif isinstance(exc, (OSError, TimeoutError)):
            error = ModelError(f"cannot reach the Dask scheduler at {scheduler}: {short_message(exc, 160)}")
        else:
            error = ModelError(f"cannot use the Dask scheduler at {scheduler}: {type(exc).__name__}: "
                               f"{short_message(exc, 120)}")
        while exc is not None:  # the tracebacks hold the client that failed to start
            exc.__traceback__, exc = None, exc.__context__
    gc.collect()  # so it closes now, while its event loop runs, not at exit (a 40 s wait and a traceback)
    raise error


def _sweep(out: Path) -> None:
    """Remove the temporaries of the directory's own files whose writer is dead."""
    for name in sorted({m.group(1) for n in os.listdir(out) if (m := _OWN_TEMPORARY.fullmatch(n))}):
        remove_leftovers(out / name)


def _check_output(out: Path, identity: dict, blocks: list[Block]) -> None:
    """Refuse a directory holding anything but this job's shards; sweep it. When only the inputs' sizes or
    times differ, the manifest and the shards beyond this plan's blocks are removed too."""
    if os.path.lexists(out) and not out.is_dir():
        raise ModelError(f"{out}: exists and is not a directory (a cluster embed writes a directory of shards)")
    entries = os.listdir(out) if out.is_dir() else []
    if not os.path.lexists(out / shards.PLAN):
        stale = leftovers(out / shards.PLAN)  # a run killed before its plan was in place leaves only that
        if len(stale) != len(entries):
            raise ModelError(f"{out}: directory is not empty and holds no shards of scbow-numba; refusing to "
                             "write into it")
        remove_leftovers(out / shards.PLAN)
        return
    for name in entries:  # a rerun renames its files over these: a directory there would end it half way
        if (shards.SHARD_FILE.fullmatch(name) or name == shards.MANIFEST) and stat.S_ISDIR(os.lstat(out / name).st_mode):
            raise ModelError(f"{out / name}: is a directory where a cluster embed writes a file; move it away or "
                             "give another -o")
    plan = shards.read_plan(out)
    intact = plan is not None and isinstance(plan.get("files"), dict) and plan["digest"] == digest(
        [plan.get("model_id"), plan["files"], plan.get("settings")])  # not edited since it was written
    same = intact and list(plan["files"]) == list(identity["files"]) and all(
        plan.get(k) == identity[k] for k in ("model_id", "model", "settings"))
    for name in entries:  # and every record of a shard is of one of its inputs
        if same and shards.SHARD_FILE.fullmatch(name) and name.endswith(".json") and (out / name).is_file():  # no FIFO
            with contextlib.suppress(ModelError, OSError, AttributeError):
                block = read_json(out / name).get("block")  # a damaged record is no proof: it is redone
                same = not isinstance(block.get("file"), str) or block["file"] in identity["files"]
    if not same:
        raise ModelError(f"{out}: holds the shards of another job (other inputs, model or settings, or its plan.json "
                         "was edited); give another -o, or delete it to start over")
    _sweep(out)
    if plan["digest"] != identity["digest"]:  # an input changed since the plan: its shards are redone
        for name in entries:
            m = shards.SHARD_FILE.fullmatch(name)
            if name == shards.MANIFEST or (m and int(m.group(1)) >= len(blocks)):
                with contextlib.suppress(OSError):
                    (out / name).unlink()


def _undo(out: Path, blocks: list[Block], fresh: bool, created: list[Path]) -> None:
    """After a run that failed with no shard done: remove its plan and partial shards (if ``fresh``), dead
    writers' temporaries and the empty directories it ``created``."""
    try:
        if not out.is_dir() or any(os.path.lexists(out / f"{b.name}.json") for b in blocks):
            return
        if fresh:
            for name in [shards.PLAN, *(f"{b.name}{ext}" for b in blocks for ext in (".npy", ".missing.txt"))]:
                with contextlib.suppress(FileNotFoundError):
                    (out / name).unlink()
        _sweep(out)
        for d in created:  # deepest first; one that is not empty (anything not ours in it) stays, and its parents
            d.rmdir()
    except OSError:
        return


def _as_given(inputs, message: str, file: str) -> str:
    """A worker's message names a file by its resolved path: name it as the user did."""
    if message.startswith(file + ":"):
        given = next((str(p) for p in inputs if str(Path(p).resolve()) == file), file)
        return given + message[len(file):]
    return message


def embed_on_cluster(model_path, inputs, out_dir, workers: int | None = None, scheduler: str | None = None,
                     fill: float = math.nan, unknown: str | None = None, block_bytes: int = BLOCK_BYTES,
                     retries: int = 2, progress=None, client=None, task=embed_block,
                     encoding: str = DEFAULT_ENCODING) -> ClusterStats:
    """Embed ``inputs`` into shards in ``out_dir`` on ``client`` (else one of ``workers`` or ``scheduler``,
    closed at the end). ``progress(done, total)`` counts shards; ``task``: :func:`embed_block` or a wrapper;
    ``encoding``: the inputs' (one whose line end is not the byte ``\\n``, as UTF-16, is refused: blocks are
    cut at that byte)."""
    codec = text_codec(encoding, at_start=False)[0]
    if "\n".encode(codec) != b"\n":
        raise CorpusError(f"--encoding {encoding}: a cluster cuts its inputs at the line-end byte, which {codec} does "
                          f"not write alone; convert the inputs (iconv -f {codec} -t utf-8) or embed them one at a time")

    out, inputs = Path(out_dir), list(inputs)
    if out.is_symlink():  # -o LINK: the target is the directory (created when its folder exists), the link stays
        out = output_path(out)
    refuse_other_kind(out, shards.SHARDS, "write shards into it (choose another -o)")  # a model, ..., or inside one
    blocks = plan_blocks(inputs, block_bytes)
    settings = {"fill": None if math.isnan(fill) else fill, "unknown": unknown, "block_bytes": block_bytes,
                "encoding": encoding_name(encoding)}  # one codec, one job, however spelt
    identity = job(Path(model_path), blocks, settings)
    _check_output(out, identity, blocks)
    created = [d for d in (out, *out.absolute().parents) if not os.path.lexists(d)]  # deepest first
    t0 = time.perf_counter()
    try:
        with contextlib.ExitStack() as stack:  # its callbacks run last first
            logger = logging.getLogger("distributed")  # Dask's own log lines kept off the terminal: one message of ours
            stack.callback(logger.setLevel, logger.level)
            logger.setLevel(logging.CRITICAL)
            out.mkdir(parents=True, exist_ok=True)
            stack.callback(os.close, _hold(out))  # one run at a time: released last, by the kernel if killed
            _check_output(out, identity, blocks)  # again, now that no other run can plan here
            fresh = not os.path.lexists(out / shards.PLAN)
            own, finished = client is None, []
            # after the cluster is closed (its workers write nothing more), a failed run takes back what it wrote
            stack.callback(lambda: finished or _undo(out, blocks, fresh, created))
            if own:
                client = client_for(workers, scheduler)  # a bad scheduler fails here, before anything is written
                if getattr(client, "cluster", None) is not None:  # closed after the client
                    stack.callback(client.cluster.close)
                stack.callback(client.close)
            with atomic_file(out / shards.PLAN) as tmp:
                Path(tmp).write_text(json.dumps({**identity, "blocks": [asdict(b) for b in blocks]}, indent=1) + "\n",
                                     encoding="utf-8")
            workers = len(client.scheduler_info()["workers"])
            records = _run(client, task, model_path, blocks, out, identity, (fill, unknown, encoding), retries, progress,
                           inputs)
            finished.append(True)
    except KeyboardInterrupt as exc:  # Ctrl-C: what is kept is said (the shards done stay: a rerun goes on)
        if getattr(exc, "message", None):
            raise
        kept = sum(os.path.lexists(out / f"{b.name}.json") for b in blocks) if out.is_dir() else 0
        raise Interrupted(f"interrupted; {kept:,} of {len(blocks):,} shards are done and kept in {out}: run the same "
                          "command again to go on" if kept else "interrupted; nothing was written") from None
    for name, recorded in identity["files"].items():  # the shards are its lines only if it is as planned
        why = shards.changed_file(name, recorded)
        if why is not None:
            raise CorpusError(_as_given(inputs, changed_message(name, why), name))
    manifest = write_manifest(out, blocks, records, identity)
    done = records.values()
    return ClusterStats(shards=len(blocks), skipped=sum(bool(i.get("skipped")) for i in done), lines=manifest["rows"],
                        missing=sum(s["missing"] for s in manifest["shards"]), seconds=time.perf_counter() - t0,
                        workers=workers)


def _hold(out: Path) -> int:
    """A descriptor of ``out`` holding an exclusive ``flock``; ModelError when another run holds it."""
    fd = os.open(out, os.O_RDONLY)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # pragma: no cover  (no flock here: one run at a time is the user's to keep)
        pass
    except BlockingIOError:
        os.close(fd)
        raise ModelError(f"{out}: another scbow-numba embed is writing into it; wait for it to finish or give "
                         "another -o") from None
    except OSError:  # a file system without locks (some NFS): one run at a time is the user's to keep
        pass
    return fd


def write_manifest(out: Path, blocks: list[Block], records: dict, identity: dict) -> dict:
    """Write ``out/manifest.json`` (atomically) from the records of every block's shard; returns it."""
    listed = []
    line_in_file: dict[str, int] = {}
    for b in blocks:
        info = records[b.index]
        first = line_in_file.get(b.file, 1)
        line_in_file[b.file] = first + info["rows"]
        listed.append({"shard": f"{b.name}.npy", "missing_file": f"{b.name}.missing.txt", "file": b.file,
                       "bytes": [b.start, b.stop], "first_line": first, "rows": info["rows"],
                       "missing": info["missing"]})
    dim = shards.check_shard(out / listed[0]["shard"])[1] if listed else None
    manifest = {"manifest_version": shards.MANIFEST_VERSION, **identity, "dim": dim,
                "rows": sum(s["rows"] for s in listed), "shards": listed}
    with atomic_file(out / shards.MANIFEST) as tmp:
        Path(tmp).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _run(client, task, model_path, blocks, out, identity, options, retries, progress, inputs):
    """Submit a task per block (``task(model, block, out, *options)``) and gather their records; the first
    error a task returns is raised."""
    from dask.distributed import as_completed
    from distributed import KilledWorker

    model_arg = str(Path(model_path).resolve())
    run = os.urandom(4).hex()  # a key of this run's own: a client kept across runs must not hand back an earlier result
    futures = [client.submit(task, model_arg, b, str(out.resolve()), *options, retries=retries,
                             pure=False, key=f"scbow-embed-{identity['digest'][:12]}-{run}-{b.name}") for b in blocks]
    block_of = {f.key: b for f, b in zip(futures, blocks)}
    records: dict[int, dict] = {}
    try:
        for future in as_completed(futures):
            b = block_of[future.key]
            try:
                info = future.result()
            except KilledWorker:
                raise ModelError(_as_given(inputs, f"{b.file}: the workers embedding its block {b.index} kept "
                                           "dying (out of memory?); run the same command again to go on", b.file)) from None
            if "error" in info:
                raise (CorpusError if info.get("error_type") == "corpus" else ModelError)(
                    _as_given(inputs, str(info["error"]), b.file))
            records[b.index] = info
            if progress is not None:
                progress(len(records), len(blocks))
    except BaseException:
        client.cancel(futures)
        raise
    return records


def cluster_command(model_dir: Path, inputs, output: Path, workers: int | None = None, scheduler: str | None = None,
                    fill: str = "nan", unknown: str | None = None, block_mb: float = 64.0, quiet: bool = False,
                    encoding: str = DEFAULT_ENCODING) -> str | None:
    """What ``embed --workers N`` or ``--scheduler ADDRESS`` runs: the output and model checked, the shards
    embedded with a progress line; the summary line (None when ``quiet``)."""
    from ..outputs import refuse_overwrite
    from ..progress import Progress
    from ..vectors.formats import load_model

    refuse_other_kind(output, shards.SHARDS, "write shards into it (choose another -o)")  # the same line on resume
    refuse_overwrite({"-o": output}, [("the model", model_dir), *(("INPUT", p) for p in inputs)])
    load_model(model_dir)  # the model is checked here, once, with the messages of every command; workers map it
    bar = Progress(0, unit="shards", quiet=quiet)
    try:
        stats = embed_on_cluster(model_dir, inputs, output, workers=workers, scheduler=scheduler,
                                 fill=0.0 if fill == "zero" else float("nan"), unknown=unknown,
                                 block_bytes=max(int(block_mb * (1 << 20)), 1), encoding=encoding,
                                 progress=lambda done, total: bar.update(done, "embedding on the cluster: ",
                                                                         force=done == total, total=total))
    finally:
        bar.close()
    return None if quiet else stats.summary(output)
