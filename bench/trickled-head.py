#!/usr/bin/env python3
"""A request head trickled one byte per write into `mcp-triage proxy` (issue 41): the proxy's CPU
time for heads of several sizes. Before the end-of-head search (h1/incoming_request.rs,
`head_may_be_complete`) the proxy parsed the head again from its start on every read, so the CPU
grew with the square of the head's size (1.23 s for one 60 KB head); now it grows with the number
of reads.

    python3 bench/trickled-head.py [PROXY_BIN] [SIZES...]
    (default: target/release/mcp-triage, 15000 30000 60000; env PROXY_ARGS, e.g.
    PROXY_ARGS='--spin-us 0': the default adaptive spin polls for up to 200 us after each
    read, which is most of the CPU a read costs when every read brings one byte)

The upstream is a closed port on 127.0.0.1, so each head is answered 502 once whole; only
127.0.0.1 is used. CPU is read from /proc (user + system) around the trickle.

Run of 2026-12-07 (release build, 2 busy cores), PROXY_ARGS='--spin-us 0': 15, 30, 60 KB heads
took 0.17, 0.32, 0.62 s of proxy CPU (about 10 us per one-byte read: linear), a 120 KB head
0.65 s and a 431 at 64 KiB. With the default spin the same heads took 0.73, 1.35, 2.89 s: the
spin polls while bytes keep coming, as it does for any traffic (see src/http/spin.rs).
"""
import os
import re
import socket
import subprocess
import sys
import time


def main():
    args = sys.argv[1:]
    binary = args[0] if args else "target/release/mcp-triage"
    sizes = [int(a) for a in args[1:]] or [15000, 30000, 60000]
    p = subprocess.Popen(
        [binary, "proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--log", "/dev/null"]
        + os.environ.get("PROXY_ARGS", "").split(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = None
        while port is None:
            line = p.stderr.readline()
            if not line:
                sys.exit("the proxy exited before it listened")
            m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            port = int(m.group(1)) if m else None
        for n in sizes:
            trickle(p.pid, port, n)
    finally:
        p.terminate()
        p.wait()


def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().split()
    return (int(f[13]) + int(f[14])) / os.sysconf("SC_CLK_TCK")


def trickle(pid, port, n):
    head = b"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nx: " + b"a" * n + b"\r\n\r\n"
    c = socket.create_connection(("127.0.0.1", port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    before, t = cpu(pid), time.time()
    try:
        for i in range(len(head)):
            c.send(head[i : i + 1])
            # yield, so that the proxy reads about as often as bytes are sent
            time.sleep(0)
    except (BrokenPipeError, ConnectionResetError):
        pass  # a head over the proxy's 64 KiB is answered 431 and closed before its end
    answer = c.recv(64)
    print(
        f"{len(head):>7} bytes one per write: proxy CPU {cpu(pid) - before:.3f} s, "
        f"wall {time.time() - t:.1f} s, answered {answer[:12].decode(errors='replace')!r}"
    )
    c.close()


if __name__ == "__main__":
    main()
