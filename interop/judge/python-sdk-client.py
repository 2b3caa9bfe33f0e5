"""The official MCP Python SDK client (`mcp`, pinned in interop/python/requirements.lock) as
`mcp-triage judge` sees it: connect over Streamable HTTP, make the one tool call the judge
asks for (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS), accept an elicitation, print what came back.
SDK defaults everywhere: the point is to grade the SDK's own behaviour.

    mcp-triage judge --client 'interop/.venv/bin/python interop/judge/python-sdk-client.py {url}'
"""
import mcp_types as types
from judge_client import print_result, run
from mcp.client.client import Client


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"reason": "approved by the judge run"})


async def main(url, tool, args):
    # mode "auto" (the default): discover a 2026-07-28 server, else fall back to initialize.
    async with Client(url, elicitation_callback=on_elicit) as client:
        r = await client.call_tool(tool, args)
        print_result(r.content, r.is_error)


if __name__ == "__main__":
    run(main)
