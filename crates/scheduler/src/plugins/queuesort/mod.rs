//! PrioritySort (QueueSort): activeQ pops the highest-priority pod first, and among equal
//! priorities the one queued earliest (upstream `plugins/queuesort/priority_sort.go`).

use crate::framework::{Plugin, QueueSortPlugin, QueuedPodInfo};

pub const NAME: &str = "PrioritySort";

#[derive(Debug, Default)]
pub struct PrioritySort;

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for PrioritySort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority, b.pod_info.priority);
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kubeplane_core::SimTime;

    use super::*;
    use crate::plugins::testing::{PodBuilder, PodBuilderExt};

    fn queued(name: &str, priority: i32, at_secs: i64) -> QueuedPodInfo {
        let info = PodBuilder::new(name).priority(priority).info();
        QueuedPodInfo::new(Arc::new(info), SimTime::from_secs(at_secs))
    }

    #[test]
    fn less() {
        struct Case {
            name: &'static str,
            a: QueuedPodInfo,
            b: QueuedPodInfo,
            want: bool,
        }
        let cases = [
            Case {
                name: "a pod with higher priority comes first",
                a: queued("a", 100, 1),
                b: queued("b", 10, 0),
                want: true,
            },
            Case {
                name: "a pod with lower priority comes later",
                a: queued("a", 10, 0),
                b: queued("b", 100, 1),
                want: false,
            },
            Case {
                name: "with equal priority the earlier-queued pod comes first",
                a: queued("a", 100, 0),
                b: queued("b", 100, 1),
                want: true,
            },
            Case {
                name: "with equal priority and timestamp neither comes first",
                a: queued("a", 100, 1),
                b: queued("b", 100, 1),
                want: false,
            },
        ];
        for c in cases {
            assert_eq!(PrioritySort.less(&c.a, &c.b), c.want, "{}", c.name);
        }
    }
}
