"""Files: reading those the tool did not just write, refusing outputs that would destroy
inputs, and writing every output atomically (the one home of write-to-a-temporary-then-
rename: :func:`atomic_file` for a file, :func:`atomic_dir` for a directory).

Light (standard library only), so the CLI can use it before numpy is imported.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import CorpusError, ModelError


def read_json(path: os.PathLike, error: type[Exception] = ModelError, what: str = "damaged file") -> object:
    """The JSON value in ``path``; any failure to read or parse it is ``error("PATH: what (why)")``.

    Every exception parsing can raise is caught: invalid UTF-8 or JSON, integers too long
    to convert, and ``RecursionError`` from arrays nested thousands deep.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: {what} (missing)") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise error(f"{path}: {what} (not UTF-8 text)") from None
    return parse_json(text, path, error, what)


def parse_json(text: str, path: os.PathLike, error: type[Exception] = ModelError, what: str = "damaged file") -> object:
    """The JSON value in ``text`` (read from ``path``), failing as :func:`read_json` does."""
    try:
        return json.loads(text)
    except RecursionError:
        raise error(f"{path}: {what} (JSON nested too deep)") from None
    except ValueError as exc:  # JSONDecodeError, and int() of a number with too many digits
        raise error(f"{path}: {what} (not valid JSON: {short_message(exc, 100)})") from None


def short_message(exc: Exception, limit: int = 120) -> str:
    """The first line of an exception's message, cut to ``limit`` characters (for one-line errors)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def named(path: os.PathLike) -> Path:
    """``path``, made absolute when it has no name of its own (``.``, ``..``, ``/``, ``dir/``), so
    that names derived from it (``MODEL.checkpoint``, ``X.missing.txt``) can be built."""
    path = Path(path)
    return Path(os.path.abspath(path)) if path.name in ("", "..") else path


def holds_model(directory: Path) -> str | None:
    """``"a model directory"`` or ``"a training checkpoint"`` when ``directory`` is one, else None.

    Told by the files only a model (vectors.npy, vocab.txt, config.json) or a checkpoint
    (vectors.npy, state.json) holds together.
    """
    directory = Path(directory)
    try:
        if not (directory / "vectors.npy").is_file():
            return None
        if (directory / "state.json").is_file():
            return "a training checkpoint"
        if (directory / "vocab.txt").is_file() and (directory / "config.json").is_file():
            return "a model directory"
    except OSError:
        return None
    return None


def holds_ours(directory: Path) -> str | None:
    """What ``directory`` is when it is one of the tool's own outputs, else None: a model
    directory, a training checkpoint, a sentence index, a directory of embedding shards or
    a corpus cache entry, each told by the files only it holds together."""
    directory = Path(directory)
    what = holds_model(directory)
    if what is not None:
        return what
    try:
        if (directory / "index.json").is_file() and (directory / "vectors.faiss").is_file():
            return "a sentence index"
        if (directory / "manifest.json").is_file() or (directory / "plan.json").is_file():
            # a manifest.json alone is any web project's: shards, or a plan of ours, tell
            shard = re.compile(r"shard-\d{6}\.(npy|json)")
            if any(shard.fullmatch(p.name) for p in directory.iterdir()) or _plan_of_ours(directory / "plan.json"):
                return "a directory of embedding shards"
        if (directory / ".scbow-corpus-cache").is_file():
            return "a corpus cache entry"
    except OSError:
        return None
    return None


def _plan_of_ours(path: Path) -> bool:
    """A cluster embed's plan.json (an object with its digest and blocks), not a user's file of that name."""
    try:
        if not path.is_file() or path.stat().st_size > 1 << 26:
            return False
        plan = read_json(path)
    except (OSError, ValueError):
        return False
    return isinstance(plan, dict) and isinstance(plan.get("digest"), str) and "blocks" in plan


def refuse_inside_ours(path: os.PathLike, name: str = "-o", error: type[Exception] = ModelError) -> None:
    """Raise ``error`` when ``path`` lies inside one of the tool's outputs (:func:`holds_ours`), at any depth.

    The one rule for every command's outputs: nothing is written into a model, a
    checkpoint, a sentence index, a directory of shards or a cache entry, whose files are
    replaced only whole, by the command that writes them, at their own path.
    """
    path = Path(_resolved(Path(path)))
    for parent in path.parents:
        what = holds_ours(parent)
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
    if os.path.lexists(path):
        try:
            regular = stat.S_ISREG(os.stat(path).st_mode)
        except OSError:
            regular = True  # a dangling link: the rename replaces the link itself
        if not regular:
            raise error(f"{name} {path}: exists and is not a regular file (a pipe or a device); "
                        "refusing to replace it (choose a file name)")
    refuse_inside_ours(path, name, error)
    parent = path.resolve().parent
    if not parent.is_dir():
        raise error(f"{parent}: no such directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise error(f"{parent}: directory is not writable")
    return path


def current_umask() -> int:
    """The process's umask, read without changing it where Linux allows (/proc), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def permissions(directory: bool = False) -> int:
    """The mode a new file (0666) or directory (0777) gets under the umask, as ``open`` would give it.

    Temporary files and directories are created private (0600/0700); they get this mode
    just before they are renamed into place, so an output's permissions follow the user's
    umask whatever route wrote it.
    """
    return (0o777 if directory else 0o666) & ~current_umask()


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


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_renameat2 = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directory entries in one step (Linux ``renameat2(RENAME_EXCHANGE)``).

    Returns False where the kernel, the C library or the file system cannot.
    """
    global _renameat2
    if _renameat2 is None:
        _renameat2 = False
        if os.name == "posix":
            try:
                import ctypes

                fn = ctypes.CDLL(None, use_errno=True).renameat2
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _renameat2 = fn
            except (OSError, AttributeError):
                pass
    if not _renameat2:
        return False
    import ctypes

    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def install_dir(tmp: Path, path: Path) -> None:
    """Move the complete directory ``tmp`` to ``path``, replacing any directory there.

    Whenever this process stops, even by SIGKILL or a power cut, ``path`` holds either
    the old directory or the new one, complete: on Linux the two are swapped in one step
    (``renameat2`` with ``RENAME_EXCHANGE``) and the old one, now at ``tmp``, is deleted.
    Where that is not available, the old directory is renamed aside first (and put back
    if the second rename fails); a process killed between the two renames leaves the old
    directory in ``.NAME.old-*/model`` beside ``path``.
    """
    if not os.path.lexists(path):
        os.replace(tmp, path)
    elif _exchange(tmp, path):
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        old = temp_dir_beside(path, "old")
        try:
            os.replace(path, old / "model")
            try:
                os.replace(tmp, path)
            except BaseException:
                os.replace(old / "model", path)
                shutil.rmtree(old, ignore_errors=True)  # now only its marker
                raise
            shutil.rmtree(old, ignore_errors=True)
        finally:
            _release(old)
    fsync_path(path.resolve().parent)


# Temporaries are ``.NAME.TAG-XXXXXXXX`` beside the output NAME (tempfile's 8 random
# characters). The process writing one holds an exclusive flock on it until it is renamed
# into place or removed; the kernel drops the lock when the process dies, even by SIGKILL.
# So a temporary with our name whose lock can be taken is provably ours and provably
# abandoned (:func:`remove_stale_temporaries`); one still locked belongs to a live writer.
_held: dict[str, int] = {}  # temporary path -> the descriptor holding its lock


def _lock(fd: int, block: bool = True) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError:  # a file system without flock: no lock, and nothing provable later
        return False
    return True


def _hold(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    _lock(fd)
    _held[str(path)] = fd


def _release(path: Path) -> None:
    fd = _held.pop(str(path), None)
    if fd is not None:
        os.close(fd)


# Written first into every temporary directory, and taken out just before it is renamed
# into place: a directory of our name pattern is removed whole only when it holds this.
TEMP_MARKER = ".scbow-temporary"


def temp_dir_beside(path: Path, tag: str = "tmp") -> Path:
    """A new private directory ``.NAME.TAG-*`` beside ``path`` (same file system: renames are
    atomic), holding :data:`TEMP_MARKER` and locked by this process until :func:`atomic_dir`
    is done with it (or the process ends)."""
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.{tag}-", dir=path.resolve().parent))
    _hold(tmp)
    (tmp / TEMP_MARKER).touch()
    return tmp


# A temporary file carries this extended attribute from the moment it is created: the
# proof that a file named like one of ours is ours. Where the file system keeps no user
# attributes, temporaries are not marked, and a killed writer's stay (they are never
# removed on the name alone).
TEMP_XATTR = "user.scbow-numba.temporary"


def _mark_file(fd: int) -> None:
    try:
        os.setxattr(fd, TEMP_XATTR, b"1")
    except (OSError, AttributeError):
        pass


def _unmark_file(p: Path) -> None:
    try:
        os.removexattr(p, TEMP_XATTR, follow_symlinks=False)
    except (OSError, AttributeError):
        pass


def _marked_file(p: Path) -> bool:
    try:
        return os.getxattr(p, TEMP_XATTR, follow_symlinks=False) == b"1"
    except (OSError, AttributeError):
        return False


def _remove_temporary(p: Path) -> bool:
    """Remove one stale temporary: a file carrying our attribute; a directory holding our
    marker (whole); an empty directory. Anything else is left alone (returns False)."""
    mode = os.lstat(p).st_mode
    if not stat.S_ISDIR(mode):
        if not _marked_file(p):
            return False  # our name, but nothing proves we wrote it: left alone
        os.unlink(p)
        return True
    marker = p / TEMP_MARKER
    try:
        marked = stat.S_ISREG(os.lstat(marker).st_mode)
    except OSError:
        marked = False
    if marked:
        shutil.rmtree(p)
    else:
        os.rmdir(p)  # a probe, or a directory killed between taking the marker out and the rename:
        # removed only when empty; anything in it may not be ours
    return True


def stale_temporaries(path: os.PathLike, tags=("tmp", "probe")) -> list[Path]:
    """The temporaries beside ``path`` that a killed process of ours left: our name pattern,
    not a symbolic link, and no live process holding their lock."""
    path = Path(path)
    parent = Path(_resolved(path)).parent
    pattern = re.compile(re.escape(f".{path.name}.") + f"({'|'.join(map(re.escape, tags))})" + r"-[a-z0-9_]{8}")
    try:
        candidates = [p for p in parent.iterdir() if pattern.fullmatch(p.name)]
    except OSError:
        return []
    stale = []
    for p in candidates:
        if str(p) in _held:
            continue
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))  # a symbolic link fails here
        except OSError:
            continue
        try:
            if _lock(fd, block=False):
                stale.append(p)
        finally:
            os.close(fd)
    return stale


def remove_stale_temporaries(path: os.PathLike, tags=("tmp", "probe")) -> int:
    """Remove :func:`stale_temporaries` of ``path``; returns how many were removed."""
    n = 0
    for p in stale_temporaries(path, tags):
        try:
            n += _remove_temporary(p)
        except OSError:
            pass
    return n


@contextmanager
def atomic_file(path: os.PathLike, sweep: bool = True) -> Iterator[Path]:
    """A temporary path beside ``path`` to write the new file at.

    When the block ends without an error the file is flushed to disk, given the mode the
    umask gives a new file, and renamed over ``path`` in one step; when it raises, the
    temporary file is removed. A reader of ``path`` sees the old file or the new one,
    complete, never part of one, whenever this process stops. Temporaries of ``path``
    left by a killed process are removed first (``sweep``; a writer of thousands of files
    into one directory, which sweeps its own leftovers once, passes False: each sweep
    lists the directory).
    """
    path = Path(path)
    if sweep:
        remove_stale_temporaries(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.resolve().parent)
    _mark_file(fd)
    _lock(fd)
    tmp = Path(name)
    try:
        yield tmp
        fsync_path(tmp)
        os.chmod(tmp, permissions())
        _unmark_file(tmp)  # the finished output is no temporary: a copy of it proves nothing
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.close(fd)


def refuse_foreign(path: Path, own_names) -> None:
    """FileExistsError (an OSError) when the directory ``path`` holds anything but ``own_names``:
    replacing it would throw away a file the tool did not write."""
    if not path.is_dir() or path.is_symlink():
        return
    foreign = sorted(n for n in os.listdir(path) if n not in own_names)
    if foreign:
        more = f" and {len(foreign) - 1:,} more" if len(foreign) > 1 else ""
        raise FileExistsError(errno.ENOTEMPTY, f"holds {foreign[0]!r}{more}, which scbow-numba did not write, so "
                              "it is not replaced (move that away)", str(path))


@contextmanager
def atomic_dir(path: os.PathLike, own_names=None) -> Iterator[Path]:
    """A temporary directory beside ``path`` to write the new directory in.

    When the block ends without an error it replaces ``path`` (:func:`install_dir`);
    when it raises, it is removed and ``path`` is left as it was. Temporaries of ``path``
    left by a killed process are removed first. With ``own_names``, a directory at ``path``
    holding anything else (a user's file) is not replaced: FileExistsError.
    """
    path = Path(path)
    path.resolve().parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    tmp = temp_dir_beside(path)
    try:
        yield tmp
        os.unlink(tmp / TEMP_MARKER)
        if own_names is not None:
            refuse_foreign(path, set(own_names) | set(os.listdir(tmp)))
        install_dir(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        _release(tmp)


def read_range(path: os.PathLike, start: int, stop: int) -> bytes:
    """Bytes ``start:stop`` of a file; CorpusError("PATH: cannot read: ...") when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            return fh.read(stop - start)
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None
