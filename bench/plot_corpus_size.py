"""Draws bench/corpus-size.sh's results: query latency (loop and single pass, p50 and p95), peak RSS (sleuth's,
plus the Qdrant server's when it was measured) and what is on disk (index and graph) against the number of
passages, one line per backend and embedder. Usage: plot_corpus_size.py RESULTS.jsonl OUT.png"""
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

fig, axes = plt.subplots(1, 4, figsize=(19, 4.8))
loop, single, mem, disk = axes
colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
for n, (key, rs) in enumerate(series.items()):
    color = colors[n % len(colors)]
    x = [r["passages"] for r in rs]
    for ax, mode in ((loop, "loop"), (single, "single_pass")):
        ax.plot(x, [r[mode]["p50_ms"] for r in rs], "-", color=color, marker="o", label=f"{key}: p50")
        ax.plot(x, [r[mode]["p95_ms"] for r in rs], "--", color=color, marker="^", alpha=0.6, label=f"{key}: p95")
    # On a Qdrant server the memory to provision is sleuth's and the server's together, and the disk is the
    # server's storage plus sleuth's own data directory (the mention-link graph in SQLite), as embedded counts both.
    server = any(r.get("server_peak_rss_bytes") for r in rs)
    rss = [(r["peak_rss_bytes"] + (r.get("server_peak_rss_bytes") or 0)) / 2**20 for r in rs]
    mem.plot(x, rss, color=color, marker="o", label=f"{key} (sleuth + server)" if server else key)
    size = [(r["index_bytes_on_disk"] + (r.get("server_storage_bytes") or 0)) / 2**20 for r in rs]
    disk.plot(x, size, color=color, marker="o", label=f"{key} (server + sleuth's data)" if server else key)
for ax, title, unit in ((loop, "loop latency (p50 solid, p95 dashed)", "ms"),
                        (single, "single-pass latency (p50 solid, p95 dashed)", "ms"),
                        (mem, "peak RSS (ingest and queries)", "MiB"), (disk, "index and graph on disk", "MiB")):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("passages")
    ax.set_ylabel(unit)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6.5)
fig.suptitle("sleuth: cost against corpus size (synthetic corpus, planted two-hop chains; 2 cores)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
