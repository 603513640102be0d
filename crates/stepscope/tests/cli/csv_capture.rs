//! `--csv DIR` tables and `--capture FILE` expected node counts.

use crate::common::{
    SGLANG_CAPTURE, SGLANG_DECODE, VLLM_FULL, arg, incomplete_piecewise, stepscope, str_at,
    tempdir, u64_at,
};
use serde_json::Value;
use stepscope_analysis::passes::replay_coverage::Counter;

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

/// The tables' headers; the coverage counters come from the analysis's one list.
fn headers() -> Vec<(&'static str, String)> {
    let mut graphs = vec![
        "file",
        "graph",
        "graph_id",
        "first_kernel",
        "expected_nodes_per_replay",
        "expected_source",
    ];
    graphs.extend(Counter::ALL.map(Counter::name));
    graphs.extend([
        "coverage",
        "completeness",
        "completeness_low",
        "completeness_high",
        "missing_gpu_time_us",
        "missing_gpu_time_low_us",
        "missing_gpu_time_high_us",
    ]);
    vec![
        ("graphs.csv", graphs.join(",")),
        (
            "findings.csv",
            "file,kind,replay,launch_ts_us,step,graph,recorded_nodes,expected_nodes,expected_nodes_low,expected_nodes_high,evidence_kind,evidence,unverified,refused_events,shared_correlation".to_owned(),
        ),
        (
            "stages.csv",
            "file,stage,steps,events,gpu_time_us,share_of_total,busy_time_us,idle_time_us,window_us,idle_basis".to_owned(),
        ),
        (
            "categories.csv",
            "file,stage,category,events,time_us,share,mean_us,events_by_op,time_by_op_us".to_owned(),
        ),
        (
            "kernels.csv",
            "file,stage,kernel,kernel_id,category,events,time_us,share,mean_us,events_by_op,time_by_op_us".to_owned(),
        ),
        (
            "efficiency.csv",
            "file,name,family,compute_spec,params,input_dims,input_types,input_strides,concrete_inputs,count,kernel_time_us_mean,kernel_time_us_median,kernel_time_us_sum,gflops,data_moved_mib,flops_per_byte,tflops_mean,tflops_median,tbps_mean,tbps_median,device,bound,roofline_time_us,pct_of_roofline,pct_compute_peak,pct_bandwidth_peak,time_lost_us,encloses_modelled_op".to_owned(),
        ),
    ]
}

#[test]
fn csv_writes_six_tables_with_headers_matching_the_json() {
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
    for (name, header) in headers() {
        let path = out.join(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
        assert_eq!(text.lines().next(), Some(header.as_str()), "{name} header");
        let records = parse_csv(&text);
        let width = records[0].len();
        for record in &records {
            assert_eq!(record.len(), width, "{name}: ragged record {record:?}");
        }
        tables.insert(name, records);
    }
    let files = doc["files"].as_array().expect("files");
    let count = |key: &str| -> usize {
        files
            .iter()
            .map(|f| f["replay_coverage"][key].as_array().expect(key).len())
            .sum()
    };
    assert_eq!(tables["graphs.csv"].len() - 1, count("graphs"));
    assert_eq!(tables["findings.csv"].len() - 1, count("findings"));
    // The two empty replays are findings, with their file and their evidence.
    let empty: Vec<&Vec<String>> = tables["findings.csv"][1..]
        .iter()
        .filter(|row| row[1] == "ReplayWithoutKernels")
        .collect();
    assert_eq!(empty.len(), 2);
    for (row, replay) in empty.iter().zip(["5", "6"]) {
        assert_eq!(row[0], broken.display().to_string());
        assert_eq!(row[2], replay);
        assert_eq!(row[6], "0");
        assert_eq!(row[7], "15");
        assert_eq!(row[10], "neighbours");
        assert!(row[11].contains("before and after"), "{row:?}");
    }
    rows_agree_with_the_json(&tables, files);
}

fn rows_agree_with_the_json(
    tables: &std::collections::BTreeMap<&str, Vec<Vec<String>>>,
    files: &[Value],
) {
    let stages: usize = files
        .iter()
        .map(|f| f["breakdown"]["stages"].as_array().expect("stages").len())
        .sum();
    assert_eq!(tables["stages.csv"].len() - 1, stages);
    // Graph rows agree with the JSON, file by file.
    let graph_rows = &tables["graphs.csv"][1..];
    let json_graphs: Vec<&Value> = files
        .iter()
        .flat_map(|f| f["replay_coverage"]["graphs"].as_array().expect("graphs"))
        .collect();
    let header = &tables["graphs.csv"][0];
    let column = |name: &str| header.iter().position(|h| h == name).expect(name);
    for (row, graph) in graph_rows.iter().zip(json_graphs) {
        assert_eq!(row[1], graph["graph"].to_string());
        assert_eq!(row[3], graph["first_kernel"].as_str().unwrap_or_default());
        for counter in Counter::ALL.map(Counter::name) {
            assert_eq!(
                row[column(counter)],
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
    let kernel_rows = &tables["kernels.csv"][1..];
    assert_eq!(kernel_rows.len(), json_kernels.len());
    for (row, kernel) in kernel_rows.iter().zip(json_kernels) {
        assert_eq!(row[2], kernel["name"].as_str().expect("name"));
        assert_eq!(row[3], kernel["id"].as_str().expect("a kernel row's id"));
        assert_eq!(row[3], stepscope_report::kernel_id::kernel_id(&row[2]));
    }
    // Efficiency rows are the JSON's, in its order, with its numbers.
    let json_ops: Vec<&Value> = files
        .iter()
        .flat_map(|f| f["efficiency"]["ops"].as_array().expect("ops"))
        .collect();
    let op_rows = &tables["efficiency.csv"][1..];
    assert!(!op_rows.is_empty());
    assert_eq!(op_rows.len(), json_ops.len());
    for (row, op) in op_rows.iter().zip(json_ops) {
        assert_eq!(row[1], op["name"].as_str().expect("name"));
        assert_eq!(row[5], op["input_dims"].as_str().expect("dims"));
        assert_eq!(row[9], op["count"].to_string());
        assert_eq!(row[13].parse::<f64>().ok(), op["gflops"].as_f64());
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
            .contains(&format!("wrote 6 CSV files to `{}`", dir.path().display())),
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

/// Duplicate column names break pandas (`category.1`) and other tools: none may repeat.
#[test]
fn every_csv_has_unique_column_names() {
    let dir = tempdir();
    stepscope([
        "analyze".as_ref(),
        SGLANG_DECODE.as_ref(),
        "--csv".as_ref(),
        arg(dir.path()),
    ])
    .expect_code(0);
    for (name, _) in headers() {
        let text = std::fs::read_to_string(dir.path().join(name)).expect(name);
        let header = &parse_csv(&text)[0];
        let unique: std::collections::BTreeSet<&String> = header.iter().collect();
        assert_eq!(unique.len(), header.len(), "{name}: {header:?}");
    }
}
