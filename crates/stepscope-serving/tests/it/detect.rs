//! Runtime detection on fixture trees (real layouts and version strings), with `hipconfig`
//! supplied through the runner trait, and the real runner on real scripts.

use crate::common::*;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use stepscope_model::switches::AdviceBasis;
use stepscope_serving::detect::{CopyLocation, CopyOrigin, DetectError, VersionSource};
use stepscope_serving::{
    CommandFailure, CommandRunner, CopyStatus, DetectOptions, DetectionReport, DetectionSource,
    LibraryCopy, RocmLibrary, SystemCommandRunner, detect_runtime, detection_from_header,
};

/// A runner that answers with fixed output and records what it was asked to run.
struct FakeRunner {
    answer: Result<&'static str, ()>,
    calls: RefCell<Vec<PathBuf>>,
}

impl FakeRunner {
    fn new(answer: Result<&'static str, ()>) -> Self {
        Self {
            answer,
            calls: RefCell::new(Vec::new()),
        }
    }
}

impl CommandRunner for FakeRunner {
    fn run(&self, program: &Path, args: &[&str]) -> Result<String, CommandFailure> {
        assert_eq!(args, ["--version"]);
        self.calls.borrow_mut().push(program.to_owned());
        self.answer
            .map(str::to_owned)
            .map_err(|()| CommandFailure::NotFound)
    }
}

fn variables(advice: &stepscope_model::switches::SwitchAdvice) -> Vec<&'static str> {
    advice.switches.iter().map(|s| s.variable).collect()
}

#[test]
fn mapped_library_wins_over_opt_rocm() {
    let runner = FakeRunner::new(Err(()));
    let options = DetectOptions::default()
        .with_root(fixture("rocm-host"))
        .with_pid(Some(4242));
    let report = detect_runtime(&options, &runner).unwrap();
    let detection = report.detection.as_ref().unwrap();
    assert_eq!(detection.version.to_string(), "7.2.4");
    assert_eq!(detection.source, DetectionSource::ProcessMaps { pid: 4242 });
    assert_eq!(
        detection.evidence,
        "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204"
    );
    assert_eq!(detection.note, None);
    assert_eq!(
        variables(&report.advice()),
        ["DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING"]
    );
    assert!(
        runner.calls.borrow().is_empty(),
        "hipconfig is not run once a source answered"
    );
}

#[test]
fn without_a_pid_every_process_is_read() {
    let options = DetectOptions::default().with_root(fixture("rocm-host"));
    let report = detect_runtime(&options, &FakeRunner::new(Err(()))).unwrap();
    let detection = report.detection.unwrap();
    assert_eq!(detection.source, DetectionSource::ProcessMaps { pid: 4242 });
    assert!(detection.also_loaded.is_empty());
}

#[test]
fn a_pid_without_hip_falls_through_in_order() {
    let runner = FakeRunner::new(Err(()));
    let options = DetectOptions::default()
        .with_root(fixture("rocm-host"))
        .with_pid(Some(1));
    let report = detect_runtime(&options, &runner).unwrap();
    let detection = report.detection.unwrap();
    assert_eq!(detection.source, DetectionSource::RocmVersionFile);
    assert_eq!(detection.version.to_string(), "7.2.0");
    assert!(
        report.attempts[0].outcome.contains("7.2.0-43"),
        "{:?}",
        report.attempts
    );
}

#[test]
fn a_process_that_is_not_there_is_an_error_not_a_fallback() {
    let runner = FakeRunner::new(Ok("7.2.53211-aee46ad448\n"));
    let missing = DetectOptions::default()
        .with_root(fixture("rocm-host"))
        .with_pid(Some(999));
    let error = detect_runtime(&missing, &runner).unwrap_err();
    assert!(
        matches!(error, DetectError::NoSuchProcess { pid: 999, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "No process `999` under `{}` (it may have exited)",
            fixture("rocm-host").join("proc").display()
        )
    );
    assert!(runner.calls.borrow().is_empty(), "no source was tried");
}

#[test]
fn a_root_that_is_not_a_folder_is_an_error() {
    let runner = FakeRunner::new(Err(()));
    let scratch = tempfile::tempdir().unwrap();
    let missing = scratch.path().join("no-such-rootfs");
    let error = detect_runtime(&DetectOptions::default().with_root(&missing), &runner).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("Root folder `{}` does not exist", missing.display())
    );
    let file = scratch.path().join("rootfs.tar");
    std::fs::write(&file, b"").unwrap();
    let error = detect_runtime(
        &DetectOptions::default().with_root(&file).with_pid(Some(1)),
        &runner,
    )
    .unwrap_err();
    assert!(
        matches!(error, DetectError::RootNotAFolder { .. }),
        "the root is checked before the pid: {error:?}"
    );
    let fine = DetectOptions::default().with_root(fixture("rocm-host"));
    assert!(fine.with_pid(Some(4242)).check().is_ok());
}

/// The named process's maps that cannot be read stop detection: the sources after it would
/// answer for a runtime the process may not load. Gone (no maps file, or an empty one) and
/// unreadable (here a folder where the file should be) are told apart.
#[test]
fn unreadable_maps_of_a_named_process_are_an_error_not_a_fallback() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("proc/31")).unwrap();
    let options = DetectOptions::default()
        .with_root(root.path())
        .with_pid(Some(31));
    let runner = FakeRunner::new(Ok("7.2.53211-aee46ad448\n"));
    let error = detect_runtime(&options, &runner).unwrap_err();
    assert!(
        matches!(error, DetectError::ProcessGone { pid: 31, .. }),
        "{error:?}"
    );
    std::fs::write(root.path().join("proc/31/maps"), "").unwrap();
    let error = detect_runtime(&options, &runner).unwrap_err();
    assert!(
        matches!(error, DetectError::ProcessGone { pid: 31, .. }),
        "{error:?}"
    );
    std::fs::remove_file(root.path().join("proc/31/maps")).unwrap();
    std::fs::create_dir(root.path().join("proc/31/maps")).unwrap();
    let error = detect_runtime(&options, &runner).unwrap_err();
    assert!(
        matches!(error, DetectError::MapsUnreadable { pid: 31, .. }),
        "{error:?}"
    );
}

#[test]
fn unversioned_torch_library_is_read_from_the_wheel() {
    let options = DetectOptions::default()
        .with_root(fixture("torch-wheel"))
        .with_pid(Some(777));
    let report = detect_runtime(&options, &FakeRunner::new(Err(()))).unwrap();
    let detection = report.detection.as_ref().unwrap();
    assert_eq!(detection.version.to_string(), "7.2");
    assert!(
        detection
            .evidence
            .ends_with("torch-2.9.1+rocm7.2.dist-info"),
        "{}",
        detection.evidence
    );
    assert!(
        detection
            .note
            .as_deref()
            .unwrap()
            .contains("cannot be told apart")
    );
    let advice = report.advice();
    assert_eq!(advice.basis, AdviceBasis::Ambiguous);
    assert_eq!(
        variables(&advice),
        [
            "DEBUG_CLR_GRAPH_PACKET_CAPTURE",
            "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING"
        ]
    );
}

#[test]
fn python_environment_when_no_process_maps_hip() {
    let options = DetectOptions::default()
        .with_root(fixture("therock-venv"))
        .with_python_environments(vec![PathBuf::from("/opt/venv")]);
    let report = detect_runtime(&options, &FakeRunner::new(Err(()))).unwrap();
    let detection = report.detection.as_ref().unwrap();
    assert_eq!(detection.source, DetectionSource::PythonEnvironment);
    assert_eq!(detection.version.to_string(), "7.10.0");
    assert_eq!(
        variables(&report.advice()),
        ["DEBUG_CLR_GRAPH_PACKET_CAPTURE"]
    );
    // A server (pid 1) that maps no HIP runtime, beside the torch-wheel fixture's venv.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("proc/1")).unwrap();
    let libc =
        "7f0000000000-7f0000001000 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6\n";
    std::fs::write(root.path().join("proc/1/maps"), libc).unwrap();
    std::os::unix::fs::symlink(fixture("torch-wheel").join("opt"), root.path().join("opt"))
        .unwrap();
    let torch = DetectOptions::default()
        .with_root(root.path())
        .with_pid(Some(1))
        .with_python_environments(vec![PathBuf::from(
            "/opt/venv/lib/python3.10/site-packages",
        )]);
    let report = detect_runtime(&torch, &FakeRunner::new(Err(()))).unwrap();
    assert_eq!(
        report.detection.unwrap().source,
        DetectionSource::PythonEnvironment
    );
}

#[test]
fn hipconfig_last_and_its_build_number_is_not_a_patch() {
    let empty = tempfile::tempdir().unwrap();
    let runner = FakeRunner::new(Ok("7.2.53211-aee46ad448\n"));
    let report =
        detect_runtime(&DetectOptions::default().with_root(empty.path()), &runner).unwrap();
    let detection = report.detection.as_ref().unwrap();
    assert_eq!(detection.source, DetectionSource::Hipconfig);
    assert_eq!(detection.version.to_string(), "7.2");
    assert!(detection.note.as_deref().unwrap().contains("hipconfig"));
    assert_eq!(
        runner.calls.borrow().as_slice(),
        [empty.path().join("opt/rocm/bin/hipconfig")]
    );
    assert_eq!(
        report.attempts.len(),
        3,
        "maps, version file, hipconfig: {:?}",
        report.attempts
    );
    assert_eq!(report.advice().switches.len(), 2);
}

#[test]
fn nothing_found_sets_all_three() {
    let empty = tempfile::tempdir().unwrap();
    let report = detect_runtime(
        &DetectOptions::default().with_root(empty.path()),
        &FakeRunner::new(Err(())),
    )
    .unwrap();
    assert!(report.detection.is_none());
    assert_eq!(report.attempts.last().unwrap().outcome, "not found");
    let advice = report.advice();
    assert_eq!(
        (advice.switches.len(), advice.basis),
        (3, AdviceBasis::Unknown)
    );
}

#[test]
fn two_processes_with_different_runtimes_set_all_three() {
    let root = tempfile::tempdir().unwrap();
    for (pid, library) in [
        (10, "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204"),
        (20, "/opt/rocm-7.2.0/lib/libamdhip64.so.7.2.70200"),
    ] {
        let dir = root.path().join(format!("proc/{pid}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("maps"),
            format!("7f2b3c000000-7f2b3c1f4000 r-xp 00000000 103:02 4063326    {library}\n"),
        )
        .unwrap();
    }
    let report = detect_runtime(
        &DetectOptions::default().with_root(root.path()),
        &FakeRunner::new(Err(())),
    )
    .unwrap();
    let advice = report.advice();
    assert_eq!(advice.switches.len(), 3);
    assert!(
        advice.reason.contains("7.2.0 in process 20"),
        "{}",
        advice.reason
    );
    let one = DetectOptions::default()
        .with_root(root.path())
        .with_pid(Some(20));
    let report = detect_runtime(&one, &FakeRunner::new(Err(()))).unwrap();
    assert_eq!(
        variables(&report.advice()),
        ["DEBUG_CLR_GRAPH_PACKET_CAPTURE"]
    );
}

#[test]
fn trace_header_cannot_tell_patch_releases_apart() {
    let detection = detection_from_header(70253211).unwrap();
    assert_eq!(detection.source, DetectionSource::TraceHeader);
    assert_eq!(detection.version.to_string(), "7.2");
    assert!(
        detection
            .note
            .as_deref()
            .unwrap()
            .contains("7.2.0 and 7.2.4")
    );
    let advice = detection.advice();
    assert_eq!(advice.switches.len(), 2);
    assert!(advice.reason.contains("write the same header version"));
    assert!(detection_from_header(0).is_none());
    for one_line in [70051831, 71460850, 100_100_000] {
        let detection = detection_from_header(one_line).unwrap();
        assert_eq!(
            detection.note, None,
            "{one_line}: every patch release of it needs the same switches"
        );
    }
}

fn script(root: &Path, body: &str) -> PathBuf {
    let path = root.join("opt/rocm/bin/hipconfig");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn real_runner_runs_a_real_hipconfig() {
    let root = tempfile::tempdir().unwrap();
    script(root.path(), "echo 7.13.99004-3309c611");
    let report = detect_runtime(
        &DetectOptions::default().with_root(root.path()),
        &SystemCommandRunner::default(),
    )
    .unwrap();
    let detection = report.detection.unwrap();
    assert_eq!(
        (detection.source, detection.version.to_string()),
        (DetectionSource::Hipconfig, "7.13".to_owned())
    );
}

#[test]
fn real_runner_reports_missing_failing_and_hanging_programs() {
    let root = tempfile::tempdir().unwrap();
    let runner = SystemCommandRunner::new(Duration::from_millis(300));
    let missing = runner.run(&root.path().join("no-such-program"), &["--version"]);
    assert!(
        matches!(missing, Err(CommandFailure::NotFound)),
        "{missing:?}"
    );
    let failing = script(root.path(), "echo broken >&2; exit 3");
    let failed = runner
        .run(&failing, &["--version"])
        .unwrap_err()
        .to_string();
    assert!(
        failed.contains("broken") && failed.contains('3'),
        "{failed}"
    );
    let hanging = script(root.path(), "exec sleep 30");
    let started = Instant::now();
    let timed_out = runner.run(&hanging, &["--version"]);
    assert!(
        matches!(timed_out, Err(CommandFailure::TimedOut(_))),
        "{timed_out:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "killed at the timeout"
    );
}

/// The wheel's site-packages in the `stale-torch-lib` and `torch-lib-replaced` trees.
const SITE_PACKAGES: &str = "/opt/venv/lib/python3.12/site-packages";

fn detect_at(root: &Path, pid: Option<u32>, environments: &[&str]) -> DetectionReport {
    let options = DetectOptions::default()
        .with_root(root)
        .with_pid(pid)
        .with_python_environments(environments.iter().map(PathBuf::from).collect());
    detect_runtime(&options, &FakeRunner::new(Err(()))).unwrap()
}

fn copy_of(report: &DetectionReport, library: RocmLibrary) -> &LibraryCopy {
    let mut copies = report.copies.iter().filter(|copy| copy.library == library);
    let copy = copies
        .next()
        .unwrap_or_else(|| panic!("a {library} copy: {report:#?}"));
    assert!(copies.next().is_none(), "one {library} copy: {report:#?}");
    copy
}

fn shown(copy: &LibraryCopy) -> (String, Option<String>, Option<String>, CopyStatus) {
    (
        copy.path.display().to_string(),
        copy.version.map(|version| version.to_string()),
        copy.system
            .as_ref()
            .map(|system| format!("{} {}", system.version, system.evidence.display())),
        copy.status,
    )
}

#[test]
fn wheel_copies_in_torch_lib_may_be_older_than_opt_rocm() {
    let report = detect_at(&fixture("stale-torch-lib"), Some(5150), &[]);
    for (library, file, system) in [
        (
            RocmLibrary::HipRuntime,
            "libamdhip64.so",
            "libamdhip64.so.7.2.70202",
        ),
        (
            RocmLibrary::Roctracer,
            "libroctracer64.so",
            "libroctracer64.so.4.1.70202",
        ),
    ] {
        let copy = copy_of(&report, library);
        assert_eq!(
            shown(copy),
            (
                format!("{SITE_PACKAGES}/torch/lib/{file}"),
                Some("7.2".to_owned()),
                Some(format!("7.2.2 /opt/rocm/lib/{system}")),
                CopyStatus::MaybeOlder
            ),
            "{library}"
        );
        assert_eq!(copy.origin, CopyOrigin::ProcessMaps { pids: vec![5150] });
        assert_eq!(copy.location, CopyLocation::TorchLib);
        assert_eq!(
            copy.version_source,
            Some(VersionSource::WheelDistInfo(PathBuf::from(format!(
                "{SITE_PACKAGES}/torch-2.11.0+rocm7.2.dist-info"
            )))),
            "empty files are never matched by their bytes: the wheel's name tells"
        );
        assert!(copy.is_stale());
    }
    assert_eq!(report.stale_copies().count(), 2);
    let race = report.replay_race().unwrap();
    assert_eq!(
        (race.version.to_string(), race.certain, race.loaded),
        ("7.2".to_owned(), false, true),
        "7.2 with no patch release may be 7.2.0 or 7.2.1"
    );
    assert_eq!(
        variables(&report.advice()),
        [
            "DEBUG_CLR_GRAPH_PACKET_CAPTURE",
            "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING"
        ],
        "the switches stay as they were"
    );
}

/// A root whose `/opt` is the `stale-torch-lib` tree's (ROCm 7.2.2 in `/opt/rocm`, the
/// torch 2.11 wheel in `/opt/venv`), with process 1 mapping what `maps` names.
fn root_with_stale_opt(maps: &[&str]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("proc/1")).unwrap();
    let lines: String = maps
        .iter()
        .map(|path| format!("7f2b3c000000-7f2b3c1f4000 r-xp 00000000 103:02 4063326    {path}\n"))
        .collect();
    std::fs::write(root.path().join("proc/1/maps"), lines).unwrap();
    std::os::unix::fs::symlink(
        fixture("stale-torch-lib").join("opt"),
        root.path().join("opt"),
    )
    .unwrap();
    root
}

#[test]
fn an_older_rocm_install_mapped_under_a_newer_opt_rocm_is_older_for_certain() {
    let root = root_with_stale_opt(&[
        "/opt/rocm-7.2.0/lib/libamdhip64.so.7.2.70200",
        "/opt/rocm-7.2.0/lib/libroctracer64.so.4.1.70200",
    ]);
    let report = detect_at(root.path(), Some(1), &[]);
    let roctracer = copy_of(&report, RocmLibrary::Roctracer);
    assert_eq!(
        shown(roctracer),
        (
            "/opt/rocm-7.2.0/lib/libroctracer64.so.4.1.70200".to_owned(),
            Some("7.2.0".to_owned()),
            Some("7.2.2 /opt/rocm/lib/libroctracer64.so.4.1.70202".to_owned()),
            CopyStatus::Older
        )
    );
    assert_eq!(roctracer.version_source, Some(VersionSource::FileName));
    assert_eq!(roctracer.location, CopyLocation::Other);
    assert_eq!(
        copy_of(&report, RocmLibrary::HipRuntime).status,
        CopyStatus::Older
    );
    let race = report.replay_race().unwrap();
    assert_eq!(
        (
            race.version.to_string(),
            race.certain,
            race.evidence.as_str()
        ),
        (
            "7.2.0".to_owned(),
            true,
            "/opt/rocm-7.2.0/lib/libamdhip64.so.7.2.70200"
        )
    );
}

#[test]
fn copies_replaced_by_opt_rocm_files_are_not_flagged() {
    let report = detect_at(&fixture("torch-lib-replaced"), Some(5150), &[]);
    for (library, system) in [
        (
            RocmLibrary::HipRuntime,
            "/opt/rocm/lib/libamdhip64.so.7.2.70202",
        ),
        (
            RocmLibrary::Roctracer,
            "/opt/rocm/lib/libroctracer64.so.4.1.70202",
        ),
    ] {
        let copy = copy_of(&report, library);
        assert_eq!(
            copy.version_source,
            Some(VersionSource::SameBytesAs(PathBuf::from(system))),
            "the bytes tell before the wheel's name does"
        );
        assert_eq!(copy.version.unwrap().to_string(), "7.2.2");
        assert_eq!(copy.status, CopyStatus::NotOlder);
    }
    assert_eq!(report.stale_copies().count(), 0);
    assert_eq!(report.replay_race(), None);
    let detection = report.detection.as_ref().unwrap();
    assert_eq!(detection.version.to_string(), "7.2.2");
    assert!(
        detection
            .evidence
            .ends_with("/opt/rocm/lib/libamdhip64.so.7.2.70202"),
        "{}",
        detection.evidence
    );
    assert_eq!(
        variables(&report.advice()),
        ["DEBUG_CLR_GRAPH_PACKET_CAPTURE"]
    );
}

#[test]
fn a_7_2_1_runtime_has_the_replay_race_whatever_opt_rocm_is() {
    let report = detect_at(&fixture("rocm-7.2.1"), Some(6060), &[]);
    let hip = copy_of(&report, RocmLibrary::HipRuntime);
    assert_eq!(
        shown(hip),
        (
            "/opt/rocm-7.2.1/lib/libamdhip64.so.7.2.70201".to_owned(),
            Some("7.2.1".to_owned()),
            Some("7.2.1 /opt/rocm/lib/libamdhip64.so.7.2.70201".to_owned()),
            CopyStatus::NotOlder
        )
    );
    assert_eq!(
        copy_of(&report, RocmLibrary::Roctracer)
            .version
            .unwrap()
            .to_string(),
        "7.2.1"
    );
    assert_eq!(
        report.stale_copies().count(),
        0,
        "the same release as /opt/rocm"
    );
    let race = report.replay_race().unwrap();
    assert_eq!(
        (race.version.to_string(), race.certain, race.loaded),
        ("7.2.1".to_owned(), true, true)
    );
    assert_eq!(
        race.evidence,
        "/opt/rocm-7.2.1/lib/libamdhip64.so.7.2.70201"
    );
    assert_eq!(
        variables(&report.advice()),
        ["DEBUG_CLR_GRAPH_PACKET_CAPTURE"],
        "the race changes no switch"
    );
}

#[test]
fn a_library_no_process_maps_comes_from_the_python_environment() {
    let root = root_with_stale_opt(&[&format!("{SITE_PACKAGES}/torch/lib/libamdhip64.so")]);
    let report = detect_at(root.path(), Some(1), &["/opt/venv"]);
    assert_eq!(
        copy_of(&report, RocmLibrary::HipRuntime).origin,
        CopyOrigin::ProcessMaps { pids: vec![1] }
    );
    let roctracer = copy_of(&report, RocmLibrary::Roctracer);
    assert_eq!(
        roctracer.origin,
        CopyOrigin::PythonEnvironment {
            environment: PathBuf::from("/opt/venv")
        }
    );
    assert_eq!(
        shown(roctracer),
        (
            format!("{SITE_PACKAGES}/torch/lib/libroctracer64.so"),
            Some("7.2".to_owned()),
            Some("7.2.2 /opt/rocm/lib/libroctracer64.so.4.1.70202".to_owned()),
            CopyStatus::MaybeOlder
        )
    );
    let therock = detect_at(&fixture("therock-venv"), None, &["/opt/venv"]);
    let hip = copy_of(&therock, RocmLibrary::HipRuntime);
    assert_eq!(hip.location, CopyLocation::RocmSdkCore);
    assert_eq!(
        (hip.version.unwrap().to_string(), hip.status),
        ("7.10.0".to_owned(), CopyStatus::NoComparison),
        "no /opt/rocm there"
    );
    assert!(
        therock
            .copies
            .iter()
            .all(|copy| copy.library == RocmLibrary::HipRuntime)
    );
}

#[test]
fn several_processes_mapping_one_copy_are_listed_once() {
    let root = root_with_stale_opt(&[]);
    for pid in [7, 9] {
        std::fs::create_dir_all(root.path().join(format!("proc/{pid}"))).unwrap();
        std::fs::copy(
            fixture("stale-torch-lib").join("proc/5150/maps"),
            root.path().join(format!("proc/{pid}/maps")),
        )
        .unwrap();
    }
    let report = detect_at(root.path(), None, &[]);
    assert_eq!(report.copies.len(), 2, "{:#?}", report.copies);
    for copy in &report.copies {
        assert_eq!(copy.origin, CopyOrigin::ProcessMaps { pids: vec![7, 9] });
    }
}
