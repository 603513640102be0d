//! The verdict of several inputs together: the worst file verdict, or what kept the inputs
//! from having one (a file that could not be read, a file read only up to a break).

use serde::Serialize;
use stepscope_analysis::Verdict;
use stepscope_analysis::combine::combine_verdicts;

/// The verdict of every input together (`verdict` of the document, of `combined`, of a diff
/// side); serialised as its word ([`OverallVerdict::as_str`]): a file verdict's name,
/// `unreadable` or `partial`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OverallVerdict {
    /// An input file could not be read.
    Unreadable,
    /// An input was read only up to a break (`--allow-truncated`) and nothing worse than a
    /// passing verdict was found in what was read.
    Partial,
    /// The worst verdict of the files read.
    #[serde(untagged)]
    Worst(Verdict),
}

impl OverallVerdict {
    /// The word, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            OverallVerdict::Unreadable => "unreadable",
            OverallVerdict::Partial => "partial",
            OverallVerdict::Worst(verdict) => verdict.as_str(),
        }
    }
}

impl From<Verdict> for OverallVerdict {
    fn from(verdict: Verdict) -> Self {
        OverallVerdict::Worst(verdict)
    }
}

impl std::fmt::Display for OverallVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict of every input together: `unreadable` when a file could not be read, else
/// `no-events` when a file holds no events (a rank that recorded nothing is missing work,
/// whatever the other ranks show), else the worst file verdict — `partial` instead of a
/// passing one (complete, unverified, no-replays) when a file was read only up to a break.
pub fn overall_verdict(
    verdicts: &[Verdict],
    failed_files: usize,
    partial_files: usize,
) -> OverallVerdict {
    if failed_files > 0 {
        return OverallVerdict::Unreadable;
    }
    if verdicts.contains(&Verdict::NoEvents) {
        return OverallVerdict::Worst(Verdict::NoEvents);
    }
    let worst = combine_verdicts(verdicts.iter().copied());
    if partial_files > 0 && !worst.fails_gate(false) {
        return OverallVerdict::Partial;
    }
    OverallVerdict::Worst(worst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stepscope_analysis::Stage;
    use stepscope_analysis::{AssignmentMethod, IdleBasis, StageKey};
    use stepscope_analysis::{Counter, FindingKind, ReplayStatus, Verdict};
    use stepscope_model::patterns::RecordingPattern;

    /// `value` as serde writes it into the JSON document.
    fn wire<T: Serialize>(value: T) -> String {
        match serde_json::to_value(value).expect("serialises") {
            serde_json::Value::String(text) => text,
            other => panic!("not a string: {other}"),
        }
    }

    #[test]
    fn every_enum_in_the_documents_serialises_as_its_name() {
        for verdict in Verdict::ALL {
            assert_eq!(wire(verdict), verdict.as_str());
            let overall = OverallVerdict::from(verdict);
            assert_eq!(wire(overall), verdict.as_str());
        }
        for overall in [OverallVerdict::Unreadable, OverallVerdict::Partial] {
            assert_eq!(wire(overall), overall.as_str());
        }
        for counter in Counter::ALL {
            assert_eq!(wire(counter), counter.name());
        }
        for kind in FindingKind::ALL {
            assert_eq!(wire(kind), kind.as_str());
        }
        for pattern in RecordingPattern::ALL {
            assert_eq!(wire(pattern), pattern.as_str());
        }
        for status in [
            ReplayStatus::Complete,
            ReplayStatus::Unverified,
            ReplayStatus::Short,
            ReplayStatus::Empty,
            ReplayStatus::Damaged,
        ] {
            assert_eq!(wire(status), status.as_str());
        }
        for stage in Stage::ALL.map(StageKey::Stage).into_iter() {
            assert_eq!(wire(stage), stage.as_str());
        }
        assert_eq!(wire(StageKey::Unassigned), "unassigned");
        for method in [
            AssignmentMethod::StepAnnotations,
            AssignmentMethod::ReplaysAsDecode,
        ] {
            assert_eq!(wire(method), method.as_str());
        }
        for basis in [
            IdleBasis::StepWindows,
            IdleBasis::GpuSpan,
            IdleBasis::Mixed,
            IdleBasis::NotMeasured,
        ] {
            assert_eq!(wire(basis), basis.as_str());
        }
    }

    #[test]
    fn an_unreadable_file_outweighs_every_verdict_and_a_break_only_passing_ones() {
        let all = Verdict::ALL;
        assert_eq!(overall_verdict(&all, 1, 0), OverallVerdict::Unreadable);
        assert_eq!(
            overall_verdict(&[Verdict::Complete, Verdict::NoEvents], 0, 1),
            OverallVerdict::Worst(Verdict::NoEvents)
        );
        assert_eq!(
            overall_verdict(&[Verdict::Complete], 0, 1),
            OverallVerdict::Partial
        );
        assert_eq!(
            overall_verdict(&[Verdict::Incomplete], 0, 1),
            OverallVerdict::Worst(Verdict::Incomplete)
        );
    }
}
