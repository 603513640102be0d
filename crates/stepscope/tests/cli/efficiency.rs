//! The efficiency table through the binary: the device from the trace or `--device`, the
//! terminal's ranking without double counts, and a trace recorded without shapes.

use crate::common::{VLLM_PIECEWISE, stepscope, trace};

const H100: &str = "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
const CPU_SERVER: &str = "stepscope/vllm-cpu/rank0.1796509274149173928.pt.trace.json.gz";

#[test]
fn the_device_comes_from_the_trace_name_its_properties_or_the_flag() {
    let named = stepscope(["analyze", &arg(H100), "--json"]).json();
    let device = &named["files"][0]["efficiency"]["device"];
    assert_eq!(device["name"], "H100 SXM");
    assert_eq!(
        device["identified_by"],
        "the trace names `NVIDIA H100 80GB HBM3`"
    );
    // TraceLens's vLLM trace leaves every device name empty: its properties say MI300X.
    let unnamed = stepscope(["analyze", &arg(VLLM_PIECEWISE), "--json"]).json();
    let device = &unnamed["files"][0]["efficiency"]["device"];
    assert_eq!(device["name"], "MI300X");
    assert!(
        device["identified_by"]
            .as_str()
            .unwrap()
            .contains("304 multiprocessors")
    );
    let given = stepscope(["analyze", &arg(H100), "--device", "mi300x", "--json"]).json();
    let efficiency = &given["files"][0]["efficiency"];
    assert_eq!(efficiency["device"]["name"], "MI300X");
    assert_eq!(efficiency["device"]["identified_by"], "--device");
    let mm = efficiency["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "aten::mm")
        .expect("an aten::mm row");
    assert_eq!(mm["roofline"]["peak_tflops"], 1307.4);
}

#[test]
fn an_unknown_device_is_refused_with_the_names_there_are() {
    let run = stepscope(["analyze", &arg(H100), "--device", "tpu-v5"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("no peaks for this device"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("MI300X") && run.stderr.contains("H100 SXM"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_terminal_ranks_the_innermost_ops_by_time_lost() {
    let run = stepscope(["analyze", &arg(H100), "--color", "never", "--no-progress"]);
    run.expect_code(0);
    let section = run
        .stdout
        .split("EFFICIENCY")
        .nth(1)
        .expect("an efficiency section");
    assert!(section.contains("on H100 SXM peaks"), "{section}");
    assert!(
        section.contains("aten::mm") && section.contains("aten::addmm"),
        "{section}"
    );
    // aten::linear and aten::matmul hold the same kernels as the mm/addmm inside them.
    assert!(!section.contains("│ aten::linear "), "{section}");
    assert!(!section.contains("│ aten::matmul "), "{section}");
    assert!(
        section.contains("rows of ops around other modelled ops"),
        "{section}"
    );
}

#[test]
fn a_trace_without_shapes_says_how_to_record_them() {
    let doc = stepscope(["analyze", &arg(CPU_SERVER), "--json"]).json();
    let efficiency = &doc["files"][0]["efficiency"];
    assert!(efficiency["modelled_calls"].as_u64().unwrap() > 0);
    assert_eq!(
        efficiency["calls_without_shapes"],
        efficiency["modelled_calls"]
    );
    let note = efficiency["note"].as_str().expect("a note");
    assert!(note.starts_with("recorded without record_shapes; efficiency needs it"));
    for framework in ["vLLM", "SGLang", "ATOM"] {
        assert!(note.contains(framework), "{note}");
    }
    let run = stepscope(["analyze", &arg(CPU_SERVER), "--no-progress"]);
    assert!(
        run.stdout
            .contains("EFFICIENCY: recorded without record_shapes"),
        "{}",
        run.stdout
    );
}

fn arg(relative: &str) -> String {
    trace(relative).display().to_string()
}

#[test]
fn graph_replayed_decode_takes_its_shapes_from_the_capture_trace() {
    use crate::common::{SGLANG_CAPTURE, SGLANG_DECODE};
    let alone = stepscope([
        "analyze",
        &arg(SGLANG_DECODE),
        "--json",
        "--no-capture-folder",
    ])
    .json();
    let efficiency = &alone["files"][0]["efficiency"];
    assert_eq!(efficiency["graph_replays"], 1);
    assert_eq!(efficiency["replays_with_shapes"], 0);
    assert!(
        efficiency["replays_note"]
            .as_str()
            .unwrap()
            .contains("--capture FILE")
    );
    let with = stepscope([
        "analyze",
        &arg(SGLANG_DECODE),
        "--capture",
        &arg(SGLANG_CAPTURE),
        "--json",
    ])
    .json();
    let efficiency = &with["files"][0]["efficiency"];
    assert_eq!(efficiency["replays_with_shapes"], 1);
    assert!(efficiency["replays_note"].is_null());
    // The 36 layers' QKV projection, replayed once: TraceLens's GEMM.csv row for this trace
    // and capture has 6.442450944 GFLOPS, 193.75 MB and 96.024 TFLOP/s (mean of 36).
    let qkv = efficiency["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "aiter::gemm_a16w16" && r["gflops"].as_f64() == Some(6.442450944))
        .expect("the QKV GEMM row");
    assert_eq!(qkv["count"], 36);
    assert_eq!(qkv["data_moved_mib"], 193.75);
    let tflops = qkv["tflops"]["mean"].as_f64().unwrap();
    assert!((tflops - 96.024).abs() < 0.01, "{tflops}");
    assert_eq!(
        qkv["encloses_modelled_op"], true,
        "it runs aten::mm, which has its own row"
    );
}

#[test]
fn diff_compares_achieved_rates_per_shared_op_row() {
    use stepscope_synth::removal::{read_json, to_json_bytes};
    let dir = crate::common::tempdir();
    let mut doc = read_json(&trace(H100)).expect("reads");
    // The new side's GEMM kernels take twice as long.
    for event in doc["traceEvents"].as_array_mut().expect("events") {
        let gemm =
            event["cat"] == "kernel" && event["name"].as_str().is_some_and(|n| n.contains("gemm"));
        if let (true, Some(dur)) = (gemm, event["dur"].as_f64()) {
            event["dur"] = serde_json::json!(dur * 2.0);
        }
    }
    let slower = dir.path().join("slower.json");
    std::fs::write(&slower, to_json_bytes(&doc)).expect("write");
    let run = stepscope([
        "diff".as_ref(),
        trace(H100).as_os_str(),
        slower.as_os_str(),
        "--json".as_ref(),
    ]);
    let rates = &run.json()["op_rates"];
    assert_eq!(rates["only_base"], 0);
    let rows = rates["shared"].as_array().expect("shared rows");
    let mm = rows
        .iter()
        .find(|r| r["name"] == "aten::mm" && r["input_dims"] == "[[8944, 1024], [1024, 2816]]")
        .expect("the mm row");
    let change = mm["tflops_change"].as_f64().unwrap();
    assert!((change + 0.5).abs() < 0.01, "{change}");
    // Ops whose kernels were not stretched run as before.
    let add = rows
        .iter()
        .find(|r| r["name"] == "aten::add")
        .expect("an add row");
    assert!(add["tflops_change"].as_f64().unwrap().abs() < 1e-9);
}

#[test]
fn the_page_draws_the_roofline_and_its_table_in_a_real_browser() {
    let dir = crate::common::tempdir();
    let page = dir.path().join("report.html");
    let run = stepscope([
        "analyze".as_ref(),
        trace(H100).as_os_str(),
        "--html".as_ref(),
        page.as_os_str(),
        "--json".as_ref(),
    ]);
    run.expect_code(0);
    let ops = run.json()["files"][0]["efficiency"]["ops"]
        .as_array()
        .unwrap()
        .clone();
    let drawn = ops
        .iter()
        .filter(|r| r["encloses_modelled_op"] == false && r["tflops"].is_object())
        .count();
    let rendered = crate::browser::render(&page);
    rendered.assert_clean();
    // One point per row the page keeps (every inner op row here: fewer than its budget).
    assert_eq!(rendered.count("svg.roofline circle.op"), drawn);
    // H100's BF16 and FP32 vector roofs, at least.
    assert!(rendered.count("svg.roofline polyline.roof") >= 2);
    let tips = rendered.texts("svg.roofline circle.op title");
    assert!(
        tips.iter()
            .any(|t| t.starts_with("aten::mm [[8944, 1024], [1024, 2816]]: 48 calls")),
        "{tips:?}"
    );
    assert_eq!(
        rendered.count("table[data-table=efficiency] tbody tr"),
        drawn
    );
}

/// Formats that record kernels, not PyTorch's ops, name their device from their agent or GPU
/// table (rocpd's `rocpd_info_agent.product_name`, Nsight's `TARGET_INFO_GPU.name`) and say
/// why there are no rows.
#[test]
fn formats_without_ops_name_their_device_and_say_why_there_are_no_rows() {
    use stepscope_synth::formats::Parts;
    use stepscope_synth::rocpd::{RocpdOptions, write_rocpd};
    let dir = crate::common::tempdir();
    let doc: serde_json::Value =
        serde_json::from_slice(&crate::common::gunzip(VLLM_PIECEWISE)).expect("JSON");
    let db = dir.path().join("run_results.db");
    write_rocpd(&Parts::of_kineto(&doc), &db, &RocpdOptions::default()).expect("rocpd");
    let nsys = "nsys-ai/tests/fixtures/mock.sqlite";
    for (path, device, named) in [
        (
            db.display().to_string(),
            Some("MI300X"),
            "AMD Instinct MI300X",
        ),
        (arg(nsys), None, "NVIDIA GeForce RTX 3080"),
    ] {
        let doc = stepscope(["analyze", &path, "--json", "--no-progress"]).json();
        let efficiency = &doc["files"][0]["efficiency"];
        assert_eq!(efficiency["ops"], serde_json::json!([]), "{path}");
        let note = efficiency["note"].as_str().expect("a note");
        assert!(note.contains("records no PyTorch ops") && note.contains("record_shapes=True"));
        match device {
            Some(name) => {
                assert_eq!(efficiency["device"]["name"], name);
                let basis = format!("the trace names `{named}`");
                assert_eq!(efficiency["device"]["identified_by"], basis.as_str());
            }
            // A consumer GPU has no row in the peaks table.
            None => assert!(efficiency["device"].is_null(), "{efficiency}"),
        }
    }
    let run = stepscope(["analyze", nsys, "--color", "never", "--no-progress"]);
    assert!(
        run.stdout
            .contains("EFFICIENCY: the trace records no PyTorch ops"),
        "{}",
        run.stdout
    );
}

/// Calls whose arguments do not fit their model are listed as unmodelled once per call, with
/// their kernel time: every `aten::mm` of the real H100 trace given a 1-D first argument.
#[test]
fn unfit_calls_are_counted_per_call_with_their_kernel_time() {
    let mut doc: serde_json::Value =
        serde_json::from_slice(&crate::common::gunzip(H100)).expect("JSON");
    let mut broken = 0;
    for event in doc["traceEvents"].as_array_mut().expect("events") {
        let is_mm = event["name"] == "aten::mm" && event["cat"] == "cpu_op";
        let dims = &mut event["args"]["Input Dims"];
        if is_mm && dims.is_array() {
            dims[0] = serde_json::json!([1024]);
            broken += 1;
        }
    }
    assert!(broken > 10, "{broken} aten::mm calls");
    let dir = crate::common::tempdir();
    let path = dir.path().join("unfit.json.gz");
    crate::common::write_gz(&path, &serde_json::to_vec(&doc).expect("JSON"));
    let out = stepscope(["analyze", path.to_str().unwrap(), "--json", "--no-progress"]).json();
    let efficiency = &out["files"][0]["efficiency"];
    let rows = efficiency["ops"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["name"] != "aten::mm"));
    let mm = efficiency["unmodelled"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "aten::mm")
        .expect("aten::mm listed as unmodelled");
    assert_eq!(mm["count"], broken, "{mm}");
    assert!(mm["kernel_time_us_sum"].as_f64().unwrap() > 0.0, "{mm}");
    assert!(
        mm["reason"]
            .as_str()
            .unwrap()
            .starts_with("arguments do not fit: "),
        "{mm}"
    );
}

/// The real SGLang decode trace with its one replay edited: `drop` of its last kernels
/// removed, and its first two kernels of different names run in the other order.
fn edited_replay(dir: &std::path::Path, drop: usize) -> std::path::PathBuf {
    use crate::common::SGLANG_DECODE;
    let mut doc: serde_json::Value =
        serde_json::from_slice(&crate::common::gunzip(SGLANG_DECODE)).expect("JSON");
    let events = doc["traceEvents"].as_array_mut().expect("events");
    let launch = events
        .iter()
        .find(|e| e["name"] == "hipGraphLaunch")
        .expect("a graph launch");
    let correlation = launch["args"]["correlation"].clone();
    let mut replayed: Vec<usize> = (0..events.len())
        .filter(|&i| {
            events[i]["cat"] == "kernel" && events[i]["args"]["correlation"] == correlation
        })
        .collect();
    replayed.sort_by(|&a, &b| {
        events[a]["ts"]
            .as_f64()
            .partial_cmp(&events[b]["ts"].as_f64())
            .unwrap()
    });
    assert_eq!(replayed.len(), 544);
    let (first, second) = (replayed[0], replayed[1]);
    assert_ne!(events[first]["name"], events[second]["name"]);
    let (a, b) = (events[first]["ts"].clone(), events[second]["ts"].clone());
    (events[first]["ts"], events[second]["ts"]) = (b, a);
    let mut gone: Vec<usize> = replayed[replayed.len() - drop..].to_vec();
    gone.sort_unstable();
    for index in gone.into_iter().rev() {
        events.remove(index);
    }
    let path = dir.join(format!("decode_drop_{drop}.json.gz"));
    crate::common::write_gz(&path, &serde_json::to_vec(&doc).expect("JSON"));
    path
}

/// A replay whose kernels ran in another order than the capture's still takes its shapes
/// (matched by name: HIP captures name every node); one that lost its last kernels gives
/// calls only for the ops whose kernels were all recorded, and is counted as partial.
#[test]
fn reordered_and_partial_replays_take_shapes_by_kernel_name() {
    use crate::common::SGLANG_CAPTURE;
    let dir = crate::common::tempdir();
    let efficiency = |path: &std::path::Path| {
        let args = [
            "analyze",
            path.to_str().unwrap(),
            "--capture",
            &arg(SGLANG_CAPTURE),
        ];
        let doc = stepscope(args.into_iter().chain(["--json", "--no-progress"])).json();
        doc["files"][0]["efficiency"].clone()
    };
    let calls = |e: &serde_json::Value, name: &str| -> u64 {
        let rows = e["ops"].as_array().unwrap().iter();
        rows.filter(|r| r["name"] == name)
            .map(|r| r["count"].as_u64().unwrap())
            .sum()
    };
    let reordered = efficiency(&edited_replay(dir.path(), 0));
    assert_eq!(reordered["replays_with_shapes"], 1);
    assert_eq!(reordered["partial_replays"], 0);
    assert_eq!(
        calls(&reordered, "aiter::gemm_a16w16"),
        36 * 4,
        "{reordered}"
    );

    let partial = efficiency(&edited_replay(dir.path(), 40));
    assert_eq!(partial["replays_with_shapes"], 1);
    assert_eq!(partial["partial_replays"], 1);
    let gemms = calls(&partial, "aiter::gemm_a16w16");
    assert!(gemms > 0 && gemms < 36 * 4, "{gemms} GEMM calls");
}

/// An MI250 (a GPU with no row in the peaks table) training trace with shapes: the page
/// sorts its efficiency table by kernel time (no roofline to lose time against) and renders
/// whole, alone and in a folder beside a trace on a known GPU. A script error blanked the
/// whole page here while the command exited 0.
#[test]
fn a_page_with_ops_on_an_unknown_device_renders_in_a_real_browser() {
    const MI250: &str = "hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz";
    let dir = crate::common::tempdir();
    let folder = dir.path().join("traces");
    crate::common::copy_trace(MI250, &folder, "mi250.json.gz");
    crate::common::copy_trace(H100, &folder, "h100.json.gz");
    for input in [trace(MI250), folder] {
        let page = dir.path().join("report.html");
        let run = stepscope([
            "analyze".as_ref(),
            input.as_os_str(),
            "--html".as_ref(),
            page.as_os_str(),
            "--json".as_ref(),
        ]);
        run.expect_code(0);
        let document = run.json();
        let mi250 = document["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().contains("mi250"))
            .expect("the MI250 file")
            .clone();
        let ops = mi250["efficiency"]["ops"].as_array().unwrap();
        assert!(
            mi250["efficiency"]["device"].is_null(),
            "{}",
            mi250["efficiency"]["device"]
        );
        assert!(!ops.is_empty(), "the trace has shapes");
        let rendered = crate::browser::render(&page);
        rendered.assert_clean();
        assert!(rendered.count("table[data-table=efficiency] tbody tr") > 0);
    }
}

/// A CPU-only run recorded with shapes (the real H100 trace with every GPU event taken out):
/// its ops have no kernel time to price, so there are no rows — not one 0.00 µs row per op —
/// and the note says why. Ops that launched no kernel in a trace with GPU work keep their
/// rows, as TraceLens's reference tables have them.
#[test]
fn a_trace_without_gpu_work_has_no_efficiency_rows_and_says_why() {
    use stepscope_synth::removal::{read_json, to_json_bytes};
    let dir = crate::common::tempdir();
    let mut doc = read_json(&trace(H100)).expect("the trace reads");
    let with_rows = stepscope(["analyze", trace(H100).to_str().expect("path"), "--json"]);
    assert!(
        with_rows.json()["files"][0]["efficiency"]["ops"]
            .as_array()
            .map_or(0, Vec::len)
            > 10
    );
    doc["traceEvents"]
        .as_array_mut()
        .expect("events")
        .retain(|e| {
            !matches!(
                e["cat"].as_str(),
                Some("kernel" | "gpu_memcpy" | "gpu_memset")
            )
        });
    let path = dir.path().join("cpu_only.json");
    std::fs::write(&path, to_json_bytes(&doc)).expect("write");
    let run = stepscope(["analyze", path.to_str().expect("path"), "--json"]);
    let efficiency = &run.json()["files"][0]["efficiency"];
    assert_eq!(efficiency["ops"], serde_json::json!([]));
    let note = efficiency["note"].as_str().expect("a note");
    assert!(note.contains("no GPU kernel"), "{note}");
    let terminal = stepscope(["analyze", path.to_str().expect("path"), "--no-progress"]);
    assert!(
        terminal
            .stdout
            .contains("EFFICIENCY: the trace records no GPU kernel")
    );
    assert!(!terminal.stdout.contains("0.00"), "{}", terminal.stdout);
}
