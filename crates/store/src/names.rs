//! The seeded source of UIDs and generated names (`metadata.generateName`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The characters upstream uses for generated name suffixes (no vowels, no confusable digits).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Upstream's generated-name suffix length (`names.SimpleNameGenerator`).
const SUFFIX_LEN: usize = 5;

/// A deterministic source of UIDs and name suffixes: the same seed gives the same sequence.
#[derive(Clone, Debug)]
pub struct NameSource {
    rng: ChaCha8Rng,
}

impl NameSource {
    /// A source whose sequence derives from `seed` (a distinct stream from the other seeded
    /// sources of a run that share the seed).
    pub fn new(seed: u64) -> NameSource {
        NameSource {
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5354_4f52_4555_4944),
        }
    }

    /// A random UID in the canonical 8-4-4-4-12 form (version 4).
    pub fn uid(&mut self) -> String {
        let a: u128 = self.rng.random();
        uid_of(a)
    }

    /// A random number (for the registry's allocators: cluster IPs, node ports).
    pub fn draw(&mut self) -> u64 {
        self.rng.random()
    }

    /// `prefix` followed by five random characters, as upstream's name generator makes them.
    pub fn generate_name(&mut self, prefix: &str) -> String {
        let mut name = String::with_capacity(prefix.len() + SUFFIX_LEN);
        name.push_str(prefix);
        for _ in 0..SUFFIX_LEN {
            let i = self.rng.random_range(0..NAME_ALPHABET.len());
            name.push(NAME_ALPHABET[i] as char);
        }
        name
    }
}

/// The UID of a random number: its 32 lower-case hex digits (most significant first) as
/// 8-4-4-4-12, with the 13th digit replaced by the version, 4. Written digit by digit: the
/// registry makes one per object it creates (two formatting passes cost 2,700 instructions).
fn uid_of(a: u128) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 36];
    let mut at = 0;
    for i in 0..32 {
        if matches!(i, 8 | 12 | 16 | 20) {
            out[at] = b'-';
            at += 1;
        }
        let digit = ((a >> (124 - 4 * i)) & 0xf) as usize;
        out[at] = if i == 12 { b'4' } else { HEX[digit] };
        at += 1;
    }
    std::str::from_utf8(&out)
        .expect("hex digits and dashes")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_uids_and_names() {
        let draw = |seed| {
            let mut s = NameSource::new(seed);
            (s.generate_name("web-"), s.uid())
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        let (name, uid) = draw(1);
        assert!(name.starts_with("web-") && name.len() == 9);
        assert_eq!(uid.len(), 36);
        assert_eq!(&uid[14..15], "4");
    }

    #[test]
    fn a_uid_is_the_hex_of_its_number_with_the_version_digit() {
        // The formatting it replaces, for comparison.
        let formatted = |a: u128| {
            let h = format!("{a:032x}");
            format!(
                "{}-{}-4{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[13..16],
                &h[16..20],
                &h[20..32]
            )
        };
        let mut s = NameSource::new(7);
        let mut numbers: Vec<u128> =
            vec![0, 1, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210];
        numbers.extend((0..2000).map(|_| s.rng.random::<u128>()));
        numbers.extend((0..128).map(|b| 1u128 << b));
        for a in numbers {
            assert_eq!(uid_of(a), formatted(a), "{a:032x}");
        }
        assert_eq!(
            uid_of(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210),
            "01234567-89ab-4def-fedc-ba9876543210"
        );
    }
}
