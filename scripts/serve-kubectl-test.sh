#!/usr/bin/env bash
# The kubectl story against `kubeplane serve`: a real application applied with kubectl's
# default validation, rollout status, scale, label, annotate, every patch type kubeplane
# serves, server-side apply (conflicts between field managers, --force-conflicts, the
# managers in --show-managed-fields), taint, cordon, drain against a PodDisruptionBudget, get -w, --chunk-size, describe,
# events, delete --wait and namespace deletion, kubectl create's generators (protobuf bodies:
# namespace, deployment, configmap, secret, service, job, cronjob), and a CustomResourceDefinition
# (apply, wait for Established, custom resources with printer columns, patch, scale, deletion
# with the definition), with each kubectl given.
#
#   scripts/serve-kubectl-test.sh KUBEPLANE KUBECTL...
#   STORY_ETCD=path/to/etcd scripts/serve-kubectl-test.sh ...   # the objects in etcd
#
# Each kubectl gets its own server (loopback, a free port, stopped at the end). Exit 1 on the
# first failed check, naming it.
set -uo pipefail
bin=$1; shift
here=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL [$kc_version] $*"; exit 1; }
check() { # check NAME EXPECTED ACTUAL
  if [[ "$3" != *"$2"* ]]; then fail "$1: expected to contain '$2', got: $3"; fi
  echo "ok   [$kc_version] $1"
}
wait_for() { # wait_for NAME SECONDS COMMAND...: until COMMAND succeeds
  local name=$1 secs=$2; shift 2
  for _ in $(seq $((secs * 5))); do "$@" >/dev/null 2>&1 && { echo "ok   [$kc_version] $name"; return; }; sleep 0.2; done
  fail "$name: not within ${secs}s"
}
story() {
  # tmp and server are global: the EXIT trap may run after the function has returned.
  local k=$1
  tmp=$(mktemp -d)
  kc_version=$("$k" version --client -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])')
  local store=()
  if [ -n "${STORY_ETCD:-}" ]; then
    # The objects in a one-member etcd of the story's own (upstream's binary, $STORY_ETCD).
    local ports; ports=$(python3 -c 'import socket
for _ in range(2):
    s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' | tr '\n' ' ')
    read -r cport pport <<<"$ports"
    "$STORY_ETCD" --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$cport" \
      --advertise-client-urls "http://127.0.0.1:$cport" --listen-peer-urls "http://127.0.0.1:$pport" \
      --initial-advertise-peer-urls "http://127.0.0.1:$pport" --initial-cluster "default=http://127.0.0.1:$pport" \
      >"$tmp/etcd.log" 2>&1 &
    etcd_pid=$!
    for _ in $(seq 100); do curl -s "http://127.0.0.1:$cport/health" | grep -q true && break; sleep 0.1; done
    store=(--etcd-servers "http://127.0.0.1:$cport")
  fi
  "$bin" serve --listen 127.0.0.1:0 --kubeconfig-out "$tmp/kubeconfig" --data-dir "$tmp/data" "${store[@]}" \
    "$here/tests/serve/cluster.yaml" 2>"$tmp/server.log" &
  server=$!
  # On return, and on a failed check's exit too (a RETURN trap does not run on exit).
  trap 'kill $server ${etcd_pid:-} 2>/dev/null; wait $server ${etcd_pid:-} 2>/dev/null; rm -rf "$tmp"' RETURN EXIT
  for _ in $(seq 100); do [ -s "$tmp/kubeconfig" ] && break; sleep 0.1; done
  [ -s "$tmp/kubeconfig" ] || fail "the server wrote no kubeconfig: $(cat "$tmp/server.log")"
  export KUBECONFIG=$tmp/kubeconfig
  local server_url; server_url=$(grep -o 'https://[^ "]*' "$tmp/kubeconfig" | head -1)

  check "unauthenticated requests get a 401 Status" '"reason":"Unauthorized"' "$(curl -sk "$server_url/api/v1/pods")"
  check "version" "v1.34" "$("$k" version 2>&1)"
  local token; token=$("$k" config view --raw -o jsonpath='{.users[0].user.token}')
  check "a write without fieldManager is managed under its User-Agent's name" '"manager":"my-tool"' \
    "$(curl -sk -H "Authorization: Bearer $token" -H 'User-Agent: my-tool/1.0 (linux/amd64)' -H 'Content-Type: application/json' \
      -X POST "$server_url/api/v1/namespaces/default/configmaps" -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"user-agent"},"data":{"k":"v"}}')"
  check "explain reads the served OpenAPI v3 schemas" "FIELD: strategy <DeploymentStrategy>" "$("$k" explain deployment.spec.strategy 2>&1)"
  check "explain reads the served OpenAPI v2 protobuf" "RESOURCE: strategy <Object>" "$("$k" explain deployment.spec.strategy --output=plaintext-openapiv2 2>&1)"
  check "apply with default validation" "deployment.apps/web created" "$("$k" apply -f "$here/tests/serve/app.yaml" 2>&1)"
  "$k" apply -f "$here/tests/serve/apply/before.yaml" >/dev/null 2>&1
  check "apply again removes the list items it no longer lists (merge keys from the schema)" \
    "main [{\"name\":\"A\",\"value\":\"1\"}]" \
    "$("$k" apply -f "$here/tests/serve/apply/after.yaml" >/dev/null 2>&1; "$k" get deploy envtest -o jsonpath='{.spec.template.spec.containers[*].name} {.spec.template.spec.containers[0].env}' 2>&1)"
  "$k" delete -f "$here/tests/serve/apply/before.yaml" >/dev/null 2>&1
  check "strict validation rejects an unknown field" 'unknown field "spec.replica"' \
    "$(echo '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bad","namespace":"shop"},"spec":{"replica":1,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}' | "$k" apply -f - 2>&1)"
  check "rollout status" "successfully rolled out" "$("$k" -n shop rollout status deploy/web --timeout=60s 2>&1)"
  check "get pods -o wide shows pod IPs from the node's pod network" " 10.244." \
    "$("$k" -n shop get pods -o wide --no-headers 2>&1 | tr -s ' ')"
  "$k" run pinned --image=nginx --overrides='{"spec":{"nodeName":"node-b"}}' >/dev/null 2>&1
  wait_for "a pod created already bound runs on its node" 20 \
    bash -c "\"$k\" get pod pinned -o jsonpath='{.status.phase} {.spec.nodeName}' | grep -q 'Running node-b'"
  "$k" delete pod pinned --wait=true >/dev/null 2>&1
  check "/metrics has upstream's scheduler and apiserver names" 'scheduler_pending_pods{queue="active"}' \
    "$("$k" get --raw /metrics 2>&1 | grep -E '^(scheduler_pending_pods|scheduler_schedule_attempts_total|apiserver_request_total)' | sort -u)"
  check "scale" "deployment.apps/web scaled" "$("$k" -n shop scale deploy/web --replicas=5 2>&1)"
  wait_for "five pods Running after scale" 30 bash -c "[ \$('$k' -n shop get pods -l app=web --field-selector=status.phase=Running -o name | wc -l) -eq 5 ]"
  # (the manager is kubectl's User-Agent prefix: its binary's name)
  check "the scale write owns spec.replicas in an entry with subresource scale" \
    "/scale/Update/{\"f:spec\":{\"f:replicas\":{}}}" \
    "$("$k" -n shop get deploy web -o jsonpath='{range .metadata.managedFields[*]}{.manager}/{.subresource}/{.operation}/{.fieldsV1} {end}' 2>&1)"
  check "the control plane's writes record their managers (controller manager, kubelet)" \
    "kube-controller-manager//Update kubelet/status/Update" \
    "$("$k" -n shop get pods -l app=web -o jsonpath='{range .items[0].metadata.managedFields[*]}{.manager}/{.subresource}/{.operation} {end}' 2>&1)"
  check "label" "labeled" "$("$k" -n shop label deploy web tier=front 2>&1)"
  check "annotate" "annotated" "$("$k" -n shop annotate deploy web note=hello 2>&1)"
  check "label selector" "deployment.apps/web" "$("$k" -n shop get deploy -l tier=front -o name 2>&1)"
  check "merge patch" "patched" "$("$k" -n shop patch deploy web --type=merge -p '{"spec":{"replicas":4}}' 2>&1)"
  check "json patch" "patched" "$("$k" -n shop patch deploy web --type=json -p '[{"op":"add","path":"/metadata/annotations/json","value":"yes"}]' 2>&1)"
  check "strategic merge patch" "patched" "$("$k" -n shop patch deploy web -p '{"metadata":{"labels":{"patched":"yes"}}}' 2>&1)"
  check "patches applied" "4 yes" "$("$k" -n shop get deploy web -o jsonpath='{.spec.replicas} {.metadata.labels.patched}' 2>&1)"
  local cm='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa","namespace":"default"},"data":{"color":"COLOR"}}'
  check "apply --server-side" "configmap/ssa serverside-applied" "$(echo "${cm/COLOR/blue}" | "$k" apply --server-side -f - 2>&1)"
  check "a conflicting server-side apply by another field manager fails" 'Apply failed with 1 conflict: conflict with "kubectl": .data.color' \
    "$(echo "${cm/COLOR/red}" | "$k" apply --server-side --field-manager=ops -f - 2>&1)"
  check "--force-conflicts takes the field" "configmap/ssa serverside-applied" \
    "$(echo "${cm/COLOR/red}" | "$k" apply --server-side --field-manager=ops --force-conflicts -f - 2>&1)"
  check "the forced value" "red" "$("$k" get configmap ssa -o jsonpath='{.data.color}' 2>&1)"
  check "--show-managed-fields shows the managers" "manager: ops" "$("$k" get configmap ssa -o yaml --show-managed-fields 2>&1)"
  check "a server-side apply conflicts with an update's field" 'conflict with "kubectl-patch" using apps/v1: .spec.replicas' \
    "$(echo '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":2}}' | "$k" apply --server-side --field-manager=ops -f - 2>&1)"
  check "taint" "tainted" "$("$k" taint node node-a dedicated=db:NoSchedule 2>&1)"
  check "cordon" "cordoned" "$("$k" cordon node-b 2>&1)"
  check "cordoned node" "true" "$("$k" get node node-b -o jsonpath='{.spec.unschedulable}' 2>&1)"
  "$k" uncordon node-b >/dev/null 2>&1
  local node; node=$("$k" -n shop get pods -l app=web -o jsonpath='{.items[0].spec.nodeName}')
  check "drain against a PodDisruptionBudget" "drained" "$("$k" drain "$node" --ignore-daemonsets --timeout=60s 2>&1)"
  [ -z "$("$k" -n shop get pods --field-selector=spec.nodeName="$node" -o name 2>&1)" ] || fail "pods left on $node"
  echo "ok   [$kc_version] no pod left on the drained node"
  check "get -w streams changes" "web-" "$(timeout 3 "$k" -n shop get pods -w 2>&1)"
  check "--chunk-size pages" "4" "$("$k" -n shop get pods -l app=web --chunk-size=1 -o name 2>&1 | wc -l)"
  local pod; pod=$("$k" -n shop get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
  check "describe shows the scheduler's event" "Successfully assigned shop/$pod" "$("$k" -n shop describe pod "$pod" 2>&1)"
  check "events" "Scheduled" "$("$k" -n shop events 2>&1)"
  check "delete --dry-run=server" '(server dry run)' "$("$k" -n shop delete deploy web --dry-run=server 2>&1)"
  check "a server dry run deletes nothing" "deployment.apps/web" "$("$k" -n shop get deploy web -o name 2>&1)"
  check "delete --wait" 'deleted' "$("$k" -n shop delete deploy web --wait=true --timeout=60s 2>&1)"
  check "namespace deletion" 'namespace "shop" deleted' "$("$k" delete namespace shop --timeout=60s 2>&1)"
  wait_for "the namespace is gone" 30 bash -c "! '$k' get namespace shop"
  # kubectl's generators use client-go's typed clients, which send protobuf bodies.
  check "create namespace (a protobuf body)" "namespace/gen created" "$("$k" create namespace gen 2>&1)"
  check "create deployment" "deployment.apps/web2 created" "$("$k" -n gen create deployment web2 --image=nginx --replicas=2 --port=80 2>&1)"
  check "the created deployment's fields" "2 nginx app=web2 80" \
    "$("$k" -n gen get deploy web2 -o jsonpath='{.spec.replicas} {.spec.template.spec.containers[0].image} app={.spec.selector.matchLabels.app} {.spec.template.spec.containers[0].ports[0].containerPort}' 2>&1)"
  wait_for "the created deployment's two pods Running" 30 bash -c "[ \$('$k' -n gen get pods -l app=web2 --field-selector=status.phase=Running -o name | wc -l) -eq 2 ]"
  check "create configmap" "configmap/settings created" "$("$k" -n gen create configmap settings --from-literal=mode=fast --from-literal=empty= 2>&1)"
  check "the created configmap's data" '{"empty":"","mode":"fast"}' "$("$k" -n gen get configmap settings -o jsonpath='{.data}' 2>&1)"
  check "create secret generic" "secret/db created" "$("$k" -n gen create secret generic db --from-literal=password=s3cret 2>&1)"
  check "the created secret's bytes" "czNjcmV0" "$("$k" -n gen get secret db -o jsonpath='{.data.password}' 2>&1)"
  check "a secret without a type is Opaque" "Opaque" "$("$k" -n gen get secret db -o jsonpath='{.type}' 2>&1)"
  check "the kubernetes Service at the range's first address" "10.96.0.1 443" \
    "$("$k" get service kubernetes -o jsonpath='{.spec.clusterIP} {.spec.ports[0].port}' 2>&1)"
  check "create service (an IntOrString targetPort)" "service/web2 created" "$("$k" -n gen create service clusterip web2 --tcp=80:8080 2>&1)"
  check "the created service's ports" "80 8080 ClusterIP" "$("$k" -n gen get service web2 -o jsonpath='{.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.type}' 2>&1)"
  check "the created service's cluster IP (kubectl get svc)" "web2 ClusterIP 10." \
    "$("$k" -n gen get service web2 --no-headers 2>&1 | tr -s ' ')"
  check "create job" "job.batch/hello created" "$("$k" -n gen create job hello --image=busybox -- echo hi 2>&1)"
  check "the created job's template" "busybox echo Never" \
    "$("$k" -n gen get job hello -o jsonpath='{.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].command[0]} {.spec.template.spec.restartPolicy}' 2>&1)"
  check "create cronjob" "cronjob.batch/tick created" "$("$k" -n gen create cronjob tick --image=busybox --schedule='*/5 * * * *' 2>&1)"
  check "the created cronjob's schedule" "*/5 * * * *" "$("$k" -n gen get cronjob tick -o jsonpath='{.spec.schedule}' 2>&1)"
  crd_story "$k"
  "$k" get pods -A >/dev/null 2>&1 || fail "the server stopped answering"
}
crd_story() { # a CustomResourceDefinition and its custom resources
  local k=$1
  check "apply a CustomResourceDefinition" "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created" \
    "$("$k" apply -f "$here/tests/serve/crd/crd.yaml" 2>&1)"
  check "wait --for condition=established" "condition met" \
    "$("$k" wait --for condition=established --timeout=30s crd/widgets.example.com 2>&1)"
  check "apply custom resources (default validation)" "widget.example.com/large created" "$("$k" apply -f "$here/tests/serve/crd/cr.yaml" 2>&1)"
  check "get prints the definition's columns" "NAME    SIZE   COLOR   AGE" "$("$k" get widgets 2>&1)"
  check "explain reads the custom resource's schema" "FIELD: spec <Object>" "$("$k" explain widgets.spec 2>&1)"
  check "get by short name" "large" "$("$k" get wd large -o name 2>&1)"
  check "another served version" "example.com/v1beta1" "$("$k" get widgets.v1beta1.example.com small -o jsonpath='{.apiVersion}' 2>&1)"
  check "patch --type merge" "patched" "$("$k" patch widget small --type merge -p '{"spec":{"color":"green"}}' 2>&1)"
  check "the patched field" "green" "$("$k" get widget small -o jsonpath='{.spec.color}' 2>&1)"
  check "the schema is validated" "spec.size in body should be less than or equal to 10" \
    "$("$k" patch widget small --type merge -p '{"spec":{"size":11}}' 2>&1)"
  check "scale through the scale subresource" "scaled" "$("$k" scale widget large --replicas=3 2>&1)"
  check "the scaled replicas" "3" "$("$k" get widget large -o jsonpath='{.spec.replicas}' 2>&1)"
  check "strategic merge patch is refused for custom resources" "UnsupportedMediaType" \
    "$("$k" patch widget small --type strategic -p '{"spec":{"color":"x"}}' -v=6 2>&1 | grep -o 'UnsupportedMediaType\|415' | head -1 | sed 's/415/UnsupportedMediaType/')"
  check "delete crd" 'customresourcedefinition.apiextensions.k8s.io "widgets.example.com" deleted' \
    "$("$k" delete crd widgets.example.com --timeout=30s 2>&1)"
  check "the custom resources are no longer served" "the server could not find the requested resource" \
    "$("$k" get --raw /apis/example.com/v1/namespaces/default/widgets 2>&1)"
}
for k in "$@"; do story "$k"; done
echo "kubectl story${STORY_ETCD:+ on etcd}: passed with $# kubectl build(s)"
