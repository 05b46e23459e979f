"""Writing every output atomically (:func:`atomic_file`, :func:`atomic_dir`), and which temporaries
are the tool's own; what an output may be and where it may go is :mod:`scbow.outputs`.

A temporary is ``.NAME.tmp-PID-RANDOM`` beside its output NAME (beside a symbolic link's target),
PID its writer's; the next write to NAME removes the temporaries of NAME whose writer is no longer
running, and nothing else. A non-empty directory is replaced only by an output of its kind
(``same_kind``). Standard library only, so the CLI can use it before numpy is imported.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import ModelError
from .progress import listed


def resolved(path: Path) -> str:
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


def _fresh(target: Path) -> Path:
    """A new temporary's name for the output ``target``."""
    return target.parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"


def exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` in one step (Linux ``renameat2`` with ``RENAME_EXCHANGE``), so a
    reader or a kill never finds neither; False where the system cannot (then nothing is changed)."""
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_cwd, rename_exchange = -100, 2
    if renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):  # an old kernel or file system
        return False
    raise OSError(code, os.strerror(code), str(b))


def output_path(path: os.PathLike, name: str = "-o", error: type[Exception] = ModelError) -> Path:
    """Where the output ``path`` is written: ``path`` resolved (a link's target is replaced, the link
    stays). Only the target itself is ever created through a link, never its folders."""
    path = Path(path)
    target = Path(resolved(path))
    if path.is_symlink() and not target.parent.is_dir():
        raise error(f"{name} {path}: is a symbolic link to {target}, whose folder does not exist; "
                    "refusing to create it (create the folder, or give another path)")
    return target


def writer_alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (on this machine); one we may not signal runs."""
    if pid > 0:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            pass  # not ours to signal: it runs
    return True


def _temporaries(path: os.PathLike) -> list[tuple[Path, bool]]:
    """The temporaries of the output ``path``, sorted, each with whether its writer runs."""
    target = Path(resolved(Path(path)))
    pattern = re.compile(re.escape(f".{target.name}.tmp-") + r"(\d+)-[0-9a-f]{8}")
    try:
        names = sorted(os.listdir(target.parent))
    except OSError:
        return []
    return [(target.parent / n, writer_alive(int(m.group(1)))) for n in names if (m := pattern.fullmatch(n))]


def leftovers(path: os.PathLike) -> list[Path]:
    """The temporaries of the output ``path`` whose writer is no longer running."""
    return [p for p, alive in _temporaries(path) if not alive]


def being_written(path: os.PathLike) -> bool:
    """Whether a running process is writing the output ``path`` now: between the two renames that
    replace a directory, ``path`` is absent for a moment."""
    return any(alive for _, alive in _temporaries(path))


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
    """Create a temporary of the output ``path`` (an empty file, or a directory), mode as the umask gives."""
    target = Path(resolved(Path(path)))
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
    """A temporary path beside ``path`` to write the new file at: flushed and renamed over ``path`` (its
    target, for a link) when the block ends without an error, removed when it raises. ``sweep``: remove
    the leftovers of ``path`` first (False for thousands of files in one directory: each sweep lists it)."""
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
    return f"holds {listed(map(repr, other), 1)}, which scbow-numba did not write"


@contextmanager
def atomic_dir(path: os.PathLike, same_kind=None) -> Iterator[Path]:
    """A temporary directory beside ``path`` to write the new one in; removed when the block raises.
    When it ends without an error, the new one takes the place of the directory at ``path`` in one
    step (:func:`exchange`; elsewhere than Linux, two renames) and the old one is removed. A non-empty
    one is replaced only when ``same_kind(path)`` returns None (else why not): else FileExistsError,
    and nothing is changed."""
    target = output_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(target)
    tmp = new_temporary(target, directory=True)
    try:
        yield tmp
        fsync_path(tmp)
        if not os.path.lexists(target):
            os.rename(tmp, target)
        else:
            if not stat.S_ISDIR(os.lstat(target).st_mode):
                raise FileExistsError(errno.EEXIST, "exists and is not a directory; refusing to replace it", str(target))
            why = (foreign(target, ()) if same_kind is None else same_kind(target)) if os.listdir(target) else None
            if why is not None:
                raise FileExistsError(errno.ENOTEMPTY, f"{why}, so it is not replaced (move that away)", str(target))
            if exchange(tmp, target):  # one step: the temporary holds the old directory now
                shutil.rmtree(tmp, ignore_errors=True)
            else:  # two renames, with a moment between them where nothing is at the path
                old = _fresh(target)
                os.rename(target, old)
                try:
                    os.rename(tmp, target)
                except BaseException:
                    os.rename(old, target)
                    raise
                shutil.rmtree(old, ignore_errors=True)
        fsync_path(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
