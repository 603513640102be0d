"""``stepscope.analyze`` against the ``stepscope`` command the same wheel installs: the same
document, tables that agree with it, errors with the command's message."""

import json
import os
import pathlib
import shutil
import subprocess
import threading
import time

import pytest
import stepscope
from conftest import TRACES, corpus_dir

# Small files of every other format the repository carries (its rpd2tracing JSON is among the
# JSON traces already).
OTHER_FORMATS = [
    "rocmprofiledata/examples/rocm-profile-data/results/matmul_result.rpd",
    "rocmprofiledata/examples/rocm-profile-data/results/matmul_result.json",
    "nsys-ai/tests/fixtures/mock.sqlite",
    "rocprofiler-sdk/source/docs/data/kernel_trace.csv",
]
# The tables, in the order ``--parquet`` writes them (docs/parquet-schema.md).
TABLE_NAMES = [
    "runs",
    "files",
    "graphs",
    "replays",
    "findings",
    "stages",
    "stage_category",
    "kernels",
    "efficiency",
    "ranges",
    "range_category",
    "range_kernels",
]
# Corpus files above this size are left to the Rust suite (each is read twice here).
CORPUS_LIMIT = 64 << 20


def json_traces(root):
    """Every JSON trace under `root` (capture traces are read with their runs)."""
    return {
        str(p.relative_to(root)): p
        for p in root.rglob("*")
        if p.is_file()
        and (p.name.endswith(".json") or p.name.endswith(".json.gz"))
        and "capture_traces" not in p.parts
        and p.stat().st_size <= CORPUS_LIMIT
    }


def kineto_traces():
    """The repository's JSON traces, and the corpus's when there is one (by path, once)."""
    found = json_traces(TRACES)
    corpus = corpus_dir()
    if corpus is not None:
        found.update(json_traces(corpus))
    return [found[key] for key in sorted(found)]


def converted():
    """rocprofv3 SQLite and JSON files written from a real trace (scripts/python-wheel.sh)."""
    folder = os.environ.get("STEPSCOPE_PY_FORMATS")
    if not folder:
        return []
    return sorted(pathlib.Path(folder).glob("*_results.*"))


def cases():
    """Each file once: the JSON traces, the other formats carried, the converted ones."""
    found = kineto_traces()
    found += [TRACES / p for p in OTHER_FORMATS if not p.endswith(".json")]
    return found + converted()


def cli_document(cli, path):
    """`stepscope analyze PATH --json`'s document; None when it read nothing (exit 2)."""
    done = subprocess.run(
        [cli, "analyze", str(path), "--json", "--no-progress"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 2), done.stderr
    if not done.stdout.strip():
        assert done.returncode == 2, done.stderr
        return None
    return json.loads(done.stdout)


@pytest.mark.parametrize("path", cases(), ids=lambda p: str(p).split("traces/")[-1])
def test_the_document_equals_the_commands_json(cli, path):
    expected = cli_document(cli, path)
    if expected is None:
        # The command read nothing: the API raises, with the command's exit code.
        with pytest.raises(stepscope.StepscopeError) as error:
            stepscope.analyze(path)
        assert error.value.exit_code == 2
        return
    result = stepscope.analyze(path)
    assert result.document == expected
    tables = result.tables
    # Every table of --parquet, and each agrees with the document.
    assert tables.names == TABLE_NAMES
    assert tables.files.num_rows == len(result.files)
    stages = sum(len((f.get("breakdown") or {}).get("stages") or []) for f in result.files)
    assert tables.stages.num_rows == stages
    replays = sum(f["replay_coverage"]["replays"] for f in result.files)
    assert tables.replays.num_rows == replays
    graphs = sum(len(f["replay_coverage"]["graphs"]) for f in result.files)
    assert tables.graphs.num_rows == graphs
    findings = sum(len(f["replay_coverage"]["findings"]) for f in result.files)
    assert tables.findings.num_rows == findings
    json_gpu_us = sum(
        s["gpu_time_us"]
        for f in result.files
        for s in ((f.get("breakdown") or {}).get("stages") or [])
    )
    table_gpu_ns = sum(tables.stages.arrow.column("gpu_time_ns").to_pylist())
    assert table_gpu_ns / 1000 == pytest.approx(json_gpu_us, rel=1e-9, abs=1e-3)


def test_dataframes_hold_the_tables_rows_and_sums():
    path = TRACES / "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz"
    result = stepscope.analyze(path)
    frame = result.tables.stages.to_pandas()
    assert len(frame) == result.tables.stages.num_rows
    shares = result.stage_shares()[str(path)]
    for row in frame.itertuples():
        assert row.share_of_total == pytest.approx(shares[row.stage])
    polars_frame = result.tables.kernels.to_polars()
    assert polars_frame.height == result.tables.kernels.num_rows
    assert polars_frame["time_ns"].sum() == sum(
        result.tables.kernels.arrow.column("time_ns").to_pylist()
    )


def test_the_verdict_counts_findings_and_advice_are_attributes():
    path = TRACES / "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
    result = stepscope.analyze(path)
    assert result.verdict == result.document["verdict"] == "complete"
    assert result.counts["replays"] == result.counts["recorded_replays"] == 1
    assert result.findings == []
    assert result.advice[0]["applies"] is False
    assert result.exit_code == 0
    page = result._repr_html_()
    assert "COMPLETE" in page and "1 of 1 graph replays recorded" in page
    assert "complete" in repr(result)


def test_errors_raise_with_the_commands_message_and_hint(tmp_path):
    missing = tmp_path / "missing.json.gz"
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.analyze(missing)
    assert str(missing) in error.value.message
    assert error.value.exit_code == 2
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [')
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.analyze(broken)
    assert "broken.json" in error.value.message
    # The fix is said as the option a Python caller gives, not only as the command's flag.
    assert "allow_truncated=True" in (error.value.hint or ""), error.value.hint


def test_each_unreadable_file_is_named_in_the_message_and_each_fix_in_the_hint(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    cut = tmp_path / "cut.json"
    cut.write_text('{"traceEvents": [{"ph": "X"')
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.analyze([empty, cut])
    message, hint = error.value.message, error.value.hint or ""
    assert "empty.json` is empty" in message and "cut.json` is not valid trace JSON" in message
    assert "hint" not in message, message
    # Both fixes, each from its own error, and nothing of the messages.
    assert "the profiler wrote nothing" in hint and "allow_truncated=True" in hint, hint
    assert "cut.json" not in hint and "is empty" not in hint, hint


SGLANG = TRACES / "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"


@pytest.mark.parametrize(
    "keywords, parameter",
    [
        ({"top": "5"}, "top"),
        ({"strict": "yes"}, "strict"),
        ({"threads": 1.5}, "threads"),
        ({"html": 7}, "html"),
        ({"device": 300}, "device"),
        ({"run_id": ["a"]}, "run_id"),
    ],
)
def test_a_keyword_of_the_wrong_type_is_a_type_error_naming_it(keywords, parameter):
    # Typed all the way into Rust: no command line is built, so "5" is not read as 5.
    with pytest.raises(TypeError) as error:
        stepscope.analyze(SGLANG, **keywords)
    assert f"'{parameter}'" in str(error.value), str(error.value)


@pytest.mark.parametrize(
    "keywords, says",
    [
        ({"device": "XYZ"}, ["device", "XYZ", "MI300X"]),
        ({"format": "parquet"}, ["format", "parquet", "kineto-json"]),
        ({"range": "("}, ["range", "regex"]),
        ({"top": -1}, ["top", "-1"]),
        ({"threads": -2}, ["threads", "-2"]),
    ],
)
def test_a_value_that_cannot_be_used_is_a_value_error_naming_it(keywords, says):
    with pytest.raises(ValueError) as error:
        stepscope.analyze(SGLANG, **keywords)
    for word in says:
        assert word in str(error.value), str(error.value)


def test_an_unknown_keyword_and_a_path_that_is_no_path_are_type_errors():
    with pytest.raises(TypeError, match="no_such_option"):
        stepscope.analyze(SGLANG, no_such_option=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="paths"):
        stepscope.analyze(42)  # type: ignore[arg-type]


def test_keywords_reach_the_analysis_as_the_flags_do(cli, tmp_path):
    # `format`, `range`, `device`, `top` and the outputs, against the command's own flags.
    keywords = {"format": "kineto-json", "range": "^forward", "device": "H100", "top": 3}
    result = stepscope.analyze(SGLANG, csv=tmp_path / "csv", perfetto=tmp_path / "p.json", **keywords)
    flags = ["--format", "kineto-json", "--range", "^forward", "--device", "H100", "--top", "3"]
    done = subprocess.run(
        [cli, "analyze", str(SGLANG), "--json", "--no-progress", *flags],
        capture_output=True, text=True, check=True,
    )
    document = json.loads(done.stdout)
    for key in ("files",):
        ours, theirs = result.document[key][0], document[key][0]
        assert ours["breakdown"] == theirs["breakdown"]
        assert ours["ranges"] == theirs["ranges"]
        assert ours["efficiency"]["device"] == theirs["efficiency"]["device"]
    assert (tmp_path / "csv").is_dir() and (tmp_path / "p.json").is_file()


def test_the_gil_is_released_while_a_trace_is_read(tmp_path):
    # Forty copies of a real trace: long enough (well over 0.1 s) that a thread held out by
    # the GIL would be seen not to tick at all.
    source = TRACES / "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz"
    for n in range(40):
        shutil.copy(source, tmp_path / f"rank{n}.json.gz")
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.01)
    started = time.perf_counter()
    try:
        stepscope.analyze(tmp_path)
    finally:
        ended = time.perf_counter()
        done.set()
        ticker.join()
    assert ended - started > 0.1, "too quick to tell"
    during = [t for t in ticks if started < t < ended]
    assert len(during) >= 20, (ended - started, len(during))


def test_a_parquet_dataset_is_written_as_the_flag_writes_it(tmp_path):
    path = TRACES / "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
    result = stepscope.analyze(path, parquet=tmp_path / "ds", run_id="run-1")
    assert (tmp_path / "ds" / "replays" / "run-1.parquet").is_file()
    assert result.tables.runs.arrow.column("run_id").to_pylist() == ["run-1"]


def test_the_command_line_comes_with_the_wheel(cli):
    done = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("stepscope ")
    assert stepscope.__version__ in done.stdout
    bad = subprocess.run([cli, "analyze"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2


def test_diff_equals_the_commands_json_and_gates(cli, tmp_path):
    base = TRACES / "hta/tests/data/negative_queue_length_values_check/rank0.json.gz"
    result = stepscope.diff(base, base, fail_on_regression=5)
    done = subprocess.run(
        [cli, "diff", str(base), str(base), "--json", "--no-progress", "--fail-on-regression", "5"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.document == json.loads(done.stdout)
    assert result.exit_code == done.returncode == 0
    assert result.regression_gate["slower"] == []
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.diff(tmp_path / "missing.json", base)
    assert "missing.json" in error.value.message


def test_the_converted_formats_are_compared_when_the_script_writes_them():
    if os.environ.get("STEPSCOPE_PY_FORMATS"):
        names = sorted(p.name for p in converted())
        assert names == ["sglang_decode_results.db", "sglang_decode_results.json"]


def _write_kineto(path, events):
    with open(path, "w") as out:
        out.write('{"traceEvents": [\n')
        out.write(
            ",\n".join(
                f'{{"ph": "X", "cat": "kernel", "name": "gemm_{i % 97}", "pid": 0, "tid": 7, '
                f'"ts": {1000 + 10 * i}, "dur": 5, "args": {{"correlation": {i}, "device": 0, '
                f'"stream": 7}}}}'
                for i in range(events)
            )
        )
        out.write("]}\n")


def test_a_trace_cut_while_read_raises_and_the_interpreter_lives(tmp_path):
    # A mapped page past a file's new end raises SIGBUS: before the guard, this killed the
    # interpreter (pytest's faulthandler, which it chains to, printed a traceback and died).
    path = tmp_path / "still_writing.json"
    told = 0
    for after in (0.005, 0.02, 0.05, 0.1):
        _write_kineto(path, 400_000)
        cutter = threading.Timer(after, lambda: os.truncate(path, 8192))
        cutter.start()
        try:
            stepscope.analyze(path)
        except stepscope.StepscopeError as error:
            if "changed while it was read" in error.message:
                assert "still_writing.json" in error.message
                assert error.exit_code == 2
                told += 1
        finally:
            cutter.join()
    assert told > 0, "no cut landed inside a read: make the file longer"


@pytest.mark.parametrize(
    "keywords, error, says",
    [
        ({"top": "5"}, TypeError, ["'top'"]),
        ({"force": "yes"}, TypeError, ["'force'"]),
        ({"fail_on_regression": "5"}, TypeError, ["'fail_on_regression'"]),
        ({"fail_on_regression": -1.0}, ValueError, ["fail_on_regression", "-1"]),
        ({"format": "parquet"}, ValueError, ["format", "parquet"]),
    ],
)
def test_diff_takes_typed_keywords(keywords, error, says):
    with pytest.raises(error) as raised:
        stepscope.diff(SGLANG, SGLANG, **keywords)
    for word in says:
        assert word in str(raised.value), str(raised.value)


def test_an_error_is_raised_not_printed_first(tmp_path, capfd):
    # The exception carries every unreadable file's error; nothing goes to stderr before.
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [')
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.analyze(broken)
    assert "broken.json" in error.value.message
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.diff(broken, SGLANG)
    assert "BASE" in error.value.message and "broken.json" in error.value.message
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == "", captured


def test_files_written_from_python_are_not_announced_on_stderr(tmp_path, capfd):
    # The caller named every output; the command's "wrote …" notes are for a terminal.
    stepscope.analyze(
        SGLANG,
        html=tmp_path / "page.html",
        csv=tmp_path / "csv",
        parquet=tmp_path / "dataset",
        perfetto=tmp_path / "perfetto.json",
    )
    stepscope.diff(SGLANG, SGLANG, html=tmp_path / "diff.html")
    for written in ["page.html", "csv/stages.csv", "dataset", "perfetto.json", "diff.html"]:
        assert (tmp_path / written).exists(), written
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == "", captured


def test_the_notebook_display_of_an_incomplete_result_says_what_is_missing_and_the_fix(
    cli, tmp_path
):
    done = subprocess.run(
        [cli, "demo", "--keep", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 3), done.stderr
    symptom = tmp_path / "demo_rocm_symptom.trace.json.gz"
    page = stepscope.analyze(symptom)._repr_html_()
    assert "INCOMPLETE" in page
    assert "miss" in page and " ms of GPU time" in page, page
    assert "DEBUG_CLR_GRAPH_PACKET_CAPTURE=0" in page, page
    none = stepscope.analyze(TRACES / "stepscope/vllm-cpu/rank0.1796509274149173928.pt.trace.json.gz")
    assert "no graph replays" in none._repr_html_()
    assert "0 of 0" not in none._repr_html_()


def test_a_diff_has_a_notebook_display_with_its_stages_and_refusals(cli, tmp_path):
    subprocess.run(
        [cli, "demo", "--keep", str(tmp_path)],
        capture_output=True,
        check=False,
    )
    result = stepscope.diff(
        tmp_path / "demo_complete.trace.json.gz", tmp_path / "demo_rocm_symptom.trace.json.gz"
    )
    page = result._repr_html_()
    assert "prefill" in page and "ms/step" in page, page
    assert "Refused" in page and "decode" in page, page
