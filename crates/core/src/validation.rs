//! Name and label checks of the API server (upstream `apimachinery/pkg/util/validation`):
//! qualified names (label keys, toleration keys, resource names), label values and DNS-1123
//! subdomains. A valid name is accepted in one allocation-free pass over its bytes; only a
//! rejected one walks the rules, which word the reason as upstream does.

/// Checks a label key (upstream `IsQualifiedName`): an optional DNS-1123 subdomain prefix and
/// `/`, then a name of at most 63 alphanumerics, `-`, `_`, `.`, starting and ending
/// alphanumeric. Returns why not.
pub fn is_qualified_name(s: &str) -> Result<(), String> {
    // Every label key, toleration key and resource name of every object created passes through
    // here: one pass over the bytes accepts the valid ones; only a rejected name walks the rules
    // below, which say why.
    if qualified_name_ok(s.as_bytes()) {
        return Ok(());
    }
    qualified_name_rules(s)
}

/// [`is_qualified_name`] rule by rule, with the reason of the first one `s` breaks.
fn qualified_name_rules(s: &str) -> Result<(), String> {
    let name = match s.split_once('/') {
        None => s,
        Some((prefix, name)) if !name.contains('/') => {
            if prefix.is_empty() {
                return Err("prefix part must be non-empty".into());
            }
            is_dns1123_subdomain(prefix).map_err(|e| format!("prefix part {e}"))?;
            name
        }
        Some(_) => {
            return Err(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', \
                 and must start and end with an alphanumeric character, with an optional DNS \
                 subdomain prefix and '/' (e.g. 'example.com/MyName')"
                    .into(),
            )
        }
    };
    if name.is_empty() {
        return Err("name part must be non-empty".into());
    }
    if name.len() > 63 {
        return Err("name part must be no more than 63 characters".into());
    }
    if !is_label_token(name) {
        return Err(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and \
             must start and end with an alphanumeric character (e.g. 'MyName', 'my.name' or \
             '123-abc')"
                .into(),
        );
    }
    Ok(())
}

/// Checks a label value (upstream `IsValidLabelValue`): empty, or at most 63 alphanumerics,
/// `-`, `_`, `.`, starting and ending alphanumeric.
pub fn is_valid_label_value(s: &str) -> Result<(), String> {
    if s.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    if !s.is_empty() && !is_label_token(s) {
        return Err(
            "a valid label must be an empty string or consist of alphanumeric \
             characters, '-', '_' or '.', and must start and end with an alphanumeric character \
             (e.g. 'MyValue', 'my_value' or '12345')"
                .into(),
        );
    }
    Ok(())
}

/// Checks a DNS-1123 subdomain: at most 253 characters, dot-separated labels of lower-case
/// alphanumerics and `-`, each starting and ending alphanumeric.
pub fn is_dns1123_subdomain(s: &str) -> Result<(), String> {
    if subdomain_ok(s.as_bytes()) {
        return Ok(());
    }
    subdomain_rules(s)
}

/// [`is_dns1123_subdomain`] rule by rule, with the reason of the first one `s` breaks.
fn subdomain_rules(s: &str) -> Result<(), String> {
    if s.len() > 253 {
        return Err("must be no more than 253 characters".into());
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty()
            && b.first().is_some_and(alnum)
            && b.last().is_some_and(alnum)
            && b.iter().all(|c| alnum(c) || *c == b'-')
    };
    if s.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com')"
                .into(),
        )
    }
}

/// Whether [`is_qualified_name`] accepts `b`, in one pass and without allocating.
fn qualified_name_ok(b: &[u8]) -> bool {
    let name = match b.iter().position(|&c| c == b'/') {
        Some(i) if subdomain_ok(&b[..i]) => &b[i + 1..],
        Some(_) => return false,
        None => b,
    };
    // A second `/` is no label token character.
    (1..=63).contains(&name.len()) && is_label_token_bytes(name)
}

/// Whether [`is_dns1123_subdomain`] accepts `b`, in one pass: non-empty, at most 253 bytes,
/// dot-separated labels of lower-case alphanumerics and `-`, each starting and ending
/// alphanumeric.
fn subdomain_ok(b: &[u8]) -> bool {
    if b.len() > 253 {
        return false;
    }
    // At the start of a label (nothing read since the last dot), and the byte read last.
    let (mut label_start, mut prev) = (true, 0u8);
    for &c in b {
        match c {
            b'.' if label_start || prev == b'-' => return false,
            b'.' => label_start = true,
            b'-' if label_start => return false,
            b'a'..=b'z' | b'0'..=b'9' | b'-' => label_start = false,
            _ => return false,
        }
        prev = c;
    }
    !label_start && prev != b'-'
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, for a non-empty string.
fn is_label_token(s: &str) -> bool {
    is_label_token_bytes(s.as_bytes())
}

/// [`is_label_token`] of bytes.
fn is_label_token_bytes(b: &[u8]) -> bool {
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_pass_name_checks_accept_exactly_what_the_rules_accept() {
        // Every string of up to four bytes over an alphabet with each kind of character, and
        // longer ones around the length limits.
        let alphabet = ["a", "Z", "0", "-", "_", ".", "/", " "];
        let mut corpus = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..4 {
            last = last
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            corpus.extend(last.iter().cloned());
        }
        for n in [62, 63, 64, 252, 253, 254] {
            corpus.push("a".repeat(n));
            corpus.push(format!("example.com/{}", "b".repeat(n)));
            corpus.push(format!("{}/name", "c".repeat(n)));
            corpus.push(format!("{}.d/x", "e-f.".repeat(n / 4)));
        }
        corpus.extend(
            [
                "node.kubernetes.io/not-ready",
                "a.-b/c",
                "a-.b/c",
                "a..b/c",
                "/a",
                "a/",
                "a/b/c",
            ]
            .map(String::from),
        );
        for s in &corpus {
            assert_eq!(
                qualified_name_ok(s.as_bytes()),
                qualified_name_rules(s).is_ok(),
                "qualified name {s:?}"
            );
            assert_eq!(
                subdomain_ok(s.as_bytes()),
                subdomain_rules(s).is_ok(),
                "subdomain {s:?}"
            );
        }
    }

    #[test]
    fn qualified_names_follow_upstream_rules() {
        let cases: &[(&str, &str, bool)] = &[
            ("a simple name is valid", "app", true),
            ("a prefixed name is valid", "example.com/app", true),
            (
                "kubernetes.io names are valid",
                "kubernetes.io/hostname",
                true,
            ),
            ("an upper-case prefix is invalid", "Example.com/app", false),
            ("an empty prefix is invalid", "/app", false),
            ("an empty name is invalid", "example.com/", false),
            ("a name may not start with a dash", "-app", false),
            ("a 64-character name is invalid", &"a".repeat(64), false),
            ("dots and underscores inside are valid", "a.b_c-d", true),
        ];
        for (case, key, want) in cases {
            assert_eq!(is_qualified_name(key).is_ok(), *want, "{case}: {key:?}");
        }
    }
}
