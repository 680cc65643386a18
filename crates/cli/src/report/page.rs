//! The HTML document of `simulate --report`: inline CSS, the charts, the records in a table a
//! small inline script filters, and the pods' stories in `<details>` elements.

use std::fmt::Write;

use serde_json::Value;

use super::charts;
use super::sample::{NodeCell, Samples};
use super::svg::esc;
use crate::output::str_of as s;

/// Records the table shows at most (the first ones in time).
const MAX_ROWS: usize = 20_000;

/// What the page is made of.
pub struct Parts<'a> {
    /// Virtual seconds at the end of the run.
    pub end: f64,
    pub records: &'a [Value],
    pub samples: &'a Samples,
    /// `(namespace/name, story)` of each pod told.
    pub stories: &'a [(String, String)],
    pub stories_left_out: usize,
    pub pods_at_end: usize,
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}\
h1{font-size:22px}h2{font-size:17px;margin-top:28px}\
svg{display:block;max-width:100%;height:auto}svg text{font-size:11px;fill:#333}\
path{stroke-width:1.5}path.allocatable{stroke-dasharray:4 3}\
table{border-collapse:collapse;width:100%;font-size:12px}\
td,th{border-bottom:1px solid #eee;padding:2px 6px;text-align:left;vertical-align:top}\
tr.Warning td{color:#a30}pre{background:#f7f7f7;padding:8px;overflow-x:auto}\
.legend span{display:inline-block;margin-right:14px}\
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}\
.note{color:#666}";

/// The filter of the records table: text (any column) and kind; a `#filter=TEXT` fragment in
/// the page's address fills it in (a link to a filtered table, and the browser test's hook).
const SCRIPT: &str = "(function(){var q=document.getElementById('q'),k=document.getElementById('k');\
function f(){var t=q.value.toLowerCase(),kind=k.value;\
document.querySelectorAll('#events tbody tr').forEach(function(r){\
var ok=(!kind||r.dataset.kind===kind)&&r.textContent.toLowerCase().indexOf(t)>=0;\
r.style.display=ok?'':'none';});}\
q.addEventListener('input',f);k.addEventListener('change',f);\
var h=decodeURIComponent(location.hash.slice(1));if(h.indexOf('filter=')===0){q.value=h.slice(7);f();}})();";

/// A quantity of bytes in the largest binary unit that keeps it above 1.
fn bytes(v: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = v;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

/// The text of a record's last column: its message, else for a scheduling attempt its node
/// and for a scale-down decision its victims, else its decision and reason, else its JSON.
fn detail(r: &Value) -> String {
    if !s(r, "message").is_empty() {
        return s(r, "message").to_string();
    }
    if s(r, "kind") == "SchedulingAttempt" {
        let attempt = r.get("attempt").and_then(Value::as_u64).unwrap_or(0);
        return format!(
            "attempt {attempt}: {} on node {}",
            s(r, "result"),
            s(r, "node")
        );
    }
    if s(r, "kind") == "ScaleDownDecision" {
        let victims: Vec<&str> = (r.get("victims").and_then(Value::as_array))
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let survivor = s(r, "firstSurvivor");
        return format!("deletes {}; first survivor {survivor}", victims.join(", "));
    }
    match (s(r, "decision"), s(r, "reason")) {
        ("", "") => r.to_string(),
        (d, why) => format!("{d} {why}").trim().to_string(),
    }
}

/// The reason column: an event's reason, an eviction decision's decision, a scheduling
/// attempt's result.
fn reason_of(r: &Value) -> &str {
    match s(r, "kind") {
        "EvictionDecision" => s(r, "decision"),
        "SchedulingAttempt" => s(r, "result"),
        _ => s(r, "reason"),
    }
}

fn events_table(records: &[Value]) -> String {
    let mut kinds: Vec<&str> = records.iter().map(|r| s(r, "kind")).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let mut out = String::from(
        "<p><input id=\"q\" type=\"search\" placeholder=\"filter: reason, name, text\" size=\"40\"> \
         <select id=\"k\"><option value=\"\">every kind</option>",
    );
    for k in &kinds {
        let _ = write!(out, "<option>{}</option>", esc(k));
    }
    out.push_str(
        "</select></p>\n<table id=\"events\"><thead><tr><th>time</th><th>kind</th>\
                  <th>reason</th><th>object</th><th>detail</th></tr></thead><tbody>\n",
    );
    for r in records.iter().take(MAX_ROWS) {
        let t = r.get("time").and_then(Value::as_f64).unwrap_or(0.0);
        let object = match (s(r, "namespace"), s(r, "name")) {
            ("", name) => name.to_string(),
            (ns, name) => format!("{ns}/{name}"),
        };
        let _ = writeln!(
            out,
            "<tr class=\"{}\" data-kind=\"{}\"><td>{t}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(s(r, "type")),
            esc(s(r, "kind")),
            esc(s(r, "kind")),
            esc(reason_of(r)),
            esc(&object),
            esc(&detail(r)),
        );
    }
    out.push_str("</tbody></table>\n");
    if records.len() > MAX_ROWS {
        let _ = writeln!(
            out,
            "<p class=\"note\">The first {MAX_ROWS} of {} records are shown.</p>",
            records.len()
        );
    }
    out
}

fn stories(parts: &Parts) -> String {
    let mut out = String::new();
    for (pod, story) in parts.stories {
        let _ = writeln!(
            out,
            "<details class=\"why\" data-pod=\"{}\"><summary>{}</summary><pre>{}</pre></details>",
            esc(pod),
            esc(pod),
            esc(story)
        );
    }
    if parts.stories_left_out > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more pods are not told here: kubeplane why POD FILE... \
             tells any pod's story.</p>",
            parts.stories_left_out
        );
    }
    out
}

const LEGEND: &str = "<p class=\"legend\"><span><i style=\"background:#1f6fb2\"></i>pods on \
the node</span><span><i style=\"background:#f6c28b\"></i>NotReady</span><span><i \
style=\"background:#f3a0a0\"></i>unreachable (Ready=Unknown)</span><span><i \
style=\"background:#777\"></i>cordoned</span></p>";

fn charts_html(parts: &Parts) -> String {
    let (sm, end) = (parts.samples, parts.end);
    let mut out = String::new();
    let drawn = charts::chosen_nodes(sm).len();
    if drawn < sm.names.len() {
        let _ = writeln!(
            out,
            "<p class=\"note\">The per-node charts draw {drawn} of {} nodes: those ever not \
             Ready or cordoned first, then those with the most pods.</p>",
            sm.names.len()
        );
    }
    let pods = |c: &NodeCell| f64::from(c.pods);
    let count = |v: f64| format!("{v:.0}");
    let cpu = |c: &NodeCell| c.cpu_milli as f64 / 1000.0;
    let alloc_cpu = |c: &NodeCell| c.alloc_cpu_milli as f64 / 1000.0;
    let cores = |v: f64| format!("{v:.2} CPU");
    let mem = |c: &NodeCell| c.memory as f64;
    let alloc_mem = |c: &NodeCell| c.alloc_memory as f64;
    let sections: [(&str, &str, String); 5] = [
        (
            "timeline",
            "Events over time",
            charts::markers(sm, parts.records, end),
        ),
        (
            "pods-per-node",
            "Pods per node",
            LEGEND.to_string() + &charts::per_node(sm, "pods", &pods, None, &count, end),
        ),
        ("pending", "Pending pods", charts::pending(sm, end)),
        (
            "cpu",
            "Requested CPU per node (dashed: allocatable)",
            charts::per_node(sm, "requested CPU", &cpu, Some(&alloc_cpu), &cores, end),
        ),
        (
            "memory",
            "Requested memory per node (dashed: allocatable)",
            charts::per_node(sm, "requested memory", &mem, Some(&alloc_mem), &bytes, end),
        ),
    ];
    for (id, title, body) in sections {
        let _ = writeln!(
            out,
            "<section id=\"{id}\"><h2>{}</h2>\n{body}\n</section>",
            esc(title)
        );
    }
    out
}

/// The whole page.
pub fn document(parts: &Parts) -> String {
    let mut out = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        out,
        "<title>kubeplane run report</title><style>{STYLE}</style></head><body>\n\
         <h1>kubeplane run report</h1>\n<p>{:.0}s of virtual time; {} nodes seen, {} pods at \
         the end; {} records; {} samples of the state.</p>\n",
        parts.end,
        parts.samples.names.len(),
        parts.pods_at_end,
        parts.records.len(),
        parts.samples.samples.len(),
    );
    out.push_str(&charts_html(parts));
    let _ = writeln!(
        out,
        "<section id=\"records\"><h2>Records</h2>\n{}</section>",
        events_table(parts.records)
    );
    let _ = writeln!(
        out,
        "<section id=\"pods\"><h2>Why: each pod's story</h2>\n{}</section>",
        stories(parts)
    );
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn page(records: &[Value], stories: &[(String, String)]) -> String {
        let samples = Samples::new();
        document(&Parts {
            end: 60.0,
            records,
            samples: &samples,
            stories,
            stories_left_out: 0,
            pods_at_end: 1,
        })
    }

    #[test]
    fn names_and_messages_with_markup_characters_are_escaped_everywhere() {
        let records = [json!({"time": 1.0, "kind": "Pod", "type": "Warning",
            "reason": "FailedScheduling", "namespace": "ns", "name": "a<b>&\"c\"'d",
            "message": "0/1 nodes <script>alert(1)</script>"})];
        let stories = [("ns/a<b>".to_string(), "Pod ns/a<b> & \"x\"".to_string())];
        let html = page(&records, &stories);
        assert!(html.contains("ns/a&lt;b&gt;&amp;&quot;c&quot;&#39;d"));
        assert!(html.contains("0/1 nodes &lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("<pre>Pod ns/a&lt;b&gt; &amp; &quot;x&quot;</pre>"));
        assert!(!html.contains("<script>alert"));
        assert!(!html.contains("a<b>"));
        assert_eq!(
            html.matches("<script>").count(),
            1,
            "only the filter script"
        );
    }

    #[test]
    fn the_page_names_no_external_url_except_the_svg_namespace() {
        let records = [
            json!({"time": 1.0, "kind": "Node", "reason": "NodeNotReady",
            "name": "n1", "message": "Node n1 status is now: NodeNotReady"}),
        ];
        let html = page(&records, &[]);
        let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        assert!(html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
        for tag in ["<link", "<img", "<iframe", " src="] {
            assert!(!html.contains(tag), "{tag}");
        }
    }

    #[test]
    fn the_table_has_a_row_per_record_and_a_kind_option_per_kind() {
        let records = [
            json!({"time": 0.0, "kind": "Node", "reason": "RegisteredNode", "name": "n1"}),
            json!({"time": 5.0, "kind": "SchedulingAttempt", "namespace": "d", "name": "p",
                "attempt": 1, "result": "Scheduled", "node": "n1"}),
            json!({"time": 6.0, "kind": "Node", "reason": "NodeNotReady", "name": "n1"}),
        ];
        let html = events_table(&records);
        assert_eq!(html.matches("<tr class=").count(), 3);
        assert_eq!(html.matches("<option>").count(), 2);
        assert!(
            html.contains("<td>Scheduled</td><td>d/p</td><td>attempt 1: Scheduled on node n1</td>")
        );
    }

    #[test]
    fn bytes_are_shown_in_the_largest_binary_unit() {
        assert_eq!(bytes(512.0), "512.0 B");
        assert_eq!(bytes(3.0 * 1024.0 * 1024.0 * 1024.0), "3.0 GiB");
    }
}
