"""Embedding many large files on a Dask cluster: blocks, shards, a manifest, resume.

``scbow-numba embed MODEL INPUT... -o DIR --workers N`` (a local cluster of N worker
processes) or ``--scheduler ADDRESS`` (a running ``dask.distributed`` scheduler: Slurm or
PBS through dask-jobqueue, Kubernetes, a cloud) runs :func:`embed_on_cluster`:

1. :func:`plan_blocks` cuts the inputs into blocks: a plain file into byte ranges of
   about ``block_bytes`` that start at a line and end after a newline; a compressed file
   (gzip, bzip2, xz: it cannot be entered in the middle) is one block. An input that is
   not a regular file (a FIFO, a device, a symlink to one) or is given twice is refused;
   each block records its file's size and modification time as planned.
2. Each block is one task. A worker loads the model once per process (memory-mapped, so
   the workers of one machine share its pages) and embeds its block with the compiled
   kernel of single-process ``embed`` (:func:`scbow.use.embedding.write_embeddings`) into
   ``DIR/shard-NNNNNN.npy`` and ``.missing.txt``, each written atomically, then writes
   ``shard-NNNNNN.json`` (rows, line count, missing lines) last: a shard is done exactly
   when its JSON exists (and its array has the JSON's rows). A killed worker leaves no
   partial shard; Dask runs its task again elsewhere (and a task that raises is retried
   ``retries`` times). A failure that cannot go away by running again (a damaged input,
   an unreadable model: CorpusError, ModelError) is returned by the task, not raised, and
   ends the run with single-process ``embed``'s one message, once; Dask's own logging is
   kept off the terminal.
   A task checks its file against the plan before and after its block, and the client
   checks every input once more before the manifest: a text that changed (or went) while
   it was being embedded ends the run with one CorpusError naming it, never a partial
   result.
3. When every block is done, ``DIR/manifest.json`` lists the shards in input order with
   their file, byte range and line range (1-based, in that file), and records each
   file's size and modification time.

Everything that can be checked is checked before the plan is written: the inputs (step
1), the model, DIR, and the scheduler (a bad address or one that cannot be reached is one
line). A run that fails before any of its shards is done takes back what it wrote: its
plan (when there was none before), the parts of its shards, its temporaries, and DIR if
the run created it and it is then empty; a run with a shard done keeps everything, to
be resumed.

Running the same command again skips the shards already done (resume after a lost worker
or a cancelled job; a done-record is read against every field, and anything wrong in it
means the shard is redone; so is a shard of an input that has changed since) and removes
the temporaries of DIR's own files whose writer is dead (:func:`scbow.files.leftovers`). A
directory holding shards of other inputs or another model, or anything else, is refused,
and so is a DIR that is another of the tool's outputs or inside one. A directory is one of
shards when it holds a manifest or a plan of ours (:func:`output_kind`). :func:`open_shards` reads the
shards back, in manifest order, as one memory-mapped array-like, after checking the
manifest and every shard (a damaged one is a ModelError naming it; every file is checked
to be a regular file before it is opened; the byte ranges of a text's shards must follow
each other from its start to its end, and each shard's missing count must be the lines its
list names) and that the texts are as they were embedded (``check_sources=False`` skips
that); they equal single-process ``embed`` output of the concatenated inputs row for row,
bit for bit. The manifest records the model's ``model_id``
(:func:`scbow.vectors.modeldir.model_id`): :meth:`Shards.check_model` refuses shards whose
model has changed since (retrained in place), as ``index`` does before recording it.

Dask is an optional extra: ``pip install 'scbow-numba[dask]'``. Nothing here imports it
until a cluster is asked for.
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

import numpy as np

from ..errors import CorpusError, ModelError
from ..files import atomic_file, kind_of, leftovers, refuse_inside_ours, register_kind
from ..reading import read_json, short_message
from ..text.reader import check_regular, compression

MANIFEST = "manifest.json"
PLAN = "plan.json"
MANIFEST_VERSION = 1
BLOCK_BYTES = 64 << 20  # bytes of plain text per block: about 400K lines, a few seconds of work
INSTALL_HINT = "pip install 'scbow-numba[dask]'"
SCHEDULER_TIMEOUT = "20s"  # how long --scheduler ADDRESS is tried before the run is given up
# the temporaries of a shard directory's own files (scbow.files.atomic_file: ".NAME.tmp-PID-RANDOM")
_TEMPORARY = re.compile(r"\.(shard-\d{6}\.(?:npy|missing\.txt|json)|plan\.json|manifest\.json)"
                        r"\.tmp-\d+-[0-9a-f]{8}")
_PLAN_TEMPORARY = re.compile(r"\.(plan\.json)\.tmp-\d+-[0-9a-f]{8}")
_SHARD_FILE = re.compile(r"shard-\d{6}\.(npy|json)")
SHARDS = "a directory of embedding shards"


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a directory of embedding shards"`` when ``directory`` is one (:func:`scbow.files.kind_of`): a
    manifest or a plan, with shards or a plan of ours (a manifest.json alone is any web project's)."""
    directory = Path(directory)
    if not ((directory / MANIFEST).is_file() or (directory / PLAN).is_file()):
        return None
    if any(_SHARD_FILE.fullmatch(name) for name in os.listdir(directory)) or _plan_of_ours(directory / PLAN):
        return SHARDS
    return None


def _plan_of_ours(path: Path) -> bool:
    """A plan.json of a cluster embed (an object with its digest and blocks), not a user's file of that name."""
    try:
        if not path.is_file() or path.stat().st_size > 1 << 26:
            return False
        plan = read_json(path)
    except (OSError, ValueError):
        return False
    return isinstance(plan, dict) and isinstance(plan.get("digest"), str) and "blocks" in plan


@dataclass(frozen=True)
class Block:
    """Bytes ``start:stop`` of ``file`` (``stop = -1``: the whole file, decompressed).

    ``size`` and ``mtime_ns``: the file's as planned. They are part of the block's identity:
    a shard embedded from another version of the file is not this block's (it is redone).
    """

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
    """The blocks of ``paths``, in order (see the module's docstring).

    Raises CorpusError, with single-process ``embed``'s messages, for a missing file or a
    directory; and for an input that is not a regular file once symlinks are followed (a
    FIFO, a device such as /dev/zero: its size says nothing of its lines, so it cannot be
    cut into blocks nor checked for changes) or a file given twice (by any name).
    """
    if block_bytes < 1:
        raise ValueError("block_bytes must be positive")
    blocks: list[Block] = []
    seen: dict = {}  # (device, inode) -> the number of the input it was first given as
    for number, path in enumerate(map(Path, paths), 1):
        if str(path) == "-":
            raise CorpusError("a cluster cannot read stdin: give files")
        st = check_regular(path, expected="a text file with one sentence per line",  # follows symlinks
                           why="a cluster embed reads files it can cut into blocks and check for changes; "
                               "copy it into a file first")
        first = seen.setdefault((st.st_dev, st.st_ino), number)
        if first != number:
            raise CorpusError(f"{path}: given twice (inputs {first} and {number} are the same file); give each "
                              "input once")
        name = str(path.resolve())
        size, mtime = st.st_size, st.st_mtime_ns
        try:
            if compression(path) is not None:
                blocks.append(Block(len(blocks), name, 0, -1, size, mtime))
                continue
            cuts = [0]
            with open(path, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # replaced since the stat above
                    raise CorpusError(f"{path}: not a regular file")
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
            blocks.append(Block(len(blocks), name, start, stop, size, mtime))
    return blocks


def _planned_files(blocks: list[Block]) -> dict:
    """``{file: {"bytes", "mtime_ns"}}`` of the blocks' files as planned, in input order."""
    return {b.file: {"bytes": b.size, "mtime_ns": b.mtime_ns} for b in blocks}


def changed_file(name: str, recorded: dict) -> str | None:
    """Why the file ``name`` is not as ``recorded`` (``{"bytes", "mtime_ns"}``) any more; None if it is."""
    try:
        st = os.stat(name)
    except FileNotFoundError:
        return "it is gone"
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file any more"
    if st.st_size != recorded["bytes"]:
        return f"{st.st_size:,} bytes now, {recorded['bytes']:,} when the run began"
    if st.st_mtime_ns != recorded["mtime_ns"]:
        return "written to since the run began"
    return None


def changed_message(name: str, why: str) -> str:
    return f"{name}: changed while it was being embedded ({why}); run embed again"


def _model_id(model_path) -> str:
    """The model's one identity (:func:`scbow.vectors.modeldir.model_id`); ModelError if it cannot be read."""
    from ..vectors.modeldir import model_id

    found = model_id(model_path)
    if found is None:
        raise ModelError(f"{model_path}: no such model, or it cannot be read")
    return found


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _identity(model_path: Path, blocks: list[Block], settings: dict) -> dict:
    """What makes two runs the same job: the model's id, the inputs (paths and sizes), the settings.

    A run whose inputs changed since an earlier run of the same model and settings into the
    same directory is that job again (the shards of the changed inputs are redone, see
    :func:`_check_output`).
    """
    files = _planned_files(blocks)
    model = _model_id(model_path)
    return {"model": str(Path(model_path).resolve()), "files": files, "settings": settings,
            "digest": _digest([model, files, settings]), "model_id": model}


# -- on a worker -----------------------------------------------------------------------

_MODELS: dict = {}  # model path -> Model, one per worker process


def _model(path: str):
    if path not in _MODELS:
        from ..vectors.formats import load_model

        _MODELS.clear()
        _MODELS[path] = load_model(path, mmap=True)
    return _MODELS[path]


def check_shard(path: Path, rows: int | None = None, dim: int | None = None) -> tuple[int, int]:
    """The shape of the shard ``path`` after checking it is one as embed writes it; else ModelError.

    A 2-D float32 ``.npy`` array whose file holds exactly its header and its rows;
    ``rows`` and ``dim``, when given, must be its shape. Only the header is read.
    """
    # before it is opened: a FIFO in its place would block the open
    check_regular(path, error=ModelError, expected="a shard (.npy)", why="a shard is a .npy file",
                  missing="missing (a shard of the directory; run the same embed again to redo it)")
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise ValueError(f"npy format version {version[0]}.{version[1]}")
            offset = fh.tell()
            size = os.fstat(fh.fileno()).st_size
    except FileNotFoundError:
        raise ModelError(f"{path}: missing (a shard of the directory; run the same embed again to redo it)") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: is a directory, expected a shard (.npy)") from None
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, EOFError, SyntaxError, TypeError) as exc:
        raise ModelError(f"{path}: damaged shard (not a .npy array: {short_message(exc, 100)})") from None
    if dtype != np.dtype(np.float32) or len(shape) != 2:
        raise ModelError(f"{path}: damaged shard (holds a {dtype} array of shape {shape}; embed writes float32 rows)")
    need = offset + shape[0] * shape[1] * 4
    if size != need:
        what = "truncated" if size < need else "longer than its rows"
        raise ModelError(f"{path}: damaged shard ({what}: {size:,} bytes, its header says {shape[0]:,} x {shape[1]} "
                         f"rows in {need:,})")
    if rows is not None and shape[0] != rows:
        raise ModelError(f"{path}: damaged shard ({shape[0]:,} rows, the manifest says {rows:,})")
    if dim is not None and shape[1] != dim:
        raise ModelError(f"{path}: damaged shard (rows of {shape[1]} values, the manifest says {dim})")
    return int(shape[0]), int(shape[1])


def shard_done(out_dir: Path, block: Block, dim: int | None = None) -> dict | None:
    """The record of a finished shard, or None (not done, or damaged: it is redone).

    Done means: its record (``.json``) is of this very block (the same file, byte range,
    and the file's size and modification time as planned), every count in it is a count
    that fits the others (``missing <= rows``, ``known_tokens <= tokens``), its array has
    the record's rows (``dim`` columns, float32, a file of exactly that size), and its list
    of missing lines names exactly ``missing`` lines, each one of its rows. Anything else
    in or about the record, whatever its type, means not done.
    """
    info_path = out_dir / f"{block.name}.json"
    try:
        if not stat.S_ISREG(info_path.lstat().st_mode):
            return None
        info = read_json(info_path)
        if not (isinstance(info, dict) and info.get("block") == asdict(block)):
            return None
        rows, missing = info.get("rows"), info.get("missing")
        tokens, known = info.get("tokens"), info.get("known_tokens")
        if not (_is_int(rows) and _is_int(missing) and missing <= rows and _is_int(tokens) and _is_int(known)
                and known <= tokens):
            return None
        check_shard(out_dir / f"{block.name}.npy", rows, dim)
        if _missing_count(out_dir / f"{block.name}.missing.txt", rows) != missing:
            return None
    except (ModelError, OSError, ValueError, TypeError, KeyError, RecursionError):
        return None
    return {key: info[key] for key in ("block", "rows", "missing", "tokens", "known_tokens")}


def _missing_count(path: Path, rows: int) -> int | None:
    """How many lines the list of missing lines ``path`` names (each a line 1..rows, in order); None if damaged."""
    if not stat.S_ISREG(path.lstat().st_mode):
        return None
    count, last = 0, 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip() or line.startswith("#"):
                continue
            n = int(line)
            if not last < n <= rows:
                return None
            count, last = count + 1, n
    return count


def embed_block(model_path: str, block: Block, out_dir: str, fill: float = math.nan,
                unknown: str | None = None) -> dict:
    """Embed one block into its shard (run as a Dask task); returns the shard's record.

    A shard already done is not redone. A failure that running again cannot mend (a
    damaged input, an input that changed since it was planned, a model that cannot be
    read, a shard that cannot be written: a CorpusError or ModelError) is returned, not
    raised, as ``{"block", "error", "error_type"}``: the client reports it once instead
    of Dask retrying it and logging its traceback on every worker.
    """
    try:
        return _embed_block(model_path, block, Path(out_dir), fill, unknown)
    except (CorpusError, ModelError) as exc:
        error: Exception = exc
    why = changed_file(block.file, {"bytes": block.size, "mtime_ns": block.mtime_ns})
    if why is not None:  # read while it was being rewritten: that is the failure to report
        error = CorpusError(changed_message(block.file, why))
    return {"block": asdict(block), "error": str(error),
            "error_type": "corpus" if isinstance(error, CorpusError) else "model"}


def _embed_block(model_path: str, block: Block, out: Path, fill: float, unknown: str | None) -> dict:
    from .embedding import read_blocks, write_embeddings

    model = _model(model_path)
    done = shard_done(out, block, model.dim)
    if done is not None:
        return {**done, "skipped": True}
    planned = {"bytes": block.size, "mtime_ns": block.mtime_ns}
    why = changed_file(block.file, planned)
    if why is not None:
        raise CorpusError(changed_message(block.file, why))
    t0 = time.perf_counter()
    byte_range = None if block.stop < 0 else (block.start, block.stop)
    stats = write_embeddings(model, read_blocks(block.file, byte_range=byte_range), out / f"{block.name}.npy",
                             out / f"{block.name}.missing.txt", fill=fill, unknown=unknown, source=block.file,
                             sweep=False)  # the run sweeps its directory's leftovers once, at its start
    info = {"block": asdict(block), "rows": stats.lines, "missing": stats.missing, "tokens": stats.tokens,
            "known_tokens": stats.known_tokens, "seconds": round(time.perf_counter() - t0, 3),
            "bytes_out": (out / f"{block.name}.npy").stat().st_size, "worker_pid": os.getpid()}
    why = changed_file(block.file, planned)  # rewritten while it was read: these rows may not be its lines
    if why is not None:
        raise CorpusError(changed_message(block.file, why))
    with atomic_file(out / f"{block.name}.json", sweep=False) as tmp:  # last: the mark that the shard is done
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
    if scheduler is not None:
        if not scheduler.strip():  # dask would take it for "no address": a local cluster, or the current client
            raise ModelError("--scheduler '': not a Dask scheduler address (empty); give one such as tcp://HOST:8786")
        try:
            return Client(scheduler, timeout=SCHEDULER_TIMEOUT, set_as_default=False)
        except Exception as exc:
            error = _scheduler_error(scheduler, exc)
            while exc is not None:  # the tracebacks hold the client that failed to start
                exc.__traceback__, exc = None, exc.__context__
        gc.collect()  # so it closes now, while its event loop runs, not at exit (a 40 s wait and a traceback)
        raise error
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.CRITICAL)
    return Client(cluster)


def _scheduler_error(scheduler: str, exc: Exception) -> ModelError:
    """The one line for a scheduler a client could not be started for."""
    if isinstance(exc, ValueError):  # "missing port number in address", "unknown address scheme"
        return ModelError(f"--scheduler {scheduler!r}: not a Dask scheduler address ({short_message(exc, 100)}); "
                          "give one such as tcp://HOST:8786")
    if isinstance(exc, (OSError, TimeoutError)):
        return ModelError(f"cannot reach the Dask scheduler at {scheduler}: {short_message(exc, 160)}")
    return ModelError(f"cannot use the Dask scheduler at {scheduler}: {type(exc).__name__}: {short_message(exc, 120)}")


@contextlib.contextmanager
def _quiet_dask():
    """Dask's own log lines (a worker's traceback, a nanny restarting a worker) kept off the
    terminal while the cluster runs: every failure ends in one message of ours."""
    logger = logging.getLogger("distributed")
    before = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(before)


def refuse_model_output(out_dir: Path) -> None:
    """Refuse (ModelError) an output directory that is another kind of the tool's outputs (a
    model, a checkpoint, ...), or lies inside one (:func:`scbow.files.refuse_inside_ours`)."""
    what = kind_of(Path(out_dir))
    if what is not None and what != SHARDS:
        raise ModelError(f"-o {out_dir}: is {what}; refusing to write shards into it (choose another -o)")
    refuse_inside_ours(out_dir)


def _leftovers(out_dir: Path, pattern: re.Pattern = _TEMPORARY) -> list[Path]:
    """The temporaries of this directory's own files whose writer is dead (:func:`scbow.files.leftovers`)."""
    names = {m.group(1) for p in out_dir.iterdir() if (m := pattern.fullmatch(p.name))}
    return [p for name in sorted(names) for p in leftovers(out_dir / name) if _regular(p)]


def _remove_leftovers(paths) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink()


def _check_output(out_dir: Path, identity: dict, blocks: list[Block]) -> None:
    """Refuse a directory holding something else than the shards of this very job.

    The temporaries a killed run of this job left in it (its writers' own names) are
    removed. When only the inputs' sizes or modification times differ from the earlier
    run's plan (an input changed during it or since), the manifest and the shards numbered
    beyond this run's blocks are removed too (the earlier plan names them); nothing else is.
    """
    refuse_model_output(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ModelError(f"{out_dir}: exists and is not a directory (a cluster embed writes a directory of shards)")
    if not out_dir.is_dir():
        return
    entries = list(out_dir.iterdir())
    if not entries:
        return
    plan_file = out_dir / PLAN
    if not plan_file.is_file():
        # a run killed before its plan was in place leaves only the plan's temporary
        plan_temps = _leftovers(out_dir, _PLAN_TEMPORARY)
        if len(plan_temps) != len(entries):
            raise ModelError(f"{out_dir}: directory is not empty and holds no shards of scbow-numba; refusing to "
                             "write into it")
        _remove_leftovers(plan_temps)
        return
    plan = read_json(plan_file)
    if not isinstance(plan, dict) or (plan.get("digest") != identity["digest"]
                                      and not _same_job_new_texts(plan, identity)):
        raise ModelError(f"{out_dir}: holds the shards of another job (other inputs, model or settings); give "
                         "another -o, or delete it to start over")
    _remove_leftovers(_leftovers(out_dir))
    if plan.get("digest") != identity["digest"]:
        # the same job, but an input has changed since the earlier run (while it ran, or after
        # it): the shards of the changed inputs are not of this plan's blocks (their records
        # name the old size and time) and are redone; those numbered beyond this plan's
        # blocks, and the manifest, which the earlier plan proves ours, are removed
        ours = re.compile(r"shard-(\d{6})\.(?:npy|missing\.txt|json)")
        _remove([p for p in entries if _regular(p) and (p.name == MANIFEST or (
            (m := ours.fullmatch(p.name)) and len(blocks) <= int(m.group(1)) < len(plan["blocks"])))])


def _same_job_new_texts(plan: dict, identity: dict) -> bool:
    """Whether ``plan`` (an earlier run's, read from disk) is of the same model, settings and
    input names, in order, as ``identity``: only the inputs' sizes or times differ."""
    files = plan.get("files")
    return (plan.get("model_id") == identity["model_id"] and plan.get("model") == identity["model"]
            and plan.get("settings") == identity["settings"] and isinstance(files, dict)
            and list(files) == list(identity["files"]) and isinstance(plan.get("blocks"), list))


def _regular(path: Path) -> bool:
    """A regular file itself (not a symlink to one)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _remove(paths) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _missing_dirs(out: Path) -> list[Path]:
    """``out`` and those of its parents that do not exist yet (what ``mkdir(parents=True)``
    will create), deepest first."""
    missing = []
    for d in (out, *out.absolute().parents):
        if os.path.lexists(d):
            break
        missing.append(d)
    return missing


def _undo(out: Path, blocks: list[Block], fresh: bool, created: list[Path]) -> None:
    """After a run that failed before any of its shards was done: remove what it wrote.

    Only when no block's done-record (``shard-NNNNNN.json``) is in ``out``: then, when the
    run found no plan there (``fresh``: the directory was new, or empty), the plan it wrote
    and the parts of its blocks' shards (``.npy``, ``.missing.txt``) that a worker finished
    before the failure; in any case the stale temporaries of ours (:func:`_leftovers`); and
    the directories the run created, if they are then empty. A shard done is kept, and so is
    everything with it: running the same command again resumes from it.
    """
    try:
        if not out.is_dir() or any(_regular(out / f"{b.name}.json") for b in blocks):
            return
        if fresh:
            names = [PLAN, *(f"{b.name}{ext}" for b in blocks for ext in (".npy", ".missing.txt"))]
            _remove([out / name for name in names if _regular(out / name)])
        _remove_leftovers(_leftovers(out))
    except OSError:
        return
    for d in created:  # deepest first; one that is not empty (anything not ours in it) stays, and so do its parents
        try:
            d.rmdir()
        except OSError:
            return


def _as_given(inputs, message: str, file: Block | str) -> str:
    """A worker's message names a block's file by its resolved path: name it as the user did,
    as single-process ``embed`` does."""
    file = file.file if isinstance(file, Block) else file
    if message.startswith(file + ":"):
        given = next((str(p) for p in inputs if str(Path(p).resolve()) == file), file)
        return given + message[len(file):]
    return message


def embed_on_cluster(model_path, inputs, out_dir, workers: int | None = None, scheduler: str | None = None,
                     fill: float = math.nan, unknown: str | None = None, block_bytes: int = BLOCK_BYTES,
                     retries: int = 2, progress=None, client=None, task=embed_block) -> ClusterStats:
    """Embed ``inputs`` into shards in ``out_dir`` on a Dask cluster; see the module's docstring.

    ``client``: an existing ``dask.distributed.Client`` (else one is made from ``workers``
    or ``scheduler`` and closed at the end). ``progress(done, total)`` counts shards.
    ``task``: the function run per block, :func:`embed_block` or a wrapper of it with the
    same arguments (instrumentation; the tests inject faults with it).

    A damaged input, or any other failure the task returns as an error (see
    :func:`embed_block`), stops the run with single-process ``embed``'s CorpusError or
    ModelError, once; ``retries`` is for the failures that may not happen again (a task
    that raises), and a task whose worker dies is run again elsewhere.
    """
    out = Path(out_dir)
    inputs = list(inputs)
    refuse_model_output(out)
    blocks = plan_blocks(inputs, block_bytes)
    settings = {"fill": None if math.isnan(fill) else fill, "unknown": unknown, "block_bytes": block_bytes}
    identity = _identity(Path(model_path), blocks, settings)
    _check_output(out, identity, blocks)
    # everything that can be checked is, before anything is written: the inputs and the
    # model (above), and the scheduler (reached here); a run that fails later with no
    # shard done takes back what it wrote (_undo)
    created = _missing_dirs(out)
    fresh = not os.path.lexists(out / PLAN)  # no earlier run's plan: the run's own directory
    t0 = time.perf_counter()
    own = client is None
    finished = False
    with _quiet_dask():
        if own:
            client = client_for(workers, scheduler)
        try:
            try:
                out.mkdir(parents=True, exist_ok=True)
                with atomic_file(out / PLAN) as tmp:
                    Path(tmp).write_text(json.dumps({**identity, "blocks": [asdict(b) for b in blocks]}, indent=1)
                                         + "\n", encoding="utf-8")
                records, stats = _run(client, task, model_path, blocks, out, identity, fill, unknown, retries,
                                      progress, inputs)
                finished = True
            finally:
                if own:
                    cluster = getattr(client, "cluster", None)
                    client.close()
                    if cluster is not None:
                        cluster.close()
        finally:
            if not finished:  # after the cluster is closed: its workers write nothing more
                _undo(out, blocks, fresh, created)
    for name, recorded in identity["files"].items():  # the shards are its lines only if it is as planned
        why = changed_file(name, recorded)
        if why is not None:
            raise CorpusError(_as_given(inputs, changed_message(name, why), name))
    manifest = write_manifest(out, blocks, records, identity)
    stats.lines, stats.missing = manifest["rows"], sum(s["missing"] for s in manifest["shards"])
    for info in records.values():
        stats.skipped += bool(info.get("skipped"))
        stats.tokens += info.get("tokens", 0)
        stats.known_tokens += info.get("known_tokens", 0)
    stats.seconds = time.perf_counter() - t0
    return stats


def write_manifest(out: Path, blocks: list[Block], records: dict, identity: dict) -> dict:
    """Write ``out/manifest.json`` (atomically) from the records of every block's shard; returns it.

    Each shard's entry: its files, the text file, the byte range of the block in it and the
    range of lines (``first_line``, 1-based in that file, and ``rows``).
    """
    shards = []
    line_in_file: dict[str, int] = {}
    for b in blocks:
        info = records[b.index]
        first = line_in_file.get(b.file, 1)
        line_in_file[b.file] = first + info["rows"]
        shards.append({"shard": f"{b.name}.npy", "missing_file": f"{b.name}.missing.txt", "file": b.file,
                       "bytes": [b.start, b.stop], "first_line": first, "rows": info["rows"],
                       "missing": info["missing"]})
    manifest = {"manifest_version": MANIFEST_VERSION, **identity, "dim": _dim(out, shards),
                "rows": sum(s["rows"] for s in shards), "shards": shards}
    with atomic_file(out / MANIFEST) as tmp:
        Path(tmp).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _run(client, task, model_path, blocks, out, identity, fill, unknown, retries, progress, inputs):
    """Submit a task per block and gather their records; the first error a task returns is raised."""
    from dask.distributed import as_completed

    try:
        from distributed import KilledWorker
    except ImportError:  # pragma: no cover - every distributed has it
        KilledWorker = ()

    stats = ClusterStats(shards=len(blocks), output=str(out), workers=len(client.scheduler_info()["workers"]))
    model_arg = str(Path(model_path).resolve())
    # a key of this run's own: a client kept across runs must not hand an earlier run's result back
    run = os.urandom(4).hex()
    futures = [client.submit(task, model_arg, b, str(out.resolve()), fill, unknown, retries=retries,
                             pure=False, key=f"scbow-embed-{identity['digest'][:12]}-{run}-{b.name}") for b in blocks]
    block_of = {f.key: b for f, b in zip(futures, blocks)}
    records: dict[int, dict] = {}
    done = 0
    try:
        for future in as_completed(futures):
            try:
                info = future.result()
            except KilledWorker:
                b = block_of[future.key]
                raise ModelError(_as_given(inputs, f"{b.file}: the workers embedding its block {b.index} kept "
                                           "dying (out of memory?); run the same command again to go on", b)) from None
            if "error" in info:
                b = block_of[future.key]
                message = _as_given(inputs, str(info["error"]), b)
                raise (CorpusError if info.get("error_type") == "corpus" else ModelError)(message)
            records[info["block"]["index"]] = info
            done += 1
            if progress is not None:
                progress(done, len(blocks))
    except BaseException:
        client.cancel(futures)
        raise
    return records, stats


def _dim(out: Path, shards: list[dict]) -> int | None:
    """Columns of the shards (read from the first one's header); None without shards."""
    return check_shard(out / shards[0]["shard"])[1] if shards else None


# -- reading shards back ---------------------------------------------------------------


def _is_int(value, low: int | None = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and (low is None or value >= low)


def _plain_name(value) -> bool:
    """A file name inside the shard directory: no folder, no way out of it."""
    return (isinstance(value, str) and value not in ("", ".", "..") and "/" not in value and "\\" not in value
            and "\x00" not in value)


def read_manifest(directory: Path) -> dict:
    """``directory/manifest.json``, every field read against the shape embed writes; else ModelError."""
    path = Path(directory) / MANIFEST
    _refuse_irregular(path)
    manifest = read_json(path, what="damaged or unfinished shard directory")
    if not isinstance(manifest, dict) or not _is_int(manifest.get("manifest_version")) \
            or manifest["manifest_version"] != MANIFEST_VERSION:
        raise ModelError(f"{path}: not a manifest of scbow-numba shards")

    def damaged(why: str) -> ModelError:
        return ModelError(f"{path}: damaged manifest ({why})")

    shards = manifest.get("shards")
    if not isinstance(shards, list):
        raise damaged('"shards" is not a list')
    dim = manifest.get("dim")
    if not (_is_int(dim, 1) or (dim is None and not shards)):
        raise damaged(f'"dim" is {dim!r}, not a number of columns')
    if not _is_int(manifest.get("rows")):
        raise damaged(f'"rows" is {manifest.get("rows")!r}, not a count')
    if manifest.get("model") is not None and not isinstance(manifest["model"], str):
        raise damaged('"model" is not a path')
    if manifest.get("model") is not None and not (
            isinstance(manifest.get("model_id"), str) and isinstance(manifest.get("settings"), dict)):
        # without them a model retrained in place since could not be told (Shards.check_model)
        raise damaged('"model_id" or "settings" is missing: the model the shards were embedded with cannot be '
                      "checked (shards embedded by a version before model ids: embed again)")
    files = manifest.get("files")  # required: without it, a text changed since could not be told
    if not isinstance(files, dict) or not all(
            isinstance(name, str) and isinstance(f, dict) and _is_int(f.get("bytes")) and _is_int(f.get("mtime_ns"), None)
            for name, f in files.items()):
        raise damaged('"files" is missing or not a record of {path: {"bytes", "mtime_ns"}}')
    names = set()
    lines_before: dict[str, int] = {}  # file -> the rows of its shards listed so far
    bytes_before: dict[str, tuple[int, int]] = {}  # file -> (where its shards listed so far end, the last one's number)
    for i, s in enumerate(shards):
        where = f"shard {i + 1} of {len(shards)}"
        if not isinstance(s, dict):
            raise damaged(f"{where} is not a record")
        for key in ("shard", "missing_file"):
            if not _plain_name(s.get(key)):
                raise damaged(f'{where}: "{key}" is {s.get(key)!r}, not a file name in the directory')
        if not s["shard"].endswith(".npy") or s["shard"] in names or s["missing_file"] in names:
            raise damaged(f"{where}: {s['shard']!r} is not a shard's .npy, or is listed twice")
        names.update((s["shard"], s["missing_file"]))
        if not isinstance(s.get("file"), str) or not s["file"]:
            raise damaged(f'{where}: "file" is not a path')
        if s["file"] not in files:
            raise damaged(f"{where}: its text {s['file']} is not among the manifest's files")
        span = s.get("bytes")
        if not (isinstance(span, list) and len(span) == 2 and _is_int(span[0]) and _is_int(span[1], -1)
                and (span[1] >= span[0] or span == [0, -1]) and span[1] <= files[s["file"]]["bytes"]):
            raise damaged(f'{where}: "bytes" is {span!r}, not a byte range [start, stop] of its text')
        if not _is_int(s.get("rows")) or not _is_int(s.get("missing")) or s["missing"] > s["rows"]:
            raise damaged(f'{where}: "rows" or "missing" is not a count')
        # a file's shards are listed together, in line order: the first starts at line 1,
        # each next one where the one before ends
        if s["file"] in lines_before and shards[i - 1]["file"] != s["file"]:
            raise damaged(f"{where}: the shards of {s['file']} are not listed together")
        before = lines_before.get(s["file"], 0)
        if not _is_int(s.get("first_line"), 1) or s["first_line"] != before + 1:
            raise damaged(f'{where}: "first_line" is {s.get("first_line")!r}, not a line number that follows the '
                          f"{before:,} lines of the shards of its text before it")
        lines_before[s["file"]] = before + s["rows"]
        # and in byte order: the first at 0, each next where the one before ends; a
        # compressed text ([0, -1]: all of it) is one shard
        end = bytes_before.get(s["file"], (0, i))[0]
        if span[0] != end or (span == [0, -1] and s["file"] in bytes_before):
            what = "the start of its text" if s["file"] not in bytes_before else \
                "the end of the shard of its text before it" if end >= 0 else "nothing (its text is compressed: one shard)"
            raise damaged(f'{where}: "bytes" is {span!r}, not a range that starts at {what} ({end:,})')
        bytes_before[s["file"]] = (span[1], i)
    for name, (end, i) in bytes_before.items():
        if end not in (-1, files[name]["bytes"]):
            raise damaged(f'shard {i + 1} of {len(shards)}: "bytes" ends at {end:,}, the last shard of {name} must end '
                          f'at its end ({files[name]["bytes"]:,} bytes)')
    unused = [name for name in files if name not in lines_before]
    if unused:
        raise damaged(f'"files" names {unused[0]}, of which it lists no shard')
    total = sum(s["rows"] for s in shards)
    if total != manifest["rows"]:
        raise damaged(f'"rows" is {manifest["rows"]:,}, its shards hold {total:,}')
    return manifest


def _refuse_irregular(path: Path) -> None:
    """ModelError("PATH: not a regular file") when ``path`` is there but is not a regular file
    once symlinks are followed (a FIFO in its place would block the open). One that is not
    there is left to the open that follows to name."""
    try:
        st = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ModelError(f"{path}: not a regular file")


def _read_missing(path: Path, rows: int) -> list[int]:
    """The lines (1..rows, increasing) a shard's list of missing lines names; else ModelError naming it."""
    check_regular(path, error=ModelError, expected="a shard's list of missing lines",
                  missing="missing (the list of lines with nothing to average of a shard)",
                  why="a shard's list of missing lines")
    lines: list[int] = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip() and not line.startswith("#"):
                    n = int(line)
                    if not (lines[-1] if lines else 0) < n <= rows:
                        raise ValueError(f"line {n} of a shard of {rows} rows, after line {lines[-1] if lines else 0}")
                    lines.append(n)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:  # int() of a damaged line, UnicodeDecodeError
        raise ModelError(f"{path}: damaged list of missing lines ({short_message(exc, 100)})") from None
    return lines


class Shards:
    """The shards of a cluster embed, in manifest order, as one read-only array-like.

    ``len()``, ``shape``, ``dtype``; indexing with an int, a slice or an integer array
    returns rows (a copy for slices across shards); ``np.asarray(shards)`` reads them all.
    Each shard is memory-mapped: opening costs nothing, and pages are read when used.
    ``missing_lines()`` lists ``(file, line)`` of the lines with no embedding.

    Opening checks the manifest (every field) and every shard's header against it
    (float32, 2-D, the manifest's rows and width, a file of exactly that size): a damaged
    or truncated directory is a ModelError naming the damaged file, never wrong rows.
    ``check_sources()`` refuses shards whose text has changed since.
    """

    def __init__(self, directory):
        self.directory = Path(directory)
        manifest = read_manifest(self.directory)
        self.manifest = manifest
        dim = manifest["dim"] or 0
        self.parts = []
        for s in manifest["shards"]:
            shard = self.directory / s["shard"]
            check_shard(shard, s["rows"], dim)
            listed = len(_read_missing(self.directory / s["missing_file"], s["rows"]))
            if listed != s["missing"]:
                raise ModelError(f"{self.directory / s['missing_file']}: damaged list of missing lines (it lists "
                                 f"{listed:,} lines, the manifest says {s['missing']:,})")
            try:
                self.parts.append(np.load(shard, mmap_mode="r", allow_pickle=False))
            except (ValueError, OSError) as exc:
                raise ModelError(f"{shard}: cannot read: {short_message(exc)}") from None
        self.offsets = np.concatenate([[0], np.cumsum([p.shape[0] for p in self.parts])]).astype(np.int64)
        self.shape = (int(self.offsets[-1]), int(dim))
        self.dtype = np.dtype(np.float32)

    def check_model(self) -> None:
        """ModelError if the model the shards were embedded with has changed since (retrained
        in place, say: its id is not the manifest's ``model_id``): the rows are not that model's embeddings any more, and an index
        recording it would answer queries wrong. A model that is gone, or none recorded, is
        skipped (the caller says what it needs it for)."""
        model = self.manifest.get("model")
        if model is None or not os.path.lexists(model):
            return
        try:
            now = _model_id(model)
        except ModelError:
            now = None
        if now != self.manifest["model_id"]:
            raise ModelError(f"{model}: changed since these shards ({self.directory}) were embedded; embed again")

    def check_sources(self) -> None:
        """ModelError if a text the shards were embedded from has changed since (its size or
        modification time is not the manifest's): the rows would not be its lines. A text
        that is gone is skipped (the caller says what it needs it for)."""
        for name, recorded in self.manifest["files"].items():
            try:
                st = os.stat(name)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise CorpusError(f"{name}: cannot read: {exc.strerror or exc}") from None
            if not stat.S_ISREG(st.st_mode) or st.st_size != recorded["bytes"] or st.st_mtime_ns != recorded["mtime_ns"]:
                raise ModelError(f"{name}: changed since it was embedded into {self.directory} (size or modification "
                                 "time differs from the manifest's); run embed again")

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
            lines = _read_missing(self.directory / s["missing_file"], s["rows"])
            out.extend((s["file"], s["first_line"] - 1 + n) for n in lines)
        return out

    def __repr__(self) -> str:
        return f"<Shards {self.directory}: {len(self):,} x {self.shape[1]} float32 in {len(self.parts)} shards>"


def open_shards(directory, check_sources: bool = True) -> Shards:
    """The shards written by a cluster embed into ``directory``, as one memory-mapped array-like.

    ``check_sources``: refuse (ModelError) shards of a text that has changed since they were
    embedded (:meth:`Shards.check_sources`; a text that is gone is not checked). False skips
    that check, for a user who knows the rows are still those of the texts (a text copied
    with a new modification time, say).
    """
    shards = Shards(directory)
    if check_sources:
        shards.check_sources()
    return shards
