//! Pod (anti-)affinity terms parsed once per pod (upstream `framework.AffinityTerm`,
//! `WeightedAffinityTerm` and the term lists of `PodInfo`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Affinity, PodAffinityTerm, WeightedPodAffinityTerm};
use kubeplane_core::labels::{from_optional, Selector};

/// One pod (anti-)affinity term with its selectors compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffinityTerm {
    /// The namespaces the term names. When the term names none and has no namespace selector,
    /// this is the pod's own namespace (upstream `getNamespacesFromPodAffinityTerm`).
    pub namespaces: BTreeSet<String>,
    /// The namespace selector: `nothing` when the term has none (a nil selector), `everything`
    /// for an empty one.
    pub namespace_selector: Selector,
    /// Which pods the term selects (a nil `labelSelector` selects nothing).
    pub selector: Selector,
    pub topology_key: String,
}

impl AffinityTerm {
    fn parse(namespace: &str, term: &PodAffinityTerm) -> Result<AffinityTerm, String> {
        let selector = from_optional(term.label_selector.as_ref()).map_err(|e| e.to_string())?;
        let names = term.namespaces.as_deref().unwrap_or_default();
        let namespaces = if names.is_empty() && term.namespace_selector.is_none() {
            BTreeSet::from([namespace.to_string()])
        } else {
            names.iter().cloned().collect()
        };
        let namespace_selector =
            from_optional(term.namespace_selector.as_ref()).map_err(|e| e.to_string())?;
        Ok(AffinityTerm {
            namespaces,
            namespace_selector,
            selector,
            topology_key: term.topology_key.clone(),
        })
    }

    /// Whether the term selects a pod in `namespace` with `labels`, given that namespace's
    /// labels (`None`: not looked up, treated as no labels, as upstream passes nil).
    pub fn matches(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        ns_labels: Option<&BTreeMap<String, String>>,
    ) -> bool {
        static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
        let in_namespace = self.namespaces.contains(namespace)
            || self
                .namespace_selector
                .matches(ns_labels.unwrap_or(&NO_LABELS));
        in_namespace && self.selector.matches(labels)
    }
}

/// A preferred term with its weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedAffinityTerm {
    pub term: AffinityTerm,
    pub weight: i32,
}

/// The pod (anti-)affinity terms of one pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodAffinityTerms {
    pub required_affinity: Vec<AffinityTerm>,
    pub required_anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<WeightedAffinityTerm>,
    pub preferred_anti_affinity: Vec<WeightedAffinityTerm>,
    /// Why some terms could not be parsed (upstream `NewPodInfo`'s aggregated error); the
    /// affected list is then empty. The API server rejects such pods, so this is rare.
    pub parse_error: Option<String>,
}

fn terms(
    namespace: &str,
    list: Option<&Vec<PodAffinityTerm>>,
) -> Result<Vec<AffinityTerm>, String> {
    list.into_iter()
        .flatten()
        .map(|t| AffinityTerm::parse(namespace, t))
        .collect()
}

fn weighted(
    namespace: &str,
    list: Option<&Vec<WeightedPodAffinityTerm>>,
) -> Result<Vec<WeightedAffinityTerm>, String> {
    list.into_iter()
        .flatten()
        .map(|w| {
            Ok(WeightedAffinityTerm {
                term: AffinityTerm::parse(namespace, &w.pod_affinity_term)?,
                weight: w.weight,
            })
        })
        .collect()
}

impl PodAffinityTerms {
    /// Parses the terms of a pod in `namespace`; `None` when it has none at all.
    pub fn parse(namespace: &str, affinity: Option<&Affinity>) -> Option<PodAffinityTerms> {
        let affinity = affinity?;
        let pa = affinity.pod_affinity.as_ref();
        let paa = affinity.pod_anti_affinity.as_ref();
        if pa.is_none() && paa.is_none() {
            return None;
        }
        let mut out = PodAffinityTerms::default();
        let mut errors = Vec::new();
        let mut take = |what: &str, r: Result<(), String>| {
            if let Err(e) = r {
                errors.push(format!("{what}: {e}"));
            }
        };
        take(
            "requiredAffinityTerms",
            terms(
                namespace,
                pa.and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
            )
            .map(|t| out.required_affinity = t),
        );
        take(
            "requiredAntiAffinityTerms",
            terms(
                namespace,
                paa.and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
            )
            .map(|t| out.required_anti_affinity = t),
        );
        take(
            "preferredAffinityTerms",
            weighted(
                namespace,
                pa.and_then(|a| {
                    a.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
            )
            .map(|t| out.preferred_affinity = t),
        );
        take(
            "preferredAntiAffinityTerms",
            weighted(
                namespace,
                paa.and_then(|a| {
                    a.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
            )
            .map(|t| out.preferred_anti_affinity = t),
        );
        if !errors.is_empty() {
            out.parse_error = Some(if errors.len() == 1 {
                errors.remove(0)
            } else {
                format!("[{}]", errors.join(", "))
            });
        }
        Some(out)
    }

    pub fn has_required(&self) -> bool {
        !self.required_affinity.is_empty() || !self.required_anti_affinity.is_empty()
    }
}

/// Whether `labels` in `namespace` match every term (false for no terms; upstream
/// `podMatchesAllAffinityTerms`, namespace labels not looked up).
pub fn matches_all_terms(
    terms: &[AffinityTerm],
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(namespace, labels, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodAffinity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    fn term(ns: &[&str], ns_selector: Option<LabelSelector>) -> PodAffinityTerm {
        PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            }),
            namespaces: (!ns.is_empty()).then(|| ns.iter().map(|s| s.to_string()).collect()),
            namespace_selector: ns_selector,
            topology_key: "zone".into(),
            ..Default::default()
        }
    }

    fn parse(t: PodAffinityTerm) -> AffinityTerm {
        let a = Affinity {
            pod_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![t]),
                ..Default::default()
            }),
            ..Default::default()
        };
        PodAffinityTerms::parse("own", Some(&a))
            .unwrap()
            .required_affinity
            .remove(0)
    }

    #[test]
    fn a_term_without_namespaces_or_selector_means_the_pods_own_namespace() {
        let t = parse(term(&[], None));
        let web: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        assert!(t.matches("own", &web, None));
        assert!(!t.matches("other", &web, None));
    }

    #[test]
    fn an_empty_namespace_selector_selects_every_namespace() {
        let t = parse(term(&[], Some(LabelSelector::default())));
        let web: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        assert!(t.matches("other", &web, None));
        assert!(!t.matches("other", &BTreeMap::new(), None));
    }

    #[test]
    fn listed_namespaces_replace_the_pods_own() {
        let t = parse(term(&["a", "b"], None));
        let web: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        assert!(t.matches("b", &web, None));
        assert!(!t.matches("own", &web, None));
    }

    #[test]
    fn a_namespace_selector_matches_the_namespace_labels() {
        let sel = LabelSelector {
            match_labels: Some([("team".to_string(), "x".to_string())].into()),
            ..Default::default()
        };
        let t = parse(term(&[], Some(sel)));
        let web: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        let team: BTreeMap<String, String> = [("team".to_string(), "x".to_string())].into();
        assert!(t.matches("other", &web, Some(&team)));
        assert!(!t.matches("other", &web, None));
    }
}
