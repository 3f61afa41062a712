# What the Volto end-to-end scripts share (sourced by scripts/volto-e2e.sh, volto-offline-e2e.sh and
# volto-sso-e2e.sh): free ports, a fresh data directory and admin password, starting host-server and
# Volto and waiting until they answer, and stopping whatever was started when the script exits.
# The sourcing script sets ROOT (the repository), BIN (the server binary) and LOGS (its artifacts).

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# e2e_setup: SPORT and VPORT (free ports for the server and Volto), DATA (a fresh directory),
# ADMIN_PASSWORD (random, exported), and a trap that stops every process in `pids` on exit.
e2e_setup() {
  SPORT=$(free_port)
  VPORT=$(free_port)
  DATA=$(mktemp -d)
  export ADMIN_PASSWORD="e2e-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  pids=()
  trap e2e_cleanup EXIT
}

e2e_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DATA"
}

# wait_line FILE PREFIX PID WHAT [SECONDS]: wait (60 s unless told) for a line of FILE starting with
# PREFIX; fails, showing FILE's end, when process PID exits first or the time runs out.
wait_line() {
  local tenths=$((${5:-60} * 10))
  for _ in $(seq 1 "$tenths"); do
    grep -q "^$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || { echo "$4 exited; see $1" >&2; tail -20 "$1" >&2; return 1; }
    sleep 0.1
  done
  echo "$4 did not start within ${5:-60}s; see $1" >&2
  return 1
}

# start_server ARGS...: host-server on DATA and SPORT with ARGS added; SERVER_PID is its process.
start_server() {
  "$BIN" --data "$DATA" --listen "127.0.0.1:$SPORT" "$@" > "$LOGS/server.out" 2> "$LOGS/server.log" &
  SERVER_PID=$!
  pids+=("$SERVER_PID")
  wait_line "$LOGS/server.out" "listening on" "$SERVER_PID" "host-server" 10
}

# start_volto ARGS...: scripts/volto.sh ARGS in front of the server, on VPORT (10 minutes at most,
# the time a first build takes).
start_volto() {
  VOLTO_BACKEND="http://127.0.0.1:$SPORT" VOLTO_PORT=$VPORT "$ROOT/scripts/volto.sh" "$@" > "$LOGS/volto.log" 2>&1 &
  pids+=($!)
  wait_line "$LOGS/volto.log" "Volto: http" "${pids[-1]}" "Volto" 600
}

# The browser driver (playwright-core) of tests/volto, installed from its lockfile when missing.
ensure_playwright() {
  (cd "$ROOT/tests/volto" && { [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error; })
}
