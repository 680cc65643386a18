//! PATCH: the patch types the API server accepts and how each applies to the stored object,
//! as pure functions over JSON values (the server decodes, stores and answers).
//!
//! - JSON patch (RFC 6902) and JSON merge patch (RFC 7386) are the `json-patch` crate's, with
//!   upstream's answers when they fail (apiserver's `handlers/patch.go`): a body that does not
//!   decode is a 400, more than 10000 operations a 413, an operation that fails (a `test` that
//!   does not match, a missing path) a 422 Invalid with upstream's generic message.
//! - Strategic merge patch is [`strategic`], over the merge metadata of [`meta`] (generated from
//!   upstream's OpenAPI spec). A kind without metadata (a custom resource) refuses it with 415,
//!   as the API server does.
//! - Server-side apply (`application/apply-patch+yaml`) needs the field manager and the
//!   managers of the object: it is [`crate::apply`], which the server calls itself.

pub mod meta;
#[rustfmt::skip]
mod meta_table;
mod strategic;

#[cfg(test)]
mod tests;

use kubeplane_api::{ApiError, Kind};
use serde_json::{Map, Value};

use strategic::SmpError;

/// At most this many operations in one JSON patch (upstream's `maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10000;

/// The message of upstream's 422 for a patch that cannot be applied
/// (`NewGenericServerResponse(422, ...)`).
pub const UNPROCESSABLE_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// The kinds of PATCH request, by their Content-Type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json`: RFC 6902 operations.
    Json,
    /// `application/merge-patch+json`: RFC 7386.
    Merge,
    /// `application/strategic-merge-patch+json`: Kubernetes' strategic merge patch.
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply.
    Apply,
}

impl PatchType {
    /// In upstream's order (the order of its 415 message).
    pub const ALL: [PatchType; 4] = [
        PatchType::Json,
        PatchType::Merge,
        PatchType::StrategicMerge,
        PatchType::Apply,
    ];

    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }

    /// The patch type of a request's Content-Type header (parameters such as `; charset=utf-8`
    /// are ignored); any other is a 415 naming the accepted types.
    pub fn from_content_type(content_type: &str) -> Result<PatchType, ApiError> {
        let media_type = content_type.split(';').next().unwrap_or("").trim();
        PatchType::ALL
            .into_iter()
            .find(|t| t.content_type() == media_type)
            .ok_or_else(|| unsupported_media_type(&PatchType::ALL))
    }
}

/// The patch types a kind accepts: all for a kind with merge metadata, no strategic merge
/// patch for one without (a custom resource).
pub fn supported(kind: Kind) -> &'static [PatchType] {
    if meta::for_kind(kind).is_some() {
        &PatchType::ALL
    } else {
        &[PatchType::Json, PatchType::Merge, PatchType::Apply]
    }
}

/// Upstream's 415 (`NewUnsupportedMediaTypeError`).
fn unsupported_media_type(accepted: &[PatchType]) -> ApiError {
    let names: Vec<&str> = accepted.iter().map(|t| t.content_type()).collect();
    ApiError::UnsupportedMediaType {
        message: format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            names.join(", ")
        ),
    }
}

/// The object `current` (an object of `kind`, as JSON) with the patch `body` of `patch_type`
/// applied. Errors are the API server's: 400 for a body that does not decode, 413, 415, 422
/// for a patch that does not apply, 500 for what upstream leaves unclassified.
pub fn apply(
    kind: Kind,
    current: &Value,
    patch_type: PatchType,
    body: &[u8],
) -> Result<Value, ApiError> {
    if !supported(kind).contains(&patch_type) {
        return Err(unsupported_media_type(supported(kind)));
    }
    let patched = match patch_type {
        PatchType::Json => json_patch(current, body)?,
        PatchType::Merge => merge_patch(current, body)?,
        PatchType::StrategicMerge => strategic_merge_patch(kind, current, body)?,
        PatchType::Apply => {
            return Err(ApiError::Internal {
                message: format!("{}: unimplemented patch type", patch_type.content_type()),
            })
        }
    };
    if !patched.is_object() {
        return Err(not_an_object(kind, &patched));
    }
    Ok(patched)
}

/// JSON patch: the body must decode as a list of operations (400), of at most
/// [`MAX_JSON_PATCH_OPERATIONS`] (413); an operation that is unknown or fails is a 422.
fn json_patch(current: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let decoded: Value = serde_json::from_slice(body).map_err(bad_request)?;
    let Value::Array(ops) = decoded else {
        return Err(go_unmarshal_error(&decoded, "jsonpatch.Patch"));
    };
    if let Some(op) = ops.iter().find(|op| !op.is_object() && !op.is_null()) {
        return Err(go_unmarshal_error(op, "jsonpatch.Operation"));
    }
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(ApiError::RequestEntityTooLarge {
            message: format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                ops.len()
            ),
        });
    }
    let unprocessable = || ApiError::Unprocessable {
        message: UNPROCESSABLE_MESSAGE.to_string(),
    };
    let patch: json_patch::Patch =
        serde_json::from_value(Value::Array(ops)).map_err(|_| unprocessable())?;
    let mut doc = current.clone();
    json_patch::patch(&mut doc, &patch).map_err(|_| unprocessable())?;
    Ok(doc)
}

/// JSON merge patch: a body that is not JSON, or is a JSON scalar or null, is upstream's 400
/// "Invalid JSON Patch"; a list replaces the whole document (and then fails to decode).
fn merge_patch(current: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let invalid = || ApiError::BadRequest {
        message: "Invalid JSON Patch".to_string(),
    };
    let patch: Value = serde_json::from_slice(body).map_err(|_| invalid())?;
    match patch {
        Value::Object(_) | Value::Array(_) => {
            let mut doc = current.clone();
            json_patch::merge(&mut doc, &patch);
            Ok(doc)
        }
        _ => Err(invalid()),
    }
}

fn strategic_merge_patch(kind: Kind, current: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let Some(root) = meta::for_kind(kind) else {
        return Err(unsupported_media_type(supported(kind)));
    };
    let decoded: Value = serde_json::from_slice(body).map_err(bad_request)?;
    let patch = match decoded {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => return Err(go_unmarshal_error(&other, "map[string]interface {}")),
    };
    let Value::Object(original) = current.clone() else {
        return Err(ApiError::Internal {
            message: "the stored object is not a JSON object".to_string(),
        });
    };
    match strategic::merge(original, patch, root) {
        Ok(merged) => Ok(Value::Object(merged)),
        Err(SmpError::BadRequest(message)) => Err(ApiError::BadRequest { message }),
        Err(SmpError::Unprocessable(_)) => Err(ApiError::Unprocessable {
            message: UNPROCESSABLE_MESSAGE.to_string(),
        }),
        Err(SmpError::Other(message)) => Err(ApiError::Internal { message }),
    }
}

fn bad_request(err: serde_json::Error) -> ApiError {
    ApiError::BadRequest {
        message: err.to_string(),
    }
}

/// Go's JSON decoding error for a value of the wrong kind, as upstream answers it (400).
fn go_unmarshal_error(value: &Value, go_type: &str) -> ApiError {
    ApiError::BadRequest {
        message: format!(
            "json: cannot unmarshal {} into Go value of type {go_type}",
            json_kind(value)
        ),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A patch whose result is not an object does not decode into one: upstream's 422 Invalid on
/// the field `patch`, with the patched document as the invalid value.
fn not_an_object(kind: Kind, patched: &Value) -> ApiError {
    let version = kind.api_version().rsplit('/').next().unwrap_or("");
    let quoted = serde_json::to_string(&patched.to_string()).unwrap_or_default();
    ApiError::Unprocessable {
        message: format!(
            " \"\" is invalid: patch: Invalid value: {quoted}: json: cannot unmarshal {} into Go value of type {version}.{}",
            json_kind(patched),
            kind.as_str()
        ),
    }
}
