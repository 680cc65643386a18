//! The API server's validation of the kinds kubeplane serves (upstream `pkg/apis/*/validation`
//! and `apimachinery/pkg/api/validation`, the parts that matter to what kubeplane simulates),
//! shared by the scenario parser, [`crate::ApiClient`] and the HTTP server.
//!
//! - ObjectMeta, names, labels, annotations, label selectors: [`meta`];
//! - quantities and container resources: [`resources`];
//! - the pod spec (containers, tolerations, topology spread, restart policy): [`pod`];
//! - node affinity and pod (anti-)affinity terms: [`affinity`];
//! - nodes and taints: [`node`];
//! - Deployments and ReplicaSets: [`apps`];
//! - PodDisruptionBudgets: [`policy`];
//! - PriorityClasses: [`scheduling`];
//! - CustomResourceDefinitions and the resource type each defines: [`apiextensions`].
//!
//! Errors are [`FieldError`]s rendered as upstream's `field.Error`
//! (`spec.containers[0].image: Required value`). Each kind's checks stop at the first problem
//! (upstream collects every error; docs/compatibility.md); an update reports the immutable fields
//! it changes and then the first problem of the new object.

pub mod affinity;
pub mod apiextensions;
pub mod apps;
pub mod meta;
pub mod node;
pub mod pod;
pub mod policy;
pub mod resources;
pub mod scheduling;

use std::fmt;

use kubeplane_api::{ApiError, Cache, Kind, Object};

pub use apps::{check_replicas, MAX_REPLICAS};
pub use meta::{validate_annotations_size, validate_labels, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES};
pub use node::{check_taint, check_taint_effect};

/// Upstream `field.ErrorType`: what kind of problem a field has.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    /// A value the API server's decoder rejects before validation runs (an unparsable
    /// quantity): rendered as the decoder's message alone.
    Malformed,
}

impl ErrorType {
    /// Upstream's `ErrorType.String()`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
            ErrorType::Malformed => "",
        }
    }

    /// Upstream's `metav1.CauseType` of the error (the `reason` of a Status cause).
    pub fn cause_type(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid | ErrorType::Malformed => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
        }
    }
}

/// One problem at one field: upstream's `field.Error`. `value` is the bad value as upstream
/// prints it (`"2"` for a string, `3` for a number), or `None` when it is omitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub type_: ErrorType,
    pub value: Option<String>,
    pub detail: String,
}

impl FieldError {
    fn new(
        field: impl Into<String>,
        type_: ErrorType,
        value: Option<String>,
        detail: &str,
    ) -> Self {
        FieldError {
            field: field.into(),
            type_,
            value,
            detail: detail.to_string(),
        }
    }

    /// `field.Required`.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        Self::new(field, ErrorType::Required, None, detail)
    }

    /// `field.Forbidden`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self::new(field, ErrorType::Forbidden, None, detail)
    }

    /// `field.Invalid` with a value already printed (see [`quote`]).
    pub fn invalid(field: impl Into<String>, value: impl Into<String>, detail: &str) -> Self {
        Self::new(field, ErrorType::Invalid, Some(value.into()), detail)
    }

    /// `field.Invalid` with the value omitted (`Invalid value: detail`).
    pub fn invalid_omitted(field: impl Into<String>, detail: &str) -> Self {
        Self::new(field, ErrorType::Invalid, None, detail)
    }

    /// `field.Duplicate`, with an optional detail.
    pub fn duplicate(field: impl Into<String>, value: impl Into<String>, detail: &str) -> Self {
        Self::new(field, ErrorType::Duplicate, Some(value.into()), detail)
    }

    /// `field.TooLong`.
    pub fn too_long(field: impl Into<String>, detail: &str) -> Self {
        Self::new(field, ErrorType::TooLong, None, detail)
    }

    /// `field.NotSupported`: the value and the supported values, quoted, in the given order.
    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        Self::new(
            field,
            ErrorType::NotSupported,
            Some(quote(value)),
            &format!("supported values: {}", list.join(", ")),
        )
    }

    /// A decoder's message about a value that cannot be read (see [`ErrorType::Malformed`]).
    pub fn malformed(field: impl Into<String>, message: &str) -> Self {
        Self::new(field, ErrorType::Malformed, None, message)
    }

    /// Upstream's `ErrorBody`: the type, the value where it is shown, and the detail.
    pub fn body(&self) -> String {
        let mut s = match (self.type_, &self.value) {
            (ErrorType::Malformed, _) => return self.detail.clone(),
            (
                ErrorType::Required
                | ErrorType::Forbidden
                | ErrorType::TooLong
                | ErrorType::Internal,
                _,
            )
            | (_, None) => self.type_.as_str().to_string(),
            (t, Some(v)) => format!("{}: {v}", t.as_str()),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// A string value as the messages print it.
pub fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// `a.b` (or `b` when `a` is empty).
pub fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// The result of one check: the first problem found.
pub type Check = Result<(), FieldError>;

/// Upstream `field.ErrorList`, rendered as its aggregate: one error alone, several in
/// brackets joined by `, ` (each distinct message once).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldErrors(pub Vec<FieldError>);

impl FieldErrors {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn first(&self) -> Option<&FieldError> {
        self.0.first()
    }

    fn push_check(&mut self, c: Check) {
        if let Err(e) = c {
            self.0.push(e);
        }
    }

    fn into_result(self) -> Result<(), FieldErrors> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

impl From<FieldError> for FieldErrors {
    fn from(e: FieldError) -> Self {
        FieldErrors(vec![e])
    }
}

impl fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut seen: Vec<String> = Vec::new();
        for e in &self.0 {
            let m = e.to_string();
            if !seen.contains(&m) {
                seen.push(m);
            }
        }
        match seen.as_slice() {
            [one] => f.write_str(one),
            many => write!(f, "[{}]", many.join(", ")),
        }
    }
}

/// Validates an object as the API server does on create.
pub fn validate_create(obj: &Object) -> Result<(), FieldErrors> {
    let check = match obj {
        Object::Pod(p) => pod::validate_pod(p),
        Object::Node(n) => node::validate_node(n),
        Object::Namespace(n) => meta::validate_namespace(n),
        Object::ReplicaSet(rs) => apps::validate_replica_set(rs),
        Object::Deployment(d) => apps::validate_deployment(d),
        Object::PriorityClass(pc) => scheduling::validate_priority_class(pc),
        Object::PodDisruptionBudget(pdb) => policy::validate_pdb(pdb),
        Object::Lease(_) => Ok(()),
        Object::Other(o)
            if o.type_.kind == "CustomResourceDefinition"
                && o.type_.group == "apiextensions.k8s.io" =>
        {
            apiextensions::validate_crd(o)
        }
        // The kinds kubeplane only stores: their metadata, as every kind's validation checks.
        Object::Other(o) => meta::validate_meta(
            &o.metadata,
            "metadata",
            meta::NameRule::PathSegment,
            o.type_.namespaced,
        ),
    };
    check.map_err(FieldErrors::from)
}

/// Validates an update of `old` to `new` as the API server does (upstream's `ValidateXUpdate`):
/// the fields that may not change, then the new object as on create.
pub fn validate_update(old: &Object, new: &Object) -> Result<(), FieldErrors> {
    if let (Object::Lease(o), Object::Lease(n)) = (old, new) {
        // A Lease's only update rule is the immutable uid; checked here without the general
        // path, because node agents renew a Lease every 10 s (a day of 1000 nodes is 8.6
        // million updates).
        return match n.metadata.uid.as_deref().filter(|u| !u.is_empty()) {
            Some(uid) if o.metadata.uid.as_deref() != Some(uid) => Err(FieldErrors::from(
                meta::immutable("metadata.uid".into(), quote(uid)),
            )),
            _ => Ok(()),
        };
    }
    let mut errs = FieldErrors::default();
    errs.0.extend(meta::validate_meta_update(
        old.meta(),
        new.meta(),
        "metadata",
    ));
    match (old, new) {
        (Object::ReplicaSet(o), Object::ReplicaSet(n)) => {
            errs.push_check(apps::selector_unchanged(
                o.spec.as_ref().map(|s| &s.selector),
                n.spec.as_ref().map(|s| &s.selector),
            ));
        }
        (Object::Deployment(o), Object::Deployment(n)) => {
            errs.push_check(apps::selector_unchanged(
                o.spec.as_ref().map(|s| &s.selector),
                n.spec.as_ref().map(|s| &s.selector),
            ));
        }
        (Object::PriorityClass(o), Object::PriorityClass(n)) => {
            // Upstream validates only what may not change in a PriorityClass update.
            errs.0
                .extend(scheduling::validate_priority_class_update(o, n));
            return errs.into_result();
        }
        _ => {}
    }
    if let Err(e) = validate_create(new) {
        errs.0.extend(e.0);
    }
    errs.into_result()
}

/// Upstream's `schema.GroupKind.String()` of a kind: `Pod`, `Deployment.apps`.
pub fn group_kind(kind: Kind) -> String {
    match kind.api_version().split_once('/') {
        Some((group, _)) => format!("{}.{group}", kind.as_str()),
        None => kind.as_str().to_string(),
    }
}

/// The message of upstream's `NewInvalid`: `Pod "web-1" is invalid: spec...: Required value`.
pub fn invalid_message(kind: Kind, name: &str, errs: &FieldErrors) -> String {
    format!("{} {} is invalid: {errs}", group_kind(kind), quote(name))
}

/// The API error of an invalid object: `Invalid`, whose message is the errors' aggregate.
pub fn invalid(obj: &Object, errs: &FieldErrors) -> ApiError {
    ApiError::Invalid {
        key: obj.key(),
        message: errs.to_string(),
    }
}

/// The create-time validation of [`crate::ApiClient`].
pub fn check_create(obj: &Object) -> Result<(), ApiError> {
    validate_create(obj).map_err(|e| invalid(obj, &e))
}

/// What the API server does to an object on create before storing it, in upstream's order:
/// the mutating admission plugins ([`crate::admission::admit_create`]), then validation.
pub fn admit_and_validate_create(obj: Object, cache: &dyn Cache) -> Result<Object, ApiError> {
    let obj = crate::admission::admit_create(obj, cache)?;
    check_create(&obj)?;
    Ok(obj)
}

/// The update-time validation of [`crate::ApiClient`]; without a stored object there is
/// nothing to check (the update fails with `NotFound`, as upstream's reads the old object
/// first).
pub fn check_update(old: Option<&Object>, new: &Object) -> Result<(), ApiError> {
    match old {
        Some(old) => validate_update(old, new).map_err(|e| invalid(new, &e)),
        None => Ok(()),
    }
}
