//! Time as integer nanoseconds, never bare floats.

use std::fmt;
use std::ops::{Add, Sub};

/// A point in time, in nanoseconds since the trace's own epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

/// A span of time in nanoseconds. May be negative only as the result of a subtraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(i64);

impl Timestamp {
    /// The earliest representable time.
    pub const MIN: Timestamp = Timestamp(i64::MIN);
    /// The latest representable time.
    pub const MAX: Timestamp = Timestamp(i64::MAX);

    /// From integer nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        Timestamp(nanos)
    }

    /// From microseconds as Kineto writes them (floats); rounds to the nearest nanosecond.
    pub fn from_micros_f64(micros: f64) -> Self {
        Timestamp(micros_f64_to_nanos(micros))
    }

    /// Integer nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Microseconds as a float, for output in Chrome-trace units.
    pub fn as_micros_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }

    /// Shift by a duration.
    pub const fn offset(self, by: Duration) -> Self {
        Timestamp(self.0.saturating_add(by.0))
    }
}

impl Duration {
    /// Zero length.
    pub const ZERO: Duration = Duration(0);

    /// From integer nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        Duration(nanos)
    }

    /// From microseconds as Kineto writes them (floats); rounds to the nearest nanosecond.
    pub fn from_micros_f64(micros: f64) -> Self {
        Duration(micros_f64_to_nanos(micros))
    }

    /// Integer nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Microseconds as a float.
    pub fn as_micros_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }

    /// Milliseconds as a float.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// The larger of zero and `self`.
    pub fn clamp_non_negative(self) -> Self {
        Duration(self.0.max(0))
    }
}

fn micros_f64_to_nanos(micros: f64) -> i64 {
    // `as` saturates on overflow and maps NaN to 0, which is what a corrupt value deserves.
    (micros * 1e3).round() as i64
}

impl Sub for Timestamp {
    type Output = Duration;
    fn sub(self, rhs: Timestamp) -> Duration {
        Duration(self.0.saturating_sub(rhs.0))
    }
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, rhs: Duration) -> Timestamp {
        self.offset(rhs)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_add(rhs.0))
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_sub(rhs.0))
    }
}

impl std::iter::Sum for Duration {
    fn sum<I: Iterator<Item = Duration>>(iter: I) -> Duration {
        iter.fold(Duration::ZERO, |a, b| a + b)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.abs();
        let sign = if self.0 < 0 { "-" } else { "" };
        if nanos >= 1_000_000_000 {
            write!(f, "{sign}{:.3} s", nanos as f64 / 1e9)
        } else if nanos >= 1_000_000 {
            write!(f, "{sign}{:.3} ms", nanos as f64 / 1e6)
        } else if nanos >= 1_000 {
            write!(f, "{sign}{:.1} µs", nanos as f64 / 1e3)
        } else {
            write!(f, "{sign}{nanos} ns")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_to_nanos() {
        assert_eq!(Timestamp::from_micros_f64(1.0005).as_nanos(), 1001);
        assert_eq!(Duration::from_micros_f64(4.657).as_nanos(), 4657);
        assert_eq!(Duration::from_micros_f64(f64::NAN).as_nanos(), 0);
    }

    #[test]
    fn duration_display_picks_unit() {
        assert_eq!(Duration::from_nanos(12).to_string(), "12 ns");
        assert_eq!(Duration::from_nanos(1_500).to_string(), "1.5 µs");
        assert_eq!(Duration::from_nanos(2_000_000).to_string(), "2.000 ms");
    }
}
