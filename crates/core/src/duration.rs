//! Durations in scenario files and flags: Go's `time.ParseDuration` syntax (`300ms`, `1h30m`,
//! `1.5s`), which is what Kubernetes configuration uses, plus a bare number of seconds (`30`,
//! `0.5`) because that is what people write for `tolerationSeconds`-like values.
//! Formatting follows Go's `Duration.String()` so output reads like upstream logs (`1m30s`).

use crate::time::{SimDuration, NANOS_PER_SEC};

/// A duration string that is not of an accepted form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {input:?}: {reason}; expected a duration like 30s, 5m, 1h30m or a number of seconds"
)]
pub struct DurationError {
    pub input: String,
    pub reason: &'static str,
}

const NS: i128 = 1;
const US: i128 = 1_000;
const MS: i128 = 1_000_000;
const SEC: i128 = 1_000_000_000;
const MIN: i128 = 60 * SEC;
const HOUR: i128 = 60 * MIN;

fn unit_nanos(unit: &str) -> Option<i128> {
    Some(match unit {
        "ns" => NS,
        // Both the micro sign (U+00B5) and the Greek mu (U+03BC), as Go accepts.
        "us" | "\u{b5}s" | "\u{3bc}s" => US,
        "ms" => MS,
        "s" => SEC,
        "m" => MIN,
        "h" => HOUR,
        _ => return None,
    })
}

/// Parses `[+]?(digits[.digits]unit)+` (units `ns us µs ms s m h`) or a bare non-negative
/// number of seconds. Fractions below a nanosecond are truncated, as Go does. Negative
/// durations are rejected: nothing in a scenario can wait a negative time.
pub fn parse_duration(s: &str) -> Result<SimDuration, DurationError> {
    let err = |reason| DurationError {
        input: s.to_string(),
        reason,
    };
    let body = match s.as_bytes().first() {
        Some(b'-') => return Err(err("negative durations are not allowed")),
        Some(b'+') => &s[1..],
        Some(_) => s,
        None => return Err(err("the duration is empty")),
    };
    if body.is_empty() {
        return Err(err("the duration has no number"));
    }
    let mut rest = body;
    let mut total: i128 = 0;
    let mut first = true;
    while !rest.is_empty() {
        let (int_part, frac_part, after) = split_number(rest);
        if int_part.is_empty() && frac_part.is_none_or(str::is_empty) {
            return Err(err("expected a number"));
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let unit = &after[..unit_len];
        let unit_ns = if unit.is_empty() {
            // Only a whole input without any unit is a number of seconds ("30", "0.5").
            if first && unit_len == after.len() {
                SEC
            } else {
                return Err(err("missing unit"));
            }
        } else {
            unit_nanos(unit).ok_or_else(|| err("unknown unit (use ns, us, ms, s, m or h)"))?
        };
        total = total
            .checked_add(
                component_nanos(int_part, frac_part.unwrap_or(""), unit_ns)
                    .ok_or_else(|| err("the duration is too large"))?,
            )
            .ok_or_else(|| err("the duration is too large"))?;
        if total > i64::MAX as i128 {
            return Err(err("the duration is too large"));
        }
        rest = &after[unit_len..];
        first = false;
    }
    Ok(SimDuration(total as i64))
}

/// Splits leading `digits[.digits]` off `s`: (integer digits, fraction digits if a dot, rest).
fn split_number(s: &str) -> (&str, Option<&str>, &str) {
    let int_len = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (int_part, after_int) = s.split_at(int_len);
    match after_int.strip_prefix('.') {
        Some(frac_and_rest) => {
            let frac_len = frac_and_rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(frac_and_rest.len());
            let (frac, rest) = frac_and_rest.split_at(frac_len);
            (int_part, Some(frac), rest)
        }
        None => (int_part, None, after_int),
    }
}

/// `int.frac` units in nanoseconds, truncated; `None` on overflow.
fn component_nanos(int_part: &str, frac_part: &str, unit_ns: i128) -> Option<i128> {
    let int_digits = int_part.trim_start_matches('0');
    // i64::MAX nanoseconds is 19 digits; anything longer overflows whatever the unit.
    if int_digits.len() > 19 {
        return None;
    }
    let int: i128 = if int_digits.is_empty() {
        0
    } else {
        int_digits.parse().ok()?
    };
    let whole = int.checked_mul(unit_ns)?;
    // 25 fraction digits times an hour in ns stays below i128::MAX; more digits cannot change
    // the truncated nanosecond count by more than rounding noise at 10^-13 ns.
    let frac = &frac_part[..frac_part.len().min(25)];
    let frac_ns = if frac.is_empty() {
        0
    } else {
        let f: i128 = frac.parse().ok()?;
        f * unit_ns / 10i128.pow(frac.len() as u32)
    };
    whole.checked_add(frac_ns)
}

/// Go's `Duration.String()`: `0s`, `300ms`, `1.5µs`, `1m30s`, `1h0m0s`, `-2s`.
pub fn format_duration(d: SimDuration) -> String {
    format_units(d, false)
}

/// Like [`format_duration`], with whole days in front of the hours (`100d0h6m5s`): kubectl's
/// age units without its rounding.
pub fn format_duration_days(d: SimDuration) -> String {
    format_units(d, true)
}

fn format_units(d: SimDuration, days: bool) -> String {
    let neg = d.0 < 0;
    let u = d.0.unsigned_abs();
    let sign = if neg { "-" } else { "" };
    if u == 0 {
        return "0s".to_string();
    }
    const SEC_U: u64 = 1_000_000_000;
    if u < SEC_U {
        let (unit, scale) = if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("\u{b5}s", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", fixed(u, scale));
    }
    let all_hours = u / (3600 * SEC_U);
    let (n_days, hours) = if days {
        (all_hours / 24, all_hours % 24)
    } else {
        (0, all_hours)
    };
    let mins = (u / (60 * SEC_U)) % 60;
    let secs = fixed(u % (60 * SEC_U), SEC_U);
    let mut out = String::from(sign);
    if n_days > 0 {
        out.push_str(&format!("{n_days}d"));
    }
    if n_days > 0 || hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if n_days > 0 || hours > 0 || mins > 0 {
        out.push_str(&format!("{mins}m"));
    }
    out.push_str(&secs);
    out.push('s');
    out
}

/// Upstream's `duration.HumanDuration` (apimachinery `util/duration`), the AGE of `kubectl get`:
/// about two significant figures (`90s`, `2m5s`, `10m`, `3h20m`, `5h`, `2d3h`, `300d`,
/// `2y45d`, `9y`). Two seconds of clock skew are forgiven as `0s`; anything earlier is
/// `<invalid>`. Whole units truncate toward zero, as Go's integer division does.
pub fn human_duration(d: SimDuration) -> String {
    let seconds = d.0 / NANOS_PER_SEC;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return with_remainder(minutes, "m", seconds % 60, "s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return with_remainder(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return with_remainder(hours / 24, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return with_remainder(hours / 24 / 365, "y", (hours / 24) % 365, "d");
    }
    format!("{}y", hours / 24 / 365)
}

/// `3h` when the smaller unit is zero, else `3h20m`.
fn with_remainder(big: i64, big_unit: &str, small: i64, small_unit: &str) -> String {
    if small == 0 {
        format!("{big}{big_unit}")
    } else {
        format!("{big}{big_unit}{small}{small_unit}")
    }
}

/// `v / scale` as a decimal with trailing fractional zeros removed.
fn fixed(v: u64, scale: u64) -> String {
    let whole = v / scale;
    let frac = v % scale;
    if frac == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS_I: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;

    #[test]
    fn durations_parse_like_go_plus_bare_seconds() {
        let cases: &[(&str, &str, i64)] = &[
            ("milliseconds", "300ms", 300 * MS_I),
            ("seconds", "30s", 30 * S),
            ("minutes", "5m", 300 * S),
            ("hours and minutes combine", "1h30m", 5400 * S),
            ("fractional seconds", "1.5s", 1500 * MS_I),
            ("hours", "2h", 7200 * S),
            ("nanoseconds", "7ns", 7),
            ("microseconds with us", "3us", 3000),
            ("microseconds with the micro sign", "3\u{b5}s", 3000),
            ("microseconds with the Greek mu", "3\u{3bc}s", 3000),
            ("a bare integer is seconds", "30", 30 * S),
            ("a bare fraction is seconds", "0.5", 500 * MS_I),
            ("zero is zero", "0", 0),
            ("a leading dot is allowed as in Go", ".5s", 500 * MS_I),
            ("a trailing dot is allowed as in Go", "5.s", 5 * S),
            ("a leading plus is allowed", "+1m", 60 * S),
            ("sub-nanosecond fractions are truncated", "1.0000000009s", S),
            ("fractional hours", "1.5h", 5400 * S),
        ];
        for (case, input, want) in cases {
            let got = parse_duration(input).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(got, SimDuration(*want), "{case}: {input:?}");
        }
    }

    #[test]
    fn malformed_durations_are_rejected_with_the_expected_form() {
        let cases: &[(&str, &str)] = &[
            ("the empty string is rejected", ""),
            ("a negative duration is rejected", "-5s"),
            ("an unknown unit is rejected", "5d"),
            ("a trailing number without unit is rejected", "1h30"),
            ("a lone dot is rejected", ".s"),
            ("a lone sign is rejected", "+"),
            ("a unit without a number is rejected", "s"),
            ("whitespace is rejected", "5 s"),
            (
                "an overflowing duration is rejected",
                "9999999999999999999h",
            ),
            ("a duration beyond i64 nanoseconds is rejected", "2562048h"),
        ];
        for (case, input) in cases {
            let err = parse_duration(input).expect_err(case);
            assert!(
                err.to_string()
                    .contains("expected a duration like 30s, 5m, 1h30m or a number of seconds"),
                "{case}: {err}"
            );
        }
    }

    #[test]
    fn durations_format_like_go() {
        let cases: &[(&str, i64, &str)] = &[
            ("zero prints 0s", 0, "0s"),
            ("sub-second durations use milliseconds", 300 * MS_I, "300ms"),
            ("fractional milliseconds are kept", 1_500_000, "1.5ms"),
            ("microseconds use the micro sign", 1_500, "1.5\u{b5}s"),
            ("nanoseconds", 7, "7ns"),
            ("seconds", 30 * S, "30s"),
            ("minutes and seconds", 90 * S, "1m30s"),
            ("whole hours print all units", 3600 * S, "1h0m0s"),
            ("fractional seconds", 1500 * MS_I, "1.5s"),
            ("negative durations carry a sign", -2 * S, "-2s"),
            (
                "the minimum duration does not overflow",
                i64::MIN,
                "-2562047h47m16.854775808s",
            ),
        ];
        for (case, nanos, want) in cases {
            assert_eq!(format_duration(SimDuration(*nanos)), *want, "{case}");
        }
    }

    #[test]
    fn human_durations_round_like_upstream() {
        // Upstream's TestHumanDuration and TestHumanDurationBoundaries, and more.
        let cases: &[(&str, i64, &str)] = &[
            ("a second of clock skew is now", -S, "0s"),
            (
                "more than a second in the future is invalid",
                -2 * S,
                "<invalid>",
            ),
            ("zero", 0, "0s"),
            ("under two minutes stays in seconds", 119 * S, "119s"),
            ("two minutes", 120 * S, "2m"),
            (
                "minutes keep their seconds below ten minutes",
                125 * S,
                "2m5s",
            ),
            ("just under ten minutes", 599 * S, "9m59s"),
            ("ten minutes drop the seconds", 601 * S, "10m"),
            (
                "just under three hours is in minutes",
                (3 * 3600 - 1) * S,
                "179m",
            ),
            ("three hours", 3 * 3600 * S, "3h"),
            (
                "hours keep their minutes below eight hours",
                (3 * 3600 + 20 * 60) * S,
                "3h20m",
            ),
            (
                "eight hours drop the minutes",
                (8 * 3600 + 59 * 60) * S,
                "8h",
            ),
            (
                "just under two days is in hours",
                (48 * 3600 - 1) * S,
                "47h",
            ),
            ("two days", 48 * 3600 * S, "2d"),
            (
                "days keep their hours below eight days",
                (2 * 86_400 + 3 * 3600) * S,
                "2d3h",
            ),
            ("eight days drop the hours", (8 * 86_400 + 3600) * S, "8d"),
            (
                "just under two years is in days",
                (2 * 365 * 86_400 - 1) * S,
                "729d",
            ),
            ("two years", 2 * 365 * 86_400 * S, "2y"),
            (
                "years keep their days below eight years",
                (2 * 365 + 45) * 86_400 * S,
                "2y45d",
            ),
            (
                "eight years drop the days",
                (8 * 365 + 45) * 86_400 * S,
                "8y",
            ),
            ("fractions of a second truncate", 1_999 * MS_I, "1s"),
            ("a second less a nanosecond ahead is now", -2 * S + 1, "0s"),
            ("seventy minutes", 70 * 60 * S, "70m"),
            ("forty-nine hours", 49 * 3600 * S, "2d1h"),
            ("just under eight days", 8 * 86_400 * S - MS_I, "7d23h"),
            ("a year and two days", 367 * 86_400 * S, "367d"),
            (
                "two years and a day",
                (2 * 365 * 24 + 25) * 3600 * S,
                "2y1d",
            ),
            (
                "just under a full day past two years",
                (2 * 365 + 1) * 86_400 * S - MS_I,
                "2y",
            ),
            (
                "just under eight years",
                8 * 365 * 86_400 * S - MS_I,
                "7y364d",
            ),
            ("nine years", 9 * 365 * 86_400 * S, "9y"),
        ];
        for (case, nanos, want) in cases {
            assert_eq!(human_duration(SimDuration(*nanos)), *want, "{case}");
        }
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn parsing_never_panics(s in "\\PC{0,30}") {
                let _ = parse_duration(&s);
            }

            #[test]
            fn formatting_round_trips_through_parsing(n in 0i64..i64::MAX) {
                let d = SimDuration(n);
                prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
            }
        }
    }
}
