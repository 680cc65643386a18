//! The resource types of Kubernetes that kubeplane stores without modelling them: every
//! built-in kind that a v1.34 API server serves by default (the GA groups and versions), taken
//! from k8s-openapi's generated `Resource` constants so names, groups, plurals and scopes are
//! upstream's own.
//!
//! The kinds kubeplane simulates (Pod, Node, Deployment, ...) have their own [`Kind`] variants
//! and are not in this table. Everything else is a [`Kind::Other`] over one of these entries
//! and is stored as a [`DynamicObject`]: a real manifest set (Services, ConfigMaps, RBAC,
//! Ingresses, CRDs, workload kinds without a controller yet) applies, is kept and comes back
//! unchanged.
//!
//! A custom resource's type is built from its CustomResourceDefinition when the definition is
//! read ([`intern`]): one leaked `&'static ResourceType` per distinct definition, looked up by
//! content, so a [`Kind::Other`] names a custom kind as it names a built-in one.
//!
//! [`Kind`]: crate::Kind
//! [`Kind::Other`]: crate::Kind::Other
//! [`DynamicObject`]: crate::object::DynamicObject

use std::sync::Mutex;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};

/// One stored resource type: what discovery would say about it.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceType {
    /// The API group, "" for the core group.
    pub group: &'static str,
    /// `group/version`, or the version alone in the core group (the manifests' `apiVersion`).
    pub api_version: &'static str,
    pub kind: &'static str,
    /// The plural resource name of the URL path (`configmaps`).
    pub plural: &'static str,
    pub namespaced: bool,
    /// kubectl's short names for it (`cm`, `svc`, ...).
    pub short_names: &'static [&'static str],
    /// A custom resource type whose definition enables the `status` subresource (a built-in
    /// kind's subresources are the registry's tables).
    pub status_subresource: bool,
    /// A custom resource type's storage resource, `group/plural` (kube-apiserver's
    /// `/registry/<group>/<plural>/...` keys); empty for the built-in kinds.
    pub storage_resource: &'static str,
}

impl ResourceType {
    /// `ConfigMap`, or `Event.events.k8s.io` for a kind that has a namesake in another group.
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() || !self.has_namesake() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    fn has_namesake(&self) -> bool {
        BUILTIN
            .iter()
            .any(|t| t.kind == self.kind && t.group != self.group)
    }
}

/// Whether a k8s-openapi scope is namespaced (a constant, so the table is built at compile
/// time).
trait Scope {
    const NAMESPACED: bool;
}

impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

const fn entry<T>(short_names: &'static [&'static str]) -> ResourceType
where
    T: Resource,
    T::Scope: Scope,
{
    ResourceType {
        group: T::GROUP,
        api_version: T::API_VERSION,
        kind: T::KIND,
        plural: T::URL_PATH_SEGMENT,
        namespaced: <T::Scope as Scope>::NAMESPACED,
        short_names,
        status_subresource: false,
        storage_resource: "",
    }
}

mod k {
    pub use k8s_openapi::api::admissionregistration::v1 as admissionregistration;
    pub use k8s_openapi::api::apps::v1 as apps;
    pub use k8s_openapi::api::autoscaling::v2 as autoscaling;
    pub use k8s_openapi::api::batch::v1 as batch;
    pub use k8s_openapi::api::certificates::v1 as certificates;
    pub use k8s_openapi::api::core::v1 as core;
    pub use k8s_openapi::api::discovery::v1 as discovery;
    pub use k8s_openapi::api::events::v1 as events;
    pub use k8s_openapi::api::flowcontrol::v1 as flowcontrol;
    pub use k8s_openapi::api::networking::v1 as networking;
    pub use k8s_openapi::api::node::v1 as node;
    pub use k8s_openapi::api::rbac::v1 as rbac;
    pub use k8s_openapi::api::resource::v1 as resource;
    pub use k8s_openapi::api::storage::v1 as storage;
    pub use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    pub use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
}

/// The built-in resource types kubeplane stores without simulating them, in discovery's group
/// order. HorizontalPodAutoscaler is served at its preferred version, `autoscaling/v2`.
pub static BUILTIN: &[ResourceType] = &[
    entry::<k::core::ConfigMap>(&["cm"]),
    entry::<k::core::Endpoints>(&["ep"]),
    entry::<k::core::Event>(&["ev"]),
    entry::<k::core::LimitRange>(&["limits"]),
    entry::<k::core::PersistentVolume>(&["pv"]),
    entry::<k::core::PersistentVolumeClaim>(&["pvc"]),
    entry::<k::core::PodTemplate>(&[]),
    entry::<k::core::ReplicationController>(&["rc"]),
    entry::<k::core::ResourceQuota>(&["quota"]),
    entry::<k::core::Secret>(&[]),
    entry::<k::core::Service>(&["svc"]),
    entry::<k::core::ServiceAccount>(&["sa"]),
    entry::<k::apiregistration::APIService>(&[]),
    entry::<k::apps::ControllerRevision>(&[]),
    entry::<k::apps::DaemonSet>(&["ds"]),
    entry::<k::apps::StatefulSet>(&["sts"]),
    entry::<k::events::Event>(&["ev"]),
    entry::<k::autoscaling::HorizontalPodAutoscaler>(&["hpa"]),
    entry::<k::batch::CronJob>(&["cj"]),
    entry::<k::batch::Job>(&[]),
    entry::<k::certificates::CertificateSigningRequest>(&["csr"]),
    entry::<k::networking::IngressClass>(&[]),
    entry::<k::networking::Ingress>(&["ing"]),
    entry::<k::networking::IPAddress>(&[]),
    entry::<k::networking::NetworkPolicy>(&["netpol"]),
    entry::<k::networking::ServiceCIDR>(&[]),
    entry::<k::rbac::ClusterRoleBinding>(&[]),
    entry::<k::rbac::ClusterRole>(&[]),
    entry::<k::rbac::RoleBinding>(&[]),
    entry::<k::rbac::Role>(&[]),
    entry::<k::storage::CSIDriver>(&[]),
    entry::<k::storage::CSINode>(&[]),
    entry::<k::storage::CSIStorageCapacity>(&[]),
    entry::<k::storage::StorageClass>(&["sc"]),
    entry::<k::storage::VolumeAttachment>(&[]),
    entry::<k::storage::VolumeAttributesClass>(&["vac"]),
    entry::<k::admissionregistration::MutatingWebhookConfiguration>(&[]),
    entry::<k::admissionregistration::ValidatingAdmissionPolicy>(&[]),
    entry::<k::admissionregistration::ValidatingAdmissionPolicyBinding>(&[]),
    entry::<k::admissionregistration::ValidatingWebhookConfiguration>(&[]),
    entry::<k::apiextensions::CustomResourceDefinition>(&["crd", "crds"]),
    entry::<k::discovery::EndpointSlice>(&[]),
    entry::<k::flowcontrol::FlowSchema>(&[]),
    entry::<k::flowcontrol::PriorityLevelConfiguration>(&[]),
    entry::<k::node::RuntimeClass>(&[]),
    entry::<k::resource::DeviceClass>(&[]),
    entry::<k::resource::ResourceClaim>(&[]),
    entry::<k::resource::ResourceClaimTemplate>(&[]),
    entry::<k::resource::ResourceSlice>(&[]),
];

/// The built-in type a manifest's `apiVersion` and `kind` name. `autoscaling/v1`
/// HorizontalPodAutoscalers are the same resource as `autoscaling/v2` ones (stored as
/// written: kubeplane converts no versions).
pub fn builtin(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    let api_version = match (api_version, kind) {
        ("autoscaling/v1", "HorizontalPodAutoscaler") => "autoscaling/v2",
        _ => api_version,
    };
    BUILTIN
        .iter()
        .find(|t| t.kind == kind && t.api_version == api_version)
}

/// A resource type a CustomResourceDefinition defines, as its spec says: the storage version
/// stands for the resource (objects keep the served version they were written with, as the
/// HorizontalPodAutoscaler's two versions do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomType {
    pub group: String,
    /// The storage version (`v1`): the type's `apiVersion` is `group/version`.
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    /// Whether the definition enables the `status` subresource.
    pub status_subresource: bool,
}

/// The resource types of custom resources interned so far, by content.
static INTERNED: Mutex<Vec<&'static ResourceType>> = Mutex::new(Vec::new());

/// The one [`ResourceType`] of a custom resource type: built (and leaked) the first time a
/// definition with this content is seen, the same `&'static` after that, so that two runs of
/// one process (or two CRDs with the same names) share it. Leaks one small entry per distinct
/// definition the process ever reads.
pub fn intern(t: &CustomType) -> &'static ResourceType {
    fn leak(s: &str) -> &'static str {
        Box::leak(s.to_string().into_boxed_str())
    }
    let mut table = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    let api_version = format!("{}/{}", t.group, t.version);
    let same = |r: &&&ResourceType| {
        r.group == t.group
            && r.api_version == api_version
            && r.kind == t.kind
            && r.plural == t.plural
            && r.namespaced == t.namespaced
            && r.short_names.iter().eq(t.short_names.iter())
            && r.status_subresource == t.status_subresource
    };
    if let Some(found) = table.iter().find(same) {
        return found;
    }
    let short_names: Vec<&'static str> = t.short_names.iter().map(|s| leak(s)).collect();
    let leaked: &'static ResourceType = Box::leak(Box::new(ResourceType {
        group: leak(&t.group),
        api_version: leak(&api_version),
        kind: leak(&t.kind),
        plural: leak(&t.plural),
        namespaced: t.namespaced,
        short_names: Box::leak(short_names.into_boxed_slice()),
        status_subresource: t.status_subresource,
        storage_resource: leak(&format!("{}/{}", t.group, t.plural)),
    }));
    table.push(leaked);
    leaked
}

/// The custom resource type interned last for an `apiVersion` (its storage version) and
/// kind: how a stored custom resource is read back.
pub fn interned(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    let table = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    table
        .iter()
        .rev()
        .find(|t| t.api_version == api_version && t.kind == kind)
        .copied()
}

/// Every custom resource type interned so far, in the order they were first seen.
pub fn all_interned() -> Vec<&'static ResourceType> {
    INTERNED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Whether a type is one of the built-in table's (not a custom resource type).
pub fn builtin_index(t: &ResourceType) -> Option<usize> {
    BUILTIN.iter().position(|b| std::ptr::eq(b, t))
}

/// The built-in type a user names on a command line: kind, plural, short name, or
/// `plural.group` / `Kind.group` (case-insensitive), as kubectl resolves resource arguments.
/// A name two groups share (`events`) resolves to the core group first, as kubectl does.
pub fn builtin_by_name(name: &str) -> Option<&'static ResourceType> {
    let lower = name.to_ascii_lowercase();
    let (base, group) = match lower.split_once('.') {
        Some((b, g)) => (b.to_string(), Some(g.to_string())),
        None => (lower.clone(), None),
    };
    BUILTIN.iter().find(|t| {
        let names = t.kind.eq_ignore_ascii_case(&base)
            || t.plural == base
            || t.short_names.contains(&base.as_str());
        names && group.as_deref().is_none_or(|g| g == t.group)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_upstreams_names_and_scopes() {
        let cm = builtin("v1", "ConfigMap").unwrap();
        assert_eq!(
            (cm.group, cm.plural, cm.namespaced),
            ("", "configmaps", true)
        );
        let crd = builtin("apiextensions.k8s.io/v1", "CustomResourceDefinition").unwrap();
        assert_eq!(crd.plural, "customresourcedefinitions");
        assert!(!crd.namespaced);
        let crb = builtin("rbac.authorization.k8s.io/v1", "ClusterRoleBinding").unwrap();
        assert!(!crb.namespaced);
        assert_eq!(
            builtin("apps/v1", "StatefulSet").unwrap().plural,
            "statefulsets"
        );
    }

    #[test]
    fn a_kind_at_an_unserved_version_is_not_builtin() {
        assert!(builtin("apps/v1beta1", "StatefulSet").is_none());
        assert!(builtin("v1", "Frobnicator").is_none());
        assert!(
            builtin("v1", "Pod").is_none(),
            "modelled kinds have their own variants"
        );
    }

    #[test]
    fn autoscaling_v1_is_the_same_resource_as_v2() {
        let v1 = builtin("autoscaling/v1", "HorizontalPodAutoscaler").unwrap();
        assert!(std::ptr::eq(
            v1,
            builtin("autoscaling/v2", "HorizontalPodAutoscaler").unwrap()
        ));
    }

    #[test]
    fn names_resolve_as_kubectl_resolves_them() {
        for (name, kind) in [
            ("svc", "Service"),
            ("services", "Service"),
            ("Service", "Service"),
            ("cm", "ConfigMap"),
            ("crd", "CustomResourceDefinition"),
            ("deployments.apps", "nothing"),
            ("statefulsets.apps", "StatefulSet"),
            ("events", "Event"),
        ] {
            let found = builtin_by_name(name).map(|t| t.kind).unwrap_or("nothing");
            assert_eq!(found, kind, "{name}");
        }
        assert_eq!(builtin_by_name("events").unwrap().group, "");
        assert_eq!(
            builtin_by_name("events.events.k8s.io").unwrap().group,
            "events.k8s.io"
        );
    }

    fn widget(version: &str) -> CustomType {
        CustomType {
            group: "example.com".into(),
            version: version.into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            short_names: vec!["wd".into()],
            status_subresource: false,
        }
    }

    #[test]
    fn a_definition_interns_to_one_type_by_content() {
        let a = intern(&widget("v1"));
        let b = intern(&widget("v1"));
        assert!(std::ptr::eq(a, b), "the same content gives the same type");
        assert_eq!(
            (a.api_version, a.plural, a.short_names),
            ("example.com/v1", "widgets", &["wd"][..])
        );
        let v2 = intern(&widget("v2"));
        assert!(
            !std::ptr::eq(a, v2),
            "another storage version is another type"
        );
        assert_eq!(builtin_index(a), None);
        assert_eq!(builtin_index(builtin("v1", "ConfigMap").unwrap()), Some(0));
    }

    #[test]
    fn every_entry_is_unique_and_namesakes_are_qualified() {
        for (i, a) in BUILTIN.iter().enumerate() {
            for b in &BUILTIN[i + 1..] {
                assert!((a.group, a.kind) != (b.group, b.kind), "{} twice", a.kind);
            }
        }
        assert_eq!(
            builtin("events.k8s.io/v1", "Event")
                .unwrap()
                .qualified_kind(),
            "Event.events.k8s.io"
        );
        assert_eq!(builtin("v1", "Event").unwrap().qualified_kind(), "Event");
    }
}
