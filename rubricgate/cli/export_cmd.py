"""`rubricgate export RUN...`: the analysis frames of run folders as files (rubricgate/analysis.py)."""

from __future__ import annotations

from pathlib import Path

import click

from rubricgate.cli.app import main
from rubricgate.cli.options import fail_input
from rubricgate.errors import GateInputError, GateInputErrors


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet", "jsonl"]), default="csv", show_default=True,
              help="File format; parquet needs pyarrow (pip install 'rubricgate[parquet]').")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("rubricgate-export"),
              show_default=True, help="Folder for runs.<ext>, cases.<ext> and trials.<ext>.")
def export(runs: tuple[Path, ...], fmt: str, out: Path) -> None:
    """Write runs, cases and trials of run folders as CSV, Parquet or JSON lines (pandas frames).

    RUN is a run folder or its summary.json (a comparison's folder: the runs of both its sides; a
    mutation test's is left out with a note, and so, among several, is the folder of a run that
    wrote no summary: killed, or still going); the columns are documented in rubricgate.analysis.
    """
    from rubricgate.analysis import export as write_frames
    from rubricgate.analysis import run_folders

    try:
        folders, notes = run_folders(list(runs))
        written = write_frames(folders, fmt, out, notes)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    click.echo("".join(f"note: {n}\n" for n in notes), nl=False, err=True)
    click.echo("".join(f"wrote {p}\n" for p in written), nl=False)
