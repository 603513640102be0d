//! The statistics stepscope decides with, shared by `diff` (a stage's time per step) and
//! `grade` (a change's benchmark phases), so neither depends on the other's crate for them.
//!
//! - [`noise`]: the relative shift between two sets of measurements with a distribution-free
//!   interval (Hodges–Lehmann on the log scale, the Mann–Whitney interval).
//! - [`rates`]: whether one side fails more often than the other beyond chance (Fisher's
//!   exact test) and an exact interval for one side's failure rate (Clopper–Pearson).
//! - [`location`]: distribution-free bounds on the median of one set (order statistics), for
//!   judging a value against a fixed limit.
//!
//! ```
//! use stepscope_stats::noise::{relative_change, Direction};
//! let base = [100.0, 101.0, 99.0, 100.5, 98.5, 100.2];
//! let new = [120.0, 121.0, 119.5, 120.2, 118.0, 122.0];
//! let change = relative_change(&base, &new, 0.95).unwrap();
//! assert_eq!(change.direction(0.02), Direction::Higher);
//! ```
#![warn(missing_docs)]

pub mod location;
pub mod noise;
pub mod rates;
