//! Reading YAML documents into JSON values, as strictly as `kubectl` does and in bounded time:
//!
//! - a mapping that holds a key twice is an error (kubectl's strict decoding: `key "name"
//!   already set in map`), where a plain `serde_json::Value` would keep the last value;
//! - flow collections (`[`, `{`) nested deeper than [`MAX_FLOW_DEPTH`] are an error found by a
//!   linear pre-scan of the text, before the YAML parser sees it: the parser takes time
//!   quadratic in the nesting depth before its own recursion limit (128) stops it (100,000 `[`
//!   took 39 s).

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// How deeply flow collections may nest. Kubernetes manifests nest a few levels deep; the YAML
/// parser itself stops at 128 levels of any kind.
pub(crate) const MAX_FLOW_DEPTH: usize = 100;

/// Where flow collections nest deeper than [`MAX_FLOW_DEPTH`]: the document (0-based), the
/// line and the column (1-based) of the bracket that goes one level too deep.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TooDeep {
    pub doc_index: usize,
    pub line: usize,
    pub column: usize,
}

/// Scans a YAML stream for flow collections nested deeper than [`MAX_FLOW_DEPTH`], in one
/// pass. It follows only what matters for nesting: comments, quoted scalars, document markers
/// and brackets that start a value, so a bracket inside a plain scalar such as `echo [x]` does
/// not count.
pub(crate) fn check_flow_depth(text: &str) -> Result<(), TooDeep> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut doc_index = 0usize;
    // Whether the current document has begun (content, or an explicit `---`).
    let mut doc_started = false;
    let mut line = 1usize;
    let mut line_start = 0usize;
    // The last byte that was not a space or tab on this line (None at its start).
    let mut prev: Option<u8> = None;
    let mut i = 0usize;
    while i < bytes.len() {
        let c = bytes[i];
        if i == line_start && depth == 0 {
            match document_marker(&bytes[i..]) {
                Some(b'-') => {
                    doc_index += usize::from(doc_started);
                    doc_started = true;
                    i += 3;
                    prev = None;
                    continue;
                }
                Some(_) => {
                    i += 3;
                    continue;
                }
                None => {}
            }
        }
        let after_space = i > 0 && matches!(bytes[i - 1], b' ' | b'\t');
        let starts_value = starts_value(prev, after_space, depth);
        match c {
            b'\n' => {
                line += 1;
                line_start = i + 1;
                prev = None;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' if i == line_start || after_space => {
                i += bytes[i..].iter().take_while(|&&b| b != b'\n').count();
                continue;
            }
            b'"' | b'\'' if starts_value => {
                i = skip_quoted(bytes, i, &mut line, &mut line_start);
            }
            b'[' | b'{' if starts_value || depth > 0 => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return Err(TooDeep {
                        doc_index,
                        line,
                        column: text[line_start..i].chars().count() + 1,
                    });
                }
            }
            b']' | b'}' if depth > 0 => depth -= 1,
            _ => {}
        }
        doc_started = true;
        prev = Some(c);
        i += 1;
    }
    Ok(())
}

/// Whether a bracket or quote after `prev` (the last non-blank byte of the line) starts a value:
/// at the start of a line, after an indicator and a space (`key: [`, `- [`), or inside a flow
/// collection after `,`, `[` or `{`.
fn starts_value(prev: Option<u8>, after_space: bool, depth: usize) -> bool {
    match prev {
        None => true,
        Some(b':' | b'-' | b'?') => after_space,
        Some(b',' | b'[' | b'{') => depth > 0,
        _ => false,
    }
}

/// The document marker (`---` or `...`, followed by white space or the end) that `rest` starts
/// with: its first byte.
fn document_marker(rest: &[u8]) -> Option<u8> {
    let ends = rest
        .get(3)
        .is_none_or(|&b| b == b' ' || b == b'\t' || b == b'\n' || b == b'\r');
    [b"---", b"..."]
        .into_iter()
        .find(|m| ends && rest.starts_with(*m))
        .map(|m| m[0])
}

/// Skips the quoted scalar whose opening quote is at `start` (`\"` escapes in double quotes;
/// `''` in single quotes closes and reopens, which comes to the same) and returns the place of
/// its closing quote, counting the lines it spans.
fn skip_quoted(bytes: &[u8], start: usize, line: &mut usize, line_start: &mut usize) -> usize {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() && bytes[i] != quote {
        if quote == b'"' && bytes[i] == b'\\' {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == b'\n' {
            *line += 1;
            *line_start = i + 1;
        }
        i += 1;
    }
    i
}

/// A duplicate key found while reading a document: the path of the mapping's entry
/// (`metadata.name`) and the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DuplicateKey {
    pub path: String,
    pub key: String,
}

/// Reads one document into a `serde_json::Value` exactly as `Value::deserialize` does, except
/// that a mapping holding a key twice is an error, recorded in `duplicate`.
pub(crate) struct StrictValue<'a> {
    pub path: String,
    pub duplicate: &'a RefCell<Option<DuplicateKey>>,
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        use serde::Deserialize;
        Number::deserialize(de::value::I128Deserializer::<E>::new(v)).map(Value::Number)
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        use serde::Deserialize;
        Number::deserialize(de::value::U128Deserializer::<E>::new(v)).map(Value::Number)
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            let seed = StrictValue {
                path: format!("{}[{}]", self.path, out.len()),
                duplicate: self.duplicate,
            };
            match seq.next_element_seed(seed)? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = child(&self.path, &key);
            if out.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some(DuplicateKey {
                    path,
                    key: key.clone(),
                });
                return Err(de::Error::custom(format!("key {key:?} already set in map")));
            }
            let value = map.next_value_seed(StrictValue {
                path,
                duplicate: self.duplicate,
            })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep(n: usize) -> String {
        format!("a: {}\n", "[".repeat(n))
    }

    #[test]
    fn flow_nesting_up_to_the_limit_passes_and_one_more_level_fails_at_its_bracket() {
        assert_eq!(check_flow_depth(&deep(MAX_FLOW_DEPTH)), Ok(()));
        assert_eq!(
            check_flow_depth(&deep(MAX_FLOW_DEPTH + 1)),
            Err(TooDeep {
                doc_index: 0,
                line: 1,
                column: 4 + MAX_FLOW_DEPTH
            })
        );
    }

    #[test]
    fn closed_collections_do_not_add_up() {
        let text = "a: [[1], [2]]\n".repeat(10 * MAX_FLOW_DEPTH);
        assert_eq!(check_flow_depth(&text), Ok(()));
    }

    #[test]
    fn brackets_in_plain_and_quoted_scalars_and_comments_do_not_count() {
        let n = MAX_FLOW_DEPTH + 5;
        let open = "[".repeat(n);
        for text in [
            format!("command: echo {open}\n"),
            format!("a: \"{open}\"\n"),
            format!("a: '{open}'\n"),
            format!("a: \"x\\\"{open}\"\n"),
            format!("# {open}\na: 1\n"),
            format!("a: 1 # {open}\n"),
        ] {
            assert_eq!(check_flow_depth(&text), Ok(()), "{text}");
        }
    }

    #[test]
    fn the_document_of_a_too_deep_collection_is_counted_from_the_separators() {
        let text = format!(
            "# a comment\n---\na: 1\n---\nb: 2\n---\nc: {}",
            "{".repeat(200)
        );
        let err = check_flow_depth(&text).unwrap_err();
        assert_eq!((err.doc_index, err.line), (2, 7));
    }

    fn read(text: &str) -> Result<Value, Option<DuplicateKey>> {
        let duplicate = RefCell::new(None);
        let doc = serde_yaml_ng::Deserializer::from_str(text)
            .next()
            .expect("a document");
        let seed = StrictValue {
            path: String::new(),
            duplicate: &duplicate,
        };
        seed.deserialize(doc).map_err(|_| duplicate.take())
    }

    #[test]
    fn a_duplicate_key_is_an_error_naming_its_path() {
        let err = read("metadata:\n  name: p\n  name: q\n").unwrap_err();
        assert_eq!(
            err,
            Some(DuplicateKey {
                path: "metadata.name".into(),
                key: "name".into()
            })
        );
        let err = read("spec:\n  containers:\n  - {name: a, name: b}\n").unwrap_err();
        assert_eq!(err.unwrap().path, "spec.containers[0].name");
    }

    #[test]
    fn without_duplicates_the_value_is_what_serde_json_reads() {
        use serde::Deserialize;
        let text =
            "a: 1\nb: [x, 2.5, true, null, ~, .inf, 18446744073709551615, -3]\nc: {d: e}\n'1': 2\n";
        let plain = Value::deserialize(serde_yaml_ng::Deserializer::from_str(text).next().unwrap())
            .unwrap();
        assert_eq!(read(text).unwrap(), plain);
    }
}
