#!/usr/bin/env python3
"""A deliberately bad stdio MCP host for `mcp-triage judge --client-stdio`.

It spawns the server command it is given, does the handshake, makes the one call
($MCP_TRIAGE_TOOL with $MCP_TRIAGE_ARGS), prints the result and exits 0 (a tool result) or 1
(anything else, with a message). Each mode is one mistake, which the judge must catch with
evidence (crates/mcp-triage/tests/judge_stdio.rs):

    python3 bad-stdio-host.py --never-read-stderr SERVER_CMD
        pipes the server's stderr and never reads it: a server that logs more than a pipe
        holds blocks on it, and this host waits forever: must fail `stderr_drained` and
        `in_time` in `stdio.stderr_flood` (and pass where the server logs little).
    python3 bad-stdio-host.py --resend-after-death SERVER_CMD
        when the server dies before answering, starts it again and sends the same call
        once more, whatever the tool does: must fail `no_unsafe_resend` in
        `stdio.exit_mid_call` (a destructive, non-idempotent tool run twice).

SERVER_CMD is one shell word (the judge's `{server}`), run with `sh -c`.
"""
import json
import os
import subprocess
import sys


def spawn(cmd, never_read_stderr):
    # --never-read-stderr: a pipe nobody drains (the bug); otherwise stderr is inherited,
    # which is fine (the judge reads it).
    err = subprocess.PIPE if never_read_stderr else None
    return subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=err)


def send(p, msg):
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()


def answer_to(p, want_id):
    """The response to want_id, skipping other messages and non-JSON lines; None at EOF."""
    while True:
        line = p.stdout.readline()
        if not line:
            return None
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("id") == want_id and ("result" in m or "error" in m):
            return m


def session(cmd, never_read_stderr, tool, args):
    p = spawn(cmd, never_read_stderr)
    send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bad-stdio-host", "version": "0"}}})
    if answer_to(p, 1) is None:
        return p, None
    send(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(p, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": tool, "arguments": args}})
    return p, answer_to(p, 2)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("--never-read-stderr", "--resend-after-death"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, cmd = sys.argv[1], sys.argv[2]
    tool = os.environ.get("MCP_TRIAGE_TOOL", "run_configured_test_scenario")
    args = json.loads(os.environ.get("MCP_TRIAGE_ARGS", "{}"))
    p, r = session(cmd, mode == "--never-read-stderr", tool, args)
    if r is None and mode == "--resend-after-death":
        print("server died; starting it again and resending", file=sys.stderr)
        p, r = session(cmd, False, tool, args)
    p.stdin.close()
    if r is None:
        print("error: the server closed stdout before answering", file=sys.stderr)
        return 1
    if "error" in r:
        print("error: JSON-RPC error %s" % json.dumps(r["error"]))
        return 1
    if r["result"].get("isError"):
        print("error: tool error %s" % json.dumps(r["result"].get("content")))
        return 1
    print("result: %s" % json.dumps(r["result"].get("content"))[:200])
    return 0


if __name__ == "__main__":
    sys.exit(main())
