//! Watch events: one change to one object, as an informer hands it to its handlers.

use crate::object::Object;

/// The kind of change a watch event reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change, as a watcher receives it. `old` is the previous version for Modified and Deleted
/// (the runtime's informer supplies it from its cache, as client-go's handlers receive it).
/// `resource_version` is the change's own version. For Deleted, `object` is the last stored
/// state, shared rather than copied (a pod is several kilobytes and scale-downs delete
/// thousands at once), so its `metadata.resourceVersion` is that state's; an API server
/// serving the watch stamps the event's version on it.
#[derive(Clone, Debug)]
pub struct WatchEvent {
    pub type_: EventType,
    pub object: Object,
    pub old: Option<Object>,
    pub resource_version: u64,
}
