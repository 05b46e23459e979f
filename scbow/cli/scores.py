"""``evaluate`` and ``plot``: scores on STS sets, and the learning curve."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from ..outputs import check_output_file, refuse_overwrite
from ..progress import plural
from .app import encoding_option, main, model_arg, model_option, unknown_option


@main.command(short_help="Draw the learning curve recorded by train --eval-every.")
@click.argument("model_arg_", metavar="[MODEL]", required=False, type=click.Path(path_type=Path))
@model_option("Model directory or curve.json file (the same as MODEL).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("curve.png"), show_default=True,
              help="The PNG file to write.")
@click.option("--title", default=None, help="Title of the plot. Default: from the model's settings.")
def plot(model_arg_, model_path, output, title):
    """Draw the learning curve of MODEL (recorded by 'train --eval-every') as a PNG.

    Pearson on the dev set against examples seen, after the post-processing the saved
    model gets (solid) and as trained (dashed), the test-set mean when it was recorded,
    and the ends of epochs.
    """
    from ..vectors.curvefile import curve_of

    if title is not None:
        try:
            title.encode("utf-8")
        except UnicodeEncodeError:  # bytes of another encoding in argv, which Python kept as surrogates
            raise click.ClickException("--title: not UTF-8 text (bytes of another encoding?); give the title "
                                       "in UTF-8") from None
    path = model_arg(model_arg_, model_path)
    refuse_overwrite({"-o": output}, {"the model": path})
    output = check_output_file(output, "curve.png")
    if output.suffix.lower() != ".png":  # the file is a PNG whatever its name: another name could be a user's file
        raise click.ClickException(f"-o {output}: the plot is a PNG image; give the output a .png name, e.g. "
                                   f"{output.with_suffix('.png').name}")
    curve, config = curve_of(path)
    try:
        from ..use.plot import plot_curve
    except ImportError:
        raise click.ClickException("plotting needs matplotlib: pip install 'scbow-numba[plot]'") from None
    plot_curve(curve, output, title=title, config=config)
    click.echo(f"wrote {output} ({plural(len(curve['points']), 'point')})", err=True)


@main.command(short_help="Score a model on STS sets, with baselines and significance.")
@model_option()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--baseline", type=click.Path(path_type=Path), default=None,
              help="Word vectors to compare with (word2vec text or binary, or a model directory).")
@click.option("--control", type=click.Choice(["overlap", "plain-overlap"]), default=None,
              help="Add an untrained word-overlap control beside the model (-m, else the default model): overlap "
                   "is 'weighted overlap', a fixed random vector per token weighted by a/(a + p(w)) as SIF, p(w) "
                   "from the model's vocabulary counts (the untrained start of a model: the control to beat); "
                   "plain-overlap is 'plain overlap', the unweighted average (a weak control; alone when there "
                   "is no default model).")
@click.option("--resamples", type=click.IntRange(min=100, max=1_000_000), default=1000, show_default=True,
              help="Bootstrap resamples for the 95% interval of a Pearson difference.")
@unknown_option("each model's own rule (of the model and --baseline)")
@encoding_option()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def evaluate(model_path, paths, baseline, control, resamples, unknown, encoding, as_json):
    """Score a model on STS files (gold<TAB>s1<TAB>s2) or folders of *.tsv.

    With no PATHS: the paper's SemEval sets from $SCBOW_STS_DIR, else shared/data/sts or
    ../shared/data/sts (from the current directory, or beside a source checkout). Per set:
    pairs, pairs scored (a pair with a side without any known word is not scored), Pearson
    and Spearman; then the mean over sets and the mean weighted by pairs scored. --baseline
    and --control add column groups, each compared with the model by a paired Wilcoxon
    test and a bootstrap interval of the Pearson difference.
    """
    import json

    from ..use.evaluate import evaluate_models, format_table

    report = evaluate_models(paths, model=model_path, baseline=baseline, control=control, resamples=resamples,
                             unknown=unknown, encoding=encoding)
    click.echo(json.dumps(report, indent=1) if as_json else format_table(report, shutil.get_terminal_size().columns))
