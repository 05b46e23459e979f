"""A directory of embedding shards, as a cluster embed (:mod:`scbow.use.cluster`) writes it, read back.

Per block ``shard-NNNNNN.npy``, ``.missing.txt`` and ``.json`` (its record, written last); ``plan.json``
(the job) and, when all are done, ``manifest.json``. :func:`open_shards` reads them as one array-like.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..outputs import register_kind
from ..reading import read_json, short_message
from ..text.reader import check_regular

MANIFEST = "manifest.json"
PLAN = "plan.json"
MANIFEST_VERSION = 1
SHARDS = "a directory of embedding shards"
SHARD_FILE = re.compile(r"shard-(\d{6})\.(?:npy|missing\.txt|json)")


def read_plan(directory) -> dict | None:
    """The ``plan.json`` of a cluster embed in ``directory`` (not a user's file of that name), else None."""
    path = Path(directory) / PLAN
    try:
        if not path.is_file() or path.stat().st_size > 1 << 26:
            return None
        plan = read_json(path)
    except (OSError, ModelError):
        return None
    return plan if isinstance(plan, dict) and isinstance(plan.get("digest"), str) and "blocks" in plan else None


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a directory of embedding shards"`` when ``directory`` is one (a manifest.json alone is any web project's)."""
    directory = Path(directory)
    if not ((directory / MANIFEST).is_file() or (directory / PLAN).is_file()):
        return None
    if any(SHARD_FILE.fullmatch(n) and not n.endswith(".txt") for n in os.listdir(directory)) or read_plan(directory):
        return SHARDS
    return None


def check_shard(path: Path, rows: int | None = None, dim: int | None = None) -> tuple[int, int]:
    """The shape of the shard ``path``, a 2-D float32 ``.npy`` of exactly its rows; else ModelError (header only read)."""
    check_regular(path, error=ModelError, expected="a shard (.npy)", why="a shard is a .npy file",
                  missing="missing (a shard of the directory; run the same embed again to redo it)")
    from ..vectors.modeldir import npy_header

    try:
        with open(path, "rb") as fh:
            shape, _, dtype = npy_header(fh)
            offset, size = fh.tell(), os.fstat(fh.fileno()).st_size
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


def read_missing(path: Path, rows: int, count: int | None = None) -> list[int]:
    """The lines (1..rows, increasing, ``count`` of them) a shard's list of missing lines names; else ModelError."""
    check_regular(path, error=ModelError, expected="a shard's list of missing lines", why="a shard's list of "
                  "missing lines", missing="missing (the list of lines with nothing to average of a shard)")
    lines: list[int] = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip() and not line.startswith("#"):
                    lines.append(int(line))
                    if not (lines[-2] if len(lines) > 1 else 0) < lines[-1] <= rows:
                        raise ValueError(f"line {lines[-1]} of a shard of {rows} rows, out of order or beyond it")
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:  # int() of a damaged line, UnicodeDecodeError
        raise ModelError(f"{path}: damaged list of missing lines ({short_message(exc, 100)})") from None
    if count is not None and len(lines) != count:
        raise ModelError(f"{path}: damaged list of missing lines (it lists {len(lines):,} lines, the manifest says "
                         f"{count:,})")
    return lines


def is_count(value, low: int | None = 0) -> bool:
    """Whether ``value`` is an int (not a bool) of at least ``low`` (None: any)."""
    return type(value) is int and (low is None or value >= low)


def _plain_name(value) -> bool:
    """A file name inside the shard directory: no folder, no way out of it."""
    return isinstance(value, str) and value not in ("", ".", "..") and not set(value) & {"/", "\\", "\x00"}


def read_manifest(directory) -> dict:
    """``directory/manifest.json``, checked for what a damaged one would make wrong; else ModelError naming it."""
    path = Path(directory) / MANIFEST
    check_regular(path, error=ModelError, expected="a manifest", why="a manifest is a JSON file",
                  missing="missing: not the directory of a finished cluster embed (run the same embed again)")
    manifest = read_json(path, what="damaged or unfinished shard directory")
    if not isinstance(manifest, dict) or not is_count(manifest.get("manifest_version")) \
            or manifest["manifest_version"] != MANIFEST_VERSION:
        raise ModelError(f"{path}: not a manifest of scbow-numba shards (version {MANIFEST_VERSION})")

    def damaged(why: str) -> ModelError:
        return ModelError(f"{path}: damaged manifest ({why})")

    shards, dim, files = manifest.get("shards"), manifest.get("dim"), manifest.get("files")
    if not isinstance(shards, list):
        raise damaged('"shards" is not a list')
    if not (is_count(dim, 1) or (dim is None and not shards)):
        raise damaged(f'"dim" is {dim!r:.40}, not a number of columns')
    if not isinstance(files, dict) or not all(
            isinstance(f, dict) and is_count(f.get("bytes")) and is_count(f.get("mtime_ns"), None) for f in files.values()):
        raise damaged('"files" is missing or not a record of {path: {"bytes", "mtime_ns"}}')
    if manifest.get("model") is not None and not (isinstance(manifest["model"], str)
                                                  and isinstance(manifest.get("model_id"), str)):
        raise damaged('"model" is not a path with its "model_id"')
    names: set = set()
    lines: dict[str, int] = {}  # text -> the rows of its shards listed so far
    for i, s in enumerate(shards):
        where = f"shard {i + 1} of {len(shards)}"
        if not isinstance(s, dict) or not (_plain_name(s.get("shard")) and _plain_name(s.get("missing_file"))):
            raise damaged(f'{where}: "shard" or "missing_file" is not a file name in the directory')
        if {s["shard"], s["missing_file"]} & names:
            raise damaged(f"{where}: {s['shard']!r} is listed twice")
        names.update((s["shard"], s["missing_file"]))
        if not (is_count(s.get("rows")) and is_count(s.get("missing")) and s["missing"] <= s["rows"]):
            raise damaged(f'{where}: "rows" or "missing" is not a count')
        if not isinstance(s.get("file"), str) or s["file"] not in files:
            raise damaged(f'{where}: "file" is not among the manifest\'s files')
        if s["file"] in lines and shards[i - 1]["file"] != s["file"]:
            raise damaged(f"{where}: the shards of {s['file']} are not listed together")
        before = lines.get(s["file"], 0)
        if not (is_count(s.get("first_line"), 1) and s["first_line"] == before + 1):
            raise damaged(f'{where}: "first_line" is {s.get("first_line")!r:.40}, not the line after the {before:,} '
                          "lines of the shards of its text before it")
        lines[s["file"]] = before + s["rows"]
    total = sum(s["rows"] for s in shards)
    if not is_count(manifest.get("rows")) or manifest["rows"] != total:
        raise damaged(f'"rows" is {manifest.get("rows")!r:.40}, its shards hold {total:,}')
    return manifest


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
        return f"{st.st_size:,} bytes now, {recorded['bytes']:,} when it was embedded"
    if st.st_mtime_ns != recorded["mtime_ns"]:
        return "written to since it was embedded"
    return None


class Shards:
    """The shards of a cluster embed, in manifest order, as one read-only array-like of memory-mapped shards.

    ``shards[i]`` and ``shards[lo:hi]`` read only those rows; ``np.asarray(shards)`` reads them all.
    """

    def __init__(self, directory):
        self.directory = Path(directory)
        self.manifest = read_manifest(self.directory)
        dim = self.manifest["dim"] or 0
        self.parts = []
        for s in self.manifest["shards"]:
            shard = self.directory / s["shard"]
            check_shard(shard, s["rows"], dim)
            read_missing(self.directory / s["missing_file"], s["rows"], s["missing"])
            try:
                self.parts.append(np.load(shard, mmap_mode="r", allow_pickle=False))
            except (ValueError, OSError) as exc:
                raise ModelError(f"{shard}: cannot read: {short_message(exc)}") from None
        self.offsets = np.concatenate([[0], np.cumsum([p.shape[0] for p in self.parts])]).astype(np.int64)
        self.shape = (int(self.offsets[-1]), int(dim))
        self.dtype = np.dtype(np.float32)

    def check_model(self) -> None:
        """ModelError if the model the shards were embedded with has changed since (a model gone is skipped)."""
        from ..vectors.modeldir import model_id

        model = self.manifest.get("model")
        if model is not None and os.path.lexists(model) and model_id(model) != self.manifest["model_id"]:
            raise ModelError(f"{model}: changed since these shards ({self.directory}) were embedded; embed again")

    def check_sources(self) -> None:
        """ModelError if a text the shards were embedded from has changed since (a text gone is skipped)."""
        for name, recorded in self.manifest["files"].items():
            why = changed_file(name, recorded)
            if why is not None and why != "it is gone":
                raise ModelError(f"{name}: changed since it was embedded into {self.directory} ({why}); run embed again")

    def texts(self) -> list[tuple[str, int, int]]:
        """``(text file, first row, rows)`` of each text, in order."""
        out: list = []
        for s, row in zip(self.manifest["shards"], self.offsets.tolist()):
            if out and out[-1][0] == s["file"]:
                out[-1][2] += s["rows"]
            else:
                out.append([s["file"], row, s["rows"]])
        return [tuple(t) for t in out]

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key):
        """Row ``i``, or rows ``lo:hi`` (a copy across shards); any other key as NumPy indexes the whole, read."""
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            i = int(key) + (len(self) if key < 0 else 0)
            if not 0 <= i < len(self):
                raise IndexError(f"row {int(key)} of {len(self)}")
            k = int(np.searchsorted(self.offsets, i, side="right")) - 1
            return self.parts[k][i - self.offsets[k]]
        if not (isinstance(key, slice) and key.step in (None, 1)):
            return np.asarray(self)[key]
        start, stop, _ = key.indices(len(self))
        pieces = [part[max(start, lo) - lo : min(stop, hi) - lo]
                  for part, lo, hi in zip(self.parts, self.offsets, self.offsets[1:]) if max(start, lo) < min(stop, hi)]
        if len(pieces) == 1:
            return pieces[0]
        return np.concatenate(pieces) if pieces else np.empty((0, self.shape[1]), self.dtype)

    def __array__(self, dtype=None, copy=None):
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)

    def missing_lines(self) -> list[tuple[str, int]]:
        """``(input file, 1-based line)`` of every line with nothing to average, in order."""
        return [(s["file"], s["first_line"] - 1 + n) for s in self.manifest["shards"]
                for n in read_missing(self.directory / s["missing_file"], s["rows"])]

    def __repr__(self) -> str:
        return f"<Shards {self.directory}: {len(self):,} x {self.shape[1]} float32 in {len(self.parts)} shards>"


def open_shards(directory, check_sources: bool = True) -> Shards:
    """The shards written by a cluster embed into ``directory``, as one memory-mapped array-like.

    ``check_sources``: refuse shards of a text changed since (False: the user knows they still match).
    """
    shards = Shards(directory)
    if check_sources:
        shards.check_sources()
    return shards
