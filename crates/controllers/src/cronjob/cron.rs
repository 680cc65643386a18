//! Cron schedules as upstream parses them (`github.com/robfig/cron/v3`, `ParseStandard`): five
//! fields (minute, hour, day of month, month, day of week) of lists, ranges, steps, `*` and `?`
//! and month and weekday names; the descriptors `@yearly`, `@annually`, `@monthly`, `@weekly`,
//! `@daily`, `@midnight`, `@hourly` and `@every <duration>`; and the next activation after an
//! instant in a time zone. A schedule of the standard parser has no seconds field: activations
//! fall on whole minutes.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::{SignedDuration, Timestamp, ToSpan};

/// The bundled IANA time zone database (the same on every machine).
pub fn tz_database() -> &'static TimeZoneDatabase {
    static DB: std::sync::OnceLock<TimeZoneDatabase> = std::sync::OnceLock::new();
    DB.get_or_init(TimeZoneDatabase::bundled)
}

/// A time zone by IANA name (`""` and `UTC` are UTC, `Local` is refused: a simulation has no
/// local zone).
pub fn time_zone(name: &str) -> Result<TimeZone, String> {
    match name {
        "" | "UTC" => Ok(TimeZone::UTC),
        _ => tz_database()
            .get(name)
            .map_err(|_| format!("unknown time zone {name}")),
    }
}

/// A parsed schedule.
#[derive(Clone, Debug)]
pub enum Schedule {
    /// Bit sets of the accepted minutes, hours, days of the month, months and weekdays, with
    /// whether the day fields were `*` (or `?`).
    Spec {
        minute: u64,
        hour: u64,
        dom: u64,
        month: u64,
        dow: u64,
        dom_star: bool,
        dow_star: bool,
        tz: TimeZone,
    },
    /// `@every`: a fixed delay, in whole seconds (at least one).
    Every(i64),
}

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// Parses a schedule evaluated in `tz` (robfig's errors, as upstream's events quote them).
pub fn parse_standard(spec: &str, tz: TimeZone) -> Result<Schedule, String> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    if let Some(d) = spec.strip_prefix('@') {
        return descriptor(d, spec, tz);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: {spec}",
            fields.len()
        ));
    }
    let (minute, _) = field(fields[0], &MINUTES)?;
    let (hour, _) = field(fields[1], &HOURS)?;
    let (dom, dom_star) = field(fields[2], &DOM)?;
    let (month, _) = field(fields[3], &MONTHS)?;
    let (dow, dow_star) = field(fields[4], &DOW)?;
    Ok(Schedule::Spec {
        minute,
        hour,
        dom,
        month,
        dow,
        dom_star,
        dow_star,
        tz,
    })
}

fn descriptor(d: &str, spec: &str, tz: TimeZone) -> Result<Schedule, String> {
    let fixed = match d {
        "yearly" | "annually" => "0 0 1 1 *",
        "monthly" => "0 0 1 * *",
        "weekly" => "0 0 * * 0",
        "daily" | "midnight" => "0 0 * * *",
        "hourly" => "0 * * * *",
        _ => {
            let Some(rest) = d.strip_prefix("every ") else {
                return Err(format!("unrecognized descriptor: {spec}"));
            };
            let dur = kubeplane_core::duration::parse_duration(rest.trim())
                .map_err(|e| format!("failed to parse duration {spec}: {e}"))?;
            return Ok(Schedule::Every((dur.0 / 1_000_000_000).max(1)));
        }
    };
    parse_standard(fixed, tz)
}

/// One field: a comma-separated list of ranges. Returns its bits and whether it was `*`/`?`.
fn field(text: &str, b: &Bounds) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for part in text.split(',') {
        let (r, s) = range(part, b)?;
        bits |= r;
        star |= s;
    }
    Ok((bits, star))
}

fn range(expr: &str, b: &Bounds) -> Result<(u64, bool), String> {
    let (span, step) = match expr.split_once('/') {
        Some((span, step)) => (span, Some(step)),
        None => (expr, None),
    };
    let (mut start, mut end, mut star) = if span == "*" || span == "?" {
        (b.min, b.max, true)
    } else {
        match span.split_once('-') {
            Some((lo, hi)) => (value(lo, b)?, value(hi, b)?, false),
            None => {
                let v = value(span, b)?;
                (v, v, false)
            }
        }
    };
    let step = match step {
        None => 1,
        Some(s) => {
            let n: u32 = s
                .parse()
                .map_err(|_| format!("failed to parse int from {s}: invalid syntax"))?;
            // "N/step" means "N-max/step".
            if !span.contains('-') && span != "*" && span != "?" {
                end = b.max;
            }
            if n > 1 {
                star = false;
            }
            n
        }
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    let mut bits = 0u64;
    while start <= end {
        bits |= 1 << start;
        start += step;
    }
    Ok((bits, star))
}

fn value(s: &str, b: &Bounds) -> Result<u32, String> {
    let lower = s.to_ascii_lowercase();
    if let Some(i) = b.names.iter().position(|n| *n == lower) {
        return Ok(i as u32 + b.min);
    }
    s.parse::<u32>()
        .map_err(|_| format!("failed to parse int from {s}: invalid syntax"))
}

fn has(bits: u64, v: i8) -> bool {
    bits & (1 << v) != 0
}

impl Schedule {
    /// The first activation strictly after `t`; `None` when there is none within five years
    /// (robfig's zero time).
    pub fn next(&self, t: Timestamp) -> Option<Timestamp> {
        match self {
            Schedule::Every(secs) => {
                let nanos = i64::from(t.subsec_nanosecond());
                Some(t + SignedDuration::from_secs(*secs) - SignedDuration::from_nanos(nanos))
            }
            Schedule::Spec { tz, .. } => self.next_spec(t, tz),
        }
    }

    fn day_matches(&self, d: Date) -> bool {
        let Schedule::Spec {
            dom,
            dow,
            dom_star,
            dow_star,
            ..
        } = self
        else {
            return false;
        };
        let dom_ok = has(*dom, d.day());
        let dow_ok = has(*dow, d.weekday().to_sunday_zero_offset());
        if *dom_star || *dow_star {
            dom_ok && dow_ok
        } else {
            dom_ok || dow_ok
        }
    }

    fn next_spec(&self, t: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let Schedule::Spec {
            minute,
            hour,
            month,
            ..
        } = self
        else {
            return None;
        };
        let local = tz.to_datetime(t);
        let mut c = local
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        let limit = local.year() + 5;
        while c.year() <= limit {
            if !has(*month, c.month()) {
                let first = Date::new(c.year(), c.month(), 1).ok()?;
                c = first
                    .checked_add(1.month())
                    .ok()?
                    .to_datetime(Time::midnight());
                continue;
            }
            if !self.day_matches(c.date()) {
                c = c
                    .date()
                    .checked_add(1.day())
                    .ok()?
                    .to_datetime(Time::midnight());
                continue;
            }
            if !has(*hour, c.hour()) {
                c = DateTime::from_parts(c.date(), Time::new(c.hour(), 0, 0, 0).ok()?)
                    .checked_add(1.hour())
                    .ok()?;
                continue;
            }
            if !has(*minute, c.minute()) {
                c = c.checked_add(1.minute()).ok()?;
                continue;
            }
            let ts = tz.to_ambiguous_timestamp(c).compatible().ok()?;
            // A wall time in a gap lands after it; skip activations at or before `t`.
            if ts > t {
                return Some(ts);
            }
            c = c.checked_add(1.minute()).ok()?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn next(spec: &str, tz: &str, from: &str) -> Option<String> {
        let s = parse_standard(spec, time_zone(tz).unwrap()).unwrap();
        s.next(ts(from)).map(|t| t.to_string())
    }

    #[test]
    fn next_activations_follow_robfig_cron() {
        let cases: &[(&str, &str, &str, &str, Option<&str>)] = &[
            (
                "Every minute",
                "* * * * *",
                "",
                "2025-01-01T00:00:00Z",
                Some("2025-01-01T00:01:00Z"),
            ),
            (
                "Every minute from within a minute",
                "* * * * *",
                "",
                "2025-01-01T00:00:30Z",
                Some("2025-01-01T00:01:00Z"),
            ),
            (
                "Every five minutes",
                "*/5 * * * *",
                "",
                "2025-01-01T00:07:00Z",
                Some("2025-01-01T00:10:00Z"),
            ),
            (
                "Hourly descriptor",
                "@hourly",
                "",
                "2025-01-01T00:00:00Z",
                Some("2025-01-01T01:00:00Z"),
            ),
            (
                "Daily at 09:30",
                "30 9 * * *",
                "",
                "2025-01-01T10:00:00Z",
                Some("2025-01-02T09:30:00Z"),
            ),
            (
                "Month names",
                "0 0 1 mar *",
                "",
                "2025-01-15T00:00:00Z",
                Some("2025-03-01T00:00:00Z"),
            ),
            (
                "Weekday names (2025-01-01 is a Wednesday)",
                "0 12 * * fri",
                "",
                "2025-01-01T00:00:00Z",
                Some("2025-01-03T12:00:00Z"),
            ),
            (
                "Day of month or weekday when both are restricted",
                "0 0 15 * mon",
                "",
                "2025-01-01T00:00:00Z",
                Some("2025-01-06T00:00:00Z"),
            ),
            (
                "A range with a step",
                "0 8-18/4 * * *",
                "",
                "2025-01-01T09:00:00Z",
                Some("2025-01-01T12:00:00Z"),
            ),
            (
                "N/step runs to the maximum",
                "50/5 * * * *",
                "",
                "2025-01-01T00:56:00Z",
                Some("2025-01-01T01:50:00Z"),
            ),
            (
                "In a time zone",
                "0 9 * * *",
                "Europe/Berlin",
                "2025-01-01T00:00:00Z",
                Some("2025-01-01T08:00:00Z"),
            ),
            (
                "Across the spring DST gap",
                "30 2 * * *",
                "Europe/Berlin",
                "2025-03-30T00:00:00Z",
                Some("2025-03-30T01:30:00Z"),
            ),
            (
                "February 31st never comes",
                "0 0 31 2 *",
                "",
                "2025-01-01T00:00:00Z",
                None,
            ),
            (
                "Every 90 seconds",
                "@every 90s",
                "",
                "2025-01-01T00:00:00.5Z",
                Some("2025-01-01T00:01:30Z"),
            ),
        ];
        for (name, spec, tz, from, want) in cases {
            assert_eq!(next(spec, tz, from).as_deref(), *want, "{name}");
        }
    }

    #[test]
    fn invalid_schedules_are_rejected_with_robfigs_messages() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "Too few fields",
                "* * * *",
                "expected exactly 5 fields, found 4: * * * *",
            ),
            (
                "A seconds field is not standard",
                "0 * * * * *",
                "expected exactly 5 fields, found 6: 0 * * * * *",
            ),
            (
                "Minute out of range",
                "60 * * * *",
                "end of range (60) above maximum (59): 60",
            ),
            (
                "Backwards range",
                "* 5-2 * * *",
                "beginning of range (5) beyond end of range (2): 5-2",
            ),
            (
                "Not a number",
                "x * * * *",
                "failed to parse int from x: invalid syntax",
            ),
            (
                "Unknown descriptor",
                "@fortnightly",
                "unrecognized descriptor: @fortnightly",
            ),
            ("Empty", "", "empty spec string"),
        ];
        for (name, spec, want) in cases {
            let got = parse_standard(spec, TimeZone::UTC).unwrap_err();
            assert_eq!(got, *want, "{name}");
        }
    }

    #[test]
    fn time_zones_come_from_the_bundled_database() {
        assert!(time_zone("America/New_York").is_ok());
        assert_eq!(
            time_zone("Mars/Olympus").unwrap_err(),
            "unknown time zone Mars/Olympus"
        );
    }
}
