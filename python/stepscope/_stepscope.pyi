"""Type stubs of the extension module (crates/stepscope-py)."""

import os

__version__: str

class StepscopeError(Exception):
    """``args`` is ``(message, hint or None, exit_code)``."""

def run_cli(args: list[str]) -> int:
    """Runs ``stepscope ARGS…`` as the command line does; its exit code."""

def analyze(
    paths: list[str],
    *,
    capture: str | os.PathLike[str] | None = None,
    no_capture_folder: bool = False,
    categories: str | os.PathLike[str] | None = None,
    format: str | None = None,
    allow_truncated: bool = False,
    threads: int = 0,
    range: str | None = None,
    device: str | None = None,
    fail_on_incomplete: bool = False,
    strict: bool = False,
    top: int = 10,
    html: str | os.PathLike[str] | None = None,
    csv: str | os.PathLike[str] | None = None,
    perfetto: str | os.PathLike[str] | None = None,
    parquet: str | os.PathLike[str] | None = None,
    run_id: str | None = None,
) -> tuple[str, dict[str, bytes], int]:
    """``stepscope analyze`` from typed keyword arguments (no command line): the JSON
    document, every table as Parquet bytes, and the exit code. A wrong type raises
    ``TypeError``, an unusable value ``ValueError``, each naming the parameter; what the
    command would fail on raises ``StepscopeError``."""

def diff(
    base: str | os.PathLike[str],
    new: str | os.PathLike[str],
    *,
    force: bool = False,
    fail_on_regression: float | None = None,
    no_capture_folder: bool = False,
    categories: str | os.PathLike[str] | None = None,
    format: str | None = None,
    allow_truncated: bool = False,
    threads: int = 0,
    html: str | os.PathLike[str] | None = None,
    top: int = 10,
) -> tuple[str, int]:
    """``stepscope diff`` from typed keyword arguments: the JSON document and the exit
    code. Types and values are checked as ``analyze``'s are."""

def find_traces(paths: list[str]) -> list[str]:
    """The trace files ``stepscope analyze PATHS`` would read, in its order."""

def combine_verdicts(verdicts: list[str], failed: int) -> str:
    """Several files' verdicts together, as ``analyze`` combines a folder's."""

def env(
    *,
    rocm: str | None = None,
    cuda: bool = False,
    trace: list[str] = ...,
    detect: bool = False,
    pid: int | None = None,
    python_env: str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] | None = None,
) -> tuple[list[tuple[str, str]], str]:
    """``stepscope env`` from typed keyword arguments: the switches and the explanation.
    Exactly one of ``rocm``, ``cuda``, ``trace``, ``detect``; a wrong type is a
    ``TypeError``, an unusable combination a ``ValueError`` naming the parameters."""

def check_configs(paths: list[str]) -> list[tuple[str, str, str, str, list[str]]]:
    """``stepscope config check PATHS…``: per config, path, kind, framework, fingerprint and
    findings."""
