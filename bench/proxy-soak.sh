#!/usr/bin/env bash
# The proxy's acceptance soak at full size: 200 concurrent clients × 50 tools/call each through
# `mcp-triage proxy` to the kitchen's chaos.mix (JSON and SSE responses, connection resets, 503s,
# malformed bodies, JSON-RPC errors, delays, SSE streams cut after the tool ran — clean end or
# mid-event break — and input rounds, answered by the clients), every call also sent directly to
# a twin instance that draws the same faults. Checks: every body the clients receive through the
# proxy is identical (SHA-256) to the direct one (an input_required body with its instance-bound
# requestState masked; the answered retries byte for byte), one record per request, and each
# record's outcome equals the client's verdict on the bytes it received. It runs twice: with two
# forwarding threads and with one (the CLI's default, where responses are observed after they
# were written). (The test suite runs the same tests at 50 × 20.) ~200 s.
#
#   bench/proxy-soak.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MCP_TRIAGE_SOAK=full cargo test -j 2 --manifest-path "$root/Cargo.toml" -p mcp-triage-proxy \
  --test http soak_chaos_mix -- --nocapture
