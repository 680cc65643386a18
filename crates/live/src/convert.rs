//! Between kubeplane's [`Object`]s and what kube-rs sends and receives: objects from JSON, the
//! `ApiResource` of a [`Kind`], and kube-rs errors as [`ApiError`]s with their status reason.

use kube::core::{ApiResource, GroupVersionKind};
use kubeplane_api::{ApiError, Kind, Object, ObjectKey};

/// The resource kube-rs's dynamic API addresses for a kind.
pub fn api_resource(kind: Kind) -> ApiResource {
    let api_version = kind.api_version();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind.as_str());
    ApiResource::from_gvk_with_plural(&gvk, kind.plural())
}

/// A kube-rs error as the [`ApiError`] its status reason names (a 504 is `Timeout`: the
/// request may still take effect). Transport failures (the server is away, a timeout) are
/// `Unavailable`: callers retry them as upstream's clients do.
pub fn api_error(key: &ObjectKey, e: kube::Error) -> ApiError {
    let kube::Error::Api(status) = e else {
        return ApiError::Unavailable {
            message: e.to_string(),
        };
    };
    let message = status.message.clone();
    let key = key.clone();
    match (status.code, status.reason.as_str()) {
        (404, _) => ApiError::NotFound { key },
        (409, "AlreadyExists") => ApiError::AlreadyExists { key },
        (409, _) => ApiError::Conflict { key },
        (410, _) => ApiError::Gone {
            requested: 0,
            oldest: 0,
        },
        (422, "Invalid") => ApiError::Invalid { key, message },
        (422, _) => ApiError::Unprocessable { message },
        (429, _) => ApiError::TooManyRequests {
            message,
            cause: None,
        },
        (403, _) => ApiError::Forbidden { message },
        (400, _) => ApiError::BadRequest { message },
        (415, _) => ApiError::UnsupportedMediaType { message },
        (413, _) => ApiError::RequestEntityTooLarge { message },
        (503, _) => ApiError::Unavailable { message },
        (504, _) => ApiError::Timeout { message },
        _ => ApiError::Internal { message },
    }
}

/// An object's resourceVersion as a number (0 when it is not one: a resourceVersion is opaque
/// to clients, and kubeplane's components use it only to order what they have seen).
pub fn resource_version(obj: &Object) -> u64 {
    obj.resource_version().parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn status(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status {
            code,
            reason: reason.into(),
            message: "m".into(),
            ..Status::default()
        }))
    }

    #[test]
    fn a_status_error_becomes_the_api_error_of_its_reason() {
        let key = ObjectKey::new(Kind::Pod, "default", "p");
        let cases: &[(u16, &str, &str)] = &[
            (404, "NotFound", "NotFound"),
            (409, "AlreadyExists", "AlreadyExists"),
            (409, "Conflict", "Conflict"),
            (422, "Invalid", "Invalid"),
            (429, "TooManyRequests", "TooManyRequests"),
            (500, "InternalError", "InternalError"),
            (503, "ServiceUnavailable", "ServiceUnavailable"),
            (504, "Timeout", "Timeout"),
        ];
        for (code, reason, want) in cases {
            let got = api_error(&key, status(*code, reason));
            assert_eq!(got.reason(), *want, "{code} {reason}");
        }
    }

    #[test]
    fn the_resource_of_a_grouped_kind_names_its_group_version_and_plural() {
        let r = api_resource(Kind::PodDisruptionBudget);
        assert_eq!(
            (r.group.as_str(), r.version.as_str(), r.plural.as_str()),
            ("policy", "v1", "poddisruptionbudgets")
        );
        let r = api_resource(Kind::Pod);
        assert_eq!((r.group.as_str(), r.api_version.as_str()), ("", "v1"));
    }

    #[test]
    fn a_pod_document_decodes_as_a_pod() {
        let v = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "resourceVersion": "42"}});
        let o = Object::from_json(&v).unwrap();
        assert!(o.as_pod().is_some());
        assert_eq!(resource_version(&o), 42);
    }
}
