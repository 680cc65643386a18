//! Kubernetes `resource.Quantity` parsing with upstream's exact semantics.
//!
//! `k8s_openapi`'s `Quantity` is only the string; the scheduler needs the number. Upstream never
//! uses floating point for quantities, and neither do we: a parsed quantity is an exact count of
//! nano-units (the smallest unit upstream keeps), so sums of requests round exactly once, at the
//! end, as upstream's `Quantity.Add` followed by `MilliValue()` does.
//!
//! Grammar (upstream `parseQuantityString` + `suffixer.interpret`):
//! `[+-]? digits [. digits] suffix`, where the suffix is one of the decimal SI suffixes
//! `n u m "" k M G T P E`, the binary suffixes `Ki Mi Gi Ti Pi Ei`, or a decimal exponent
//! `e<int>` / `E<int>`. Behaviours kept on purpose because upstream has them:
//! * a sign or a dot with no digits (`"+"`, `"-"`, `"."`, `"1."`, `"1.G"`) parses as a number;
//! * values finer than one nano-unit are rounded *away from zero* to a whole nano-unit
//!   (`"0.1n"` is `1n`: "if you want some resources, you should get some");
//! * binary-suffixed values are capped at 2^63-1 units;
//! * a decimal exponent is truncated to 32 bits as upstream's `int32(parsed)` does.

use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The regular expression upstream quotes in its format error.
pub const QUANTITY_REGEX: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// Why a quantity string was rejected. Messages are upstream's, prefixed with the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string does not have the shape number + suffix (upstream `ErrFormatWrong`).
    #[error(
        "invalid quantity {input:?}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format { input: String },
    /// The number part could not be read (upstream `ErrNumeric`).
    #[error("invalid quantity {input:?}: unable to parse numeric part of quantity")]
    Numeric { input: String },
    /// The suffix is not a known SI, binary or exponent suffix (upstream `ErrSuffix`),
    /// e.g. `1ki` (lower-case k with i), `1Zi`, `1e`.
    #[error(
        "invalid quantity {input:?}: unable to parse quantity's suffix (expected one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3)"
    )]
    Suffix { input: String },
}

/// An exact parsed quantity: a signed count of nano-units (10^-9).
///
/// Values whose magnitude exceeds about 1.7·10^29 units saturate; every accessor returns `i64`,
/// which saturates far earlier, so this is invisible to callers.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ParsedQuantity {
    nanos: i128,
}

const NANOS_PER_UNIT: i128 = 1_000_000_000;
const NANOS_PER_MILLI: i128 = 1_000_000;
/// Upstream caps binary-suffixed quantities at `maxAllowed` = 2^63-1 units.
const MAX_BINARY_NANOS: i128 = (i64::MAX as i128) * NANOS_PER_UNIT;

impl ParsedQuantity {
    pub const ZERO: ParsedQuantity = ParsedQuantity { nanos: 0 };

    /// A quantity of exactly `nanos` nano-units.
    pub fn from_nanos(nanos: i128) -> Self {
        ParsedQuantity { nanos }
    }
    /// A quantity of `milli` thousandths (upstream `NewMilliQuantity`).
    pub fn from_milli(milli: i64) -> Self {
        ParsedQuantity {
            nanos: milli as i128 * NANOS_PER_MILLI,
        }
    }
    /// A quantity of `value` whole units (upstream `NewQuantity`).
    pub fn from_value(value: i64) -> Self {
        ParsedQuantity {
            nanos: value as i128 * NANOS_PER_UNIT,
        }
    }
    /// The exact value in nano-units.
    pub fn as_nanos(&self) -> i128 {
        self.nanos
    }
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }
    /// -1, 0 or 1.
    pub fn signum(&self) -> i32 {
        self.nanos.signum() as i32
    }
    /// Exact sum (saturating only far beyond any int64 quantity).
    pub fn saturating_add(self, other: ParsedQuantity) -> ParsedQuantity {
        ParsedQuantity {
            nanos: self.nanos.saturating_add(other.nanos),
        }
    }
    pub fn saturating_sub(self, other: ParsedQuantity) -> ParsedQuantity {
        ParsedQuantity {
            nanos: self.nanos.saturating_sub(other.nanos),
        }
    }

    /// Thousandths of a unit, rounded away from zero to a whole milli-unit (so `0.1m` is 1),
    /// saturating at the `i64` bounds. Upstream `MilliValue()`; used for cpu.
    pub fn milli_value(&self) -> i64 {
        saturate_i64(div_away_from_zero(self.nanos, NANOS_PER_MILLI))
    }

    /// Whole units, rounded away from zero (`1.5` is 2, `5n` is 1), saturating at the `i64`
    /// bounds. Upstream `Value()`; used for memory, storage, pods and extended resources.
    pub fn value(&self) -> i64 {
        saturate_i64(div_away_from_zero(self.nanos, NANOS_PER_UNIT))
    }
}

impl FromStr for ParsedQuantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_quantity(s)
    }
}

impl fmt::Display for ParsedQuantity {
    /// A plain decimal rendering (`1.5`, `0.001`, `1073741824`), not upstream's canonical form:
    /// it is meant for messages, not for round-tripping into manifests.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.nanos < 0 { "-" } else { "" };
        let abs = self.nanos.unsigned_abs();
        let whole = abs / NANOS_PER_UNIT as u128;
        let frac = abs % NANOS_PER_UNIT as u128;
        if frac == 0 {
            write!(f, "{sign}{whole}")
        } else {
            let digits = format!("{frac:09}");
            write!(f, "{sign}{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

/// Rounds `n / d` away from zero, as upstream's int64 scaling does.
fn div_away_from_zero(n: i128, d: i128) -> i128 {
    let q = n / d;
    if n % d == 0 {
        q
    } else if n > 0 {
        q + 1
    } else {
        q - 1
    }
}

fn saturate_i64(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Parses a quantity string exactly as upstream `resource.ParseQuantity` does, including its
/// rejection of surrounding whitespace (`" 1"`, `"1 "`).
pub fn parse_quantity(s: &str) -> Result<ParsedQuantity, QuantityError> {
    let format_err = || QuantityError::Format {
        input: s.to_string(),
    };
    if s.is_empty() {
        return Err(format_err());
    }
    let scanned = scan(s).ok_or_else(format_err)?;
    let suffix = interpret_suffix(scanned.suffix).ok_or_else(|| QuantityError::Suffix {
        input: s.to_string(),
    })?;

    // A mantissa without any digit ("." or "-.") only parses on upstream's int64 fast path,
    // which decimal quantities take unless their scale is finer than nano. Elsewhere upstream's
    // decimal parser rejects it.
    if !scanned.has_digit {
        if let Suffix::Decimal(exp) = suffix {
            if (exp as i64) - (scanned.denom.len() as i64) < -9 {
                return Err(QuantityError::Numeric {
                    input: s.to_string(),
                });
            }
        }
        return Ok(ParsedQuantity::ZERO);
    }

    let (exp10, exp2) = match suffix {
        Suffix::Decimal(e) => (e as i64, 0u32),
        Suffix::Binary(e) => (0, e),
    };
    let magnitude = magnitude_nanos(scanned.num, scanned.denom, exp10, exp2);
    let magnitude = match suffix {
        Suffix::Binary(_) => magnitude.min(MAX_BINARY_NANOS),
        Suffix::Decimal(_) => magnitude,
    };
    let nanos = if scanned.negative {
        -magnitude
    } else {
        magnitude
    };
    Ok(ParsedQuantity { nanos })
}

/// Parses a `k8s_openapi` quantity and returns its milli-value (cpu accounting).
pub fn milli_value(q: &Quantity) -> Result<i64, QuantityError> {
    parse_quantity(&q.0).map(|p| p.milli_value())
}

/// Parses a `k8s_openapi` quantity and returns its whole-unit value (memory, pods, ...).
pub fn value(q: &Quantity) -> Result<i64, QuantityError> {
    parse_quantity(&q.0).map(|p| p.value())
}

/// The pieces of a quantity string, as upstream's scanner splits them.
struct Scanned<'a> {
    negative: bool,
    /// Integer digits with leading zeros removed (may be empty).
    num: &'a str,
    /// Fraction digits (may be empty).
    denom: &'a str,
    suffix: &'a str,
    /// Whether the mantissa had any digit at all (`"-."` has none).
    has_digit: bool,
}

const SUFFIX_LETTERS: &[u8] = b"eEinumkKMGTP";

/// Splits `s` into sign, integer digits, fraction digits and suffix; `None` is upstream's
/// `ErrFormatWrong`. The suffix is checked for shape only here (letters, optional sign, digits).
fn scan(s: &str) -> Option<Scanned<'_>> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut negative = false;
    match b.first() {
        Some(b'-') => {
            negative = true;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    let zeros_start = pos;
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    let had_zeros = pos > zeros_start;
    let mut out = Scanned {
        negative,
        num: "",
        denom: "",
        suffix: "",
        has_digit: had_zeros,
    };
    if pos == end {
        // Only a sign and zeros (or nothing after the sign): upstream returns zero here.
        return Some(out);
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    out.num = &s[num_start..pos];
    out.has_digit |= !out.num.is_empty();
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        out.denom = &s[denom_start..pos];
        out.has_digit |= !out.denom.is_empty();
    }
    let suffix_start = pos;
    while pos < end && SUFFIX_LETTERS.contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos != end {
        return None;
    }
    out.suffix = &s[suffix_start..];
    Some(out)
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Suffix {
    /// Multiply by 10^e.
    Decimal(i32),
    /// Multiply by 2^e.
    Binary(u32),
}

fn interpret_suffix(suffix: &str) -> Option<Suffix> {
    let decimal = |e| Some(Suffix::Decimal(e));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => Some(Suffix::Binary(10)),
        "Mi" => Some(Suffix::Binary(20)),
        "Gi" => Some(Suffix::Binary(30)),
        "Ti" => Some(Suffix::Binary(40)),
        "Pi" => Some(Suffix::Binary(50)),
        "Ei" => Some(Suffix::Binary(60)),
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))?;
            // Go's ParseInt accepts an optional sign and decimal digits, as Rust's does.
            let parsed: i64 = rest.parse().ok()?;
            // Upstream truncates the exponent to int32; kept so "1e4294967296" means 1.
            Some(Suffix::Decimal(parsed as i32))
        }
    }
}

/// |value| in nano-units, rounded up to a whole nano-unit and saturated at `i128::MAX`, for the
/// mantissa `num.denom` times 10^exp10 times 2^exp2.
fn magnitude_nanos(num: &str, denom: &str, exp10: i64, exp2: u32) -> i128 {
    magnitude_nanos_small(num, denom, exp10, exp2)
        .unwrap_or_else(|| magnitude_nanos_big(num, denom, exp10, exp2))
}

/// [`magnitude_nanos`] for the quantities pods and nodes are written with (at most 18
/// significant digits, a result within i128), in machine integers; `None` for the others.
fn magnitude_nanos_small(num: &str, denom: &str, exp10: i64, exp2: u32) -> Option<i128> {
    let mut digits: u64 = 0;
    let mut significant = 0;
    for b in num.bytes().chain(denom.bytes()) {
        let d = u64::from(b.checked_sub(b'0').filter(|d| *d <= 9)?);
        if digits == 0 && d == 0 {
            continue;
        }
        significant += 1;
        if significant > 18 {
            return None;
        }
        digits = digits * 10 + d;
    }
    if digits == 0 {
        return Some(0);
    }
    if exp2 > 60 {
        return None;
    }
    // Below 10^18 · 2^60 < 2^120.
    let x = u128::from(digits) << exp2;
    let e = exp10 - denom.len() as i64 + 9;
    // 10^38 is the largest power of ten below 2^127: a larger one overflows, as checked_pow did.
    let p = *POW10.get(usize::try_from(e.unsigned_abs()).ok()?)?;
    let magnitude = if e >= 0 {
        match (u64::try_from(x), u64::try_from(p)) {
            // Two 64-bit factors: one widening multiplication, no overflow check needed.
            (Ok(x), Ok(p)) => u128::from(x) * u128::from(p),
            _ => x.checked_mul(p)?,
        }
    } else {
        // Below one nano-unit rounds up, as the big path does.
        match (u64::try_from(x), u64::try_from(p)) {
            (Ok(x), Ok(p)) => u128::from(x / p + u64::from(!x.is_multiple_of(p))),
            _ => x / p + u128::from(!x.is_multiple_of(p)),
        }
    };
    i128::try_from(magnitude).ok()
}

/// 10^0 ..= 10^38, the powers of ten an `i128` holds.
const POW10: [u128; 39] = {
    let mut t = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

fn magnitude_nanos_big(num: &str, denom: &str, exp10: i64, exp2: u32) -> i128 {
    // All digits as one integer; the decimal point moves into the exponent.
    let digits_all = format!("{num}{denom}");
    let digits = digits_all.trim_start_matches('0');
    if digits.is_empty() {
        return 0;
    }
    let e = exp10 - denom.len() as i64 + 9;
    let n_digits = digits.len() as i64;
    // digits >= 10^(n-1), so the value is at least 10^(n-1+e): beyond i128 once that passes 38.
    if n_digits - 1 + e > 38 {
        return i128::MAX;
    }
    // digits * 2^60 < 10^(n+19): if the divisor is larger still, the value is below one nano-unit
    // and rounds up to exactly one.
    if e < 0 && -e > n_digits + 19 {
        return 1;
    }
    let mut big = BigDec::from_digits(digits);
    let mut shift = exp2;
    while shift > 0 {
        let step = shift.min(30);
        big.mul_small(1u64 << step);
        shift -= step;
    }
    let mut round_up = false;
    if e >= 0 {
        big.mul_pow10(e as u32);
    } else {
        round_up = big.div_pow10((-e) as u32);
    }
    match big.to_u128() {
        Some(v) => {
            let v = v.saturating_add(round_up as u128);
            i128::try_from(v).unwrap_or(i128::MAX)
        }
        None => i128::MAX,
    }
}

/// A minimal non-negative big integer in base 10^9 (little-endian limbs), enough to scale a
/// quantity's mantissa exactly whatever its number of digits.
struct BigDec {
    limbs: Vec<u64>,
}

const LIMB_BASE: u64 = 1_000_000_000;

impl BigDec {
    fn from_digits(digits: &str) -> BigDec {
        let b = digits.as_bytes();
        let mut limbs = Vec::with_capacity(b.len() / 9 + 1);
        let mut end = b.len();
        while end > 0 {
            let start = end.saturating_sub(9);
            let limb = b[start..end]
                .iter()
                .fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0'));
            limbs.push(limb);
            end = start;
        }
        BigDec { limbs }
    }

    /// Multiplies by `m` (at most 2^30, so a limb times `m` plus carry fits in u64).
    fn mul_small(&mut self, m: u64) {
        let mut carry = 0u64;
        for limb in &mut self.limbs {
            let t = *limb * m + carry;
            *limb = t % LIMB_BASE;
            carry = t / LIMB_BASE;
        }
        while carry > 0 {
            self.limbs.push(carry % LIMB_BASE);
            carry /= LIMB_BASE;
        }
    }

    fn mul_pow10(&mut self, e: u32) {
        let whole_limbs = (e / 9) as usize;
        if whole_limbs > 0 {
            self.limbs.splice(0..0, std::iter::repeat_n(0, whole_limbs));
        }
        self.mul_small(10u64.pow(e % 9));
    }

    /// Divides by 10^e, truncating; returns whether a non-zero remainder was dropped.
    fn div_pow10(&mut self, e: u32) -> bool {
        let whole_limbs = ((e / 9) as usize).min(self.limbs.len());
        let mut dropped = self.limbs[..whole_limbs].iter().any(|&l| l != 0);
        self.limbs.drain(..whole_limbs);
        let d = 10u64.pow(e % 9);
        if d > 1 {
            let mut rem = 0u64;
            for limb in self.limbs.iter_mut().rev() {
                let t = rem * LIMB_BASE + *limb;
                *limb = t / d;
                rem = t % d;
            }
            dropped |= rem != 0;
        }
        dropped
    }

    fn to_u128(&self) -> Option<u128> {
        self.limbs.iter().rev().try_fold(0u128, |acc, &limb| {
            acc.checked_mul(LIMB_BASE as u128)?
                .checked_add(limb as u128)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (case, input, milli value, value)
    const VALID: &[(&str, &str, i64, i64)] = &[
        ("a plain integer is whole units", "1", 1000, 1),
        ("zero is zero", "0", 0, 0),
        ("100m is a tenth of a cpu", "100m", 100, 1),
        ("0.1 equals 100m", "0.1", 100, 1),
        ("a leading dot is allowed", ".5", 500, 1),
        ("1.5 rounds up to 2 whole units", "1.5", 1500, 2),
        ("5n rounds up to one milli-unit and one unit", "5n", 1, 1),
        ("1u rounds up to one milli-unit", "1u", 1, 1),
        ("1k is a thousand", "1k", 1_000_000, 1000),
        ("1M is a million", "1M", 1_000_000_000, 1_000_000),
        ("1G is a billion", "1G", 1_000_000_000_000, 1_000_000_000),
        ("1Ki is 1024", "1Ki", 1_024_000, 1024),
        ("1Gi is 2^30", "1Gi", 1_073_741_824_000, 1_073_741_824),
        ("500Mi is 500 * 2^20", "500Mi", 524_288_000_000, 524_288_000),
        (
            "1.5Gi keeps its fraction exactly",
            "1.5Gi",
            1_610_612_736_000,
            1_610_612_736,
        ),
        ("1e3 is a thousand", "1e3", 1_000_000, 1000),
        ("12E-3 is twelve thousandths", "12E-3", 12, 1),
        ("an explicit plus exponent works", "1e+3", 1_000_000, 1000),
        (
            "a capital E alone is exa",
            "2E",
            i64::MAX,
            2_000_000_000_000_000_000,
        ),
        ("a leading plus sign is allowed", "+1", 1000, 1),
        ("negative values round away from zero", "-1.5", -1500, -2),
        ("leading zeros are ignored", "007", 7000, 7),
        ("a trailing dot is allowed as upstream does", "1.", 1000, 1),
        (
            "a dot before a suffix is allowed as upstream does",
            "1.G",
            1_000_000_000_000,
            1_000_000_000,
        ),
        ("a lone sign parses as zero as upstream does", "-", 0, 0),
        ("a lone dot parses as zero as upstream does", ".", 0, 0),
        ("sub-nano values round up to one nano", "0.1n", 1, 1),
        ("tiny binary fractions round up", "0.000000000001Ki", 1, 1),
        (
            "milli values saturate instead of overflowing",
            "9223372036854775807",
            i64::MAX,
            i64::MAX,
        ),
        (
            "8Ei is capped at 2^63-1 as upstream does",
            "8Ei",
            i64::MAX,
            i64::MAX,
        ),
        ("huge exponents saturate", "1e400", i64::MAX, i64::MAX),
        (
            "huge negative exponents round up to one nano",
            "1e-400",
            1,
            1,
        ),
        (
            "long mantissas stay exact",
            "0.0000000000000000000000000000000000000000001",
            1,
            1,
        ),
        (
            "a 20-digit mantissa saturates value",
            "123456789012345678901",
            i64::MAX,
            i64::MAX,
        ),
        (
            "exponents are truncated to 32 bits as upstream does",
            "1e4294967296",
            1000,
            1,
        ),
    ];

    #[test]
    fn valid_quantities_parse_to_upstream_values() {
        for &(case, input, milli, val) in VALID {
            let q = parse_quantity(input).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(q.milli_value(), milli, "{case}: milli value of {input:?}");
            assert_eq!(q.value(), val, "{case}: value of {input:?}");
        }
    }

    #[test]
    fn invalid_quantities_are_rejected_with_upstream_error_kinds() {
        #[derive(Debug)]
        enum Kind {
            Format,
            Suffix,
            Numeric,
        }
        let cases: &[(&str, &str, Kind)] = &[
            ("the empty string is rejected", "", Kind::Format),
            ("two dots are rejected", "1.2.3", Kind::Format),
            ("letters only are rejected", "abc", Kind::Format),
            ("an unknown suffix letter is rejected", "1ZZ", Kind::Format),
            (
                "a plus inside the number is rejected",
                "1+1.0M",
                Kind::Format,
            ),
            (
                "a double dot before a suffix is rejected",
                "1.1.M",
                Kind::Format,
            ),
            ("leading whitespace is rejected", " 1", Kind::Format),
            ("trailing whitespace is rejected", "1 ", Kind::Format),
            ("lower-case mi is not a suffix", "0.1mi", Kind::Suffix),
            (
                "a letter outside the suffix alphabet is a format error",
                "0.1am",
                Kind::Format,
            ),
            ("i alone is not a suffix", "1i", Kind::Suffix),
            ("a fractional i is not a suffix", ".5i", Kind::Suffix),
            ("a signed i is not a suffix", "-3.01i", Kind::Suffix),
            ("an exponent needs digits", "-3.01e-", Kind::Suffix),
            ("e alone is not a suffix", "1e", Kind::Suffix),
            ("lower-case ki is not a suffix", "1ki", Kind::Suffix),
            (
                "an exponent larger than int64 is rejected",
                "1e99999999999999999999",
                Kind::Suffix,
            ),
            (
                "a digitless mantissa finer than nano is rejected",
                ".e-10",
                Kind::Numeric,
            ),
        ];
        for (case, input, kind) in cases {
            let err = parse_quantity(input).expect_err(case);
            let ok = matches!(
                (&err, kind),
                (QuantityError::Format { .. }, Kind::Format)
                    | (QuantityError::Suffix { .. }, Kind::Suffix)
                    | (QuantityError::Numeric { .. }, Kind::Numeric)
            );
            assert!(ok, "{case}: {input:?} gave {err:?}, expected {kind:?}");
        }
    }

    #[test]
    fn common_quantities_take_the_machine_integer_path() {
        for (num, denom, exp10, exp2) in [
            ("100", "", -3, 0),
            ("64", "", 0, 20),
            ("1", "5", 0, 0),
            ("", "001", 0, 0),
            ("4", "", 9, 0),
            ("999999999999999999", "", -9, 60),
        ] {
            let small = magnitude_nanos_small(num, denom, exp10, exp2);
            assert_eq!(small, Some(magnitude_nanos_big(num, denom, exp10, exp2)));
        }
        // Too many digits, or beyond i128: the big path.
        assert_eq!(magnitude_nanos_small("1234567890123456789", "", 0, 0), None);
        assert_eq!(magnitude_nanos_small("1", "", 40, 0), None);
        assert_eq!(magnitude_nanos("1", "", 40, 0), i128::MAX);
    }

    #[test]
    fn the_format_error_quotes_upstreams_regular_expression() {
        let err = parse_quantity("abc").unwrap_err().to_string();
        assert!(err.contains(QUANTITY_REGEX), "{err}");
        assert!(err.contains("\"abc\""), "{err}");
    }

    #[test]
    fn convenience_functions_read_k8s_openapi_quantities() {
        assert_eq!(milli_value(&Quantity("250m".into())), Ok(250));
        assert_eq!(value(&Quantity("1Mi".into())), Ok(1_048_576));
        assert!(value(&Quantity("1 Mi".into())).is_err());
    }

    #[test]
    fn sums_round_once_as_upstream_quantity_addition_does() {
        let half_milli = parse_quantity("0.5m").unwrap();
        assert_eq!(half_milli.saturating_add(half_milli).milli_value(), 1);
        assert_eq!(half_milli.milli_value() * 2, 2);
    }

    #[test]
    fn display_is_a_plain_decimal() {
        assert_eq!(parse_quantity("1500m").unwrap().to_string(), "1.5");
        assert_eq!(parse_quantity("-1m").unwrap().to_string(), "-0.001");
        assert_eq!(parse_quantity("1Ki").unwrap().to_string(), "1024");
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn parsing_never_panics(s in "\\PC{0,40}") {
                let _ = parse_quantity(&s);
            }

            #[test]
            fn parsing_never_panics_on_quantity_shaped_input(s in "[+-]?[0-9.]{0,30}[eEinumkKMGTP]{0,3}[-+]?[0-9]{0,12}") {
                let _ = parse_quantity(&s);
            }

            #[test]
            fn integers_with_milli_suffix_round_trip(m in -1_000_000_000_000i64..1_000_000_000_000) {
                let q = parse_quantity(&format!("{m}m")).unwrap();
                prop_assert_eq!(q.milli_value(), m);
            }

            #[test]
            fn the_machine_integer_path_agrees_with_the_big_integer_path(
                num in "[0-9]{0,22}",
                denom in "[0-9]{0,22}",
                exp10 in -60i64..60,
                exp2 in prop::sample::select(vec![0u32, 10, 20, 30, 40, 50, 60]),
            ) {
                let num = num.trim_start_matches('0');
                if let Some(small) = magnitude_nanos_small(num, &denom, exp10, exp2) {
                    prop_assert_eq!(small, magnitude_nanos_big(num, &denom, exp10, exp2));
                }
            }

            #[test]
            fn decimal_fractions_match_a_simple_model(whole in 0u32..100_000, frac in 0u32..1000) {
                let q = parse_quantity(&format!("{whole}.{frac:03}")).unwrap();
                prop_assert_eq!(q.milli_value(), whole as i64 * 1000 + frac as i64);
                let expect_value = whole as i64 + if frac > 0 { 1 } else { 0 };
                prop_assert_eq!(q.value(), expect_value);
            }
        }
    }
}
