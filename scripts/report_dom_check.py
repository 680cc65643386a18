#!/usr/bin/env python3
"""Checks one example's report as headless Chromium rendered it (scripts/report-browser-test.sh).

Usage: report_dom_check.py PREFIX REPORT_HTML
PREFIX.jsonl: the run's records with --explain; PREFIX.dom.html: the rendered DOM;
PREFIX.filtered.html: the DOM rendered with #filter=Scheduled; PREFIX.console.log: the
browser's log. Standard library only.
"""

import json
import re
import sys
from html.parser import HTMLParser

MAX_NODES = 40  # report/charts.rs MAX_NODES
MAX_ROWS = 20000  # report/page.rs MAX_ROWS


class Dom(HTMLParser):
    """Counts what the checks need: series paths per section, table rows with their text and
    visibility, pod stories."""

    def __init__(self):
        super().__init__()
        self.section = None
        self.paths = {}
        self.svgs = 0
        self.rows = []  # [text, hidden]
        self.in_tbody = False
        self.row = None
        self.stories = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
        elif tag == "svg":
            self.svgs += 1
        elif tag == "path":
            key = (self.section, a.get("class"))
            self.paths[key] = self.paths.get(key, 0) + 1
        elif tag == "tbody":
            self.in_tbody = True
        elif tag == "tr" and self.in_tbody:
            hidden = "display: none" in (a.get("style") or "")
            self.row = ["", hidden]
            self.rows.append(self.row)
        elif tag == "details" and "why" in (a.get("class") or ""):
            self.stories += 1

    def handle_endtag(self, tag):
        if tag == "tbody":
            self.in_tbody = False
        elif tag == "tr":
            self.row = None

    def handle_data(self, data):
        if self.row is not None:
            self.row[0] += data


def parse(path):
    dom = Dom()
    with open(path, encoding="utf-8") as f:
        dom.feed(f.read())
    return dom


def main():
    prefix, report = sys.argv[1], sys.argv[2]
    records = [json.loads(l) for l in open(prefix + ".jsonl", encoding="utf-8") if l.strip()]
    nodes = {r.get("name") for r in records if r.get("kind") == "Node"}
    pods = {(r.get("namespace"), r.get("name")) for r in records if r.get("kind") == "Pod"}
    dom = parse(prefix + ".dom.html")
    errors = []

    def expect(what, got, want):
        if got != want:
            errors.append(f"{what}: {got}, expected {want}")

    expect("svg charts", dom.svgs, 5)
    drawn = min(MAX_NODES, len(nodes))
    for section in ("pods-per-node", "cpu", "memory"):
        expect(f"node series paths in #{section}", dom.paths.get((section, "node-series"), 0), drawn)
    expect("pending series paths", dom.paths.get(("pending", "pending-series"), 0), 1)
    expect("records table rows", len(dom.rows), min(MAX_ROWS, len(records)))
    if pods and dom.stories == 0:
        errors.append("no pod story (<details class=why>)")
    filtered = parse(prefix + ".filtered.html")
    want = [("scheduled" not in text.lower()) for text, _ in dom.rows]
    expect("rows hidden by #filter=Scheduled", [h for _, h in filtered.rows], want)
    console = [l for l in open(prefix + ".console.log", encoding="utf-8", errors="replace")
               if ":CONSOLE" in l or "Uncaught" in l]
    if console:
        errors.append("console output: " + "".join(console[:5]))
    source = open(report, encoding="utf-8").read()
    without_ns = source.replace('xmlns="http://www.w3.org/2000/svg"', "")
    external = re.findall(r'https?://[^"\s<]*', without_ns)
    if external:
        errors.append(f"external URLs: {external[:5]}")
    if re.search(r"<(link|img|iframe)\b|\bsrc=", source):
        errors.append("a link, img, iframe or src attribute")
    for e in errors:
        print(f"  {prefix}: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
