"""Shared paths for the package's tests, which run against the installed wheel
(``bash scripts/python-wheel.sh``), never against the source tree."""

import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACES = ROOT / "testdata" / "traces"


def corpus_dir():
    """The trace corpus (``STEPSCOPE_TRACES``), when the environment names one."""
    path = os.environ.get("STEPSCOPE_TRACES")
    return pathlib.Path(path) if path and pathlib.Path(path).is_dir() else None


@pytest.fixture(scope="session")
def cli():
    """The ``stepscope`` command the wheel installed."""
    path = shutil.which("stepscope")
    assert path, "the wheel's `stepscope` command is not on PATH"
    return path
