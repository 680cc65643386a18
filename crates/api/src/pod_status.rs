//! The stored form of a pod's status (issue 19's memory target): k8s-openapi's `PodStatus` is
//! about 2.2–2.5 KB for a Running pod (448 B inline, a `PodCondition` of 160 B per condition, a
//! `ContainerStatus` of 752 B per container, a dozen small strings); [`StoredPodStatus`] keeps
//! the statuses the control plane writes (phase, known conditions, one host and pod IP, the
//! containers' running/terminated/waiting states) in about a tenth of that, and any other status
//! as k8s-openapi's, boxed.
//!
//! Exact by construction: [`StoredPodStatus::from_k8s`] picks the compact form only when every
//! field it would drop is unset and every kept value can be rebuilt as written, and
//! [`StoredPodStatus::to_k8s`] rebuilds exactly the input (the unit tests and a proptest check
//! `from_k8s(s).to_k8s() == s`). One status has one form, so the derived equality of two stored
//! statuses is the equality of their k8s-openapi statuses.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, HostIP, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// A pod's status as kubeplane stores it: compact when it fits, else k8s-openapi's.
#[derive(Clone, Debug, PartialEq)]
pub enum StoredPodStatus {
    Compact(CompactPodStatus),
    Full(Box<PodStatus>),
}

/// A `PodStatus` whose only set fields are phase, conditions, hostIP (and hostIPs as
/// `[hostIP]`), podIP (and podIPs as `[podIP]`), startTime and containerStatuses, each of a
/// shape [`CompactCondition`] and [`CompactContainer`] hold.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactPodStatus {
    start_time: CompactTime,
    phase: u8,
    flags: u8,
    host_ip: Option<Box<str>>,
    pod_ip: Option<Box<str>>,
    conditions: Box<[CompactCondition]>,
    containers: Box<[CompactContainer]>,
}

const HAS_CONDITIONS: u8 = 1;
const HAS_CONTAINERS: u8 = 2;
const HAS_HOST_IPS: u8 = 4;
const HAS_POD_IPS: u8 = 8;

const PHASES: [&str; 5] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];
const CONDITION_TYPES: [&str; 7] = [
    "PodScheduled",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodReadyToStartContainers",
    "DisruptionTarget",
    "PodResizePending",
];
const CONDITION_STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// A `PodCondition` of a known type and status, without lastProbeTime or observedGeneration.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactCondition {
    last_transition_time: CompactTime,
    type_: u8,
    status: u8,
    /// Reason and message, when either is set (rare: boxed).
    text: Option<Box<(Option<String>, Option<String>)>>,
}

/// A `ContainerStatus` with name, image, ready, started, restartCount, state and lastState
/// only (imageID empty), each state one of running (startedAt only), terminated or waiting.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactContainer {
    name: Box<str>,
    image: Box<str>,
    state: CompactState,
    last_state: CompactState,
    restart_count: i32,
    ready: bool,
    /// `started`: 0 unset, 1 false, 2 true.
    started: u8,
}

/// A container's state: unset, set and empty, or exactly one of its three kinds.
#[derive(Clone, Debug, PartialEq)]
enum CompactState {
    None,
    Empty,
    Running(CompactTime),
    Terminated(Box<ContainerStateTerminated>),
    Waiting(Box<ContainerStateWaiting>),
}

/// An optional timestamp in 12 bytes aligned to 4: seconds and nanoseconds, `None` as
/// `i32::MIN` nanoseconds (a timestamp's nanoseconds are within ±999,999,999), where an
/// `Option<Timestamp>` takes 24 aligned to 8. The compact pod status keeps its times so, and so
/// may any per-pod record kept for every pod (the ReplicaSet controller's sort facts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactTime {
    seconds: [u32; 2],
    nanos: i32,
}

impl CompactTime {
    pub const NONE: CompactTime = CompactTime {
        seconds: [0, 0],
        nanos: i32::MIN,
    };

    pub fn new(t: Option<Timestamp>) -> CompactTime {
        let Some(t) = t else {
            return CompactTime::NONE;
        };
        let s = t.as_second();
        CompactTime {
            seconds: [s as u32, (s >> 32) as u32],
            nanos: t.subsec_nanosecond(),
        }
    }

    pub fn get(self) -> Option<Timestamp> {
        if self.nanos == i32::MIN {
            return None;
        }
        let s = (i64::from(self.seconds[1]) << 32) | i64::from(self.seconds[0]);
        Some(Timestamp::new(s, self.nanos).expect("made from a timestamp"))
    }

    fn from_k8s(t: Option<&Time>) -> CompactTime {
        CompactTime::new(t.map(|t| t.0))
    }

    fn to_k8s(self) -> Option<Time> {
        self.get().map(Time)
    }
}

fn code(table: &[&str], value: &str) -> Option<u8> {
    table.iter().position(|v| *v == value).map(|i| i as u8)
}

/// `Some(ip)` when `list` is `[{ip}]` for `single == Some(ip)`, `None` when unset; `Err` when
/// the list has another shape.
fn mirrored(single: &Option<String>, list: Option<Vec<&str>>) -> Result<bool, ()> {
    match (single, list) {
        (_, None) => Ok(false),
        (Some(one), Some(list)) if list.len() == 1 && list[0] == one => Ok(true),
        _ => Err(()),
    }
}

impl StoredPodStatus {
    /// The stored form of `status`: compact when every field fits, else the status itself.
    pub fn from_k8s(status: PodStatus) -> StoredPodStatus {
        match CompactPodStatus::try_from_k8s(&status) {
            Some(c) => StoredPodStatus::Compact(c),
            None => StoredPodStatus::Full(Box::new(status)),
        }
    }

    /// Exactly the status it was made from.
    pub fn to_k8s(&self) -> PodStatus {
        match self {
            StoredPodStatus::Compact(c) => c.to_k8s(),
            StoredPodStatus::Full(s) => PodStatus::clone(s),
        }
    }

    /// `status.phase`.
    pub fn phase(&self) -> Option<&str> {
        match self {
            StoredPodStatus::Compact(c) => PHASES.get(usize::from(c.phase)).copied(),
            StoredPodStatus::Full(s) => s.phase.as_deref(),
        }
    }

    /// The status of the first condition of type `type_`, if there is one.
    pub fn condition_status(&self, type_: &str) -> Option<&str> {
        match self {
            StoredPodStatus::Compact(c) => {
                let t = code(&CONDITION_TYPES, type_)?;
                let cond = c.conditions.iter().find(|x| x.type_ == t)?;
                Some(CONDITION_STATUSES[usize::from(cond.status)])
            }
            StoredPodStatus::Full(s) => s
                .conditions
                .as_ref()?
                .iter()
                .find(|x| x.type_ == type_)
                .map(|x| x.status.as_str()),
        }
    }

    /// The status and lastTransitionTime of the first condition of type `type_`.
    pub fn condition_status_time(&self, type_: &str) -> Option<(&str, Option<Time>)> {
        match self {
            StoredPodStatus::Compact(c) => {
                let t = code(&CONDITION_TYPES, type_)?;
                let cond = c.conditions.iter().find(|x| x.type_ == t)?;
                Some((
                    CONDITION_STATUSES[usize::from(cond.status)],
                    cond.last_transition_time.to_k8s(),
                ))
            }
            StoredPodStatus::Full(s) => s
                .conditions
                .as_ref()?
                .iter()
                .find(|x| x.type_ == type_)
                .map(|x| (x.status.as_str(), x.last_transition_time.clone())),
        }
    }

    /// The highest restartCount of the containerStatuses (`None` when there are none).
    pub fn max_restart_count(&self) -> Option<i32> {
        match self {
            StoredPodStatus::Compact(c) => c.containers.iter().map(|x| x.restart_count).max(),
            StoredPodStatus::Full(s) => s
                .container_statuses
                .as_ref()?
                .iter()
                .map(|x| x.restart_count)
                .max(),
        }
    }

    /// Whether any condition's type and status satisfy `f`.
    pub fn any_condition(&self, f: impl Fn(&str, &str) -> bool) -> bool {
        match self {
            StoredPodStatus::Compact(c) => c.conditions.iter().any(|x| {
                f(
                    CONDITION_TYPES[usize::from(x.type_)],
                    CONDITION_STATUSES[usize::from(x.status)],
                )
            }),
            StoredPodStatus::Full(s) => s
                .conditions
                .iter()
                .flatten()
                .any(|x| f(&x.type_, &x.status)),
        }
    }

    /// The first condition of type `type_` (rebuilt).
    pub fn condition(&self, type_: &str) -> Option<PodCondition> {
        match self {
            StoredPodStatus::Compact(c) => {
                let t = code(&CONDITION_TYPES, type_)?;
                c.conditions
                    .iter()
                    .find(|x| x.type_ == t)
                    .map(|x| x.to_k8s())
            }
            StoredPodStatus::Full(s) => s
                .conditions
                .as_ref()?
                .iter()
                .find(|x| x.type_ == type_)
                .cloned(),
        }
    }

    /// `status.nominatedNodeName` (never set in the compact form).
    pub fn nominated_node_name(&self) -> Option<&str> {
        match self {
            StoredPodStatus::Compact(_) => None,
            StoredPodStatus::Full(s) => s.nominated_node_name.as_deref(),
        }
    }

    /// `status.reason` (never set in the compact form).
    pub fn reason(&self) -> Option<&str> {
        match self {
            StoredPodStatus::Compact(_) => None,
            StoredPodStatus::Full(s) => s.reason.as_deref(),
        }
    }

    /// `status.podIP`.
    pub fn pod_ip(&self) -> Option<&str> {
        match self {
            StoredPodStatus::Compact(c) => c.pod_ip.as_deref(),
            StoredPodStatus::Full(s) => s.pod_ip.as_deref(),
        }
    }

    /// `status.hostIP`.
    pub fn host_ip(&self) -> Option<&str> {
        match self {
            StoredPodStatus::Compact(c) => c.host_ip.as_deref(),
            StoredPodStatus::Full(s) => s.host_ip.as_deref(),
        }
    }

    /// `status.startTime`.
    pub fn start_time(&self) -> Option<Time> {
        match self {
            StoredPodStatus::Compact(c) => c.start_time.to_k8s(),
            StoredPodStatus::Full(s) => s.start_time.clone(),
        }
    }

    /// The sum of the containers' restart counts and whether every container is ready
    /// (`None` when the status has no container statuses).
    pub fn containers_restarts_and_ready(&self) -> Option<(i64, bool)> {
        match self {
            StoredPodStatus::Compact(c) => (c.flags & HAS_CONTAINERS != 0).then(|| {
                c.containers.iter().fold((0, true), |(n, r), x| {
                    (n + i64::from(x.restart_count), r && x.ready)
                })
            }),
            StoredPodStatus::Full(s) => s.container_statuses.as_ref().map(|cs| {
                cs.iter().fold((0, true), |(n, r), x| {
                    (n + i64::from(x.restart_count), r && x.ready)
                })
            }),
        }
    }

    /// Whether this is the compact form (for tests and measurements).
    pub fn is_compact(&self) -> bool {
        matches!(self, StoredPodStatus::Compact(_))
    }
}

impl CompactPodStatus {
    /// Whether every field the compact form does not hold is unset (destructured, so that a
    /// field k8s-openapi adds fails to compile here instead of being dropped).
    fn only_compact_fields(s: &PodStatus) -> bool {
        let PodStatus {
            conditions: _,
            container_statuses: _,
            ephemeral_container_statuses,
            extended_resource_claim_status,
            host_ip: _,
            host_ips: _,
            init_container_statuses,
            message,
            nominated_node_name,
            observed_generation,
            phase: _,
            pod_ip: _,
            pod_ips: _,
            qos_class,
            reason,
            resize,
            resource_claim_statuses,
            start_time: _,
        } = s;
        ephemeral_container_statuses.is_none()
            && extended_resource_claim_status.is_none()
            && init_container_statuses.is_none()
            && message.is_none()
            && nominated_node_name.is_none()
            && observed_generation.is_none()
            && qos_class.is_none()
            && reason.is_none()
            && resize.is_none()
            && resource_claim_statuses.is_none()
    }

    fn try_from_k8s(s: &PodStatus) -> Option<CompactPodStatus> {
        if !CompactPodStatus::only_compact_fields(s) {
            return None;
        }
        let PodStatus {
            conditions,
            container_statuses,
            host_ip,
            host_ips,
            phase,
            pod_ip,
            pod_ips,
            start_time,
            ..
        } = s;
        let phase = match phase {
            None => u8::MAX,
            Some(p) => code(&PHASES, p)?,
        };
        let host_ips = host_ips
            .as_ref()
            .map(|l| l.iter().map(|h| h.ip.as_str()).collect());
        let pod_ips = pod_ips
            .as_ref()
            .map(|l| l.iter().map(|h| h.ip.as_str()).collect());
        let mut flags = 0;
        if mirrored(host_ip, host_ips).ok()? {
            flags |= HAS_HOST_IPS;
        }
        if mirrored(pod_ip, pod_ips).ok()? {
            flags |= HAS_POD_IPS;
        }
        if conditions.is_some() {
            flags |= HAS_CONDITIONS;
        }
        if container_statuses.is_some() {
            flags |= HAS_CONTAINERS;
        }
        let conditions = conditions
            .iter()
            .flatten()
            .map(CompactCondition::try_from_k8s)
            .collect::<Option<Box<[_]>>>()?;
        let containers = container_statuses
            .iter()
            .flatten()
            .map(CompactContainer::try_from_k8s)
            .collect::<Option<Box<[_]>>>()?;
        Some(CompactPodStatus {
            start_time: CompactTime::from_k8s(start_time.as_ref()),
            phase,
            flags,
            host_ip: host_ip.as_deref().map(Box::from),
            pod_ip: pod_ip.as_deref().map(Box::from),
            conditions,
            containers,
        })
    }

    fn to_k8s(&self) -> PodStatus {
        let host_ip = self.host_ip.as_deref().map(String::from);
        let pod_ip = self.pod_ip.as_deref().map(String::from);
        PodStatus {
            conditions: (self.flags & HAS_CONDITIONS != 0)
                .then(|| self.conditions.iter().map(|c| c.to_k8s()).collect()),
            container_statuses: (self.flags & HAS_CONTAINERS != 0)
                .then(|| self.containers.iter().map(|c| c.to_k8s()).collect()),
            host_ips: (self.flags & HAS_HOST_IPS != 0).then(|| {
                vec![HostIP {
                    ip: host_ip.clone().unwrap_or_default(),
                }]
            }),
            pod_ips: (self.flags & HAS_POD_IPS != 0).then(|| {
                vec![PodIP {
                    ip: pod_ip.clone().unwrap_or_default(),
                }]
            }),
            host_ip,
            pod_ip,
            phase: PHASES.get(usize::from(self.phase)).map(|p| p.to_string()),
            start_time: self.start_time.to_k8s(),
            ..PodStatus::default()
        }
    }
}

impl CompactCondition {
    fn try_from_k8s(c: &PodCondition) -> Option<CompactCondition> {
        if c.last_probe_time.is_some() || c.observed_generation.is_some() {
            return None;
        }
        let text = (c.reason.is_some() || c.message.is_some())
            .then(|| Box::new((c.reason.clone(), c.message.clone())));
        Some(CompactCondition {
            last_transition_time: CompactTime::from_k8s(c.last_transition_time.as_ref()),
            type_: code(&CONDITION_TYPES, &c.type_)?,
            status: code(&CONDITION_STATUSES, &c.status)?,
            text,
        })
    }

    fn to_k8s(&self) -> PodCondition {
        let (reason, message) = match &self.text {
            Some(t) => (t.0.clone(), t.1.clone()),
            None => (None, None),
        };
        PodCondition {
            last_transition_time: self.last_transition_time.to_k8s(),
            type_: CONDITION_TYPES[usize::from(self.type_)].to_string(),
            status: CONDITION_STATUSES[usize::from(self.status)].to_string(),
            reason,
            message,
            ..PodCondition::default()
        }
    }
}

impl CompactContainer {
    fn try_from_k8s(c: &ContainerStatus) -> Option<CompactContainer> {
        let ContainerStatus {
            allocated_resources,
            allocated_resources_status,
            container_id,
            image,
            image_id,
            last_state,
            name,
            ready,
            resources,
            restart_count,
            started,
            state,
            stop_signal,
            user,
            volume_mounts,
        } = c;
        if allocated_resources.is_some()
            || allocated_resources_status.is_some()
            || container_id.is_some()
            || !image_id.is_empty()
            || resources.is_some()
            || stop_signal.is_some()
            || user.is_some()
            || volume_mounts.is_some()
        {
            return None;
        }
        Some(CompactContainer {
            name: Box::from(name.as_str()),
            image: Box::from(image.as_str()),
            state: CompactState::try_from_k8s(state.as_ref())?,
            last_state: CompactState::try_from_k8s(last_state.as_ref())?,
            restart_count: *restart_count,
            ready: *ready,
            started: match started {
                None => 0,
                Some(false) => 1,
                Some(true) => 2,
            },
        })
    }

    fn to_k8s(&self) -> ContainerStatus {
        ContainerStatus {
            name: self.name.to_string(),
            image: self.image.to_string(),
            state: self.state.to_k8s(),
            last_state: self.last_state.to_k8s(),
            restart_count: self.restart_count,
            ready: self.ready,
            started: [None, Some(false), Some(true)][usize::from(self.started)],
            ..ContainerStatus::default()
        }
    }
}

impl CompactState {
    fn try_from_k8s(s: Option<&ContainerState>) -> Option<CompactState> {
        let Some(s) = s else {
            return Some(CompactState::None);
        };
        Some(match (&s.running, &s.terminated, &s.waiting) {
            (None, None, None) => CompactState::Empty,
            (Some(r), None, None) => {
                CompactState::Running(CompactTime::from_k8s(r.started_at.as_ref()))
            }
            (None, Some(t), None) => CompactState::Terminated(Box::new(t.clone())),
            (None, None, Some(w)) => CompactState::Waiting(Box::new(w.clone())),
            _ => return None,
        })
    }

    fn to_k8s(&self) -> Option<ContainerState> {
        let empty = ContainerState::default();
        Some(match self {
            CompactState::None => return None,
            CompactState::Empty => empty,
            CompactState::Running(t) => ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: t.to_k8s(),
                }),
                ..empty
            },
            CompactState::Terminated(t) => ContainerState {
                terminated: Some(ContainerStateTerminated::clone(t)),
                ..empty
            },
            CompactState::Waiting(w) => ContainerState {
                waiting: Some(ContainerStateWaiting::clone(w)),
                ..empty
            },
        })
    }
}

#[cfg(test)]
#[path = "pod_status_tests.rs"]
mod tests;
