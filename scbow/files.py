"""Files the tool writes: where an output goes, what is the tool's own, and writing every
output atomically (:func:`atomic_file` for a file, :func:`atomic_dir` for a directory).

The one rule for what is ours: a temporary is ``.NAME.tmp-PID-RANDOM`` beside its output
NAME; the next write to NAME removes the temporaries of NAME whose writer (PID) is no longer
running, and nothing else. A non-empty directory is replaced only by an output of its kind,
and each kind of output says in its own module what makes a directory one of its kind
(:func:`register_kind`). An output given as a symbolic link is written through it.

Light (standard library only), so the CLI can use it before numpy is imported.
"""

from __future__ import annotations

import errno
import importlib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import ModelError


def named(path: os.PathLike) -> Path:
    """``path``, made absolute when it has no name of its own (``.``, ``..``, ``/``, ``dir/``), so
    that names derived from it (``MODEL.checkpoint``, ``X.missing.txt``) can be built."""
    path = Path(path)
    return Path(os.path.abspath(path)) if path.name in ("", "..") else path


# -- what is one of the tool's own outputs -------------------------------------------------
# Each kind of output (a model, a checkpoint, a sentence index, shards, a corpus cache entry)
# says in its own module what makes a directory one of its kind, and registers that test
# here (register_kind); this module names no file of theirs. scbow/__init__.py names the
# modules that register (KIND_MODULES), so every kind is known whichever module asks first.
KIND_MODULES: tuple = ()
_kinds: list = []


def register_kind(describe):
    """Add ``describe(directory) -> str | None`` (``"a model directory"``, ...) to what :func:`kind_of` asks.

    A kind registered later may build on one registered before (a checkpoint is a model plus
    its state, and its module imports the model's), so the latest is asked first."""
    if describe not in _kinds:
        _kinds.insert(0, describe)
    return describe


def kind_of(directory: os.PathLike) -> str | None:
    """What ``directory`` is when it is one of the tool's own outputs, else None."""
    for name in KIND_MODULES:
        importlib.import_module(name)
    for describe in _kinds:
        try:
            what = describe(Path(directory))
        except OSError:
            what = None
        if what is not None:
            return what
    return None


def refuse_inside_ours(path: os.PathLike, name: str = "-o", error: type[Exception] = ModelError) -> None:
    """Raise ``error`` when ``path`` lies inside one of the tool's outputs (:func:`kind_of`), at any depth.

    The one rule for every command's outputs: nothing is written into a model, a
    checkpoint, a sentence index, a directory of shards or a cache entry, whose files are
    replaced only whole, by the command that writes them, at their own path.
    """
    path = Path(_resolved(Path(path)))
    for parent in path.parents:
        what = kind_of(parent)
        if what is not None:
            raise error(f"{name} {path}: is inside {parent}, {what}; refusing to write into it "
                        "(choose a path outside it)")

def check_output_file(path: Path, example: str, error: type[Exception] = ModelError, name: str = "-o") -> Path:
    """Fail early unless a file can be written at ``path``: not a directory, in a writable one,
    not inside a model or another of the tool's outputs (:func:`refuse_inside_ours`).

    ``example`` is a file name to suggest when ``path`` is a directory; ``name`` the option.
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a directory; give a file name such as {path / example}")
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        raise error(f"{name} {path}: exists and is not a regular file (a pipe or a device); "
                    "refusing to replace it (choose a file name)")
    refuse_inside_ours(path, name, error)
    parent = output_path(path, name, error).parent
    if not parent.is_dir():
        raise error(f"{parent}: no such directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise error(f"{parent}: directory is not writable")
    return path


def _identity(path: Path):
    """``(device, inode)`` of an existing file, else None."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _members(path: Path) -> list[Path]:
    """``path`` itself and, for a directory, the files directly inside it (a model's files)."""
    out = [path]
    if path.is_dir():
        try:
            out.extend(p for p in path.iterdir())
        except OSError:
            pass
    return out


def refuse_overwrite(outputs: dict, inputs, replaces_dirs: bool = False) -> None:
    """Raise ModelError if an output path is one of the inputs, or a file inside an input directory.

    ``outputs`` maps a description ("-o") to a path (or None); ``inputs`` is a dict or a
    list of ``(description, path)`` pairs ("the model", "the corpus").
    Paths are compared resolved (symlinks followed) and by device and inode, so a hard
    link or a second name of the same file is caught too. An output that does not exist
    yet is compared by its resolved path.
    """
    taken: dict = {}  # identity or resolved path -> what it is
    for name, path in (inputs.items() if isinstance(inputs, dict) else inputs):
        if path is None or str(path) == "-":
            continue
        path = Path(path)
        for member in _members(path):
            label = name if member == path else f"{member.name} of {name}"
            ident = _identity(member)
            if ident is not None:
                taken.setdefault(ident, label)
            taken.setdefault(_resolved(member), label)
    for out_name, out in outputs.items():
        if out is None or str(out) == "-":
            continue
        out = Path(out)
        hit = taken.get(_identity(out)) or taken.get(_resolved(out))
        if hit is None and replaces_dirs and out.is_dir():  # a directory output is replaced whole: nothing read may be in it
            inside = Path(_resolved(out))
            hit = next((label for key, label in taken.items()
                        if isinstance(key, str) and Path(key).is_relative_to(inside)), None)
            if hit is not None:
                hit = f"the directory holding {hit}"
        if hit is not None:
            raise ModelError(f"{out_name} {out}: is {hit}; refusing to overwrite an input (choose another path)")


def _resolved(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return str(path.absolute())


def fsync_path(path: Path) -> None:
    """Flush a file, or a directory's entries, to disk (skipped where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory
    finally:
        os.close(fd)


# -- writing an output: a temporary beside it, put in place in one step ------------------
# A temporary is ``.NAME.tmp-PID-RANDOM`` beside the output NAME (beside the link's target
# when NAME is a symbolic link), PID the process writing it. The next write to NAME removes
# the temporaries of NAME whose writer is no longer running, and nothing else.


def _temporary_name(name: str) -> re.Pattern:
    return re.compile(re.escape(f".{name}.tmp-") + r"(\d+)-[0-9a-f]{8}")


def _fresh(target: Path) -> Path:
    """A new temporary's name for the output ``target`` (this process's pid, 8 random hex digits)."""
    return target.parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"


def output_path(path: os.PathLike, name: str = "-o", error: type[Exception] = ModelError) -> Path:
    """Where the output ``path`` is written: ``path`` resolved (a symbolic link is followed to its
    target, which is replaced; the link stays). A link to a place whose folder does not exist is
    refused: only the target itself is ever created through a link, never its folders."""
    path = Path(path)
    target = Path(_resolved(path))
    if path.is_symlink() and not target.parent.is_dir():
        raise error(f"{name} {path}: is a symbolic link to {target}, whose folder does not exist; "
                    "refusing to create it (create the folder, or give another path)")
    return target


def writer_alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (on this machine); one we may not signal runs."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def leftovers(path: os.PathLike) -> list[Path]:
    """The temporaries of the output ``path`` whose writer is no longer running."""
    target = Path(_resolved(Path(path)))
    pattern = _temporary_name(target.name)
    try:
        names = sorted(os.listdir(target.parent))
    except OSError:
        return []
    return [target.parent / n for n in names if (m := pattern.fullmatch(n)) and not writer_alive(int(m.group(1)))]


def being_written(path: os.PathLike) -> bool:
    """Whether a running process is writing the output ``path`` now (a temporary of it whose writer
    runs): between the two renames that replace a directory, ``path`` is absent for a moment."""
    target = Path(_resolved(Path(path)))
    pattern = _temporary_name(target.name)
    try:
        names = os.listdir(target.parent)
    except OSError:
        return False
    return any((m := pattern.fullmatch(n)) and writer_alive(int(m.group(1))) for n in names)


def remove_leftovers(path: os.PathLike) -> list[Path]:
    """Remove :func:`leftovers` of ``path`` (a link among them is unlinked, never followed); returns them."""
    removed = []
    for p in leftovers(path):
        try:
            if stat.S_ISDIR(os.lstat(p).st_mode):
                shutil.rmtree(p)
            else:
                os.unlink(p)
        except FileNotFoundError:
            pass  # another writer removed it first
        except OSError:
            continue
        removed.append(p)
    return removed


def new_temporary(path: os.PathLike, directory: bool = False) -> Path:
    """Create a temporary of the output ``path`` (an empty file, or a directory), with the mode
    the umask gives a new file or directory."""
    target = Path(_resolved(Path(path)))
    while True:
        tmp = _fresh(target)
        try:
            if directory:
                os.mkdir(tmp, 0o777)
            else:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


@contextmanager
def atomic_file(path: os.PathLike, sweep: bool = True) -> Iterator[Path]:
    """A temporary path beside ``path`` to write the new file at.

    When the block ends without an error the file is flushed to disk and renamed over
    ``path`` (its target, for a link) in one step; when it raises, the temporary is removed.
    A reader of ``path`` sees the old file or the new one, complete. The leftovers of
    ``path`` are removed first (``sweep``; a writer of thousands of files into one directory
    passes False: each sweep lists the directory).
    """
    target = output_path(path)
    if sweep:
        remove_leftovers(target)
    tmp = new_temporary(target)
    try:
        yield tmp
        fsync_path(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def foreign(directory: os.PathLike, own_names) -> str | None:
    """``"holds 'x' (and N more), which scbow-numba did not write"`` for what ``directory`` holds
    beyond ``own_names``; None when it holds nothing else."""
    other = sorted(set(os.listdir(directory)) - set(own_names))
    if not other:
        return None
    more = f" and {len(other) - 1:,} more" if len(other) > 1 else ""
    return f"holds {other[0]!r}{more}, which scbow-numba did not write"


def replace_dir(tmp: Path, path: os.PathLike, same_kind=None) -> None:
    """Put the complete directory ``tmp`` at ``path``: a directory there is renamed aside (to a
    temporary's name), ``tmp`` renamed in, and the old one removed. A directory there that is
    not empty is replaced only when it is an output of the same kind (``same_kind(path)``
    returns None; else why not): else FileExistsError (an OSError), and nothing is changed."""
    target = Path(_resolved(Path(path)))
    if not os.path.lexists(target):
        os.rename(tmp, target)
    else:
        if not stat.S_ISDIR(os.lstat(target).st_mode):
            raise FileExistsError(errno.EEXIST, "exists and is not a directory; refusing to replace it", str(path))
        why = (foreign(target, ()) if same_kind is None else same_kind(target)) if os.listdir(target) else None
        if why is not None:
            raise FileExistsError(errno.ENOTEMPTY, f"{why}, so it is not replaced (move that away)", str(path))
        old = _fresh(target)
        os.rename(target, old)
        try:
            os.rename(tmp, target)
        except BaseException:
            os.rename(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
    fsync_path(target.parent)


@contextmanager
def atomic_dir(path: os.PathLike, same_kind=None) -> Iterator[Path]:
    """A temporary directory beside ``path`` to write the new directory in.

    When the block ends without an error it replaces ``path`` (:func:`replace_dir`, with
    ``same_kind``); when it raises, it is removed and ``path`` is left as it was. The
    leftovers of ``path`` are removed first.
    """
    target = output_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(target)
    tmp = new_temporary(target, directory=True)
    try:
        yield tmp
        fsync_path(tmp)
        replace_dir(tmp, target, same_kind)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
