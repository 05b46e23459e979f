"""One training run into a model directory, safe against interrupts, faults and rivals.

:func:`train_session` (what ``scbow-numba train`` runs) wraps :func:`scbow.training.trainer.train`
in a ``flock`` on ``OUTPUT.lock`` (a rival trainer is refused naming the owner's pid; the kernel
drops the lock when its owner dies), SIGINT/SIGTERM handling (a checkpoint, then
:class:`~scbow.errors.Interrupted`), periodic checkpoints, ``--resume`` (an existing checkpoint is
never overwritten without it) and divergence errors naming the last good checkpoint. The contract
is docs/robustness.md's ("Ctrl-C or SIGTERM", "Checkpoints", "Disk full", "NaN or inf", "Two trainers
into one output").
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import threading
import time
from pathlib import Path

from ..config import TrainConfig
from ..errors import CheckpointError, ConfigError, Interrupted, ModelError, TrainingError
from ..files import remove_leftovers, resolved
from ..kernels import resolve_threads
from ..outputs import refuse_overwrite
from ..progress import megabytes, note, plural
from ..reading import read_json
from ..text.reader import DEFAULT_ENCODING, invalid_utf8_warning
from ..use.describe import ROSE_FIRST, word_loss_text
from ..vectors.modeldir import CURVE_FILE, check_output_dir, default_model_dir, save_model
from . import checkpoint
from .backends.cuda import require_cuda
from .cache import cache_entries, default_cache_dir
from .corpus import read_corpus
from .curve import curve_hook
from .hooks import Hook
from .trainer import train

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None


def lock_path(output: Path) -> Path:
    """``OUTPUT.lock`` beside the output, its links resolved: every name of one output has one lock."""
    output = Path(resolved(Path(output)))
    return output.with_name(output.name + ".lock")


class OutputLock:
    """An exclusive ``flock`` on ``OUTPUT.lock``, as a context manager.

    The kernel releases it however the process exits, so there are no stale locks, only lock files to
    reuse. Release removes the file; a rival that opened it just before checks, once locked, that its
    file is still the one at the path.
    """

    def __init__(self, output: Path):
        self.output = Path(output)
        self.path = lock_path(self.output)
        self.fd: int | None = None

    def acquire(self) -> None:
        if fcntl is None:  # pragma: no cover
            return
        while True:
            self._refuse_a_stranger()
            try:  # O_NOFOLLOW: a symbolic link at the lock's name is never followed to a user's file
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    self._refuse_a_stranger(link=True)
                raise ModelError(f"{self.path}: cannot create lock file: {exc.strerror}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                try:
                    owner = os.read(fd, 64).decode("ascii", "replace").strip() or "?"
                finally:
                    os.close(fd)
                raise ModelError(
                    f"{self.output}: another scbow-numba process (pid {owner}) is training into it "
                    f"(lock {self.path.name}); wait for it to finish or choose another output"
                ) from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the previous owner removed the file while we waited: try again
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd

    def _refuse_a_stranger(self, link: bool = False) -> None:
        """ModelError (touching nothing) when a link, a directory or a file holding anything but a pid
        is at the lock's name."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return  # nothing there, or the open below reports it
        # a lock of ours is a small regular file with one name (a hard link is a user's file too)
        ours = not link and stat.S_ISREG(st.st_mode) and st.st_size <= 32 and st.st_nlink == 1
        if ours:
            try:
                with open(self.path, "rb") as fh:
                    ours = fh.read(64).strip().isdigit() or st.st_size == 0
            except OSError:
                ours = False
        if not ours:
            raise ModelError(f"{self.path}: is there and is not a lock file of scbow-numba (a process id), so it "
                             f"is not touched; move it away or choose another output than {self.output}")

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self.fd)  # closing drops the flock
        self.fd = None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()


class SignalGuard:
    """Turns SIGINT and SIGTERM into :class:`Interrupted` at safe points (main thread only).

    ``mode``: ``"raise"`` at once (nothing to save yet); ``"flag"`` for the checkpoint hook (a second
    signal raises at once); ``"defer"`` only records (the model is being saved). ``signum``: the first.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.mode = "raise"
        self.signum: int | None = None
        self._previous: dict = {}

    def _handle(self, signum, frame):
        first = self.signum is None
        if first:
            self.signum = signum
        if self.mode == "raise" or (self.mode == "flag" and not first):
            raise Interrupted(None, signum)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                if signal.getsignal(s) is not signal.SIG_IGN:  # ignored on entry (nohup, '&' in a script): left so
                    self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class CheckpointHook(Hook):
    """Writes a checkpoint every ``every`` (``checkpoint.Every``) and on a signal, with the other ``hooks``'
    :meth:`~scbow.training.hooks.Hook.checkpoint_info` (the curve so far)."""

    def __init__(self, writer, every, guard, warn, hooks, start_steps: int = 0):
        self.writer, self.every, self.guard, self.warn, self.hooks = writer, every, guard, warn, hooks
        self.schedule(start_steps)

    def schedule(self, steps: int) -> None:
        """The next checkpoint: ``every.seconds`` from now, or at the next multiple of ``every.examples`` steps."""
        self.last_time = time.monotonic()
        self.next_steps = (steps // self.every.examples + 1) * self.every.examples if self.every and self.every.examples else None

    def save(self, state, matrices) -> None:
        self.writer.write(state, matrices.all(), info={k: v for h in self.hooks for k, v in h.checkpoint_info().items()})

    def after_batch(self, state, matrices) -> None:
        writer, every = self.writer, self.every
        if self.guard.signum is not None:
            name = signal_name(self.guard.signum)
            try:
                self.save(state, matrices)
            except OSError as exc:
                kept = (f"the checkpoint at {writer.last_at} in {writer.path} is kept"
                        if writer.last_at is not None else "nothing was written")
                raise Interrupted(f"interrupted ({name}) after {state.where()}; "
                                  f"cannot write a checkpoint ({exc.strerror or exc}); {kept}", self.guard.signum) from None
            raise Interrupted(
                f"interrupted ({name}) after {state.where()}; checkpoint written "
                f"to {writer.path}; run the same command with --resume to continue", self.guard.signum)
        if every is None:
            return
        due = state.steps >= self.next_steps if every.examples else time.monotonic() - self.last_time >= every.seconds
        if not due:
            return
        try:
            self.save(state, matrices)
        except OSError as exc:
            self.warn(f"warning: cannot write a checkpoint to {writer.path} ({exc.strerror or exc}); "
                      "training goes on" + (f", the checkpoint at {writer.last_at} is kept"
                                            if writer.last_at is not None else ""))
        self.schedule(state.steps)

    def after_training(self, state, matrices) -> None:
        self.guard.mode = "defer"  # training is over: a signal now waits until the model is saved


def corpus_line(corpus) -> str:
    """One line on the encoded corpus: words, sentences, documents, and where it came from."""
    where = (f"from the cache {corpus.cache_path}" if corpus.from_cache
             else f"cached in {corpus.cache_path}" if corpus.cache_path and "scbow-corpus-" not in corpus.cache_path
             else "not cached")
    return (f"corpus: {plural(corpus.raw_tokens, 'token')}, "
            f"{plural(len(corpus.vocab), 'word')} in the vocabulary (min count {corpus.stats.get('min_count', '?')}), "
            f"{plural(corpus.n_sentences, 'sentence')} in {plural(corpus.n_documents, 'document')}; {where}")


# The loss must fall by at least this much over a run for it to have learned something.
LEARNED_LITTLE = 1e-3


def learned_nothing(result, warn) -> None:
    """Warn when the loss did not fall: too little text, or a --lr below the default (the advice follows
    README's "Defaults and why")."""
    t = result.model.info.get("training", {})
    w = t.get("word_part") or {}
    before, after = w.get("first_loss"), w.get("final_loss")
    if isinstance(before, float) and isinstance(after, float) and not after < before:
        warn(f"warning: the word part's loss on its fixed sample of sentences ended no lower than it began "
             f"({before:.4f} -> {after:.4f}): the start is what the word frequencies alone predict (the output "
             "biases), and the word vectors did not learn to beat it; train on more text")
    first, last = t.get("first_loss"), t.get("final_loss")
    if first is None or last is None or last < first - LEARNED_LITTLE:
        return
    lr, default = result.model.config.get("lr"), TrainConfig().lr
    slow = (f", or with a larger --lr (this run's is {lr:g}, the default {default:g})"
            if isinstance(lr, (int, float)) and lr < default else "")
    what = (f"the loss did not fall ({first:.4f} -> {last:.4f} over {result.examples:,} examples)"
            if len(result.losses) > 1 else  # one batch: its loss is the first and the last, no fall to see
            f"the whole run was one batch ({result.examples:,} examples), too little text to learn from")
    warn(f"warning: {what}: the model learned little beyond its untrained start (SIF-weighted word overlap); train "
         f"on more text{slow} (the defaults were measured on 10M to 100M tokens, where more --epochs score lower)")


def preflight(config, checkpoint_every=None):
    """Checks before any work (a GPU for ``--device cuda``, the thread count), so that a bad setting fails
    before the corpus is read; returns the checkpoint schedule parsed (``checkpoint.parse_every``)."""
    if config.device == "cuda":
        require_cuda()
    else:
        resolve_threads(config.threads)
    return checkpoint.parse_every(checkpoint_every) if checkpoint_every is not None else None


def refuse_cache_in_output(cache_dir, output) -> None:
    """ModelError when the corpus cache is, or is inside, ``output`` or its checkpoint (which it would
    turn into folders holding no model)."""
    name = "--cache-dir" if cache_dir is not None else "the corpus cache"
    cache = Path(resolved(Path(cache_dir if cache_dir is not None else default_cache_dir())))
    for what, place in (("-o", output), ("the checkpoint of -o", checkpoint.checkpoint_dir(output))):
        place = Path(resolved(Path(place)))
        if cache == place or place in cache.parents:
            raise ModelError(f"{name} {cache}: is {'' if cache == place else 'inside '}{what} {place}; "
                             "give the corpus cache a folder of its own, outside the model")


def train_session(corpus, config=None, output=None, *, checkpoint_every=None, resume: bool = False,
                  quiet: bool = False, cache_dir=None, use_cache: bool = True, eval_every=None,
                  eval_dev=None, eval_sets=(), eval_test: bool = False, hooks=(), warn=None,
                  encoding: str = DEFAULT_ENCODING):
    """What ``scbow-numba train`` runs: train on ``corpus`` (paths), save the model to ``output``, return the
    TrainResult (with ``curve``, the curve hook or None, and ``cache``, for :func:`summary_lines`).

    Every path is checked first, and a failed run leaves nothing behind, not even the directories made for
    its output. ``checkpoint_every``: ``checkpoint.parse_every``;
    ``eval_*``: ``curve.curve_hook``; ``hooks``: ``trainer.train``; ``encoding``:
    ``scbow.text.reader.text_codec``; ``warn``: gets warning and note lines (default stderr). Raises
    :class:`~scbow.errors.Interrupted` on a signal, the errors of :mod:`scbow.errors` on bad input.
    """
    config = config or TrainConfig()
    warn = warn or note
    corpus = list(corpus)
    output = Path(output if output is not None else default_model_dir())
    refuse_overwrite({"-o": output, "its checkpoint": checkpoint.checkpoint_dir(output)},
                     [*(("the corpus", p) for p in corpus), ("--eval-dev", eval_dev),
                      *(("--eval-sets", p) for p in eval_sets)], replaces_dirs=True)
    if use_cache:
        refuse_cache_in_output(cache_dir, output)
    curve = None
    if eval_every is not None:
        curve = curve_hook(eval_every, eval_dev, eval_sets, eval_test, config)
    elif eval_dev is not None or eval_sets or eval_test:
        raise ConfigError("--eval-dev, --eval-sets and --eval-test need --eval-every N")
    every = preflight(config, checkpoint_every)
    made = [p for p in (output.resolve().parent, *output.resolve().parent.parents) if not p.exists()]
    try:
        output = check_output_dir(output)
        result = _locked_run(corpus, config, output, every, resume, quiet, cache_dir, use_cache,
                             [*hooks, *([curve] if curve is not None else [])], curve, warn, encoding)
    except BaseException:
        for p in made:  # deepest first
            try:
                p.rmdir()
            except OSError:
                break
        raise
    result.curve = curve
    return result


def _locked_run(corpus, config, output, every, resume, quiet, cache_dir, use_cache, hooks, curve, warn, encoding):
    """:func:`train_session` once its paths are checked: lock, signals, checkpoint, corpus, training, save."""
    where = Path(os.path.abspath(output))
    ckpt = checkpoint.checkpoint_dir(where)
    writer = None
    guard = SignalGuard()
    try:
        with OutputLock(where), guard:
            # the temporaries a process killed while saving left (only ours, whose writer is dead)
            remove_leftovers(where)
            remove_leftovers(ckpt)
            replacing = (output / "vectors.npy").is_file()
            meta = None
            what = checkpoint.not_a_checkpoint(ckpt)
            if what is not None:
                raise CheckpointError(f"{ckpt}: is where this run's checkpoint goes, and {what}; move it away, or "
                                      "give another -o")
            if resume:
                meta = checkpoint.read_meta(ckpt)
                checkpoint.check_config(meta, config, ckpt)
            elif ckpt.exists():
                try:
                    progress = checkpoint.describe(checkpoint.read_meta(ckpt))
                except CheckpointError:
                    progress = "unreadable"
                raise CheckpointError(
                    f"{ckpt}: a checkpoint of an unfinished run into {output} is there ({progress}); "
                    "add --resume to continue it, or delete it to start over")

            encoded = read_corpus(corpus, config.min_count, config.max_vocab, cache_dir=cache_dir,
                                  use_cache=use_cache, quiet=quiet, encoding=encoding)
            if replacing and not quiet:  # said once the input is known good: a missing corpus is the one line
                note(f"note: {output} holds a model; it is replaced when this run ends (and kept if it fails)")
            if not quiet:
                note(corpus_line(encoded))
            bad = encoded.stats.get("invalid_utf8_lines", 0)
            if bad:
                warn(invalid_utf8_warning("the corpus", bad))

            start = matrices = None
            if meta is not None:
                start, matrices = checkpoint.restore(ckpt, meta, encoded, config)
                if not quiet:
                    p = start[start.phase]
                    note(f"resuming from the checkpoint at example {p.done:,} of {p.total:,} "
                         f"(epoch {min(start.epoch + 1, config.epochs)} of {config.epochs})" if start.phase == "sentence"
                         else f"resuming from the checkpoint in the {start.phase} part, at sentence {p.done:,} of "
                              f"{p.total:,}")
                # what the hooks saved (the curve so far), given back to them
                curve_file = ckpt / CURVE_FILE
                saved = {"curve": read_json(curve_file, CheckpointError)} if curve_file.is_file() else {}
                kept = [h.restore_checkpoint_info(saved) for h in hooks]
                if saved and not any(kept):
                    raise CheckpointError("cannot resume: the interrupted run recorded a learning curve "
                                          "(--eval-every), which this run would drop; run with its --eval-every, or "
                                          "delete the checkpoint to start over")
            writer = checkpoint.CheckpointWriter(ckpt, encoded, config)
            if start is not None:
                writer.mark(start)
            hook = CheckpointHook(writer, every, guard, warn, hooks, start.steps if start is not None else 0)
            guard.mode = "flag"
            try:
                result = train(encoded, config, quiet=quiet, hooks=[*hooks, hook], start=start,
                               matrices=matrices, warn=warn)
            except TrainingError as exc:
                if writer.last_at is not None:
                    raise TrainingError(f"{exc}; the last good checkpoint ({writer.last_at}) is "
                                        f"kept in {ckpt}") from None
                raise
            guard.mode = "defer"
            result.cache = {"path": encoded.cache_path, "written": use_cache and not encoded.from_cache,
                            "root": str(Path(encoded.cache_path).parent) if use_cache and encoded.cache_path else None}
            learned_nothing(result, warn)
            if curve is not None:
                curve.attach(result.model)
            if not quiet:
                note(f"saving the model to {output}" + (" (replacing the model there)" if replacing else ""))
            try:
                save_model(result.model, output)
            except ModelError as exc:
                if writer.last_at is not None:
                    raise ModelError(f"{exc}; the checkpoint at {writer.last_at} is kept in {ckpt}") from None
                raise
            remove_checkpoint(ckpt, warn)
    except Interrupted as exc:
        if exc.message:
            raise
        name = signal_name(exc.signum)
        if writer is not None and writer.last_at is not None:
            text = (f"interrupted ({name}); the checkpoint at {writer.last_at} in {ckpt} is kept; "
                    "run the same command with --resume to continue")
        elif resume and ckpt.exists():
            text = f"interrupted ({name}); the checkpoint in {ckpt} is kept; run the same command with --resume"
        else:
            text = f"interrupted ({name}); nothing was written"
        raise Interrupted(text, exc.signum) from None
    if guard.signum is not None and not quiet:  # the run is whole: it ends as finished, not as a failure
        warn(f"note: {signal_name(guard.signum)} came after training had finished; the model was saved "
             f"whole to {output}, so the run ends as finished")
    return result


def remove_checkpoint(ckpt: Path, warn=None) -> None:
    """Remove a finished run's checkpoint: its own files by name, then the empty directory; anything else
    in it (a user's file) stays, with the directory, and ``warn`` says so."""
    if not ckpt.is_dir() or ckpt.is_symlink() or not checkpoint.is_checkpoint(ckpt):
        return
    for name in checkpoint.CHECKPOINT_FILES:
        with contextlib.suppress(OSError):
            if (ckpt / name).is_file() and not (ckpt / name).is_symlink():
                os.unlink(ckpt / name)
    try:
        os.rmdir(ckpt)
    except OSError:
        if warn is not None:
            warn(f"warning: {ckpt} holds files scbow-numba did not write; its own were removed, the rest left there")


def summary_lines(result, config, output) -> list[str]:
    """What ``train`` says when it is done: the run, the corpus cache, the learning curve."""
    t = result.model.info["training"]
    c = result.model.info["corpus"]
    lines = [f"trained {plural(config.epochs, 'epoch')}: {plural(result.examples, 'example')} in {result.seconds:.1f} s "
             f"({t['examples_per_second'] or 0:,.0f}/s, "
             f"{'GPU' if config.device == 'cuda' else plural(t['threads'], 'thread')}), loss {t['first_loss']:.4f} -> "
             f"{t['final_loss']:.4f}; {plural(c['vocab_size'], 'word')}, {plural(c['sentences'], 'sentence')}; "
             f"model: {output}"]
    w = t.get("word_part")
    if w:
        loss, rose = word_loss_text(w)
        lines.append(f"word part: {plural(config.word_passes, 'pass', 'passes')} of skip-gram over "
                     f"{plural(w['sentences'], 'sentence')} in {w['kernel_seconds']:.1f} s "
                     f"({w['sentences_per_second'] or 0:,.0f}/s, "
                     f"{'GPU' if w.get('device') == 'cuda' else plural(w['threads'], 'thread')}){loss}; rows of "
                     f"{config.dim} + {config.word_dim} dims")
        if rose:
            lines.append(ROSE_FIRST)
    cache = result.cache or {}
    if cache.get("written") and cache.get("root"):
        entries = cache_entries(cache["root"])
        mine = next((e["bytes"] for e in entries if e["path"] == cache["path"]), 0)
        lines.append(f"corpus cache: wrote {megabytes(mine)} to {cache['path']} (a rerun on the same files starts "
                     f"at once); the cache holds {plural(len(entries), 'corpus', 'corpora')} in "
                     f"{megabytes(sum(e['bytes'] for e in entries))}: 'scbow-numba cache' lists it, "
                     "'scbow-numba cache --clear' empties it")
    curve = result.curve
    if curve is not None:
        first, last = (("n/a" if x is None else f"{x:.4f}") for x in
                       (p["dev"]["pearson"] for p in (curve.points[0], curve.points[-1])))
        at = [p["examples"] for p in curve.points if p["examples"] and not p.get("epoch_end")]
        off = [n for n in at if n % curve.every]
        where = (f"; points fall on batch ends, the first at or after each multiple of {curve.every:,} "
                 f"({', '.join(f'{n:,}' for n in at[:3])}{', ...' if len(at) > 3 else ''})" if off else "")
        lines.append(f"curve: {plural(len(curve.points), 'point')}, dev Pearson {first} -> {last}; the evaluations took "
                     f"{curve.eval_seconds:.1f} s, not counted above{where} (saved as curve.json; "
                     f"'scbow-numba plot {output}' draws it)")
    return lines
