#!/usr/bin/env bash
# A quick before/after of one server binary on a few rows of bench/run.sh, each with the
# yardstick run just before it (the ratio is what compares across a loaded machine's minutes):
#
#   bench/compare.sh BIN CACHE_MB ROW...     # rows: page_anon page_bearer folder nav fc
#                                            #       random_get mixed post
#   DUR=5 bench/compare.sh target/release/host-server 0 folder fc
#
# SITE (a 10k site seeded once with SEED, default target/release/examples/seed, admin password
# bench-secret) is copied for every run, so writes never change it; YARD is the yardstick.
# Build them with `cargo build --release -p host-server --bin host-server --example seed
# --example yardstick`. Prints requests/s, p50/p99, errors, the yardstick and the ratio.
#
# SHAPE (default 5,5,4,100) is the seed shape of SITE: the page, the folder of 100 and the random
# paths are taken from it (5,5,4,100,100 for the 1M site). INPLACE=1 serves SITE itself instead of
# a copy (for a large site and read-only rows; the `bench-posts` folder is still created once).
set -euo pipefail
BIN=$1; CACHE=$2; shift 2
D=${DUR:-5}
SRC=${SITE:-/tmp/bench-compare/site-10k}
export ADMIN_PASSWORD=bench-secret
SHAPE=${SHAPE:-5,5,4,100}
if [ ! -e "$SRC/site.sqlite3" ]; then ${SEED:-target/release/examples/seed} --data "$SRC" --shape "$SHAPE" >/dev/null; fi
W=$(mkdir -p /tmp/bench-compare; mktemp -d /tmp/bench-compare/run.XXXX)
if [ "${INPLACE:-0}" = 1 ]; then ln -s "$(realpath "$SRC")" "$W/site"; else cp -r "$SRC" "$W/site"; fi
${YARD:-target/release/examples/yardstick} 127.0.0.1:18081 > $W/yard.out 2>&1 &
YP=$!
"$BIN" --listen 127.0.0.1:18080 --data "$W/site" --log warn --response-cache-mb "$CACHE" > $W/srv.out 2>&1 &
SP=$!
trap 'kill $SP $YP 2>/dev/null; rm -rf $W' EXIT
U=http://127.0.0.1:18080
for i in $(seq 1 200); do curl -sf $U/ >/dev/null 2>&1 && break; sleep 0.2; done
T=$(curl -sf -X POST -H 'Content-Type: application/json' -d '{"login":"admin","password":"bench-secret"}' $U/@login | python3 -c 'import json,sys;print(json.load(sys.stdin)["token"])')
api() { curl -sf -o /dev/null -X "$1" -H "Authorization: Bearer $T" -H 'Content-Type: application/json' ${3:+-d "$3"} "$U$2" || true; }
api POST / '{"@type": "Folder", "id": "bench-posts", "title": "Bench posts"}'
# The bottom folder (a folder of pages) and its first page, from the shape: /f0/.../f0 and /p0.
FOLDER=$(python3 -c "print(''.join('/f0' for _ in '$SHAPE'.split(',')[:-1]))")
PAGE=$FOLDER/p0
curl -sf "$U$PAGE" -o /dev/null || { echo "no page $PAGE"; curl -s "$U/folder-1" | head -c 300; exit 1; }
L=$W/lua; mkdir -p $L
RND=$(python3 -c "
import random
random.seed(7)
shape=[int(n) for n in '$SHAPE'.split(',')]
import itertools, math
if math.prod(shape) <= 20000:  # every page (the 10k site), as bench/run.sh does
    ps=[''.join('/f%d' % i for i in ix[:-1]) + '/p%d' % ix[-1] for ix in itertools.product(*map(range, shape))]
else:  # 10,000 pages drawn at random
    ps=[''.join('/f%d' % random.randrange(n) for n in shape[:-1]) + '/p%d' % random.randrange(shape[-1]) for _ in range(10000)]
print('paths={'+','.join('\"%s\"'%p for p in ps)+'}')
")
DONE='done = function(s, lat, req) io.write(string.format("RESULT %d %.3f %.3f %.3f %d\n", s.requests, s.duration/1e6, lat:percentile(50)/1000, lat:percentile(99)/1000, s.errors.status)) end'
cat > $L/yard.lua <<L
$DONE
L
cat > $L/page_bearer.lua <<L
wrk.path = "$PAGE"; wrk.headers["Authorization"] = "Bearer $T"
$DONE
L
cat > $L/page_anon.lua <<L
wrk.path = "$PAGE"
$DONE
L
cat > $L/folder.lua <<L
wrk.path = "$FOLDER"
$DONE
L
cat > $L/nav.lua <<L
wrk.path = "/@navigation?expand.navigation.depth=3"
$DONE
L
cat > $L/fc.lua <<L
wrk.path = "$FOLDER/@search?path.depth=1&sort_on=getObjPositionInParent&metadata_fields=_all&show_inactive=true&b_size=50"; wrk.headers["Authorization"] = "Bearer $T"
$DONE
L
cat > $L/random_get.lua <<L
$RND
request = function() return wrk.format('GET', paths[math.random(#paths)]) end
$DONE
L
cat > $L/mixed.lua <<L
$RND
local n = 0
request = function()
  n = n + 1
  local p = paths[math.random(#paths)]
  if math.random(10) == 1 then
    return wrk.format('PATCH', p, {['Content-Type'] = 'application/json', ['Authorization'] = 'Bearer $T'}, string.format('{"title": "Mixed n%d"}', n))
  end
  return wrk.format('GET', p, {['Authorization'] = 'Bearer $T'})
end
$DONE
L
cat > $L/post.lua <<L
local n = 0
request = function()
  n = n + 1
  return wrk.format('POST', '/bench-posts', {['Content-Type'] = 'application/json', ['Authorization'] = 'Bearer $T'}, string.format('{"@type": "Page", "title": "Bench %d %d", "description": "A page", "blocks": {"b1": {"@type": "slate", "plaintext": "Hello"}}, "blocks_layout": {"items": ["b1"]}}', math.random(1000000), n))
end
$DONE
L
run() { # script conns url
  local out; out=$(wrk -t2 -c$2 -d${D}s --timeout 5s -s $L/$1.lua "$3" 2>&1 | grep RESULT)
  awk '{printf "%.0f %s %s %d", $1/$2, $3, $4, $5}' <<<"${out#RESULT }"
}
for s in "$@"; do
  c=32; [ "$s" = post ] && c=8
  y=$(run yard 32 http://127.0.0.1:18081/)
  r=$(run $s $c $U)
  python3 -c "
y=float('$y'.split()[0]); r='$r'.split()
print('%-12s c=%-2d %8.0f req/s  p50 %6s ms  p99 %6s ms  err %s  yard %6.0f  ratio %5.1f%%' % ('$s', $c, float(r[0]), r[1], r[2], r[3], y, 100*float(r[0])/y))"
done
