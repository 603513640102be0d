"""Type stubs of the extension module (crates/stepscope-py)."""

__version__: str

class StepscopeError(Exception):
    """``args`` is ``(message, hint or None, exit_code)``."""

def run_cli(args: list[str]) -> int:
    """Runs ``stepscope ARGS…`` as the command line does; its exit code."""

def analyze(args: list[str]) -> tuple[str, dict[str, bytes], int]:
    """``stepscope analyze ARGS…``: the JSON document, every table as Parquet bytes, and the
    exit code; raises ``StepscopeError`` when the command would fail."""

def diff(args: list[str]) -> tuple[str, int]:
    """``stepscope diff ARGS…``: the JSON document and the exit code."""

def find_traces(paths: list[str]) -> list[str]:
    """The trace files ``stepscope analyze PATHS`` would read, in its order."""

def combine_verdicts(verdicts: list[str], failed: int) -> str:
    """Several files' verdicts together, as ``analyze`` combines a folder's."""

def env(args: list[str]) -> tuple[list[tuple[str, str]], str]:
    """``stepscope env ARGS…``: the switches and the explanation."""

def check_configs(paths: list[str]) -> list[tuple[str, str, str, str, list[str]]]:
    """``stepscope config check PATHS…``: per config, path, kind, framework, fingerprint and
    findings."""
