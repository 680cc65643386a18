//! The live runtime's clock: wall time. The scheduler sees [`SimTime`] (nanoseconds since the
//! runtime started) and object timestamps through [`kubeplane_api::Clock`]; this is the one
//! place the live runtime's scheduling loop reads the wall clock.

use std::time::{Duration, Instant};

use jiff::Timestamp;
use kubeplane_api::Clock;
use kubeplane_core::SimTime;

/// Wall time since the runtime started.
#[derive(Clone, Debug)]
pub struct LiveClock {
    origin: Timestamp,
    started: Instant,
}

impl LiveClock {
    /// Instant zero is now.
    pub fn start() -> LiveClock {
        LiveClock {
            origin: Timestamp::now(),
            started: Instant::now(),
        }
    }

    /// The components' clock (timestamps of instants).
    pub fn api_clock(&self) -> Clock {
        Clock::new(self.origin)
    }

    /// The current instant.
    pub fn now(&self) -> SimTime {
        SimTime(self.started.elapsed().as_nanos().min(i64::MAX as u128) as i64)
    }

    /// The current time as a timestamp.
    pub fn timestamp(&self) -> Timestamp {
        self.now().to_timestamp(self.origin)
    }

    /// How long until `t` (zero if it has passed).
    pub fn until(&self, t: SimTime) -> Duration {
        Duration::from_nanos(t.0.saturating_sub(self.now().0).max(0) as u64)
    }
}
