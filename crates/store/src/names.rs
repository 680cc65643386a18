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
        let h = format!("{a:032x}");
        format!(
            "{}-{}-4{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            &h[16..20],
            &h[20..32]
        )
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
}
