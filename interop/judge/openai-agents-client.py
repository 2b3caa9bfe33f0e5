"""The OpenAI Agents SDK's MCP client (`openai-agents`, pinned in interop/python/requirements.lock)
as `mcp-triage judge` sees it, used the way an agent run uses it, without a model:
`MCPServerStreamableHttp(params={"url": url})`, `list_tools()` (what the agent offers the model),
then `call_tool` of the asked-for tool (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS), which is what the
runner does when the model picks it. Library defaults everywhere (5 s session read timeout,
max_retry_attempts 0; it declares no elicitation handler), what came back printed.

    mcp-triage judge --client 'interop/.venv/bin/python interop/judge/openai-agents-client.py {url}'
"""
import asyncio
import json
import os
import sys

from agents.mcp import MCPServerStreamableHttp


async def main(url: str) -> int:
    tool = os.environ.get("MCP_TRIAGE_TOOL", "run_configured_test_scenario")
    args = json.loads(os.environ.get("MCP_TRIAGE_ARGS", "{}"))
    async with MCPServerStreamableHttp(params={"url": url}, name="kitchen") as server:
        listed = [t.name for t in await server.list_tools()]
        if tool not in listed:
            raise LookupError(f"tool {tool} not listed ({', '.join(listed)})")
        r = await server.call_tool(tool, args)
        texts = [c.text for c in r.content if getattr(c, "text", None) is not None]
        print(f"{'tool error' if r.isError else 'result'}: {json.dumps(texts)}")
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
