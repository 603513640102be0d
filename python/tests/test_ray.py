"""``stepscope.ray.analyze_fleet`` in Ray's local mode: a folder of rank files fanned out as
tasks into one dataset that DuckDB reads with the replay counts of ``analyze FOLDER``."""

import json
import shutil
import subprocess

import pytest
from conftest import TRACES

ray = pytest.importorskip("ray")
duckdb = pytest.importorskip("duckdb")

import stepscope.ray

RANKS = [
    "tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz",
    "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def rank_folder(root):
    folder = root / "run-a"
    folder.mkdir()
    for rank, name in enumerate(RANKS):
        shutil.copy(TRACES / name, folder / f"rank{rank}.json.gz")
    return folder


def test_a_folder_of_rank_files_becomes_one_dataset(local_ray, tmp_path, cli):
    folder = rank_folder(tmp_path)
    single = tmp_path / "single.json.gz"
    shutil.copy(TRACES / RANKS[0], single)
    out = tmp_path / "dataset"
    runs = stepscope.ray.analyze_fleet([folder, single], out, progress=False)
    assert [r["run"] for r in runs] == ["run-a", "single"]
    whole = json.loads(
        subprocess.run(
            [cli, "analyze", str(folder), "--json", "--no-progress"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    run = runs[0]
    assert run["verdict"] == whole["verdict"]
    assert len(run["files"]) == len(RANKS) and run["failed"] == []
    replays = sum(f["replay_coverage"]["replays"] for f in whole["files"])
    assert run["counts"]["replays"] == replays
    rows = duckdb.sql(
        f"SELECT split_part(run_id, '.', 1) AS run, count(*) AS n "
        f"FROM '{out}/replays/*.parquet' GROUP BY run ORDER BY run"
    ).fetchall()
    single_replays = runs[1]["counts"]["replays"]
    assert rows == [("run-a", replays), ("single", single_replays)]
    files = duckdb.sql(f"SELECT count(*) FROM '{out}/files/*.parquet'").fetchall()[0][0]
    assert files == len(RANKS) + 1


def test_a_pattern_that_matches_nothing_is_an_error(tmp_path):
    with pytest.raises(stepscope.StepscopeError) as error:
        stepscope.ray.plan([str(tmp_path / "nothing-*")])
    assert "matches no file" in str(error.value)
