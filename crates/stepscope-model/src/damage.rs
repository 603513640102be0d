//! Events an importer refused for bad data, kept by what they would have been and by their
//! correlation id, so analysis can tell a replay that lost events to damage from one whose
//! kernels the profiler never recorded (damage is bad data, not a runtime symptom, and gets
//! no runtime switch).

use crate::{CorrelationId, Duration, NameId, Timestamp};

/// Why an event was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DamageKind {
    /// `dur` below zero (an end before its start).
    NegativeDuration,
    /// `ts` or `dur` missing, `null`, not a number, or not finite (`"NaN"`, `"inf"`).
    InvalidTime,
    /// `ts` (or `ts + dur`) orders of magnitude outside the span the rest of the trace
    /// covers, e.g. `0` among epoch timestamps, or a clock off by a day; or a time no clock
    /// writes in any trace (past the year 2100, a duration longer than 30 days, more
    /// nanoseconds than an `i64` holds).
    AbsurdTime,
    /// A `ph` that does not describe a complete event (`X`) for a category that must be one.
    UnknownPhase,
    /// A complete event with a launch's correlation id and a duration, in a category the
    /// reader does not know: GPU work the trace holds but stepscope could not read, so the
    /// replay that launched it cannot be vouched complete.
    UnknownCategory,
    /// A name or kind given as an id into the file's string table that holds no such entry
    /// (a damaged or cut string table).
    DanglingReference,
}

impl DamageKind {
    /// Every kind, in report order.
    pub const ALL: [DamageKind; 6] = [
        DamageKind::NegativeDuration,
        DamageKind::InvalidTime,
        DamageKind::AbsurdTime,
        DamageKind::UnknownPhase,
        DamageKind::UnknownCategory,
        DamageKind::DanglingReference,
    ];

    /// A short stable name for reports (also the import counter's name).
    pub fn as_str(self) -> &'static str {
        match self {
            DamageKind::NegativeDuration => "negative_duration",
            DamageKind::InvalidTime => "invalid_time",
            DamageKind::AbsurdTime => "absurd_time",
            DamageKind::UnknownPhase => "unknown_phase",
            DamageKind::UnknownCategory => "unknown_category",
            DamageKind::DanglingReference => "dangling_reference",
        }
    }

    /// One sentence on what was refused.
    pub fn description(self) -> &'static str {
        match self {
            DamageKind::NegativeDuration => "Events with a negative `dur`; refused",
            DamageKind::InvalidTime => {
                "Events whose `ts` or `dur` is missing, null, not a number or not finite; refused"
            }
            DamageKind::AbsurdTime => {
                "Events whose time lies orders of magnitude outside the span of the rest of the trace, or where no clock writes one (past the year 2100, longer than 30 days); refused, not clamped"
            }
            DamageKind::UnknownPhase => {
                "GPU or runtime events whose `ph` is not `X` (a complete event); refused"
            }
            DamageKind::UnknownCategory => {
                "Complete events with a correlation id and a duration in a category stepscope does not know (named in the unknown categories); not read"
            }
            DamageKind::DanglingReference => {
                "Events whose name or kind id points at no entry of the file's string table; refused"
            }
        }
    }
}

/// The one rule every reader applies to an event's start and end, in nanoseconds of the
/// profiler's clock: a start before zero is no time any clock writes (`InvalidTime`: a
/// wrapped or uninitialised counter), an end before the start is `NegativeDuration`. A
/// reader refuses the event with that kind (and its correlation id), never clamps it.
pub fn span_from_nanos(begin: i64, end: i64) -> Result<(Timestamp, Duration), DamageKind> {
    if begin < 0 {
        return Err(DamageKind::InvalidTime);
    }
    if end < begin {
        return Err(DamageKind::NegativeDuration);
    }
    Ok((
        Timestamp::from_nanos(begin),
        Duration::from_nanos(end - begin),
    ))
}

/// What a refused event would have been.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DamagedTable {
    /// A kernel, memcpy or memset.
    Gpu,
    /// A host runtime/driver call.
    Runtime,
    /// A host or device annotation.
    Annotation,
}

/// One refused event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamagedEvent {
    /// Why it was refused.
    pub kind: DamageKind,
    /// What it would have been.
    pub table: DamagedTable,
    /// Its correlation id, where it carried one.
    pub correlation: CorrelationId,
    /// Its name, where it had one.
    pub name: Option<NameId>,
}

/// Every refused event of a trace, in the order they were refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DamagedEvents {
    /// The events.
    pub events: Vec<DamagedEvent>,
}

impl DamagedEvents {
    /// Number of refused events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing was refused.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Refused events of one kind.
    pub fn count(&self, kind: DamageKind) -> usize {
        self.events.iter().filter(|e| e.kind == kind).count()
    }
}

#[cfg(test)]
mod span_tests {
    use super::*;

    #[test]
    fn negative_starts_and_reversed_ends_are_refused() {
        assert!(span_from_nanos(0, 5).is_ok());
        assert_eq!(span_from_nanos(-1, 5), Err(DamageKind::InvalidTime));
        assert_eq!(span_from_nanos(-10, -5), Err(DamageKind::InvalidTime));
        assert_eq!(span_from_nanos(10, 5), Err(DamageKind::NegativeDuration));
        let (start, length) = span_from_nanos(100, 350).unwrap();
        assert_eq!(
            (start, length),
            (Timestamp::from_nanos(100), Duration::from_nanos(250))
        );
    }
}
