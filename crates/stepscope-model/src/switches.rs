//! HIP runtime switches that make the ROCm profiler record every graph replay.
//!
//! One table, the single source for advice in reports, for `stepscope env` and for the
//! profile configs' checks. Facts: each runtime's `flags.hpp` (the variable, its default,
//! and the executor it switches).
//!
//! Two ways in: [`advice_for_header`] for the version a Kineto trace header carries (major
//! and minor only), and [`advice_for_version`] / [`advice_for_text`] for a version a user
//! types or detection reads (`7.2.4`, `7.2`, `10.1`, `7.10.0a20251120`, `develop`).
//!
//! ```
//! use stepscope_model::switches::{RuntimeVersion, advice_for_text, advice_for_version};
//!
//! let exact = advice_for_version(RuntimeVersion::parse("7.2.4").unwrap());
//! assert_eq!(exact.switches[0].variable, "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING");
//! // the patch release decides on the 7.2 line; without it both 7.2 switches are advised
//! assert_eq!(advice_for_text("7.2").switches.len(), 2);
//! // a version outside the table gets all three: a runtime ignores variables it does not define
//! assert_eq!(advice_for_text("11.0").switches.len(), 3);
//! ```

use crate::HipVersion;
use std::fmt;

/// One environment switch for one line of HIP runtimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeSwitch {
    /// Runtime line it applies to, as users name it.
    pub runtime_line: &'static str,
    /// Environment variable.
    pub variable: &'static str,
    /// Value that turns the replay optimisation off.
    pub value: &'static str,
    /// What the value does.
    pub effect: &'static str,
    /// Where the variable is defined.
    pub source: &'static str,
    /// The release tag (or branch) of that `flags.hpp`.
    pub source_tag: &'static str,
    /// Whether GPU runs have shown that it restores every replay.
    pub measured: bool,
    /// What else a user must know.
    pub notes: &'static str,
}

impl RuntimeSwitch {
    /// `"measured"` or `"not yet measured on a GPU"`, as every output says it.
    pub fn measured_text(&self) -> &'static str {
        if self.measured {
            "measured"
        } else {
            "not yet measured on a GPU"
        }
    }
}

/// The switch table, oldest runtime line first.
pub const SWITCHES: [RuntimeSwitch; 3] = [
    RuntimeSwitch {
        runtime_line: "ROCm 7.1.0 – 7.2.3 (therock 7.9, 7.10)",
        variable: "DEBUG_CLR_GRAPH_PACKET_CAPTURE",
        value: "0",
        effect: "no AQL packet capture at graph instantiate",
        source: "clr `rocclr/utils/flags.hpp` at rocm-7.2.0",
        source_tag: "rocm-7.2.0",
        measured: true,
        notes: "measured on ROCm 7.2.0: all replays recorded; decode throughput unchanged within noise (median 5277 vs 5208 tok/s)",
    },
    RuntimeSwitch {
        runtime_line: "ROCm 7.2.4 (therock 7.11 – 7.14)",
        variable: "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING",
        value: "0",
        effect: "segmented graph executor off; classic RunNodes path",
        source: "clr `rocclr/utils/flags.hpp` at rocm-7.2.4",
        source_tag: "rocm-7.2.4",
        measured: false,
        notes: "a no-op on 10.x, where it is already the default",
    },
    RuntimeSwitch {
        runtime_line: "therock 10.0 – 10.2, develop",
        variable: "DEBUG_HIP_GRAPH_CLASSIC_PATH",
        value: "1",
        effect: "GraphExecClassic instead of GraphExecSegmented",
        source: "clr `rocclr/utils/flags.hpp` on develop",
        source_tag: "develop",
        measured: false,
        notes: "the classic executor refuses multi-device graphs; per-rank decode graphs are single-device",
    },
];

/// A release line of HIP runtimes and the switch (index into [`SWITCHES`]) it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeLine {
    /// How users name the line.
    pub name: &'static str,
    /// First release of the line, `(major, minor, patch)`.
    pub first: (u32, u32, u32),
    /// Last release of the line, inclusive.
    pub last: (u32, u32, u32),
    /// Index of its switch in [`SWITCHES`].
    pub switch: usize,
}

/// The HIP runtime lines and their switches. Versions 7.9 – 7.14 and 10.x are therock releases;
/// their minor numbers do not overlap ROCm's.
pub const RUNTIME_LINES: [RuntimeLine; 5] = [
    RuntimeLine {
        name: "ROCm 7.1.0 – 7.2.3",
        first: (7, 1, 0),
        last: (7, 2, 3),
        switch: 0,
    },
    RuntimeLine {
        name: "ROCm 7.2.4",
        first: (7, 2, 4),
        last: (7, 2, 4),
        switch: 1,
    },
    RuntimeLine {
        name: "therock 7.9 – 7.10",
        first: (7, 9, 0),
        last: (7, 10, u32::MAX),
        switch: 0,
    },
    RuntimeLine {
        name: "therock 7.11 – 7.14",
        first: (7, 11, 0),
        last: (7, 14, u32::MAX),
        switch: 1,
    },
    RuntimeLine {
        name: "therock 10.0 – 10.2",
        first: (10, 0, 0),
        last: (10, 2, u32::MAX),
        switch: 2,
    },
];

/// The first release that captures AQL packets at graph instantiate.
const FIRST_AFFECTED: (u32, u32, u32) = (7, 1, 0);

/// A HIP runtime or ROCm release version, with the patch release where the text carried it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuntimeVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch release; `None` when only a build number (or nothing) followed the minor.
    pub patch: Option<u32>,
}

impl RuntimeVersion {
    /// Reads `7.2.4`, `7.2`, `10.1`, `rocm-7.2.0`, `7.2.0-43` (`/opt/rocm/.info/version`),
    /// `7.10.0a20251120` (therock), and the suffix of a library file name: `7.2.70204`
    /// (ROCm packages encode the release as `major*10000 + minor*100 + patch`: 7.2.4) or
    /// `7.2.53211` (a build number, as `hipconfig --version` and source builds write it:
    /// the patch release is unknown).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_prefix("rocm-").unwrap_or(text);
        let text = text.strip_prefix('v').unwrap_or(text);
        let mut parts = text.split('.');
        let major = parts.next().and_then(whole_number)?;
        let minor = parts.next().and_then(leading_number)?;
        let third = parts.next().and_then(leading_number);
        let patch = third.and_then(|third| patch_from_third(major, minor, third));
        Some(Self {
            major,
            minor,
            patch,
        })
    }

    /// The version of a Kineto header, where the patch release is lost.
    pub fn from_header(version: HipVersion) -> Self {
        Self {
            major: version.major,
            minor: version.minor,
            patch: None,
        }
    }

    /// The same version without its patch release.
    pub fn without_patch(self) -> Self {
        Self {
            patch: None,
            ..self
        }
    }
}

impl fmt::Display for RuntimeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.patch {
            Some(patch) => write!(f, "{}.{}.{patch}", self.major, self.minor),
            None => write!(f, "{}.{}", self.major, self.minor),
        }
    }
}

/// Digits only: `7`.
fn whole_number(text: &str) -> Option<u32> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// The digits a component starts with: `0` of `0-43`, `10` of `10rc1`.
fn leading_number(text: &str) -> Option<u32> {
    let end = text
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(text.len());
    text[..end].parse().ok()
}

/// A third component below 100 is a patch release; `major*10000 + minor*100 + patch` is a
/// ROCm package's release (`libamdhip64.so.7.2.70204`); anything else is a build number.
fn patch_from_third(major: u32, minor: u32, third: u32) -> Option<u32> {
    if third < 100 {
        return Some(third);
    }
    let base = major
        .checked_mul(10_000)?
        .checked_add(minor.checked_mul(100)?)?;
    (third >= base && third - base < 100).then(|| third - base)
}

/// How the advice was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdviceBasis {
    /// The version belongs to exactly one runtime line.
    Line,
    /// The version may belong to several lines (no patch release): their switches together.
    Ambiguous,
    /// The version is not in the table (or could not be read): all three switches.
    Unknown,
    /// The runtime predates graph packet capture: no switch is known to be needed.
    Predates,
}

/// Which switches a runtime needs, and how sure that advice is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchAdvice {
    /// The switches to set, all of them in server's environment at start.
    pub switches: Vec<RuntimeSwitch>,
    /// Why this set: which lines the version may belong to.
    pub reason: String,
    /// How the set was reached.
    pub basis: AdviceBasis,
}

/// Which lines `version` may belong to: all lines of its major.minor when the patch is
/// unknown.
pub fn lines_for(version: RuntimeVersion) -> Vec<RuntimeLine> {
    let RuntimeVersion {
        major,
        minor,
        patch,
    } = version;
    let (low, high) = match patch {
        Some(patch) => ((major, minor, patch), (major, minor, patch)),
        None => ((major, minor, 0), (major, minor, u32::MAX)),
    };
    RUNTIME_LINES
        .iter()
        .filter(|line| line.first <= high && low <= line.last)
        .copied()
        .collect()
}

/// The switches for `version`'s lines, in table order, and the basis.
fn switches_for(version: RuntimeVersion) -> (Vec<RuntimeSwitch>, AdviceBasis) {
    let lines = lines_for(version);
    let mut indices: Vec<usize> = lines.iter().map(|line| line.switch).collect();
    indices.sort_unstable();
    indices.dedup();
    let patchless_start = (version.major, version.minor, version.patch.unwrap_or(0));
    let basis = match indices.len() {
        0 if patchless_start < FIRST_AFFECTED => AdviceBasis::Predates,
        0 => AdviceBasis::Unknown,
        1 => AdviceBasis::Line,
        _ => AdviceBasis::Ambiguous,
    };
    if basis == AdviceBasis::Unknown {
        indices = vec![0, 1, 2];
    }
    (indices.iter().map(|&i| SWITCHES[i]).collect(), basis)
}

/// Advice for a version read from a file name, a version file, `hipconfig` or typed by a user.
pub fn advice_for_version(version: RuntimeVersion) -> SwitchAdvice {
    let (switches, basis) = switches_for(version);
    let line_names = lines_for(version)
        .iter()
        .map(|line| line.name)
        .collect::<Vec<_>>()
        .join(" or ");
    let reason = match basis {
        AdviceBasis::Line => format!("HIP runtime {version} belongs to {line_names}"),
        AdviceBasis::Ambiguous => format!(
            "{version} without a patch release may be {line_names}, which need different switches: set both"
        ),
        AdviceBasis::Unknown => format!(
            "{version} is not in the switch table: set all three (a runtime ignores variables it does not define)"
        ),
        AdviceBasis::Predates => format!(
            "{version} predates graph packet capture (7.1); no switch is known to be needed"
        ),
    };
    SwitchAdvice {
        switches,
        reason,
        basis,
    }
}

/// Advice for a version as a user types it; `develop` is the development branch, and text
/// that is not a version gets all three switches with the reason.
pub fn advice_for_text(text: &str) -> SwitchAdvice {
    let trimmed = text.trim();
    if trimmed.eq_ignore_ascii_case("develop") {
        return SwitchAdvice {
            switches: vec![SWITCHES[2]],
            reason: "the develop branch replays through GraphExecSegmented".to_owned(),
            basis: AdviceBasis::Line,
        };
    }
    match RuntimeVersion::parse(trimmed) {
        Some(version) => advice_for_version(version),
        None => SwitchAdvice {
            switches: SWITCHES.to_vec(),
            reason: format!(
                "`{trimmed}` is not a version stepscope can read: set all three (a runtime ignores variables it does not define)"
            ),
            basis: AdviceBasis::Unknown,
        },
    }
}

/// What CUDA needs: no switch.
pub const CUDA_NOTE: &str = "CUDA: CUPTI records every kernel of a replay under its cudaGraphLaunch, so the PyTorch profiler needs no switch; Nsight Systems needs --cuda-graph-trace=node (its default, graph, shows one opaque block per replay)";

/// Where to look when a CUDA trace lacks kernels: no runtime switch restores them.
pub const CUDA_MISSING_KERNELS_NOTE: &str = "missing kernels on CUDA are not fixed by a runtime switch; suspect the profiler's activity buffers (CUPTI buffer exhaustion drops records silently, pytorch/kineto #1362)";

/// Advice for a HIP version read from a trace header, where the patch release is lost.
pub fn advice_for_header(version: HipVersion) -> SwitchAdvice {
    let (major, minor) = (version.major, version.minor);
    let (switches, basis) = switches_for(RuntimeVersion::from_header(version));
    let reason = match (basis, major, minor) {
        (AdviceBasis::Predates, ..) => format!(
            "HIP {major}.{minor} predates graph packet capture (7.1); no switch is known to be needed"
        ),
        (AdviceBasis::Ambiguous, 7, 2) => {
            "7.2.0–7.2.3 and 7.2.4 write the same header version and need different switches: set both".to_owned()
        }
        (AdviceBasis::Ambiguous, ..) => format!(
            "HIP {major}.{minor} spans runtime lines that need different switches: set them all"
        ),
        (AdviceBasis::Unknown, ..) => format!(
            "HIP {major}.{minor} is not in the switch table: set all three (a runtime ignores variables it does not define)"
        ),
        (AdviceBasis::Line, ..) => match switches.first().map(|s| s.variable) {
            Some("DEBUG_CLR_GRAPH_PACKET_CAPTURE") => {
                format!("HIP {major}.{minor} captures AQL packets at instantiate")
            }
            Some("DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING") => {
                format!("HIP {major}.{minor} uses the segmented graph executor")
            }
            _ => format!("HIP {major}.{minor} replays through GraphExecSegmented"),
        },
    };
    SwitchAdvice {
        switches,
        reason,
        basis,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variables(value: u64) -> Vec<&'static str> {
        let version = HipVersion::from_header(value).unwrap();
        advice_for_header(version)
            .switches
            .iter()
            .map(|s| s.variable)
            .collect()
    }

    fn typed(text: &str) -> Vec<&'static str> {
        advice_for_text(text)
            .switches
            .iter()
            .map(|s| s.variable)
            .collect()
    }

    const CAPTURE: &str = "DEBUG_CLR_GRAPH_PACKET_CAPTURE";
    const SEGMENT: &str = "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING";
    const CLASSIC: &str = "DEBUG_HIP_GRAPH_CLASSIC_PATH";

    #[test]
    fn header_72_gets_both_72_switches() {
        assert_eq!(variables(70253211), [CAPTURE, SEGMENT]);
        let advice = advice_for_header(HipVersion::from_header(70253211).unwrap());
        assert_eq!(
            advice.reason,
            "7.2.0–7.2.3 and 7.2.4 write the same header version and need different switches: set both"
        );
        assert_eq!(advice.basis, AdviceBasis::Ambiguous);
    }

    #[test]
    fn other_lines() {
        assert!(variables(70051831).is_empty());
        assert_eq!(variables(71460850), [SEGMENT]);
        assert_eq!(variables(100_100_000), [CLASSIC]);
        assert_eq!(variables(80_000_000).len(), 3);
        assert_eq!(variables(70_100_000), [CAPTURE]);
        assert_eq!(variables(70_900_000), [CAPTURE]);
        assert_eq!(variables(71_000_000), [CAPTURE]);
        assert_eq!(variables(71_100_000), [SEGMENT]);
        assert_eq!(variables(60_443_483), [] as [&str; 0]);
        assert_eq!(variables(100_300_000).len(), 3);
    }

    #[test]
    fn header_reasons_name_the_mechanism() {
        let reason = |value| advice_for_header(HipVersion::from_header(value).unwrap()).reason;
        assert_eq!(
            reason(70051831),
            "HIP 7.0 predates graph packet capture (7.1); no switch is known to be needed"
        );
        assert_eq!(
            reason(71460850),
            "HIP 7.14 uses the segmented graph executor"
        );
        assert_eq!(
            reason(70_100_000),
            "HIP 7.1 captures AQL packets at instantiate"
        );
        assert_eq!(
            reason(100_100_000),
            "HIP 10.1 replays through GraphExecSegmented"
        );
    }

    #[test]
    fn typed_versions_pick_their_line() {
        assert_eq!(typed("7.2.0"), [CAPTURE]);
        assert_eq!(typed("7.2.3"), [CAPTURE]);
        assert_eq!(typed("7.1.1"), [CAPTURE]);
        assert_eq!(typed("7.2.4"), [SEGMENT]);
        assert_eq!(typed("7.2"), [CAPTURE, SEGMENT]);
        assert_eq!(typed("10.1"), [CLASSIC]);
        assert_eq!(typed("10.2.0"), [CLASSIC]);
        assert_eq!(typed("develop"), [CLASSIC]);
        assert_eq!(typed("7.9.0"), [CAPTURE]);
        assert_eq!(typed("7.10.0a20251120"), [CAPTURE]);
        assert_eq!(typed("7.11"), [SEGMENT]);
        assert_eq!(typed("7.14.0"), [SEGMENT]);
        assert_eq!(typed("rocm-7.2.4"), [SEGMENT]);
        assert_eq!(typed("7.2.0-43"), [CAPTURE]);
    }

    #[test]
    fn unknown_and_old_versions() {
        assert_eq!(typed("7.2.5"), [CAPTURE, SEGMENT, CLASSIC]);
        assert_eq!(advice_for_text("7.2.5").basis, AdviceBasis::Unknown);
        assert_eq!(typed("11.0"), [CAPTURE, SEGMENT, CLASSIC]);
        assert_eq!(typed("7.15.26333"), [CAPTURE, SEGMENT, CLASSIC]);
        assert_eq!(typed("banana"), [CAPTURE, SEGMENT, CLASSIC]);
        assert!(advice_for_text("banana").reason.contains("`banana`"));
        assert!(typed("6.4.3").is_empty());
        assert_eq!(advice_for_text("7.0.2").basis, AdviceBasis::Predates);
    }

    #[test]
    fn library_suffixes_decode_package_releases_not_builds() {
        let parse = |text| RuntimeVersion::parse(text).unwrap();
        assert_eq!(parse("7.2.70204").patch, Some(4));
        assert_eq!(parse("7.2.70200").to_string(), "7.2.0");
        assert_eq!(parse("6.4.60404").to_string(), "6.4.4");
        assert_eq!(parse("7.2.53211").patch, None);
        assert_eq!(parse("7.14.60850-0000000").to_string(), "7.14");
        assert_eq!(parse("7.1.25445-7484b05b13").to_string(), "7.1");
        assert_eq!(parse("6.1.2-98").to_string(), "6.1.2");
        assert_eq!(parse("7.13.0").to_string(), "7.13.0");
        assert!(RuntimeVersion::parse("7").is_none());
        assert!(RuntimeVersion::parse("").is_none());
        assert!(RuntimeVersion::parse("x.2").is_none());
    }

    #[test]
    fn every_switch_has_a_line_and_every_line_a_switch() {
        for (index, switch) in SWITCHES.iter().enumerate() {
            assert!(RUNTIME_LINES.iter().any(|line| line.switch == index));
            assert!(switch.source.contains(switch.source_tag));
        }
        for line in RUNTIME_LINES {
            assert!(line.first <= line.last && line.switch < SWITCHES.len());
        }
    }
}
