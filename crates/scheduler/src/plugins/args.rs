//! Plugin args shared by the registry and the plugins: strict decoding of a plugin's JSON
//! args (`parse_args`) and the error naming the field that is wrong (`PluginArgsError`).

use std::fmt;

use serde::de::DeserializeOwned;

/// Invalid plugin args: the field (a path relative to the args, e.g.
/// `scoringStrategy.resources[0].weight`; the config loader prefixes the plugin config's
/// path) and what is wrong with it, in upstream's words (`Invalid value: -1: ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginArgsError {
    pub field: String,
    pub message: String,
}

impl PluginArgsError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> PluginArgsError {
        PluginArgsError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for PluginArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for PluginArgsError {}

/// Decodes plugin args strictly (unknown fields are errors, as upstream's strict decoding);
/// `apiVersion` and `kind` may be present. No args decode as the type's default.
pub(crate) fn parse_args<T: DeserializeOwned + Default>(
    args: Option<&serde_json::Value>,
) -> Result<T, PluginArgsError> {
    let Some(v) = args else {
        return Ok(T::default());
    };
    let v = match v {
        serde_json::Value::Null => return Ok(T::default()),
        serde_json::Value::Object(m) => {
            let mut m = m.clone();
            m.remove("apiVersion");
            m.remove("kind");
            serde_json::Value::Object(m)
        }
        other => other.clone(),
    };
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        PluginArgsError::new(field, format!("decoding args: {}", e.inner()))
    })
}
