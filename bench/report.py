"""Turn bench/run.sh's rows into the results table (medians over rounds, ratio to the yardstick).

A row whose runs had any error (a non-2xx/3xx answer, a socket error or a timeout) is a failed row:
it is printed as FAILED with the error count, never as a rate, since requests per second of
errors measure nothing. The editor's session lines (SESSION rows) get the same rule."""
import statistics
import sys

rows_path, notes_path = sys.argv[1], sys.argv[2]
runs = {}
order = []
last_yard = float("nan")
sessions = []
for line in open(rows_path):
    f = line.rstrip("\n").split("\t")
    if f[0] == "SESSION":
        sessions.append((f[1], f[2]))
        continue
    if len(f) < 10:
        continue
    _round, scenario, conns = f[0], f[1], int(f[2])
    requests, secs, p50, p99 = int(f[3]), float(f[4]), float(f[5]), float(f[6])
    status_err, sock_err, peak_kb = int(f[7]), int(f[8]), int(f[9] or 0)
    key = (scenario, conns)
    if key not in runs:
        runs[key] = []
        order.append(key)
    rps = requests / secs
    if scenario.startswith("yardstick"):
        last_yard = rps
    # Each scenario is compared with the yardstick run just before it (same round, same load).
    runs[key].append((rps, p50, p99, status_err + sock_err, peak_kb, rps / last_yard, requests))

yard = [r[0] for k, v in runs.items() if k[0].startswith("yardstick") for r in v]
yard_rps = statistics.median(yard) if yard else float("nan")

print("| scenario | conc. | req/s (median) | vs yardstick (median of per-round ratios) | p50 ms | p99 ms | errors | peak RSS MB | rounds |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for key in order:
    v = runs[key]
    rps = statistics.median(r[0] for r in v)
    p50 = statistics.median(r[1] for r in v)
    p99 = statistics.median(r[2] for r in v)
    errors = sum(r[3] for r in v)
    peak = max(r[4] for r in v) / 1024
    ratio = f"{100 * statistics.median(r[5] for r in v):.0f}%"
    if errors:
        total = sum(r[6] for r in v)
        print(f"| {key[0]} | {key[1]} | **FAILED** ({errors:,} errors in {total:,} requests) | n/a | {p50:.2f} | {p99:.2f} | {errors} | {peak:.0f} | {len(v)} |")
        continue
    print(f"| {key[0]} | {key[1]} | {rps:,.0f} | {ratio} | {p50:.2f} | {p99:.2f} | {errors} | {peak:.0f} | {len(v)} |")
print()
print(f"Yardstick median over {len(yard)} runs: {yard_rps:,.0f} req/s "
      f"(min {min(yard):,.0f}, max {max(yard):,.0f})." if yard else "")
print()
pairs = [(k, (k[0][4:], k[1])) for k in order if k[0].startswith("1M: ")]
if pairs:
    print("1,000,000 objects against 10,000 (median req/s and p50; target: no scenario more than 2x slower):")
    print()
    print("| scenario | conc. | req/s 10k | req/s 1M | 10k/1M | p50 ms 10k | p50 ms 1M |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for big, small in pairs:
        if small not in runs:
            continue
        rs = statistics.median(r[0] for r in runs[small])
        rb = statistics.median(r[0] for r in runs[big])
        ps = statistics.median(r[1] for r in runs[small])
        pb = statistics.median(r[1] for r in runs[big])
        # A 1M row where no request finished within wrk's run has 0 req/s.
        factor = f"{rs / rb:.2f}x" if rb else "n/a (none finished)"
        print(f"| {small[0]} | {small[1]} | {rs:,.0f} | {rb:,.0f} | {factor} | {ps:.2f} | {pb:.2f} |")
    print()
if sessions:
    import re
    print("An editor's session (50 requests as Volto sends them, on its own copy of the fresh 10k site):")
    print()
    for rnd, text in sessions:
        m = re.search(r"\| (\d+) errors \|", text)
        errs = int(m.group(1)) if m else -1
        verdict = "" if errs == 0 else (" **FAILED**" if errs > 0 else " **FAILED** (no error count)")
        print(f"- round {rnd}:{verdict} {text}")
    print()
for line in open(notes_path):
    print(f"- {line.rstrip()}")
