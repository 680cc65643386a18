//! Container image names as the scheduler's ImageLocality plugin and cache compare them.

/// The image name with an explicit tag (upstream `normalizedImageName`): `:latest` is appended
/// when no `:` follows the last `/`, so `gcr.io/foo` and `gcr.io/foo:latest` are the same image
/// while a registry port (`host:5000/foo`) is not mistaken for a tag. A digest reference
/// (`foo@sha256:...`) already has a `:` after the last `/` and is left alone.
pub fn normalized_image_name(name: &str) -> String {
    let last_colon = name.rfind(':');
    let last_slash = name.rfind('/');
    // Upstream compares LastIndex values, where -1 means absent; None < Some(_) matches that.
    if last_colon <= last_slash {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scheduler spec 12.3 ImageLocality fact 4 and upstream `TestNormalizedImageName`.
    #[test]
    fn image_names_get_an_explicit_tag() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "a name without a tag gets latest",
                "gcr.io/foo",
                "gcr.io/foo:latest",
            ),
            (
                "a registry port is not a tag",
                "host:5000/foo",
                "host:5000/foo:latest",
            ),
            ("an explicit tag is kept", "foo:v1", "foo:v1"),
            ("a bare name gets latest", "nginx", "nginx:latest"),
            (
                "a tagged name with a registry port is kept",
                "host:5000/foo:v2",
                "host:5000/foo:v2",
            ),
            (
                "a digest reference is kept",
                "gcr.io/foo@sha256:0123456789abcdef",
                "gcr.io/foo@sha256:0123456789abcdef",
            ),
        ];
        for (case, input, want) in cases {
            assert_eq!(normalized_image_name(input), *want, "{case}");
        }
    }
}
