//! The report's charts, as inline SVG: per node small multiples (pods with the node's state
//! behind them, requested CPU and memory against allocatable), pending pods over time, and a
//! lane of markers per kind of event (taints and node changes, node failures, evictions,
//! preemptions, scale events).

use serde_json::Value;

use crate::output::age::format_age_secs;

use super::sample::{NodeCell, NodeState, Samples};
use super::svg::{step_path, Scale, Svg};

/// Chart width and the left margin that holds the row labels.
const WIDTH: f64 = 1100.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 20.0;
/// Height of one node's row.
const ROW: f64 = 34.0;
/// Nodes drawn at most per chart (those with the most pods at any sample).
pub const MAX_NODES: usize = 40;

fn time_scale(end: f64) -> Scale {
    Scale {
        d0: 0.0,
        d1: end.max(1.0),
        r0: LEFT,
        r1: WIDTH - RIGHT,
    }
}

/// The time axis along the bottom of a chart at `y`: a tick at each of five even steps.
fn time_axis(svg: &mut Svg, x: Scale, y: f64) {
    svg.line((LEFT, y), (WIDTH - RIGHT, y), "#999", "axis");
    for i in 0..=5 {
        let t = x.d1 * f64::from(i) / 5.0;
        svg.line((x.at(t), y), (x.at(t), y + 4.0), "#999", "tick");
        svg.text(x.at(t), y + 16.0, "middle", &format_age_secs(t.round()));
    }
}

/// The nodes to draw: first those that were ever not Ready or cordoned, then those with the
/// most pods at any sample; listed in first-seen order.
pub fn chosen_nodes(samples: &Samples) -> Vec<usize> {
    let mut peak: Vec<(bool, u32, usize)> = (0..samples.names.len())
        .map(|i| {
            let cells = || samples.samples.iter().filter_map(|s| samples.cell(s, i));
            let trouble = cells().any(|c| c.state != NodeState::Ready || c.cordoned);
            (trouble, cells().map(|c| c.pods).max().unwrap_or(0), i)
        })
        .collect();
    peak.sort_by(|a, b| (b.0, b.1).cmp(&(a.0, a.1)).then(a.2.cmp(&b.2)));
    let mut chosen: Vec<usize> = peak
        .into_iter()
        .take(MAX_NODES)
        .map(|(_, _, i)| i)
        .collect();
    chosen.sort_unstable();
    chosen
}

/// One node's series of `value`, as `(time, value)` points where the node existed.
fn series(samples: &Samples, i: usize, value: &dyn Fn(&NodeCell) -> f64) -> Vec<(f64, f64)> {
    (samples.samples.iter())
        .filter_map(|s| samples.cell(s, i).map(|c| (s.time, value(&c))))
        .collect()
}

/// The bands behind a node's row: orange while NotReady, red while unreachable, grey while
/// cordoned; consecutive samples in the same state make one band.
fn state_bands(svg: &mut Svg, samples: &Samples, i: usize, x: Scale, top: f64, end: f64) {
    let all = &samples.samples;
    let mut runs: Vec<(f64, f64, NodeState, bool)> = Vec::new();
    for (k, s) in all.iter().enumerate() {
        let Some(c) = samples.cell(s, i) else {
            continue;
        };
        let next = all.get(k + 1).map_or(end, |n| n.time);
        match runs.last_mut() {
            Some(r) if r.1 == s.time && r.2 == c.state && r.3 == c.cordoned => r.1 = next,
            _ => runs.push((s.time, next, c.state, c.cordoned)),
        }
    }
    for (from, to, state, cordoned) in runs {
        let (x0, w) = (x.at(from), x.at(to) - x.at(from));
        let span = format!("{from:.0}s to {to:.0}s");
        let fill = match state {
            NodeState::Ready => None,
            NodeState::NotReady => Some(("#f6c28b", "NotReady")),
            NodeState::Unreachable => Some(("#f3a0a0", "unreachable (Ready=Unknown)")),
        };
        if let Some((fill, what)) = fill {
            svg.rect((x0, top), (w, ROW - 4.0), fill, &format!("{what}, {span}"));
        }
        if cordoned {
            svg.rect(
                (x0, top + ROW - 8.0),
                (w, 4.0),
                "#777",
                &format!("cordoned, {span}"),
            );
        }
    }
}

/// Small multiples, one row per chosen node: `value` as a step line, and `cap` (allocatable)
/// as a dashed line when given; rows share one vertical scale.
pub fn per_node(
    samples: &Samples,
    label: &str,
    value: &dyn Fn(&NodeCell) -> f64,
    cap: Option<&dyn Fn(&NodeCell) -> f64>,
    unit: &dyn Fn(f64) -> String,
    end: f64,
) -> String {
    let nodes = chosen_nodes(samples);
    let height = ROW * nodes.len() as f64 + 30.0;
    let mut svg = Svg::new(WIDTH, height);
    let x = time_scale(end);
    let top_value = (samples.samples.iter())
        .flat_map(|s| s.nodes.iter().flatten())
        .map(|c| value(c).max(cap.map_or(0.0, |f| f(c))))
        .fold(1.0_f64, f64::max);
    for (row, &i) in nodes.iter().enumerate() {
        let top = ROW * row as f64 + 4.0;
        let y = Scale {
            d0: 0.0,
            d1: top_value,
            r0: top + ROW - 6.0,
            r1: top + 2.0,
        };
        let name = &samples.names[i];
        if cap.is_none() {
            state_bands(&mut svg, samples, i, x, top, end);
        }
        let points = series(samples, i, value);
        let peak = points.iter().map(|p| p.1).fold(0.0, f64::max);
        svg.text(LEFT - 6.0, top + ROW / 2.0, "end", name);
        let range = format!("max {}", unit(peak));
        svg.text(LEFT - 6.0, top + ROW / 2.0 + 12.0, "end", &range);
        svg.line((LEFT, y.r0), (WIDTH - RIGHT, y.r0), "#ddd", "baseline");
        if let Some(cap) = cap {
            let d = step_path(&series(samples, i, cap), x, y, end);
            let title = format!("{name}: allocatable");
            svg.path(&d, "#888", "none", "allocatable", &title);
        }
        let title = format!("{name}: {label}, at most {}", unit(peak));
        let d = step_path(&points, x, y, end);
        svg.path(&d, "#1f6fb2", "none", "node-series", &title);
    }
    time_axis(&mut svg, x, height - 24.0);
    svg.finish(label)
}

/// Pending pods over time.
pub fn pending(samples: &Samples, end: f64) -> String {
    let height = 140.0;
    let mut svg = Svg::new(WIDTH, height);
    let x = time_scale(end);
    let points: Vec<(f64, f64)> = (samples.samples.iter())
        .map(|s| (s.time, f64::from(s.pending)))
        .collect();
    let most = points.iter().map(|p| p.1).fold(0.0, f64::max);
    let y = Scale {
        d0: 0.0,
        d1: most.max(1.0),
        r0: height - 30.0,
        r1: 10.0,
    };
    svg.text(LEFT - 6.0, y.r1 + 4.0, "end", &format!("{:.0}", y.d1));
    svg.text(LEFT - 6.0, y.r0, "end", "0");
    let d = step_path(&points, x, y, end);
    let title = format!("pending pods, at most {most:.0}");
    svg.path(&d, "#b2411f", "none", "pending-series", &title);
    time_axis(&mut svg, x, height - 24.0);
    svg.finish("pending pods over time")
}

/// The lane (row of the markers chart) a record belongs in, if any.
pub fn lane_of(r: &Value) -> Option<&'static str> {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    match (s("kind"), s("reason")) {
        ("Node", "NodeNotReady" | "RemovingNode" | "DeletingNode") => Some("node failures"),
        ("Pod", "TaintManagerEviction") => Some("evictions"),
        ("Pod", "Preempted") => Some("preemptions"),
        ("Deployment", "ScalingReplicaSet")
        | ("ReplicaSet", "SuccessfulCreate" | "SuccessfulDelete") => Some("scale events"),
        _ => None,
    }
}

const LANES: [(&str, &str); 5] = [
    ("node changes", "#6a3d9a"),
    ("node failures", "#d62728"),
    ("evictions", "#ff7f0e"),
    ("preemptions", "#9467bd"),
    ("scale events", "#2ca02c"),
];

/// One lane per kind of event, a tick per event (its text on hover): the node changes the
/// samples saw (taints, cordons, readiness) and the records of [`lane_of`].
pub fn markers(samples: &Samples, records: &[Value], end: f64) -> String {
    let height = 26.0 * LANES.len() as f64 + 30.0;
    let mut svg = Svg::new(WIDTH, height);
    let x = time_scale(end);
    for (k, (lane, colour)) in LANES.iter().enumerate() {
        let top = 26.0 * k as f64 + 4.0;
        svg.text(LEFT - 6.0, top + 15.0, "end", lane);
        svg.line(
            (LEFT, top + 20.0),
            (WIDTH - RIGHT, top + 20.0),
            "#eee",
            "lane",
        );
        let mut tick = |t: f64, title: &str| {
            svg.rect((x.at(t) - 1.0, top), (3.0, 20.0), colour, title);
        };
        if k == 0 {
            for m in samples.markers.iter().filter(|m| m.what != "added") {
                tick(
                    m.time,
                    &format!("{:.0}s node {}: {}", m.time, m.node, m.what),
                );
            }
            continue;
        }
        for r in records.iter().filter(|r| lane_of(r) == Some(lane)) {
            let t = r.get("time").and_then(Value::as_f64).unwrap_or(0.0);
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let title = format!("{t:.0}s {} {}: {}", s("reason"), s("name"), s("message"));
            tick(t, &title);
        }
    }
    time_axis(&mut svg, x, height - 24.0);
    svg.finish("events over time")
}

#[cfg(test)]
mod tests {
    use super::super::sample::Sample;
    use super::*;

    fn cell(pods: u32, state: NodeState) -> Option<NodeCell> {
        Some(NodeCell {
            pods,
            cpu_milli: 0,
            memory: 0,
            alloc_cpu_milli: 1000,
            alloc_memory: 1,
            state,
            cordoned: false,
        })
    }

    #[test]
    fn the_drawn_nodes_are_the_troubled_ones_then_the_busiest_in_first_seen_order() {
        let mut samples = Samples::new();
        samples.names = (0..MAX_NODES + 2).map(|i| format!("n{i}")).collect();
        let mut nodes: Vec<Option<NodeCell>> = (0..MAX_NODES + 2)
            .map(|i| cell(i as u32 + 10, NodeState::Ready))
            .collect();
        nodes[0] = cell(0, NodeState::Unreachable);
        samples.samples.push(Sample {
            time: 0.0,
            pending: 0,
            nodes,
        });
        let chosen = chosen_nodes(&samples);
        assert_eq!(chosen.len(), MAX_NODES);
        assert_eq!(chosen[0], 0, "the unreachable node, though it has no pods");
        assert!(
            !chosen.contains(&1) && !chosen.contains(&2),
            "the two least busy"
        );
        assert!(chosen.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_pod_event_lands_in_its_lane_and_other_events_in_none() {
        let r = |kind: &str, reason: &str| serde_json::json!({"kind": kind, "reason": reason});
        assert_eq!(lane_of(&r("Pod", "Preempted")), Some("preemptions"));
        assert_eq!(
            lane_of(&r("Pod", "TaintManagerEviction")),
            Some("evictions")
        );
        assert_eq!(
            lane_of(&r("Deployment", "ScalingReplicaSet")),
            Some("scale events")
        );
        assert_eq!(lane_of(&r("Pod", "Scheduled")), None);
    }
}
