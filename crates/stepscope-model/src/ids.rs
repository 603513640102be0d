//! Typed ids. Each is made by the [`crate::TraceBuilder`] (or parsed from the trace for
//! foreign values such as correlation ids), so one kind of id cannot stand for another.

macro_rules! index_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u32);

        impl $name {
            /// The id as an index into its table.
            pub const fn index(self) -> usize {
                self.0 as usize
            }

            /// Rebuild an id from an index; for code that keeps ids in its own arrays.
            pub fn from_index(index: usize) -> Self {
                Self(u32::try_from(index).expect("more than u32::MAX entries"))
            }
        }
    };
}

index_id!(
    /// An interned string (event name, category, thread label).
    NameId
);
index_id!(
    /// A process (or a profiler pseudo-process such as a GPU lane) within one trace.
    ProcessId
);

/// A correlation id as the profiler wrote it. Unique only within one process of one trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct CorrelationId(pub u64);

impl CorrelationId {
    /// Marks an event that carried no correlation.
    pub const NONE: CorrelationId = CorrelationId(0);

    /// Whether the event carried a correlation.
    pub const fn is_some(self) -> bool {
        self.0 != 0
    }
}

/// A GPU stream (queue) number as the profiler wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId(pub u32);

/// A thread as the profiler named it: a number, or an interned label (`"stream 7"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadId {
    /// A numeric thread id.
    Number(i64),
    /// A label; the legacy schema writes GPU lanes as `"stream 7"`.
    Label(NameId),
}
