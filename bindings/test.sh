#!/usr/bin/env bash
# Builds the Python wheel (maturin) and the npm package (napi-rs) from this checkout, installs
# them the way a user would (pip install the wheel into a virtualenv; npm install the packed
# tarball into a scratch project), and runs their tests:
#   - every golden vector of crates/mcp-triage-core/tests/golden through each binding gives the
#     verdict the Rust core gives (`mcp-triage classify --batch --each --format json`, key for key),
#     whole and fed in chunks; and each of them compressed with gzip, br and zstd (written by the
#     core's `coded_golden` example; the CLI checked on them first) gives the plain one's verdict;
#   - property tests (hypothesis, fast-check): random bytes and random chunk splits;
#   - the API: argument forms, the exceptions bad arguments raise, the retry policy;
#   - Node: require and import of the installed package, and the TypeScript definitions (tsc).
#
#   bash bindings/test.sh
#
# Needs cargo, python3 with venv, node >= 20 and npm. Installs the pinned PyPI packages of
# bindings/python/requirements.lock into bindings/python/.venv and the pinned npm devDependencies
# of bindings/node/package-lock.json (npm ci). When the interop step installed Node 22
# (interop/node_modules/.bin/node), the Node tests run under it too. JOBS: cargo -j (default 2).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"
JOBS="${JOBS:-2}"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/bindings-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "== the Rust core's verdicts for the golden vectors (mcp-triage classify --batch --each)"
cargo build -p mcp-triage -j "$JOBS"
export MCP_TRIAGE_EXPECTED="$tmp/expected"
mkdir -p "$MCP_TRIAGE_EXPECTED"
for f in crates/mcp-triage-core/tests/golden/*.jsonl; do
  # --now 0: the golden vectors' clock when a line names none (the core's default, the Unix epoch)
  target/debug/mcp-triage classify --batch "$f" --each --format json --now 0 --jobs 1 \
    >"$MCP_TRIAGE_EXPECTED/$(basename "$f")"
done

echo "== the golden vectors compressed (gzip, br, zstd): the CLI gives each the plain line's verdict"
export MCP_TRIAGE_CODED="$tmp/coded"
cargo run -q -j "$JOBS" -p mcp-triage-core --example coded_golden -- "$MCP_TRIAGE_CODED"
for f in "$MCP_TRIAGE_CODED"/*.jsonl; do
  target/debug/mcp-triage classify --batch "$f" --each --format json --now 0 --jobs 1 >"$f.verdicts"
  python3 - "$f" "$f.verdicts" "$MCP_TRIAGE_EXPECTED/$(basename "$f")" <<'PY'
import json, sys
coded, got, want = (open(p, encoding="utf-8").read().splitlines() for p in sys.argv[1:])
want = [w for w in want if w.strip()]
for line, verdict in zip(coded, got, strict=True):
    plain = json.loads(line)["plainLine"]
    if json.loads(verdict) != json.loads(want[plain - 1]):
        sys.exit(f"{sys.argv[1]}: line {plain} compressed: {verdict} != {want[plain - 1]}")
PY
done

echo "== Python: build the wheel (maturin), pip install it into bindings/python/.venv"
source bindings/python/venv.sh
venv="$bindings_venv"
(cd bindings/python && "$venv/bin/maturin" build --quiet -j "$JOBS" -o "$tmp/wheels")
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input --force-reinstall --no-deps "$tmp"/wheels/mcp_triage-*.whl
echo "== Python: tests (pytest, hypothesis)"
# From a directory outside the source tree, so that the installed wheel is what is imported.
(cd "$tmp" && "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/bindings/python/tests")

echo "== Node: build the addon (napi build), pack the npm package"
node_dir="$root/bindings/node"
if [ ! -f "$node_dir/node_modules/.package-lock.json" ] ||
  ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.package-lock.json.ci"; then
  (cd "$node_dir" && npm ci --no-audit --no-fund && cp package-lock.json node_modules/.package-lock.json.ci)
fi
(cd "$node_dir" && CARGO_BUILD_JOBS="$JOBS" npx napi build --dts native.d.ts)
(cd "$node_dir" && npm pack --silent --pack-destination "$tmp" >/dev/null)
node_versions=(node)
if [ -x interop/node_modules/.bin/node ]; then
  node_versions+=("$root/interop/node_modules/.bin/node")
fi
for n in "${node_versions[@]}"; do
  echo "== Node $("$n" --version): tests (node:test, fast-check)"
  (cd "$node_dir" && "$n" --test test/*.test.js test/*.test.mjs)
done

echo "== Node: the packed package, installed with npm, loads with require and import"
mkdir -p "$tmp/consumer"
(cd "$tmp/consumer" && echo '{"name":"consumer","private":true}' >package.json &&
  npm install --silent --no-audit --no-fund --offline "$tmp"/mcp-triage-*.tgz)
(cd "$tmp/consumer" &&
  node -e "const t = require('mcp-triage'); const v = t.classify(503, {}, Buffer.alloc(0)); if (v.outcome !== 'HTTP_ERROR') throw new Error(JSON.stringify(v)); console.log('require: ' + JSON.stringify(v))" &&
  node --input-type=module -e "import { classify } from 'mcp-triage'; const v = classify(204, {}, new Uint8Array(0)); if (v.outcome !== 'MISSING_RESPONSE') throw new Error(JSON.stringify(v)); console.log('import: ' + JSON.stringify(v))")
echo "== Node: TypeScript definitions (tsc --strict)"
(cd "$node_dir" && npx tsc --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 --types node test/types.ts)

echo "bindings: all passed"
