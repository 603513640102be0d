//! `analyze --html`: the page opened in a real headless chromium from a `file://` URL. It
//! must load with nothing on the console, state the verdict exactly as the terminal does,
//! show the JSON's numbers, and draw the replay timeline (read back from the canvas and seen
//! in a screenshot).

use crate::browser::{Rendered, render, render_at};
use crate::common::{
    SGLANG_DECODE, VLLM_PIECEWISE, arg, incomplete_piecewise, stepscope, stepscope_in, tempdir,
    trace,
};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use stepscope_synth::demo::{DemoSpec, facts};

/// The colour the page paints empty replays (and nothing else in a complete trace's page).
const EMPTY_RED: [u8; 3] = [0xd6, 0x3c, 0x3c];

/// The colour of complete replays.
const COMPLETE_GREEN: [u8; 3] = [0x2e, 0x9d, 0x57];

/// A page is at most this big for the shared traces (the issue's budget).
const PAGE_BUDGET: u64 = 2_000_000;

/// `analyze INPUT --html`, its terminal report and its JSON.
struct Analysed {
    page: PathBuf,
    terminal: String,
    json: Value,
}

fn analyse(input: &Path, dir: &Path) -> Analysed {
    let page = dir.join("report.html");
    let args: [&OsStr; 6] = [
        "analyze".as_ref(),
        arg(input),
        "--html".as_ref(),
        page.as_os_str(),
        "--color".as_ref(),
        "never".as_ref(),
    ];
    let run = stepscope(args);
    run.expect_code(0);
    assert!(run.stderr.contains("html: wrote"), "{}", run.stderr);
    let json = stepscope(["analyze".as_ref(), arg(input), "--json".as_ref()]);
    Analysed {
        page,
        terminal: run.stdout.clone(),
        json: json.expect_code(0).json(),
    }
}

/// The terminal's verdict block of its first file: the lines under `══ path ══` up to the
/// blank line before `trace:`.
fn terminal_verdict(terminal: &str) -> String {
    let after_header = terminal
        .split_once("══\n")
        .map(|(_, rest)| rest)
        .expect("a file header");
    let (verdict, _) = after_header
        .split_once("\ntrace: ")
        .expect("the trace line after the verdict");
    verdict.trim_end().to_owned()
}

/// The numbers a reader sees first equal the JSON's.
#[track_caller]
fn assert_key_numbers(page: &Rendered, coverage: &Value) {
    for key in [
        "replays",
        "recorded_replays",
        "short_replays",
        "empty_replays",
    ] {
        assert_eq!(
            page.one(&format!("[data-scope=top] [data-key={key}] b")),
            coverage[key].to_string(),
            "{key}"
        );
    }
}

/// A trace with two replays emptied: the page states the terminal's verdict word for word,
/// shows the JSON's counts, lists every finding and graph, and paints the empty replays red
/// on the timeline; the screenshot is not blank and holds that red.
#[test]
fn an_incomplete_trace_reads_as_the_terminal_and_shows_its_empty_replays() {
    let dir = tempdir();
    let input = incomplete_piecewise(dir.path(), "incomplete.json");
    let analysed = analyse(&input, dir.path());
    let size = std::fs::metadata(&analysed.page).expect("the page").len();
    assert!(size < PAGE_BUDGET, "page of {size} bytes");
    let page = render(&analysed.page);
    page.assert_clean();

    let file = &analysed.json["files"][0];
    let coverage = &file["replay_coverage"];
    assert_eq!(coverage["verdict"], "incomplete");
    assert_eq!(coverage["empty_replays"], 2);
    assert_eq!(page.one("[data-verdict-word]"), "INCOMPLETE");
    assert_eq!(
        page.one("pre[data-verdict=file]").trim_end(),
        terminal_verdict(&analysed.terminal)
    );
    assert_key_numbers(&page, coverage);
    // Where the GPU time goes, line for line as the terminal prints it.
    let host = page.one("pre[data-host=file]");
    for start in ["GPU timeline: ", "stream idle by cause: ", "launches: "] {
        let line = analysed
            .terminal
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} line in the terminal"));
        assert!(host.lines().any(|l| l == line), "{start:?}: {host}");
    }

    let rows = |table: &str| page.count(&format!("table[data-table={table}] tbody tr"));
    let len = |value: &Value| value.as_array().expect("an array").len();
    assert_eq!(rows("graphs"), len(&coverage["graphs"]));
    assert_eq!(rows("findings"), len(&coverage["findings"]));
    let kernels: usize = file["breakdown"]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| len(&s["kernels"]))
        .sum();
    assert_eq!(rows("kernels"), kernels);

    let painted = page.painted();
    assert!(painted["empty"] > 0, "empty replays drawn: {painted:?}");
    assert!(
        painted["complete"] + painted["unverified"] > 0,
        "the other replays drawn: {painted:?}"
    );
    assert_eq!(painted["short"], 0, "no short replay: {painted:?}");
    assert!(page.inked() > 0.05, "screenshot inked {}", page.inked());
    assert_eq!(
        page.timeline_pixels_of(EMPTY_RED) as u64,
        painted["empty"],
        "the screenshot shows the canvas's empty marks"
    );
}

/// The real piecewise trace, every replay recorded: no empty-replay colour anywhere (not on
/// the canvas, not in the screenshot), and the verdict as the terminal words it.
#[test]
fn a_complete_trace_paints_no_empty_replay() {
    let dir = tempdir();
    let analysed = analyse(&trace(VLLM_PIECEWISE), dir.path());
    let page = render(&analysed.page);
    page.assert_clean();
    let coverage = &analysed.json["files"][0]["replay_coverage"];
    assert_eq!(
        page.one("pre[data-verdict=file]").trim_end(),
        terminal_verdict(&analysed.terminal)
    );
    assert_key_numbers(&page, coverage);
    let painted = page.painted();
    assert_eq!(painted["empty"], 0, "{painted:?}");
    assert!(
        painted["complete"] + painted["unverified"] > 0,
        "{painted:?}"
    );
    assert_eq!(
        page.timeline_pixels_of(EMPTY_RED),
        0,
        "no red on the screenshot's timeline"
    );
    assert!(
        page.timeline_pixels_of(COMPLETE_GREEN) > 0,
        "the screenshot shows the complete replays"
    );
    assert!(page.inked() > 0.05, "screenshot inked {}", page.inked());
    // Kernel ids are their own cells, which never wrap (the page's style: `white-space:
    // nowrap`), holding the JSON's ids; before, they were name cells that broke anywhere.
    let ids = page.texts("td.id");
    let kernels = &analysed.json["files"][0]["breakdown"]["stages"][0]["kernels"];
    assert_eq!(
        ids.first().map(String::as_str),
        kernels[0]["kernel_id"].as_str()
    );
    assert!(ids.iter().all(|id| id.len() == 6), "{ids:?}");
    let style = page.one("style");
    assert!(style.contains("td.id {") && style.contains("white-space: nowrap"));
    // Laid out in a narrow window (360 px), each id is one line. The control is the same page
    // with the id cells breaking as name cells do (`word-break: break-all`, as ids were
    // before): there some id breaks, so the measure can fail.
    let html = std::fs::read_to_string(&analysed.page).unwrap();
    assert_eq!(id_lines(&html, dir.path()).iter().max(), Some(&1));
    let wrapping = html.replacen(
        "font-size: 11.5px; white-space: nowrap;",
        "font-size: 11.5px; word-break: break-all;",
        1,
    );
    assert_ne!(wrapping, html, "the control changes the rule");
    assert!(
        id_lines(&wrapping, dir.path())
            .iter()
            .any(|&lines| lines > 1)
    );
}

/// The line boxes of each kernel-id cell's text, as Chromium lays out `html`.
fn id_lines(html: &str, dir: &std::path::Path) -> Vec<usize> {
    const MEASURE: &str = "<script>document.body.dataset.idLines = [...document.querySelectorAll('td.id')].map(td => { const r = document.createRange(); r.selectNodeContents(td); return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; }).join(',');</script>";
    const NARROW: &str =
        "<style>body { width: 360px !important; max-width: 360px !important; }</style>";
    let page = dir.join("measured.html");
    let measured = html.replacen("</body>", &format!("{NARROW}{MEASURE}</body>"), 1);
    std::fs::write(&page, measured).unwrap();
    let attr = render(&page)
        .attr("body", "data-id-lines")
        .unwrap_or_default();
    attr.split(',').filter_map(|n| n.parse().ok()).collect()
}

/// A folder of six real traces read as ranks (its capture traces are captures): one bar and one choice per file, the
/// combined verdict line as the terminal's `all files` section states it.
#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn a_folder_gets_the_rank_by_rank_view() {
    const FOLDER: &str = "tracelens/tests/traces/inference";
    let dir = tempdir();
    let analysed = analyse(&trace(FOLDER), dir.path());
    let size = std::fs::metadata(&analysed.page).expect("the page").len();
    assert!(size < PAGE_BUDGET, "page of {size} bytes");
    let page = render(&analysed.page);
    page.assert_clean();
    let files = analysed.json["files"].as_array().expect("files").len();
    assert_eq!(files, 6);
    assert_eq!(page.count("svg.rank-chart rect"), files);
    assert_eq!(page.count("select option"), files);
    let combined = analysed
        .terminal
        .split_once("══ all 6 files ══\n")
        .expect("the all-files section")
        .1
        .lines()
        .next()
        .expect("its verdict line");
    assert_eq!(page.one("pre[data-verdict=combined]").trim_end(), combined);
    assert_key_numbers(&page, &analysed.json["combined"]["replay_coverage"]);
}

/// A kernel named like markup stays text: the page renders cleanly and shows the name.
#[test]
fn markup_in_a_kernel_name_stays_text() {
    let dir = tempdir();
    let input = incomplete_piecewise(dir.path(), "named.json");
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&input).expect("read")).expect("JSON");
    const NAME: &str = "</script><img src=x onerror=alert(1)>{{DATA}}";
    let events = doc["traceEvents"].as_array_mut().expect("traceEvents");
    let kernel = events
        .iter_mut()
        .find(|e| e["cat"] == "kernel")
        .expect("a kernel");
    kernel["name"] = Value::from(NAME);
    std::fs::write(&input, serde_json::to_vec(&doc).expect("JSON")).expect("write");
    let analysed = analyse(&input, dir.path());
    let page = render(&analysed.page);
    page.assert_clean();
    assert_eq!(page.count("img"), 0, "no element made from the name");
    assert!(
        page.texts("table[data-table=kernels] td")
            .iter()
            .any(|t| t == NAME),
        "the name shown as text"
    );
}

/// `demo --html` writes `stepscope-demo.html` beside the user: two tabs, the complete trace
/// first; `#2` opens the symptom, with the generator's counts and its empty replays drawn.
#[test]
fn the_demo_page_shows_both_traces() {
    let dir = tempdir();
    let run = stepscope_in(
        dir.path(),
        ["demo", "--color", "never", "--html"],
        &[("TMPDIR", dir.path().as_os_str())],
    );
    run.expect_code(0);
    let path = dir.path().join("stepscope-demo.html");
    assert!(
        run.stdout.contains("report: stepscope-demo.html"),
        "{}",
        run.stdout
    );
    let size = std::fs::metadata(&path).expect("the page").len();
    assert!(size < PAGE_BUDGET, "page of {size} bytes");
    let truth = facts(&DemoSpec::default());

    let first = render(&path);
    first.assert_clean();
    assert_eq!(first.count("nav.tabs button"), 3);
    assert_eq!(first.one("[data-verdict-word]"), "COMPLETE");
    assert_eq!(
        first.one("[data-scope=top] [data-key=replays] b"),
        truth.replays.to_string()
    );
    assert_eq!(first.painted()["empty"], 0);

    let second = render_at(&path, "#2");
    second.assert_clean();
    assert_eq!(second.one("[data-verdict-word]"), "INCOMPLETE");
    assert_eq!(
        second.one("[data-scope=top] [data-key=recorded_replays] b"),
        truth.replays_kept_with_symptom.to_string()
    );
    assert!(second.painted()["empty"] > 0);
    assert!(second.timeline_pixels_of(EMPTY_RED) > 0);

    // The third tab is `diff` of the two: decode refused, naming the symptom's side.
    let third = render_at(&path, "#3");
    third.assert_clean();
    let refused = third.one("[data-refused=decode]");
    assert!(
        refused.contains(&format!(
            "NEW (INCOMPLETE): {} of {} graph replays recorded",
            truth.replays_kept_with_symptom, truth.replays
        )),
        "{refused}"
    );
    assert!(
        !third
            .texts("table[data-table=diff-stages] td:first-child")
            .iter()
            .any(|stage| stage.starts_with("decode")),
        "no decode row"
    );
}

/// `diff --html`: both sides' reports as tabs and the comparison; the refused stage and its
/// explanation as `diff --json` gives them, the compared stages as its rows.
#[test]
fn the_diff_page_shows_the_refusal_and_the_compared_stages() {
    let dir = tempdir();
    let new = incomplete_piecewise(dir.path(), "incomplete.json");
    let page_path = dir.path().join("diff.html");
    let base = trace(VLLM_PIECEWISE);
    let args = |extra: &[&OsStr]| {
        // The corpus has the piecewise run's capture_traces folder, the curated set not.
        let mut all: Vec<&OsStr> = vec![
            "diff".as_ref(),
            arg(&base),
            arg(&new),
            "--no-capture-folder".as_ref(),
        ];
        all.extend_from_slice(extra);
        stepscope(all)
    };
    let run = args(&["--html".as_ref(), page_path.as_os_str()]);
    run.expect_code(3);
    let json = args(&["--json".as_ref()]);
    let doc = json.expect_code(3).json();
    let refused = doc["refused"].as_array().expect("refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let stage = refused[0]["stage"].as_str().expect("a stage");
    let explanation = refused[0]["sides"][0]["explanation"]
        .as_str()
        .expect("an explanation");

    let tabs = render(&page_path);
    tabs.assert_clean();
    assert_eq!(tabs.count("nav.tabs button"), 3);
    assert_eq!(
        tabs.one("[data-verdict-word]"),
        "UNVERIFIED (complete as far as the trace shows)"
    );
    let page = render_at(&page_path, "#3");
    page.assert_clean();
    let shown = page.one(&format!("[data-refused={stage}]"));
    assert!(shown.contains(explanation), "{shown}");
    let stages: Vec<String> = doc["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["stage"].as_str().expect("a stage").to_owned())
        .collect();
    assert_eq!(
        page.texts("table[data-table=diff-stages] tbody td:first-child"),
        stages
    );
}

/// `scripts/many-replays.py OUT --replays N`: N replays of 8 graphs, every 97th empty.
fn many_replays(dir: &Path, replays: u32) -> PathBuf {
    let out = dir.join(format!("replays_{replays}.json.gz"));
    let status = std::process::Command::new("python3")
        .arg(crate::common::repo().join("scripts/many-replays.py"))
        .arg(&out)
        .args(["--replays", &replays.to_string()])
        .status()
        .expect("python3 runs");
    assert!(status.success(), "many-replays.py failed");
    out
}

/// Twice the replays, the same page: the timeline is bins, the finding table is capped, so
/// the DOM has as many elements at 40k replays as at 20k, and the page stays the same size.
#[test]
fn the_page_does_not_grow_with_replays() {
    let dir = tempdir();
    let pages: Vec<(u64, usize)> = [20_000, 40_000]
        .into_iter()
        .map(|replays| {
            let input = many_replays(dir.path(), replays);
            let sub = dir.path().join(replays.to_string());
            std::fs::create_dir_all(&sub).expect("a folder");
            let analysed = analyse(&input, &sub);
            assert_eq!(
                analysed.json["files"][0]["replay_coverage"]["replays"],
                u64::from(replays)
            );
            let page = render(&analysed.page);
            page.assert_clean();
            assert!(page.painted()["empty"] > 0);
            let size = std::fs::metadata(&analysed.page).expect("the page").len();
            (size, page.count("*"))
        })
        .collect();
    assert_eq!(
        pages[0].1, pages[1].1,
        "DOM elements at 20k and 40k replays"
    );
    let (small, large) = (pages[0].0 as f64, pages[1].0 as f64);
    assert!(large / small < 1.1, "page sizes {pages:?}");
}

/// 64 rank files (the piecewise trace with its rank and clock changed per file): one page
/// under the budget, one bar and one choice per rank in rank order, a DOM of a few thousand
/// elements.
#[test]
fn sixty_four_ranks_stay_one_small_page() {
    use stepscope_synth::removal::{read_json, to_json_bytes};
    let dir = tempdir();
    let folder = dir.path().join("ranks");
    std::fs::create_dir_all(&folder).expect("a folder");
    let doc = read_json(&trace(VLLM_PIECEWISE)).expect("the piecewise trace reads");
    for rank in 0..64u32 {
        let mut copy = doc.clone();
        copy["distributedInfo"]["rank"] = Value::from(rank);
        copy["distributedInfo"]["world_size"] = Value::from(64);
        for event in copy["traceEvents"].as_array_mut().expect("traceEvents") {
            if let Some(ts) = event.get("ts").and_then(Value::as_f64) {
                event["ts"] = Value::from(ts + f64::from(rank));
            }
        }
        let path = folder.join(format!("rank{rank}.json"));
        std::fs::write(path, to_json_bytes(&copy)).expect("write a rank");
    }
    let analysed = analyse(&folder, dir.path());
    assert_eq!(analysed.json["files"].as_array().expect("files").len(), 64);
    let size = std::fs::metadata(&analysed.page).expect("the page").len();
    assert!(size < PAGE_BUDGET, "page of {size} bytes");
    let page = render(&analysed.page);
    page.assert_clean();
    assert_eq!(page.count("svg.rank-chart rect"), 64);
    let labels = page.texts("svg.rank-chart text");
    assert_eq!(labels.first().map(String::as_str), Some("0"));
    assert_eq!(labels.get(1).map(String::as_str), Some("2"), "{labels:?}");
    assert_eq!(page.count("select option"), 64);
    assert!(page.count("*") < 4000, "{} elements", page.count("*"));
}

/// An `--html` path whose folder does not exist is refused before any work, naming the
/// flag, the folder and the fix (exit 2), in `analyze`, `diff` and `demo`.
#[test]
fn an_html_path_in_a_missing_folder_is_refused_up_front() {
    let dir = tempdir();
    let page = dir.path().join("no/such/folder/report.html");
    let input = trace(VLLM_PIECEWISE);
    let runs = [
        stepscope([
            "analyze".as_ref(),
            arg(&input),
            "--html".as_ref(),
            page.as_os_str(),
        ]),
        stepscope([
            "diff".as_ref(),
            arg(&input),
            arg(&input),
            "--html".as_ref(),
            page.as_os_str(),
        ]),
        stepscope(["demo".as_ref(), "--html".as_ref(), page.as_os_str()]),
    ];
    for run in runs {
        run.expect_code(2);
        assert!(
            run.stderr.contains("--html") && run.stderr.contains("does not exist"),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains("hint: create it first"),
            "{}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "no work done: {}", run.stdout);
    }
    assert!(!page.exists());
}

/// `--range`: the page lists each matching annotation as `--json` does.
#[test]
fn ranges_are_listed_as_the_json_has_them() {
    let dir = tempdir();
    let page_path = dir.path().join("ranges.html");
    let input = trace(VLLM_PIECEWISE);
    let with = |extra: &[&OsStr]| {
        let mut args: Vec<&OsStr> = vec![
            "analyze".as_ref(),
            arg(&input),
            "--range".as_ref(),
            "^execute".as_ref(),
        ];
        args.extend_from_slice(extra);
        stepscope(args)
    };
    with(&["--html".as_ref(), page_path.as_os_str()]).expect_code(0);
    let json = with(&["--json".as_ref()]).expect_code(0).json();
    let ranges = json["files"][0]["ranges"]["ranges"]
        .as_array()
        .expect("ranges");
    assert!(!ranges.is_empty(), "the pattern matches");
    let page = render(&page_path);
    page.assert_clean();
    let names: Vec<String> = ranges
        .iter()
        .map(|r| r["name"].as_str().expect("a name").to_owned())
        .collect();
    assert_eq!(
        page.texts("table[data-table=ranges] tbody td:first-child"),
        names
    );
}

/// An input that cannot be read still gets a page (exit 2, as `analyze` without `--html`):
/// the unreadable file named with its error at the top, the file that was read drawn below.
#[test]
fn an_unreadable_input_is_named_on_the_page() {
    let dir = tempdir();
    let cut = dir.path().join("cut.json");
    std::fs::write(
        &cut,
        br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "ts"#,
    )
    .expect("write");
    let page_path = dir.path().join("report.html");
    let run = stepscope([
        "analyze".as_ref(),
        arg(&cut),
        arg(&trace(VLLM_PIECEWISE)),
        "--html".as_ref(),
        page_path.as_os_str(),
    ]);
    run.expect_code(2);
    let page = render(&page_path);
    page.assert_clean();
    assert_eq!(page.one("[data-verdict-word]"), "UNREADABLE");
    let failed = page.texts("pre.verdict.bad");
    assert!(
        failed
            .iter()
            .any(|t| t.starts_with("could not be read: ") && t.contains("cut.json")),
        "{failed:?}"
    );
    assert!(page.painted()["complete"] + page.painted()["unverified"] > 0);
}

/// The page says what the terminal and the JSON say: the verdict by its one name
/// (`unverified`, the terminal's "UNVERIFIED (complete as far as the trace shows)"), and the
/// terminal's "to settle" line under the findings; a trace without graph replays shows no
/// replay shares (no "100% recorded" of nothing).
#[test]
fn the_page_names_the_verdict_and_how_to_settle_as_the_terminal_does() {
    let dir = tempdir();
    // A copy without the capture_traces folder beside it, whose capture would settle it.
    let alone = crate::common::copy_trace(SGLANG_DECODE, dir.path(), "sglang_decode.json.gz");
    let analysed = analyse(&alone, dir.path());
    assert_eq!(analysed.json["verdict"], "unverified");
    assert!(
        analysed
            .terminal
            .contains("replay coverage: UNVERIFIED (complete as far as the trace shows)"),
        "{}",
        analysed.terminal
    );
    let page = render(&analysed.page);
    page.assert_clean();
    assert_eq!(
        page.one("[data-verdict-word]"),
        "UNVERIFIED (complete as far as the trace shows)"
    );
    let settle = page.one("[data-settle]");
    let terminal_line = analysed
        .terminal
        .lines()
        .find(|l| l.trim_start().starts_with("to settle: "))
        .expect("the terminal's to settle line");
    assert_eq!(settle, terminal_line.trim_start());

    let dir = tempdir();
    let prefill = "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz";
    let analysed = analyse(&trace(prefill), dir.path());
    assert_eq!(analysed.json["verdict"], "no-replays");
    let page = render(&analysed.page);
    page.assert_clean();
    assert_eq!(page.one("[data-scope=top] [data-key=replays] b"), "0");
    assert_eq!(page.count("[data-scope=top] [data-key=coverage]"), 0);
    let cards = page.texts("[data-scope=top] .num").join(" | ");
    assert!(!cards.contains("100%"), "{cards}");
}
