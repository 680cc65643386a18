//! Plugin status codes and statuses (upstream `framework.Status`).

use std::borrow::Cow;
use std::ops::Deref;

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

/// One reason of a status: most are a plugin's constant, which is then borrowed, not copied.
pub type Reason = Cow<'static, str>;

/// The reasons of a status. A single reason (the usual case: a Filter plugin rejecting a
/// node) is kept without a vector, so that a constant reason costs no allocation; a filter
/// pass over thousands of failing nodes builds one status per node.
#[derive(Clone, Debug, Default)]
pub struct Reasons(Repr);

#[derive(Clone, Debug, Default)]
enum Repr {
    #[default]
    None,
    One(Reason),
    Many(Vec<Reason>),
}

impl Reasons {
    pub fn one(reason: impl Into<Reason>) -> Reasons {
        Reasons(Repr::One(reason.into()))
    }

    pub fn push(&mut self, reason: impl Into<Reason>) {
        let reason = reason.into();
        self.0 = match std::mem::take(&mut self.0) {
            Repr::None => Repr::One(reason),
            Repr::One(first) => Repr::Many(vec![first, reason]),
            Repr::Many(mut v) => {
                v.push(reason);
                Repr::Many(v)
            }
        };
    }
}

impl Deref for Reasons {
    type Target = [Reason];
    fn deref(&self) -> &[Reason] {
        match &self.0 {
            Repr::None => &[],
            Repr::One(r) => std::slice::from_ref(r),
            Repr::Many(v) => v,
        }
    }
}

impl PartialEq for Reasons {
    fn eq(&self, other: &Reasons) -> bool {
        // One reason each (the usual case): the same borrowed constant needs no comparison of
        // its text.
        if let (Repr::One(a), Repr::One(b)) = (&self.0, &other.0) {
            return same_text(a, b) || a == b;
        }
        **self == **other
    }
}

/// Whether two reasons are the same text in the same place (a quick check before comparing).
#[inline]
fn same_text(a: &str, b: &str) -> bool {
    a.len() == b.len() && std::ptr::eq(a.as_ptr(), b.as_ptr())
}

impl Eq for Reasons {}

/// Hashes the reasons as the slice they compare as (equal reasons, equal hashes whatever
/// their representation).
impl std::hash::Hash for Reasons {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl<R: Into<Reason>> FromIterator<R> for Reasons {
    fn from_iter<I: IntoIterator<Item = R>>(iter: I) -> Reasons {
        let mut out = Reasons::default();
        out.extend(iter);
        out
    }
}

impl<R: Into<Reason>> Extend<R> for Reasons {
    fn extend<I: IntoIterator<Item = R>>(&mut self, iter: I) {
        for r in iter {
            self.push(r);
        }
    }
}

impl IntoIterator for Reasons {
    type Item = Reason;
    type IntoIter = std::vec::IntoIter<Reason>;
    fn into_iter(self) -> Self::IntoIter {
        match self.0 {
            Repr::None => Vec::new().into_iter(),
            Repr::One(r) => vec![r].into_iter(),
            Repr::Many(v) => v.into_iter(),
        }
    }
}

impl<'a> IntoIterator for &'a Reasons {
    type Item = &'a Reason;
    type IntoIter = std::slice::Iter<'a, Reason>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Serialize for Reasons {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// The result of running a plugin: a code, reasons, and the plugin that produced it.
#[derive(Clone, Debug, Default, Eq)]
pub struct Status {
    pub code: Code,
    pub reasons: Reasons,
    /// The plugin that produced the status ("" until the framework sets it).
    pub plugin: &'static str,
}

/// Field by field, as derived, with the plugin names (constants) and single reasons compared
/// by address first: interning a failing node's status compares it with the last one kept.
impl PartialEq for Status {
    fn eq(&self, other: &Status) -> bool {
        self.code == other.code
            && (same_text(self.plugin, other.plugin) || self.plugin == other.plugin)
            && self.reasons == other.reasons
    }
}

/// Field by field, as derived (equal statuses hash alike: their fields are equal).
impl std::hash::Hash for Status {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.code.hash(state);
        self.reasons.hash(state);
        self.plugin.hash(state);
    }
}

impl Status {
    pub fn success() -> Status {
        Status::default()
    }
    /// A status with one reason; a `&'static str` reason is kept borrowed.
    pub fn new(code: Code, reason: impl Into<Reason>) -> Status {
        Status {
            code,
            reasons: Reasons::one(reason),
            plugin: "",
        }
    }
    pub fn with_reasons<R: Into<Reason>>(
        code: Code,
        reasons: impl IntoIterator<Item = R>,
    ) -> Status {
        Status {
            code,
            reasons: reasons.into_iter().collect(),
            plugin: "",
        }
    }
    pub fn unschedulable(reason: impl Into<Reason>) -> Status {
        Status::new(Code::Unschedulable, reason)
    }
    pub fn unresolvable(reason: impl Into<Reason>) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, reason)
    }
    pub fn error(message: impl Into<Reason>) -> Status {
        Status::new(Code::Error, message)
    }
    pub fn skip() -> Status {
        Status {
            code: Code::Skip,
            reasons: Reasons::default(),
            plugin: "",
        }
    }
    pub fn plugin(mut self, name: &'static str) -> Status {
        self.plugin = name;
        self
    }
    /// The node's status when Filter plugin `name` returned this status (not a success): a
    /// rejection names the plugin, anything else becomes an error naming it.
    pub fn of_filter(self, name: &'static str) -> Status {
        if !self.is_rejected() {
            return Status::error(format!(
                "running {name:?} filter plugin: {}",
                self.message()
            ))
            .plugin(name);
        }
        self.plugin(name)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_reason_is_borrowed_and_a_formatted_one_owned() {
        const REASON: &str = "node(s) didn't match pod topology spread constraints";
        let s = Status::unschedulable(REASON);
        assert!(matches!(&s.reasons[0], Cow::Borrowed(r) if r.as_ptr() == REASON.as_ptr()));
        let s = Status::unschedulable(format!("Insufficient {}", "cpu"));
        assert!(matches!(&s.reasons[0], Cow::Owned(r) if r == "Insufficient cpu"));
        assert_eq!(s.message(), "Insufficient cpu");
    }

    #[test]
    fn reasons_keep_their_order_however_they_are_held() {
        let mut r = Reasons::default();
        assert!(r.is_empty());
        r.push("a");
        r.push(String::from("b"));
        r.push("c");
        assert_eq!(r.iter().map(|r| &**r).collect::<Vec<_>>(), ["a", "b", "c"]);
        let s = Status::with_reasons(Code::Unschedulable, ["a", "b", "c"]);
        assert_eq!(s.reasons, r);
        assert_eq!(s.message(), "a, b, c");
        assert_eq!(Reasons::one("x"), ["x"].into_iter().collect::<Reasons>());
        assert_ne!(Reasons::one("x"), Reasons::default());
        assert_ne!(Reasons::one("x"), Reasons::one("y"));
        assert_ne!(
            Reasons::one("x"),
            ["x", "y"].into_iter().collect::<Reasons>()
        );
        let owned: Vec<Reason> = r.into_iter().collect();
        assert_eq!(owned, ["a", "b", "c"]);
        assert_eq!(
            serde_json::to_string(&Status::unresolvable("y").reasons).unwrap(),
            r#"["y"]"#
        );
    }

    #[test]
    fn statuses_compare_by_text_whether_or_not_they_share_their_constants() {
        const REASON: &str = "node(s) didn't match pod affinity rules";
        let a = Status::unschedulable(REASON).plugin("InterPodAffinity");
        // The same text elsewhere (owned, or a sub-slice of another constant).
        let owned = Status::unschedulable(REASON.to_string()).plugin("InterPodAffinity");
        let prefix = &"node(s) didn't match pod affinity rules!"[..REASON.len()];
        let borrowed = Status::unschedulable(prefix).plugin(&"xInterPodAffinity"[1..]);
        assert_eq!(a, a.clone());
        assert_eq!(a, owned);
        assert_eq!(a, borrowed);
        // The same address but a shorter text, another plugin, another code: different.
        let shorter = Status::unschedulable(&REASON[..10]).plugin("InterPodAffinity");
        assert_ne!(a, shorter);
        assert_ne!(a, Status::unschedulable(REASON).plugin("InterPod"));
        assert_ne!(a, Status::unresolvable(REASON).plugin("InterPodAffinity"));
        assert_ne!(a, Status::unschedulable(REASON));
    }
}
