//! The Kubernetes release whose behaviour a run follows: parsing `1.35`, `1.34.0` or `v1.35.2`,
//! the supported range (v1.34 to v1.37, each minor up to the newest patch release kubeplane
//! knows from upstream's changelogs), and the behaviour changes keyed to the release where
//! they landed, backports included ([`Versioned`], [`changes`]).
//!
//! A behaviour difference is a table of `(first release, value)` pairs in release order; the
//! value for a version is that of the last entry at or before it. A change backported to an
//! older minor's patch release is written as two entries, the patch release and the next
//! minor's `.0`, so it holds on both lines (see [`changes::GENERIC_UNTOLERATED_TAINT_REASON`]).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// A Kubernetes release `v1.MINOR.PATCH` (kubeplane knows only major version 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeVersion {
    pub minor: u32,
    pub patch: u32,
}

/// `v1.minor.patch`, for tables.
pub const fn v1(minor: u32, patch: u32) -> KubeVersion {
    KubeVersion { minor, patch }
}

/// Each supported minor release with the newest patch release kubeplane knows of, from
/// upstream's `CHANGELOG/CHANGELOG-1.MINOR.md` (the stored copies: v1.34.7, v1.35.4; the 1.36
/// changelog has no patch sections yet, the 1.37 one only pre-releases). A minor alone means
/// this patch release.
///
/// Later patch releases exist and are refused: v1.34.8 to v1.34.10, v1.35.5 to v1.35.7 and
/// v1.36.1 to v1.36.3 (2026-05-12, 2026-06-11, 2026-07-22; the `v0.MINOR.PATCH` tags of the
/// published kubernetes/api and kubernetes/component-helpers), but their release notes are
/// not in the stored material (the newest stored changelogs, commit `008b3652`, end at
/// v1.34.7, v1.35.4 and v1.36.0), so what they change in kubeplane's components cannot be
/// keyed to them (docs/compatibility.md, "Patch releases kubeplane does not support yet").
pub const SUPPORTED: &[KubeVersion] = &[v1(34, 7), v1(35, 4), v1(36, 0), v1(37, 0)];

/// The release a run follows when neither `--kubernetes-version` nor `spec.kubernetesVersion`
/// names one: the newest release with no open change (unmodelled or unverified) beyond those
/// of v1.34.0 itself (docs/compatibility.md). v1.34.0 has one, #133276
/// ([`changes::SCHEDULER_KEEPS_NOMINATION_ON_FAILURE`], implemented from the release notes
/// and pull requests, the tagged source was not readable). v1.34.1 changed nothing kubeplane
/// simulates (its notes list apiserver, kubeadm, SELinux and kubectl fixes); v1.34.2 changed
/// preemption of terminating victims (#134247,
/// [`changes::PREEMPTION_SKIPS_TERMINATING_VICTIMS`]) and the pod index by controller
/// (#134658, [`changes::POD_CONTROLLER_INDEX_FULL_KEY`]), both implemented but not verified
/// against the tagged release's source ([`changes::UNVERIFIED`]).
pub const DEFAULT: KubeVersion = v1(34, 1);

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum VersionError {
    #[error("invalid Kubernetes version {0:?}: expected MAJOR.MINOR or MAJOR.MINOR.PATCH, like 1.35 or v1.34.2 (kubeplane simulates {1})")]
    Syntax(String, String),
    #[error("unsupported Kubernetes version {0:?}: kubeplane simulates {1}")]
    Unsupported(String, String),
}

impl KubeVersion {
    /// The newest patch release of this version's minor that kubeplane knows.
    pub fn newest_patch(minor: u32) -> Option<KubeVersion> {
        SUPPORTED.iter().copied().find(|v| v.minor == minor)
    }

    /// Whether a behaviour change whose table is `table` holds in this release.
    pub fn has(self, table: Versioned<bool>) -> bool {
        self.pick(table).unwrap_or(false)
    }

    /// The value of a versioned table for this release: that of its last entry at or before
    /// this release, `None` before the first entry.
    pub fn pick<T: Copy>(self, table: Versioned<T>) -> Option<T> {
        table
            .iter()
            .take_while(|(since, _)| *since <= self)
            .last()
            .map(|&(_, v)| v)
    }
}

/// A behaviour or a default that changed over releases: `(first release, value)` pairs in
/// release order.
pub type Versioned<T> = &'static [(KubeVersion, T)];

/// The supported releases, for messages: `v1.34.0 to v1.34.7, v1.35.0 to v1.35.4, v1.36.0, ...`.
pub fn supported_range() -> String {
    let each: Vec<String> = SUPPORTED
        .iter()
        .map(|v| match v.patch {
            0 => v.to_string(),
            _ => format!("{} to {v}", v1(v.minor, 0)),
        })
        .collect();
    each.join(", ")
}

fn number(s: &str) -> Option<u32> {
    // Semantic versions have no leading zeros and no signs.
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

impl FromStr for KubeVersion {
    type Err = VersionError;

    /// `1.35` (its newest patch release), `1.34.0`, `v1.35.2`; surrounding spaces are ignored.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s = text.trim();
        let bare = s.strip_prefix('v').unwrap_or(s);
        let parts: Vec<&str> = bare.split('.').collect();
        let nums: Option<Vec<u32>> = parts.iter().map(|p| number(p)).collect();
        let nums = match nums {
            Some(n) if (2..=3).contains(&n.len()) => n,
            _ => return Err(VersionError::Syntax(text.to_string(), supported_range())),
        };
        let unsupported = || VersionError::Unsupported(text.to_string(), supported_range());
        if nums[0] != 1 {
            return Err(unsupported());
        }
        let newest = KubeVersion::newest_patch(nums[1]).ok_or_else(unsupported)?;
        match nums.get(2) {
            None => Ok(newest),
            Some(&patch) if patch <= newest.patch => Ok(v1(nums[1], patch)),
            Some(_) => Err(unsupported()),
        }
    }
}

impl fmt::Display for KubeVersion {
    /// `v1.34.0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v1.{}.{}", self.minor, self.patch)
    }
}

impl Default for KubeVersion {
    fn default() -> Self {
        DEFAULT
    }
}

/// Behaviour changes that are not feature gates, each keyed to the releases where it landed.
pub mod changes {
    use super::{v1, Versioned};

    /// TaintToleration's Filter reason no longer names the taint: `node(s) had untolerated
    /// taint(s)` instead of `node(s) had untolerated taint {key: value}` (kubernetes#134740 in
    /// v1.35.0; cherry-picked to v1.34.2 as #135023, per CHANGELOG-1.34.md).
    pub const GENERIC_UNTOLERATED_TAINT_REASON: Versioned<bool> =
        &[(v1(34, 0), false), (v1(34, 2), true), (v1(35, 0), true)];

    /// NodeResourcesBalancedAllocation scores the change of the node's balance: the balance
    /// score with the pod and without it, `50 + (50 + with - without) / 2` (integer
    /// arithmetic), instead of the balance with the pod alone (kubernetes#135573, v1.36.0; the
    /// PR's diff of `balanced_allocation.go` and its test cases).
    pub const BALANCED_ALLOCATION_WITH_AND_WITHOUT_POD: Versioned<bool> = &[(v1(36, 0), true)];

    /// DefaultPreemption sends no API calls for victims that are already terminating
    /// (`deletionTimestamp` set): no DisruptionTarget patch, no delete, no `Preempted` event,
    /// and with async preemption no goroutine at all when every victim is terminating. Added
    /// with kubernetes#133213 (in v1.34.0), reverted by #134245 and its release-1.34
    /// cherry-pick #134247 (v1.34.2: "a pending preemption no longer makes the preemptor retry
    /// more often"), restored without #133213's activation of the preemptor by #134927
    /// (v1.35.0).
    pub const PREEMPTION_SKIPS_TERMINATING_VICTIMS: Versioned<bool> =
        &[(v1(34, 0), true), (v1(34, 2), false), (v1(35, 0), true)];

    /// kube-controller-manager's pod index by controller keys a pod by its controller
    /// reference's namespace, kind, name and UID instead of the UID alone, so the ReplicaSet
    /// controller no longer lists as its own a pod whose reference carries its UID but names
    /// another object or sits in another namespace (kubernetes#134654 in v1.35.0;
    /// cherry-picked to v1.34.2 as #134658, per CHANGELOG-1.34.md).
    pub const POD_CONTROLLER_INDEX_FULL_KEY: Versioned<bool> =
        &[(v1(34, 0), false), (v1(34, 2), true), (v1(35, 0), true)];

    /// The scheduler leaves a pod's `nominatedNodeName` alone when its scheduling or binding
    /// cycle fails where it used to clear it (upstream's `clearNominatedNode`: no node fits and
    /// no PostFilter plugin ran, an error, Reserve or Permit rejecting, a failed binding
    /// cycle): kubernetes#133276, listed in the v1.34.0 notes of CHANGELOG-1.34.md ("The
    /// scheduler no longer cleared the `nominatedNodeName` field for Pods"); #135007 (v1.35.0)
    /// brought the clearing back "after scheduling or binding failure". PostFilter's own answer
    /// (DefaultPreemption's empty nomination when no candidate is found) is applied in every
    /// release.
    pub const SCHEDULER_KEEPS_NOMINATION_ON_FAILURE: Versioned<bool> =
        &[(v1(34, 0), true), (v1(35, 0), false)];

    /// ImageLocality adds the images of the pod's `image` volumes to the sum it scores
    /// (kubernetes#130231, in the CHANGELOG-1.36.md notes: "consider ImageVolume images when
    /// scoring nodes").
    pub const IMAGE_LOCALITY_COUNTS_IMAGE_VOLUMES: Versioned<bool> = &[(v1(36, 0), true)];

    /// ImageLocality also counts those volumes in the ceiling it scales by (one
    /// `maxContainerThreshold` per image), so an image volume no longer scores higher than the
    /// same image as a container (kubernetes#138951, in the v1.37.0-alpha.1 notes of the stored
    /// CHANGELOG-1.37.md, commit `df0a31e0`: "Fixed a bug in ImageLocality scoring where image
    /// volumes could receive a higher score than equivalent regular container images").
    pub const IMAGE_LOCALITY_CEILING_COUNTS_IMAGE_VOLUMES: Versioned<bool> = &[(v1(37, 0), true)];

    /// The scheduling queue records a new pod's `status.nominatedNodeName` in its nominator
    /// before PreEnqueue, so a pod that is still gated (scheduling gates not yet removed) and
    /// holds a nomination set by another component keeps lower-priority pods off the room it
    /// was nominated for; before, only a pod that reached activeQ was recorded (kubernetes#139057,
    /// "Store pod nomination before adding the pod to scheduling queue", opened May 2026 for
    /// v1.37: its release note "Fixed a bug, where nomination of gated pod wasn't preventing lower
    /// priority pods from scheduling on the nominated space", and the stored post-change
    /// `scheduling_queue.go`, whose `addPod` calls `addNominatedPod` unconditionally).
    pub const GATED_POD_NOMINATION_HOLDS_ROOM: Versioned<bool> = &[(v1(37, 0), true)];

    const FROM_1_34_2: Versioned<bool> = &[(v1(34, 2), true), (v1(35, 0), true)];
    const FROM_1_35: Versioned<bool> = &[(v1(35, 0), true)];
    const FROM_1_36: Versioned<bool> = &[(v1(36, 0), true)];
    const FROM_1_37: Versioned<bool> = &[(v1(37, 0), true)];

    /// Upstream changes in the supported releases that alter what kubeplane simulates by
    /// default and that it does not implement yet (docs/compatibility.md has the full list,
    /// with the sources). A run of a release these apply to is exact only where they do not
    /// matter.
    pub const NOT_MODELLED: &[(&str, Versioned<bool>)] = &[
        ("the v1.37 release notes after v1.37.0-alpha.1 (not stored: only the pull requests named in docs/compatibility.md were read)", FROM_1_37),
    ];

    /// Upstream changes kubeplane implements from the pull request (its description, diff and
    /// tests) but has not checked against the source of the tagged release it landed in: the
    /// tagged commits (v1.34.0 `f28b4c9e`, v1.34.2 `8cc511e3`, v1.35.0 `66452049`, from
    /// published `kubectl version` output) are not among the commits the stored index holds,
    /// and the repository snapshot is too large to fetch. The default release is the newest
    /// one with nothing here or in [`NOT_MODELLED`] beyond what v1.34.0 has.
    pub const UNVERIFIED: &[(&str, Versioned<bool>)] = &[
        ("kube-scheduler: nominations kept when a scheduling or binding cycle fails (#133276 in v1.34.0, #135007 in v1.35.0; from the release notes and the pull requests' descriptions, not the tagged schedule_one.go)", SCHEDULER_KEEPS_NOMINATION_ON_FAILURE),
        ("kube-controller-manager: the pod index by the whole controller reference (#134658; from the PR and its fix branch, not the v1.34.2 tag)", FROM_1_34_2),
        ("kube-scheduler: terminating preemption victims preempted again (#134247, the revert of #133213; #133213's activation of the preemptor was not found)", &[(v1(34, 2), true), (v1(35, 0), false)]),
        ("API server: zone and region labels copied onto bound pods (PodTopologyLabelsAdmission, #135158; the plugin from a stored post-1.35 admission.go, the binding's copy from a quoted storage.go, not the v1.35.0 tag)", FROM_1_35),
        ("API server: nominatedNodeName cleared by the binding (ClearingNominatedNodeNameAfterBinding, #135103; the binding from a quoted storage.go and upstream's integration test, not the v1.35.0 tag)", FROM_1_35),
        ("kube-scheduler: the NodeDeclaredFeatures plugin (the gate on from v1.36; the feature registries from component-helpers tags v0.35.0 and v0.36.0 and, for v1.37, a commit after v0.37.0-beta.0; the v1.36 reason and the plugin's place in the default profile not read at a tag)", FROM_1_36),
        ("kube-scheduler: a gated pod's nomination holds its room against lower-priority pods (#139057; from the pull request's description and a stored post-change scheduling_queue.go, not the v1.37.0 tag, which is not stored)", GATED_POD_NOMINATION_HOLDS_ROOM),
        ("kube-scheduler: ImageLocality counts image volumes (#130231 in v1.36.0, #138951 in v1.37.0-alpha.1; from the pull requests' diffs, not the tagged image_locality.go)", IMAGE_LOCALITY_COUNTS_IMAGE_VOLUMES),
    ];

    /// The changes of [`UNVERIFIED`] that apply to a release.
    pub fn unverified(version: super::KubeVersion) -> Vec<&'static str> {
        UNVERIFIED
            .iter()
            .filter(|(_, landed)| version.has(landed))
            .map(|(what, _)| *what)
            .collect()
    }

    /// The changes of [`NOT_MODELLED`] that apply to a release.
    pub fn not_modelled(version: super::KubeVersion) -> Vec<&'static str> {
        NOT_MODELLED
            .iter()
            .filter(|(_, landed)| version.has(landed))
            .map(|(what, _)| *what)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<KubeVersion, VersionError> {
        s.parse()
    }

    #[test]
    fn a_minor_alone_means_its_newest_known_patch_release() {
        assert_eq!(parse("1.34"), Ok(v1(34, 7)));
        assert_eq!(parse("v1.35"), Ok(v1(35, 4)));
        assert_eq!(parse("1.36"), Ok(v1(36, 0)));
        assert_eq!(parse("1.37"), Ok(v1(37, 0)));
    }

    #[test]
    fn full_patch_versions_with_or_without_v_are_accepted() {
        assert_eq!(parse("1.34.0"), Ok(v1(34, 0)));
        assert_eq!(parse("v1.35.2"), Ok(v1(35, 2)));
        assert_eq!(parse(" 1.34.7 "), Ok(v1(34, 7)));
        assert_eq!(parse("1.37.0"), Ok(v1(37, 0)));
        assert_eq!(v1(35, 2).to_string(), "v1.35.2");
    }

    #[test]
    fn malformed_versions_are_syntax_errors() {
        for bad in [
            "",
            "1",
            "v",
            "1.",
            "1.34.",
            "1..34",
            "1.34.0.1",
            "1.34.0-rc.1",
            "V1.34",
            "vv1.34",
            "1.034",
            "01.34",
            "1.34.00",
            "+1.34",
            "1.x",
            "latest",
            "1,34",
        ] {
            assert!(
                matches!(parse(bad), Err(VersionError::Syntax(..))),
                "{bad:?}: {:?}",
                parse(bad)
            );
        }
    }

    #[test]
    fn versions_outside_the_supported_range_are_unsupported() {
        for bad in [
            "1.33", "1.33.5", "1.38", "v1.38.0", "2.0", "0.34", "1.34.8", "1.36.1",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(
                matches!(err, VersionError::Unsupported(..)),
                "{bad}: {err:?}"
            );
            let msg = err.to_string();
            assert!(
                msg.contains("v1.34.0 to v1.34.7, v1.35.0 to v1.35.4, v1.36.0, v1.37.0"),
                "{msg}"
            );
        }
    }

    #[test]
    fn patch_releases_whose_notes_are_not_stored_are_refused() {
        // Tagged upstream (kubernetes/api v0.34.8.. v0.36.3) but absent from the stored
        // changelogs: kubeplane cannot say what they change, so it does not claim them.
        for later in [
            "1.34.8", "1.34.9", "v1.34.10", "1.35.5", "1.35.6", "v1.35.7", "1.36.1", "1.36.2",
            "v1.36.3",
        ] {
            assert!(
                matches!(parse(later), Err(VersionError::Unsupported(..))),
                "{later}: {:?}",
                parse(later)
            );
        }
        assert_eq!(KubeVersion::newest_patch(34), Some(v1(34, 7)));
        assert_eq!(KubeVersion::newest_patch(35), Some(v1(35, 4)));
        assert_eq!(KubeVersion::newest_patch(36), Some(v1(36, 0)));
    }

    #[test]
    fn a_table_value_is_that_of_the_last_entry_at_or_before_the_version() {
        const T: Versioned<u8> = &[
            (v1(34, 0), 1),
            (v1(34, 2), 2),
            (v1(35, 0), 3),
            (v1(35, 1), 4),
        ];
        assert_eq!(v1(33, 9).pick(T), None);
        assert_eq!(v1(34, 1).pick(T), Some(1));
        assert_eq!(v1(34, 7).pick(T), Some(2));
        assert_eq!(v1(35, 0).pick(T), Some(3));
        assert_eq!(v1(37, 0).pick(T), Some(4));
    }

    #[test]
    fn the_generic_taint_reason_holds_from_1_34_2_and_1_35_0() {
        let generic = |v: KubeVersion| v.has(changes::GENERIC_UNTOLERATED_TAINT_REASON);
        assert!(!generic(v1(34, 0)));
        assert!(!generic(v1(34, 1)));
        assert!(generic(v1(34, 2)));
        assert!(generic(v1(34, 7)));
        for minor in 35..=37 {
            assert!(generic(v1(minor, 0)));
        }
    }

    #[test]
    fn terminating_victims_are_skipped_except_from_1_34_2_to_1_34_7() {
        let skips = |v: KubeVersion| v.has(changes::PREEMPTION_SKIPS_TERMINATING_VICTIMS);
        assert!(skips(v1(34, 0)));
        assert!(skips(v1(34, 1)));
        assert!(!skips(v1(34, 2)));
        assert!(!skips(v1(34, 7)));
        for minor in 35..=37 {
            assert!(skips(v1(minor, 0)));
        }
    }

    #[test]
    fn the_balanced_allocation_change_holds_from_1_36() {
        let new = |v: KubeVersion| v.has(changes::BALANCED_ALLOCATION_WITH_AND_WITHOUT_POD);
        assert!(!new(v1(34, 7)));
        assert!(!new(v1(35, 4)));
        assert!(new(v1(36, 0)));
        assert!(new(v1(37, 0)));
    }

    #[test]
    fn the_default_is_the_newest_release_with_no_open_change_beyond_those_of_v1_34_0() {
        let open = |r| [changes::not_modelled(r), changes::unverified(r)].concat();
        // #133276 (v1.34.0) is implemented but not checked against a tag, so no release is
        // free of open changes: the default is the newest release with no more than the
        // oldest supported release has.
        assert_eq!(open(DEFAULT), open(v1(34, 0)));
        assert_eq!(open(v1(34, 0)).len(), 1);
        for v in SUPPORTED {
            for patch in 0..=v.patch {
                let release = v1(v.minor, patch);
                if release > DEFAULT {
                    assert_ne!(open(release), open(v1(34, 0)), "{release}");
                }
            }
        }
        assert_eq!(changes::not_modelled(v1(34, 0)), Vec::<&str>::new());
        assert!(changes::not_modelled(v1(34, 7)).is_empty());
        assert_eq!(changes::unverified(v1(34, 2)).len(), 3);
        assert_eq!(changes::unverified(v1(34, 1)).len(), 1);
        assert_eq!(changes::unverified(v1(35, 0)).len(), 3);
        assert!(changes::not_modelled(v1(35, 4)).is_empty());
        assert!(changes::not_modelled(v1(36, 0)).is_empty());
        assert_eq!(changes::not_modelled(v1(37, 0)).len(), 1);
    }

    #[test]
    fn nominations_are_kept_on_failure_only_in_v1_34() {
        let keeps = |v: KubeVersion| v.has(changes::SCHEDULER_KEEPS_NOMINATION_ON_FAILURE);
        assert!(keeps(v1(34, 0)));
        assert!(keeps(v1(34, 1)));
        assert!(keeps(v1(34, 7)));
        for minor in 35..=37 {
            assert!(!keeps(v1(minor, 0)), "v1.{minor}");
        }
    }

    #[test]
    fn a_gated_pods_nomination_holds_its_room_from_1_37() {
        let holds = |v: KubeVersion| v.has(changes::GATED_POD_NOMINATION_HOLDS_ROOM);
        assert!(!holds(v1(34, 7)) && !holds(v1(35, 4)) && !holds(v1(36, 0)));
        assert!(holds(v1(37, 0)));
    }

    #[test]
    fn image_volumes_count_in_image_locality_from_1_36_and_in_its_ceiling_from_1_37() {
        let sum = |v: KubeVersion| v.has(changes::IMAGE_LOCALITY_COUNTS_IMAGE_VOLUMES);
        let ceiling = |v: KubeVersion| v.has(changes::IMAGE_LOCALITY_CEILING_COUNTS_IMAGE_VOLUMES);
        assert!(!sum(v1(35, 4)) && !ceiling(v1(35, 4)));
        assert!(sum(v1(36, 0)) && !ceiling(v1(36, 0)));
        assert!(sum(v1(37, 0)) && ceiling(v1(37, 0)));
    }

    #[test]
    fn the_default_is_supported_and_every_supported_minor_starts_at_its_dot_zero() {
        assert_eq!(KubeVersion::default(), DEFAULT);
        assert!(parse(&DEFAULT.to_string()).is_ok());
        for v in SUPPORTED {
            assert_eq!(parse(&format!("1.{}.0", v.minor)), Ok(v1(v.minor, 0)));
        }
    }
}
