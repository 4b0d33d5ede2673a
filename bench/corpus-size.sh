#!/usr/bin/env bash
# How cost grows with the corpus (issue 35 item 4): runs `sleuth bench-corpus` at each size, embedded and (when
# QDRANT_URL is set) on a Qdrant server, BM25 alone and with the embedding model, appends one JSON line per run to
# OUT/results.jsonl, then draws OUT/corpus-size.png with bench/plot_corpus_size.py.
# usage (from the project root, after `cargo build --release`):
#   bench/corpus-size.sh [BIN] [OUT]
#   SIZES="10000 100000 1000000"  sizes run without the embedding model (BM25 alone)
#   MODEL_SIZES="10000"           sizes also run with all-MiniLM-L6-v2 (ingestion is embedding bound: ~30 chunks/s on 2 cores)
#   QUESTIONS=50                  planted questions per size
#   QDRANT_URL=http://127.0.0.1:6334 QDRANT_STORAGE=/path/to/storage   also run on that server (its storage is measured)
set -euo pipefail
BIN=${1:-target/release/sleuth}; OUT=${2:-bench/corpus-size}
SIZES=${SIZES:-10000 100000 1000000}; MODEL_SIZES=${MODEL_SIZES:-10000}; QUESTIONS=${QUESTIONS:-50}
[ -x "$BIN" ] || { echo "no sleuth binary at $BIN (cargo build --release first)" >&2; exit 1; }
mkdir -p "$OUT"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

one() { # backend embedder size
  local backend=$1 embedder=$2 size=$3 env=(SLEUTH__DATA_DIR="$work/data" RUST_LOG=warn)
  [ "$embedder" = none ] && env+=(SLEUTH__EMBEDDER__KIND=none)
  if [ "$backend" = qdrant ]; then
    local tag="bench_${size}_${embedder}_$(date +%s)"
    env+=(SLEUTH__RETRIEVAL__BACKEND=qdrant SLEUTH__RETRIEVAL__QDRANT_URL="$QDRANT_URL"
          SLEUTH__RETRIEVAL__COLLECTION="$tag" SLEUTH__RETRIEVAL__ENTITY_COLLECTION="${tag}_entities")
    local before; before=$(du -sb "$QDRANT_STORAGE" | cut -f1)
  fi
  echo "$(date +%T) $backend, embedder $embedder, $size passages" >&2
  local line; line=$(env "${env[@]}" "$BIN" bench-corpus --passages "$size" --questions "$QUESTIONS")
  if [ "$backend" = qdrant ]; then
    local after; after=$(du -sb "$QDRANT_STORAGE" | cut -f1)
    line=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["server_storage_bytes"]=int(sys.argv[2]); print(json.dumps(d))' "$line" "$((after - before))")
  fi
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["backend"]=sys.argv[2]; print(json.dumps(d))' "$line" "$backend" | tee -a "$OUT/results.jsonl"
}

backends=(embedded); [ -n "${QDRANT_URL:-}" ] && backends+=(qdrant)
for backend in "${backends[@]}"; do
  for size in $SIZES; do one "$backend" none "$size"; done
  for size in $MODEL_SIZES; do one "$backend" minilm "$size"; done
done

# The plot needs matplotlib: from PyPI into a venv of its own, once.
py=${SLEUTH_CI_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/sleuth-ci}/plot
"$py/bin/python" -c "import matplotlib" 2>/dev/null || { python3 -m venv "$py" && "$py/bin/pip" install -q matplotlib==3.11.2; }
"$py/bin/python" "$(dirname "$0")/plot_corpus_size.py" "$OUT/results.jsonl" "$OUT/corpus-size.png"
echo "results: $OUT/results.jsonl, plot: $OUT/corpus-size.png"
