"""``stepscope.analyze``: the arguments of ``stepscope analyze``, as keywords."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, Union

from . import _stepscope
from ._analysis import Analysis, Diff

PathLike = Union[str, "os.PathLike[str]"]


class StepscopeError(Exception):
    """An error as the command line says it: ``message`` names the file, the place and
    what went wrong; ``hint`` the fix (or ``None``); ``exit_code`` the command's exit code
    for it (2: bad input)."""

    def __init__(self, message: str, hint: str | None = None, exit_code: int = 2):
        self.message = message
        self.hint = hint
        self.exit_code = exit_code
        text = message if hint is None else f"{message}\nhint: {hint}"
        super().__init__(text)


def _call(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Calls into the extension, raising its errors as :class:`StepscopeError`."""
    try:
        return function(*args, **kwargs)
    except _stepscope.StepscopeError as error:
        message, hint, code = error.args
        raise StepscopeError(message, hint, code) from None


def _paths(paths: PathLike | Iterable[PathLike]) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    try:
        listed = [os.fspath(p) for p in paths]
    except TypeError:
        raise TypeError(
            f"argument 'paths': expected a path or a list of paths, got {paths!r}"
        ) from None
    if not listed:
        raise StepscopeError(
            "No trace given", "pass a trace file, a folder of traces, or a list of them"
        )
    return listed


def analyze(
    paths: PathLike | Iterable[PathLike],
    *,
    capture: PathLike | None = None,
    categories: PathLike | None = None,
    device: str | None = None,
    range: str | None = None,
    format: str | None = None,
    top: int = 10,
    no_capture_folder: bool = False,
    fail_on_incomplete: bool = False,
    strict: bool = False,
    allow_truncated: bool = False,
    html: PathLike | None = None,
    csv: PathLike | None = None,
    perfetto: PathLike | None = None,
    parquet: PathLike | None = None,
    run_id: str | None = None,
    threads: int = 0,
) -> Analysis:
    """Analyses trace files (or folders of them: several files are the ranks of one run),
    as ``stepscope analyze PATHS --json`` does, and returns the result.

    Every keyword is the command's option of the same name (``no_capture_folder`` is
    ``--no-capture-folder``), passed as a typed value, not as command-line text: a value
    of the wrong type raises ``TypeError`` naming the parameter, one that cannot be used
    (an unknown ``device`` or ``format``, a bad ``range`` regex, a negative ``top``)
    ``ValueError``. ``html``, ``csv``, ``perfetto`` and ``parquet`` also write those
    outputs. Raises :class:`StepscopeError` with the command's message and hint when
    nothing could be read or an output cannot be written.
    """
    text, tables, exit_code = _call(
        _stepscope.analyze,
        _paths(paths),
        capture=capture,
        no_capture_folder=no_capture_folder,
        categories=categories,
        format=format,
        allow_truncated=allow_truncated,
        threads=threads,
        range=range,
        device=device,
        fail_on_incomplete=fail_on_incomplete,
        strict=strict,
        top=top,
        html=html,
        csv=csv,
        perfetto=perfetto,
        parquet=parquet,
        run_id=run_id,
    )
    return Analysis(json.loads(text), tables, exit_code)


def diff(
    base: PathLike,
    new: PathLike,
    *,
    force: bool = False,
    fail_on_regression: float | None = None,
    no_capture_folder: bool = False,
    categories: PathLike | None = None,
    format: str | None = None,
    allow_truncated: bool = False,
    threads: int = 0,
    html: PathLike | None = None,
    top: int = 10,
) -> Diff:
    """Compares two runs (files, folders of rank files, or profile run directories), as
    ``stepscope diff BASE NEW --json`` does. ``fail_on_regression`` (percent) sets the
    gate whose result ``exit_code`` and ``regression_gate`` give. A value of the wrong type
    is a ``TypeError``, an unusable one a ``ValueError``, each naming the parameter."""
    text, exit_code = _call(
        _stepscope.diff,
        base,
        new,
        force=force,
        fail_on_regression=fail_on_regression,
        no_capture_folder=no_capture_folder,
        categories=categories,
        format=format,
        allow_truncated=allow_truncated,
        threads=threads,
        html=html,
        top=top,
    )
    return Diff(json.loads(text), exit_code)


def env(
    *,
    rocm: str | None = None,
    cuda: bool = False,
    trace: None | PathLike | Iterable[PathLike] = None,
    detect: bool = False,
    pid: int | None = None,
    python_env: PathLike | None = None,
    root: PathLike | None = None,
) -> dict[str, Any]:
    """The runtime switches that make the profiler record every graph replay, as
    ``stepscope env`` gives them: ``{"switches": {VARIABLE: VALUE}, "explanation": text}``.
    Give one of ``rocm`` (a version), ``cuda``, ``trace`` (files or folders), ``detect``
    (with ``pid``, ``python_env`` or ``root``)."""
    switches, explanation = _call(
        _stepscope.env,
        rocm=rocm,
        cuda=cuda,
        trace=[] if trace is None else _paths(trace),
        detect=detect,
        pid=pid,
        python_env=python_env,
        root=root,
    )
    return {"switches": dict(switches), "explanation": explanation}


def check_configs(paths: PathLike | Iterable[PathLike]) -> list[dict[str, Any]]:
    """``stepscope config check``: per config file (folders are searched for ``.yaml``),
    ``path``, ``kind``, ``framework``, ``fingerprint`` and ``findings`` (each naming the file,
    line and key; empty when the config passes)."""
    checked = _call(_stepscope.check_configs, _paths(paths))
    keys = ("path", "kind", "framework", "fingerprint", "findings")
    return [dict(zip(keys, row)) for row in checked]
