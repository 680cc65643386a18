//! Durations for the table's TIME column, in the units of kubectl's AGE and LAST SEEN columns.
//!
//! kubectl prints those columns with `duration.HumanDuration` from
//! `k8s.io/apimachinery/pkg/util/duration` (its `translateTimestampSince`), which rounds:
//! `90s`, `10m`, `5h`, `100d`. A simulation's times are exact and a person compares them
//! with the scenario's `at` values, so this keeps HumanDuration's units (`d`, `h`, `m`, `s`)
//! without its rounding, and writes every unit below the largest one, as Go's
//! `time.Duration.String` does (`1m30s`, `2h0m0s`), with days in front (`100d0h6m5s`). Times
//! under a second are written as Go writes them (`500ms`), and fractions of a second as
//! decimals (`1m0.5s`). There are no years: a day is exact, a year is not.

use kubeplane_core::duration::format_duration_days;
use kubeplane_core::time::SimDuration;

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// `secs` (seconds since t=0, as in the records' `time`) as an exact age.
pub fn format_age_secs(secs: f64) -> String {
    if !secs.is_finite() {
        return secs.to_string();
    }
    let nanos = (secs * NANOS_PER_SEC as f64).round();
    let sign = if nanos < 0.0 { "-" } else { "" };
    format!("{sign}{}", format_age_nanos(nanos.abs() as u64))
}

/// A non-negative number of nanoseconds as an exact age.
pub fn format_age_nanos(nanos: u64) -> String {
    format_duration_days(SimDuration(i64::try_from(nanos).unwrap_or(i64::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_exact_in_kubectls_units() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0s"),
            (1.0, "1s"),
            (59.0, "59s"),
            // HumanDuration would print 90s, 10m, 2h, 5h and 100d for these.
            (90.0, "1m30s"),
            (600.0, "10m0s"),
            (7200.0, "2h0m0s"),
            (5.0 * 3600.0 + 61.0, "5h1m1s"),
            (86_400.0, "1d0h0m0s"),
            (8_640_365.0, "100d0h6m5s"),
            (400.0 * 86_400.0, "400d0h0m0s"),
            (0.5, "500ms"),
            (0.000_25, "250\u{b5}s"),
            (60.5, "1m0.5s"),
            (1.25, "1.25s"),
            (-30.0, "-30s"),
        ];
        for (secs, want) in cases {
            assert_eq!(format_age_secs(*secs), *want, "{secs} s");
        }
    }

    #[test]
    fn a_time_read_back_from_its_seconds_keeps_its_nanoseconds() {
        // 1 ns after a day: f64 seconds hold it to the nanosecond.
        assert_eq!(format_age_secs(86_400.000_000_001), "1d0h0m0.000000001s");
    }
}
