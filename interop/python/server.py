"""A Python SDK (PyPI `mcp`, pinned in requirements.lock) MCPServer — FastMCP's v2 name — over
Streamable HTTP on 127.0.0.1, for the client interop test (interop/client-interop.sh).

Tools: `echo` succeeds, `fail` raises a ToolError (the SDK answers with an `isError: true` result);
any other name is an unknown tool. Usage: python server.py PORT [--json] [--stateless]
"""

import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("mcp-triage-interop-python")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


@server.tool()
def fail(reason: str = "deliberate failure") -> str:
    """Always fail with a tool error."""
    raise ToolError(reason)


if __name__ == "__main__":
    port = int(sys.argv[1])
    server.run(
        transport="streamable-http",
        host="127.0.0.1",
        port=port,
        json_response="--json" in sys.argv,
        stateless_http="--stateless" in sys.argv,
    )
