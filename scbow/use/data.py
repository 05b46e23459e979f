"""Where the project's data folder and its STS sets are: one rule for the CLI, the benchmarks and the tests.

The data folder lives beside a source checkout as ``../shared/data`` (never in the repository);
``$SCBOW_STS_DIR`` and ``$SCBOW_STS_DEV`` name the STS test folder and the dev file directly.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import STSError

# the package's folder is scbow/use: the checkout is two levels up
_CHECKOUT = Path(__file__).resolve().parents[2]


def checkout_data_dir() -> Path | None:
    """``../shared/data`` beside the source checkout this package runs from; None when installed."""
    if not (_CHECKOUT / "setup.cfg").is_file():
        return None
    return _CHECKOUT.parent / "shared" / "data"


def data_dir() -> Path:
    """``$SCBOW_DATA``, else the checkout's data folder, else ``../shared/data`` from here."""
    env = os.environ.get("SCBOW_DATA")
    if env:
        return Path(env)
    return checkout_data_dir() or Path("../shared/data")


def data_places(name: str) -> list[Path]:
    """Where the data folder may hold ``name``, in the order they are tried (each once)."""
    places = []
    if os.environ.get("SCBOW_DATA"):
        places.append(Path(os.environ["SCBOW_DATA"]) / name)
    places += [Path("shared/data") / name, Path("../shared/data") / name]
    checkout = checkout_data_dir()
    if checkout is not None:
        places.append(checkout / name)
    return list(dict.fromkeys(places))


def sts_files(paths) -> list[Path]:
    """STS files, a folder standing for the ``*.tsv`` files in it, each file once; STSError for a missing one."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.glob("*.tsv"))
            if not found:
                raise STSError(f"{p}: no *.tsv STS files in this directory")
            files.extend(found)
        elif not p.exists():
            raise STSError(f"{p}: no such STS file")
        else:
            files.append(p)
    from ..text.reader import each_once

    return each_once(files)  # a set named twice would count twice in the means


def default_sts_paths() -> list[Path]:
    """The STS test sets: ``$SCBOW_STS_DIR``, else the data folder's ``sts`` (see :func:`data_places`)."""
    env = os.environ.get("SCBOW_STS_DIR")
    if env and not Path(env).is_dir():
        raise STSError(f"SCBOW_STS_DIR={env}: no such directory")
    candidates = [Path(env)] if env else data_places("sts")
    for c in candidates:
        if c.is_dir():
            files = sorted(c.glob("*.tsv"))
            if not files:
                raise STSError(f"{c}: no *.tsv STS files in the default STS folder")
            return files
    raise STSError("no STS files given and no default STS folder found (looked in "
                   f"{', '.join(map(str, candidates))}); pass files or set SCBOW_STS_DIR")


def default_sts_dev() -> Path:
    """The STS-B dev set: ``$SCBOW_STS_DEV``, else the data folder's ``sts-dev/stsb.dev.tsv``."""
    env = os.environ.get("SCBOW_STS_DEV")
    if env:
        if not Path(env).is_file():
            raise STSError(f"SCBOW_STS_DEV={env}: no such file")
        return Path(env)
    places = [p / "stsb.dev.tsv" for p in data_places("sts-dev")]
    for c in places:
        if c.is_file():
            return c
    raise STSError(f"no STS dev set found (looked for {', '.join(map(str, places))}); "
                   "pass --eval-dev FILE or set SCBOW_STS_DEV")
