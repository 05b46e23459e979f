"""The cache of encoded corpora: where it lives, what is in it, and removing only what it wrote.

An entry is a directory named by :func:`cache_key` (24 hex digits) holding the encoded arrays,
``vocab.txt``, ``meta.json`` and :data:`MARKER` (written first); an encoding in progress is a
temporary ``.KEY.tmp-PID-RANDOM`` beside them, renamed to ``KEY`` when complete. ``--cache-dir`` may
name any folder, so what is an entry is one rule (:func:`is_ours`): a real directory the cache named
and wrote (the marker, and only an encoding's files); removing one unlinks those files by name, then
the empty directory. An encoding whose process still runs is left alone. Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import time
from pathlib import Path

from ..errors import CorpusError
from ..files import new_temporary, remove_leftovers, writer_alive
from ..outputs import register_kind
from ..progress import listed, megabytes, plural
from ..reading import read_json
from ..text.reader import DEFAULT_ENCODING
from ..text.tokenize import TOKENIZER_VERSION

CACHE_FORMAT = "1"
MARKER = ".scbow-corpus-cache"
MARKER_TEXT = "scbow-numba corpus cache entry\n"
# every file an encoding writes into its entry
ENTRY_FILES = frozenset({MARKER, "raw.i32", "tokens.npy", "offsets.npy", "sent_doc.npy", "doc_offsets.npy",
                         "vocab.txt", "meta.json"})
# a key, or the temporary of one (its writer's pid)
_ENTRY_NAME = re.compile(r"[0-9a-f]{24}|\.[0-9a-f]{24}\.tmp-(\d+)-[0-9a-f]{8}")


def default_cache_dir() -> Path:
    env = os.environ.get("SCBOW_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "scbow-numba" / "corpus"


def cache_key(files: list[Path], min_count: int, max_vocab: int, encoding: str = DEFAULT_ENCODING) -> str:
    """Key of the cached encoding: the files (path, size, mtime) and every setting (the encoding only when
    not the default: a UTF-8 corpus keeps its key)."""
    h = hashlib.sha256()
    h.update(f"cache{CACHE_FORMAT}:tok{TOKENIZER_VERSION}:min{min_count}:max{max_vocab}".encode())
    if encoding != DEFAULT_ENCODING:
        h.update(f":enc{encoding}".encode())
    for f in files:
        st = f.stat()
        h.update(f"|{f.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:24]


def new_entry(target: Path) -> Path:
    """A new temporary entry of the key ``target`` (its marker written), to encode into and rename to
    ``target``; the entries of that key left by a killed encoding are removed first."""
    remove_leftovers(target)
    work = new_temporary(target, directory=True)
    (work / MARKER).write_text(MARKER_TEXT, encoding="ascii")
    return work


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a corpus cache entry"`` when ``directory`` is one (:func:`scbow.outputs.kind_of`)."""
    return "a corpus cache entry" if (Path(directory) / MARKER).is_file() else None


def is_ours(entry: Path) -> bool:
    """True when ``entry`` is a cache entry this tool wrote (see the module's docstring)."""
    entry = Path(entry)
    try:
        if not stat.S_ISDIR(os.lstat(entry).st_mode) or not _ENTRY_NAME.fullmatch(entry.name):
            return False
        names = set()
        for child in os.scandir(entry):
            if child.name not in ENTRY_FILES or not child.is_file(follow_symlinks=False):
                return False
            names.add(child.name)
    except OSError:
        return False
    return MARKER in names


def in_use(entry: Path) -> bool:
    """True while an encoding is being written into ``entry`` (a key's temporary) by a running process."""
    m = _ENTRY_NAME.fullmatch(Path(entry).name)
    return bool(m and m.group(1)) and writer_alive(int(m.group(1)))


def remove_entry(entry: Path, strict: bool = False) -> bool:
    """Remove a cache entry if it is ours (anything else is left as it was); returns whether it is gone.

    ``strict``: an OSError while removing (a read-only cache) is raised instead of returning False.
    """
    entry = Path(entry)
    if not is_ours(entry) or in_use(entry):
        return False
    try:
        for name in ENTRY_FILES:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry / name)
        os.rmdir(entry)  # fails, leaving it, if something else appeared in it meanwhile
    except OSError:
        if strict:
            raise
        return False
    return True


def _size(entry: Path) -> int:
    total = 0
    with contextlib.suppress(OSError):  # what could be read of it
        for child in os.scandir(entry):
            if child.is_file(follow_symlinks=False):
                total += child.stat(follow_symlinks=False).st_size
    return total


def cache_entries(root: os.PathLike | None = None, foreign: list | None = None) -> list[dict]:
    """The cached corpora under ``root`` (default: :func:`default_cache_dir`) that are ours, oldest first.

    Each: ``path``, ``bytes`` (on disk), ``files`` (from its meta.json; [] when unreadable), ``modified``
    (a POSIX time), ``complete`` (False for an unfinished encoding), ``in_use``. ``foreign``, when given,
    receives the paths of everything else in ``root``.
    """
    root = Path(root) if root is not None else default_cache_dir()
    out = []
    if os.path.lexists(root) and not root.is_dir():
        raise CorpusError(f"{root}: not a directory (a corpus cache is a folder)")
    if not root.is_dir():
        return out
    try:
        children = sorted(root.iterdir())
    except OSError as exc:
        raise CorpusError(f"{root}: cannot read: {exc.strerror or exc}") from None
    for entry in children:
        if not is_ours(entry):
            if foreign is not None:
                foreign.append(entry)
            continue
        complete = ".tmp-" not in entry.name and (entry / "meta.json").is_file()
        try:
            meta = read_json(entry / "meta.json") if complete else None
        except ValueError:
            meta = None
        listed = meta.get("files") if isinstance(meta, dict) else None
        files = [f for f in listed if isinstance(f, str)] if isinstance(listed, list) else []
        out.append({"path": str(entry), "bytes": _size(entry), "files": files,
                    "modified": entry.lstat().st_mtime, "complete": complete,
                    "in_use": not complete and in_use(entry)})
    return sorted(out, key=lambda e: e["modified"])


def clear_cache(root: os.PathLike | None = None) -> tuple[int, int]:
    """Remove every cache entry under ``root``: ``(entries removed, bytes freed)``; CorpusError, removing
    nothing, when ``root`` holds anything this tool did not write or is not a directory."""
    root = Path(root) if root is not None else default_cache_dir()
    foreign: list[Path] = []
    entries = cache_entries(root, foreign)
    if foreign:
        names = listed(p.name + ("/" if p.is_dir() else "") for p in foreign)
        raise CorpusError(f"{root}: holds {plural(len(foreign), 'item')} scbow-numba did not write ({names}); not a "
                          "corpus cache, so nothing was removed (give the cache's own folder to --cache-dir)")
    removed = freed = 0
    for e in entries:
        try:
            gone = remove_entry(Path(e["path"]), strict=True)
        except OSError as exc:  # a read-only cache: said, not counted as "removed 0"
            raise CorpusError(f"cannot remove the cached corpus {e['path']}: {exc.strerror or exc} (removed "
                              f"{removed:,} of {len(entries):,} before it)") from None
        if gone:
            removed += 1
            freed += e["bytes"]
    return removed, freed


def describe(entry: dict) -> str:
    """The files column of ``scbow-numba cache``'s listing."""
    if entry.get("in_use"):
        return "(being encoded now by a running process; left alone)"
    return ", ".join(entry["files"]) or ("(an unfinished encoding)" if not entry["complete"]
                                         else "(unreadable meta.json)")


def clear_listing(root: Path) -> str:
    """Clear the corpus cache ``root`` (:func:`clear_cache`); the line saying what went."""
    removed, freed = clear_cache(root)
    return f"removed {plural(removed, 'cached corpus', 'cached corpora')} ({megabytes(freed)}) from {root}"


def cache_listing(root: Path) -> tuple[list[str], list[str]]:
    """``(rows, notes)`` of the corpus cache ``root``: a row per entry, then the total and what else is there."""
    foreign: list[Path] = []
    entries = cache_entries(root, foreign)
    rows = [f"{megabytes(e['bytes']):>10}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(e['modified']))}  "
            f"{Path(e['path']).name}  {describe(e)}" for e in entries]
    total = sum(e["bytes"] for e in entries)
    notes = [f"{plural(len(entries), 'cached corpus', 'cached corpora')}, {megabytes(total)} in {root}"]
    if foreign:
        notes.append(f"note: {root} also holds {plural(len(foreign), 'item')} scbow-numba did not write "
                     f"({', '.join(p.name for p in foreign[:3])}{', ...' if len(foreign) > 3 else ''}); "
                     "they are not listed and never removed")
    return rows, notes
