//! Compact resource accounting for the scheduler: a pod's effective request and a node's
//! allocatable, as upstream's `resource.PodRequests` (k8s.io/component-helpers) and the
//! scheduler framework's `Resource` compute them.
//!
//! Requests are summed as exact quantities and converted to integers once at the end (cpu in
//! milli-units, everything else in whole units, both rounded up), as upstream adds
//! `resource.Quantity` values before calling `MilliValue()`/`Value()`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::labels::is_qualified_name;
use crate::quantity::{parse_quantity, ParsedQuantity, QuantityError};

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";

/// The cpu a container without a cpu request counts for in `NonZeroRequested` (scoring only).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// The memory a container without a memory request counts for in `NonZeroRequested`.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A quantity in a resource list that does not parse, with where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: resource {resource:?}: {source}")]
pub struct ResourceError {
    /// Where the list was, e.g. `spec.containers[app].resources.requests`.
    pub location: String,
    /// The resource name, e.g. `cpu`.
    pub resource: String,
    /// The quantity string as written.
    pub quantity: String,
    #[source]
    pub source: QuantityError,
}

/// Resource amounts as the scheduler compares them (upstream framework `Resource`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub allowed_pod_number: i64,
    /// Extended resources, `hugepages-*`, `attachable-volumes-*` and prefixed native resources,
    /// sorted by name. An entry with value 0 is kept: upstream distinguishes "requested 0 of
    /// example.com/foo" from "did not mention it" (see [`Resources::is_zero_request`]).
    pub scalar: Vec<(String, i64)>,
}

impl Resources {
    /// The amount of a scalar resource, 0 if absent.
    pub fn scalar(&self, name: &str) -> i64 {
        match self.scalar_index(name) {
            Ok(i) => self.scalar[i].1,
            Err(_) => 0,
        }
    }

    /// Sets a scalar resource, keeping the list sorted.
    pub fn set_scalar(&mut self, name: &str, value: i64) {
        match self.scalar_index(name) {
            Ok(i) => self.scalar[i].1 = value,
            Err(i) => self.scalar.insert(i, (name.to_string(), value)),
        }
    }

    /// Adds to a scalar resource (creating it), saturating.
    pub fn add_scalar(&mut self, name: &str, value: i64) {
        let cur = self.scalar(name);
        self.set_scalar(name, cur.saturating_add(value));
    }

    fn scalar_index(&self, name: &str) -> Result<usize, usize> {
        self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    /// Adds every amount of `other`, saturating (the node's `Requested += pod request`).
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        self.allowed_pod_number = self
            .allowed_pod_number
            .saturating_add(other.allowed_pod_number);
        for (name, v) in &other.scalar {
            self.add_scalar(name, *v);
        }
    }

    /// Subtracts every amount of `other`, saturating; amounts may go negative, as upstream's do.
    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_sub(other.milli_cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        self.allowed_pod_number = self
            .allowed_pod_number
            .saturating_sub(other.allowed_pod_number);
        for (name, v) in &other.scalar {
            self.add_scalar(name, v.saturating_neg());
        }
    }

    /// Whether NodeResourcesFit can skip the per-resource checks: cpu, memory and
    /// ephemeral-storage are 0 and no scalar resource is listed at all (upstream checks
    /// `len(ScalarResources) == 0`, so an explicit `example.com/foo: 0` still counts).
    pub fn is_zero_request(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.is_empty()
    }
}

/// Whether `name` is a resource upstream accounts as a scalar (`IsScalarResourceName`):
/// an extended resource, `hugepages-*`, a prefixed native resource (`kubernetes.io/...`) or
/// `attachable-volumes-*`. Other unprefixed names (typos like `cpus`) are ignored.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || is_prefixed_native_resource(name)
        || name.starts_with("attachable-volumes-")
}

/// An extended resource (upstream `IsExtendedResourceName`): a fully-qualified name outside
/// the `kubernetes.io/` namespace, not starting with `requests.`, and such that
/// `requests.<name>` is a qualified name (so quota can refer to it).
pub fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || is_prefixed_native_resource(name);
    if native || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}")).is_ok()
}

/// Upstream `IsPrefixedNativeResource`: the name contains `kubernetes.io/`.
fn is_prefixed_native_resource(name: &str) -> bool {
    name.contains("kubernetes.io/")
}

/// An exact resource list, as upstream's `v1.ResourceList` of quantities.
type ExactList = BTreeMap<String, ParsedQuantity>;

fn parse_list(
    list: Option<&BTreeMap<String, Quantity>>,
    location: &str,
) -> Result<ExactList, ResourceError> {
    list.into_iter()
        .flatten()
        .map(|(name, q)| {
            parse_quantity(&q.0)
                .map(|p| (name.clone(), p))
                .map_err(|source| ResourceError {
                    location: location.to_string(),
                    resource: name.clone(),
                    quantity: q.0.clone(),
                    source,
                })
        })
        .collect()
}

/// Converts exact amounts to scheduler units (upstream `Resource.Add(ResourceList)`).
fn to_resources(list: &ExactList) -> Resources {
    let mut r = Resources::default();
    for (name, q) in list {
        match name.as_str() {
            CPU => r.milli_cpu = r.milli_cpu.saturating_add(q.milli_value()),
            MEMORY => r.memory = r.memory.saturating_add(q.value()),
            EPHEMERAL_STORAGE => {
                r.ephemeral_storage = r.ephemeral_storage.saturating_add(q.value())
            }
            PODS => r.allowed_pod_number = r.allowed_pod_number.saturating_add(q.value()),
            other if is_scalar_resource_name(other) => r.add_scalar(other, q.value()),
            _ => {}
        }
    }
    r
}

/// Converts a resource list (a node's allocatable, a pod's overhead, ...) to [`Resources`]:
/// cpu in milli-units, memory/ephemeral-storage/pods/scalars in whole units, unknown unprefixed
/// names ignored, as upstream.
pub fn from_resource_list(list: &BTreeMap<String, Quantity>) -> Result<Resources, ResourceError> {
    Ok(to_resources(&parse_list(Some(list), "resource list")?))
}

/// A node's allocatable (`status.allocatable`); a node without it has nothing allocatable.
pub fn node_allocatable(node: &Node) -> Result<Resources, ResourceError> {
    let name = node.metadata.name.as_deref().unwrap_or("");
    let list = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
    Ok(to_resources(&parse_list(
        list,
        &format!("node {name:?} status.allocatable"),
    )?))
}

/// The effective request of a pod (upstream `resource.PodRequests` with the scheduler's
/// options): the sum of the containers' requests; init containers in order, where a
/// restartable (sidecar, `restartPolicy: Always`) init container adds to the sum and to a
/// running sidecar total, and a regular init container needs its request plus the sidecars
/// started before it; per resource, the larger of the sum and the largest init need; then
/// pod-level requests for cpu/memory override (PodLevelResources, beta and on in v1.34); then
/// `spec.overhead` is added.
///
/// Requests are taken after the API server's defaulting: a container that sets a limit but no
/// request for a resource requests its limit (upstream `SetDefaults_Pod`), so a manifest with
/// only limits behaves as it would in a cluster.
pub fn pod_requests(spec: &PodSpec) -> Result<Resources, ResourceError> {
    Ok(to_resources(&PodLists::parse(spec)?.requests(None)))
}

/// Like [`pod_requests`], but for scoring (`NonZeroRequested`): every container (init
/// containers included) without a cpu request counts [`DEFAULT_MILLI_CPU_REQUEST`] and without a
/// memory request [`DEFAULT_MEMORY_REQUEST`], so that pods without requests still spread.
/// Only cpu and memory get defaults; the other fields equal [`pod_requests`]. A request written
/// as `0` is present, so it stays 0. When pod-level requests are set, defaults apply only to a
/// resource that neither the pod level nor any container (nor the overhead) mentions, as upstream.
pub fn pod_requests_non_zero(spec: &PodSpec) -> Result<Resources, ResourceError> {
    pod_requests_and_non_zero(spec).map(|(_, non_zero)| non_zero)
}

/// [`pod_requests`] and [`pod_requests_non_zero`] together, parsing the quantities once.
pub fn pod_requests_and_non_zero(spec: &PodSpec) -> Result<(Resources, Resources), ResourceError> {
    let lists = PodLists::parse(spec)?;
    let requests = lists.requests(None);
    let plain = to_resources(&requests);
    let mut out = plain.clone();
    let defaults_all = !lists.pod_level_requests_set();
    let want_cpu = defaults_all || !requests.contains_key(CPU);
    let want_mem = defaults_all || !requests.contains_key(MEMORY);
    if want_cpu || want_mem {
        let mut defaults = ExactList::new();
        if want_cpu {
            defaults.insert(
                CPU.to_string(),
                ParsedQuantity::from_milli(DEFAULT_MILLI_CPU_REQUEST),
            );
        }
        if want_mem {
            defaults.insert(
                MEMORY.to_string(),
                ParsedQuantity::from_value(DEFAULT_MEMORY_REQUEST),
            );
        }
        let non_zero = lists.requests(Some(&defaults));
        out.milli_cpu = non_zero.get(CPU).map_or(0, ParsedQuantity::milli_value);
        out.memory = non_zero.get(MEMORY).map_or(0, ParsedQuantity::value);
    }
    Ok((plain, out))
}

/// The resource lists of one pod, parsed once.
struct PodLists {
    containers: Vec<ExactList>,
    /// (is restartable sidecar, requests)
    init_containers: Vec<(bool, ExactList)>,
    pod_level: ExactList,
    overhead: ExactList,
}

/// The resources pod-level requests may set in v1.34 (upstream `supportedPodLevelResources`).
const POD_LEVEL_RESOURCES: [&str; 2] = [CPU, MEMORY];

impl PodLists {
    fn parse(spec: &PodSpec) -> Result<PodLists, ResourceError> {
        let containers = spec
            .containers
            .iter()
            .map(|c| container_requests(c, "containers"))
            .collect::<Result<_, _>>()?;
        let init_containers = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| {
                let sidecar = c.restart_policy.as_deref() == Some("Always");
                container_requests(c, "initContainers").map(|r| (sidecar, r))
            })
            .collect::<Result<_, _>>()?;
        let pod_level = parse_list(
            spec.resources.as_ref().and_then(|r| r.requests.as_ref()),
            "spec.resources.requests",
        )?;
        let overhead = parse_list(spec.overhead.as_ref(), "spec.overhead")?;
        Ok(PodLists {
            containers,
            init_containers,
            pod_level,
            overhead,
        })
    }

    fn pod_level_requests_set(&self) -> bool {
        POD_LEVEL_RESOURCES
            .iter()
            .any(|r| self.pod_level.contains_key(*r))
    }

    /// Upstream `PodRequests`; `defaults` fills resources a container does not mention.
    fn requests(&self, defaults: Option<&ExactList>) -> ExactList {
        let with_defaults = |reqs: &ExactList| -> ExactList {
            let mut out = reqs.clone();
            for (name, q) in defaults.into_iter().flatten() {
                out.entry(name.clone()).or_insert(*q);
            }
            out
        };
        let mut sum = ExactList::new();
        for c in &self.containers {
            add_list(&mut sum, &with_defaults(c));
        }
        let mut sidecars = ExactList::new();
        let mut init_max = ExactList::new();
        for (sidecar, reqs) in &self.init_containers {
            let reqs = with_defaults(reqs);
            let need = if *sidecar {
                add_list(&mut sum, &reqs);
                add_list(&mut sidecars, &reqs);
                sidecars.clone()
            } else {
                let mut need = reqs;
                add_list(&mut need, &sidecars);
                need
            };
            max_list(&mut init_max, &need);
        }
        max_list(&mut sum, &init_max);
        if self.pod_level_requests_set() {
            for r in POD_LEVEL_RESOURCES {
                if let Some(q) = self.pod_level.get(r) {
                    sum.insert(r.to_string(), *q);
                }
            }
        }
        add_list(&mut sum, &self.overhead);
        sum
    }
}

/// A container's requests after API defaulting (a limit without a request becomes the request).
fn container_requests(c: &Container, kind: &str) -> Result<ExactList, ResourceError> {
    let res = c.resources.as_ref();
    let base = format!("spec.{kind}[{}].resources", c.name);
    let mut reqs = parse_list(
        res.and_then(|r| r.requests.as_ref()),
        &format!("{base}.requests"),
    )?;
    let limits = parse_list(
        res.and_then(|r| r.limits.as_ref()),
        &format!("{base}.limits"),
    )?;
    for (name, q) in limits {
        reqs.entry(name).or_insert(q);
    }
    Ok(reqs)
}

fn add_list(into: &mut ExactList, other: &ExactList) {
    for (name, q) in other {
        let e = into.entry(name.clone()).or_default();
        *e = e.saturating_add(*q);
    }
}

fn max_list(into: &mut ExactList, other: &ExactList) {
    for (name, q) in other {
        match into.get_mut(name) {
            Some(cur) if *cur >= *q => {}
            Some(cur) => *cur = *q,
            None => {
                into.insert(name.clone(), *q);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeStatus, ResourceRequirements};

    fn list(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect()
    }

    fn container(name: &str, requests: &[(&str, &str)]) -> Container {
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests: if requests.is_empty() {
                    None
                } else {
                    Some(list(requests))
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn sidecar(name: &str, requests: &[(&str, &str)]) -> Container {
        Container {
            restart_policy: Some("Always".into()),
            ..container(name, requests)
        }
    }

    fn spec(containers: Vec<Container>, init: Vec<Container>) -> PodSpec {
        PodSpec {
            containers,
            init_containers: if init.is_empty() { None } else { Some(init) },
            ..Default::default()
        }
    }

    fn cpu_mem(milli_cpu: i64, memory: i64) -> Resources {
        Resources {
            milli_cpu,
            memory,
            ..Default::default()
        }
    }

    #[test]
    fn effective_requests_follow_pod_requests() {
        let cases: Vec<(&str, PodSpec, Resources)> = vec![
            (
                "regular containers are summed",
                spec(
                    vec![
                        container("a", &[("cpu", "1"), ("memory", "2")]),
                        container("b", &[("cpu", "2"), ("memory", "3")]),
                    ],
                    vec![],
                ),
                cpu_mem(3000, 5),
            ),
            (
                "a larger init container sets the request (init max)",
                spec(
                    vec![container("app", &[("cpu", "1")])],
                    vec![container("init", &[("cpu", "3")])],
                ),
                cpu_mem(3000, 0),
            ),
            (
                "a smaller init container does not change the sum",
                spec(
                    vec![container("app", &[("cpu", "2")])],
                    vec![container("init", &[("cpu", "1")])],
                ),
                cpu_mem(2000, 0),
            ),
            (
                "a sidecar adds to the sum",
                spec(
                    vec![container("app", &[("cpu", "1")])],
                    vec![sidecar("proxy", &[("cpu", "500m")])],
                ),
                cpu_mem(1500, 0),
            ),
            (
                "an init container after a sidecar needs its request plus the sidecar",
                spec(
                    vec![container("app", &[("cpu", "1")])],
                    vec![
                        sidecar("proxy", &[("cpu", "1")]),
                        container("init", &[("cpu", "2")]),
                    ],
                ),
                cpu_mem(3000, 0),
            ),
            (
                "an init container before a sidecar does not need the sidecar",
                spec(
                    vec![container("app", &[("cpu", "1")])],
                    vec![
                        container("init", &[("cpu", "2")]),
                        sidecar("proxy", &[("cpu", "1")]),
                    ],
                ),
                cpu_mem(2000, 0),
            ),
            (
                "init max is taken per resource",
                spec(
                    vec![container("app", &[("cpu", "2"), ("memory", "1Gi")])],
                    vec![container("init", &[("cpu", "1"), ("memory", "2Gi")])],
                ),
                cpu_mem(2000, 2 * 1024 * 1024 * 1024),
            ),
            (
                "fractional milli-cpu is summed before rounding up",
                spec(
                    vec![
                        container("a", &[("cpu", "0.5m")]),
                        container("b", &[("cpu", "0.5m")]),
                    ],
                    vec![],
                ),
                cpu_mem(1, 0),
            ),
            (
                "a container without requests requests nothing",
                spec(vec![container("a", &[])], vec![]),
                cpu_mem(0, 0),
            ),
        ];
        for (case, s, want) in cases {
            assert_eq!(pod_requests(&s).unwrap(), want, "{case}");
        }
    }

    #[test]
    fn overhead_is_added_to_the_effective_request() {
        let mut s = spec(
            vec![container("app", &[("cpu", "1"), ("memory", "1Mi")])],
            vec![],
        );
        s.overhead = Some(list(&[("cpu", "250m"), ("memory", "120Mi")]));
        assert_eq!(pod_requests(&s).unwrap(), cpu_mem(1250, 121 * 1024 * 1024));
    }

    #[test]
    fn limits_without_requests_default_the_requests() {
        let mut c = container("app", &[("memory", "1Gi")]);
        c.resources.as_mut().unwrap().limits = Some(list(&[("cpu", "2"), ("memory", "4Gi")]));
        let s = spec(vec![c], vec![]);
        assert_eq!(pod_requests(&s).unwrap(), cpu_mem(2000, 1024 * 1024 * 1024));
    }

    #[test]
    fn pod_level_requests_override_cpu_and_memory() {
        let mut s = spec(
            vec![container(
                "app",
                &[("cpu", "1"), ("ephemeral-storage", "1Gi")],
            )],
            vec![],
        );
        s.resources = Some(ResourceRequirements {
            requests: Some(list(&[("cpu", "3"), ("memory", "1Gi")])),
            ..Default::default()
        });
        let r = pod_requests(&s).unwrap();
        assert_eq!((r.milli_cpu, r.memory), (3000, 1024 * 1024 * 1024));
        assert_eq!(r.ephemeral_storage, 1024 * 1024 * 1024);
        // Both resources are set at pod level, so scoring needs no defaults.
        let nz = pod_requests_non_zero(&s).unwrap();
        assert_eq!((nz.milli_cpu, nz.memory), (3000, 1024 * 1024 * 1024));
    }

    #[test]
    fn non_zero_requests_default_missing_cpu_and_memory_per_container() {
        let cases: Vec<(&str, PodSpec, Resources)> = vec![
            (
                "a pod without requests counts 100m and 200Mi",
                spec(vec![container("a", &[])], vec![]),
                cpu_mem(100, DEFAULT_MEMORY_REQUEST),
            ),
            (
                "every container gets its own defaults",
                spec(
                    vec![container("a", &[]), container("b", &[("cpu", "1")])],
                    vec![],
                ),
                cpu_mem(1100, 2 * DEFAULT_MEMORY_REQUEST),
            ),
            (
                "an explicit zero request stays zero",
                spec(
                    vec![container("a", &[("cpu", "0"), ("memory", "0")])],
                    vec![],
                ),
                cpu_mem(0, 0),
            ),
            (
                "init containers get defaults too",
                spec(
                    vec![container("app", &[("cpu", "50m")])],
                    vec![container("init", &[])],
                ),
                cpu_mem(100, DEFAULT_MEMORY_REQUEST),
            ),
        ];
        for (case, s, want) in cases {
            assert_eq!(pod_requests_non_zero(&s).unwrap(), want, "{case}");
        }
    }

    #[test]
    fn extended_resources_are_scalars() {
        let s = spec(
            vec![container("a", &[("example.com/aaa", "1"), ("cpus", "4")])],
            vec![],
        );
        let r = pod_requests(&s).unwrap();
        assert_eq!(r.scalar("example.com/aaa"), 1);
        assert_eq!(r.scalar("cpus"), 0, "an unprefixed unknown name is ignored");
        assert!(!r.is_zero_request());
        // The node lacks it, so NodeResourcesFit reports "Insufficient example.com/aaa".
        assert_eq!(Resources::default().scalar("example.com/aaa"), 0);
    }

    #[test]
    fn scalar_resource_names_follow_upstream() {
        let cases: &[(&str, &str, bool)] = &[
            (
                "a vendor-prefixed name is an extended resource",
                "example.com/aaa",
                true,
            ),
            ("nvidia gpus are extended resources", "nvidia.com/gpu", true),
            ("hugepages are scalars", "hugepages-2Mi", true),
            (
                "attachable volumes are scalars",
                "attachable-volumes-csi-x",
                true,
            ),
            (
                "prefixed native resources are scalars",
                "kubernetes.io/something",
                true,
            ),
            ("cpu is not a scalar", "cpu", false),
            (
                "an unprefixed unknown name is not a scalar",
                "widgets",
                false,
            ),
            (
                "a requests. prefix is not an extended resource",
                "requests.example.com/x",
                false,
            ),
            (
                "an upper-case prefix is not an extended resource",
                "Example.com/x",
                false,
            ),
        ];
        for (case, name, want) in cases {
            assert_eq!(is_scalar_resource_name(name), *want, "{case}");
        }
    }

    #[test]
    fn an_explicit_zero_scalar_request_is_not_a_zero_request() {
        let r = from_resource_list(&list(&[("example.com/foo", "0")])).unwrap();
        assert!(!r.is_zero_request());
        assert!(Resources::default().is_zero_request());
    }

    #[test]
    fn node_allocatable_reads_status_allocatable() {
        let mut node = Node::default();
        assert_eq!(node_allocatable(&node).unwrap(), Resources::default());
        node.status = Some(NodeStatus {
            allocatable: Some(list(&[
                ("cpu", "10"),
                ("memory", "20"),
                ("pods", "32"),
                ("example.com/aaa", "2"),
            ])),
            ..Default::default()
        });
        let r = node_allocatable(&node).unwrap();
        assert_eq!(
            (r.milli_cpu, r.memory, r.allowed_pod_number),
            (10_000, 20, 32)
        );
        assert_eq!(r.scalar, vec![("example.com/aaa".to_string(), 2)]);
    }

    #[test]
    fn a_bad_quantity_names_the_container_and_resource() {
        let s = spec(vec![container("app", &[("cpu", "lots")])], vec![]);
        let err = pod_requests(&s).unwrap_err();
        assert_eq!(err.resource, "cpu");
        assert_eq!(err.quantity, "lots");
        let msg = err.to_string();
        assert!(
            msg.contains("spec.containers[app].resources.requests"),
            "{msg}"
        );
        assert!(msg.contains("\"lots\""), "{msg}");
    }

    #[test]
    fn add_and_sub_keep_scalars_sorted() {
        let mut a = Resources::default();
        a.set_scalar("z.io/b", 1);
        a.set_scalar("a.io/a", 2);
        let b = a.clone();
        a.add(&b);
        assert_eq!(a.scalar, vec![("a.io/a".into(), 4), ("z.io/b".into(), 2)]);
        a.sub(&b);
        a.sub(&b);
        assert_eq!(a.scalar("a.io/a"), 0);
    }
}
