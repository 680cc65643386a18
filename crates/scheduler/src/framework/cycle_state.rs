//! Per-cycle plugin state (upstream `CycleState`): data a plugin computes in PreFilter or
//! PreScore and reads in Filter or Score. Cloned for preemption dry runs and the nominated-pods
//! filter pass.

use std::any::Any;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Data a plugin keeps in the cycle state.
pub trait StateData: Any + Send + Sync {
    fn clone_box(&self) -> Box<dyn StateData>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone + Send + Sync> StateData for T {
    fn clone_box(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The key of one kind of cycle-state data: a plugin's `static`. Each key gets a slot number,
/// process-wide, the first time it is used, so that reading the state in Filter or Score (once
/// per node) is an index, not a search among the keys.
pub struct StateKey {
    name: &'static str,
    /// The slot plus one; 0 until the key is first used.
    slot: AtomicUsize,
}

/// How many keys have a slot.
static N_SLOTS: AtomicUsize = AtomicUsize::new(0);

impl StateKey {
    pub const fn new(name: &'static str) -> StateKey {
        StateKey {
            name,
            slot: AtomicUsize::new(0),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    #[inline]
    fn slot(&self) -> usize {
        match self.slot.load(Ordering::Relaxed) {
            0 => self.assign(),
            s => s - 1,
        }
    }

    #[cold]
    fn assign(&self) -> usize {
        let next = N_SLOTS.fetch_add(1, Ordering::Relaxed) + 1;
        // Two threads may race for the first use: the first to store wins, the other's
        // number is left unused.
        match self
            .slot
            .compare_exchange(0, next, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => next - 1,
            Err(won) => won - 1,
        }
    }
}

/// Prints the key's name, quoted (as the plugins' error messages show it).
impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.name, f)
    }
}

#[derive(Default)]
pub struct CycleState {
    /// By key slot: the data written under that key.
    slots: Vec<Option<Box<dyn StateData>>>,
    /// Plugins whose PreFilter returned Skip: their Filter is not run.
    pub skip_filter_plugins: BTreeSet<&'static str>,
    /// Plugins whose PreScore returned Skip: their Score is not run.
    pub skip_score_plugins: BTreeSet<&'static str>,
    /// The places in the snapshot's node list of the nodes that PreScore and Score get in
    /// this cycle, when the scheduler supplies them (otherwise empty). Plugins that keep
    /// per-place results read these instead of looking into each NodeInfo.
    pub node_places: Vec<usize>,
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        CycleState {
            slots: self
                .slots
                .iter()
                .map(|v| v.as_ref().map(|v| v.as_ref().clone_box()))
                .collect(),
            skip_filter_plugins: self.skip_filter_plugins.clone(),
            skip_score_plugins: self.skip_score_plugins.clone(),
            node_places: self.node_places.clone(),
        }
    }
}

impl CycleState {
    pub fn new() -> CycleState {
        CycleState::default()
    }

    pub fn write<T: StateData>(&mut self, key: &StateKey, value: T) {
        let slot = key.slot();
        if self.slots.len() <= slot {
            self.slots.resize_with(slot + 1, || None);
        }
        self.slots[slot] = Some(Box::new(value));
    }

    #[inline]
    pub fn read<T: 'static>(&self, key: &StateKey) -> Option<&T> {
        self.slots
            .get(key.slot())?
            .as_ref()?
            .as_ref()
            .as_any()
            .downcast_ref::<T>()
    }

    pub fn read_mut<T: 'static>(&mut self, key: &StateKey) -> Option<&mut T> {
        self.slots
            .get_mut(key.slot())?
            .as_mut()?
            .as_mut()
            .as_any_mut()
            .downcast_mut::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static A: StateKey = StateKey::new("TestKeyA");
    static B: StateKey = StateKey::new("TestKeyB");

    #[test]
    fn each_key_reads_what_was_written_under_it() {
        let mut state = CycleState::new();
        assert_eq!(state.read::<u32>(&A), None);
        state.write(&B, String::from("b"));
        assert_eq!(state.read::<u32>(&A), None);
        state.write(&A, 7u32);
        assert_eq!(state.read::<u32>(&A), Some(&7));
        assert_eq!(state.read::<String>(&B).map(String::as_str), Some("b"));
        // The wrong type reads nothing.
        assert_eq!(state.read::<u64>(&A), None);
        *state.read_mut::<u32>(&A).unwrap() += 1;
        state.write(&B, String::from("c"));
        let copy = state.clone();
        state.write(&A, 1u32);
        assert_eq!(copy.read::<u32>(&A), Some(&8));
        assert_eq!(copy.read::<String>(&B).map(String::as_str), Some("c"));
        assert_eq!(state.read::<u32>(&A), Some(&1));
        assert_ne!(A.slot(), B.slot());
        assert_eq!(format!("{A:?}"), "\"TestKeyA\"");
        assert_eq!(A.name(), "TestKeyA");
    }
}
