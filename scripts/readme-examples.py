#!/usr/bin/env python3
"""Runs the README's shell examples as written, so the docs cannot drift from the server.

    HOST_SERVER_BIN=target/release/host-server scripts/readme-examples.py [README.md ...]

Every ```sh block of each file runs in its own fresh directory (so `./var` is a new site), under
`bash -euo pipefail`, with three stand-ins that keep the commands as written:

- `cargo run --release -p host-server [-- ARGS]` and `host-server ARGS` start `$HOST_SERVER_BIN`
  (the release binary the test stage already built) in the background with the same environment
  and arguments, and return once it answers on its `--listen` address (default 127.0.0.1:8080),
  as a reader's second terminal would; the block's servers are stopped when it ends;
- `curl` fails on an HTTP error status (`--fail-with-body`), so a refused request fails the block;
- `./scripts/test.sh` is this test run itself and is not started again (said in the output).

A block preceded by `<!-- example: skip REASON -->` is not run; the runner prints it with its
reason, and a skip without a reason is an error. Prints one line per block and ends with
"N run, M skipped, K failed"; exits non-zero when any block failed.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

PRELUDE = r"""
__stop() { # every server the block started, also from a backgrounded command (`host-server ... &`)
  local p rc=$? j
  for j in $(jobs -p); do # a backgrounded start (`host-server ... &`) that failed fails the block
    grep -qx "$j" "$__PIDS" 2>/dev/null || wait "$j" || rc=1
  done
  for p in $(cat "$__PIDS" 2>/dev/null); do kill "$p" 2>/dev/null; done
  for p in $(cat "$__PIDS" 2>/dev/null); do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done
  exit "$rc"
}
trap __stop EXIT
__start() { # the server as a reader starts it: ARGS of host-server
  local listen=127.0.0.1:8080 prev=
  for a in "$@"; do [ "$prev" = --listen ] && listen=$a; prev=$a; done
  case "${1:-}" in migrate|reindex|backup|restore|--help|-h|--version) "$HOST_SERVER_BIN" "$@"; return;; esac
  if command curl -s -o /dev/null "http://$listen/"; then
    echo "something already answers on $listen: stop it first" >&2; return 1
  fi
  "$HOST_SERVER_BIN" "$@" >>"$__LOG" 2>&1 &
  local pid=$! i
  echo "$pid" >> "$__PIDS"
  for i in $(seq 1 300); do
    command curl -s -o /dev/null "http://$listen/" && return 0
    kill -0 "$pid" 2>/dev/null || { echo "server on $listen exited; its log:" >&2; cat "$__LOG" >&2; return 1; }
    sleep 0.1
  done
  echo "server on $listen did not answer within 30 s" >&2; return 1
}
cargo() {
  local all=" $* "
  if [ "${1:-}" = run ] && [ "$all" != "${all#* -p host-server }" ]; then
    local args=() seen=0
    for a in "$@"; do [ $seen = 1 ] && args+=("$a"); [ "$a" = -- ] && seen=1; done
    __start "${args[@]}"
  else
    command cargo "$@"
  fi
}
host-server() { __start "$@"; }
curl() { command curl --fail-with-body --show-error "$@"; }
"""


def blocks(path):
    """(line, skip reason or None, code) of every ```sh block of the file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i, pending = [], 0, None
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^<!-- example: skip(.*?)-->\s*$", line)
        if m:
            pending = m.group(1).strip()
            if not pending:
                raise SystemExit(f"{path}:{i + 1}: a skip needs its reason")
        elif line.strip() == "```sh":
            start, body = i + 1, []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append((start, pending, "\n".join(body)))
            pending = None
        elif line.strip():
            pending = None
        i += 1
    return out


def run(path, start, code, root):
    # `./scripts/test.sh` is the run this executes in; anything else runs as written.
    code = re.sub(r"^\./scripts/test\.sh\b.*$",
                  "echo '(./scripts/test.sh: this test run itself, not started again)'",
                  code, flags=re.M)
    state = tempfile.mkdtemp(prefix="readme-example-state.")
    cwd = tempfile.mkdtemp(prefix="readme-example.")
    try:
        # The reader's checkout with a fresh `./var`: the repository's top-level entries linked in.
        for name in os.listdir(root):
            if name not in ("var", "target", "artifacts", ".git"):
                os.symlink(os.path.join(root, name), os.path.join(cwd, name))
        log, pids = os.path.join(state, "servers.log"), os.path.join(state, "servers.pids")
        env = dict(os.environ, __LOG=log, __PIDS=pids)
        script = "set -euo pipefail\n" + PRELUDE + "\n" + code + "\n"
        p = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=300, stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            print(f"FAIL {path}:{start} (exit {p.returncode})")
            for stream in (p.stdout, p.stderr):
                tail = stream.strip().split("\n")[-25:]
                if any(tail):
                    print("    " + "\n    ".join(tail))
            if os.path.exists(log):
                lines = open(log).read().strip().split("\n")[-15:]
                print("    server log:\n    " + "\n    ".join(lines))
            return False
        print(f"ok   {path}:{start}")
        return True
    finally:
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(cwd, ignore_errors=True)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.environ.get("HOST_SERVER_BIN")
    if not binary or not os.access(binary, os.X_OK):
        raise SystemExit("set HOST_SERVER_BIN to the release host-server binary")
    os.environ["HOST_SERVER_BIN"] = os.path.abspath(binary)
    files = sys.argv[1:] or [os.path.join(root, "README.md")]
    ran = skipped = failed = 0
    for path in files:
        rel = os.path.relpath(path, root)
        for start, skip, code in blocks(path):
            if skip is not None:
                print(f"skip {rel}:{start}: {skip}")
                skipped += 1
                continue
            ran += 1
            if not run(rel, start, code, root):
                failed += 1
    print(f"{ran} run, {skipped} skipped, {failed} failed")
    sys.exit(1 if failed or not ran else 0)


if __name__ == "__main__":
    main()
