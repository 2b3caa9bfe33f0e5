"""The official MCP Python SDK client (`mcp`, pinned in interop/python/requirements.lock) as
`mcp-triage judge` sees it: connect over Streamable HTTP, make the one tool call the judge
asks for (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS), accept an elicitation, print what came back.
SDK defaults everywhere: the point is to grade the SDK's own behaviour.

    mcp-triage judge --client 'interop/.venv/bin/python interop/judge/python-sdk-client.py {url}'
"""
import asyncio
import json
import os
import sys

import mcp_types as types
from mcp.client.client import Client


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"reason": "approved by the judge run"})


async def main(url: str) -> int:
    tool = os.environ.get("MCP_TRIAGE_TOOL", "run_configured_test_scenario")
    args = json.loads(os.environ.get("MCP_TRIAGE_ARGS", "{}"))
    # mode "auto" (the default): discover a 2026-07-28 server, else fall back to initialize.
    async with Client(url, elicitation_callback=on_elicit) as client:
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
