//! The stepscope event model: what every importer writes and every analysis pass reads.
//!
//! Time is integer nanoseconds ([`Timestamp`], [`Duration`]); entities have typed ids;
//! names are interned once; events are stored column-wise, one `Vec` per field, so a
//! pass touches only the columns it needs. Importers write through a [`TraceBuilder`].
//!
//! ```
//! use stepscope_model::*;
//!
//! let mut builder = TraceBuilder::new();
//! let name = builder.intern("Cijk_Ailk_Bljk_HHS_BH");
//! let process = builder.process_number(2);
//! builder.add_gpu_event(GpuEventRecord {
//!     kind: GpuEventKind::Kernel,
//!     name,
//!     process,
//!     device: 0,
//!     stream: StreamId(7),
//!     start: Timestamp::from_micros_f64(10.0),
//!     duration: Duration::from_micros_f64(2.5),
//!     correlation: CorrelationId(42),
//!     graph_id: None,
//! });
//! let trace = builder.finish();
//! assert_eq!(trace.gpu.len(), 1);
//! assert_eq!(trace.gpu.duration[0].as_nanos(), 2_500);
//! ```
#![warn(missing_docs)]

mod damage;
mod hint;
mod ids;
mod metadata;
mod names;
mod op_args;
pub mod patterns;
mod runtime_kind;
mod stats;
pub mod summary;
pub mod switches;
mod tables;
pub mod text;
mod time;
mod trace;

pub use damage::{DamageKind, DamagedEvent, DamagedEvents, DamagedTable, span_from_nanos};
pub use hint::{Hint, Hinted, less_hint};
pub use ids::{CorrelationId, NameId, ProcessId, StreamId, ThreadId};
pub use metadata::{DeviceProperties, HipVersion, Platform, TraceMetadata};
pub use names::Interner;
pub use op_args::{OpArgs, OpArgsId, OpArgsTable};
pub use runtime_kind::RuntimeCallKind;
pub use stats::{ImportStats, Severity, StatCounter};
pub use tables::{
    AnnotationRecord, Annotations, FlowPhase, Flows, GpuEventKind, GpuEventRecord, GpuEvents,
    RuntimeCallRecord, RuntimeCalls,
};
pub use time::{Duration, Timestamp};
pub use trace::{EventCounts, ProcessKey, Trace, TraceBuilder};
