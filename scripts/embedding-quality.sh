#!/usr/bin/env bash
# Quality and speed of the static embedding model against the full all-MiniLM-L6-v2:
#
#   scripts/embedding-quality.sh [MODEL_DIR] [CORPUS_DIR...]
#
# MODEL_DIR (default models/minilm-static, with MODEL_DIR-full beside it) comes from
# scripts/prepare-embedding-model.sh. The corpus defaults to Nick's reference docs
# (../shared/reference/nick/docs), split into sections at headings. Prints a markdown table:
# recall@5, time to embed one section natively (static and full model), model sizes (gzip).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-models/minilm-static}
shift || true
CORPUS=("$@")
[ ${#CORPUS[@]} -gt 0 ] || CORPUS=(../shared/reference/nick/docs)
cargo run --release --quiet --manifest-path tools/embedding-model/Cargo.toml -- quality "$MODEL-full" "$MODEL" "${CORPUS[@]}"
echo "| browser download (gzip -9): model.safetensors + tokenizer.json | $(gzip -9c "$MODEL/model.safetensors" | wc -c) + $(gzip -9c "$MODEL/tokenizer.json" | wc -c) bytes |"
