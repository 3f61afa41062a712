#!/usr/bin/env bash
# PostgreSQL rows: 1, 2 and 3 servers on one PostgreSQL database next to SQLite, on the same
# 10k-object site (seeded as bench/run.sh does, then copied with `host-server migrate`).
#
#   bench/pg.sh
#
# Starts a throw-away PostgreSQL cluster (Debian's package, installed when missing; Unix socket
# in a temp dir; fsync ON and synchronous_commit ON, so a create is as durable as SQLite's
# `--sync full`). Scenarios (connections are the total over all servers; with several servers
# one wrk per server runs at the same time, each with its share of the connections, and the
# requests/s add up): GET a published page as anonymous (c=32), editor traffic 90% GET / 10%
# PATCH of random pages with a Bearer token (c=32), POST creating pages in one folder (c=8).
# Knobs: BENCH_DURATION (seconds per run, default 10), BENCH_SHAPE (default 5,5,4,100),
# BENCH_WORK (default /tmp/bench-pg), CARGO_TARGET_DIR, BENCH_SETUPS (which setups run, default
# "sqlite locked optimistic"; e.g. BENCH_SETUPS=optimistic for the 3-server optimistic rows only).
# The errors column counts every non-2xx answer and socket error; the statuses column says which
# (status:count, "sock" for socket errors), so a 503 "Busy" is told from any other error.
# BENCH_SERVER_ARGS: more arguments for the PostgreSQL servers (e.g. the retry policy,
# `--conflict-pause-ms 0 --conflict-alone-after 0 --conflict-attempts 5` for immediate re-runs).
# The conflicts column sums the PostgreSQL servers' store-conflict metrics over the row (read
# from each server's --metrics-listen endpoint before and after): re-runs, then how many
# requests (or writer groups) ended after N runs ("N:count"), and "x" those that ran out (503).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
DURATION=${BENCH_DURATION:-10}
SHAPE=${BENCH_SHAPE:-5,5,4,100}
SETUPS=" ${BENCH_SETUPS:-sqlite locked optimistic} "
WORK=${BENCH_WORK:-/tmp/bench-pg}
read -r -a SERVER_ARGS <<< "${BENCH_SERVER_ARGS:-}"
MURLS=()
PASSWORD=${ADMIN_PASSWORD:-bench-secret}
export ADMIN_PASSWORD=$PASSWORD
unset DATABASE_URL

log() { echo "[bench-pg $(date +%H:%M:%S)] $*" >&2; }
command -v wrk >/dev/null || { apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }; }

log "building (release) into $TARGET"
(cd "$ROOT" && cargo build --release -q -p host-server --bin host-server --example seed)
SERVER=$TARGET/release/host-server
SEED=$TARGET/release/examples/seed

rm -rf "$WORK"; mkdir -p "$WORK/lua"
PIDS=()
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$PGBIN" ]; then apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); fi
PGDIR=$WORK/pg
mkdir -p "$PGDIR"
RUN=()
if [ "$(id -u)" -eq 0 ]; then chown postgres "$PGDIR"; RUN=(runuser -u postgres --); fi
cleanup() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    "${RUN[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
"${RUN[@]}" "$PGBIN/initdb" -D "$PGDIR/data" -A trust -U postgres -E UTF8 >/dev/null
"${RUN[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w \
    -o "-k $PGDIR -c listen_addresses= -p 5432 -c shared_buffers=256MB -c max_connections=200" start >/dev/null
ADMIN_URL="postgresql://postgres@${PGDIR//\//%2F}:5432/postgres"
"${RUN[@]}" psql -q -h "$PGDIR" -p 5432 -U postgres -c "CREATE DATABASE bench" postgres
DB_URL="postgresql://postgres@${PGDIR//\//%2F}:5432/bench"

# start NAME CMD... : waits for "listening on", sets URL_<NAME>, PID_<NAME>
start() {
    local name=$1; shift
    local out=$WORK/$name.out
    : > "$out"
    "$@" > "$out" 2> "$WORK/$name.err" &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 3000); do
        grep -q "^listening on " "$out" && break
        kill -0 "$pid" 2>/dev/null || { cat "$WORK/$name.err" >&2; exit 1; }
        sleep 0.01
    done
    printf -v "URL_$name" '%s' "$(sed -n 's/^listening on //p' "$out")"
    printf -v "METRICS_$name" '%s' "$(sed -n 's/^metrics on //p' "$out")"
    printf -v "PID_$name" '%s' "$pid"
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

cat > "$WORK/lua/done.lua" <<'LUA'
local threads = {}
setup = function(thread) table.insert(threads, thread) end
statuses = {}
response = function(status, headers, body)
  if status < 200 or status > 299 then statuses[status] = (statuses[status] or 0) + 1 end
end
done = function(summary, latency, requests)
  local e = summary.errors
  local counts = {}
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("statuses")) do counts[status] = (counts[status] or 0) + n end
  end
  local sock = e.connect + e.read + e.write + e.timeout
  local text = ""
  for status, n in pairs(counts) do text = text .. status .. ":" .. n .. "," end
  if sock > 0 then text = text .. "sock:" .. sock .. "," end
  if text == "" then text = "-" end
  io.write(string.format("RESULT %d %.3f %.3f %.3f %d %d %s\n", summary.requests,
    summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    e.status, sock, text))
end
LUA
lua() { { echo "$2"; cat "$WORK/lua/done.lua"; } > "$WORK/lua/$1.lua"; }
token() {
    curl -sf -X POST "$1/@login" -H 'Content-Type: application/json' \
        -d "{\"login\": \"admin\", \"password\": \"$PASSWORD\"}" |
        python3 -c 'import sys, json; print(json.load(sys.stdin)["token"])'
}
api() { curl -sf -o /dev/null -X "$1" "$2" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
PAGE=$(python3 -c "import sys; s=sys.argv[1].split(','); print(''.join('/f0' for _ in s[:-1]) + '/p0')" "$SHAPE")
RND=$(python3 -c "
import sys; s=[int(x) for x in sys.argv[1].split(',')]
parts=['\"/f\" .. math.random(0,%d)' % (n-1) for n in s[:-1]] + ['\"/p\" .. math.random(0,%d)' % (s[-1]-1)]
print(' .. '.join(parts))" "$SHAPE")
scripts() {
    local common="
local auth = 'Bearer $TOKEN'
local tag = tostring(os.time()) .. tostring(math.random(1000000))
local n = 0
local function json_req(method, path, body)
  return wrk.format(method, path, {['Content-Type'] = 'application/json', ['Authorization'] = auth}, body)
end"
    lua page_anon "wrk.path = \"$PAGE\""
    lua post "$common
request = function()
  n = n + 1
  return json_req('POST', '/bench-posts', string.format('{\"@type\": \"Page\", \"title\": \"Bench %s n%d\"}', tag, n))
end"
    lua mixed "$common
request = function()
  n = n + 1
  local p = $RND
  if math.random(10) == 1 then
    return json_req('PATCH', p, string.format('{\"title\": \"Mixed %s n%d\"}', tag, n))
  end
  return wrk.format('GET', p, {['Authorization'] = auth})
end"
}

# conflicts: the store-conflict counters of the servers in MURLS, summed, as JSON
conflicts() {
    python3 - "${MURLS[@]}" <<'PY'
import json, re, sys, urllib.request
total = {}
for url in sys.argv[1:]:
    try:
        text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    except Exception:
        continue
    for line in text.splitlines():
        m = re.match(r'host_server_store_conflict_(reruns|exhausted|settled)_total(?:\{runs="(\d+)"\})? (\d+)', line)
        if m:
            key = m.group(1) + (":" + m.group(2) if m.group(2) else "")
            total[key] = total.get(key, 0) + int(m.group(3))
print(json.dumps(total))
PY
}

# run LABEL SCRIPT CONNS URL... : one wrk per URL at once, CONNS shared out; prints a table row
run() {
    local label=$1 script=$2 conns=$3; shift 3
    local before=""
    [ "${#MURLS[@]}" -gt 0 ] && before=$(conflicts)
    local n=$# i=0 pids=() outs=()
    for url in "$@"; do
        local c=$(( conns / n + (i < conns % n ? 1 : 0) ))
        local t=2; [ "$c" -lt 2 ] && t=1
        outs+=("$WORK/wrk.$i")
        wrk -t"$t" -c"$c" -d"${DURATION}s" --timeout 5s -s "$WORK/lua/$script.lua" "$url" > "$WORK/wrk.$i" 2>&1 &
        pids+=($!)
        i=$((i + 1))
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
    local after=""
    [ "${#MURLS[@]}" -gt 0 ] && after=$(conflicts)
    cat "${outs[@]}" | BEFORE="$before" AFTER="$after" python3 -c "
import json, os, sys
rows=[l.split()[1:] for l in sys.stdin if l.startswith('RESULT')]
if not rows: sys.exit('wrk failed')
req=sum(int(r[0]) for r in rows); sec=max(float(r[1]) for r in rows)
p50='/'.join('%.1f' % float(r[2]) for r in rows); p99='/'.join('%.1f' % float(r[3]) for r in rows)
err=sum(int(r[4])+int(r[5]) for r in rows)
st={}
for r in rows:
    for part in r[6].split(','):
        if ':' in part:
            k, v = part.split(':'); st[k] = st.get(k, 0) + int(v)
st=', '.join('%s: %d' % (k, st[k]) for k in sorted(st)) or '-'
b=json.loads(os.environ['BEFORE'] or '{}'); a=json.loads(os.environ['AFTER'] or '{}')
if not a:
    co='-'
else:
    d={k: a[k]-b.get(k, 0) for k in a}
    runs=sorted((int(k.split(':')[1]), v) for k, v in d.items() if k.startswith('settled:') and v)
    co='%d re-runs; %s; x %d' % (d.get('reruns', 0), ' '.join('%d:%d' % r for r in runs) or 'none', d.get('exhausted', 0))
print('| %s | %d | %.0f | %s | %s | %d | %s | %s |' % ('$label', $conns, req/sec, p50, p99, err, st, co))"
}

log "seeding the $SHAPE site (SQLite)"
SEEDLINE=$("$SEED" --data "$WORK/site" --shape "$SHAPE")
echo "seed: $SEEDLINE"
log "copying it into PostgreSQL"
t0=$(date +%s.%N)
"$SERVER" migrate --from "sqlite:$WORK/site" --to "$DB_URL" 2>/dev/null | tail -1
echo "migrate: $(python3 -c "print('%.1f s' % ($(date +%s.%N) - $t0))")"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg), rustc processes $(pgrep -c rustc || true)"
echo
echo "| setup | connections | requests/s | p50 ms (per server) | p99 ms (per server) | errors | statuses | conflicts |"
echo "| --- | ---: | ---: | --- | --- | ---: | --- | --- |"

# SQLite, response cache on (the default) and off (as PostgreSQL servers run by default)
for cache in 64 0; do
    [[ $SETUPS == *" sqlite "* ]] || continue
    start s1 "$SERVER" --listen 127.0.0.1:0 --data "$WORK/site" --log warn --response-cache-mb $cache
    TOKEN=$(token "$URL_s1"); scripts
    api POST "$URL_s1/" '{"@type": "Folder", "id": "bench-posts", "title": "Bench posts"}' || true
    run "SQLite, 1 server, cache ${cache} MiB: GET page anonymous" page_anon 32 "$URL_s1"
    run "SQLite, 1 server, cache ${cache} MiB: mixed 90/10 GET/PATCH" mixed 32 "$URL_s1"
    run "SQLite, 1 server, cache ${cache} MiB: POST create" post 8 "$URL_s1"
    stop "$PID_s1"
done

for mode in locked optimistic; do
    for n in 1 2 3; do
        [ "$mode" = optimistic ] && [ "$n" -lt 3 ] && continue
        [[ $SETUPS == *" $mode "* ]] || continue
        urls=(); MURLS=()
        for i in $(seq 1 "$n"); do
            start "p$i" "$SERVER" --listen 127.0.0.1:0 --database "$DB_URL" --write-mode "$mode" --log warn \
                --metrics-listen 127.0.0.1:0 "${SERVER_ARGS[@]}"
            v="URL_p$i"; urls+=("${!v}")
            v="METRICS_p$i"; MURLS+=("${!v}")
        done
        TOKEN=$(token "${urls[0]}"); scripts
        api POST "${urls[0]}/" '{"@type": "Folder", "id": "bench-posts", "title": "Bench posts"}' || true
        run "PostgreSQL $mode, $n server(s): GET page anonymous" page_anon 32 "${urls[@]}"
        run "PostgreSQL $mode, $n server(s): mixed 90/10 GET/PATCH" mixed 32 "${urls[@]}"
        run "PostgreSQL $mode, $n server(s): POST create" post 8 "${urls[@]}"
        for i in $(seq 1 "$n"); do v="PID_p$i"; stop "${!v}"; done
        MURLS=()
    done
done
echo
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
