#!/usr/bin/env python3
"""Compare two `kubeplane bench --json` documents.

    scripts/bench-compare.py A.json B.json

Prints, per workload and figure, A's value, B's value and the change from A to B in percent,
marked `better` or `worse` by the figure's direction (rates such as pods/s are better higher;
seconds, milliseconds and MiB lower). A figure on one side only shows `-` on the other.
Changes within --noise percent (default 3) are not marked. Exit status 0 (a report, not a
gate; 2 when a file cannot be read).
"""

import argparse
import json
import sys


def load(path):
    with open(path) as f:
        doc = json.load(f)
    figures = {}
    order = []
    for w in doc.get("workloads", []):
        for fig in w.get("figures", []):
            key = (w["name"], fig["name"])
            if key not in figures:
                order.append(key)
            figures[key] = fig
    return doc.get("machine", {}), figures, order


def better_higher(fig):
    better = fig.get("better")
    if better in ("higher", "lower"):
        return better == "higher"
    return fig.get("unit", "").endswith("/s")


def fmt(value):
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def verdict(a, b, higher, noise):
    if a is None or b is None:
        return "", ""
    if a == 0:
        return ("", "") if b == 0 else ("", "new")
    change = (b - a) / abs(a) * 100.0
    text = f"{change:+.1f}%"
    if abs(change) <= noise:
        return text, ""
    improved = (change > 0) == higher
    return text, "better" if improved else "worse"


def describe(machine):
    keys = ["kubeplane_version", "git_commit", "profile", "kubernetes_version", "scale_down",
            "cores", "load_average_1m"]
    return ", ".join(f"{k} {machine.get(k)}" for k in keys if machine.get(k) is not None)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--noise", type=float, default=3.0,
                   help="changes within this many percent are not marked (default 3)")
    args = p.parse_args(argv)
    try:
        ma, fa, oa = load(args.a)
        mb, fb, ob = load(args.b)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"A: {args.a} ({describe(ma)})")
    print(f"B: {args.b} ({describe(mb)})")
    keys = oa + [k for k in ob if k not in fa]
    rows = [("workload", "figure", "unit", "A", "B", "change", "")]
    for key in keys:
        a, b = fa.get(key), fb.get(key)
        fig = a or b
        va = a["value"] if a else None
        vb = b["value"] if b else None
        change, mark = verdict(va, vb, better_higher(fig), args.noise)
        rows.append((key[0], key[1], fig.get("unit", ""), fmt(va), fmt(vb), change, mark))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {3, 4, 5}
    for r in rows:
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                 for i, c in enumerate(r)]
        print("  ".join(cells).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
