//! Upstream's scheduling-attempt metrics by profile: `scheduler_schedule_attempts_total` and
//! the `scheduler_scheduling_attempt_duration_seconds` histogram, both labelled `profile` and
//! `result` (`scheduled`, `unschedulable`, `error`), with upstream's buckets
//! (`ExponentialBuckets(0.001, 2, 15)`: 1 ms to 16.384 s).
//!
//! The scheduler counts attempts by result; the live loop attributes each step's new counts to
//! profiles through the events the step recorded (a `Scheduled` event for a bound pod, a
//! `FailedScheduling` one for a failed attempt, from the pod's `schedulerName`), and measures
//! durations on the live clock (wall time, [`crate::clock`]): an attempt that fails at once lasts its scheduling run; a pod
//! that is bound lasts from the run that queued its binding to the binding's end (upstream:
//! scheduling algorithm + binding). A count no event accounts for goes to the first profile.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use kubeplane_core::SimTime;

/// The results upstream labels attempts with, in the scheduler's counter order.
pub const RESULTS: [&str; 3] = ["scheduled", "unschedulable", "error"];

/// Upstream's bucket bounds: 0.001 × 2^i for i in 0..15.
fn bounds() -> [f64; 15] {
    std::array::from_fn(|i| 0.001 * f64::from(1u32 << i))
}

fn secs(now: SimTime, since: SimTime) -> f64 {
    (now.0.saturating_sub(since.0)).max(0) as f64 / 1e9
}

/// One histogram's observations.
#[derive(Debug, Clone, Default)]
struct Histogram {
    /// Per bound, the observations at or below it (cumulative when rendered).
    buckets: [u64; 15],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        if let Some(i) = bounds().iter().position(|b| secs <= *b) {
            self.buckets[i] += 1;
        }
        self.count += 1;
        self.sum += secs;
    }
}

/// What one scheduler step (a scheduling run, or a finished API call) did: its counter deltas
/// by result and the pods of the attempts its events name.
#[derive(Debug, Default)]
pub struct Step {
    /// When the step began.
    pub started: Option<SimTime>,
    /// New counts by result, in [`RESULTS`] order.
    pub deltas: [u64; 3],
    /// `(namespace/name, profile, scheduled)` of the pods whose Scheduled (`true`) or
    /// FailedScheduling (`false`) event the step recorded.
    pub pods: Vec<(String, String, bool)>,
}

/// The attempts by profile and result.
#[derive(Debug)]
pub struct AttemptMetrics {
    profiles: Vec<String>,
    counts: BTreeMap<(String, &'static str), u64>,
    durations: BTreeMap<(String, &'static str), Histogram>,
    /// When the run that queued a pod's binding began.
    binding_since: HashMap<String, SimTime>,
}

impl AttemptMetrics {
    pub fn new(profiles: Vec<String>) -> AttemptMetrics {
        AttemptMetrics {
            profiles,
            counts: BTreeMap::new(),
            durations: BTreeMap::new(),
            binding_since: HashMap::new(),
        }
    }

    /// A binding was queued for `pod` by the run that began at `started`.
    pub fn binding_queued(&mut self, pod: String, started: SimTime) {
        self.binding_since.insert(pod, started);
    }

    /// Attributes a step's new counts to profiles and observes their durations at `now`.
    pub fn record(&mut self, step: Step, now: SimTime) {
        let step_start = step.started.unwrap_or(now);
        let mut used = vec![false; step.pods.len()];
        for (r, result) in RESULTS.iter().enumerate() {
            let mut left = step.deltas[r];
            for (i, (pod, profile, scheduled)) in step.pods.iter().enumerate() {
                if left == 0 {
                    break;
                }
                if used[i] || *scheduled != (r == 0) {
                    continue;
                }
                used[i] = true;
                left -= 1;
                // A finished call (no run) ends the attempt of the run that queued it; an
                // attempt that fails in a run lasts that run.
                let queued = self.binding_since.remove(pod);
                let since = match step.started {
                    None => queued.unwrap_or(now),
                    Some(_) => step_start,
                };
                self.add(profile.clone(), result, secs(now, since));
            }
            let first = self.profiles.first().cloned().unwrap_or_default();
            for _ in 0..left {
                self.add(first.clone(), result, secs(now, step_start));
            }
        }
    }

    fn add(&mut self, profile: String, result: &'static str, secs: f64) {
        *self.counts.entry((profile.clone(), result)).or_default() += 1;
        self.durations
            .entry((profile, result))
            .or_default()
            .observe(secs);
    }

    /// Forgets the binding start of a pod that went away.
    pub fn forget(&mut self, pod: &str) {
        self.binding_since.remove(pod);
    }

    /// The counter family, every profile and result (zero until counted).
    pub fn render_counts(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP scheduler_schedule_attempts_total Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.");
        let _ = writeln!(out, "# TYPE scheduler_schedule_attempts_total counter");
        for (profile, result) in self.series() {
            let n = self.counts.get(&(profile.clone(), result)).copied();
            let _ = writeln!(
                out,
                "scheduler_schedule_attempts_total{{profile=\"{profile}\",result=\"{result}\"}} {}",
                n.unwrap_or(0)
            );
        }
    }

    /// The histogram family, for the series observed so far.
    pub fn render_durations(&self, out: &mut String) {
        let name = "scheduler_scheduling_attempt_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Scheduling attempt latency in seconds (scheduling algorithm + binding)"
        );
        let _ = writeln!(out, "# TYPE {name} histogram");
        for ((profile, result), h) in &self.durations {
            let labels = format!("profile=\"{profile}\",result=\"{result}\"");
            let mut cumulative = 0;
            for (b, n) in bounds().iter().zip(h.buckets) {
                cumulative += n;
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{b}\"}} {cumulative}");
            }
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum);
            let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
        }
    }

    /// Every profile's series and those of profiles counted without being configured.
    fn series(&self) -> Vec<(String, &'static str)> {
        let mut profiles = self.profiles.clone();
        for (p, _) in self.counts.keys() {
            if !profiles.contains(p) {
                profiles.push(p.clone());
            }
        }
        profiles.sort();
        let mut out = Vec::new();
        for p in profiles {
            for r in RESULTS {
                out.push((p.clone(), r));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buckets_are_upstreams_from_one_millisecond_doubling_fifteen_times() {
        let got: Vec<String> = bounds().iter().map(|b| b.to_string()).collect();
        assert_eq!(
            got,
            [
                "0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256",
                "0.512", "1.024", "2.048", "4.096", "8.192", "16.384"
            ]
        );
    }

    #[test]
    fn a_bound_pod_counts_for_its_profile_from_the_run_that_queued_its_binding() {
        let mut m = AttemptMetrics::new(vec!["a".into(), "b".into()]);
        let t0 = SimTime(1_000_000_000);
        m.binding_queued("default/p".into(), t0);
        let step = Step {
            started: None,
            deltas: [1, 0, 0],
            pods: vec![("default/p".into(), "b".into(), true)],
        };
        m.record(step, SimTime(t0.0 + 30_000_000));
        let mut out = String::new();
        m.render_counts(&mut out);
        assert!(out
            .contains("scheduler_schedule_attempts_total{profile=\"b\",result=\"scheduled\"} 1\n"));
        assert!(out
            .contains("scheduler_schedule_attempts_total{profile=\"a\",result=\"scheduled\"} 0\n"));
        let mut h = String::new();
        m.render_durations(&mut h);
        // 30 ms: above 0.016, at or below 0.032.
        let series = "scheduler_scheduling_attempt_duration_seconds_bucket{profile=\"b\",result=\"scheduled\"";
        assert!(h.contains(&format!("{series},le=\"0.016\"}} 0\n")), "{h}");
        assert!(h.contains(&format!("{series},le=\"0.032\"}} 1\n")), "{h}");
        assert!(h.contains(&format!("{series},le=\"+Inf\"}} 1\n")), "{h}");
        assert_eq!(h.matches("# TYPE ").count(), 1);
    }

    #[test]
    fn a_failed_attempt_is_unschedulable_or_an_error_as_the_counters_say() {
        let mut m = AttemptMetrics::new(vec!["a".into()]);
        let t0 = SimTime(1_000_000_000);
        let failed = |deltas| Step {
            started: Some(t0),
            deltas,
            pods: vec![("default/p".into(), "a".into(), false)],
        };
        m.record(failed([0, 1, 0]), t0);
        m.record(failed([0, 0, 1]), t0);
        // A count no event names goes to the first profile.
        m.record(
            Step {
                started: Some(t0),
                deltas: [0, 1, 0],
                pods: vec![],
            },
            t0,
        );
        let mut out = String::new();
        m.render_counts(&mut out);
        assert!(
            out.contains("{profile=\"a\",result=\"unschedulable\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("{profile=\"a\",result=\"error\"} 1\n"),
            "{out}"
        );
    }
}
