#!/usr/bin/env python3
"""Runs the shared conformance suite and checks its outcome against docs/compatibility.md.

Every scenario must pass, or be listed in the "Known conformance failures" table of
docs/compatibility.md (a row whose first cell is the scenario path, e.g.
`preemption/foo.yaml`). A listed scenario that passes is reported, so the list stays honest.
Also runs the determinism check (each scenario twice, byte-identical output), and checks that
reusing node-local scheduling results changes nothing: each scenario's `--explain` output with
and without `--recompute-node-local` must be byte-identical.
"""
import argparse
import os
import re
import subprocess
import sys


def listed_failures(path):
    listed = set()
    in_table = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_table = line.strip().lower().startswith("## known conformance failures")
                continue
            if in_table:
                m = re.match(r"\|\s*`([^`]+\.yaml)`\s*\|", line)
                if m:
                    listed.add(m.group(1))
    return listed


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def scenario_files(shared):
    root = os.path.join(shared, "conformance", "scenarios")
    for dirpath, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            if name.endswith(".yaml"):
                yield os.path.join(dirpath, name)


def node_local_differences(bin_path, files):
    """The files whose explained output changes with --recompute-node-local."""
    differ = []
    for f in files:
        cmd = [bin_path, "simulate", f, "--output", "jsonl", "--explain"]
        a = run(cmd)
        b = run(cmd + ["--recompute-node-local"])
        if a != b:
            differ.append(f)
    return differ


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--bin", default="target/release/kubeplane")
    args = ap.parse_args()
    runner = os.path.join(args.shared, "conformance", "run.py")
    if not os.path.exists(runner):
        print(f"conformance runner not found at {runner}", file=sys.stderr)
        return 2
    listed = listed_failures("docs/compatibility.md")
    code, out = run([sys.executable, runner, "--bin", args.bin, "-j", "2"])
    print(out.rstrip())
    failed = set(re.findall(r"^FAIL (\S+\.yaml)", out, re.M))
    unexpected = sorted(failed - listed)
    fixed = sorted(listed - failed)
    ok = True
    if unexpected:
        ok = False
        print("\nfailing scenarios not listed in docs/compatibility.md:")
        for s in unexpected:
            print(f"  {s}")
    if fixed:
        print("\nlisted in docs/compatibility.md but passing now (remove them from the list):")
        for s in fixed:
            print(f"  {s}")
        ok = False
    if not re.search(r"^\d+ passed, \d+ failed", out, re.M):
        print("the conformance runner printed no summary", file=sys.stderr)
        ok = False
    code, out = run([sys.executable, runner, "--bin", args.bin, "-j", "2", "--determinism"])
    det_failed = set(re.findall(r"^FAIL (\S+\.yaml)", out, re.M)) - listed
    print("determinism: " + (out.strip().splitlines() or ["(no output)"])[-1])
    if det_failed:
        ok = False
        print("scenarios whose output differs between two runs:")
        for s in sorted(det_failed):
            print(f"  {s}")
    files = list(scenario_files(args.shared))
    examples = sorted(
        os.path.join("examples", n) for n in os.listdir("examples") if n.endswith(".yaml")
    )
    differ = node_local_differences(args.bin, files + examples)
    print(f"node-local reuse: {len(files) + len(examples) - len(differ)} identical, {len(differ)} differ")
    if differ or not files:
        ok = False
        for f in differ:
            print(f"  {f}")
    print("conformance: " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
