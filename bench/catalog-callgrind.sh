#!/usr/bin/env bash
# Instruction counts of the catalog's hot paths under callgrind (load-independent, unlike times):
#
#   bench/catalog-callgrind.sh            # both figures
#   CREATES=300 bench/catalog-callgrind.sh
#
# 1. Volto's folder contents query on a folder of 100 pages, in process (MemStore):
#    instructions per request through Engine::handle, and per call of catalog::search_page.
# 2. A create on SQLite (--sync full) with and without the catalog: instructions per handled
#    request (1 login, 1,001 setup POSTs and $CREATES measured POSTs).
# Needs valgrind. Builds the two examples (release) into $CARGO_TARGET_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CREATES=${CREATES:-300}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
(cd "$ROOT" && cargo build --release -q -p engine --example catalog_figures &&
    cargo build --release -q -p host-server --example catalog_create_cost)
FIG=$TARGET/release/examples/catalog_figures
COST=$TARGET/release/examples/catalog_create_cost
collected() { grep -o 'Collected : [0-9]*' "$1" | awk '{print $3}'; }

valgrind --tool=callgrind --callgrind-out-file="$OUT/a" --toggle-collect='*Engine*handle*' \
    "$FIG" --shape 1,1,1,100 --only fc --repeat 1 >/dev/null 2>"$OUT/a.err"
valgrind --tool=callgrind --callgrind-out-file="$OUT/b" --toggle-collect='*Engine*handle*' \
    "$FIG" --shape 1,1,1,100 --only fc --repeat 201 >/dev/null 2>"$OUT/b.err"
echo "folder contents: $(( ($(collected "$OUT/b.err") - $(collected "$OUT/a.err")) / 200 )) instructions per request"
PHASES=200 valgrind --tool=callgrind --callgrind-out-file="$OUT/c" --toggle-collect='*catalog*search_page*' \
    "$FIG" --shape 1,1,1,100 --only fc --repeat 1 >/dev/null 2>"$OUT/c.err"
echo "folder contents: $(( $(collected "$OUT/c.err") / 200 )) instructions per catalog::search_page"

for w in with without; do
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$w" --toggle-collect='*Engine*handle*' \
        "$COST" --creates "$CREATES" --only "$w" >/dev/null 2>"$OUT/$w.err"
    echo "create ($w catalog, SQLite): $(( $(collected "$OUT/$w.err") / (CREATES + 1002) )) instructions per request"
done
