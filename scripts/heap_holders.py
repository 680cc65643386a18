#!/usr/bin/env python3
"""Sums a heaptrack profile's live heap at its peak by holder (issue 19's memory map).

    cargo build --release -p kubeplane --no-default-features     # the system allocator
    heaptrack -o env4 target/release/kubeplane bench envelope --scale-down 4
    heaptrack_print -f env4.zst --print-peaks 0 --print-allocators 0 --print-temporary 0 \
        --print-leaks 0 --flamegraph-cost-type peak -F peak.stacks
    scripts/heap_holders.py peak.stacks

heaptrack needs the system allocator (mimalloc's calls bypass its hooks). Each stack is
filed under the first rule whose pattern matches it (frames as `function@file`, leaf first),
so the rules go from the most specific holder to the most general; the figures are bytes
live at the heap's peak, not the process's RSS (the allocator's slack comes on top).
"""

import collections
import re
import sys

RULES = [
    ("setup objects (bench)", r"objects@bench_envelope|namespace@bench_envelope|envelope@bench_envelope"),
    ("ReplicaSet status writes (versions)", r"update_replica_set_status"),
    ("Deployment status writes (versions)", r"sync_rollout_status|sync_deployment_status|update_deployment_status"),
    ("events", r"event@engine\.rs|normal<>@event\.rs|warning<>@event\.rs|record_event"),
    ("admitted specs (per template)", r"admit_priority|default_toleration_seconds|share_defaulted|apply_match_label"),
    ("per-call template parts (ReplicaSet controller)", r"template_spec"),
    ("Terminating versions", r"plan_delete"),
    ("Running versions (agents' start_pod)", r"start_pod"),
    ("NotReady versions", r"mark_pods_not_ready"),
    ("created pod versions (store insert)", r"create_pod@pod_control"),
    ("new ReplicaSets and Deployments", r"rollout_rolling|get_new_replica_set"),
    ("garbage collector's graph", r"added@mod\.rs|garbage_collector"),
    ("node status versions (agents)", r"post_status|copy_of"),
    ("node Leases", r"lease"),
    ("agents' per-pod entries", r"track_pod|observe@agents|agents\.rs"),
    ("scheduler", r"scheduler\.rs|schedule_one|binding_cycle|scheduling_cycle|queue|active\.rs|heap\.rs"),
    ("PodTopologySpread's pods by namespace", r"pods_by_namespace|score_counts"),
    ("ReplicaSet controller's cache", r"@cache\.rs"),
    ("node_util", r"node_util"),
    ("taints", r"taint"),
    ("store (other)", r"store\.rs"),
    ("engine's delivery (other)", r"deliver@engine"),
]


def frame(f):
    name, _, rest = f.partition(" (")
    return f"{name[-60:]}@{rest.rstrip(')')}"


def main(path):
    totals = collections.Counter()
    with open(path) as stacks:
        for line in stacks:
            stack, _, cost = line.rstrip("\n").rpartition(" ")
            if not cost.isdigit() or int(cost) == 0:
                continue
            frames = " < ".join(reversed([frame(f) for f in stack.split(";") if f]))
            holder = next((n for n, p in RULES if re.search(p, frames)), "other")
            totals[holder] += int(cost)
    whole = sum(totals.values()) or 1
    for holder, b in totals.most_common():
        print(f"{b / 1e6:8.2f} MB {100 * b / whole:5.1f}%  {holder}")
    print(f"{whole / 1e6:8.2f} MB total")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
