//! Per-cycle plugin state (upstream `CycleState`): data a plugin computes in PreFilter or
//! PreScore and reads in Filter or Score. Cloned for preemption dry runs and the nominated-pods
//! filter pass.

use std::any::Any;
use std::collections::BTreeSet;

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

/// Keys are plugin constants, so comparing addresses first avoids string comparisons on the
/// per-node hot path.
#[inline]
fn same_key(a: &str, b: &str) -> bool {
    (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b
}

#[derive(Default)]
pub struct CycleState {
    entries: Vec<(&'static str, Box<dyn StateData>)>,
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
            entries: self
                .entries
                .iter()
                .map(|(k, v)| (*k, v.as_ref().clone_box()))
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

    pub fn write<T: StateData>(&mut self, key: &'static str, value: T) {
        if let Some(e) = self.entries.iter_mut().find(|(k, _)| *k == key) {
            e.1 = Box::new(value);
        } else {
            self.entries.push((key, Box::new(value)));
        }
    }

    pub fn read<T: 'static>(&self, key: &'static str) -> Option<&T> {
        self.entries
            .iter()
            .find(|(k, _)| same_key(k, key))
            .and_then(|(_, v)| v.as_ref().as_any().downcast_ref::<T>())
    }

    pub fn read_mut<T: 'static>(&mut self, key: &'static str) -> Option<&mut T> {
        self.entries
            .iter_mut()
            .find(|(k, _)| same_key(k, key))
            .and_then(|(_, v)| v.as_mut().as_any_mut().downcast_mut::<T>())
    }
}
