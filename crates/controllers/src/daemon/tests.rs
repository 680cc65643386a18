//! Tests of the DaemonSet controller.
