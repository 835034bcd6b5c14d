#!/usr/bin/env bash
# The arrow_interop ctest (README.md): strata writes, apache-arrow checks; apache-arrow
# writes, strata checks. Fails on any mismatch, and when the npm packages are not installed.
#   interop_test.sh ARROW_INTEROP_BINARY OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$1
out=$2

if [[ ! -f "$here/node_modules/apache-arrow/package.json" ]]; then
  echo "FAIL: $here/node_modules is missing: run tests/interop/install first" >&2
  exit 1
fi
if ! command -v node >/dev/null 2>&1; then
  echo "FAIL: node is not installed (scripts/setup installs it)" >&2
  exit 1
fi

step() {
  echo "== $*"
  "$@"
}
rm -rf "$out"
step "$bin" write "$out/strata"
step "$bin" check "$out/strata"
step node "$here/check.mjs" read "$out/strata"
step node "$here/check.mjs" write "$out/js"
step "$bin" check "$out/js" basic lz4 sliced empty align8 large_lz4  # no zstd encoder in JS
echo "arrow interop: all checks passed"
