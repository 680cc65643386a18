//! Why an API call failed, with the status reasons of `metav1.Status`.

use thiserror::Error;

use crate::object::ObjectKey;

/// Why an API call failed. Each variant is one `metav1.Status` reason; [`ApiError::code`] is
/// its HTTP status.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ApiError {
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
    #[error("{key} already exists")]
    AlreadyExists { key: ObjectKey },
    #[error("Operation cannot be fulfilled on {key}: the object has been modified; please apply your changes to the latest version and try again")]
    Conflict { key: ObjectKey },
    #[error("{key} is invalid: {message}")]
    Invalid { key: ObjectKey, message: String },
    /// The requested resourceVersion is older than the oldest one still kept.
    #[error("too old resource version: {requested} ({oldest})")]
    Gone { requested: u64, oldest: u64 },
    /// The request was refused for now (an eviction blocked by a PodDisruptionBudget, a rate
    /// limit); retry later. `cause` is the Status's detail (which budget, and why).
    #[error("{message}")]
    TooManyRequests {
        message: String,
        cause: Option<String>,
    },
    /// The request is not allowed (a budget in a state that forbids evictions, say).
    #[error("{message}")]
    Forbidden { message: String },
    /// The server failed to answer the request as asked.
    #[error("{message}")]
    Internal { message: String },
    /// The server cannot answer now (storage unavailable, no quorum); retry later.
    #[error("{message}")]
    Unavailable { message: String },
    /// The storage gave no answer in time; the operation may still complete (a write's outcome
    /// is unknown). `message` says what timed out, for the server's log.
    #[error("{message}")]
    Timeout { message: String },
    /// The request is malformed (a patch body that does not decode).
    #[error("{message}")]
    BadRequest { message: String },
    /// The request body's Content-Type is not one the resource accepts (a strategic merge
    /// patch to a custom resource).
    #[error("{message}")]
    UnsupportedMediaType { message: String },
    /// The request is too large (a JSON patch of too many operations).
    #[error("{message}")]
    RequestEntityTooLarge { message: String },
    /// The request cannot be processed, with no object's field errors to name (a JSON patch
    /// whose `test` fails): an Invalid status without details.
    #[error("{message}")]
    Unprocessable { message: String },
}

impl ApiError {
    /// The `metav1.Status` reason.
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::NotFound { .. } => "NotFound",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } => "Conflict",
            ApiError::Invalid { .. } => "Invalid",
            ApiError::Gone { .. } => "Expired",
            ApiError::TooManyRequests { .. } => "TooManyRequests",
            ApiError::Forbidden { .. } => "Forbidden",
            ApiError::Internal { .. } => "InternalError",
            ApiError::Unavailable { .. } => "ServiceUnavailable",
            ApiError::Timeout { .. } => "Timeout",
            ApiError::BadRequest { .. } => "BadRequest",
            ApiError::UnsupportedMediaType { .. } => "UnsupportedMediaType",
            ApiError::RequestEntityTooLarge { .. } => "RequestEntityTooLarge",
            ApiError::Unprocessable { .. } => "Invalid",
        }
    }

    /// The HTTP status code of the error.
    pub fn code(&self) -> u16 {
        match self {
            ApiError::NotFound { .. } => 404,
            ApiError::AlreadyExists { .. } | ApiError::Conflict { .. } => 409,
            ApiError::Invalid { .. } | ApiError::Unprocessable { .. } => 422,
            ApiError::Gone { .. } => 410,
            ApiError::TooManyRequests { .. } => 429,
            ApiError::Forbidden { .. } => 403,
            ApiError::Internal { .. } => 500,
            ApiError::Unavailable { .. } => 503,
            ApiError::Timeout { .. } => 504,
            ApiError::BadRequest { .. } => 400,
            ApiError::UnsupportedMediaType { .. } => 415,
            ApiError::RequestEntityTooLarge { .. } => 413,
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, ApiError::NotFound { .. })
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, ApiError::Conflict { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Kind;

    #[test]
    fn each_error_has_the_status_reason_and_code_of_the_api_server() {
        let key = ObjectKey::new(Kind::Pod, "default", "p");
        let cases = [
            (ApiError::NotFound { key: key.clone() }, "NotFound", 404),
            (
                ApiError::AlreadyExists { key: key.clone() },
                "AlreadyExists",
                409,
            ),
            (ApiError::Conflict { key: key.clone() }, "Conflict", 409),
            (
                ApiError::Invalid {
                    key,
                    message: "m".into(),
                },
                "Invalid",
                422,
            ),
            (
                ApiError::Gone {
                    requested: 1,
                    oldest: 5,
                },
                "Expired",
                410,
            ),
            (
                ApiError::TooManyRequests {
                    message: "m".into(),
                    cause: None,
                },
                "TooManyRequests",
                429,
            ),
            (
                ApiError::Forbidden {
                    message: "m".into(),
                },
                "Forbidden",
                403,
            ),
            (
                ApiError::Internal {
                    message: "m".into(),
                },
                "InternalError",
                500,
            ),
            (
                ApiError::Unavailable {
                    message: "m".into(),
                },
                "ServiceUnavailable",
                503,
            ),
            (
                ApiError::Timeout {
                    message: "m".into(),
                },
                "Timeout",
                504,
            ),
            (
                ApiError::BadRequest {
                    message: "m".into(),
                },
                "BadRequest",
                400,
            ),
            (
                ApiError::UnsupportedMediaType {
                    message: "m".into(),
                },
                "UnsupportedMediaType",
                415,
            ),
            (
                ApiError::RequestEntityTooLarge {
                    message: "m".into(),
                },
                "RequestEntityTooLarge",
                413,
            ),
            (
                ApiError::Unprocessable {
                    message: "m".into(),
                },
                "Invalid",
                422,
            ),
        ];
        for (err, reason, code) in cases {
            assert_eq!((err.reason(), err.code()), (reason, code), "{err}");
        }
    }
}
