//! `metav1.Status` error responses as kube-apiserver writes them: the reason, the code, the
//! message in upstream's words (`pods "web" not found`) and the details a client reads
//! (`name`, `group`, `kind` = the resource).

use kubeplane_api::{ApiError, Kind, ObjectKey};
use kubeplane_storage::StorageError;
use serde_json::{json, Value};

/// The message of a request the storage did not answer in time: upstream's
/// `NewTimeoutError` of a request whose context ran out while it waited for etcd.
pub const TIMEOUT_MESSAGE: &str =
    "Timeout: request did not complete within requested timeout - context deadline exceeded";

/// An error response: the HTTP status and the Status body.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl StatusError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> StatusError {
        StatusError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// The 504 of a request that ran past the server's `--request-timeout` (upstream's
    /// `WithTimeoutForNonLongRunningRequests`: `NewTimeoutError` with no retry delay).
    pub fn request_timeout() -> StatusError {
        StatusError {
            details: Some(json!({})),
            ..StatusError::new(
                504,
                "Timeout",
                "Timeout: request did not complete within the allotted timeout",
            )
        }
    }

    pub fn bad_request(message: impl Into<String>) -> StatusError {
        StatusError::new(400, "BadRequest", message)
    }

    pub fn not_found_path() -> StatusError {
        StatusError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub fn method_not_allowed(verb: &str, what: &str) -> StatusError {
        StatusError::new(
            405,
            "MethodNotAllowed",
            format!("{verb} is not supported on resources of kind {what:?}"),
        )
    }

    pub fn unsupported_media_type(content_type: &str) -> StatusError {
        StatusError::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type:?})"),
        )
    }

    pub fn unauthorized() -> StatusError {
        StatusError::new(401, "Unauthorized", "Unauthorized")
    }

    /// An `Invalid` (422) error on one field of an object, as upstream's field errors read.
    pub fn invalid(kind: Kind, name: &str, field: Option<&str>, message: &str) -> StatusError {
        let what = format!("{} {name:?}", kind.as_str());
        let message = match field {
            Some(f) => format!("{what} is invalid: {f}: Invalid value: {message}"),
            None => format!("{what} is invalid: {message}"),
        };
        StatusError {
            details: Some(json!({"name": name, "group": kind.group(), "kind": kind.as_str()})),
            ..StatusError::new(422, "Invalid", message)
        }
    }

    /// The Status JSON document.
    pub fn body(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }
}

/// `pods "web"`, `deployments.apps "web"`: how upstream's messages name an object.
fn named(key: &ObjectKey) -> String {
    format!("{} {:?}", key.kind.group_resource(), key.name)
}

fn details(key: &ObjectKey) -> Value {
    json!({"name": key.name, "group": key.kind.group(), "kind": key.kind.plural()})
}

impl From<ApiError> for StatusError {
    fn from(err: ApiError) -> StatusError {
        let code = err.code();
        let reason = err.reason();
        let (message, details) = match &err {
            ApiError::NotFound { key } => (format!("{} not found", named(key)), Some(details(key))),
            ApiError::AlreadyExists { key } => {
                (format!("{} already exists", named(key)), Some(details(key)))
            }
            ApiError::Conflict { key } => (
                format!(
                    "Operation cannot be fulfilled on {}: the object has been modified; please \
                     apply your changes to the latest version and try again",
                    named(key)
                ),
                Some(details(key)),
            ),
            ApiError::Invalid { key, message } => (
                format!("{} {:?} is invalid: {message}", key.kind.as_str(), key.name),
                Some(
                    json!({"name": key.name, "group": key.kind.group(), "kind": key.kind.as_str()}),
                ),
            ),
            ApiError::TooManyRequests { message, cause } => (
                message.clone(),
                cause
                    .as_ref()
                    .map(|c| json!({"causes": [{"reason": "DisruptionBudget", "message": c}]})),
            ),
            // upstream's Details carry retryAfterSeconds 0, which leaves them empty.
            ApiError::Timeout { .. } => (TIMEOUT_MESSAGE.to_string(), Some(json!({}))),
            other => (other.to_string(), None),
        };
        StatusError {
            code,
            reason,
            message,
            details,
        }
    }
}

impl From<StorageError> for StatusError {
    /// A read's storage error that names no object: etcd unreachable or without quorum is 503
    /// ServiceUnavailable, no answer in time 504 Timeout, anything else 500.
    fn from(err: StorageError) -> StatusError {
        match err {
            StorageError::Unreachable { message } => ApiError::Unavailable { message }.into(),
            StorageError::Timeout { message } => ApiError::Timeout { message }.into(),
            other => StatusError::new(500, "InternalError", other.to_string()),
        }
    }
}

impl StatusError {
    /// A 422 about the list options themselves (`ListOptions.meta.k8s.io "" is invalid`).
    pub fn invalid_list(message: &str) -> StatusError {
        StatusError::new(
            422,
            "Invalid",
            format!("ListOptions.meta.k8s.io \"\" is invalid: {message}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_deployment_is_named_by_its_resource_and_group_as_upstream_does() {
        let key = ObjectKey::new(Kind::Deployment, "default", "web");
        let s = StatusError::from(ApiError::NotFound { key });
        assert_eq!(s.code, 404);
        assert_eq!(s.message, "deployments.apps \"web\" not found");
        let body = s.body();
        assert_eq!(body["reason"], "NotFound");
        assert_eq!(body["details"]["kind"], "deployments");
        assert_eq!(body["details"]["group"], "apps");
    }

    #[test]
    fn storage_failures_are_503_or_504_statuses_and_other_storage_errors_500() {
        let cases = [
            (
                "etcd without quorum is ServiceUnavailable with etcd's words",
                StorageError::Unreachable {
                    message: "etcdserver: request timed out".into(),
                },
                503,
                "ServiceUnavailable",
                "etcdserver: request timed out",
            ),
            (
                "no answer in time is upstream's Timeout",
                StorageError::Timeout {
                    message: "no answer from etcd within 10s".into(),
                },
                504,
                "Timeout",
                TIMEOUT_MESSAGE,
            ),
            (
                "a failed disk is an InternalError",
                StorageError::Unavailable {
                    message: "sync failed".into(),
                },
                500,
                "InternalError",
                "storage unavailable: sync failed",
            ),
        ];
        for (case, err, code, reason, message) in cases {
            let s = StatusError::from(err);
            let body = s.body();
            assert_eq!(body["code"], code, "{case}");
            assert_eq!(body["reason"], reason, "{case}");
            assert_eq!(body["message"], message, "{case}");
            assert_eq!(body["status"], "Failure", "{case}");
        }
        let timeout = StatusError::from(StorageError::Timeout {
            message: "m".into(),
        });
        assert_eq!(timeout.body()["details"], json!({}));
    }

    #[test]
    fn a_stale_update_is_a_conflict_in_upstreams_words() {
        let key = ObjectKey::new(Kind::Pod, "default", "p");
        let s = StatusError::from(ApiError::Conflict { key });
        assert_eq!(s.code, 409);
        assert!(s.message.starts_with(
            "Operation cannot be fulfilled on pods \"p\": the object has been modified"
        ));
    }
}
