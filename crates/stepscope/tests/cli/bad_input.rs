//! Broken inputs: exit 2 with the file, the byte offset and a hint; `--allow-truncated`
//! analyses what comes before the break and marks the report partial. Never a panic.

use crate::common::{
    SGLANG_DECODE, TRITON, arg, gunzip, stepscope, tempdir, trace, u64_at, write_gz,
};
use serde_json::Value;
use std::path::Path;

/// The first half of the real SGLang decode `.json.gz`, as a profiler killed while writing
/// leaves it.
fn truncated_gzip(dir: &Path) -> std::path::PathBuf {
    let bytes = std::fs::read(trace(SGLANG_DECODE)).expect("read");
    let path = dir.join("sglang_decode_half.json.gz");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("write");
    path
}

/// Byte offsets (`byte N`) named in a message.
fn byte_offsets(text: &str) -> Vec<u64> {
    text.split("byte ")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

#[test]
fn truncated_gzip_exits_2_with_offset_and_hint() {
    let dir = tempdir();
    let path = truncated_gzip(dir.path());
    let run = stepscope(["analyze".as_ref(), arg(&path)]);
    run.expect_code(2);
    assert!(
        run.stderr.contains(&path.display().to_string()),
        "stderr names the file: {}",
        run.stderr
    );
    assert!(
        !byte_offsets(&run.stderr).is_empty(),
        "stderr names a byte offset: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("hint:") && l.contains("--allow-truncated")),
        "a hint line mentions --allow-truncated: {}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "no report: {}", run.stdout);
}

#[test]
fn truncated_gzip_with_allow_truncated_is_a_partial_report() {
    let dir = tempdir();
    let path = truncated_gzip(dir.path());
    let run = stepscope([
        "analyze".as_ref(),
        arg(&path),
        "--allow-truncated".as_ref(),
        "--color".as_ref(),
        "never".as_ref(),
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains("PARTIAL"), "{}", run.stdout);

    let json = stepscope([
        "analyze".as_ref(),
        arg(&path),
        "--allow-truncated".as_ref(),
        "--json".as_ref(),
    ]);
    json.expect_code(0);
    let doc = json.json();
    assert_eq!(doc["partial"], Value::Bool(true));
    assert_eq!(doc["files"][0]["import"]["partial"], Value::Bool(true));
    let at = u64_at(&doc, "/files/0/import/truncated_at_byte");
    let events = u64_at(&doc, "/files/0/events/total");
    // Half the compressed file holds some, not all, of the 2058 events.
    assert!(at > 0, "truncated_at_byte {at}");
    assert!(
        events > 0 && events < 2058,
        "events before the break: {events}"
    );
    // The terminal names the same offset.
    assert!(
        byte_offsets(&run.stdout).contains(&at),
        "terminal names byte {at}: {}",
        run.stdout
    );
}

/// The real torch.compile trace as plain JSON with garbage at an event boundary in the
/// middle of `traceEvents`; returns the path, the garbage's byte offset and the number of
/// events before it.
fn corrupt_json(dir: &Path) -> (std::path::PathBuf, usize, usize) {
    let text = gunzip(TRITON);
    let start = find(&text, b"\"traceEvents\"", 0).expect("traceEvents");
    let middle = start + (text.len() - start) / 2;
    // The next event boundary: `}` `,` whitespace `{`; the garbage goes right before `{`.
    let mut at = middle;
    loop {
        let close = find(&text, b"}", at).expect("an event boundary after the middle");
        let mut i = close + 1;
        while text[i].is_ascii_whitespace() {
            i += 1;
        }
        if text[i] == b',' {
            i += 1;
            while text[i].is_ascii_whitespace() {
                i += 1;
            }
            if text[i] == b'{' {
                at = i;
                break;
            }
        }
        at = close + 1;
    }
    // Events before the break: close the array and the object after the last whole event.
    let mut prefix = text[..at].to_vec();
    while prefix
        .last()
        .is_some_and(|b| b.is_ascii_whitespace() || *b == b',')
    {
        prefix.pop();
    }
    prefix.extend_from_slice(b"]}");
    let before: Value = serde_json::from_slice(&prefix).expect("the prefix closes into JSON");
    let before = before["traceEvents"].as_array().expect("events").len();
    let total: Value = serde_json::from_slice(&text).expect("the real trace is JSON");
    assert!(before > 0 && before < total["traceEvents"].as_array().expect("events").len());

    let mut corrupt = text[..at].to_vec();
    corrupt.extend_from_slice(b"#!garbage\x01\x02!#, ");
    corrupt.extend_from_slice(&text[at..]);
    let path = dir.join("triton_corrupt.json");
    std::fs::write(&path, corrupt).expect("write");
    (path, at, before)
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[test]
fn corrupt_json_exits_2_naming_the_offset() {
    let dir = tempdir();
    let (path, at, _) = corrupt_json(dir.path());
    let run = stepscope(["analyze".as_ref(), arg(&path)]);
    run.expect_code(2);
    assert!(
        run.stderr.contains(&path.display().to_string()),
        "stderr names the file: {}",
        run.stderr
    );
    assert!(
        byte_offsets(&run.stderr).contains(&(at as u64)),
        "stderr names byte {at}: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("hint:") && l.contains("--allow-truncated")),
        "hint: {}",
        run.stderr
    );
}

#[test]
fn corrupt_json_with_allow_truncated_analyses_the_events_before_the_break() {
    let dir = tempdir();
    let (path, at, before) = corrupt_json(dir.path());
    let run = stepscope([
        "analyze".as_ref(),
        arg(&path),
        "--allow-truncated".as_ref(),
        "--json".as_ref(),
    ]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["partial"], Value::Bool(true));
    assert_eq!(u64_at(&doc, "/files/0/import/truncated_at_byte"), at as u64);
    assert_eq!(u64_at(&doc, "/files/0/events/total"), before as u64);
    assert!(u64_at(&doc, "/files/0/events/cpu_ops") > 0);
    let counters = doc["files"][0]["import"]["counters"]
        .as_array()
        .expect("counters");
    assert!(
        counters.iter().any(|c| c["severity"] == "error"),
        "an error counter says why: {counters:?}"
    );
}

#[test]
fn gzip_of_corrupt_json_behaves_like_the_plain_file() {
    let dir = tempdir();
    let (plain, at, before) = corrupt_json(dir.path());
    let gz = dir.path().join("triton_corrupt.json.gz");
    write_gz(&gz, &std::fs::read(&plain).expect("read"));
    let run = stepscope(["analyze".as_ref(), arg(&gz)]);
    run.expect_code(2);
    assert!(
        byte_offsets(&run.stderr).contains(&(at as u64)),
        "stderr names byte {at} of the JSON: {}",
        run.stderr
    );
    let run = stepscope([
        "analyze".as_ref(),
        arg(&gz),
        "--allow-truncated".as_ref(),
        "--json".as_ref(),
    ]);
    run.expect_code(0);
    assert_eq!(u64_at(&run.json(), "/files/0/events/total"), before as u64);
}

#[test]
fn odd_inputs_exit_2_without_panicking() {
    let dir = tempdir();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.json", Vec::new()),
        ("empty.json.gz", Vec::new()),
        ("empty.json.zst", Vec::new()),
        ("not_gzip.json.gz", b"plain text, not gzip".to_vec()),
        ("not_zstd.json.zst", b"plain text, not zstd".to_vec()),
        ("numbers.json", b"[1, 2, 3]".to_vec()),
        ("string.json", b"\"traceEvents\"".to_vec()),
        ("open.json", b"{\"traceEvents\": [".to_vec()),
        ("binary.json", (0..=255u8).cycle().take(4096).collect()),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        let run = stepscope(["analyze".as_ref(), arg(&path)]);
        assert_eq!(run.code, Some(2), "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains(&path.display().to_string()),
            "{name}: stderr names the file: {}",
            run.stderr
        );
        // With --allow-truncated: either a partial report or the same clean error.
        let run = stepscope([
            "analyze".as_ref(),
            arg(&path),
            "--allow-truncated".as_ref(),
            "--json".as_ref(),
        ]);
        match run.code {
            Some(0) => assert_eq!(run.json()["partial"], Value::Bool(true), "{name}"),
            Some(2) => assert!(run.stderr.starts_with("error: "), "{name}: {}", run.stderr),
            other => panic!("{name}: exit {other:?}: {}", run.stderr),
        }
    }
}

#[test]
fn an_sqlite_database_of_no_profiler_exits_2_with_a_hint() {
    // Every real profiler file of the trace corpus is read now; an SQLite database of some
    // other program (made here) is recognised as SQLite and refused with a hint.
    let dir = crate::common::tempdir();
    let path = dir.path().join("app.db");
    let conn = rusqlite::Connection::open(&path).expect("create");
    conn.execute_batch(
        "CREATE TABLE users(id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'a');",
    )
    .expect("table");
    drop(conn);
    let db = path.to_str().expect("path");
    let run = stepscope(["analyze", db]);
    run.expect_code(2);
    assert!(run.stderr.contains(db), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("neither an RPD"),
        "stderr: {}",
        run.stderr
    );
    assert!(
        run.stderr.lines().any(|l| l.starts_with("hint:")),
        "stderr: {}",
        run.stderr
    );
}

/// One replay kernel of the real piecewise trace given another `cat`: a kernel category
/// written with stray spaces or other case is read as a kernel (the verdict unchanged), and
/// an unknown category on an event holding a launch's correlation id and a duration is
/// counted by name and damages that replay: not complete, exit 3 under `--strict` and
/// `--fail-on-incomplete`.
#[test]
fn an_unknown_category_on_a_replay_kernel_is_counted_and_fails_the_gate() {
    let (mut doc, rows) = crate::common::piecewise_replay_kernels();
    let row = rows[0];
    let dir = tempdir();
    let mut run_with = |category: &str, flag: &str| {
        doc["traceEvents"][row]["cat"] = Value::from(category);
        let path = dir.path().join("edited.json");
        std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
        stepscope([
            "analyze".as_ref(),
            arg(&path),
            "--json".as_ref(),
            flag.as_ref(),
        ])
    };
    for spelled in ["kernel ", " KERNEL", "Kernel\t"] {
        let run = run_with(spelled, "--fail-on-incomplete");
        run.expect_code(0);
        let file = &run.json()["files"][0];
        assert_eq!(
            file["replay_coverage"]["verdict"], "unverified",
            "{spelled:?}"
        );
        assert_eq!(
            file["import"]["unknown_categories"],
            serde_json::json!({}),
            "{spelled:?}"
        );
    }
    for flag in ["--strict", "--fail-on-incomplete"] {
        let run = run_with("gpu_thing", flag);
        run.expect_code(3);
        let file = &run.json()["files"][0];
        assert_eq!(file["import"]["unknown_categories"]["gpu_thing"], 1);
        assert_eq!(file["damage"]["refused_events"]["unknown_category"], 1);
        assert_eq!(file["replay_coverage"]["verdict"], "damaged");
    }
}

#[test]
fn a_file_that_is_no_trace_is_not_offered_allow_truncated_and_every_format_is_named() {
    // A TOML file begins `[` and breaks at its second byte: there is nothing before the break
    // to analyse, so `--allow-truncated` is no fix; the hint asks whether it is a trace and
    // names every format stepscope reads, as the hint for an unknown format does.
    let dir = tempdir();
    let toml = dir.path().join("Cargo.json");
    std::fs::write(&toml, "[workspace]\nmembers = [\"crates/*\"]\n").expect("write");
    let text = dir.path().join("notes.json");
    std::fs::write(&text, "hello world\n").expect("write");
    for path in [toml, text] {
        let run = stepscope([arg(Path::new("analyze")), arg(&path)]);
        run.expect_code(2);
        assert!(!run.stderr.contains("--allow-truncated"), "{}", run.stderr);
        for format in [
            "Kineto",
            "rocprofv3's SQLite database",
            "CSV tables",
            "`<pid>_results.json`",
            "rocmProfileData",
            "rpd2tracing",
            "Nsight Systems",
        ] {
            assert!(run.stderr.contains(format), "{format}: {}", run.stderr);
        }
    }
}
