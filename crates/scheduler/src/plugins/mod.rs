//! The in-tree plugins, one folder each, and the registry.
//!
//! Each plugin folder holds the plugin, its `NAME`, its reason strings as constants, its
//! queueing hints and its table tests (upstream `pkg/scheduler/framework/plugins/<name>/`).
//! [`registry`] builds plugins by name from their (JSON) args and lists the default profile.

pub mod args;
pub mod defaultbinder;
pub mod defaultpreemption;
pub mod helper;
pub mod imagelocality;
pub mod interpodaffinity;
pub mod memo;
pub mod nodeaffinity;
pub mod nodedeclaredfeatures;
pub mod nodename;
pub mod nodeports;
pub mod noderesources;
pub mod nodeunschedulable;
pub(crate) mod pods_by_namespace;
pub mod podtopologyspread;
pub mod queuesort;
pub mod registry;
pub mod schedulinggates;
pub mod tainttoleration;
#[cfg(test)]
pub mod testing;

pub use args::PluginArgsError;
pub use registry::{default_multi_point, is_known, new_plugin};
