//! The server's cluster clock: the wall clock, or a virtual one that runs `speed` times faster
//! than wall time. Either way the components see [`SimTime`] (nanoseconds since the server's
//! instant zero) and object timestamps through [`kubeplane_api::Clock`]; this is the one place
//! that reads the wall clock for them.

use std::time::{Duration, Instant};

use jiff::Timestamp;
use kubeplane_api::Clock;
use kubeplane_core::SimTime;

/// Which clock the cluster runs on (`--clock`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum ClockMode {
    Wall,
    /// Cluster time runs `speed` times faster than wall time.
    Virtual {
        speed: f64,
    },
}

/// The running clock.
#[derive(Clone, Debug)]
pub struct ServerClock {
    origin: Timestamp,
    started: Instant,
    speed: f64,
}

impl ServerClock {
    /// A clock whose instant zero is `origin` (the cluster time at start) and now.
    pub fn start(origin: Timestamp, mode: ClockMode) -> ServerClock {
        let speed = match mode {
            ClockMode::Wall => 1.0,
            ClockMode::Virtual { speed } => speed,
        };
        ServerClock {
            origin,
            started: Instant::now(),
            speed,
        }
    }

    /// The components' clock (timestamps of virtual instants).
    pub fn api_clock(&self) -> Clock {
        Clock::new(self.origin)
    }

    /// The cluster's current instant.
    pub fn now(&self) -> SimTime {
        let nanos = self.started.elapsed().as_nanos() as f64 * self.speed;
        SimTime(nanos.min(i64::MAX as f64) as i64)
    }

    /// The cluster's current time as a timestamp.
    pub fn timestamp(&self) -> Timestamp {
        self.now().to_timestamp(self.origin)
    }

    /// How long to wait on the wall clock until the cluster reaches `t` (zero if it has).
    pub fn wall_until(&self, t: SimTime) -> Duration {
        let ahead = t.0.saturating_sub(self.now().0).max(0) as f64 / self.speed;
        Duration::from_nanos(ahead.min(u64::MAX as f64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_clock_runs_speed_times_faster_than_the_wall() {
        let c = ServerClock::start(Timestamp::UNIX_EPOCH, ClockMode::Virtual { speed: 1000.0 });
        std::thread::sleep(Duration::from_millis(20));
        let now = c.now();
        assert!(now.as_secs_f64() >= 20.0, "{now:?}");
        let wait = c.wall_until(now + kubeplane_core::time::SimDuration::from_secs(10));
        assert!(wait <= Duration::from_millis(10), "{wait:?}");
    }
}
