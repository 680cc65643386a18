//! Virtual time. `SimTime` is nanoseconds since the scenario's t=0; the scenario's `startTime`
//! maps it to a wall-clock timestamp for the objects' timestamps.

use std::fmt;
use std::ops::{Add, Sub};

/// An instant on the virtual clock: nanoseconds since t=0 of the scenario.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub i64);

/// A span of virtual time in nanoseconds (may be negative in arithmetic, never in input).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub i64);

pub const NANOS_PER_SEC: i64 = 1_000_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(i64::MAX);

    pub fn from_secs(s: i64) -> Self {
        SimTime(s.saturating_mul(NANOS_PER_SEC))
    }
    pub fn from_millis(ms: i64) -> Self {
        SimTime(ms.saturating_mul(1_000_000))
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }
    /// Whole seconds, rounded down (used for 1-second windows in the queue).
    pub fn floor_to_second(self) -> SimTime {
        SimTime(self.0.div_euclid(NANOS_PER_SEC) * NANOS_PER_SEC)
    }
    pub fn saturating_add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
    /// The wall-clock timestamp of this instant given the scenario's start time.
    pub fn to_timestamp(self, start: jiff::Timestamp) -> jiff::Timestamp {
        start
            .checked_add(jiff::SignedDuration::from_nanos(self.0))
            .unwrap_or(start)
    }
    /// The instant of a wall-clock timestamp (may be negative: before the scenario started).
    pub fn from_timestamp(ts: jiff::Timestamp, start: jiff::Timestamp) -> SimTime {
        let d = ts.as_duration().saturating_sub(start.as_duration());
        SimTime(d.as_nanos().clamp(i64::MIN as i128, i64::MAX as i128) as i64)
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub fn from_secs(s: i64) -> Self {
        SimDuration(s.saturating_mul(NANOS_PER_SEC))
    }
    pub fn from_millis(ms: i64) -> Self {
        SimDuration(ms.saturating_mul(1_000_000))
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }
    pub fn whole_secs(self) -> i64 {
        self.0.div_euclid(NANOS_PER_SEC)
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        self.saturating_add(d)
    }
}

impl Sub<SimDuration> for SimTime {
    type Output = SimTime;
    fn sub(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_sub(d.0))
    }
}

impl Sub for SimTime {
    type Output = SimDuration;
    fn sub(self, o: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(o.0))
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(o.0))
    }
}

impl fmt::Display for SimTime {
    /// Seconds since t=0, as the output records print them (`30`, `1.5`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_to_second_rounds_down_within_the_window() {
        assert_eq!(
            SimTime(1_999_999_999).floor_to_second(),
            SimTime::from_secs(1)
        );
        assert_eq!(
            SimTime::from_secs(3).floor_to_second(),
            SimTime::from_secs(3)
        );
    }

    #[test]
    fn timestamps_round_trip_through_the_start_time() {
        let start: jiff::Timestamp = "2025-01-01T00:00:00Z".parse().unwrap();
        let t = SimTime::from_millis(90_500);
        let ts = t.to_timestamp(start);
        assert_eq!(ts.to_string(), "2025-01-01T00:01:30.5Z");
        assert_eq!(SimTime::from_timestamp(ts, start), t);
    }
}
