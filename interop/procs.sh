# Sourced by the interop and bench scripts that start servers: a scratch directory $out, the
# list $pids of background processes, stopped (and $out removed) on exit, and helpers to pick a
# free loopback port and to wait for a server.
out="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$out"
}
trap cleanup EXIT

# A port that was free on 127.0.0.1 a moment ago.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# wait_port PORT NAME LOG: until something accepts on 127.0.0.1:PORT (15 s), else show LOG and fail.
wait_port() {
  for _ in $(seq 1 150); do
    if python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1',$1)))" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "$2 did not start on 127.0.0.1:$1; log:" >&2; cat "$3" >&2; exit 1
}

# wait_for FILE PATTERN: until FILE contains PATTERN (10 s), else show FILE and fail.
wait_for() {
  for _ in $(seq 1 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "timed out waiting for $2 in $1" >&2; cat "$1" >&2; exit 1
}
