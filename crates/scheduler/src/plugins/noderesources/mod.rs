//! NodeResourcesFit and NodeResourcesBalancedAllocation (upstream
//! `plugins/noderesources/`): whether a node has room for a pod's requests, and how full or
//! how balanced the node would be with it.

pub mod args;
pub mod balanced_allocation;
pub mod fit;
mod resource_allocation;

pub use args::{
    NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs, ResourceSpec, ScoringStrategy,
    ScoringStrategyType, UtilizationShapePoint,
};
pub use balanced_allocation::BalancedAllocation;
pub use fit::Fit;

#[cfg(test)]
mod balanced_allocation_tests;
#[cfg(test)]
mod tests;
