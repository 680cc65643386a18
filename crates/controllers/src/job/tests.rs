//! Tests of the Job controller.
