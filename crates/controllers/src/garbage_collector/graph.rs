//! The garbage collector's graph, held compactly: it holds every object of the cluster (pods
//! included), so each node is a 56-byte table entry (the `Kind` alone is 16: `Kind::Other`
//! carries a reference) and its name's one allocation.
//!
//! - A UID is 16 bytes: the canonical form the registry makes (lower-case hex 8-4-4-4-12,
//!   version 4) packed as its 128 bits, any other text (hand-written objects, tests) interned
//!   once with a number whose version digit is 0, so the two never meet. Interned texts are
//!   kept (a scenario's own UIDs: a handful).
//! - A node's namespace is an index into the namespaces seen (kept once seen, as before).
//! - An owner's dependents are a vector of UIDs (an owner has ~15), a set beyond
//!   [`FEW`]: inserting and removing stay O(1) for an owner of thousands (a DaemonSet).
//!   Nothing reads them in their stored order: every reader sorts them by key, then by UID
//!   text ([`Graph::cmp_uid`]), as the string sets' readers did.

use std::cmp::Ordering;
use std::sync::Arc;

use kubeplane_api::{Kind, ObjectKey};
use rustc_hash::{FxHashMap, FxHashSet};

/// A UID as the graph holds it (see the module's doc).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Uid {
    hi: u64,
    lo: u64,
}

/// The bits of the version digit (the 13th hex digit) in [`Uid::hi`].
const VERSION_SHIFT: u32 = 12;
const VERSION_4: u64 = 4 << VERSION_SHIFT;
const VERSION_MASK: u64 = 0xf << VERSION_SHIFT;

/// The value of each lower-case hex digit's byte; 0xff for every other byte.
const HEX_VALUE: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 16 {
        table[b"0123456789abcdef"[i] as usize] = i as u8;
        i += 1;
    }
    table
};

impl Uid {
    /// The packed form of a canonical version-4 UID in lower case, or None. Every event the
    /// collector observes looks its object up, so this reads the fixed places of the digits
    /// through a table, with no branch per digit.
    fn parse(text: &str) -> Option<Uid> {
        let b: &[u8; 36] = text.as_bytes().try_into().ok()?;
        if b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' || b[14] != b'4' {
            return None;
        }
        let mut bad = 0u8;
        let mut digits = |acc: u64, part: &[u8]| {
            part.iter().fold(acc, |acc, &c| {
                let v = HEX_VALUE[usize::from(c)];
                bad |= v;
                (acc << 4) | u64::from(v & 0xf)
            })
        };
        let hi = digits(0, &b[0..8]);
        let hi = digits(hi, &b[9..13]);
        let hi = digits(hi, &b[14..18]);
        let lo = digits(0, &b[19..23]);
        let lo = digits(lo, &b[24..36]);
        (bad & !0xf == 0).then_some(Uid { hi, lo })
    }

    fn is_packed(self) -> bool {
        self.hi & VERSION_MASK == VERSION_4
    }

    /// The canonical text of a packed UID.
    fn canonical(self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(36);
        for i in 0..32 {
            if matches!(i, 8 | 12 | 16 | 20) {
                out.push('-');
            }
            let word = if i < 16 { self.hi } else { self.lo };
            let digit = (word >> (60 - 4 * (i % 16))) & 0xf;
            out.push(HEX[digit as usize] as char);
        }
        out
    }
}

/// An object in the graph: its key, with the namespace as an index into the graph's namespaces.
pub(super) struct Node {
    name: Box<str>,
    namespace: u32,
    kind: Kind,
}

/// The dependents of one owner (see the module's doc).
enum Dependents {
    Few(Vec<Uid>),
    Many(FxHashSet<Uid>),
}

/// The most dependents an owner keeps in a vector.
const FEW: usize = 64;

/// The graph: every object seen and not deleted, and for every owner UID the objects that name
/// it.
#[derive(Default)]
pub(super) struct Graph {
    nodes: FxHashMap<Uid, Node>,
    dependents: FxHashMap<Uid, Dependents>,
    namespaces: Vec<Arc<str>>,
    namespace_index: FxHashMap<Arc<str>, u32>,
    /// The interned UIDs that are not canonical, by their number ([`Uid::lo`]), and back.
    texts: Vec<Box<str>>,
    text_index: FxHashMap<Box<str>, u64>,
}

impl Graph {
    /// The graph's UID of a text, if the graph has met it.
    pub(super) fn find(&self, text: &str) -> Option<Uid> {
        Uid::parse(text).or_else(|| {
            let lo = *self.text_index.get(text)?;
            Some(Uid { hi: 0, lo })
        })
    }

    /// The graph's UID of a text, interning a text that is not canonical.
    pub(super) fn intern(&mut self, text: &str) -> Uid {
        if let Some(uid) = self.find(text) {
            return uid;
        }
        let lo = self.texts.len() as u64;
        self.texts.push(text.into());
        self.text_index.insert(text.into(), lo);
        Uid { hi: 0, lo }
    }

    /// The text of a UID.
    pub(super) fn text(&self, uid: Uid) -> String {
        if uid.is_packed() {
            uid.canonical()
        } else {
            self.texts[uid.lo as usize].to_string()
        }
    }

    /// The order of two UIDs' texts: packed UIDs' bits sort as their texts (lower-case hex
    /// digits ascend in ASCII; the dashes are at the same places).
    pub(super) fn cmp_uid(&self, a: Uid, b: Uid) -> Ordering {
        if a.is_packed() && b.is_packed() {
            return a.cmp(&b);
        }
        self.text(a).cmp(&self.text(b))
    }

    pub(super) fn contains(&self, uid: Uid) -> bool {
        self.nodes.contains_key(&uid)
    }

    /// Adds a node unless the graph holds the UID.
    pub(super) fn add_node(&mut self, uid: Uid, kind: Kind, namespace: &str, name: &str) {
        if self.nodes.contains_key(&uid) {
            return;
        }
        let namespace = match self.namespace_index.get(namespace) {
            Some(&i) => i,
            None => {
                let i = self.namespaces.len() as u32;
                let shared: Arc<str> = Arc::from(namespace);
                self.namespaces.push(shared.clone());
                self.namespace_index.insert(shared, i);
                i
            }
        };
        let name = name.into();
        self.nodes.insert(
            uid,
            Node {
                name,
                namespace,
                kind,
            },
        );
    }

    pub(super) fn remove_node(&mut self, uid: Uid) {
        self.nodes.remove(&uid);
    }

    /// The key of a node.
    pub(super) fn key(&self, uid: Uid) -> Option<ObjectKey> {
        let node = self.nodes.get(&uid)?;
        Some(ObjectKey {
            kind: node.kind,
            namespace: self.namespaces[node.namespace as usize].to_string(),
            name: node.name.to_string(),
        })
    }

    /// Records that `dependent` names `owner`.
    pub(super) fn add_dependent(&mut self, owner: Uid, dependent: Uid) {
        let deps = self
            .dependents
            .entry(owner)
            .or_insert_with(|| Dependents::Few(Vec::new()));
        match deps {
            Dependents::Few(v) if v.contains(&dependent) => {}
            Dependents::Few(v) if v.len() < FEW => v.push(dependent),
            Dependents::Few(v) => {
                let mut set: FxHashSet<Uid> = v.drain(..).collect();
                set.insert(dependent);
                *deps = Dependents::Many(set);
            }
            Dependents::Many(set) => {
                set.insert(dependent);
            }
        }
    }

    /// Records that `dependent` no longer names `owner`; an owner left without dependents
    /// leaves the map (an empty set meant the same to every reader).
    pub(super) fn remove_dependent(&mut self, owner: Uid, dependent: Uid) {
        let Some(deps) = self.dependents.get_mut(&owner) else {
            return;
        };
        let empty = match deps {
            Dependents::Few(v) => {
                if let Some(i) = v.iter().position(|d| *d == dependent) {
                    v.swap_remove(i);
                }
                v.is_empty()
            }
            Dependents::Many(set) => {
                set.remove(&dependent);
                set.is_empty()
            }
        };
        if empty {
            self.dependents.remove(&owner);
        }
    }

    /// Whether some object names `owner`.
    pub(super) fn has_dependents(&self, owner: Uid) -> bool {
        self.dependents.contains_key(&owner)
    }

    /// The dependents of `owner` that are in the graph, in kind, namespace, name order (then
    /// UID text), with their UIDs' texts; with `take`, the owner's entry goes.
    pub(super) fn sorted_dependents(&mut self, owner: Uid, take: bool) -> Vec<(ObjectKey, String)> {
        let deps = if take {
            self.dependents.remove(&owner)
        } else {
            None
        };
        let deps = deps.as_ref().or_else(|| self.dependents.get(&owner));
        let uids: Vec<Uid> = match deps {
            None => Vec::new(),
            Some(Dependents::Few(v)) => v.clone(),
            Some(Dependents::Many(set)) => set.iter().copied().collect(),
        };
        let mut keyed: Vec<(ObjectKey, Uid)> = uids
            .into_iter()
            .filter_map(|d| Some((self.key(d)?, d)))
            .collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| self.cmp_uid(a.1, b.1)));
        keyed.into_iter().map(|(k, d)| (k, self.text(d))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_canonical_uid_packs_and_reads_back_and_sorts_as_its_text() {
        let texts = [
            "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
            "ffffffff-ffff-4fff-bfff-ffffffffffff",
            "00000000-0000-4000-8000-000000000000",
            "a0000000-0000-4000-8000-00000000000a",
        ];
        let mut g = Graph::default();
        let uids: Vec<Uid> = texts.iter().map(|t| g.intern(t)).collect();
        for (t, u) in texts.iter().zip(&uids) {
            assert!(u.is_packed(), "{t}");
            assert_eq!(g.text(*u), *t);
        }
        assert!(g.texts.is_empty());
        for a in 0..texts.len() {
            for b in 0..texts.len() {
                assert_eq!(g.cmp_uid(uids[a], uids[b]), texts[a].cmp(texts[b]));
            }
        }
    }

    #[test]
    fn other_uids_are_interned_and_never_meet_a_packed_one() {
        let mut g = Graph::default();
        let others = [
            "uid-p1",
            "0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9",
            "0f1e2d3c-4b5a-1978-8695-a4b3c2d1e0f9",
            "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0fg",
            "0f1e2d3c04b5a-4978-8695-a4b3c2d1e0f9",
            "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0-9",
            "",
        ];
        assert_eq!(g.find("uid-p1"), None);
        let uids: Vec<Uid> = others.iter().map(|t| g.intern(t)).collect();
        for (t, u) in others.iter().zip(&uids) {
            assert!(!u.is_packed(), "{t:?}");
            assert_eq!(g.text(*u), *t);
            assert_eq!(g.intern(t), *u);
        }
        let packed = g.intern("00000000-0000-4000-8000-000000000000");
        assert!(!uids.contains(&packed));
        assert_eq!(g.cmp_uid(uids[0], packed), Ordering::Greater);
    }

    #[test]
    fn an_owner_of_many_keeps_its_dependents_in_a_set_and_leaves_when_empty() {
        let mut g = Graph::default();
        let owner = g.intern("owner");
        let deps: Vec<Uid> = (0..FEW as u64 + 10)
            .map(|i| Uid {
                hi: VERSION_4,
                lo: i,
            })
            .collect();
        for (i, d) in deps.iter().enumerate() {
            g.add_node(*d, Kind::Pod, "ns", &format!("p{i:03}"));
            g.add_dependent(owner, *d);
            g.add_dependent(owner, *d);
        }
        assert!(matches!(g.dependents[&owner], Dependents::Many(_)));
        let sorted = g.sorted_dependents(owner, false);
        assert_eq!(sorted.len(), deps.len());
        assert!(sorted.windows(2).all(|w| w[0].0 < w[1].0));
        for d in &deps {
            g.remove_dependent(owner, *d);
        }
        assert!(!g.has_dependents(owner));
    }
}
