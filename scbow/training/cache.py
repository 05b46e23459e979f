"""The cache of encoded corpora: where it lives, what is in it, and removing only what it wrote.

An entry is a directory named by :func:`cache_key` (24 hex digits) holding the encoded
arrays, ``vocab.txt`` and ``meta.json``; an encoding in progress is ``KEY.tmp-XXXXXXXX``
beside them. Each entry holds a marker file (:data:`MARKER`) written first, before any
other file.

A cache directory may be any folder a user names with ``--cache-dir``, so nothing in it is
removed on trust. An entry is **ours** only when all of these hold (:func:`is_ours`): it
is a real directory (not a symbolic link), its name is a cache key (or a key's temporary
name), and it holds nothing but regular files with the names an encoding writes. Removing
one (:func:`remove_entry`) unlinks those files by name and then the empty directory: never
a recursive delete, so a file that appears in it meanwhile stops the removal instead of
being lost. ``cache --clear`` refuses a directory that holds anything else.

Light (standard library only), so ``scbow-numba cache`` runs without numpy.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from ..errors import CorpusError

CACHE_FORMAT = "1"
MARKER = ".scbow-corpus-cache"
MARKER_TEXT = "scbow-numba corpus cache entry\n"
# every file an encoding writes into its entry
ENTRY_FILES = frozenset({MARKER, "raw.i32", "tokens.npy", "offsets.npy", "sent_doc.npy", "doc_offsets.npy",
                         "vocab.txt", "meta.json"})
_ENTRY_NAME = re.compile(r"[0-9a-f]{24}(\.tmp-[A-Za-z0-9_]{1,32})?")


def default_cache_dir() -> Path:
    env = os.environ.get("SCBOW_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "scbow-numba" / "corpus"


def cache_key(files: list[Path], min_count: int, max_vocab: int, tokenizer_version: str | None = None) -> str:
    """Key of the cached encoding: the files (path, size, mtime) and every setting."""
    if tokenizer_version is None:
        from ..text.tokenize import TOKENIZER_VERSION as tokenizer_version
    h = hashlib.sha256()
    h.update(f"cache{CACHE_FORMAT}:tok{tokenizer_version}:min{min_count}:max{max_vocab}".encode())
    for f in files:
        st = f.stat()
        h.update(f"|{f.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:24]


def mark_entry(directory: Path) -> int:
    """Write the marker into a new entry (first, before anything else is written there) and
    hold its flock; returns the descriptor to close once the entry is in place (:func:`in_use`)."""
    import fcntl

    marker = Path(directory) / MARKER
    marker.write_text(MARKER_TEXT, encoding="ascii")
    fd = os.open(marker, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        pass
    return fd


# An entry written before the marker existed holds exactly these, with our meta.json.
_LEGACY_COMPLETE = ENTRY_FILES - {MARKER, "raw.i32"}


def is_ours(entry: Path) -> bool:
    """True when ``entry`` is provably a cache entry this tool wrote (see the module's docstring):
    a real directory named by a cache key, holding nothing but an encoding's files, and
    either the marker an encoding writes first or (an entry of an earlier version) every
    file of a finished encoding with a meta.json of this cache format."""
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
    if MARKER in names:
        try:
            return (entry / MARKER).read_text(encoding="ascii") == MARKER_TEXT
        except (OSError, UnicodeDecodeError):
            return False
    if names != _LEGACY_COMPLETE or ".tmp-" in entry.name:
        return False
    from ..files import read_json

    try:
        meta = read_json(entry / "meta.json")
    except ValueError:
        return False
    return isinstance(meta, dict) and meta.get("cache_format") == CACHE_FORMAT


def in_use(entry: Path) -> bool:
    """True while an encoding is being written into ``entry`` by a live process (it holds the
    marker's flock until the entry is in place; the kernel drops it when the process dies)."""
    import fcntl

    try:
        fd = os.open(entry / MARKER, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def remove_entry(entry: Path) -> bool:
    """Remove a cache entry if it is ours: its files by name, then the empty directory.

    Returns whether it is gone. Anything not ours is left exactly as it was.
    """
    entry = Path(entry)
    if not is_ours(entry) or in_use(entry):
        return False
    try:
        for name in ENTRY_FILES:
            try:
                os.unlink(entry / name)
            except FileNotFoundError:
                pass
        os.rmdir(entry)  # fails, leaving it, if something else appeared in it meanwhile
    except OSError:
        return False
    return True


def _size(entry: Path) -> int:
    total = 0
    try:
        for child in os.scandir(entry):
            if child.is_file(follow_symlinks=False):
                total += child.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return total


def cache_entries(root: os.PathLike | None = None, foreign: list | None = None) -> list[dict]:
    """The cached corpora under ``root`` (default: :func:`default_cache_dir`), oldest first.

    Each: ``path``, ``bytes`` (on disk), ``files`` (the corpus files it encodes, from its
    meta.json; [] when unreadable), ``modified`` (a POSIX time), ``complete`` (False for a
    temporary directory left by an interrupted encoding). Only entries that are ours
    (:func:`is_ours`) are listed; ``foreign``, when given, receives the paths of
    everything else in ``root``.
    """
    from ..files import read_json

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
        files: list[str] = []
        complete = ".tmp-" not in entry.name and (entry / "meta.json").is_file()
        if complete:
            try:
                files = read_meta_files(read_json(entry / "meta.json"))
            except ValueError:
                files = []
        out.append({"path": str(entry), "bytes": _size(entry), "files": files,
                    "modified": entry.lstat().st_mtime, "complete": complete,
                    "in_use": not complete and in_use(entry)})
    return sorted(out, key=lambda e: e["modified"])


def cache_size(root: os.PathLike | None = None) -> int:
    """Bytes on disk of every cached corpus under ``root``."""
    return sum(e["bytes"] for e in cache_entries(root))


def clear_cache(root: os.PathLike | None = None) -> tuple[int, int]:
    """Remove every cache entry under ``root``: ``(entries removed, bytes freed)``.

    CorpusError, removing nothing, when ``root`` holds anything this tool did not write
    (a user's folder named as the cache by mistake), or is not a directory.
    """
    root = Path(root) if root is not None else default_cache_dir()
    if os.path.lexists(root) and not root.is_dir():
        raise CorpusError(f"{root}: not a directory")
    foreign: list[Path] = []
    entries = cache_entries(root, foreign)
    if foreign:
        names = ", ".join(p.name + ("/" if p.is_dir() else "") for p in foreign[:3])
        more = f" and {len(foreign) - 3:,} more" if len(foreign) > 3 else ""
        raise CorpusError(f"{root}: holds {len(foreign):,} item{'s' if len(foreign) != 1 else ''} scbow-numba "
                          f"did not write ({names}{more}); not a corpus cache, so nothing was removed "
                          "(give the cache's own folder to --cache-dir)")
    removed = freed = 0
    for e in entries:
        if remove_entry(Path(e["path"])):
            removed += 1
            freed += e["bytes"]
    return removed, freed


def read_meta_files(meta) -> list[str]:
    """The ``files`` of a cache entry's meta.json value, whatever its shape ([] when not a list of strings)."""
    listed = meta.get("files") if isinstance(meta, dict) else None
    return [f for f in listed if isinstance(f, str)] if isinstance(listed, list) else []


def describe(entry: dict) -> str:
    """The files column of ``scbow-numba cache``'s listing."""
    if entry.get("in_use"):
        return "(being encoded now by a running process; left alone)"
    return ", ".join(entry["files"]) or ("(an unfinished encoding)" if not entry["complete"]
                                         else "(unreadable meta.json)")
