"""What the server benchmarks' reports share (scripts/bench_server.sh, scripts/bench_cluster.sh):
reading the raw lines bench_lib.sh's run_workload appends, and turning one into a run record.

A raw line: {"server": LABEL, "workload", "rc", "cpu_ticks" (the servers'), "client_ticks" (the
load generator's), "clk_tck", "rss_kb", "hwm_kb", "bench": <tessera bench's JSON line or null>}.
Other raw lines (a "memory" key) are passed through to the caller.
"""
import json

# The operation type whose latency stands for a workload in a table: the first present.
MAIN_TYPES = ("READ", "SCAN", "BATCH-INSERT", "PING")


def read_raw(path):
    """(runs, others): runs keyed by (label, workload) in file order; others, the other lines."""
    runs, others = {}, []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "memory" in r:
                others.append(r)
            else:
                runs[(r["server"], r["workload"])] = r
    return runs, others


def run_record(r):
    """The "kind":"run" record of one raw run line."""
    b = r["bench"] or {}
    ops = b.get("ops", 0)
    cpu_s = r["cpu_ticks"] / r["clk_tck"]
    client_s = r["client_ticks"] / r["clk_tck"]
    return {
        "kind": "run", "server": r["server"], "workload": r["workload"],
        "ops": ops, "seconds": b.get("seconds"), "throughput": b.get("throughput"),
        "errors": b.get("errors"), "exit": r["rc"],
        "server_cpu_s": cpu_s,
        "server_cpu_us_per_op": cpu_s * 1e6 / ops if ops else None,
        "client_cpu_us_per_op": client_s * 1e6 / ops if ops else None,
        "rss_mb": r["rss_kb"] / 1024, "peak_rss_mb": r["hwm_kb"] / 1024,
        "latency_us": {t: {"p50": s["p50_us"], "p99": s["p99_us"], "p999": s["p999_us"]}
                       for t, s in b.get("ops_by_type", {}).items()},
        "bench": b,
    }


def main_latency(record):
    """{"p50", "p99", "p999"} of the record's main operation type, or None."""
    lat = record["latency_us"]
    return next((lat[k] for k in MAIN_TYPES if k in lat), None)


def write_lines(records, path):
    """Writes the records, one JSON object a line, to path and to stdout."""
    with open(path, "w") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    for rec in records:
        print(json.dumps(rec))


def fmt(v, spec):
    """v formatted by spec; None as "-", right-aligned to the spec's width."""
    if v is not None:
        return format(v, spec)
    width = "".join(c for c in spec.split(".")[0] if c.isdigit())
    return "-".rjust(int(width or 0))
