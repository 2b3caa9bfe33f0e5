"""FastMCP's client (`fastmcp`, pinned in interop/python/requirements.lock) as `mcp-triage judge`
sees it: `Client(url)` (Streamable HTTP inferred from the URL), the one tool call the judge asks
for (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS) with `call_tool`, an elicitation accepted, what came back
printed. FastMCP defaults everywhere (`call_tool` raises ToolError on isError): the point is to
grade the library's own behaviour.

    mcp-triage judge --client 'interop/.venv/bin/python interop/judge/fastmcp-client.py {url}'
"""
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from judge_client import print_result, run


async def on_elicit(message, response_type, params, context):
    return ElicitResult(action="accept", content={"reason": "approved by the judge run"})


async def main(url, tool, args):
    async with Client(url, elicitation_handler=on_elicit) as client:
        r = await client.call_tool(tool, args)
        print_result(r.content, r.is_error)


if __name__ == "__main__":
    run(main)
