#!/usr/bin/env bash
# @modelcontextprotocol/inspector-cli (pinned in interop/package-lock.json) as `mcp-triage judge`
# sees it: one `--method tools/call` with the tool and arguments the judge asks for
# (MCP_TRIAGE_TOOL, MCP_TRIAGE_ARGS as --tool-arg key=value pairs).
#
#   mcp-triage judge --client 'bash interop/judge/inspector-cli.sh {url}'
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
node="$here/../node_modules/.bin/node"
url="${1:-${MCP_TRIAGE_URL:?usage: inspector-cli.sh URL}}"
mapfile -t pairs < <("$node" -e '
  for (const [k, v] of Object.entries(JSON.parse(process.env.MCP_TRIAGE_ARGS || "{}")))
    console.log(`${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);')
tool_args=()
for p in "${pairs[@]}"; do tool_args+=(--tool-arg "$p"); done
# 1.0.3 imports its package.json by a path it tests relative to the working directory but
# resolves relative to its module: it only starts with its build/ directory as cwd.
cd "$here/../node_modules/@modelcontextprotocol/inspector-cli/build"
exec "$node" index.js "$url" \
  --transport http --method tools/call \
  --tool-name "${MCP_TRIAGE_TOOL:-run_configured_test_scenario}" "${tool_args[@]}"
