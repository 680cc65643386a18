#!/usr/bin/env python3
"""The Python `kubernetes` client against `kubeplane serve`: list, create, watch, scale,
patch, delete, and the Status errors it turns into ApiException.

    scripts/serve_python_test.py KUBEPLANE

Starts its own server on a free loopback port (stopped at the end); exit 1 on a failed check.
"""
import os
import subprocess
import sys
import tempfile
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def check(name, cond, detail=""):
    if not cond:
        print(f"FAIL [python] {name} {detail}")
        sys.exit(1)
    print(f"ok   [python] {name}")


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "kubeconfig")
        server = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig,
             os.path.join(HERE, "tests", "serve", "cluster.yaml")],
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(100):
                if os.path.exists(kubeconfig) and os.path.getsize(kubeconfig) > 0:
                    break
                time.sleep(0.1)
            config.load_kube_config(config_file=kubeconfig)
            story()
        finally:
            server.terminate()
            code = server.wait(timeout=20)
            check("the server stops cleanly on SIGTERM", code == 0, f"exit {code}")


def story():
    core = client.CoreV1Api()
    apps = client.AppsV1Api()
    nodes = core.list_node()
    check("list nodes", sorted(n.metadata.name for n in nodes.items) == ["node-a", "node-b", "node-c"])
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="solo", labels={"app": "solo"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
    )
    core.create_namespaced_pod("default", pod)
    deadline = time.time() + 30
    phase = None
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, "default", field_selector="metadata.name=solo", timeout_seconds=30):
        phase = ev["object"].status.phase
        if phase == "Running" and ev["object"].spec.node_name:
            w.stop()
        if time.time() > deadline:
            w.stop()
    check("a created pod is scheduled and Running, seen through a watch", phase == "Running", phase)
    try:
        core.read_namespaced_pod("missing", "default")
        check("a missing pod is a 404", False)
    except ApiException as e:
        check("a missing pod is a 404 NotFound Status", e.status == 404 and '"reason":"NotFound"' in e.body.replace(" ", ""), e.body)
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="api"),
        spec=client.V1DeploymentSpec(
            replicas=2,
            selector=client.V1LabelSelector(match_labels={"app": "api"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "api"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
            ),
        ),
    )
    apps.create_namespaced_deployment("default", dep)
    apps.patch_namespaced_deployment_scale("api", "default", {"spec": {"replicas": 3}})
    for _ in range(150):
        d = apps.read_namespaced_deployment("api", "default")
        if (d.status.ready_replicas or 0) == 3:
            break
        time.sleep(0.2)
    check("a deployment scaled through its scale subresource becomes ready", (d.status.ready_replicas or 0) == 3, str(d.status))
    try:
        stale = apps.read_namespaced_deployment("api", "default")
        apps.patch_namespaced_deployment("api", "default", {"metadata": {"labels": {"x": "1"}}})
        apps.replace_namespaced_deployment("api", "default", stale)
        check("a stale update is a 409", False)
    except ApiException as e:
        check("a stale update is a 409 Conflict", e.status == 409, e.body)
    core.delete_namespaced_pod("solo", "default")
    apps.delete_namespaced_deployment("api", "default")
    check("deletes are accepted", True)


if __name__ == "__main__":
    main()
