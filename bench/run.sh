#!/usr/bin/env bash
# The benchmark suite: builds the release server and the yardstick, seeds sites through the bulk
# path, drives them over loopback with wrk, and prints one table (see bench/README.md).
#
#   bench/run.sh                      # everything, including the 1,000,000-object scale run
#   BENCH_SCALE=0 bench/run.sh        # skip the scale run (a few minutes instead of ~20)
#
# Knobs (environment): BENCH_DURATION (seconds per wrk run, default 5), BENCH_REPEAT (rounds,
# default 3; figures are medians over rounds), BENCH_SHAPE (10k site, default 5,5,4,100),
# BENCH_SCALE_SHAPE (default 5,5,4,100,100 = 1,010,130 objects), BENCH_SCALE_DATA (reuse a scale
# site seeded earlier by this script's seed step, with the same ADMIN_PASSWORD), BENCH_WORK (scratch dir, default
# /tmp/bench-run; the databases go there, never into the repository), CARGO_TARGET_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
DURATION=${BENCH_DURATION:-5}
REPEAT=${BENCH_REPEAT:-3}
SHAPE=${BENCH_SHAPE:-5,5,4,100}
SCALE=${BENCH_SCALE:-1}
SCALE_SHAPE=${BENCH_SCALE_SHAPE:-5,5,4,100,100}
WORK=${BENCH_WORK:-/tmp/bench-run}
PASSWORD=${ADMIN_PASSWORD:-bench-secret}
export ADMIN_PASSWORD=$PASSWORD

log() { echo "[bench $(date +%H:%M:%S)] $*" >&2; }
# The load generator's threads: BENCH_WRK_THREADS, else half the cores (at least 2), so that the
# same command gives comparable figures on 2 and on 16 cores.
WRK_THREADS=${BENCH_WRK_THREADS:-$(( $(nproc) / 2 > 2 ? $(nproc) / 2 : 2 ))}

# --- tools -------------------------------------------------------------------------------------
if ! command -v wrk >/dev/null; then
    log "installing wrk (Debian package)"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get install -y wrk >/dev/null 2>&1 || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y wrk >/dev/null; }
fi
for t in curl python3; do command -v $t >/dev/null || { echo "bench: $t is required" >&2; exit 1; }; done

log "building (release) into $TARGET"
(cd "$ROOT" && cargo build --release -q -p host-server --bin host-server --example yardstick --example seed --example editor_session)
SERVER=$TARGET/release/host-server
YARD=$TARGET/release/examples/yardstick
SEED=$TARGET/release/examples/seed
SESSION=$TARGET/release/examples/editor_session

rm -rf "$WORK"; mkdir -p "$WORK/lua"
ROWS=$WORK/rows.tsv; : > "$ROWS"
NOTES=$WORK/notes.txt; : > "$NOTES"
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# --- processes ---------------------------------------------------------------------------------
# start NAME CMD... : runs CMD with stdout in $WORK/NAME.out, waits for "listening on", sets
# URL_<NAME>, PID_<NAME> and STARTUP_<NAME> (milliseconds from exec to the socket being bound).
start() {
    local name=$1; shift
    local out=$WORK/$name.out t0 t1
    : > "$out"
    t0=$(date +%s%N)
    "$@" > "$out" 2> "$WORK/$name.err" &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 3000); do
        if grep -q "^listening on " "$out"; then break; fi
        kill -0 "$pid" 2>/dev/null || { cat "$WORK/$name.err" >&2; exit 1; }
        sleep 0.005
    done
    t1=$(date +%s%N)
    printf -v "URL_$name" '%s' "$(sed -n 's/^listening on //p' "$out")"
    printf -v "PID_$name" '%s' "$pid"
    printf -v "STARTUP_$name" '%s' "$(( (t1 - t0) / 1000000 ))"
}
stop() { local pid=$1; kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2/1024}' "/proc/$1/status"; }

# --- wrk ---------------------------------------------------------------------------------------
cat > "$WORK/lua/done.lua" <<'LUA'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %.3f %.3f %.3f %d %d\n", summary.requests,
    summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    e.status, e.connect + e.read + e.write + e.timeout))
end
LUA

# lua NAME BODY : writes a wrk script (BODY + the shared done function)
lua() { { echo "$2"; cat "$WORK/lua/done.lua"; } > "$WORK/lua/$1.lua"; }

# bench ROUND SCENARIO CONNS PID URL SCRIPT : one wrk run; appends a row to $ROWS
bench() {
    local round=$1 scenario=$2 conns=$3 pid=$4 url=$5 script=$6
    # wrk's threads follow the machine (WRK_THREADS), never more than the connections.
    local threads=$WRK_THREADS; [ "$conns" -lt "$threads" ] && threads=$conns
    local peak=$WORK/peak.$$; echo 0 > "$peak"
    ( max=0; while kill -0 "$pid" 2>/dev/null; do
        r=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        [ "${r:-0}" -gt "$max" ] && { max=$r; echo "$max" > "$peak"; }
        sleep 0.05; done ) &
    local sampler=$!
    local out
    out=$(wrk -t"$threads" -c"$conns" -d"${DURATION}s" --timeout 5s -s "$WORK/lua/$script.lua" "$url" 2>&1) || true
    kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true
    local res; res=$(grep '^RESULT' <<<"$out" || true)
    if [ -z "$res" ]; then echo "$out" >&2; echo "bench: wrk failed for $scenario" >&2; exit 1; fi
    # round scenario conns requests seconds p50 p99 status_errors socket_errors peak_kb
    echo -e "$round\t$scenario\t$conns\t$(cut -d' ' -f2- <<<"$res" | tr ' ' '\t')\t$(cat "$peak")" >> "$ROWS"
    log "  $scenario c=$conns: $(awk '{printf "%.0f req/s, p50 %s ms, p99 %s ms, errors %d+%d", $1/$2, $3, $4, $5, $6}' <<<"${res#RESULT }")"
}

# --- sites -------------------------------------------------------------------------------------
seed() { # seed DIR SHAPE -> prints the seed line
    "$SEED" --data "$1" --shape "$2"
}
objects_of() { python3 -c "
import sys; s=[int(x) for x in sys.argv[1].split(',')]; t=0; n=1
for f in s: n*=f; t+=n
print(t)" "$1"; }
# A page that exists in every shape: /f0/f0/.../p0 (the first page of the first bottom folder).
first_page() { python3 -c "
import sys; s=sys.argv[1].split(','); print(''.join('/f0' for _ in s[:-1]) + '/p0')" "$1"; }
bottom_folder() { python3 -c "
import sys; s=sys.argv[1].split(','); print(''.join('/f0' for _ in s[:-1]))" "$1"; }
# Lua expression for a random page path of SHAPE.
random_path_lua() { python3 -c "
import sys; s=[int(x) for x in sys.argv[1].split(',')]
parts=['\"/f\" .. math.random(0,%d)' % (n-1) for n in s[:-1]] + ['\"/p\" .. math.random(0,%d)' % (s[-1]-1)]
print(' .. '.join(parts))" "$1"; }

evict() { # evict FILE... : drop the files' pages from the OS cache
    python3 -c "
import os, sys
for f in sys.argv[1:]:
    fd = os.open(f, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)" "$@"
}
token() { # token URL [LOGIN PASSWORD] (admin by default)
    curl -sf -X POST "$1/@login" -H 'Content-Type: application/json' \
        -d "{\"login\": \"${2:-admin}\", \"password\": \"${3:-$PASSWORD}\"}" |
        python3 -c 'import sys, json; print(json.load(sys.stdin)["token"])'
}
api() { # api METHOD URL [BODY] (as admin, Bearer)
    curl -sf -o /dev/null -X "$1" "$2" -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' ${3:+-d "$3"}
}

write_scripts() { # write_scripts SHAPE
    local page; page=$(first_page "$1")
    local folder; folder=$(bottom_folder "$1")
    local rnd; rnd=$(random_path_lua "$1")
    local basic; basic=$(printf 'admin:%s' "$PASSWORD" | base64)
    lua yard 'wrk.method = "GET"'
    lua page_anon "wrk.path = \"$page\""
    lua page_bearer "wrk.path = \"$page\"; wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
    lua page_basic "wrk.path = \"$page\"; wrk.headers[\"Authorization\"] = \"Basic $basic\""
    lua page_group "wrk.path = \"/bench-shared/sub/page\"; wrk.headers[\"Authorization\"] = \"Bearer $MEMBER_TOKEN\""
    lua folder "wrk.path = \"$folder\""
    lua folder_all "wrk.path = \"$folder?b_size=100\""
    lua nav "wrk.path = \"/@navigation?expand.navigation.depth=3\""
    lua crumbs "wrk.path = \"$page/@breadcrumbs\""
    lua random_get "request = function() return wrk.format('GET', $rnd) end"
    lua search_fc "wrk.path = \"$folder/@search?path.depth=1&sort_on=getObjPositionInParent&metadata_fields=_all&show_inactive=true&b_size=50\"; wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
    lua search_word "wrk.path = \"/@search?SearchableText=42\"; wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
    lua search_and "wrk.path = \"/@search?SearchableText=page%2042\"; wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
    lua search_prefix "wrk.path = \"/@search?SearchableText=4%2A\"; wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
    local common="
local auth = 'Bearer $TOKEN'
local tag = tostring(os.time())
local n = 0
made = 0
setup = function(thread) made = made + 1; thread:set('tid', made) end
local function json_req(method, path, body)
  return wrk.format(method, path, {['Content-Type'] = 'application/json', ['Authorization'] = auth}, body)
end"
    lua post "$common
request = function()
  n = n + 1
  return json_req('POST', '/bench-posts', string.format('{\"@type\": \"Page\", \"title\": \"Bench %s t%d n%d\", \"description\": \"A page created by the benchmark\", \"blocks\": {\"b1\": {\"@type\": \"slate\", \"plaintext\": \"Hello\", \"value\": [{\"type\": \"p\", \"children\": [{\"text\": \"Hello\"}]}]}}, \"blocks_layout\": {\"items\": [\"b1\"]}}', tag, tid or 0, n))
end"
    lua patch "$common
request = function()
  n = n + 1
  return json_req('PATCH', '/bench-edit/page', string.format('{\"title\": \"Edited t%d n%d\"}', tid or 0, n))
end"
    # The cycles move on when a step succeeded (wrk may build a request it never sends).
    lua workflow "$common
local published = false
request = function()
  return json_req('POST', '/bench-edit/wf/@workflow/' .. (published and 'retract' or 'publish'), '{}')
end
response = function(status) if status == 200 then published = not published end end"
    lua lock "$common
local locked = false
request = function()
  return json_req(locked and 'DELETE' or 'POST', '/bench-edit/locked/@lock', '{}')
end
response = function(status) if status < 300 then locked = not locked end end"
    lua mixed "$common
request = function()
  n = n + 1
  local p = $rnd
  if math.random(10) == 1 then
    return json_req('PATCH', p, string.format('{\"title\": \"Mixed t%d n%d\"}', tid or 0, n))
  end
  return wrk.format('GET', p, {['Authorization'] = auth})
end"
}

# --- run ---------------------------------------------------------------------------------------
log "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg); rustc processes: $(pgrep -c rustc || true)" >> "$NOTES"

# setup URL SHAPE : folders and pages the write scenarios work on, a token, the wrk scripts
setup() {
    TOKEN=$(token "$1")
    # (already there when a scale site is reused)
    api POST "$1/" '{"@type": "Folder", "id": "bench-posts", "title": "Bench posts"}' || true
    api POST "$1/" '{"@type": "Folder", "id": "bench-edit", "title": "Bench edit"}' || true
    for id in page wf locked; do
        api POST "$1/bench-edit" "{\"@type\": \"Page\", \"id\": \"$id\", \"title\": \"Bench $id\"}" || true
    done
    # A private page readable only through a group's local role two levels up (issue 14).
    api POST "$1/@users" '{"username": "bench-member", "password": "bench-member-password"}' || true
    api POST "$1/@groups" '{"groupname": "bench-group", "users": ["bench-member"]}' || true
    api POST "$1/" '{"@type": "Folder", "id": "bench-shared", "title": "Bench shared"}' || true
    api POST "$1/bench-shared" '{"@type": "Folder", "id": "sub", "title": "Sub"}' || true
    api POST "$1/bench-shared/sub" '{"@type": "Page", "id": "page", "title": "Private page"}' || true
    api POST "$1/bench-shared/@sharing" \
        '{"entries": [{"id": "bench-group", "type": "group", "roles": {"Reader": true}}]}' || true
    MEMBER_TOKEN=$(token "$1" bench-member bench-member-password)
    write_scripts "$2"
}

# scenarios ROUND LABEL PID URL : every scenario once (LABEL prefixes the names)
scenarios() {
    local r=$1 l=$2 pid=$3 url=$4
    bench "$r" "yardstick: fixed 2 KB JSON" 32 "$PID_yard" "$URL_yard" yard
    bench "$r" "${l}1 GET page, anonymous" 32 "$pid" "$url" page_anon
    bench "$r" "${l}1 GET page, Bearer" 32 "$pid" "$url" page_bearer
    bench "$r" "${l}1 GET page, Basic" 32 "$pid" "$url" page_basic
    bench "$r" "${l}1 GET private page, Bearer, group's local role 2 up" 32 "$pid" "$url" page_group
    bench "$r" "${l}2 GET folder of 100 (batch 25)" 32 "$pid" "$url" folder
    bench "$r" "${l}2 GET folder of 100 (b_size=100)" 32 "$pid" "$url" folder_all
    bench "$r" "${l}3 POST create page (durable)" 1 "$pid" "$url" post
    bench "$r" "${l}3 POST create page (durable)" 8 "$pid" "$url" post
    bench "$r" "${l}4 PATCH title" 8 "$pid" "$url" patch
    # The cycles alternate; start each run from the unlocked, private state.
    api POST "$url/bench-edit/wf/@workflow/retract" || true
    bench "$r" "${l}4 workflow publish/retract" 1 "$pid" "$url" workflow
    api DELETE "$url/bench-edit/locked/@lock" || true
    bench "$r" "${l}4 lock/unlock (each counts)" 1 "$pid" "$url" lock
    bench "$r" "${l}5 @navigation depth 3" 32 "$pid" "$url" nav
    bench "$r" "${l}5 @breadcrumbs" 32 "$pid" "$url" crumbs
    bench "$r" "${l}6 mixed 90% GET / 10% PATCH, Bearer" 32 "$pid" "$url" mixed
    bench "$r" "${l}7 GET random page by path" 32 "$pid" "$url" random_get
    bench "$r" "${l}7 GET random page by path" 1 "$pid" "$url" random_get
}

# uncached ROUND LABEL PID URL : the read scenarios again on a server with the cache off
uncached() {
    local r=$1 l=$2 pid=$3 url=$4
    bench "$r" "yardstick: fixed 2 KB JSON" 32 "$PID_yard" "$URL_yard" yard
    bench "$r" "${l}1 GET page, anonymous [no cache]" 32 "$pid" "$url" page_anon
    bench "$r" "${l}1 GET page, Bearer [no cache]" 32 "$pid" "$url" page_bearer
    bench "$r" "${l}1 GET private page, Bearer, group's local role 2 up [no cache]" 32 "$pid" "$url" page_group
    bench "$r" "${l}2 GET folder of 100 (batch 25) [no cache]" 32 "$pid" "$url" folder
    bench "$r" "${l}5 @navigation depth 3 [no cache]" 32 "$pid" "$url" nav
    bench "$r" "${l}5 @breadcrumbs [no cache]" 32 "$pid" "$url" crumbs
    bench "$r" "${l}7 GET random page by path [no cache]" 32 "$pid" "$url" random_get
    bench "$r" "${l}7 GET random page by path [no cache]" 1 "$pid" "$url" random_get
    bench "$r" "${l}8 @search folder contents (depth 1, position, _all, b_size 50) [no cache]" 32 "$pid" "$url" search_fc
    bench "$r" "${l}8 @search SearchableText one word (42) [no cache]" 1 "$pid" "$url" search_word
    bench "$r" "${l}8 @search SearchableText two words AND (page 42) [no cache]" 1 "$pid" "$url" search_and
    bench "$r" "${l}8 @search SearchableText prefix (4*) [no cache]" 1 "$pid" "$url" search_prefix
}

SMALL=$WORK/site-10k
N_SMALL=$(objects_of "$SHAPE")
log "seeding $N_SMALL objects (shape $SHAPE)"
echo "seed 10k site ($SHAPE, $N_SMALL objects): $(seed "$SMALL" "$SHAPE")" >> "$NOTES"
# The editor's session publishes and retracts pages: it runs last, on its own copy of the freshly
# seeded site, so that it neither changes what the read rows read nor works on a site the write
# rows have filled.
SESSION_SITE=$WORK/site-10k-session
cp -a "$SMALL" "$SESSION_SITE"

start yard "$YARD" 127.0.0.1:0
start srv "$SERVER" --listen 127.0.0.1:0 --data "$SMALL" --log warn
setup "$URL_srv" "$SHAPE"
# HTTP Basic must not pay argon2 per request: the engine caches verified credentials.
echo "page GET by anonymous, Bearer and Basic: $(for a in "" "Authorization: Bearer $TOKEN" "Authorization: Basic $(printf 'admin:%s' "$PASSWORD" | base64)"; do curl -s -o /dev/null -w '%{http_code} in %{time_total}s; ' ${a:+-H "$a"} "$URL_srv$(first_page "$SHAPE")"; done)" >> "$NOTES"
for round in $(seq 1 "$REPEAT"); do
    log "round $round/$REPEAT (10k site)"
    scenarios "$round" "" "$PID_srv" "$URL_srv"
done
echo "server RSS after the 10k runs: $(rss_mb "$PID_srv") MB" >> "$NOTES"
stop "$PID_srv"
start srv "$SERVER" --listen 127.0.0.1:0 --data "$SMALL" --log warn --response-cache-mb 0
for round in $(seq 1 "$REPEAT"); do
    log "round $round/$REPEAT (10k site, response cache off)"
    uncached "$round" "" "$PID_srv" "$URL_srv"
done
stop "$PID_srv"
# An editor's session: 50 requests as Volto sends them (host-server/examples/editor_session.rs),
# on its own copy of the fresh site (above). Its line goes into the rows file as well, so that a
# session with errors is reported as a failed row.
start srv "$SERVER" --listen 127.0.0.1:0 --data "$SESSION_SITE" --log warn
for round in $(seq 1 "$REPEAT"); do
    line=$("$SESSION" --url "$URL_srv" --password "$PASSWORD" --editors 8 --seconds "$DURATION" --shape "$SHAPE" | head -1)
    echo "round $round: $line" >> "$NOTES"
    printf 'SESSION\t%s\t%s\n' "$round" "$line" >> "$ROWS"
done
stop "$PID_srv"

if [ "$SCALE" = 1 ]; then
    BIG=${BENCH_SCALE_DATA:-$WORK/site-1m}
    N_BIG=$(objects_of "$SCALE_SHAPE")
    if [ -e "$BIG/site.sqlite3" ]; then
        echo "scale site: reusing $BIG (seeded earlier with the same command)" >> "$NOTES"
    else
        log "seeding $N_BIG objects (shape $SCALE_SHAPE) — this takes a while"
        echo "seed 1M site ($SCALE_SHAPE, $N_BIG objects): $(seed "$BIG" "$SCALE_SHAPE")" >> "$NOTES"
    fi
    size=$(du -cb "$BIG"/site.sqlite3* | tail -1 | cut -f1)
    echo "1M database: $((size / 1024 / 1024)) MB, $((size / N_BIG)) bytes per object" >> "$NOTES"
    # Start-up: three process starts, exec to socket bound (the OS file cache is warm).
    starts=()
    for _ in 1 2 3; do
        start big "$SERVER" --listen 127.0.0.1:0 --data "$BIG" --log warn
        starts+=("$STARTUP_big"); sleep 0.3
        rest=$(rss_mb "$PID_big")
        stop "$PID_big"
    done
    echo "1M start-up to listening: ${starts[*]} ms; RSS at rest after start: $rest MB" >> "$NOTES"
    start big "$SERVER" --listen 127.0.0.1:0 --data "$BIG" --log warn
    setup "$URL_big" "$SCALE_SHAPE"
    # Cold file cache: the database evicted from the OS cache (posix_fadvise DONTNEED), then
    # random reads, which now wait on the disk. Reported apart; the rows after it run with the
    # file in the OS cache, as on a server that has been up a while (the 10k site is too).
    sync
    evict "$BIG"/site.sqlite3*
    bench 1 "1M: 7 GET random page by path [cold file cache]" 1 "$PID_big" "$URL_big" random_get
    bench 1 "1M: 7 GET random page by path [cold file cache]" 32 "$PID_big" "$URL_big" random_get
    t0=$(date +%s%N)
    cat "$BIG"/site.sqlite3* > /dev/null
    echo "1M file cache warmed after the cold runs: read $((size / 1024 / 1024)) MB in $(( ($(date +%s%N) - t0) / 1000000 )) ms" >> "$NOTES"
    for round in $(seq 1 "$REPEAT"); do
        log "round $round/$REPEAT (1M site)"
        scenarios "$round" "1M: " "$PID_big" "$URL_big"
    done
    sleep 1
    echo "1M server RSS at rest after its runs: $(rss_mb "$PID_big") MB" >> "$NOTES"
    stop "$PID_big"
    start big "$SERVER" --listen 127.0.0.1:0 --data "$BIG" --log warn --response-cache-mb 0
    TOKEN=$(token "$URL_big"); write_scripts "$SCALE_SHAPE"
    for round in $(seq 1 "$REPEAT"); do
        log "round $round/$REPEAT (1M site, response cache off)"
        uncached "$round" "1M: " "$PID_big" "$URL_big"
    done
    stop "$PID_big"
fi
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg); rustc processes: $(pgrep -c rustc || true)" >> "$NOTES"

# --- report ------------------------------------------------------------------------------------
python3 "$ROOT/bench/report.py" "$ROWS" "$NOTES"
