//! The in-tree plugins, one folder each, and the registry.
