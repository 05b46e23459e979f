"""What a model is, for ``scbow-numba info``: the lines it prints and the JSON record.

Any section of ``config.json`` may be damaged, so every value is read against its type (:func:`_get`)
and shown as unknown otherwise; the JSON record holds no NaN or infinity (they become ``null``).
"""

from __future__ import annotations

import json
import math
import textwrap

from ..config import TrainConfig
from ..progress import megabytes, plural

_NUMBER = (int, float)


def _get(section, key: str, kinds, default=None, low: float = 0, high: float = 1e15):
    """``section[key]`` when it is of ``kinds`` (bool is no number) and a number within ``[low, high]``;
    else ``default``."""
    if not isinstance(section, dict):
        return default
    value = section.get(key, default)
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        return default
    if not isinstance(value, kinds):
        return default
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not (low <= value <= high and math.isfinite(value)):  # compared first: a huge int is no float
            return default
    return value


def _section(info: dict, key: str) -> dict:
    value = info.get(key)
    return value if isinstance(value, dict) else {}


def _counted(section, key: str, word: str, many: str | None = None, low: int = 0) -> str:
    """``plural`` of the count ``section[key]``; ``? words`` when it is missing or not a count of at least ``low``."""
    n = _get(section, key, int, low=low)
    return plural(n, word, many) if n is not None else f"? {many or word + 's'}"


def _run(section, key: str, word: str) -> str:
    """``12,000 examples in 3.5 s (3,429/s) on 2 threads`` (or on GPU) of a run's record, ``?`` where unknown."""
    seconds, speed = _get(section, "kernel_seconds", _NUMBER), _get(section, f"{key}_per_second", _NUMBER)
    where = "GPU" if _get(section, "device", str) == "cuda" else _counted(section, "threads", "thread", low=1)
    return (f"{_counted(section, key, word)} in {'?' if seconds is None else f'{seconds:.1f}'} s"
            + (f" ({speed:,.0f}/s)" if speed is not None else "") + f" on {where}")


def _r(x) -> str:
    """A correlation :func:`_get` read (a finite number, or None) to three places; ``?`` for None."""
    return "?" if x is None else f"{x:.3f}"


def widths(model) -> dict:
    """``{"rows": 450, "sentence_part": 300, "word_part": 150}`` (``--dim`` is the sentence part's width)."""
    parts = model.parts
    (s0, s1), word = parts["sentence"], parts.get("word")
    return {"rows": model.dim, "sentence_part": s1 - s0, "word_part": word[1] - word[0] if word else 0}


# Said when the word part's first pass ended above its start and the last below: the loss is not broken.
ROSE_FIRST = ("the word part's loss above starts at what the word frequencies alone predict (the output biases, "
              "the rows at zero); the first pass, at the highest learning rate, ended above that start, and the "
              "later passes, as the rate decays, brought it below")


def word_loss_text(w: dict) -> tuple[str, bool]:
    """``(", loss 2.6175 -> 2.4091 on a fixed sample of ...", rose)``: the word part's loss as its summary
    line says it, and whether the first pass ended above the start while the last ended below it ("" and
    False without a recorded loss). ``w``: the checked ``info["training"]["word_part"]``."""
    first, final = w.get("first_loss"), w.get("final_loss")
    if not isinstance(first, float) or not isinstance(final, float):
        return "", False
    passes = [x for x in (w.get("pass_losses") or []) if isinstance(x, (int, float))]
    n = w.get("loss_sentences")  # recorded since the count was printed; older models: no count
    sample = plural(n, "sentence") if isinstance(n, int) and not isinstance(n, bool) and n > 0 else "sentences"
    after = passes[1:]
    shown = [f"{x:.4f}" for x in after]
    each = ", ".join(shown if len(shown) <= 6 else [*shown[:3], "...", *shown[-2:]])
    path = f"; after each: {each}" if len(after) > 1 else ""
    rose = len(after) > 1 and after[0] >= first and final < first
    return (f", loss {first:.4f} -> {final:.4f} on a fixed sample of {sample} (before the first pass, after the "
            f"last{path})"), rose


def _word_loss(w: dict) -> str:
    """:func:`word_loss_text` of the recorded values, with what a rise means."""
    bounded = {"loss_sentences": _get(w, "loss_sentences", int),
               "first_loss": _get(w, "first_loss", _NUMBER, high=1e3), "final_loss": _get(w, "final_loss", _NUMBER, high=1e3),
               "pass_losses": [x for x in _get(w, "pass_losses", list, [])
                               if isinstance(x, _NUMBER) and not isinstance(x, bool) and 0 <= x <= 1e3]}
    bounded.update((k, float(bounded[k])) for k in ("first_loss", "final_loss") if isinstance(bounded[k], int))
    text, rose = word_loss_text(bounded)
    if rose:
        return text + "; the first pass, at the highest learning rate, ended above the start"
    first, final = bounded["first_loss"], bounded["final_loss"]
    if text and not final < first:
        return text + "; no lower than the start (the word frequencies alone): the word vectors learned little"
    return text


def json_safe(value):
    """``value`` with every NaN or infinity (at any depth) made None, and every key a string."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def model_record(model, path) -> str:
    """``info --json``: everything recorded in the model, as strict JSON (``dim``: a row's width)."""
    record = {"path": str(path), "words": len(model), "dim": model.dim, "dims": widths(model), "config": model.config}
    record.update((k, v) for k, v in model.info.items() if k not in record)  # a recorded 'dim' is not the model's
    return json.dumps(json_safe(record), indent=1, allow_nan=False)


def wrapped(lines: list[str], width: int) -> list[str]:
    """``info``'s lines cut at spaces to ``width`` columns, continuations under the value column."""
    out = []
    for line in lines:
        out += textwrap.wrap(line, max(width, 40), subsequent_indent=" " * 12, break_long_words=False,
                             break_on_hyphens=False) or [line]
    return out


def describe(model, path) -> list[str]:
    """``info``'s lines: the vectors, the corpus, the settings, the run and its scores."""
    info = model.info if isinstance(model.info, dict) else {}
    w = widths(model)
    split = f" (sentence part {w['sentence_part']} + word part {w['word_part']})" if w["word_part"] else ""
    lines = [f"model       {path}",
             f"vectors     {plural(len(model), 'word')} x {w['rows']} dims a row{split}; float32, "
             f"{megabytes(len(model) * model.dim * 4)}; unknown words: {model.unknown_rule[0]}"]
    parts = model.parts
    if "word" in parts:
        (s0, s1), (w0, w1) = parts["sentence"], parts["word"]
        lines.append(f"parts       sentence part: columns {s0}-{s1 - 1} ({s1 - s0} dims); word part: columns "
                     f"{w0}-{w1 - 1} ({w1 - w0} dims, {_counted(model.config, 'word_passes', 'pass', 'passes')}"
                     f" of skip-gram, mix {_get(model.config, 'word_mix', _NUMBER, '?')}); sentences average whole rows, "
                     "neighbours rank by the word part")
    fmt = _get(info, "format", str)
    if fmt:
        lines.append(f"format      {fmt} (no training record)")
    c = _section(info, "corpus")
    if c:
        listed = _get(c, "files", list, [])
        files = ", ".join(str(f) for f in listed if isinstance(f, str)) or "?"
        lines.append(f"corpus      {files}")
        oov = _get(c, "oov_rate", _NUMBER, high=1)
        lines.append(f"            {_counted(c, 'raw_tokens', 'token')}, {_counted(c, 'sentences', 'sentence')} "
                     f"in {_counted(c, 'documents', 'document')}; vocabulary: words seen at least "
                     f"{_get(c, 'min_count', int, '?')} times"
                     + (f", out-of-vocabulary rate {100 * oov:.1f}%" if oov is not None else ""))
    if isinstance(model.config, dict) and model.config:
        defaults = TrainConfig().to_dict()
        shown = [f"{k}={v}{'*' if k in defaults and defaults[k] != v else ''}" for k, v in model.config.items()]
        lines.append("settings    " + ", ".join(shown))
    t = _section(info, "training")
    if t:
        first, final = _get(t, "first_loss", _NUMBER, high=1e3), _get(t, "final_loss", _NUMBER, high=1e3)
        loss = f", loss {first:.4f} -> {final:.4f}" if first is not None and final is not None else ""
        lines.append(f"training    {_run(t, 'examples', 'example')}{loss}"
                     + ("; a checkpoint, before post-processing" if _get(t, "checkpoint", bool) else ""))
    w = _section(t, "word_part")
    if w:
        lines.append(f"word part   {_run(w, 'sentences', 'sentence')}{_word_loss(w)}")
    curve = _section(info, "curve")
    points = [p for p in _get(curve, "points", list, []) if isinstance(p, dict)]
    if points:
        first, last = points[0], points[-1]
        dev = _get(_section(curve, "dev"), "name", str, "dev")
        lines.append(f"scores      {dev} Pearson {_r(_get(_section(first, 'dev'), 'pearson', _NUMBER, low=-1, high=1))} before "
                     f"training -> {_r(_get(_section(last, 'dev'), 'pearson', _NUMBER, low=-1, high=1))} at the end "
                     f"({plural(len(points), 'point')}; 'scbow-numba plot' draws the curve)")
        test = _get(_section(last, "test"), "pearson_mean", _NUMBER, low=-1, high=1)
        if test is not None:
            lines.append(f"            test sets: mean Pearson {_r(test)} at the end")
    return lines
