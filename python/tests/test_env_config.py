"""``stepscope.env`` and ``stepscope.check_configs`` against the commands they run in-process."""

import subprocess

import pytest
import stepscope
from conftest import ROOT, TRACES


def run(cli, *args):
    return subprocess.run([cli, *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("version", ["7.2.0", "7.2", "6.4.1", "7.0.2"])
def test_env_gives_the_commands_switches_and_explanation(cli, version):
    result = stepscope.env(rocm=version)
    done = run(cli, "env", "--rocm", version)
    assert done.returncode == 0
    assert result["switches"] == dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert result["explanation"] == done.stderr


def test_env_from_a_trace_and_for_cuda(cli):
    trace = TRACES / "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
    result = stepscope.env(trace=trace)
    done = run(cli, "env", "--trace", str(trace))
    assert result["switches"] == dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert stepscope.env(cuda=True)["switches"] == {}


def test_env_of_an_unreadable_trace_raises(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.env(trace=broken)
    assert "broken.json" in str(error.value)


def test_config_check_passes_the_shipped_configs_and_names_a_missing_switch(cli, tmp_path):
    checked = stepscope.check_configs(ROOT / "configs")
    assert len(checked) == 6
    assert all(c["findings"] == [] for c in checked)
    assert {c["kind"] for c in checked} == {"profile", "baseline"}
    fingerprints = run(cli, "config", "fingerprint", *[c["path"] for c in checked])
    for config in checked:
        assert config["fingerprint"] in fingerprints.stdout
    profile = (ROOT / "configs" / "profile_vllm.yaml").read_text()
    broken = tmp_path / "profile_broken.yaml"
    broken.write_text(
        "\n".join(line for line in profile.splitlines() if "DEBUG_CLR_GRAPH_PACKET_CAPTURE" not in line)
    )
    [result] = stepscope.check_configs(broken)
    assert result["findings"] and "DEBUG_CLR_GRAPH_PACKET_CAPTURE" in result["findings"][0]
    done = run(cli, "config", "check", str(broken))
    assert done.returncode == 3
    assert result["findings"][0] in done.stdout
    with pytest.raises(stepscope.StepscopeError):
        stepscope.check_configs(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    "keywords, error, says",
    [
        ({}, ValueError, ["rocm, cuda, trace, detect", "exactly one"]),
        ({"rocm": "7.2.0", "cuda": True}, ValueError, ["exactly one"]),
        ({"rocm": "7.2.0", "pid": 1}, ValueError, ["pid", "detect=True"]),
        ({"rocm": 7}, TypeError, ["'rocm'"]),
        ({"cuda": "yes"}, TypeError, ["'cuda'"]),
    ],
)
def test_env_takes_typed_keywords_and_one_source(keywords, error, says):
    # Typed into Rust: no command line is built, so the errors name the keywords.
    with pytest.raises(error) as raised:
        stepscope.env(**keywords)
    for word in says:
        assert word in str(raised.value), str(raised.value)
