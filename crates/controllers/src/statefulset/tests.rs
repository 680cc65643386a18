//! Tests of the StatefulSet controller.
