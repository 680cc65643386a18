//! The controller's node records: a table kept in name order for deterministic passes, with
//! an FNV-hashed name index.

use std::collections::HashMap;

use super::NodeEntry;

/// FNV-1a, for the node-name index: short keys hashed millions of times a simulated day.
#[derive(Default)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FnvBuild = std::hash::BuildHasherDefault<Fnv>;

/// The node records, kept in name order for deterministic passes, with a name index.
#[derive(Debug, Default)]
pub(super) struct NodeTable {
    names: Vec<String>,
    entries: Vec<NodeEntry>,
    index: HashMap<String, usize, FnvBuild>,
    /// Entries were appended or moved since the last sort.
    unsorted: bool,
}

impl NodeTable {
    pub(super) fn get(&self, name: &str) -> Option<&NodeEntry> {
        self.index.get(name).map(|&i| &self.entries[i])
    }

    pub(super) fn get_mut(&mut self, name: &str) -> Option<&mut NodeEntry> {
        self.index.get(name).map(|&i| &mut self.entries[i])
    }

    pub(super) fn get_or_insert_with(
        &mut self,
        name: &str,
        make: impl FnOnce() -> NodeEntry,
    ) -> &mut NodeEntry {
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                let i = self.entries.len();
                self.names.push(name.to_string());
                self.entries.push(make());
                self.index.insert(name.to_string(), i);
                self.unsorted = true;
                i
            }
        };
        &mut self.entries[i]
    }

    pub(super) fn remove(&mut self, name: &str) -> Option<NodeEntry> {
        let i = self.index.remove(name)?;
        self.names.swap_remove(i);
        let entry = self.entries.swap_remove(i);
        if i < self.entries.len() {
            self.index.insert(self.names[i].clone(), i);
            self.unsorted = true;
        }
        Some(entry)
    }

    pub(super) fn sort(&mut self) {
        if !self.unsorted {
            return;
        }
        let mut order: Vec<usize> = (0..self.names.len()).collect();
        order.sort_by(|&a, &b| self.names[a].cmp(&self.names[b]));
        let mut names = Vec::with_capacity(order.len());
        let mut entries = Vec::with_capacity(order.len());
        let mut old_names: Vec<Option<String>> = std::mem::take(&mut self.names)
            .into_iter()
            .map(Some)
            .collect();
        let mut old_entries: Vec<Option<NodeEntry>> = std::mem::take(&mut self.entries)
            .into_iter()
            .map(Some)
            .collect();
        for i in order {
            names.push(old_names[i].take().expect("each once"));
            entries.push(old_entries[i].take().expect("each once"));
        }
        self.index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        self.names = names;
        self.entries = entries;
        self.unsorted = false;
    }

    /// (name, entry) pairs in name order (after [`NodeTable::sort`]).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &NodeEntry)> {
        self.names.iter().zip(self.entries.iter())
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut NodeEntry)> {
        self.sort();
        self.names.iter().zip(self.entries.iter_mut())
    }

    /// The records in table order (name order after [`NodeTable::sort`]).
    pub(super) fn values(&self) -> impl Iterator<Item = &NodeEntry> {
        self.entries.iter()
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut NodeEntry> {
        self.entries.iter_mut()
    }
}
