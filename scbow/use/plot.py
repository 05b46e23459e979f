"""Drawing a learning curve (``curve.json``) as a PNG. Needs matplotlib: ``pip install 'scbow-numba[plot]'``
(an ImportError importing this module means it is missing).
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from ..files import atomic_file  # noqa: E402
from ..progress import human  # noqa: E402


def _text(value) -> str:
    """A name or title to draw as it reads, ``?`` for what UTF-8 cannot hold (a lone surrogate)."""
    return str(value).encode("utf-8", "replace").decode("utf-8")


_LITERAL = {"parse_math": False, "usetex": False}  # matplotlib would read $...$ as mathtext (and fail on some)


def _series(points, *keys):
    xs, ys = [], []
    for p in points:
        v = p
        for k in keys:
            v = v.get(k) if isinstance(v, dict) else None
        if v is not None:
            xs.append(p["examples"])
            ys.append(v)
    return xs, ys


def plot_curve(curve: dict, output: os.PathLike, title: str | None = None, config: dict | None = None) -> Path:
    """Pearson against examples seen, written to ``output`` (PNG) atomically; text drawn as it reads (no TeX)."""
    output = Path(output)
    points = curve["points"]
    dev_name = _text((curve.get("dev") or {}).get("name", "dev"))
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    xs, ys = _series(points, "dev", "pearson")
    post = curve.get("post_processing")
    label = f"{dev_name} (as saved)" if post else dev_name
    ax.plot(xs, ys, marker="o", markersize=3, color="C0", label=label)
    if post:
        xs, ys = _series(points, "dev_raw", "pearson")
        ax.plot(xs, ys, linestyle="--", color="C0", alpha=0.6, label=f"{dev_name}, vectors as trained")
    if curve.get("test"):
        xs, ys = _series(points, "test", "pearson_mean")
        ax.plot(xs, ys, marker="s", markersize=3, color="C1", label=f"mean of {len(curve['test'])} other sets")
    for p in points:
        if p.get("epoch_end"):
            ax.axvline(p["examples"], color="0.85", linewidth=0.8, zorder=0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: human(x, "g")))  # 0, 500K, 1M, 2.5M
    ax.set_xlabel("examples seen (grey lines: ends of epochs)")
    ax.set_ylabel("Pearson r")
    if title is None:
        c = config or {}
        settings = ", ".join(f"{k} {c[k]}" for k in ("dim", "epochs", "lr", "weight_decay") if k in c)
        title = "STS learning curve" + (f" ({settings})" if settings else "")
    ax.set_title(_text(title), fontsize=10, **_LITERAL)
    ax.grid(True, alpha=0.3)
    # below the axes, in one row where it fits: inside, it covered the ends of the curves
    handles = ax.get_legend_handles_labels()[0]
    legend = ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=min(len(handles), 3),
                       frameon=False)
    for text in legend.get_texts():  # the dev set's name, as curve.json spells it
        text.update(_LITERAL)
    fig.tight_layout()
    parent = output.resolve().parent
    if not parent.is_dir():
        plt.close(fig)
        raise FileNotFoundError(2, "no such directory", str(parent))
    try:
        with atomic_file(output) as tmp:
            fig.savefig(tmp, format="png")
    finally:
        plt.close(fig)
    return output
