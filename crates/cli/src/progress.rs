//! The progress line on stderr: how far a run's virtual time has come and how fast. Shown only
//! when stderr is a terminal, only once a run has taken a second of wall time, and never with
//! `--quiet`, so short runs and CI logs stay clean.

use std::io::Write;
use std::time::{Duration, Instant};

use kubeplane_core::SimTime;

use crate::output::age::format_age_nanos;

/// How long a run goes before its progress is shown.
const FIRST_AFTER: Duration = Duration::from_secs(1);
/// How often the line is redrawn.
const EVERY: Duration = Duration::from_millis(250);

pub struct Progress {
    enabled: bool,
    started: Instant,
    last: Option<Instant>,
    width: usize,
}

impl Progress {
    pub fn new(enabled: bool) -> Self {
        Progress {
            enabled,
            started: Instant::now(),
            last: None,
            width: 0,
        }
    }

    /// Called by the simulation now and then with the virtual time reached and its end.
    pub fn update(&mut self, now: SimTime, end: Option<SimTime>) {
        if !self.enabled {
            return;
        }
        let wall = self.started.elapsed();
        if wall < FIRST_AFTER || self.last.is_some_and(|l| l.elapsed() < EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        let line = progress_line(now, end, wall);
        let pad = self.width.saturating_sub(line.len());
        self.width = line.len();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}{}", " ".repeat(pad));
        let _ = err.flush();
    }

    /// Clears the line, if one was drawn.
    pub fn clear(&mut self) {
        if self.width > 0 {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{}\r", " ".repeat(self.width));
            let _ = err.flush();
            self.width = 0;
        }
    }
}

/// `virtual time 2h0m0s of 24h0m0s (8%), 3600x real time, 2.0s wall`.
fn progress_line(now: SimTime, end: Option<SimTime>, wall: Duration) -> String {
    let now_ns = (now - SimTime::ZERO).0.max(0) as u64;
    let mut line = format!("virtual time {}", format_age_nanos(now_ns));
    if let Some(end) = end {
        let end_ns = (end - SimTime::ZERO).0.max(0) as u64;
        line.push_str(&format!(" of {}", format_age_nanos(end_ns)));
        if let Some(percent) = (now_ns * 100).checked_div(end_ns) {
            line.push_str(&format!(" ({percent}%)"));
        }
    }
    let speed = now_ns as f64 / wall.as_nanos().max(1) as f64;
    line.push_str(&format!(
        ", {speed:.0}x real time, {:.1}s wall",
        wall.as_secs_f64()
    ));
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_where_the_run_is_and_how_fast() {
        let line = progress_line(
            SimTime::from_secs(7200),
            Some(SimTime::from_secs(86_400)),
            Duration::from_secs(2),
        );
        assert_eq!(
            line,
            "virtual time 2h0m0s of 1d0h0m0s (8%), 3600x real time, 2.0s wall"
        );
    }

    #[test]
    fn nothing_is_drawn_when_disabled() {
        let mut p = Progress::new(false);
        p.started -= Duration::from_secs(5);
        p.update(SimTime::from_secs(1), None);
        assert_eq!(p.width, 0);
    }
}
