//! The pod template hash (upstream `controller.ComputeHash` over `hashutil.DeepHashObject`, and
//! `EqualIgnoreHash` of `deployment_util.go`).

use std::sync::{Arc, Weak};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::StoredDeployment;
use kubeplane_api::{StoredReplicaSet, TemplateRef};
use serde_json::Value;

use super::{deployment_template_ref, rs_template_ref, POD_TEMPLATE_HASH_LABEL};

/// 32-bit FNV-1a.
pub fn fnv32a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Upstream `rand.SafeEncodeString`: maps each character onto an alphabet without vowels or
/// confusable digits, so a hash never spells a word.
pub fn safe_encode_string(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.chars()
        .map(|c| ALPHANUMS[(c as usize) % ALPHANUMS.len()] as char)
        .collect()
}

/// The `pod-template-hash` of a template (upstream `controller.ComputeHash`).
///
/// Upstream feeds FNV-32a with Go's spew dump of the PodTemplateSpec struct, which has no
/// Rust equivalent; kubeplane feeds it the template's canonical JSON instead (fields in
/// declaration order, maps sorted by key). The rest is upstream's: the collision count is
/// appended as 8 little-endian bytes, and the decimal sum is encoded with
/// [`safe_encode_string`]. Hashes are therefore stable and well-formed but differ from a real
/// cluster's for the same template.
///
/// `template` is a `PodTemplateSpec` or its stored form, whose JSON is the same.
pub fn compute_hash<T: serde::Serialize + ?Sized>(
    template: &T,
    collision_count: Option<i32>,
) -> String {
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if let Some(c) = collision_count {
        let mut cc = [0u8; 8];
        cc[..4].copy_from_slice(&(c as u32).to_le_bytes());
        bytes.extend_from_slice(&cc);
    }
    safe_encode_string(&fnv32a(&bytes).to_string())
}

/// Drops empty objects, arrays and nulls, so nil and empty compare equal as in upstream's
/// semantic deep equality.
fn prune(v: Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Array(a) => {
            let a: Vec<Value> = a
                .into_iter()
                .map(|x| prune(x).unwrap_or(Value::Null))
                .collect();
            (!a.is_empty()).then_some(Value::Array(a))
        }
        Value::Object(m) => {
            let m: serde_json::Map<String, Value> = m
                .into_iter()
                .filter_map(|(k, x)| prune(x).map(|x| (k, x)))
                .collect();
            (!m.is_empty()).then_some(Value::Object(m))
        }
        other => Some(other),
    }
}

/// The template's JSON without the hash label, pruned. The same document as the
/// `PodTemplateSpec`'s (a JSON object's keys compare in any order).
fn template_without_hash(t: TemplateRef<'_>) -> Option<Value> {
    let mut doc = serde_json::Map::new();
    if let Some(m) = t.metadata {
        let mut m = m.clone();
        if let Some(l) = m.labels.as_mut() {
            l.remove(POD_TEMPLATE_HASH_LABEL);
        }
        doc.insert(
            "metadata".into(),
            serde_json::to_value(&m).unwrap_or(Value::Null),
        );
    }
    if let Some(spec) = t.spec {
        doc.insert(
            "spec".into(),
            serde_json::to_value(spec).unwrap_or(Value::Null),
        );
    }
    prune(Value::Object(doc))
}

/// Two templates are equal once the `pod-template-hash` label is ignored (upstream
/// `EqualIgnoreHash`).
pub fn equal_ignore_hash<'a, 'b>(
    a: impl Into<TemplateRef<'a>>,
    b: impl Into<TemplateRef<'b>>,
) -> bool {
    let (a, b) = (a.into(), b.into());
    // Templates equal field by field are equal semantically too; only the others (a nil list
    // against an empty one, say) need the pruned JSON of both.
    same_ignoring_hash(a, b) || template_without_hash(a) == template_without_hash(b)
}

/// [`equal_ignore_hash`] verdicts between versions of Deployments and of ReplicaSets, known by
/// their allocations: a sync finds its new ReplicaSet twice (upstream's
/// `getAllReplicaSetsAndSyncRevision` in both the scaling check and the rollout), mostly on the
/// same versions, and each comparison walks a whole PodSpec.
///
/// A verdict holds a `Weak` of both versions. While it can be upgraded the allocation is still
/// that version's (a `Weak` keeps the memory from being reused), and its contents are unchanged:
/// an `Arc` with a `Weak` beside it is never changed in place (`Arc::make_mut` moves it to a
/// new allocation, `Arc::get_mut` refuses). The owner clears the table at each sync.
#[derive(Debug, Default)]
pub struct TemplateVerdicts(Vec<(Weak<StoredDeployment>, Weak<StoredReplicaSet>, bool)>);

impl TemplateVerdicts {
    /// Whether the ReplicaSet's template equals the Deployment's, ignoring the hash label.
    pub fn equal(&mut self, d: &Arc<StoredDeployment>, rs: &Arc<StoredReplicaSet>) -> bool {
        let known = self.0.iter().find(|(wd, wrs, _)| {
            std::ptr::eq(wd.as_ptr(), Arc::as_ptr(d))
                && std::ptr::eq(wrs.as_ptr(), Arc::as_ptr(rs))
                && wd.strong_count() > 0
                && wrs.strong_count() > 0
        });
        if let Some(&(_, _, verdict)) = known {
            return verdict;
        }
        let verdict = equal_ignore_hash(rs_template_ref(rs), deployment_template_ref(d));
        self.0
            .push((Arc::downgrade(d), Arc::downgrade(rs), verdict));
        verdict
    }

    /// Forgets every verdict (and lets the versions' memory go).
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// How many verdicts are kept.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether two templates are equal field by field once the `pod-template-hash` label is
/// ignored (without copying either spec).
fn same_ignoring_hash(a: TemplateRef<'_>, b: TemplateRef<'_>) -> bool {
    let same_spec = match (a.spec, b.spec) {
        // A ReplicaSet made from a Deployment's template shares its spec.
        (Some(x), Some(y)) => std::ptr::eq(x, y) || x == y,
        (x, y) => x.is_none() && y.is_none(),
    };
    if !same_spec {
        return false;
    }
    fn labels<'t>(t: &TemplateRef<'t>) -> Vec<(&'t String, &'t String)> {
        t.metadata
            .iter()
            .flat_map(|m| m.labels.iter().flatten())
            .filter(|(k, _)| k.as_str() != POD_TEMPLATE_HASH_LABEL)
            .collect()
    }
    labels(&a) == labels(&b)
        && match (a.metadata, b.metadata) {
            (Some(x), Some(y)) => same_meta_besides_labels(x, y),
            (x, y) => x.is_none() && y.is_none(),
        }
}

/// Whether two ObjectMetas are equal in every field but the labels (without copying either:
/// the destructuring names every field, so a field added to ObjectMeta fails to compile here).
fn same_meta_besides_labels(a: &ObjectMeta, b: &ObjectMeta) -> bool {
    let ObjectMeta {
        annotations,
        creation_timestamp,
        deletion_grace_period_seconds,
        deletion_timestamp,
        finalizers,
        generate_name,
        generation,
        labels: _,
        managed_fields,
        name,
        namespace,
        owner_references,
        resource_version,
        self_link,
        uid,
    } = a;
    *annotations == b.annotations
        && *creation_timestamp == b.creation_timestamp
        && *deletion_grace_period_seconds == b.deletion_grace_period_seconds
        && *deletion_timestamp == b.deletion_timestamp
        && *finalizers == b.finalizers
        && *generate_name == b.generate_name
        && *generation == b.generation
        && *managed_fields == b.managed_fields
        && *name == b.name
        && *namespace == b.namespace
        && *owner_references == b.owner_references
        && *resource_version == b.resource_version
        && *self_link == b.self_link
        && *uid == b.uid
}
