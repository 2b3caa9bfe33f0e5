"""The OpenAI Agents SDK's MCP client (`openai-agents`, pinned in interop/python/requirements.lock)
as `mcp-triage judge` sees it, used the way an agent run uses it, without a model:
`MCPServerStreamableHttp(params={"url": url})`, `list_tools()` (what the agent offers the model),
then `call_tool` of the asked-for tool (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS), which is what the
runner does when the model picks it. Library defaults everywhere (5 s session read timeout,
max_retry_attempts 0; it declares no elicitation handler), what came back printed.

    mcp-triage judge --client 'interop/.venv/bin/python interop/judge/openai-agents-client.py {url}'
"""
from agents.mcp import MCPServerStreamableHttp
from judge_client import print_result, run


async def main(url, tool, args):
    async with MCPServerStreamableHttp(params={"url": url}, name="kitchen") as server:
        listed = [t.name for t in await server.list_tools()]
        if tool not in listed:
            raise LookupError(f"tool {tool} not listed ({', '.join(listed)})")
        r = await server.call_tool(tool, args)
        print_result(r.content, r.is_error)


if __name__ == "__main__":
    run(main)
