#!/usr/bin/env bash
# How cost grows with the corpus (issue 35 item 4): runs `sleuth bench-corpus` at each size, embedded and (when
# QDRANT_URL is set) on a Qdrant server, BM25 alone and with the embedding model, appends one JSON line per run to
# OUT/results.jsonl, then draws OUT/corpus-size.png with bench/plot_corpus_size.py.
# usage (from the project root, after `cargo build --release`):
#   bench/corpus-size.sh [BIN] [OUT]
#   SIZES="10000 100000 1000000"  sizes run without the embedding model (BM25 alone)
#   MODEL_SIZES="10000"           sizes also run with all-MiniLM-L6-v2 (ingestion is embedding bound: ~30 chunks/s on 2 cores)
#   QUESTIONS=50                  planted questions per size
#   BACKENDS="embedded qdrant"    which backends run (default: embedded, and qdrant when a server is named)
#   QDRANT_BIN=/path/to/qdrant    also run on a Qdrant server: a fresh one per run (storage in a temp dir, gRPC on
#                                 QDRANT_GRPC_PORT, default 6334), whose peak RSS and storage are measured and which
#                                 is stopped after the run
#   QDRANT_URL=http://127.0.0.1:6334 QDRANT_STORAGE=/path/to/storage   or run on a server already running (its
#                                 storage grows by what the run adds; its memory is not measured)
set -euo pipefail
BIN=${1:-target/release/sleuth}; OUT=${2:-bench/corpus-size}
SIZES=${SIZES:-10000 100000 1000000}; MODEL_SIZES=${MODEL_SIZES:-10000}; QUESTIONS=${QUESTIONS:-50}
[ -x "$BIN" ] || { echo "no sleuth binary at $BIN (cargo build --release first)" >&2; exit 1; }
mkdir -p "$OUT"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

one() { # backend embedder size
  local backend=$1 embedder=$2 size=$3 env=(SLEUTH__DATA_DIR="$work/data" RUST_LOG=warn)
  [ "$embedder" = none ] && env+=(SLEUTH__EMBEDDER__KIND=none)
  local url=${QDRANT_URL:-} storage=${QDRANT_STORAGE:-} server=""
  if [ "$backend" = qdrant ]; then
    if [ -n "${QDRANT_BIN:-}" ]; then start_qdrant; url=http://127.0.0.1:$grpc_port storage=$qdrant_dir/storage server=$qdrant_pid; fi
    local tag="bench_${size}_${embedder}_$(date +%s)"
    env+=(SLEUTH__RETRIEVAL__BACKEND=qdrant SLEUTH__RETRIEVAL__QDRANT_URL="$url"
          SLEUTH__RETRIEVAL__COLLECTION="$tag" SLEUTH__RETRIEVAL__ENTITY_COLLECTION="${tag}_entities")
    local before; before=$(du -sB1 "$storage" | cut -f1)
  fi
  echo "$(date +%T) $backend, embedder $embedder, $size passages" >&2
  local line; line=$(env "${env[@]}" "$BIN" bench-corpus --passages "$size" --questions "$QUESTIONS")
  if [ "$backend" = qdrant ]; then
    local after; after=$(du -sB1 "$storage" | cut -f1) server_rss=null
    if [ -n "$server" ]; then
      server_rss=$(( $(awk '/^VmHWM:/ {print $2}' "/proc/$server/status") * 1024 ))
      stop_qdrant
    fi
    line=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["server_storage_bytes"]=int(sys.argv[2]); d["server_peak_rss_bytes"]=json.loads(sys.argv[3]); print(json.dumps(d))' "$line" "$((after - before))" "$server_rss")
  fi
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["backend"]=sys.argv[2]; print(json.dumps(d))' "$line" "$backend" | tee -a "$OUT/results.jsonl"
}

# A fresh Qdrant server for one run: its own storage and snapshots directories, ready when /readyz answers.
grpc_port=${QDRANT_GRPC_PORT:-6334}; http_port=$((grpc_port - 1)); qdrant_pid=""; qdrant_dir=""
start_qdrant() {
  qdrant_dir=$(mktemp -d -p "$work")
  (cd "$qdrant_dir" && QDRANT__STORAGE__STORAGE_PATH="$qdrant_dir/storage" QDRANT__STORAGE__SNAPSHOTS_PATH="$qdrant_dir/snapshots" \
     QDRANT__SERVICE__GRPC_PORT=$grpc_port QDRANT__SERVICE__HTTP_PORT=$http_port QDRANT__TELEMETRY_DISABLED=true \
     exec "$QDRANT_BIN" >"$qdrant_dir/log" 2>&1) &
  qdrant_pid=$!
  for _ in $(seq 1 300); do
    curl -sf -m 1 "http://127.0.0.1:$http_port/readyz" >/dev/null 2>&1 && return 0
    kill -0 "$qdrant_pid" 2>/dev/null || break
    sleep 0.2
  done
  echo "the Qdrant server at $QDRANT_BIN did not become ready; its log:" >&2; cat "$qdrant_dir/log" >&2; exit 1
}
stop_qdrant() { kill "$qdrant_pid" 2>/dev/null; wait "$qdrant_pid" 2>/dev/null || true; qdrant_pid=""; }
trap '[ -n "$qdrant_pid" ] && stop_qdrant; rm -rf "$work"' EXIT

backends=(embedded); [ -n "${QDRANT_URL:-}${QDRANT_BIN:-}" ] && backends+=(qdrant)
[ -n "${BACKENDS:-}" ] && read -ra backends <<<"$BACKENDS"
for backend in "${backends[@]}"; do
  for size in $SIZES; do one "$backend" none "$size"; done
  for size in $MODEL_SIZES; do one "$backend" minilm "$size"; done
done

# The plot needs matplotlib: from PyPI into a venv of its own, once.
py=${SLEUTH_CI_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/sleuth-ci}/plot
"$py/bin/python" -c "import matplotlib" 2>/dev/null || { python3 -m venv "$py" && "$py/bin/pip" install -q matplotlib==3.11.2; }
"$py/bin/python" "$(dirname "$0")/plot_corpus_size.py" "$OUT/results.jsonl" "$OUT/corpus-size.png"
echo "results: $OUT/results.jsonl, plot: $OUT/corpus-size.png"
