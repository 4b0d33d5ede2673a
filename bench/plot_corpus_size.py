"""Draws bench/corpus-size.sh's results: query latency (loop and single pass, p50 and p95), peak RSS and index
size on disk against the number of passages, one line per backend and embedder. Usage: plot_corpus_size.py
RESULTS.jsonl OUT.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
series = {}
for r in runs:
    key = f"{r.get('backend', 'embedded')}, {'MiniLM + BM25' if r.get('embedder') else 'BM25 only'}"
    series.setdefault(key, []).append(r)
for rs in series.values():
    rs.sort(key=lambda r: r["passages"])

fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
lat, mem, disk = axes
for key, rs in series.items():
    x = [r["passages"] for r in rs]
    for mode, style in (("loop", "-"), ("single_pass", ":")):
        lat.plot(x, [r[mode]["p50_ms"] for r in rs], style, marker="o", label=f"{key}: {mode.replace('_', ' ')} p50")
        lat.plot(x, [r[mode]["p95_ms"] for r in rs], style, marker="^", alpha=0.5, label=f"{key}: {mode.replace('_', ' ')} p95")
    mem.plot(x, [r["peak_rss_bytes"] / 2**20 for r in rs], marker="o", label=key)
    size = [(r.get("server_storage_bytes") or r["index_bytes_on_disk"]) / 2**20 for r in rs]
    disk.plot(x, size, marker="o", label=key)
for ax, title, unit in ((lat, "query latency", "ms"), (mem, "peak RSS (ingest and queries)", "MiB"),
                        (disk, "index on disk", "MiB")):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("passages")
    ax.set_ylabel(unit)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
fig.suptitle("sleuth: cost against corpus size (synthetic corpus, planted two-hop chains; 2 cores)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
