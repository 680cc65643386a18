//! Label selectors: compiled from `metav1.LabelSelector` or from the string form `kubectl -l`
//! uses, with upstream's validation and matching rules (`apimachinery/pkg/labels`,
//! `metav1.LabelSelectorAsSelector`).
//!
//! Matching rules worth remembering:
//! * `NotIn` and `!=` match when the key is absent;
//! * `Gt`/`Lt` need the label to be present and to parse as a base-10 `i64`;
//! * an empty selector matches everything, while [`Selector::nothing`] (what upstream uses for a
//!   nil `*LabelSelector`) matches nothing.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

pub use crate::validation::{is_dns1123_subdomain, is_qualified_name, is_valid_label_value};

/// How a requirement relates a label key to its values.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// The label is present and its value is one of the values.
    In,
    /// The label is absent, or its value is none of the values.
    NotIn,
    /// `key=value` in the string form; matches like `In` with one value.
    Equals,
    /// `key==value` in the string form; matches like `In` with one value.
    DoubleEquals,
    /// `key!=value` in the string form; matches like `NotIn` with one value.
    NotEquals,
    /// The label is present (any value).
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label is present, is an integer, and is greater than the single value.
    GreaterThan,
    /// The label is present, is an integer, and is less than the single value.
    LessThan,
}

/// Why a selector could not be built. Each message names the key or input at fault and what
/// was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("invalid label key {key:?}: {reason}")]
    InvalidKey { key: String, reason: String },
    #[error("invalid label value {value:?} for key {key:?}: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    #[error("{operator:?} is not a valid {context} operator (expected one of {expected})")]
    UnknownOperator {
        operator: String,
        context: &'static str,
        expected: &'static str,
    },
    #[error("key {key:?}: for 'in', 'notin' operators, values set can't be empty")]
    EmptyValues { key: String },
    #[error("key {key:?}: values set must be empty for exists and does not exist")]
    UnexpectedValues { key: String },
    #[error("key {key:?}: exact-match compatibility requires one single value")]
    NotOneValue { key: String },
    #[error("key {key:?}: for 'Gt', 'Lt' operators, exactly one value is required")]
    NotOneIntegerValue { key: String },
    #[error("key {key:?}: for 'Gt', 'Lt' operators, the value must be an integer, got {value:?}")]
    NotAnInteger { key: String, value: String },
    #[error("unable to parse label selector {input:?}: {reason}")]
    Syntax { input: String, reason: String },
}

/// One validated requirement: `key op values`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
    /// The single value of `Gt`/`Lt`, parsed once at construction.
    int_value: i64,
}

impl Requirement {
    /// Validates and builds a requirement (upstream `labels.NewRequirement`): the key must be a
    /// qualified name, every value a valid label value, `In`/`NotIn` need at least one value,
    /// `=`/`==`/`!=` exactly one, `Exists`/`DoesNotExist` none, `Gt`/`Lt` exactly one integer.
    pub fn new(
        key: &str,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Requirement, SelectorError> {
        is_qualified_name(key).map_err(|reason| SelectorError::InvalidKey {
            key: key.to_string(),
            reason,
        })?;
        let k = || key.to_string();
        let mut int_value = 0;
        match operator {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    return Err(SelectorError::EmptyValues { key: k() });
                }
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                if values.len() != 1 {
                    return Err(SelectorError::NotOneValue { key: k() });
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    return Err(SelectorError::UnexpectedValues { key: k() });
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    return Err(SelectorError::NotOneIntegerValue { key: k() });
                }
                int_value = values[0]
                    .parse::<i64>()
                    .map_err(|_| SelectorError::NotAnInteger {
                        key: k(),
                        value: values[0].clone(),
                    })?;
            }
        }
        for v in &values {
            is_valid_label_value(v).map_err(|reason| SelectorError::InvalidValue {
                key: k(),
                value: v.clone(),
                reason,
            })?;
        }
        Ok(Requirement {
            key: key.to_string(),
            operator,
            values,
            int_value,
        })
    }

    /// An equality requirement without validation, as upstream `SelectorFromSet` builds them
    /// (it trusts the map: a pod's `nodeSelector` is validated by the API server, not here).
    fn equals_unchecked(key: &str, value: &str) -> Requirement {
        Requirement {
            key: key.to_string(),
            operator: Operator::Equals,
            values: vec![value.to_string()],
            int_value: 0,
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }
    pub fn operator(&self) -> Operator {
        self.operator
    }
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether the labels satisfy this requirement (upstream `Requirement.Matches`).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.values.contains(v))
            }
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                // A label that is not an integer never satisfies Gt/Lt (upstream logs and
                // returns false).
                let Some(label) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    label > self.int_value
                } else {
                    label < self.int_value
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// Upstream's string form: `!k`, `k`, `k=v`, `k in (a,b)` (values sorted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            Operator::DoesNotExist => return write!(f, "!{}", self.key),
            Operator::Exists => return write!(f, "{}", self.key),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        let mut values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        values.sort_unstable();
        let joined = values.join(",");
        match self.operator {
            Operator::In | Operator::NotIn => write!(f, "{}{op}({joined})", self.key),
            _ => write!(f, "{}{op}{joined}", self.key),
        }
    }
}

/// A compiled label selector: the AND of its requirements, or the selector that matches nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// Matches no label set (upstream `labels.Nothing()`).
    Nothing,
    /// AND of requirements sorted by key; empty matches everything.
    All(Vec<Requirement>),
}

impl Selector {
    /// Matches every label set (upstream `labels.Everything()`).
    pub fn everything() -> Selector {
        Selector {
            kind: Kind::All(Vec::new()),
        }
    }
    /// Matches no label set (upstream `labels.Nothing()`).
    pub fn nothing() -> Selector {
        Selector {
            kind: Kind::Nothing,
        }
    }
    /// A selector requiring all of `requirements` (sorted by key for a stable display order).
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Selector {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector {
            kind: Kind::All(requirements),
        }
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match &self.kind {
            Kind::Nothing => false,
            Kind::All(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }

    /// True when the selector does not restrict anything (matches everything). The nothing
    /// selector is not empty, as upstream.
    pub fn is_empty(&self) -> bool {
        matches!(&self.kind, Kind::All(reqs) if reqs.is_empty())
    }

    /// True only for [`Selector::nothing`].
    pub fn matches_nothing(&self) -> bool {
        self.kind == Kind::Nothing
    }

    /// The requirements (empty for both everything and nothing).
    pub fn requirements(&self) -> &[Requirement] {
        match &self.kind {
            Kind::Nothing => &[],
            Kind::All(reqs) => reqs,
        }
    }

    /// This selector with one more requirement ANDed; nothing stays nothing.
    pub fn with_requirement(self, requirement: Requirement) -> Selector {
        match self.kind {
            Kind::Nothing => self,
            Kind::All(mut reqs) => {
                reqs.push(requirement);
                Selector::from_requirements(reqs)
            }
        }
    }
}

impl fmt::Display for Selector {
    /// Requirements joined by `,` (upstream `Selector.String()`); both everything and nothing
    /// print as the empty string, as upstream.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements().iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Compiles a `metav1.LabelSelector` (upstream `LabelSelectorAsSelector`): `matchLabels` and
/// `matchExpressions` are ANDed; a selector with neither selects everything.
pub fn from_label_selector(sel: &LabelSelector) -> Result<Selector, SelectorError> {
    let labels = sel.match_labels.as_ref();
    let exprs = sel.match_expressions.as_deref().unwrap_or_default();
    if labels.is_none_or(BTreeMap::is_empty) && exprs.is_empty() {
        return Ok(Selector::everything());
    }
    let mut reqs = Vec::new();
    for (k, v) in labels.into_iter().flatten() {
        reqs.push(Requirement::new(k, Operator::Equals, vec![v.clone()])?);
    }
    for expr in exprs {
        let op = match expr.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(SelectorError::UnknownOperator {
                    operator: other.to_string(),
                    context: "label selector",
                    expected: "In, NotIn, Exists, DoesNotExist",
                })
            }
        };
        let values = expr.values.clone().unwrap_or_default();
        reqs.push(Requirement::new(&expr.key, op, values)?);
    }
    Ok(Selector::from_requirements(reqs))
}

/// Like [`from_label_selector`], but an absent selector (`None`, a nil pointer upstream)
/// selects **nothing**, as upstream `LabelSelectorAsSelector(nil)` does. This is what a
/// ReplicaSet, a PodDisruptionBudget or a topology spread constraint without a selector gets.
/// Contrast with `Some(&LabelSelector::default())`, which selects everything.
pub fn from_optional(sel: Option<&LabelSelector>) -> Result<Selector, SelectorError> {
    match sel {
        None => Ok(Selector::nothing()),
        Some(s) => from_label_selector(s),
    }
}

/// A selector requiring every key of `m` to equal its value (upstream `SelectorFromSet`, which
/// does not validate). An empty map selects everything.
pub fn selector_from_map(m: &BTreeMap<String, String>) -> Selector {
    Selector::from_requirements(
        m.iter()
            .map(|(k, v)| Requirement::equals_unchecked(k, v))
            .collect(),
    )
}

/// Parses the string form used by `kubectl -l` (upstream `labels.Parse`):
/// `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma-separated,
/// whitespace tolerant. The empty string selects everything.
pub fn parse(s: &str) -> Result<Selector, SelectorError> {
    let tokens = lex(s);
    let mut p = Parser { tokens, pos: 0 };
    let reqs = p.parse().map_err(|reason| match reason {
        ParseFailure::Message(reason) => SelectorError::Syntax {
            input: s.to_string(),
            reason,
        },
        ParseFailure::Invalid(e) => e,
    })?;
    Ok(Selector::from_requirements(reqs))
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    In,
    NotIn,
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
    OpenPar,
    ClosePar,
    Comma,
    End,
}

impl Token {
    fn literal(&self) -> &str {
        match self {
            Token::Ident(s) => s,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Bang => "!",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::Greater => ">",
            Token::Less => "<",
            Token::OpenPar => "(",
            Token::ClosePar => ")",
            Token::Comma => ",",
            Token::End => "",
        }
    }

    /// In the values context the keywords `in`/`notin` are ordinary identifiers (`x in (in)`).
    fn in_values(self) -> Token {
        match self {
            Token::In => Token::Ident("in".into()),
            Token::NotIn => Token::Ident("notin".into()),
            t => t,
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn symbol(s: &str) -> Option<Token> {
    Some(match s {
        "=" => Token::Equals,
        "==" => Token::DoubleEquals,
        "!=" => Token::NotEquals,
        "!" => Token::Bang,
        ">" => Token::Greater,
        "<" => Token::Less,
        "(" => Token::OpenPar,
        ")" => Token::ClosePar,
        "," => Token::Comma,
        _ => return None,
    })
}

/// Splits the input into tokens: runs of special characters are read greedily as the longest
/// known operator (`!=` rather than `!`), everything else up to a special or blank character is
/// an identifier or the keyword `in`/`notin`.
fn lex(s: &str) -> Vec<Token> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && is_blank(chars[i]) {
            i += 1;
        }
        if i == chars.len() {
            out.push(Token::End);
            return out;
        }
        if is_special(chars[i]) {
            // Every single special character is a token, so this always makes progress.
            let mut best = (i + 1, symbol(&chars[i].to_string()).unwrap_or(Token::Comma));
            let mut j = i + 1;
            let mut buf: String = chars[i].to_string();
            while j < chars.len() && is_special(chars[j]) {
                buf.push(chars[j]);
                match symbol(&buf) {
                    Some(t) => best = (j + 1, t),
                    None => break,
                }
                j += 1;
            }
            out.push(best.1);
            i = best.0;
        } else {
            let start = i;
            while i < chars.len() && !is_special(chars[i]) && !is_blank(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Ident(word),
            });
        }
    }
}

enum ParseFailure {
    Message(String),
    Invalid(SelectorError),
}

impl From<String> for ParseFailure {
    fn from(s: String) -> Self {
        ParseFailure::Message(s)
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    /// The current token in the values context, without consuming it.
    fn peek(&self) -> Token {
        self.tokens
            .get(self.pos)
            .cloned()
            .unwrap_or(Token::End)
            .in_values()
    }
    fn next_raw(&mut self) -> Token {
        let t = self.tokens.get(self.pos).cloned().unwrap_or(Token::End);
        self.pos += 1;
        t
    }
    fn next(&mut self) -> Token {
        self.next_raw().in_values()
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, ParseFailure> {
        let mut reqs = Vec::new();
        loop {
            match self.peek() {
                Token::Ident(_) | Token::Bang => {
                    reqs.push(self.requirement()?);
                    match self.next() {
                        Token::End => return Ok(reqs),
                        Token::Comma => match self.peek() {
                            Token::Ident(_) | Token::Bang => {}
                            t => {
                                return Err(format!(
                                    "found '{}', expected: identifier after ','",
                                    t.literal()
                                )
                                .into())
                            }
                        },
                        t => {
                            return Err(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                t.literal()
                            )
                            .into())
                        }
                    }
                }
                Token::End => return Ok(reqs),
                t => {
                    return Err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        t.literal()
                    )
                    .into())
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, ParseFailure> {
        let mut negated = false;
        let mut tok = self.next();
        if tok == Token::Bang {
            negated = true;
            tok = self.next();
        }
        let Token::Ident(key) = tok else {
            return Err(format!("found '{}', expected: identifier", tok.literal()).into());
        };
        is_qualified_name(&key).map_err(|reason| {
            ParseFailure::Invalid(SelectorError::InvalidKey {
                key: key.clone(),
                reason,
            })
        })?;
        let unary = matches!(self.peek(), Token::End | Token::Comma);
        if negated || unary {
            // `!a` (whatever follows is then a syntax error at the caller) or a bare `a`.
            let op = if negated {
                Operator::DoesNotExist
            } else {
                Operator::Exists
            };
            return Requirement::new(&key, op, Vec::new()).map_err(ParseFailure::Invalid);
        }
        let op = match self.next_raw() {
            Token::In => Operator::In,
            Token::NotIn => Operator::NotIn,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::NotEquals => Operator::NotEquals,
            Token::Greater => Operator::GreaterThan,
            Token::Less => Operator::LessThan,
            t => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    t.literal()
                )
                .into())
            }
        };
        let values = match op {
            Operator::In | Operator::NotIn => self.value_set()?,
            _ => vec![self.exact_value()?],
        };
        Requirement::new(&key, op, values).map_err(ParseFailure::Invalid)
    }

    /// `( v1, v2, ... )`; empty entries are the empty string; the result is sorted and
    /// de-duplicated as upstream's string set is.
    fn value_set(&mut self) -> Result<Vec<String>, ParseFailure> {
        let open = self.next();
        if open != Token::OpenPar {
            return Err(format!("found '{}' expected: '('", open.literal()).into());
        }
        let mut set = std::collections::BTreeSet::new();
        match self.peek() {
            Token::ClosePar => {
                self.next();
                set.insert(String::new());
            }
            Token::Ident(_) | Token::Comma => loop {
                match self.next() {
                    Token::Ident(v) => {
                        set.insert(v);
                        match self.peek() {
                            Token::Comma => continue,
                            Token::ClosePar => {
                                self.next();
                                break;
                            }
                            t => {
                                return Err(format!(
                                    "found '{}', expected: ',' or ')'",
                                    t.literal()
                                )
                                .into())
                            }
                        }
                    }
                    Token::Comma => {
                        // "(,a)", "(a,)" and "(a,,b)" all contain the empty value.
                        if set.is_empty() {
                            set.insert(String::new());
                        }
                        match self.peek() {
                            Token::ClosePar => {
                                self.next();
                                set.insert(String::new());
                                break;
                            }
                            Token::Comma => {
                                set.insert(String::new());
                            }
                            _ => {}
                        }
                    }
                    t => {
                        return Err(format!(
                            "found '{}', expected: ',', or identifier",
                            t.literal()
                        )
                        .into())
                    }
                }
            },
            t => {
                return Err(
                    format!("found '{}', expected: ',', ')' or identifier", t.literal()).into(),
                )
            }
        }
        Ok(set.into_iter().collect())
    }

    /// The single value after `=`, `==`, `!=`, `>` or `<`; nothing before `,` or the end is the
    /// empty value.
    fn exact_value(&mut self) -> Result<String, ParseFailure> {
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Ok(String::new());
        }
        match self.next() {
            Token::Ident(v) => Ok(v),
            t => Err(format!("found '{}', expected: identifier", t.literal()).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|v| v.to_string()).collect())
            },
        }
    }

    #[test]
    fn string_selectors_match_as_upstream() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("gen", "3")]);
        let cases: &[(&str, &str, bool)] = &[
            ("the empty selector matches everything", "", true),
            ("equality matches an equal value", "app=web", true),
            ("double equality matches an equal value", "app==web", true),
            ("equality fails on a different value", "app=db", false),
            ("equality fails on an absent key", "zone=a", false),
            ("inequality fails on an equal value", "app!=web", false),
            ("inequality matches an absent key", "zone!=a", true),
            ("in matches a listed value", "app in (db,web)", true),
            ("in fails on an unlisted value", "app in (db)", false),
            ("notin matches an absent key", "zone notin (a)", true),
            (
                "notin fails on a listed value",
                "tier notin (front,back)",
                false,
            ),
            ("a bare key requires the key", "tier", true),
            ("a bare key fails when absent", "zone", false),
            ("a negated key requires absence", "!zone", true),
            ("a negated key fails when present", "!app", false),
            ("requirements are ANDed", "app=web,tier=back", false),
            (
                "whitespace is tolerated",
                "  app = web ,  tier in ( front , back ) ",
                true,
            ),
            ("greater-than compares integers", "gen>2", true),
            ("less-than compares integers", "gen<3", false),
            ("greater-than fails on a non-integer label", "app>1", false),
            (
                "keywords are values inside parentheses",
                "app notin (in,notin)",
                true,
            ),
        ];
        for (case, sel, want) in cases {
            let s = parse(sel).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(s.matches(&l), *want, "{case}: {sel:?}");
        }
    }

    #[test]
    fn malformed_string_selectors_are_rejected() {
        let cases: &[(&str, &str)] = &[
            ("a dangling comma is rejected", "a=b,"),
            ("a missing value list is rejected", "a in b"),
            ("an unclosed value list is rejected", "a in (b"),
            ("an operator without a key is rejected", "=b"),
            ("a key with a space in it is rejected", "a b=c"),
            ("a negated key followed by a value is rejected", "!a=b"),
            ("an invalid key is rejected", "-a=b"),
            ("an invalid value is rejected", "a=-b"),
            ("a non-integer Gt value is rejected", "a>b"),
            ("two slashes in a key are rejected", "a/b/c"),
        ];
        for (case, sel) in cases {
            assert!(parse(sel).is_err(), "{case}: {sel:?} parsed");
        }
    }

    #[test]
    fn value_sets_contain_the_empty_value_where_commas_leave_gaps() {
        let s = parse("x in (foo,,baz),y,z notin ()").unwrap();
        let x = &s.requirements()[0];
        assert_eq!(x.values(), ["", "baz", "foo"]);
        let z = &s.requirements()[2];
        assert_eq!(z.values(), [""]);
        assert_eq!(s.to_string(), "x in (,baz,foo),y,z notin ()");
        assert!(parse("a=").unwrap().matches(&labels(&[("a", "")])));
    }

    #[test]
    fn label_selector_objects_follow_label_selector_as_selector() {
        let l = labels(&[("app", "web"), ("env", "prod")]);
        let with = |ml: &[(&str, &str)], ex: Vec<LabelSelectorRequirement>| LabelSelector {
            match_labels: if ml.is_empty() {
                None
            } else {
                Some(labels(ml))
            },
            match_expressions: if ex.is_empty() { None } else { Some(ex) },
        };
        let cases: Vec<(&str, LabelSelector, bool)> = vec![
            (
                "an empty selector selects everything",
                with(&[], vec![]),
                true,
            ),
            (
                "matchLabels must all be equal",
                with(&[("app", "web"), ("env", "dev")], vec![]),
                false,
            ),
            (
                "matchLabels and expressions are ANDed",
                with(&[("app", "web")], vec![expr("env", "In", &["prod"])]),
                true,
            ),
            (
                "NotIn matches an absent key",
                with(&[], vec![expr("zone", "NotIn", &["a"])]),
                true,
            ),
            (
                "Exists requires the key",
                with(&[], vec![expr("zone", "Exists", &[])]),
                false,
            ),
            (
                "DoesNotExist requires absence",
                with(&[], vec![expr("zone", "DoesNotExist", &[])]),
                true,
            ),
        ];
        for (case, sel, want) in cases {
            let s = from_label_selector(&sel).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(s.matches(&l), want, "{case}");
        }
    }

    #[test]
    fn invalid_label_selector_objects_are_rejected() {
        let one = |e| LabelSelector {
            match_expressions: Some(vec![e]),
            match_labels: None,
        };
        let cases: Vec<(&str, LabelSelector)> = vec![
            ("In without values is rejected", one(expr("a", "In", &[]))),
            (
                "NotIn without values is rejected",
                one(expr("a", "NotIn", &[])),
            ),
            (
                "Exists with values is rejected",
                one(expr("a", "Exists", &["x"])),
            ),
            (
                "DoesNotExist with values is rejected",
                one(expr("a", "DoesNotExist", &["x"])),
            ),
            (
                "an unknown operator is rejected",
                one(expr("a", "Gt", &["1"])),
            ),
            (
                "an invalid key is rejected",
                one(expr("bad key", "Exists", &[])),
            ),
        ];
        for (case, sel) in cases {
            assert!(from_label_selector(&sel).is_err(), "{case}");
        }
        let err = from_label_selector(&one(expr("a", "Like", &["x"]))).unwrap_err();
        assert!(
            err.to_string()
                .contains("\"Like\" is not a valid label selector operator"),
            "{err}"
        );
    }

    #[test]
    fn an_absent_selector_selects_nothing_but_an_empty_one_selects_everything() {
        let l = labels(&[("app", "web")]);
        let none = from_optional(None).unwrap();
        assert!(!none.matches(&l) && !none.matches(&BTreeMap::new()));
        assert!(!none.is_empty() && none.matches_nothing());
        let empty = from_optional(Some(&LabelSelector::default())).unwrap();
        assert!(empty.matches(&l) && empty.is_empty());
        assert!(Selector::everything().matches(&l));
        assert!(!Selector::nothing().matches(&l));
    }

    #[test]
    fn maps_become_equality_selectors() {
        let s = selector_from_map(&labels(&[("a", "1"), ("b", "2")]));
        assert!(s.matches(&labels(&[("a", "1"), ("b", "2"), ("c", "3")])));
        assert!(!s.matches(&labels(&[("a", "1")])));
        assert!(selector_from_map(&BTreeMap::new()).is_empty());
        assert_eq!(s.to_string(), "a=1,b=2");
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn parsing_never_panics(s in "\\PC{0,40}") {
                let _ = parse(&s);
            }

            #[test]
            fn parsing_selector_shaped_input_never_panics(s in "[a-c!=(), ]{0,20}|[a-c]{1,3}( in | notin |=|!=)\\(?[a-c,]{0,6}\\)?") {
                let _ = parse(&s);
            }

            #[test]
            fn equality_selectors_agree_with_map_lookup(k in "[a-z]{1,5}", v in "[a-z0-9]{0,5}", lv in proptest::option::of("[a-z0-9]{0,5}")) {
                let s = parse(&format!("{k}={v}")).unwrap();
                let mut l = BTreeMap::new();
                if let Some(lv) = &lv { l.insert(k.clone(), lv.clone()); }
                prop_assert_eq!(s.matches(&l), lv.as_deref() == Some(v.as_str()));
                let n = parse(&format!("{k}!={v}")).unwrap();
                prop_assert_eq!(n.matches(&l), lv.as_deref() != Some(v.as_str()));
            }
        }
    }
}
