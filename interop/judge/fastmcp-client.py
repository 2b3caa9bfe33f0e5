"""FastMCP's client (`fastmcp`, pinned in interop/python/requirements.lock) as `mcp-triage judge`
sees it: `Client(url)` (Streamable HTTP inferred from the URL), the one tool call the judge asks
for (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS) with `call_tool`, an elicitation accepted, what came back
printed. FastMCP defaults everywhere (`call_tool` raises ToolError on isError): the point is to
grade the library's own behaviour.

    mcp-triage judge --client 'interop/.venv/bin/python interop/judge/fastmcp-client.py {url}'
"""
import asyncio
import json
import os
import sys

from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult


async def on_elicit(message, response_type, params, context):
    return ElicitResult(action="accept", content={"reason": "approved by the judge run"})


async def main(url: str) -> int:
    tool = os.environ.get("MCP_TRIAGE_TOOL", "run_configured_test_scenario")
    args = json.loads(os.environ.get("MCP_TRIAGE_ARGS", "{}"))
    async with Client(url, elicitation_handler=on_elicit) as client:
        r = await client.call_tool(tool, args)
        texts = [c.text for c in r.content if getattr(c, "text", None) is not None]
        print(f"{'tool error' if r.is_error else 'result'}: {json.dumps(texts)}")
    return 0


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else os.environ["MCP_TRIAGE_URL"]
    try:
        sys.exit(asyncio.run(main(url)))
    except BaseException as e:  # ExceptionGroup from anyio task groups included
        if isinstance(e, SystemExit):
            raise
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        print(f"error: {type(e).__name__}: {e}")
        sys.exit(1)
