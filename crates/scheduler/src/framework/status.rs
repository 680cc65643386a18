//! Plugin status codes and statuses (upstream `framework.Status`).

use serde::Serialize;

/// What a plugin says about a pod (and a node).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum Code {
    /// The plugin ran and the pod may proceed.
    #[default]
    Success,
    /// Something went wrong that is not the pod's fault; the pod is retried after backoff.
    Error,
    /// The pod does not fit, but preemption (removing pods) might make it fit.
    Unschedulable,
    /// The pod does not fit, and removing pods cannot change that.
    UnschedulableAndUnresolvable,
    /// Permit: the pod waits before binding.
    Wait,
    /// PreFilter/PreScore: this plugin has nothing to do for the pod in this cycle.
    Skip,
    /// The pod waits for something outside the scheduler.
    Pending,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
            Code::Pending => "Pending",
        }
    }
}

/// The result of running a plugin: a code, reasons, and the plugin that produced it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Status {
    pub code: Code,
    pub reasons: Vec<String>,
    /// The plugin that produced the status ("" until the framework sets it).
    pub plugin: &'static str,
}

impl Status {
    pub fn success() -> Status {
        Status::default()
    }
    pub fn new(code: Code, reason: impl Into<String>) -> Status {
        Status {
            code,
            reasons: vec![reason.into()],
            plugin: "",
        }
    }
    pub fn with_reasons(code: Code, reasons: Vec<String>) -> Status {
        Status {
            code,
            reasons,
            plugin: "",
        }
    }
    pub fn unschedulable(reason: impl Into<String>) -> Status {
        Status::new(Code::Unschedulable, reason)
    }
    pub fn unresolvable(reason: impl Into<String>) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, reason)
    }
    pub fn error(message: impl Into<String>) -> Status {
        Status::new(Code::Error, message)
    }
    pub fn skip() -> Status {
        Status {
            code: Code::Skip,
            reasons: Vec::new(),
            plugin: "",
        }
    }
    pub fn plugin(mut self, name: &'static str) -> Status {
        self.plugin = name;
        self
    }
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }
    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }
    /// Unschedulable, UnschedulableAndUnresolvable or Pending.
    pub fn is_rejected(&self) -> bool {
        matches!(
            self.code,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending
        )
    }
    /// The reasons joined with ", " (upstream `Status.Message`).
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }
}
