#!/usr/bin/env bash
# The browser test of `simulate --report`: renders the report of every example in headless
# Chromium and checks the rendered DOM (a series path per node in each per-node chart, one
# table row per record, a pod story per pod, the inline filter script at work), that the page
# logged nothing to the console (no script error), and that it names no external URL. Keeps
# each report and a screenshot under target/report-artifacts/.
#
# Usage: scripts/report-browser-test.sh [KUBEPLANE_BINARY]   (default: target/release/kubeplane)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/kubeplane}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "report-browser-test: no chromium installed (apt-get install -y chromium)" >&2
  exit 1
fi
out=target/report-artifacts
mkdir -p "$out"
# Headless Chromium, quiet about the D-Bus and sandbox of a machine without a desktop.
chrome() {
  timeout 120 "$browser" --headless --disable-gpu --no-sandbox --no-first-run \
    --user-data-dir="$out/.profile" "$@"
}
failed=0
for f in examples/*.yaml; do
  name=$(basename "$f" .yaml)
  html="$PWD/$out/$name.html"
  jsonl="$out/$name.jsonl"
  # The records the report shows: the run's records with the explanation records.
  "$bin" simulate --quiet --output jsonl --explain "$f" > "$jsonl" || true
  "$bin" simulate --quiet --output jsonl --report "$html" "$f" > /dev/null || true
  chrome --enable-logging=stderr --v=0 --dump-dom "file://$html" > "$out/$name.dom.html" \
    2> "$out/$name.console.log"
  chrome --dump-dom "file://$html#filter=Scheduled" > "$out/$name.filtered.html" 2>/dev/null
  chrome --screenshot="$PWD/$out/$name.png" --window-size=1280,2000 "file://$html" \
    > /dev/null 2>&1
  if ! python3 scripts/report_dom_check.py "$out/$name" "$html"; then
    echo "FAIL $name" >&2
    failed=1
  else
    echo "ok   $name"
  fi
done
rm -rf "$out/.profile"
exit $failed
