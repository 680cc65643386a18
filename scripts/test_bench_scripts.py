#!/usr/bin/env python3
"""Tests of scripts/bench-compare.py and scripts/instructions.py (no valgrind needed).

    python3 scripts/test_bench_scripts.py      # also run by `cargo test -p kubeplane --test bench_json`
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


instructions = load("instructions", "instructions.py")


def doc(throughput, wall, peak, extra=None):
    figures = [
        {"name": "throughput", "value": throughput, "unit": "pods/s", "better": "higher"},
        {"name": "wall", "value": wall, "unit": "s", "better": "lower"},
        {"name": "peak memory", "value": peak, "unit": "MiB", "better": "lower"},
    ]
    if extra:
        figures.append(extra)
    return {"machine": {"kubeplane_version": "0.1.0", "cores": 2},
            "workloads": [{"name": "scheduling-basic-10k", "figures": figures}]}


class BenchCompare(unittest.TestCase):
    def run_compare(self, a, b):
        with tempfile.TemporaryDirectory() as d:
            pa, pb = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            for path, content in ((pa, a), (pb, b)):
                with open(path, "w") as f:
                    json.dump(content, f)
            r = subprocess.run([sys.executable, os.path.join(HERE, "bench-compare.py"), pa, pb],
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return {line.split()[1]: line for line in r.stdout.splitlines()
                if line.startswith("scheduling-basic-10k")}

    def test_a_faster_run_is_better_in_pods_per_second_and_in_seconds(self):
        rows = self.run_compare(doc(1000, 2.0, 100), doc(1500, 1.0, 100))
        self.assertIn("+50.0%", rows["throughput"])
        self.assertTrue(rows["throughput"].endswith("better"), rows["throughput"])
        self.assertIn("-50.0%", rows["wall"])
        self.assertTrue(rows["wall"].endswith("better"), rows["wall"])

    def test_more_memory_is_worse_and_a_small_change_is_not_marked(self):
        rows = self.run_compare(doc(1000, 2.0, 100), doc(1010, 2.0, 120))
        self.assertIn("+20.0%", rows["peak"])
        self.assertTrue(rows["peak"].endswith("worse"), rows["peak"])
        self.assertTrue(rows["throughput"].endswith("+1.0%"), rows["throughput"])

    def test_a_figure_on_one_side_only_shows_a_dash_on_the_other(self):
        extra = {"name": "p99", "value": 3.5, "unit": "ms", "better": "lower"}
        rows = self.run_compare(doc(1000, 2.0, 100), doc(1000, 2.0, 100, extra))
        self.assertRegex(rows["p99"], r"ms\s+-\s+3\.50")


class InstructionGate(unittest.TestCase):
    def test_the_collected_line_of_callgrind_is_read(self):
        err = "==1== Events    : Ir\n==1== Collected : 123456789\n==1==\n==1== I   refs:      123,456,789\n"
        self.assertEqual(instructions.collected(err), 123456789)
        self.assertIsNone(instructions.collected("no summary"))

    def test_growth_over_the_limit_fails_and_shrinking_passes(self):
        base = {"a": {"instructions": 1000}, "b": {"instructions": 1000}}
        lines, failed = instructions.compare(base, {"a": 1101, "b": 900}, 10.0)
        self.assertTrue(failed)
        self.assertIn("GREW", lines[0])
        self.assertIn("shrank", lines[1])
        lines, failed = instructions.compare(base, {"a": 1099, "b": 800}, 10.0)
        self.assertFalse(failed)
        self.assertIn("update", lines[1])

    def test_a_workload_missing_from_the_baseline_does_not_fail(self):
        lines, failed = instructions.compare({}, {"a": 5}, 10.0)
        self.assertFalse(failed)
        self.assertIn("no baseline", lines[0])


if __name__ == "__main__":
    unittest.main()
