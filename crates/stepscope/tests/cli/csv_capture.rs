//! `--csv DIR` tables and `--capture FILE` expected node counts.

use crate::common::{
    SGLANG_CAPTURE, SGLANG_DECODE, VLLM_FULL, arg, incomplete_piecewise, stepscope, str_at,
    tempdir, u64_at,
};
use serde_json::Value;
use stepscope_analysis::Counter;

/// Splits CSV text into records (RFC 4180 quoting; enough for what the report writes).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => record.push(std::mem::take(&mut field)),
            ('\n', false) => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            ('\r', false) => {}
            _ => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    records
}

/// A CSV table read back: its header and records, cells found by column name.
struct CsvTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl CsvTable {
    fn read(path: &std::path::Path) -> Self {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
        let mut records = parse_csv(&text);
        let header = records.remove(0);
        for record in &records {
            assert_eq!(
                record.len(),
                header.len(),
                "{}: ragged {record:?}",
                path.display()
            );
        }
        CsvTable {
            header,
            rows: records,
        }
    }

    fn column(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header))
    }

    fn cell<'a>(&self, row: &'a [String], name: &str) -> &'a str {
        &row[self.column(name)]
    }
}

#[test]
fn csv_writes_every_table_with_the_jsons_rows() {
    let dir = tempdir();
    let broken = incomplete_piecewise(dir.path(), "piecewise_missing_2.json");
    let out = dir.path().join("csv/out");
    let run = stepscope([
        "analyze".as_ref(),
        arg(&broken),
        SGLANG_DECODE.as_ref(),
        "--json".as_ref(),
        "--csv".as_ref(),
        arg(&out),
    ]);
    run.expect_code(0);
    let doc = run.json();
    let mut tables = std::collections::BTreeMap::new();
    for name in stepscope_report::tables::TABLES {
        let table = CsvTable::read(&out.join(format!("{name}.csv")));
        let unique: std::collections::BTreeSet<&String> = table.header.iter().collect();
        assert_eq!(
            unique.len(),
            table.header.len(),
            "{name}: {:?}",
            table.header
        );
        tables.insert(name, table);
    }
    let files = doc["files"].as_array().expect("files");
    let count = |key: &str| -> usize {
        files
            .iter()
            .map(|f| f["replay_coverage"][key].as_array().expect(key).len())
            .sum()
    };
    assert_eq!(tables["graphs"].rows.len(), count("graphs"));
    assert_eq!(tables["findings"].rows.len(), count("findings"));
    // The two empty replays are findings, with their file and their evidence.
    let findings = &tables["findings"];
    let empty: Vec<&Vec<String>> = findings
        .rows
        .iter()
        .filter(|row| findings.cell(row, "kind") == "ReplayWithoutKernels")
        .collect();
    assert_eq!(empty.len(), 2);
    for (row, replay) in empty.iter().zip(["5", "6"]) {
        assert_eq!(findings.cell(row, "file"), broken.display().to_string());
        assert_eq!(findings.cell(row, "replay"), replay);
        assert_eq!(findings.cell(row, "recorded_nodes"), "0");
        assert_eq!(findings.cell(row, "expected_nodes"), "15");
        assert_eq!(findings.cell(row, "evidence_kind"), "neighbours");
        let text = findings.cell(row, "evidence_text");
        assert!(text.contains("before and after"), "{row:?}");
    }
    rows_agree_with_the_json(&tables, files);
}

fn rows_agree_with_the_json(tables: &std::collections::BTreeMap<&str, CsvTable>, files: &[Value]) {
    let stages: usize = files
        .iter()
        .map(|f| f["breakdown"]["stages"].as_array().expect("stages").len())
        .sum();
    assert_eq!(tables["stages"].rows.len(), stages);
    // Graph rows agree with the JSON, file by file.
    let graphs = &tables["graphs"];
    let json_graphs: Vec<&Value> = files
        .iter()
        .flat_map(|f| f["replay_coverage"]["graphs"].as_array().expect("graphs"))
        .collect();
    for (row, graph) in graphs.rows.iter().zip(json_graphs) {
        assert_eq!(graphs.cell(row, "graph"), graph["graph"].to_string());
        let first = graph["first_kernel"].as_str().unwrap_or_default();
        assert_eq!(graphs.cell(row, "first_kernel"), first);
        for counter in Counter::ALL.map(Counter::name) {
            assert_eq!(
                graphs.cell(row, counter),
                graph[counter].to_string(),
                "{counter}"
            );
        }
    }
    // Kernel rows carry the JSON's ids, which are the SHA-256 of the names (checked against
    // the shell's sha256sum in the kernel id unit test).
    let json_kernels: Vec<&Value> = files
        .iter()
        .flat_map(|f| f["breakdown"]["stages"].as_array().expect("stages"))
        .flat_map(|s| s["kernels"].as_array().expect("kernels"))
        .collect();
    let kernels = &tables["kernels"];
    assert_eq!(kernels.rows.len(), json_kernels.len());
    for (row, kernel) in kernels.rows.iter().zip(json_kernels) {
        let name = kernels.cell(row, "kernel");
        assert_eq!(name, kernel["name"].as_str().expect("name"));
        let id = kernels.cell(row, "kernel_id");
        assert_eq!(id, kernel["kernel_id"].as_str().expect("a kernel row's id"));
        assert_eq!(id, stepscope_report::kernel_id::kernel_id(name));
        // Times in nanoseconds: the JSON's microseconds times 1000.
        let ns: f64 = kernels.cell(row, "time_ns").parse().expect("an integer");
        let us = kernel["time_us"].as_f64().expect("time_us");
        assert!((ns - us * 1e3).abs() < 0.5, "{ns} ns vs {us} µs");
    }
    // Efficiency rows are the JSON's, in its order, with its numbers.
    let json_ops: Vec<&Value> = files
        .iter()
        .flat_map(|f| f["efficiency"]["ops"].as_array().expect("ops"))
        .collect();
    let ops = &tables["efficiency"];
    assert!(!ops.rows.is_empty());
    assert_eq!(ops.rows.len(), json_ops.len());
    for (row, op) in ops.rows.iter().zip(json_ops) {
        assert_eq!(ops.cell(row, "name"), op["name"].as_str().expect("name"));
        assert_eq!(
            ops.cell(row, "input_dims"),
            op["input_dims"].as_str().expect("dims")
        );
        assert_eq!(ops.cell(row, "count"), op["count"].to_string());
        assert_eq!(
            ops.cell(row, "gflops").parse::<f64>().ok(),
            op["gflops"].as_f64()
        );
    }
}

#[test]
fn csv_without_json_still_prints_the_terminal_report() {
    let dir = tempdir();
    let run = stepscope([
        "analyze".as_ref(),
        SGLANG_DECODE.as_ref(),
        "--no-capture-folder".as_ref(),
        "--color".as_ref(),
        "never".as_ref(),
        "--csv".as_ref(),
        arg(dir.path()),
    ]);
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("replay coverage: UNVERIFIED (complete as far as the trace shows)")
    );
    assert!(
        run.stderr
            .contains(&format!("wrote 12 CSV files to `{}`", dir.path().display())),
        "stderr: {}",
        run.stderr
    );
    let kernels = std::fs::read_to_string(dir.path().join("kernels.csv")).expect("kernels.csv");
    assert!(kernels.lines().count() > 10, "{kernels}");
}

#[test]
fn capture_trace_gives_the_expected_node_count() {
    let run = stepscope([
        "analyze",
        SGLANG_DECODE,
        "--capture",
        SGLANG_CAPTURE,
        "--json",
    ]);
    run.expect_code(0);
    let doc = run.json();
    let graphs = doc["files"][0]["replay_coverage"]["graphs"]
        .as_array()
        .expect("graphs");
    assert_eq!(graphs.len(), 1);
    assert_eq!(
        str_at(&doc, "/files/0/replay_coverage/graphs/0/expected_source"),
        "capture_trace"
    );
    assert_eq!(
        u64_at(
            &doc,
            "/files/0/replay_coverage/graphs/0/expected_nodes_per_replay"
        ),
        544
    );
    // The capture corroborates the one replay's size.
    assert_eq!(str_at(&doc, "/verdict"), "complete");
    // Named alone, the trace is sized by the capture_traces folder beside it, as when its
    // folder is analysed; the report names the capture it used.
    let beside = stepscope(["analyze", SGLANG_DECODE, "--json"]).json();
    assert_eq!(str_at(&beside, "/verdict"), "complete");
    assert_eq!(
        str_at(&beside, "/files/0/capture_traces/0"),
        str_at(&doc, "/files/0/capture_traces/0")
    );
    // Without any capture the count comes from the replay itself: a lower bound.
    let run = stepscope(["analyze", SGLANG_DECODE, "--json", "--no-capture-folder"]);
    assert_eq!(
        str_at(
            &run.json(),
            "/files/0/replay_coverage/graphs/0/expected_source"
        ),
        "single_replay"
    );
    assert_eq!(
        run.json()["files"][0]["capture_traces"],
        serde_json::json!([])
    );
}

#[test]
fn capture_without_a_capture_exits_2_with_a_message() {
    let run = stepscope(["analyze", SGLANG_DECODE, "--capture", VLLM_FULL]);
    run.expect_code(2);
    assert!(run.stderr.contains(VLLM_FULL), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("no stream capture"),
        "stderr: {}",
        run.stderr
    );
    assert!(
        run.stderr.lines().any(|l| l.starts_with("hint:")),
        "stderr: {}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "stdout: {}", run.stdout);
}

#[test]
fn capture_file_missing_exits_2() {
    let run = stepscope([
        "analyze",
        SGLANG_DECODE,
        "--capture",
        "no/such/capture.json.gz",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("no/such/capture.json.gz"),
        "stderr: {}",
        run.stderr
    );
}
