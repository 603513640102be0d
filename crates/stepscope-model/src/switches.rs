//! HIP runtime switches that make the ROCm profiler record every graph replay.
//!
//! One table, the single source for advice in reports and for profile configs.
//! Facts: DESIGN.md §2, from each runtime's `flags.hpp`.

use crate::HipVersion;

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
    /// Whether GPU runs have shown that it restores every replay.
    pub measured: bool,
    /// What else a user must know.
    pub notes: &'static str,
}

/// The switch table, oldest runtime line first.
pub const SWITCHES: [RuntimeSwitch; 3] = [
    RuntimeSwitch {
        runtime_line: "ROCm 7.1.0 – 7.2.3 (therock 7.9, 7.10)",
        variable: "DEBUG_CLR_GRAPH_PACKET_CAPTURE",
        value: "0",
        effect: "no AQL packet capture at graph instantiate",
        source: "clr `rocclr/utils/flags.hpp` at rocm-7.2.0",
        measured: true,
        notes: "measured on ROCm 7.2.0: all replays recorded; decode throughput unchanged within noise (median 5277 vs 5208 tok/s)",
    },
    RuntimeSwitch {
        runtime_line: "ROCm 7.2.4 (therock 7.11 – 7.14)",
        variable: "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING",
        value: "0",
        effect: "segmented graph executor off; classic RunNodes path",
        source: "clr `rocclr/utils/flags.hpp` at rocm-7.2.4",
        measured: false,
        notes: "a no-op on 10.x, where it is already the default",
    },
    RuntimeSwitch {
        runtime_line: "therock 10.0 – 10.2, develop",
        variable: "DEBUG_HIP_GRAPH_CLASSIC_PATH",
        value: "1",
        effect: "GraphExecClassic instead of GraphExecSegmented",
        source: "clr `rocclr/utils/flags.hpp` on develop",
        measured: false,
        notes: "the classic executor refuses multi-device graphs; per-rank decode graphs are single-device",
    },
];

/// Which switches a runtime needs, and how sure that advice is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchAdvice {
    /// The switches to set, all of them in server's environment at start.
    pub switches: Vec<RuntimeSwitch>,
    /// Why this set: which lines the version may belong to.
    pub reason: String,
}

/// Advice for a HIP version read from a trace header, where the patch release is lost.
pub fn advice_for_header(version: HipVersion) -> SwitchAdvice {
    let (major, minor) = (version.major, version.minor);
    let pick = |indices: &[usize], reason: String| SwitchAdvice {
        switches: indices.iter().map(|&i| SWITCHES[i]).collect(),
        reason,
    };
    match (major, minor) {
        (0..=6, _) | (7, 0) => SwitchAdvice {
            switches: Vec::new(),
            reason: format!(
                "HIP {major}.{minor} predates graph packet capture (7.1); no switch is known to be needed"
            ),
        },
        (7, 1) | (7, 9) | (7, 10) => pick(&[0], format!("HIP {major}.{minor} captures AQL packets at instantiate")),
        (7, 2) => pick(
            &[0, 1],
            "7.2.0–7.2.3 and 7.2.4 write the same header version and need different switches: set both".to_owned(),
        ),
        (7, 11..=14) => pick(&[1], format!("HIP {major}.{minor} uses the segmented graph executor")),
        (10, 0..=2) => pick(&[2], format!("HIP {major}.{minor} replays through GraphExecSegmented")),
        _ => pick(
            &[0, 1, 2],
            format!("HIP {major}.{minor} is not in the switch table: set all three (a runtime ignores variables it does not define)"),
        ),
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

    #[test]
    fn header_72_gets_both_72_switches() {
        assert_eq!(
            variables(70253211),
            [
                "DEBUG_CLR_GRAPH_PACKET_CAPTURE",
                "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING"
            ]
        );
    }

    #[test]
    fn other_lines() {
        assert!(variables(70051831).is_empty());
        assert_eq!(variables(71460850), ["DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING"]);
        assert_eq!(variables(100_100_000), ["DEBUG_HIP_GRAPH_CLASSIC_PATH"]);
        assert_eq!(variables(80_000_000).len(), 3);
    }
}
