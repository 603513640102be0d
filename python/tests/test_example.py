"""The worked example in examples/ runs on the carried trace and draws its plot."""

import subprocess
import sys

import pytest
from conftest import ROOT

pytest.importorskip("matplotlib")
pytest.importorskip("pandas")


def test_the_example_runs(tmp_path):
    out = tmp_path / "shares.png"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "decode_shares.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("verdict: ")
    assert "gemm" in done.stdout
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
