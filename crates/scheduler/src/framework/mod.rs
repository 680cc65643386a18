//! The scheduling framework: plugin contract, statuses, cycle state, events, and the runner
//! that calls the plugins of a profile at each extension point.

pub mod affinity;
pub mod cycle_state;
pub mod events;
pub mod interface;
pub mod node_status;
pub mod runtime;
pub mod status;
pub mod topology;
pub mod types;

pub use affinity::{AffinityTerm, PodAffinityTerms, WeightedAffinityTerm};
pub use cycle_state::{CycleState, StateKey};
pub use events::{
    ActionType, ClusterEvent, ClusterEventWithHint, EventObject, EventResource, QueueingHint,
};
pub use interface::*;
pub use node_status::{NodeToStatus, StatusId};
pub use runtime::{run_filters, Framework, PluginSet, ReusedScores, ScoreTable};
pub use status::{Code, Reason, Reasons, Status};
pub use types::{HostPort, NodeInfo, PodInfo, QueuedPodInfo};
