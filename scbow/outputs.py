"""What the tool's outputs are, and the checks before one is written (how it is written: :mod:`scbow.files`).

Each kind of output (a model, a checkpoint, an index, shards, a cache entry, an exported folder) says in
its own module what makes a directory one of its kind (:func:`register_kind`); nothing is written inside
one (:func:`refuse_inside_ours`); a file must be writable (:func:`check_output_file`) and overwrite no
input (:func:`refuse_overwrite`). Standard library only, so the CLI can use it before numpy is imported.
"""

from __future__ import annotations

import importlib
import os
import stat
from pathlib import Path

from .errors import ModelError
from .files import output_path, resolved

# set by scbow/__init__.py: the modules that register a kind, imported before the first question
KIND_MODULES: tuple = ()
_kinds: list = []


def register_kind(describe):
    """Ask ``describe(directory) -> str | None`` (``"a model directory"``, ...) in :func:`kind_of` before the
    kinds registered earlier: a kind may build on one of them (a checkpoint is a model plus its state)."""
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
    """Raise ``error`` when ``path`` lies inside one of the tool's outputs, at any depth: those are
    replaced only whole, by the command that writes them, at their own path."""
    path = Path(resolved(Path(path)))
    for parent in path.parents:
        what = kind_of(parent)
        if what is not None:
            raise error(f"{name} {path}: is inside {parent}, {what}; refusing to write into it "
                        "(choose a path outside it)")


def refuse_other_kind(path: os.PathLike, own: str, refusal: str) -> None:
    """ModelError when ``-o path`` is an output of the tool other than ``own`` (``refusal``: what is
    refused, and what to do), or lies inside one."""
    what = kind_of(Path(path))
    if what is not None and what != own:
        raise ModelError(f"-o {path}: is {what}; refusing to {refusal}")
    refuse_inside_ours(path)


def named(path: os.PathLike) -> Path:
    """``path``, made absolute when it has no name of its own (``.``, ``..``, ``/``, ``dir/``), so
    that names derived from it (``MODEL.checkpoint``, ``X.missing.txt``) can be built."""
    path = Path(path)
    return Path(os.path.abspath(path)) if path.name in ("", "..") else path


def check_output_file(path: Path, example: str, error: type[Exception] = ModelError, name: str = "-o") -> Path:
    """Fail early unless a file can be written at ``path``: not a directory (``example``: a file name
    to suggest), not a pipe or a device, in a writable directory, not inside one of the tool's outputs."""
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


def file_identity(path: os.PathLike):
    """``(device, inode)`` of an existing file (what makes two paths, or links, one file), else None."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def refuse_overwrite(outputs: dict, inputs, replaces_dirs: bool = False, reads_folders: bool = False,
                     error: type[Exception] = ModelError) -> None:
    """``error`` if an output (``{description: path or None}``) is one of the ``inputs`` (a dict, or
    ``(description, path)`` pairs) or a file directly inside an input directory, by resolved path and
    by device and inode (hard links too). ``reads_folders`` (prepare reads below input folders): nor
    anywhere inside one that is not ours, unless below a hidden name. ``replaces_dirs``: a directory
    output is replaced whole, so no input may lie inside it.
    """
    taken: dict = {}  # identity or resolved path -> what it is
    folders = []  # (what, resolved path) of the input directories that are not outputs of ours
    for name, path in (inputs.items() if isinstance(inputs, dict) else inputs):
        if path is None or str(path) == "-":
            continue
        path = Path(path)
        members = [path]
        if path.is_dir():
            if reads_folders and kind_of(path) is None:
                folders.append((name, Path(resolved(path))))
            try:
                # what a folder stands for: its files, hidden ones aside (a folder in it is not read as one)
                members.extend(m for m in path.iterdir() if m.is_file() and not m.name.startswith("."))
            except OSError:
                pass
        for member in members:
            label = name if member == path else f"{member.name} of {name}"
            ident = file_identity(member)
            if ident is not None:
                taken.setdefault(ident, label)
            taken.setdefault(resolved(member), label)
    for out_name, out in outputs.items():
        if out is None or str(out) == "-":
            continue
        out = Path(out)
        hit = taken.get(file_identity(out)) or taken.get(resolved(out))
        if hit is None and replaces_dirs and out.is_dir():
            inside = Path(resolved(out))
            hit = next((label for key, label in taken.items()
                        if isinstance(key, str) and Path(key).is_relative_to(inside)), None)
            if hit is not None:
                hit = f"the directory holding {hit}"
        if hit is not None:
            raise error(f"{out_name} {out}: is {hit}; refusing to overwrite an input (choose another path)")
        where = Path(resolved(out))
        for name, folder in folders:  # the next run would read it as one of the inputs (not below a hidden name)
            below = where.relative_to(folder).parts if where.is_relative_to(folder) else ()
            if below and not any(part.startswith(".") for part in below):
                raise error(f"{out_name} {out}: is inside {name} ({folder}), which is read as input; refusing "
                            "to write into it (choose a path outside it)")
