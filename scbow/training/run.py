"""What ``scbow-numba train`` runs: its outputs checked (:func:`refuse_cache_in_output`), the run
(:func:`scbow.training.session.train_session`, with the learning curve of ``--eval-every`` and
``--init-vectors``), and nothing left behind by a failed one (:func:`train_into`); and what
``scbow-numba cache`` lists or clears (:func:`cache_listing`, :func:`clear_listing`)."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, ModelError


def refuse_cache_in_output(cache_dir, output) -> None:
    """ModelError when the corpus cache is the model directory ``output`` or its checkpoint, or lies
    inside either: the cache it writes would make ``output`` a folder that holds no model."""
    from ..files import resolved
    from .cache import default_cache_dir
    from .checkpoint import checkpoint_dir

    name = "--cache-dir" if cache_dir is not None else "the corpus cache"
    cache = Path(resolved(Path(cache_dir if cache_dir is not None else default_cache_dir())))
    for what, place in (("-o", output), ("the checkpoint of -o", checkpoint_dir(output))):
        place = Path(resolved(Path(place)))
        if cache == place or place in cache.parents:
            raise ModelError(f"{name} {cache}: is {'' if cache == place else 'inside '}{what} {place}; "
                             "give the corpus cache a folder of its own, outside the model")


def train_into(output: Path, corpus, config, *, cache_dir=None, no_cache: bool = False, quiet: bool = False,
               init_vectors=None, checkpoint_every=None, resume: bool = False, eval_every=None, eval_dev=None,
               eval_sets=(), eval_test: bool = False, say=print) -> list[str]:
    """Train on ``corpus`` into the model directory ``output`` as ``train`` does, after every check of
    its paths; returns the summary lines (none when ``quiet``). ``say`` is given the lines printed
    on the way. A failed run leaves nothing behind, not even the directories made for its output."""
    from ..outputs import refuse_overwrite
    from .checkpoint import checkpoint_dir

    refuse_overwrite({"-o": output, "its checkpoint": checkpoint_dir(output)},
                     [*(("the corpus", p) for p in corpus), ("--init-vectors", init_vectors),
                      ("--eval-dev", eval_dev), *(("--eval-sets", p) for p in eval_sets)], replaces_dirs=True)
    if not no_cache:
        refuse_cache_in_output(cache_dir, output)
    curve = None
    if eval_every is not None:
        from .curve import curve_hook

        curve = curve_hook(eval_every, eval_dev, eval_sets, eval_test, config)
    elif eval_dev is not None or eval_sets or eval_test:
        raise ConfigError("--eval-dev, --eval-sets and --eval-test need --eval-every N")
    made = [p for p in (output.resolve().parent, *output.resolve().parent.parents) if not p.exists()]
    try:
        return _run(output, corpus, config, curve, init_vectors, checkpoint_every, resume, quiet, cache_dir, no_cache,
                    say)
    except BaseException:
        for p in made:  # deepest first
            try:
                p.rmdir()
            except OSError:
                break
        raise


def _run(output, corpus, config, curve, init_vectors, checkpoint_every, resume, quiet, cache_dir, no_cache, say):
    from ..vectors.modeldir import check_output_dir
    from .pretrained import pretrained_start
    from .session import summary_lines, train_session

    output = check_output_dir(output)
    init, init_info = pretrained_start(init_vectors, config, note=None if quiet else say)

    def before_save(result):
        if curve is not None:
            curve.attach(result.model)

    # lock, checkpoints, signals and the final save: scbow.training.session
    result = train_session(list(corpus), config, output, checkpoint_every=checkpoint_every, resume=resume,
                           quiet=quiet, cache_dir=cache_dir, use_cache=not no_cache, init=init,
                           init_vectors=init_info or None, before_save=before_save, warn=say,
                           hooks=[curve] if curve is not None else [])
    return [] if quiet else list(summary_lines(result, config, output, curve))


def clear_listing(root: Path) -> str:
    """Clear the corpus cache ``root`` (:func:`scbow.training.cache.clear_cache`); the line saying what went."""
    from ..progress import megabytes, plural
    from .cache import clear_cache

    removed, freed = clear_cache(root)
    return f"removed {plural(removed, 'cached corpus', 'cached corpora')} ({megabytes(freed)}) from {root}"


def cache_listing(root: Path) -> tuple[list[str], list[str]]:
    """``(rows, notes)`` of the corpus cache ``root``: a row per entry (size, date, name, what it holds),
    then the total and what else the folder holds (never listed, never removed)."""
    import time

    from ..progress import megabytes, plural
    from .cache import cache_entries, describe

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
