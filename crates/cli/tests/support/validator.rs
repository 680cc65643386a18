//! A JSON Schema (draft-07) validator for the keywords `kubeplane schema` uses, and no more:
//! a keyword it does not know fails the test, so the schema cannot use one that goes unchecked.

use serde_json::Value;

/// Keywords that only annotate (editors show them); nothing to check.
const ANNOTATIONS: [&str; 5] = ["$schema", "title", "description", "format", "definitions"];

pub struct Validator<'a> {
    root: &'a Value,
}

impl<'a> Validator<'a> {
    pub fn new(root: &'a Value) -> Self {
        Validator { root }
    }

    /// Every way `value` breaks the schema, as `path: problem`.
    pub fn errors(&self, value: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        self.check(self.root, value, "$", &mut errors);
        errors
    }

    fn resolve(&self, reference: &str) -> &'a Value {
        let name = reference
            .strip_prefix("#/definitions/")
            .unwrap_or_else(|| panic!("unsupported $ref {reference}"));
        self.root["definitions"]
            .get(name)
            .unwrap_or_else(|| panic!("$ref to a missing definition {name}"))
    }

    fn check(&self, schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
        let Value::Object(s) = schema else {
            panic!("{path}: a schema is an object, found {schema}");
        };
        for (keyword, arg) in s {
            match keyword.as_str() {
                k if ANNOTATIONS.contains(&k) => {}
                "$ref" => self.check(self.resolve(arg.as_str().unwrap()), v, path, errors),
                "type" => {
                    let types: Vec<&str> = match arg {
                        Value::String(t) => vec![t.as_str()],
                        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                        _ => panic!("{path}: type {arg}"),
                    };
                    if !types.iter().any(|t| has_type(v, t)) {
                        errors.push(format!(
                            "{path}: expected {}, found {v}",
                            types.join(" or ")
                        ));
                    }
                }
                "enum" => {
                    if !arg.as_array().unwrap().contains(v) {
                        errors.push(format!("{path}: {v} is not one of {arg}"));
                    }
                }
                "const" => {
                    if arg != v {
                        errors.push(format!("{path}: expected {arg}, found {v}"));
                    }
                }
                "pattern" => {
                    if let Value::String(text) = v {
                        let re = regex::Regex::new(arg.as_str().unwrap()).unwrap();
                        if !re.is_match(text) {
                            errors.push(format!("{path}: {text:?} does not match {arg}"));
                        }
                    }
                }
                "minimum" => {
                    if let Some(n) = v.as_f64() {
                        if n < arg.as_f64().unwrap() {
                            errors.push(format!("{path}: {n} is less than {arg}"));
                        }
                    }
                }
                "required" => {
                    if let Value::Object(m) = v {
                        for k in arg.as_array().unwrap().iter().filter_map(Value::as_str) {
                            if !m.contains_key(k) {
                                errors.push(format!("{path}: {k} is required"));
                            }
                        }
                    }
                }
                "properties" => {
                    if let Value::Object(m) = v {
                        for (k, sub) in arg.as_object().unwrap() {
                            if let Some(x) = m.get(k) {
                                self.check(sub, x, &format!("{path}.{k}"), errors);
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    if let Value::Object(m) = v {
                        let known = s.get("properties").and_then(Value::as_object);
                        for (k, x) in m {
                            if known.is_some_and(|p| p.contains_key(k)) {
                                continue;
                            }
                            match arg {
                                Value::Bool(true) => {}
                                Value::Bool(false) => {
                                    errors.push(format!("{path}: unknown field {k}"))
                                }
                                sub => self.check(sub, x, &format!("{path}.{k}"), errors),
                            }
                        }
                    }
                }
                "items" => {
                    if let Value::Array(xs) = v {
                        for (i, x) in xs.iter().enumerate() {
                            self.check(arg, x, &format!("{path}[{i}]"), errors);
                        }
                    }
                }
                "anyOf" | "oneOf" => {
                    let n_valid = arg
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|sub| {
                            let mut e = Vec::new();
                            self.check(sub, v, path, &mut e);
                            e.is_empty()
                        })
                        .count();
                    let ok = if keyword == "anyOf" {
                        n_valid >= 1
                    } else {
                        n_valid == 1
                    };
                    if !ok {
                        errors.push(format!(
                            "{path}: {keyword}: {n_valid} of the alternatives match"
                        ));
                    }
                }
                "if" => {
                    let mut e = Vec::new();
                    self.check(arg, v, path, &mut e);
                    if e.is_empty() {
                        if let Some(then) = s.get("then") {
                            self.check(then, v, path, errors);
                        }
                    }
                }
                "then" => {} // With "if".
                other => panic!("{path}: the validator does not check the keyword {other}"),
            }
        }
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        _ => panic!("unknown type {t}"),
    }
}
