//! The remaining `analyze` flags: `--categories`, `--color`, `--top`, `--allow-truncated` on a
//! whole file, and a closed stdout pipe.

use crate::common::{SGLANG_DECODE, arg, assert_no_panic, stepscope, tempdir, traces_dir};
use serde_json::Value;

#[test]
fn categories_table_replaces_the_built_in_one() {
    let dir = tempdir();
    let table = dir.path().join("categories.toml");
    std::fs::write(
        &table,
        "[[category]]\nname = \"everything\"\npatterns = [\".\"]\n",
    )
    .expect("write");
    let run = stepscope([
        "analyze".as_ref(),
        SGLANG_DECODE.as_ref(),
        "--categories".as_ref(),
        arg(&table),
        "--json".as_ref(),
    ]);
    run.expect_code(0);
    let doc = run.json();
    let names: Vec<&str> = doc["files"][0]["breakdown"]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .flat_map(|s| s["categories"].as_array().expect("categories"))
        .map(|r| r["name"].as_str().expect("name"))
        .collect();
    assert!(names.contains(&"everything"), "{names:?}");
    for name in names {
        assert!(
            ["everything", "memcpy_memset"].contains(&name),
            "only the table's categories and the memory one: {name}"
        );
    }
}

#[test]
fn bad_categories_tables_exit_2_naming_the_file() {
    let dir = tempdir();
    for (name, text, says) in [
        ("syntax.toml", "not toml [[", "TOML"),
        (
            "regex.toml",
            "[[category]]\nname = \"x\"\npatterns = [\"(\"]\n",
            "regex",
        ),
        (
            "op.toml",
            "[[category]]\nname = \"x\"\n[[op]]\ncategory = \"y\"\npatterns = [\"^aten::mm$\"]\n",
            "names category `y`",
        ),
    ] {
        let table = dir.path().join(name);
        std::fs::write(&table, text).expect("write");
        let run = stepscope([
            "analyze".as_ref(),
            SGLANG_DECODE.as_ref(),
            "--categories".as_ref(),
            arg(&table),
        ]);
        run.expect_code(2);
        assert!(
            run.stderr.contains(&table.display().to_string()),
            "{name}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(says), "{name}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    let run = stepscope([
        "analyze",
        SGLANG_DECODE,
        "--categories",
        "no/such/categories.toml",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("no/such/categories.toml"),
        "{}",
        run.stderr
    );
}

#[test]
fn color_never_has_no_escapes_and_always_has_them() {
    let never = stepscope(["analyze", SGLANG_DECODE, "--color", "never"]);
    never.expect_code(0);
    assert!(!never.stdout.contains('\x1b'));
    let always = stepscope(["analyze", SGLANG_DECODE, "--color", "always"]);
    always.expect_code(0);
    assert!(always.stdout.contains("\x1b["));
    // `auto` into a pipe is plain.
    let auto = stepscope(["analyze", SGLANG_DECODE]);
    assert_eq!(auto.stdout, never.stdout);
}

/// Kernel rows of the first stage's kernel table in the terminal report.
fn kernel_rows(out: &str) -> usize {
    let start = out.find("│ id ").expect("a kernel table");
    out[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('│'))
        .count()
}

#[test]
fn top_limits_the_kernel_rows() {
    let run = |top: &str| {
        let run = stepscope(["analyze", SGLANG_DECODE, "--color", "never", "--top", top]);
        run.expect_code(0);
        run.stdout
    };
    assert_eq!(kernel_rows(&run("3")), 3);
    assert_eq!(kernel_rows(&run("10")), 10);
    // JSON keeps at least 50 per stage whatever --top says.
    let json = stepscope(["analyze", SGLANG_DECODE, "--json", "--top", "3"]);
    let doc = json.json();
    let kernels = doc["files"][0]["breakdown"]["stages"][0]["kernels"]
        .as_array()
        .expect("kernels")
        .len();
    assert!(kernels > 3, "JSON lists {kernels} kernels");
}

#[test]
fn allow_truncated_on_a_whole_file_is_not_partial() {
    let plain = stepscope(["analyze", SGLANG_DECODE, "--json"]);
    let lenient = stepscope(["analyze", SGLANG_DECODE, "--json", "--allow-truncated"]);
    lenient.expect_code(0);
    let doc = lenient.json();
    assert_eq!(doc["partial"], Value::Bool(false));
    assert_eq!(doc["files"][0]["import"]["truncated_at_byte"], Value::Null);
    assert_eq!(plain.stdout, lenient.stdout);
}

#[test]
fn a_closed_stdout_pipe_is_not_an_error() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args(["analyze", SGLANG_DECODE, "--json"])
        .current_dir(traces_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Like `stepscope … | head -0`: the reader goes away before anything is written.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait");
    let run = crate::common::Run {
        code: output.status.code(),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert_no_panic(&run);
    run.expect_code(0);
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
}

#[test]
fn range_breaks_down_matching_annotations_in_every_output() {
    let dir = tempdir();
    let out = dir.path().join("csv");
    let run = stepscope([
        "analyze".as_ref(),
        SGLANG_DECODE.as_ref(),
        "--range".as_ref(),
        r"^step\[".as_ref(),
        "--json".as_ref(),
        "--csv".as_ref(),
        arg(&out),
    ]);
    run.expect_code(0);
    let doc = run.json();
    let ranges = &doc["files"][0]["ranges"];
    assert_eq!(ranges["pattern"], r"^step\[");
    let range = &ranges["ranges"][0];
    assert_eq!(range["name"], "step[DECODE bs=32]");
    assert_eq!(range["instances"], 1);
    let decode = &doc["files"][0]["breakdown"]["stages"][0];
    assert_eq!(decode["stage"], "decode");
    assert_eq!(range["events"], decode["events"]);
    assert_eq!(range["gpu_time_us"], decode["gpu_time_us"]);
    let ranges_csv = std::fs::read_to_string(out.join("ranges.csv")).expect("ranges.csv");
    let mut lines = ranges_csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "run_id,file,rank,pattern,range,instances,cpu_time_ns,gpu_mirror_time_ns,events,gpu_time_ns,busy_time_ns"
        )
    );
    assert!(
        lines
            .next()
            .expect("one range")
            .contains("step[DECODE bs=32]")
    );
    for (name, header) in [
        ("range_category.csv", "run_id,file,rank,range,category,"),
        (
            "range_kernels.csv",
            "run_id,file,rank,range,position,kernel,kernel_id,category,",
        ),
    ] {
        let text = std::fs::read_to_string(out.join(name)).expect(name);
        assert!(text.starts_with(header), "{name}: {text:.80}");
        assert!(text.lines().count() > 2, "{name}");
    }
}

#[test]
fn range_section_in_the_terminal_report() {
    let terminal = stepscope([
        "analyze",
        SGLANG_DECODE,
        "--range",
        "(?i)^STEP",
        "--color",
        "never",
    ]);
    terminal.expect_code(0);
    assert!(
        terminal
            .stdout
            .contains("RANGES matching /(?i)^STEP/ — 1 annotation name"),
        "{}",
        terminal.stdout
    );
    assert!(
        terminal
            .stdout
            .contains("step[DECODE bs=32] — 1 instance, host ")
    );
}

#[test]
fn range_that_matches_nothing_or_is_no_regex() {
    let none = stepscope([
        "analyze",
        SGLANG_DECODE,
        "--range",
        "^forward$",
        "--color",
        "never",
    ]);
    none.expect_code(0);
    assert!(
        none.stdout
            .contains("RANGES matching /^forward$/: no host annotation matches; its host annotations include `execute_32"),
        "{}",
        none.stdout
    );
    let bad = stepscope(["analyze", SGLANG_DECODE, "--range", "step["]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("--range"), "{}", bad.stderr);
    assert!(bad.stderr.contains("not a valid regex"), "{}", bad.stderr);
    assert_no_panic(&bad);
}

#[test]
fn a_user_table_with_op_rules_categorises_by_launching_op() {
    // The vLLM piecewise trace runs attention eagerly inside
    // `vllm::unified_attention_with_output`; an op rule files its kernels under a category
    // of the user's, whatever their names, and the rows say the op decided.
    let dir = tempdir();
    let table = dir.path().join("ops.toml");
    std::fs::write(
        &table,
        "[[category]]\nname = \"everything\"\npatterns = [\".\"]\n\
         [[category]]\nname = \"vllm_attention\"\n\
         [[op]]\ncategory = \"vllm_attention\"\npatterns = [\"^vllm::unified_attention\"]\n",
    )
    .expect("write");
    let run = stepscope([
        "analyze".as_ref(),
        crate::common::VLLM_PIECEWISE.as_ref(),
        "--categories".as_ref(),
        arg(&table),
        "--json".as_ref(),
    ]);
    run.expect_code(0);
    let doc = run.json();
    let rows: Vec<&Value> = doc["files"][0]["breakdown"]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .flat_map(|s| s["categories"].as_array().expect("categories"))
        .collect();
    let attention = rows
        .iter()
        .find(|r| r["name"] == "vllm_attention")
        .expect("the op rule's category");
    assert!(attention["events"].as_u64().expect("events") > 0);
    assert_eq!(attention["events_by_op"], attention["events"]);
    let everything = rows
        .iter()
        .find(|r| r["name"] == "everything")
        .expect("row");
    assert_eq!(everything["events_by_op"], 0);
}
