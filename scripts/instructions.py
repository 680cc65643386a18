#!/usr/bin/env python3
"""The instruction-count gate: a few small fixed workloads under valgrind's callgrind.

    scripts/instructions.py check  [--bin target/release/kubeplane] [--baseline bench/instructions.json]
    scripts/instructions.py update [--bin ...] [--baseline ...]
    scripts/instructions.py measure [--bin ...]        # print the counts, compare with nothing

Wall time on a shared machine is noisy; instruction counts are not. Each workload runs once
under `valgrind --tool=callgrind` (one rayon thread, so no idle thread spins into the count)
and its `Collected` Ir is compared with the committed baseline: `check` fails (exit 1) when a
count grew by more than --limit percent (10 by default) and reports shrinking; `update`
rewrites the baseline (commit it with the change that moved the counts, saying why). The
baseline records the toolchain it was measured with; a different toolchain is named in the
output, since a compiler update alone moves counts by a few percent.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

# name -> kubeplane arguments. Small, deterministic, each a few seconds under callgrind.
WORKLOADS = {
    "scheduling-basic": ["bench", "--scale-down", "10", "scheduling-basic-10k"],
    "preemption-basic": ["bench", "--scale-down", "10", "preemption-basic"],
    "heartbeats": ["bench", "--scale-down", "100", "heartbeats-24h"],
    "deployment-scale": ["bench", "--scale-down", "10", "deployment-scale"],
}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def collected(text):
    """The `Collected` Ir of callgrind's output (its stderr), or None."""
    m = re.search(r"Collected\s*:\s*([0-9]+)", text)
    return int(m.group(1)) if m else None


def toolchain():
    try:
        out = subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def measure_one(binary, args):
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    with tempfile.NamedTemporaryFile(suffix=".callgrind") as out:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", binary] + args
        started = time.monotonic()
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
        secs = time.monotonic() - started
    count = collected(r.stderr)
    if r.returncode != 0 or count is None:
        sys.stderr.write(r.stdout + r.stderr)
        raise SystemExit(f"error: {' '.join(args)} failed under callgrind (exit {r.returncode})")
    return count, secs


def compare(baseline, counts, limit):
    """Lines describing each workload against the baseline, and whether any grew past limit."""
    lines, failed = [], False
    for name, count in counts.items():
        base = baseline.get(name, {}).get("instructions")
        if base is None:
            lines.append(f"{name}: {count:,} Ir (no baseline)")
            continue
        change = (count - base) / base * 100.0
        if change > limit:
            verdict = f"GREW by more than {limit:g}%"
            failed = True
        elif change < -limit:
            verdict = f"shrank by more than {limit:g}%: `update` the baseline to keep the gain"
        elif change < -1.0:
            verdict = "shrank"
        else:
            verdict = "ok"
        lines.append(f"{name}: {count:,} Ir, baseline {base:,} ({change:+.2f}%): {verdict}")
    for name in baseline:
        if name not in counts:
            lines.append(f"{name}: in the baseline but not measured")
    return lines, failed


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=["check", "update", "measure"])
    p.add_argument("--bin", default=os.path.join(ROOT, "target/release/kubeplane"))
    p.add_argument("--baseline", default=os.path.join(ROOT, "bench/instructions.json"))
    p.add_argument("--limit", type=float, default=10.0, help="percent of growth that fails")
    p.add_argument("workloads", nargs="*", help="only these (default: all)")
    args = p.parse_args(argv)
    names = args.workloads or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        print(f"error: no workload {', '.join(unknown)}; they are {', '.join(WORKLOADS)}",
              file=sys.stderr)
        return 2
    counts = {}
    for name in names:
        count, secs = measure_one(args.bin, WORKLOADS[name])
        counts[name] = count
        print(f"{name}: {count:,} Ir ({secs:.1f} s under callgrind)", flush=True)
    rustc = toolchain()
    if args.action == "measure":
        return 0
    if args.action == "update":
        doc = {
            "about": "Instructions (callgrind Collected Ir, RAYON_NUM_THREADS=1) of "
                     "scripts/instructions.py's workloads; `check` fails on growth over 10%.",
            "toolchain": rustc,
            "workloads": {n: {"args": WORKLOADS[n], "instructions": c} for n, c in counts.items()},
        }
        os.makedirs(os.path.dirname(args.baseline), exist_ok=True)
        with open(args.baseline, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"wrote {args.baseline}")
        return 0
    with open(args.baseline) as f:
        doc = json.load(f)
    if doc.get("toolchain") != rustc:
        print(f"note: the baseline was measured with {doc.get('toolchain')}, this is {rustc}")
    baseline = {n: w for n, w in doc.get("workloads", {}).items() if n in names}
    lines, failed = compare(baseline, counts, args.limit)
    print("\n".join(lines))
    if failed:
        print("instruction gate FAILED: a workload grew; if on purpose, run "
              "`scripts/instructions.py update` and commit bench/instructions.json")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
