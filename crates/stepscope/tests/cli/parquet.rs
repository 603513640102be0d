//! `analyze --parquet`: the tables of real traces, read back by an independent reader
//! (DuckDB's Python package, in the venv `scripts/py-tools.sh setup` makes), hold the same
//! numbers as `--json`; two runs appended to one folder read as one table; the README's query
//! runs on it; a run id already there is refused.

use crate::common::{SGLANG_DECODE, VLLM_PIECEWISE, arg, copy_trace, stepscope, tempdir, trace};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/parquet-schema.md");
/// NVIDIA: 70 graph launches of 1, 2 or 8 kernels, world size 16.
const HTA_GRAPHS: &str = "hta/tests/data/negative_queue_length_values_check/rank0.json.gz";
/// rocmProfileData SQLite: no graph launches, no rank.
const RPD: &str = "rocmprofiledata/examples/rocm-profile-data/results/matmul_result.rpd";

/// The venv's Python with DuckDB: `STEPSCOPE_PY_TOOLS_VENV` or the script's default. A
/// missing venv fails the test (CI makes it before `cargo test`), never skips it.
fn duckdb_python() -> PathBuf {
    let venv = std::env::var_os("STEPSCOPE_PY_TOOLS_VENV").map_or_else(
        || {
            let home = std::env::var_os("HOME").expect("HOME is set");
            Path::new(&home).join(".cache/stepscope/py-tools-venv")
        },
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "no DuckDB venv at {}: the Parquet tests read the tables with DuckDB\nhint: run `bash scripts/py-tools.sh setup` (or set STEPSCOPE_PY_TOOLS_VENV)",
        venv.display()
    );
    python
}

/// Runs `script` (Python, DuckDB imported as `duckdb`, the dataset folder as `DIR`) and
/// parses what it prints as JSON.
fn query(dir: &Path, script: &str) -> Value {
    let program =
        format!("import duckdb, json, sys\nDIR = sys.argv[1]\ncon = duckdb.connect()\n{script}");
    let output = Command::new(duckdb_python())
        .arg("-c")
        .arg(program)
        .arg(dir)
        .output()
        .expect("the venv's python runs");
    assert!(
        output.status.success(),
        "the DuckDB script failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the script prints JSON")
}

/// The Python that turns a table's rows into JSON objects, `*_ns` columns also as `*_us`
/// (`ns / 1000`, as the JSON computes its microseconds).
const ROWS: &str = r#"
def rows(sql):
    result = con.sql(sql)
    names = result.columns
    out = []
    for values in result.fetchall():
        row = dict(zip(names, values))
        for name, value in list(row.items()):
            if name.endswith("_ns"):
                row[name[:-3] + "_us"] = None if value is None else value / 1000
        out.append(row)
    return out
def table(name):
    return f"read_parquet('{DIR}/{name}/*.parquet')"
"#;

/// The folder of traces: the piecewise vLLM trace, the same with two replays' kernels removed
/// and called rank 1 (no public trace misses replays), SGLang decode, HTA's NVIDIA graph
/// trace, a file that is no trace; and beside the folder an RPD database (no rank).
fn traces(dir: &Path) -> PathBuf {
    use stepscope_synth::removal::{keep_only, read_json, to_json_bytes};
    let folder = dir.join("traces");
    copy_trace(VLLM_PIECEWISE, &folder, "piecewise.json.gz");
    let mut missing = read_json(&trace(VLLM_PIECEWISE)).expect("the piecewise trace reads");
    assert_eq!(keep_only(&mut missing, |i| i != 5 && i != 6), 30);
    missing["distributedInfo"]["rank"] = json!(1);
    std::fs::write(
        folder.join("piecewise_missing_2.json"),
        to_json_bytes(&missing),
    )
    .expect("write");
    copy_trace(SGLANG_DECODE, &folder, "sglang_decode.json.gz");
    copy_trace(HTA_GRAPHS, &folder, "hta_rank0.json.gz");
    // A folder search takes JSON and CSV files only: the database is given by name.
    copy_trace(RPD, dir, "matmul.rpd");
    std::fs::write(folder.join("not_a_trace.json"), "{}").expect("write");
    folder
}

/// `analyze traces matmul.rpd --json --parquet OUT [ARGS]` in `cwd`: its JSON document.
fn analyze(cwd: &Path, out: &Path, args: &[&str], code: i32) -> Value {
    let mut all = vec!["analyze", "traces", "matmul.rpd", "--json", "--no-progress"];
    all.push("--parquet");
    all.push(out.to_str().expect("path"));
    all.extend(args);
    let run = crate::common::stepscope_in(cwd, all, &[]);
    run.expect_code(code);
    assert!(run.stderr.contains("parquet: run `"), "{}", run.stderr);
    run.json()
}

#[test]
fn the_tables_hold_the_json_numbers_and_runs_append() {
    let dir = tempdir();
    traces(dir.path());
    let out = dir.path().join("dataset");
    let first = analyze(dir.path(), &out, &["--run-id", "run-a"], 2);
    let second = analyze(dir.path(), &out, &[], 2);
    assert_eq!(first["files"].as_array().map(Vec::len), Some(5));
    assert_eq!(first["failed_files"].as_array().map(Vec::len), Some(1));
    let tables = query(&out, &format!("{ROWS}{DUMP}"));
    assert_eq!(tables["started_at_type"], "TIMESTAMP WITH TIME ZONE");
    let runs = tables["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "two runs: {runs:?}");
    assert_eq!(runs[0]["run_id"], "run-a");
    for (run, document) in runs.iter().zip([&first, &second]) {
        assert_eq!(run["files_read"], 5);
        assert_eq!(run["files_failed"], 1);
        assert_eq!(run["verdict"], document["verdict"]);
        let id = run["run_id"].as_str().expect("id");
        check_run(&tables, id, document);
    }
    assert_readme_query(&out, &[&first, &second], runs);
}

/// Every table of run `id` against its JSON document.
fn check_run(tables: &Value, id: &str, document: &Value) {
    let of = |name: &str| -> Vec<&Value> {
        tables[name]
            .as_array()
            .expect("table")
            .iter()
            .filter(|row| row["run_id"] == id)
            .collect()
    };
    let files = of("files");
    assert_eq!(files.len(), 6, "five files read and one not");
    let failed = files
        .iter()
        .find(|f| f["file"] == document["failed_files"][0]["path"])
        .expect("the unreadable file has a row");
    assert_eq!(failed["verdict"], "unreadable");
    assert_eq!(failed["error"], document["failed_files"][0]["error"]);
    assert_eq!(failed["replays"], Value::Null);
    for file in document["files"].as_array().expect("files") {
        let path = &file["path"];
        let row = *files.iter().find(|f| f["file"] == *path).expect("file row");
        check_file(row, file);
        let mine = |name: &str| -> Vec<&Value> {
            of(name)
                .into_iter()
                .filter(|r| r["file"] == *path)
                .collect()
        };
        check_replays(&mine("replays"), &mine("findings"), file);
        check_breakdown(
            &mine("stages"),
            &mine("stage_category"),
            &mine("kernels"),
            file,
        );
        check_efficiency(&mine("efficiency"), file);
        assert_eq!(
            mine("graphs").len(),
            file["replay_coverage"]["graphs"]
                .as_array()
                .map_or(0, Vec::len),
            "graphs of {path}"
        );
    }
}

/// The efficiency rows: the JSON's `efficiency.ops`, with its numbers.
fn check_efficiency(rows: &[&Value], file: &Value) {
    let ops = file["efficiency"]["ops"].as_array().expect("ops");
    assert_eq!(rows.len(), ops.len(), "efficiency rows of {}", file["path"]);
    for op in ops {
        let row = rows
            .iter()
            .find(|r| {
                [
                    "name",
                    "input_dims",
                    "input_types",
                    "input_strides",
                    "concrete_inputs",
                    "count",
                    "gflops",
                ]
                .iter()
                .all(|key| r[*key] == op[*key])
            })
            .unwrap_or_else(|| panic!("no efficiency row for {op}"));
        assert_eq!(row["data_moved_mib"], op["data_moved_mib"]);
        assert_eq!(row["tflops_mean"], op["tflops"]["mean"]);
        assert_eq!(row["encloses_modelled_op"], op["encloses_modelled_op"]);
        assert_eq!(row["bound"], op["roofline"]["bound"]);
    }
}

/// The Python that dumps every table.
const DUMP: &str = r#"
names = ["runs", "files", "graphs", "replays", "findings", "stages", "stage_category", "kernels", "efficiency"]
order = {"runs": "started_at", "kernels": "run_id, file, stage, position", "findings": "run_id, file, replay", "efficiency": "run_id, file, kernel_time_sum_ns DESC, name, params"}
# A TIMESTAMPTZ reaches Python through pytz, which the venv does not hold: as text.
columns = {"runs": "* REPLACE (started_at::VARCHAR AS started_at)"}
out = {name: rows(f"SELECT {columns.get(name, '*')} FROM {table(name)} ORDER BY {order.get(name, 'ALL')}") for name in names}
out["started_at_type"] = con.sql(f"SELECT typeof(started_at) FROM {table('runs')} LIMIT 1").fetchone()[0]
print(json.dumps(out, default=str))
"#;

/// The files row: the JSON's replay counters, ratios and times.
fn check_file(row: &Value, file: &Value) {
    let coverage = &file["replay_coverage"];
    let pairs = [
        ("rank", &file["rank"]),
        ("world_size", &file["world_size"]),
        ("format", &file["format"]),
        ("verdict", &coverage["verdict"]),
        ("platform", &file["platform"]),
        ("events", &file["events"]["total"]),
        ("kernels", &file["events"]["kernels"]),
        ("recorded_gpu_time_us", &coverage["recorded_gpu_time_us"]),
        ("missing_share", &coverage["missing_share"]),
        ("missing_share_low", &coverage["missing_share_low"]),
        ("missing_share_high", &coverage["missing_share_high"]),
        ("orphan_kernels", &coverage["orphan_kernels"]),
        ("total_gpu_time_us", &file["breakdown"]["total_gpu_time_us"]),
        ("unassigned_share", &file["breakdown"]["unassigned_share"]),
        ("breakdown_method", &file["breakdown"]["method"]),
    ];
    for (column, expected) in pairs {
        assert_eq!(&row[column], expected, "{column} of {}", file["path"]);
    }
    // Every counter, ratio and missing time the JSON's replay_coverage holds.
    // (`*_us` keys are the Python's `*_ns / 1000`.)
    let mut compared = 0;
    for (key, value) in coverage.as_object().expect("coverage") {
        if row.get(key).is_some() && !value.is_array() && !value.is_object() {
            assert_eq!(&row[key], value, "{key} of {}", file["path"]);
            compared += 1;
        }
    }
    assert!(compared >= 35, "{compared} columns compared");
    for key in [
        "replays",
        "recorded_replays",
        "coverage",
        "completeness_low",
        "missing_gpu_time_low_us",
    ] {
        assert_eq!(&row[key], &coverage[key], "{key} of {}", file["path"]);
    }
    let decode = file["breakdown"]["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["stage"] == "decode"));
    assert_eq!(
        row["decode_share"],
        decode.map_or(json!(0.0), |s| s["share_of_total"].clone())
    );
}

/// Replays per status are the JSON's counters; the findings are the JSON's, and the replays
/// they name carry the same kind and launch time.
fn check_replays(replays: &[&Value], findings: &[&Value], file: &Value) {
    let coverage = &file["replay_coverage"];
    let count = |status: &str| replays.iter().filter(|r| r["status"] == status).count() as u64;
    assert_eq!(
        replays.len() as u64,
        coverage["replays"].as_u64().expect("replays")
    );
    for status in ["complete", "unverified", "short", "empty", "damaged"] {
        assert_eq!(
            json!(count(status)),
            coverage[format!("{status}_replays")],
            "{status} replays of {}",
            file["path"]
        );
    }
    let listed = coverage["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), listed.len(), "findings of {}", file["path"]);
    for (row, finding) in findings.iter().zip(listed) {
        for key in [
            "kind",
            "replay",
            "launch_ts_us",
            "step",
            "graph",
            "recorded_nodes",
        ] {
            assert_eq!(row[key], finding[key], "finding {key} of {}", file["path"]);
        }
        assert_eq!(row["evidence_kind"], finding["evidence"]["kind"]);
        let replay = replays
            .iter()
            .find(|r| r["replay"] == finding["replay"])
            .expect("the finding's replay");
        assert_eq!(replay["finding"], finding["kind"]);
        assert_eq!(replay["launch_ts_us"], finding["launch_ts_us"]);
    }
}

/// Stages, stage × category and kernels are the JSON's breakdown rows.
fn check_breakdown(stages: &[&Value], categories: &[&Value], kernels: &[&Value], file: &Value) {
    let json_stages = file["breakdown"]["stages"].as_array().expect("stages");
    assert_eq!(
        stages.len(),
        json_stages.len(),
        "stages of {}",
        file["path"]
    );
    for stage in json_stages {
        let name = &stage["stage"];
        let row = stages
            .iter()
            .find(|s| s["stage"] == *name)
            .expect("stage row");
        for key in [
            "steps",
            "events",
            "gpu_time_us",
            "share_of_total",
            "busy_time_us",
            "idle_time_us",
        ] {
            assert_eq!(row[key], stage[key], "{key} of stage {name}");
        }
        check_stage_idle(row, file, name);
        let rows: Vec<&&Value> = categories.iter().filter(|c| c["stage"] == *name).collect();
        let expected = stage["categories"].as_array().expect("categories");
        assert_eq!(rows.len(), expected.len(), "categories of stage {name}");
        for category in expected {
            let row = rows
                .iter()
                .find(|r| r["category"] == category["name"])
                .expect("category row");
            for key in [
                "events",
                "time_us",
                "share",
                "events_by_op",
                "time_by_op_us",
            ] {
                assert_eq!(
                    row[key], category[key],
                    "{key} of {name} / {}",
                    category["name"]
                );
            }
        }
        let rows: Vec<&&Value> = kernels.iter().filter(|k| k["stage"] == *name).collect();
        let expected = stage["kernels"].as_array().expect("kernels");
        assert_eq!(rows.len(), expected.len(), "kernels of stage {name}");
        for (row, kernel) in rows.iter().zip(expected) {
            assert_eq!(row["kernel"], kernel["name"]);
            assert_eq!(row["time_us"], kernel["time_us"]);
            assert_eq!(row["events"], kernel["events"]);
        }
    }
}

/// A stage row's idle causes: the JSON's, or nulls where it has no such stage row.
fn check_stage_idle(row: &Value, file: &Value, name: &Value) {
    let causes = file["idle_causes"]["stages"]
        .as_array()
        .expect("idle stages")
        .iter()
        .find(|c| c["stage"] == *name);
    for (column, key) in [
        ("idle_host_wait_us", "host_wait_us"),
        ("idle_host_wait_after_sync_us", "host_wait_after_sync_us"),
        ("idle_kernel_wait_us", "kernel_wait_us"),
        ("idle_other_us", "other_us"),
        ("idle_between_steps_us", "between_steps_us"),
    ] {
        let expected = causes.map_or(&Value::Null, |c| &c[key]);
        assert_eq!(row[column], *expected, "{column} of stage {name}");
    }
}

/// The README's DuckDB query ("coverage per run and rank"), as written there and in the
/// schema doc, runs on the dataset and gives each rank's replays summed from the JSON.
fn assert_readme_query(dir: &Path, documents: &[&Value], runs: &[Value]) {
    let readme = std::fs::read_to_string(README).expect("README.md");
    let sql = readme
        .split("```sql\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a ```sql block in README.md");
    assert!(
        sql.contains("GROUP BY run_id, rank"),
        "the README's query: {sql}"
    );
    let doc = std::fs::read_to_string(DOC).expect("docs/parquet-schema.md");
    assert!(
        doc.contains(sql),
        "docs/parquet-schema.md holds the README's query"
    );
    let script = format!(
        "sql = {:?}.replace('DIR', DIR)\nresult = con.sql(sql)\nprint(json.dumps([dict(zip(result.columns, r)) for r in result.fetchall()]))",
        sql
    );
    let result = query(dir, &script);
    let rows = result.as_array().expect("rows");
    let mut expected = coverage_per_rank(documents, runs);
    // ORDER BY run_id, rank: DuckDB puts nulls last.
    expected.sort_by_key(|row| {
        (
            row["run_id"].as_str().unwrap_or_default().to_owned(),
            row["rank"].as_u64().unwrap_or(u64::MAX),
        )
    });
    assert_eq!(rows, &expected, "coverage per run and rank");
    // Rank 1 is the piecewise trace with two replays emptied: 23 of 25 recorded.
    assert!(
        rows.iter()
            .any(|r| r["rank"] == 1 && r["recorded_replays"] == 23 && r["replays"] == 25),
        "{rows:?}"
    );
}

/// Per run and rank (in order of first appearance): replays summed from the JSON documents,
/// as the README's query gives them.
fn coverage_per_rank(documents: &[&Value], runs: &[Value]) -> Vec<Value> {
    let mut expected = Vec::new();
    for (run, document) in runs.iter().zip(documents) {
        let mut ranks: Vec<(Value, u64, u64)> = Vec::new();
        for file in document["files"].as_array().expect("files") {
            let rank = file["rank"].clone();
            let coverage = &file["replay_coverage"];
            let (recorded, replays) = (
                coverage["recorded_replays"].as_u64().expect("recorded"),
                coverage["replays"].as_u64().expect("replays"),
            );
            match ranks.iter_mut().find(|r| r.0 == rank) {
                Some(entry) => {
                    entry.1 += recorded;
                    entry.2 += replays;
                }
                None => ranks.push((rank, recorded, replays)),
            }
        }
        for (rank, recorded, replays) in ranks {
            let coverage = if replays == 0 {
                Value::Null
            } else {
                json!(recorded as f64 / replays as f64)
            };
            expected.push(json!({
                "run_id": run["run_id"],
                "rank": rank,
                "recorded_replays": recorded,
                "replays": replays,
                "coverage": coverage,
            }));
        }
    }
    expected
}

#[test]
fn a_run_id_already_in_the_folder_is_refused_and_nothing_is_written() {
    let dir = tempdir();
    let out = dir.path().join("dataset");
    let args = |id: &str| -> Vec<std::ffi::OsString> {
        vec![
            "analyze".into(),
            SGLANG_DECODE.into(),
            "--no-progress".into(),
            "--parquet".into(),
            arg(&out).to_owned(),
            "--run-id".into(),
            id.into(),
        ]
    };
    stepscope(args("node-3")).expect_code(0);
    let files = |dir: &Path| -> usize {
        std::fs::read_dir(dir)
            .expect("dataset")
            .map(|table| {
                std::fs::read_dir(table.expect("entry").path())
                    .expect("table")
                    .count()
            })
            .sum()
    };
    assert_eq!(
        files(&out),
        stepscope_report::tables::TABLES.len(),
        "one file per table"
    );
    let again = stepscope(args("node-3"));
    again.expect_code(2);
    assert!(
        again
            .stderr
            .contains("Run `node-3` is already in the Parquet dataset")
            && again.stderr.contains("node-3.parquet` exists")
            && again
                .stderr
                .contains("hint: pass another run id (`--run-id`"),
        "{}",
        again.stderr
    );
    let tables = stepscope_report::tables::TABLES.len();
    assert_eq!(files(&out), tables, "nothing written");
    let bad = stepscope(args("../escape"));
    bad.expect_code(2);
    assert!(
        bad.stderr.contains("`../escape` is not a valid run id"),
        "{}",
        bad.stderr
    );
    stepscope(args("node-4")).expect_code(0);
    assert_eq!(files(&out), 2 * tables, "a second run adds its files");
    let count = query(
        &out,
        "print(json.dumps(con.sql(f\"SELECT count(DISTINCT run_id) FROM read_parquet('{DIR}/replays/*.parquet')\").fetchone()[0]))",
    );
    assert_eq!(count, 2);
}

/// A run in which no file could be read prints nothing on stdout (as `--json` prints nothing
/// then) but still records the run and each file's error in the dataset, so a fleet's table
/// of runs says which files failed and why.
#[test]
fn a_run_with_no_readable_file_still_records_why() {
    let dir = tempdir();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, r#"{"traceEvents": [{"ph": "X", "#).expect("write");
    let other = dir.path().join("notes.txt");
    std::fs::write(&other, "not a trace\n").expect("write");
    let out = dir.path().join("dataset");
    let run = stepscope([
        "analyze".as_ref(),
        arg(&cut),
        arg(&other),
        "--json".as_ref(),
        "--no-progress".as_ref(),
        "--parquet".as_ref(),
        arg(&out),
        "--run-id".as_ref(),
        "all-failed".as_ref(),
    ] as [&std::ffi::OsStr; 9]);
    run.expect_code(2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains("parquet: run `all-failed`"),
        "{}",
        run.stderr
    );
    let tables = query(
        &out,
        r#"
runs = con.sql(f"SELECT run_id, files_read, files_failed, verdict FROM read_parquet('{DIR}/runs/*.parquet')").fetchall()
files = con.sql(f"SELECT file, format, verdict, error FROM read_parquet('{DIR}/files/*.parquet') ORDER BY file").fetchall()
replays = con.sql(f"SELECT count(*) FROM read_parquet('{DIR}/replays/*.parquet')").fetchone()[0]
print(json.dumps({"runs": runs, "files": files, "replays": replays}))
"#,
    );
    assert_eq!(tables["runs"], json!([["all-failed", 0, 2, "unreadable"]]));
    let files = tables["files"].as_array().expect("files");
    assert_eq!(files.len(), 2);
    for (row, path, says) in [
        (&files[0], &cut, "the JSON text ends inside an event"),
        (&files[1], &other, "is not a format stepscope reads"),
    ] {
        assert_eq!(row[0], path.display().to_string());
        assert_eq!((&row[1], &row[2]), (&Value::Null, &json!("unreadable")));
        assert!(row[3].as_str().is_some_and(|e| e.contains(says)), "{row}");
    }
    assert_eq!(tables["replays"], 0);
}

/// Two runs started at once with one run id into one folder: one wins whole, the other
/// writes nothing and says the id is taken. Every table of the winner's run names only its
/// own trace (a mix of both runs' files was the failure), and no hidden file is left.
#[test]
fn two_writers_of_one_run_id_at_once_one_wins_whole() {
    let dir = tempdir();
    let out = dir.path().join("dataset");
    let traces = [trace(SGLANG_DECODE), trace(VLLM_PIECEWISE)];
    let trials = 4;
    for trial in 0..trials {
        let id = format!("race-{trial}");
        let children: Vec<_> = traces
            .iter()
            .map(|input| {
                Command::new(env!("CARGO_BIN_EXE_stepscope"))
                    .args([arg(Path::new("analyze")), arg(input)])
                    .args(["--no-progress", "--parquet"])
                    .arg(&out)
                    .args(["--run-id", &id])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        let results: Vec<_> = children
            .into_iter()
            .map(|child| child.wait_with_output().expect("wait"))
            .collect();
        let won: Vec<usize> = (0..2).filter(|&i| results[i].status.success()).collect();
        assert_eq!(won.len(), 1, "trial {trial}: {results:?}");
        let lost = &results[1 - won[0]];
        assert_eq!(lost.status.code(), Some(2), "{lost:?}");
        let stderr = String::from_utf8_lossy(&lost.stderr);
        assert!(
            stderr.contains(&format!("Run `{id}` is already in the Parquet dataset")),
            "{stderr}"
        );
        let winner = traces[won[0]].to_string_lossy().into_owned();
        let names = query(
            &out,
            &format!(
                "{ROWS}\nout = []\nfor t in ['files','replays','stages','kernels','efficiency']:\n    out += [r['file'] for r in rows(f\"SELECT DISTINCT file FROM {{table(t)}} WHERE run_id = '{id}'\")]\nprint(json.dumps(sorted(set(out))))"
            ),
        );
        assert_eq!(names, json!([winner]), "trial {trial}");
    }
    let mut entries = 0;
    for table in std::fs::read_dir(&out).expect("dataset") {
        for file in std::fs::read_dir(table.expect("entry").path()).expect("table") {
            let name = file.expect("file").file_name();
            assert!(
                !name.to_string_lossy().starts_with('.'),
                "left behind: {name:?}"
            );
            entries += 1;
        }
    }
    assert_eq!(entries, stepscope_report::tables::TABLES.len() * trials);
}

/// `--csv` and `--parquet` of one run are the same tables: the same names, the same columns
/// in the same order, the same rows, and in every cell the same value (an independent
/// reader on each side: DuckDB for Parquet, Python's `csv` for CSV).
#[test]
fn csv_and_parquet_hold_the_same_tables_cell_for_cell() {
    let dir = tempdir();
    let folder = traces(dir.path());
    let out = dir.path().join("out");
    let csv = dir.path().join("csv");
    analyze(
        dir.path(),
        &out,
        &["--csv", csv.to_str().expect("path"), "--range", r"^step\["],
        2,
    );
    assert!(folder.is_dir());
    let script = format!(
        r#"
import csv, datetime
CSV = {csv:?}
tables = {tables:?}
report = {{}}
def same(text, value, timestamp):
    if value is None:
        return text == ""
    if timestamp:
        at = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return round(at.timestamp() * 1e6) == value
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, int):
        return int(text) == value
    if isinstance(value, float):
        return float(text) == value
    return text == value or text == "'" + value
for name in tables:
    source = f"read_parquet('{{DIR}}/{{name}}/*.parquet')"
    kinds = con.sql(f"DESCRIBE SELECT * FROM {{source}}").fetchall()
    stamps = [k[1].startswith("TIMESTAMP") for k in kinds]
    select = ", ".join(
        f'epoch_us("{{k[0]}}")' if stamp else f'"{{k[0]}}"' for k, stamp in zip(kinds, stamps)
    )
    rows = con.sql(f"SELECT {{select}} FROM {{source}}").fetchall()
    columns = [k[0] for k in kinds]
    with open(f"{{CSV}}/{{name}}.csv", newline="") as f:
        records = list(csv.reader(f))
    header, records = records[0], records[1:]
    differ = [
        (i, c, records[i][j], repr(row[j]))
        for i, row in enumerate(rows) if i < len(records)
        for j, c in enumerate(columns) if not same(records[i][j], row[j], stamps[j])
    ]
    report[name] = {{"header": header == columns, "rows": [len(rows), len(records)],
                     "differ": differ[:5]}}
print(json.dumps(report))
"#,
        csv = csv.display().to_string(),
        tables = stepscope_report::tables::TABLES,
    );
    let report = query(&out, &script);
    let mut with_rows = 0;
    for name in stepscope_report::tables::TABLES {
        let table = &report[name];
        assert_eq!(table["header"], true, "{name}: {table}");
        assert_eq!(table["rows"][0], table["rows"][1], "{name}: {table}");
        assert_eq!(table["differ"], json!([]), "{name}: {table}");
        with_rows += usize::from(table["rows"][0].as_u64() > Some(0));
    }
    // Every table but the ranges of files without the annotation has rows to compare.
    assert!(with_rows >= 10, "{report}");
}
