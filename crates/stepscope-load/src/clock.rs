//! The clock every chunk is timed with, behind a trait so the timing logic can be tested with
//! made-up times.

use std::time::Instant;
use stepscope_model::Timestamp;

/// A monotonic clock: nanoseconds since an origin, never decreasing.
pub trait Clock {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The real clock: `std::time::Instant` (`CLOCK_MONOTONIC` on Linux), read in tens of
/// nanoseconds through the vDSO.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        Self::with_origin(Instant::now())
    }

    /// A clock counting from `origin`; two clocks with one origin give comparable times (the
    /// client-overhead benchmark compares the client's times with the server's send times).
    pub fn with_origin(origin: Instant) -> Self {
        Self { origin }
    }

    /// The origin.
    pub fn origin(&self) -> Instant {
        self.origin
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Timestamp {
        let nanos = self.origin.elapsed().as_nanos();
        Timestamp::from_nanos(i64::try_from(nanos).unwrap_or(i64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_decreases_and_shares_an_origin() {
        let clock = MonotonicClock::new();
        let twin = MonotonicClock::with_origin(clock.origin());
        let first = clock.now();
        let second = twin.now();
        let third = clock.now();
        assert!(first <= second && second <= third);
    }
}
