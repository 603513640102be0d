//! What problem a replay raises, if any: the kind of finding reports list it under.

use super::{Replay, ReplayStatus};
use serde::Serialize;

/// The problem a replay flags, named after the problem (JSON `findings[].kind`, the CSV and
/// Parquet `kind` column, the terminal's finding groups). A replay raises at most one: the
/// first that applies in [`FindingKind::ALL`]'s order of severity, except that a complete
/// replay raises [`FindingKind::ReplayOrderMismatch`] only when nothing else applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "PascalCase")]
pub enum FindingKind {
    /// A replay with no recorded node ([`ReplayStatus::Empty`]).
    ReplayWithoutKernels,
    /// A replay with some expected nodes not recorded ([`ReplayStatus::Short`]).
    ShortReplay,
    /// A replay that lost events to bad data ([`ReplayStatus::Damaged`]).
    DamagedReplay,
    /// A replay whose kernels were recorded after its step ([`Replay::deferred`]).
    DeferredKernelBurst,
    /// A replay holding other kernels' durations ([`Replay::implausible`]).
    ImplausibleDurations,
    /// A replay whose size rests on itself alone ([`ReplayStatus::Unverified`]).
    UnverifiedReplay,
    /// A complete replay whose kernel order differs from its graph's reference order.
    ReplayOrderMismatch,
}

impl FindingKind {
    /// Every kind, in report order.
    pub const ALL: [FindingKind; 7] = [
        FindingKind::ReplayWithoutKernels,
        FindingKind::ShortReplay,
        FindingKind::DamagedReplay,
        FindingKind::DeferredKernelBurst,
        FindingKind::ImplausibleDurations,
        FindingKind::UnverifiedReplay,
        FindingKind::ReplayOrderMismatch,
    ];

    /// Its name, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::ReplayWithoutKernels => "ReplayWithoutKernels",
            FindingKind::ShortReplay => "ShortReplay",
            FindingKind::DamagedReplay => "DamagedReplay",
            FindingKind::DeferredKernelBurst => "DeferredKernelBurst",
            FindingKind::ImplausibleDurations => "ImplausibleDurations",
            FindingKind::UnverifiedReplay => "UnverifiedReplay",
            FindingKind::ReplayOrderMismatch => "ReplayOrderMismatch",
        }
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Replay {
    /// The finding this replay raises (`None`: a complete replay in capture order).
    pub fn finding(&self) -> Option<FindingKind> {
        match self.status {
            ReplayStatus::Empty => Some(FindingKind::ReplayWithoutKernels),
            ReplayStatus::Short => Some(FindingKind::ShortReplay),
            ReplayStatus::Damaged => Some(FindingKind::DamagedReplay),
            _ if self.deferred => Some(FindingKind::DeferredKernelBurst),
            _ if self.implausible => Some(FindingKind::ImplausibleDurations),
            ReplayStatus::Unverified => Some(FindingKind::UnverifiedReplay),
            ReplayStatus::Complete if self.order_mismatch => Some(FindingKind::ReplayOrderMismatch),
            ReplayStatus::Complete => None,
        }
    }
}
