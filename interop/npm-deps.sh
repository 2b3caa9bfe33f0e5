# Sourced by the interop scripts: install the pinned npm packages (package-lock.json) with
# `npm ci` unless every one of them is present, and set $node22 to the Node 22 binary from the
# npm package `node@22` (the conformance CLI needs Node >= 22; the system one may be older).
_interop_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -x "$_interop_dir/node_modules/.bin/node" ] ||
  [ ! -f "$_interop_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] ||
  [ ! -f "$_interop_dir/node_modules/conformance-alpha/dist/index.js" ] ||
  [ ! -f "$_interop_dir/node_modules/@modelcontextprotocol/sdk/package.json" ] ||
  [ ! -f "$_interop_dir/node_modules/@modelcontextprotocol/server-everything/package.json" ] ||
  [ ! -f "$_interop_dir/node_modules/@modelcontextprotocol/inspector-cli/package.json" ] ||
  [ ! -f "$_interop_dir/node_modules/@modelcontextprotocol/client/package.json" ] ||
  [ ! -f "$_interop_dir/node_modules/@ai-sdk/mcp/package.json" ] ||
  [ ! -f "$_interop_dir/node_modules/playwright-core/package.json" ]; then
  (cd "$_interop_dir" && npm ci --no-audit --no-fund >&2)
fi
node22="$_interop_dir/node_modules/.bin/node"
