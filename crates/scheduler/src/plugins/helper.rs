//! Helpers shared by the plugins (upstream `plugins/helper`): score normalization and the
//! unpacking of queueing-hint event objects.

use kubeplane_api::StoredNode;
use kubeplane_api::StoredPod;

use crate::framework::EventObject;

/// Rescales raw scores to `[0, max]` in place (upstream `DefaultNormalizeScore`): every score
/// becomes `max * score / highest` (integer division); with `reverse` the result is flipped to
/// `max - that`, so the lowest raw score wins. When the highest score is 0 the scores stay 0,
/// or all become `max` when reversed.
pub fn default_normalize_score(max: i64, reverse: bool, scores: &mut [i64]) {
    // All zero (the common case of TaintToleration and NodeAffinity) is found by an OR, which
    // the compiler vectorises; the highest score is looked for only otherwise.
    let all_zero = scores.iter().fold(0, |acc, &s| acc | s) == 0;
    let highest = if all_zero {
        0
    } else {
        scores.iter().copied().fold(0, i64::max)
    };
    if highest == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = max);
        }
        return;
    }
    for s in scores.iter_mut() {
        let scaled = max * *s / highest;
        *s = if reverse { max - scaled } else { scaled };
    }
}

/// The node versions of a node event: `(old, new)`; the new one must be present (upstream
/// `util.As[*v1.Node]` on Add/Update events).
pub fn node_event<'a>(
    old: Option<EventObject<'a>>,
    new: Option<EventObject<'a>>,
) -> Result<(Option<&'a StoredNode>, &'a StoredNode), String> {
    let new = new
        .and_then(EventObject::as_node)
        .ok_or_else(|| "expected a Node as the new object of the event".to_string())?;
    let old = match old {
        None => None,
        Some(o) => Some(
            o.as_node()
                .ok_or_else(|| "expected a Node as the old object of the event".to_string())?,
        ),
    };
    Ok((old, new))
}

/// The pod versions of a pod event: `(old, new)`, either may be absent (Add has no old, Delete
/// has no new), but not both.
pub fn pod_event<'a>(
    old: Option<EventObject<'a>>,
    new: Option<EventObject<'a>>,
) -> Result<(Option<&'a StoredPod>, Option<&'a StoredPod>), String> {
    let as_pod = |o: Option<EventObject<'a>>, which: &str| match o {
        None => Ok(None),
        Some(o) => o
            .as_pod()
            .map(Some)
            .ok_or_else(|| format!("expected a Pod as the {which} object of the event")),
    };
    let old = as_pod(old, "old")?;
    let new = as_pod(new, "new")?;
    if old.is_none() && new.is_none() {
        return Err("a pod event without a pod".to_string());
    }
    Ok((old, new))
}

/// A pod's UID ("" when unset).
pub fn uid_of(pod: &StoredPod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or("")
}

/// The plugins' per-cycle maps hash with rustc's "Fx" hash: hashing short label values with
/// SipHash dominated the topology plugins' hot paths, and a fixed hasher keeps iteration order
/// the same from run to run.
pub use rustc_hash::FxHashMap;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_normalize_score_cases() {
        struct Case {
            name: &'static str,
            reverse: bool,
            scores: Vec<i64>,
            want: Vec<i64>,
        }
        let cases = [
            Case {
                name: "scores are scaled so the highest becomes 100",
                reverse: false,
                scores: vec![1, 2, 3, 4],
                want: vec![25, 50, 75, 100],
            },
            Case {
                name: "reversed scores make the lowest raw score the best",
                reverse: true,
                scores: vec![1, 2, 3, 4],
                want: vec![75, 50, 25, 0],
            },
            Case {
                name: "integer division truncates",
                reverse: false,
                scores: vec![1000, 10, 20, 30],
                want: vec![100, 1, 2, 3],
            },
            Case {
                name: "all-zero scores stay zero",
                reverse: false,
                scores: vec![0, 0, 0],
                want: vec![0, 0, 0],
            },
            Case {
                name: "all-zero scores reversed all become the maximum",
                reverse: true,
                scores: vec![0, 0, 0],
                want: vec![100, 100, 100],
            },
            Case {
                name: "without a positive score (not all zero) the highest is still zero",
                reverse: true,
                scores: vec![0, -1, 0],
                want: vec![100, 100, 100],
            },
            Case {
                name: "one positive score among zeros is the highest",
                reverse: false,
                scores: vec![0, 0, 0, 0, 0, 7],
                want: vec![0, 0, 0, 0, 0, 100],
            },
        ];
        for c in cases {
            let mut s = c.scores.clone();
            default_normalize_score(100, c.reverse, &mut s);
            assert_eq!(s, c.want, "{}", c.name);
        }
    }
}
