"""What every Python client script of `mcp-triage judge` shares: the call the judge asks for
(URL from argv or MCP_TRIAGE_URL, MCP_TRIAGE_TOOL, MCP_TRIAGE_ARGS), how a result is printed, and
how a failure is stated (the innermost exception of an anyio ExceptionGroup, exit 1), so that
each script holds only its library's own calls.
"""
import asyncio
import json
import os
import sys


def call():
    """(url, tool, arguments) the judge asks for."""
    url = sys.argv[1] if len(sys.argv) > 1 else os.environ["MCP_TRIAGE_URL"]
    tool = os.environ.get("MCP_TRIAGE_TOOL", "run_configured_test_scenario")
    return url, tool, json.loads(os.environ.get("MCP_TRIAGE_ARGS", "{}"))


def print_result(content, is_error):
    texts = [c.text for c in content if getattr(c, "text", None) is not None]
    print(f"{'tool error' if is_error else 'result'}: {json.dumps(texts)}")


def run(main):
    """Run `main(url, tool, args)` (a coroutine function) and exit: 0 after it returns, 1 with
    the failure stated on stdout."""
    try:
        asyncio.run(main(*call()))
    except BaseException as e:  # ExceptionGroup from anyio task groups included
        if isinstance(e, SystemExit):
            raise
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        print(f"error: {type(e).__name__}: {e}")
        sys.exit(1)
    sys.exit(0)
