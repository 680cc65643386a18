#!/usr/bin/env python3
"""Runs the shared conformance suite and checks its outcome against docs/compatibility.md.

Every scenario must pass, or be listed in the "Known conformance failures" table of
docs/compatibility.md (a row whose first cell is the scenario path, e.g.
`preemption/foo.yaml`). A listed scenario that passes is reported, so the list stays honest.
Also runs the determinism check (each scenario twice, byte-identical output), and checks that
reusing node-local scheduling results changes nothing: each scenario's `--explain` output with
and without `--recompute-node-local` must be byte-identical.

The conformance scenarios state Kubernetes v1.34.0 facts, so they run with
`--kubernetes-version 1.34.0` (the shared runner takes no extra flags: it is given a small
wrapper that adds the flag after the subcommand). The examples name their own release where
it matters and run as they are.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

CONFORMANCE_VERSION = "1.34.0"


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


def versioned_binary(bin_path, directory):
    """An executable that runs bin_path with --kubernetes-version CONFORMANCE_VERSION added
    after the subcommand."""
    wrapper = os.path.join(directory, "kubeplane")
    with open(wrapper, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\n")
        f.write('command="$1"; shift\n')
        f.write(
            f'exec {shlex.quote(os.path.abspath(bin_path))} "$command" '
            f'--kubernetes-version {CONFORMANCE_VERSION} "$@"\n'
        )
    os.chmod(wrapper, 0o755)
    return wrapper


def node_local_differences(bin_path, files, extra=()):
    """The files whose explained output changes with --recompute-node-local."""
    differ = []
    for f in files:
        cmd = [bin_path, "simulate", f, "--output", "jsonl", "--explain", *extra]
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
    if not (os.path.isfile(args.bin) and os.access(args.bin, os.X_OK)):
        print(f"kubeplane binary not found at {args.bin}", file=sys.stderr)
        return 2
    listed = listed_failures("docs/compatibility.md")
    with tempfile.TemporaryDirectory() as tmp:
        return check(args, runner, listed, versioned_binary(args.bin, tmp))


LOCAL_SCENARIOS = os.path.join("conformance", "scenarios")


def suites():
    """The scenario folders to run: the shared suite, and the project's own scenarios (derived
    from upstream's controller tests for the kinds the shared suite does not cover) when present.
    Each is given as the extra runner arguments that select it."""
    out = [("shared", [])]
    if os.path.isdir(LOCAL_SCENARIOS):
        out.append(("project", ["--dir", os.path.abspath(LOCAL_SCENARIOS)]))
    return out


def run_suites(runner, conformance_bin, extra=()):
    """Runs every suite; returns the combined output and the summed pass and fail counts."""
    outputs, passed, failed = [], 0, 0
    for name, sel in suites():
        _, out = run([sys.executable, runner, "--bin", conformance_bin, "-j", "2", *sel, *extra])
        m = re.search(r"^(\d+) passed, (\d+) failed", out, re.M)
        if m:
            passed += int(m.group(1))
            failed += int(m.group(2))
        outputs.append(f"[{name}]\n{out.rstrip()}")
    return "\n".join(outputs), passed, failed


def check(args, runner, listed, conformance_bin):
    out, n_passed, n_failed = run_suites(runner, conformance_bin)
    print(f"(conformance scenarios run with --kubernetes-version {CONFORMANCE_VERSION})")
    print(out.rstrip())
    print(f"{n_passed} passed, {n_failed} failed (all suites)")
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
    out, _, _ = run_suites(runner, conformance_bin, ["--determinism"])
    det_failed = set(re.findall(r"^FAIL (\S+\.yaml)", out, re.M)) - listed
    for line in out.splitlines():
        if line.startswith("[") or re.match(r"^\d+ passed", line):
            print("determinism: " + line)
    if det_failed:
        ok = False
        print("scenarios whose output differs between two runs:")
        for s in sorted(det_failed):
            print(f"  {s}")
    files = list(scenario_files(args.shared))
    if os.path.isdir(LOCAL_SCENARIOS):
        files += [
            os.path.join(d, n)
            for d, _, names in sorted(os.walk(LOCAL_SCENARIOS))
            for n in sorted(names)
            if n.endswith(".yaml")
        ]
    examples = sorted(
        os.path.join("examples", n) for n in os.listdir("examples") if n.endswith(".yaml")
    )
    version = ("--kubernetes-version", CONFORMANCE_VERSION)
    differ = node_local_differences(args.bin, files, version)
    differ += node_local_differences(args.bin, examples)
    print(f"node-local reuse: {len(files) + len(examples) - len(differ)} identical, {len(differ)} differ")
    if differ or not files:
        ok = False
        for f in differ:
            print(f"  {f}")
    print("conformance: " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
