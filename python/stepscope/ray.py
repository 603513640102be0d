"""A fleet's traces on a Ray cluster: one task per rank file, every task writing its tables
into one Parquet dataset, as ``stepscope analyze --parquet`` does.

    >>> import stepscope.ray
    >>> runs = stepscope.ray.analyze_fleet(["/nightly/*/"], out="/data/stepscope")
    >>> runs[0]["verdict"]
    'complete'

Each path (or glob match) given is a **run**: a trace file is a run of one rank, a folder a
run of every trace file ``stepscope analyze FOLDER`` would read in it. Every file is one
task (Ray spreads them over the cluster; each task reads one file, with the GIL released),
writing its tables as run id ``RUN.NNNNN`` (``RUN`` from the folder or file name, ``NNNNN``
the file's place in the run), so a file's rows are keyed like any other run's. The run's
verdict combines its files' verdicts as ``analyze FOLDER`` does. Query the dataset as one
table per folder (docs/python.md has DuckDB and Spark queries)::

    SELECT split_part(run_id, '.', 1) AS run, count(*) AS replays
    FROM '/data/stepscope/replays/*.parquet' GROUP BY run
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable
from typing import Any, Union

from . import _stepscope
from ._api import StepscopeError, _call, analyze

PathLike = Union[str, "os.PathLike[str]"]


def _run_name(path: str, taken: set[str]) -> str:
    """A run id stem from the path's last name: letters, digits, `_` and `-`, unique."""
    base = os.path.basename(os.path.normpath(path)) or "run"
    for suffix in (".gz", ".zst", ".json", ".trace", ".pt"):
        base = base.removesuffix(suffix)
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-") or "run"
    name, n = stem, 2
    while name in taken:
        name, n = f"{stem}-{n}", n + 1
    taken.add(name)
    return name


def plan(paths_or_globs: PathLike | Iterable[PathLike]) -> list[tuple[str, list[str]]]:
    """The runs and their files, as :func:`analyze_fleet` would analyse them: each path or
    glob match a run, named from its last path component."""
    if isinstance(paths_or_globs, (str, os.PathLike)):
        paths_or_globs = [paths_or_globs]
    matched: list[str] = []
    for item in paths_or_globs:
        text = os.fspath(item)
        hits = sorted(glob.glob(text, recursive=True)) if glob.has_magic(text) else [text]
        if not hits:
            raise StepscopeError(f"`{text}` matches no file or folder", "check the pattern")
        matched += hits
    runs: list[tuple[str, list[str]]] = []
    taken: set[str] = set()
    for path in matched:
        runs.append((_run_name(path, taken), _call(_stepscope.find_traces, [path])))
    return runs


def _task(file: str, out: str, run_id: str, options: dict[str, Any]) -> dict[str, Any]:
    """One rank file: its tables into the dataset, and what the run needs of it."""
    try:
        result = analyze(file, parquet=out, run_id=run_id, **options)
    except StepscopeError as error:
        return {"file": file, "run_id": run_id, "verdict": None, "error": str(error)}
    return {
        "file": file,
        "run_id": run_id,
        "verdict": result.files[0]["replay_coverage"]["verdict"],
        "counts": result.counts,
        "error": None,
    }


def analyze_fleet(
    paths_or_globs: PathLike | Iterable[PathLike],
    out: PathLike,
    *,
    progress: bool = True,
    **options: Any,
) -> list[dict[str, Any]]:
    """Analyses every run's files as Ray tasks into the Parquet dataset ``out``; returns, per
    run in the order given: ``run``, ``verdict`` (the files' verdicts combined as ``analyze``
    combines a folder's), ``files``, ``failed`` (files that could not be read, with why),
    ``run_ids`` and the replay ``counts`` summed over its files.

    ``options`` are :func:`stepscope.analyze`'s keywords (``capture``, ``categories``,
    ``device``, …). Ray is started locally when no cluster is connected. ``progress`` shows
    a bar (tqdm, in a notebook too) as tasks finish.
    """
    import ray

    if not ray.is_initialized():
        ray.init(ignore_reinit_error=True, log_to_driver=False)
    out = os.fspath(out)
    remote = ray.remote(_task)
    runs = plan(paths_or_globs)
    pending = {}
    for run, files in runs:
        for index, file in enumerate(files):
            ref = remote.remote(file, out, f"{run}.{index:05d}", options)
            pending[ref] = run
    done: dict[str, list[dict[str, Any]]] = {run: [] for run, _ in runs}
    bar = _bar(len(pending), progress)
    waiting = list(pending)
    while waiting:
        ready, waiting = ray.wait(waiting, num_returns=1)
        for ref in ready:
            done[pending[ref]].append(ray.get(ref))
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return [_summary(run, done[run]) for run, _ in runs]


def _summary(run: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    results.sort(key=lambda r: r["run_id"])
    read = [r for r in results if r["error"] is None]
    failed = [{"file": r["file"], "error": r["error"]} for r in results if r["error"]]
    counts: dict[str, int] = {}
    for r in read:
        for key, value in r["counts"].items():
            counts[key] = counts.get(key, 0) + value
    return {
        "run": run,
        "verdict": _stepscope.combine_verdicts([r["verdict"] for r in read], len(failed)),
        "files": [r["file"] for r in results],
        "failed": failed,
        "run_ids": [r["run_id"] for r in read],
        "counts": counts,
    }


def _bar(total: int, wanted: bool) -> Any | None:
    if not wanted:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="stepscope", unit="file")
