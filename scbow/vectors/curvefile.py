"""``curve.json``: a model's STS learning curve (``train --eval-every``), checked here (a save writes it);
``plot`` reads it alone (:func:`curve_of`, no vectors).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..config import finite_number
from ..errors import ModelError
from ..reading import read_json

CURVE_FILE = "curve.json"


def check_curve(curve, path: Path) -> dict:
    """``curve``, the JSON value of the ``curve.json`` at ``path``, once checked; else ModelError."""
    if not isinstance(curve, dict) or not isinstance(curve.get("points"), list):
        raise ModelError(f"{path}: not a learning curve (no list of points)")
    for n, point in enumerate(curve["points"], 1):
        if not isinstance(point, dict) or not finite_number(point.get("examples")) or not all(
                isinstance(point.get(k), (dict, type(None))) for k in ("dev", "dev_raw", "test")):
            raise ModelError(f"{path}: damaged learning curve (point {n} is malformed)")
        # every number the readers use; None is a NaN correlation
        for part, key in (("dev", "pearson"), ("dev", "spearman"), ("dev_raw", "pearson"), ("dev_raw", "spearman"),
                          ("test", "pearson_mean")):
            value = (point.get(part) or {}).get(key)
            if value is not None and not (finite_number(value) and -1.0001 <= value <= 1.0001):
                raise ModelError(f"{path}: damaged learning curve (point {n}: {part} {key} is not a correlation)")
        pairs = (point.get("dev") or {}).get("pairs")
        if pairs is not None and not (type(pairs) is int and 0 <= pairs <= 1e15):
            raise ModelError(f"{path}: damaged learning curve (point {n}: dev pairs is not a count)")
        if not 0 <= point["examples"] <= 1e15:
            raise ModelError(f"{path}: damaged learning curve (point {n}: examples out of range)")
    for key, kinds in (("dev", dict), ("post_processing", (dict, list, str)), ("test", (dict, list, str))):
        if curve.get(key) is not None and not isinstance(curve[key], kinds):
            raise ModelError(f"{path}: damaged learning curve ({key} is malformed)")
    return curve


def curve_of(path: os.PathLike) -> tuple[dict, dict]:
    """The learning curve of a model directory or ``curve.json``, and the model's settings (``{}`` for a file)."""
    given = path = Path(path)
    config: dict = {}
    if path.is_dir():
        if not os.path.lexists(path / CURVE_FILE):  # a curve.json that is no file is damage, read below
            if not (path / "config.json").is_file():
                raise ModelError(f"{path}: not a model directory (no config.json)")
            raise ModelError(f"{path}: the model has no learning curve ({CURVE_FILE}); "
                             "train it with --eval-every N to record one")
        meta = read_json(path / "config.json", what="damaged model")
        config = meta.get("config") if isinstance(meta, dict) else None
        config = config if isinstance(config, dict) else {}
        path = path / CURVE_FILE
    elif not path.is_file():
        raise ModelError(f"{path}: no such model or curve file")
    curve = check_curve(read_json(path, what="damaged learning curve"), path)
    if not curve["points"]:
        raise ModelError(f"{given}: the learning curve has no points")
    return curve, config
