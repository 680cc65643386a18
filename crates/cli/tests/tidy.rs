//! The tidy test: the crate map of ARCHITECTURE.md and the rules every source file keeps.
//!
//! - Each crate depends only on the workspace crates the map allows (dev-dependencies are
//!   free: tests run components on the in-memory registry).
//! - Nothing outside the binary reads the wall clock or an unseeded random source, except the
//!   storage's blocking waits (a timeout is not a decision) and measuring tests.
//! - Every source file starts with its `//!` doc.
//! - No function outside tests is longer than [`MAX_FN_LINES`], except those listed in
//!   [`LONG_FUNCTIONS`]; that list may only shrink (a listed function that is short now must be
//!   taken off it).
//! - Outside tests, a pod's node is read through `PodExt::node_name` (`kubeplane_api::pod`),
//!   never as the `node_name` field of a pod spec: the stored pod form keeps it outside the
//!   spec it shares. A line that reads the field of a spec that is not a stored pod's (a
//!   template's, a manifest's as written) says so with [`NOT_A_STORED_POD`].
//! - A stored pod's `metadata.labels` and `metadata.owner_references` are always `None` (the
//!   stored form keeps them outside its metadata): outside `kubeplane_api::pod_meta`, no name
//!   bound to a `StoredPod` reads or writes them (see [`stored_pod_meta_fields`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace crates each crate may depend on (its `[dependencies]`), by package name.
const CRATE_MAP: &[(&str, &[&str])] = &[
    ("kubeplane-core", &[]),
    ("kubeplane-api", &["kubeplane-core"]),
    ("kubeplane-storage", &[]),
    ("kubeplane-store", &["kubeplane-core", "kubeplane-api"]),
    (
        "kubeplane-registry",
        &[
            "kubeplane-core",
            "kubeplane-api",
            "kubeplane-store",
            "kubeplane-storage",
        ],
    ),
    ("kubeplane-scheduler", &["kubeplane-core", "kubeplane-api"]),
    (
        "kubeplane-controllers",
        &["kubeplane-core", "kubeplane-api"],
    ),
    (
        "kubeplane-sim",
        &[
            "kubeplane-core",
            "kubeplane-api",
            "kubeplane-store",
            "kubeplane-registry",
            "kubeplane-scheduler",
            "kubeplane-controllers",
        ],
    ),
    (
        "kubeplane",
        &[
            "kubeplane-core",
            "kubeplane-api",
            "kubeplane-store",
            "kubeplane-registry",
            "kubeplane-scheduler",
            "kubeplane-controllers",
            "kubeplane-sim",
            "kubeplane-storage",
            "kubeplane-server",
            "kubeplane-live",
        ],
    ),
    (
        "kubeplane-server",
        &[
            "kubeplane-core",
            "kubeplane-api",
            "kubeplane-registry",
            "kubeplane-storage",
            "kubeplane-scheduler",
            "kubeplane-controllers",
            "kubeplane-sim",
        ],
    ),
    (
        "kubeplane-live",
        &[
            "kubeplane-core",
            "kubeplane-api",
            "kubeplane-scheduler",
            "kubeplane-controllers",
        ],
    ),
];

/// Calls that read the wall clock or an unseeded random source.
const NONDETERMINISTIC: &[&str] = &[
    "SystemTime::now",
    "Instant::now",
    "thread_rng",
    "rand::rng()",
    "from_entropy",
    "from_os_rng",
    "OsRng",
    "getrandom",
];

/// Files outside the binary allowed to read the wall clock, and why.
const CLOCK_ALLOWED: &[(&str, &str)] = &[
    (
        "crates/storage/src/memory.rs",
        "the deadline of a blocking wait for a revision",
    ),
    (
        "crates/storage/src/watch.rs",
        "the deadline of a blocking wait for watch events",
    ),
    (
        "crates/storage/src/etcd_log.rs",
        "the deadline of a blocking wait for the etcd watch log",
    ),
    (
        "crates/storage/src/etcd_health.rs",
        "the pause before asking an etcd found unavailable again",
    ),
    (
        "crates/server/src/clock.rs",
        "the server's cluster clock: wall time, or a virtual clock paced by wall time",
    ),
    (
        "crates/server/src/runtime.rs",
        "how often the control plane publishes its metrics, and the monotonic time of its list-and-watch backoff",
    ),
    (
        "crates/server/src/watch.rs",
        "a watch's timeoutSeconds and bookmark interval (wall time, as upstream's)",
    ),
    (
        "crates/live/src/clock.rs",
        "the live scheduler's clock: wall time as the scheduler's instants",
    ),
    (
        "crates/live/src/leader.rs",
        "leader election: Lease times are wall times, expiry is measured on the monotonic clock",
    ),
    (
        "crates/server/src/leader.rs",
        "leader election among servers on one etcd: Lease times are wall times, expiry is measured on the monotonic clock, and a random process identity",
    ),
    (
        "crates/server/src/leader/tests.rs",
        "the election's tests wait out real lease durations",
    ),
    (
        "crates/server/src/tls.rs",
        "the admin token comes from the OS's random source",
    ),
];

const MAX_FN_LINES: usize = 70;

/// Functions longer than [`MAX_FN_LINES`] today, as `path::name`: to be split, never added to.
const LONG_FUNCTIONS: &[&str] = &[
    "crates/cli/src/bench_controllers/node_lifecycle.rs::bench_node_monitor",
    "crates/cli/src/simulate.rs::run",
    "crates/scheduler/src/config.rs::build_profile",
    "crates/scheduler/src/config.rs::resolve",
    "crates/scheduler/src/framework/runtime.rs::run_pre_filter_plugins",
    "crates/scheduler/src/plugins/defaultpreemption/evaluator.rs::preempt",
    "crates/scheduler/src/plugins/interpodaffinity/scoring.rs::node_score",
    "crates/scheduler/src/plugins/podtopologyspread/mod.rs::validate_args",
    "crates/scheduler/src/queue/mod.rs::new",
    "crates/scheduler/src/schedule_one.rs::schedule_pod",
    "crates/scheduler/src/scheduler.rs::on_pod",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// The package name and the workspace crates of the `[dependencies]` table of a manifest.
fn manifest_deps(manifest: &str) -> (String, BTreeSet<String>) {
    let mut name = String::new();
    let mut section = String::new();
    let mut deps = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        if section == "[package]" {
            if let Some(v) = line.strip_prefix("name = ") {
                name = v.trim_matches('"').to_string();
            }
        }
        if section == "[dependencies]" && line.starts_with("kubeplane") {
            let dep = line.split(['.', ' ', '=']).next().unwrap_or_default();
            deps.insert(dep.to_string());
        }
    }
    (name, deps)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.expect("an entry").path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every `.rs` file under the given folders of every crate, with its path from the
/// workspace's root.
fn crate_sources(subdirs: &[&str]) -> Vec<(String, PathBuf)> {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in crate_dirs(&root) {
        for sub in subdirs {
            rust_files(&dir.join(sub), &mut files);
        }
    }
    files
        .into_iter()
        .map(|f| (relative(&root, &f), f))
        .collect()
}

fn relative(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .expect("under the root")
        .to_string_lossy()
        .replace('\\', "/")
}

#[test]
fn each_crate_depends_only_on_the_crates_the_map_allows() {
    let root = workspace_root();
    let map: BTreeMap<&str, &[&str]> = CRATE_MAP.iter().copied().collect();
    let mut problems = Vec::new();
    for dir in crate_dirs(&root) {
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("a manifest");
        let (name, deps) = manifest_deps(&manifest);
        let Some(allowed) = map.get(name.as_str()) else {
            problems.push(format!(
                "{name} is not in the crate map: add it to CRATE_MAP and ARCHITECTURE.md"
            ));
            continue;
        };
        for dep in deps {
            if !allowed.contains(&dep.as_str()) {
                problems.push(format!("{name} may not depend on {dep}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn nothing_but_the_binary_reads_the_wall_clock_or_an_unseeded_random_source() {
    let root = workspace_root();
    let mut problems = Vec::new();
    for dir in crate_dirs(&root) {
        if dir.ends_with("cli") {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for f in files {
            let rel = relative(&root, &f);
            if CLOCK_ALLOWED.iter().any(|(p, _)| *p == rel) {
                continue;
            }
            let text = fs::read_to_string(&f).expect("a source file");
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for call in NONDETERMINISTIC {
                    if code.contains(call) {
                        problems.push(format!("{rel}:{}: {call}", i + 1));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_source_file_starts_with_its_doc() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in crate_dirs(&root) {
        rust_files(&dir.join("src"), &mut files);
        rust_files(&dir.join("tests"), &mut files);
    }
    let missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = fs::read_to_string(f).expect("a source file");
            !text.trim_start().starts_with("//!")
        })
        .map(|f| relative(&root, f))
        .collect();
    assert!(missing.is_empty(), "no //! doc: {}", missing.join(", "));
}

/// The functions of a rustfmt-formatted file outside test code, with their lengths in lines.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim_start().starts_with("#[cfg(test)]") {
            // An inline test module closes the file by convention; a `mod tests;`
            // declaration (the tests in their own file) does not, nor does a single
            // test-only item (a helper method), which alone is skipped below.
            let next = lines.get(i + 1).map(|l| l.trim()).unwrap_or_default();
            if next.starts_with("mod ") && next.ends_with('{') {
                break;
            }
        }
        let trimmed = line.trim_start();
        let is_fn = [
            "fn ",
            "pub fn ",
            "pub(crate) fn ",
            "pub(super) fn ",
            "const fn ",
        ]
        .iter()
        .any(|p| trimmed.starts_with(p));
        let is_test = i > 0 && matches!(lines[i - 1].trim(), "#[test]" | "#[cfg(test)]");
        if !is_fn || is_test {
            i += 1;
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        let name = trimmed
            .split("fn ")
            .nth(1)
            .and_then(|s| s.split(['(', '<']).next())
            .unwrap_or_default()
            .to_string();
        // The signature ends with `{` (a body) or `;` (a declaration).
        let mut j = i;
        while j < lines.len() && !lines[j].ends_with('{') && !lines[j].ends_with(';') {
            j += 1;
        }
        if j >= lines.len() || lines[j].ends_with(';') || lines[j].ends_with("{}") {
            i = j + 1;
            continue;
        }
        let close = format!("{indent}}}");
        let end = (j + 1..lines.len()).find(|&k| lines[k] == close);
        if let Some(end) = end {
            out.push((name, end - i + 1));
            i = end + 1;
        } else {
            i = j + 1;
        }
    }
    out
}

#[test]
fn functions_stay_short_and_the_list_of_long_ones_only_shrinks() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in crate_dirs(&root) {
        rust_files(&dir.join("src"), &mut files);
    }
    let mut long = BTreeSet::new();
    let mut problems = Vec::new();
    for f in files {
        let rel = relative(&root, &f);
        if rel.ends_with("/tests.rs") || rel.ends_with("testutil.rs") || rel.contains("/testing") {
            continue;
        }
        let text = fs::read_to_string(&f).expect("a source file");
        for (name, n) in function_lengths(&text) {
            if n > MAX_FN_LINES {
                let id = format!("{rel}::{name}");
                if !LONG_FUNCTIONS.contains(&id.as_str()) {
                    problems.push(format!("{id} has {n} lines (at most {MAX_FN_LINES})"));
                }
                long.insert(id);
            }
        }
    }
    for listed in LONG_FUNCTIONS {
        if !long.contains(*listed) {
            problems.push(format!(
                "{listed} is no longer over {MAX_FN_LINES} lines: take it off LONG_FUNCTIONS"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_function_scanner_measures_bodies_and_skips_declarations_and_tests() {
    let text = "\
//! doc
#[cfg(test)]
mod tests;

pub fn short() {
    a();
}

trait T {
    fn declared(&self);
}

fn spans(
    x: u32,
) -> u32 {
    x
}

#[test]
fn a_test() {
    b();
}

#[cfg(test)]
mod tests {
    fn inside() {
        c();
    }
}
";
    assert_eq!(
        function_lengths(text),
        vec![("short".to_string(), 3), ("spans".to_string(), 5)]
    );
}

/// Files that may read a pod spec's `node_name` field: the pod form's accessors and the
/// builder of k8s-openapi test pods.
const NODE_NAME_FIELD_ALLOWED: &[&str] = &["crates/api/src/pod.rs", "crates/core/src/testing.rs"];

/// The comment that marks a read of a spec's `node_name` that is not a stored pod's.
const NOT_A_STORED_POD: &str = "// not a stored pod's spec";

/// The 1-based lines of `text` before its first `#[cfg(test)]` that read the `node_name` field
/// of something that looks like a pod spec (`s.`, `spec.`, `spec().`, `unwrap().`, `?.`, or a
/// method chain's line of its own), without the [`NOT_A_STORED_POD`] mark on the line or on
/// a line of its own after it.
fn node_name_field_reads(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        // rustfmt moves a comment after an opening brace onto the next line.
        let next = lines.get(i + 1).copied().unwrap_or_default();
        if line.contains(NOT_A_STORED_POD) || next.trim() == NOT_A_STORED_POD {
            continue;
        }
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find(".node_name") {
            let after = &rest[at + ".node_name".len()..];
            let before = &rest[..at];
            rest = after;
            if after.starts_with(|c: char| c == '(' || c == '_' || c.is_alphanumeric()) {
                continue;
            }
            let segment = before
                .rsplit(|c: char| !(c.is_alphanumeric() || "_()?".contains(c)))
                .next()
                .unwrap_or_default();
            let spec_like = [
                "s", "spec", "spec()", "unwrap()", "spec?", "new_spec", "old_spec",
            ];
            if before.trim().is_empty() || spec_like.contains(&segment) || segment.ends_with(")?") {
                out.push(i + 1);
                break;
            }
        }
    }
    out
}

#[test]
fn a_pods_node_is_read_through_its_accessor() {
    let mut problems = Vec::new();
    for (rel, f) in crate_sources(&["src"]) {
        let is_test = rel.contains("/tests/") || rel.ends_with("tests.rs");
        if is_test || NODE_NAME_FIELD_ALLOWED.contains(&rel.as_str()) {
            continue;
        }
        let text = fs::read_to_string(&f).expect("a source file");
        for line in node_name_field_reads(&text) {
            problems.push(format!("{rel}:{line}: use PodExt::node_name"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_node_name_scanner_finds_field_reads_and_skips_the_rest() {
    let text = "\
let a = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
let b = spec.node_name.clone();
let c = pod
    .spec
    .node_name
    .clone();
let d = pod.node_name();
let e = self.node_name.as_deref();
let f = item.node_name;
let g = spec.node_names.clone();
let h = template.node_name.clone(); // not a stored pod's spec
let i = spec.node_name.clone(); // not a stored pod's spec
match spec.node_name.as_deref() {
    // not a stored pod's spec
#[cfg(test)]
let j = spec.node_name.clone();
";
    assert_eq!(node_name_field_reads(text), vec![1, 2, 5]);
}

/// The files that may touch a stored pod's `metadata.labels` and
/// `metadata.owner_references`: the stored form keeps both outside its `metadata` (always
/// `None` there, session 21), behind `StoredPod::labels()` and `owner_references()`, which
/// `pod_meta.rs` implements; this file holds the rule's sample violations.
const POD_META_FIELDS_ALLOWED: &[&str] =
    &["crates/api/src/pod_meta.rs", "crates/cli/tests/tidy.rs"];

/// Whether `line` starts a function (its parameters follow, on it or on the next lines).
fn starts_fn(line: &str) -> bool {
    let t = line.trim_start();
    let t = t
        .strip_prefix("pub(crate) ")
        .or_else(|| t.strip_prefix("pub(super) "));
    let t = t.unwrap_or(line.trim_start());
    let t = t.strip_prefix("pub ").unwrap_or(t);
    let t = t.strip_prefix("const ").unwrap_or(t);
    t.starts_with("fn ")
}

/// The names `code` binds to a stored pod: `name: &StoredPod` (also `&mut`, `Arc<…>`,
/// `&Arc<…>`, `Option<&…>`), `Object::Pod(name)` and `Some(name) = ….as_pod()`.
fn stored_pod_bindings(code: &str, names: &mut BTreeSet<String>) {
    let ident_before = |s: &str| -> Option<String> {
        let s = s.trim_end();
        let start = s
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let id = &s[start..];
        (!id.is_empty() && !id.starts_with(|c: char| c.is_ascii_digit())).then(|| id.to_string())
    };
    for (at, _) in code.match_indices("StoredPod") {
        let mut before = code[..at].trim_end();
        for wrapper in ["Arc<", "Option<", "mut ", "mut", "&"] {
            before = before.strip_suffix(wrapper).unwrap_or(before).trim_end();
        }
        for wrapper in ["Arc<", "&", "Option<"] {
            before = before.strip_suffix(wrapper).unwrap_or(before).trim_end();
        }
        if let Some(b) = before.strip_suffix(':').filter(|b| !b.ends_with(':')) {
            names.extend(ident_before(b));
        }
    }
    for (at, _) in code.match_indices("Object::Pod(") {
        let rest = &code[at + "Object::Pod(".len()..];
        let id = rest.split(')').next().unwrap_or_default().trim();
        if !id.is_empty() && id.chars().all(|c| c.is_alphanumeric() || c == '_') {
            names.insert(id.to_string());
        }
    }
    if let (Some(at), true) = (code.find("Some("), code.contains(".as_pod()")) {
        let id = code[at + "Some(".len()..]
            .split(')')
            .next()
            .unwrap_or_default()
            .trim();
        if !id.is_empty() && id.chars().all(|c| c.is_alphanumeric() || c == '_') {
            names.insert(id.to_string());
        }
    }
}

/// The 1-based lines of `text` where a name bound to a stored pod in the same function reads
/// or writes `name.metadata.labels` or `name.metadata.owner_references` (see
/// [`stored_pod_bindings`]). A k8s `Pod`, a Deployment or a ReplicaSet under the same name in
/// another function is not one: the bindings are forgotten at every `fn`.
fn stored_pod_meta_fields(text: &str) -> Vec<usize> {
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        if starts_fn(code) {
            names.clear();
        }
        stored_pod_bindings(code, &mut names);
        let hit = ["labels", "owner_references"].iter().any(|field| {
            code.match_indices(&format!(".metadata.{field}"))
                .any(|(at, _)| {
                    let after = &code[at + ".metadata.".len() + field.len()..];
                    !after.starts_with(|c: char| c == '_' || c.is_alphanumeric())
                        && names.iter().any(|n| {
                            code[..at].ends_with(n.as_str())
                                && !code[..at - n.len()]
                                    .ends_with(|c: char| c == '_' || c.is_alphanumeric())
                        })
                })
        });
        if hit {
            out.push(i + 1);
        }
    }
    out
}

#[test]
fn a_stored_pods_labels_and_owner_references_are_read_through_their_accessors() {
    let mut problems = Vec::new();
    for (rel, f) in crate_sources(&["src", "tests", "benches"]) {
        if POD_META_FIELDS_ALLOWED.contains(&rel.as_str()) {
            continue;
        }
        let text = fs::read_to_string(&f).expect("a source file");
        for line in stored_pod_meta_fields(&text) {
            problems.push(format!(
                "{rel}:{line}: a stored pod's metadata.labels and metadata.owner_references \
                 are always None: use labels() / owner_references() and their setters"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_stored_pod_metadata_scanner_finds_field_uses_and_skips_other_objects() {
    let text = "\
fn a(pod: &StoredPod, d: &Deployment) -> bool {
    let l = pod.metadata.labels.as_ref();
    let n = d.metadata.labels.as_ref();
    pod.metadata.name.is_some()
}
fn b(old: &Arc<StoredPod>, new: &mut StoredPod, maybe: Option<&StoredPod>) {
    old.metadata.owner_references.clone();
    new.metadata.labels = None;
}
fn c(pod: Pod, rs: &ReplicaSet) {
    let l = pod.metadata.labels.as_ref();
    let o = rs.metadata.owner_references.clone();
}
fn d(obj: &Object) {
    match obj {
        Object::Pod(p) => p.metadata.labels.is_some(),
        _ => false,
    };
    if let Some(q) = obj.as_pod() {
        q.metadata.owner_references.as_ref();
    }
    let x = pod.metadata.labels_count;
    let y = the_pod.metadata.labels; // pod is bound, the_pod is not
}
fn e(mut pods: Vec<StoredPod>, pod: &StoredPod) {
    let k = pod.metadata.labels.clone(); // a comment: .metadata.labels
}
";
    assert_eq!(stored_pod_meta_fields(text), vec![2, 7, 8, 16, 20, 26]);
}
