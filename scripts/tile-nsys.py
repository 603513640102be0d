#!/usr/bin/env python3
"""Tile a real Nsight Systems SQLite export in time (for the 1 GB reader measurement).

    scripts/tile-nsys.py INPUT.sqlite OUTPUT.sqlite --target-bytes 1e9

Copies INPUT, then appends copies of its kernel, runtime, memcpy, memset and NVTX rows,
each shifted past the previous copy's time span (start/end) and correlation ids, until the
file reaches about the target size. Other tables (strings, devices, processes) stay as
they are. Python's standard sqlite3 only; the input is opened read-only.
"""
import argparse
import os
import shutil
import sqlite3

TABLES = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "NVTX_EVENTS",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--target-bytes", type=float, default=1e9)
    args = parser.parse_args()
    shutil.copyfile(args.input, args.output)
    db = sqlite3.connect(args.output)
    present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    tables = [t for t in TABLES if t in present]
    columns = {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in tables}
    span = max(db.execute(f'SELECT max("end") - min(start) FROM {t}').fetchone()[0] or 0 for t in tables)
    ids = max(
        (db.execute(f"SELECT max(correlationId) FROM {t}").fetchone()[0] or 0)
        for t in tables
        if "correlationId" in columns[t]
    )
    for t in tables:
        db.execute(f"CREATE TEMP TABLE orig_{t} AS SELECT * FROM main.{t}")
    one = os.path.getsize(args.input)
    copies = max(1, int(args.target_bytes // one))
    for k in range(1, copies):
        for t in tables:
            def expr(c):
                if c in ("start", "end"):
                    return f'"{c}" + {k * (span + 1_000_000)}'
                if c == "correlationId":
                    return f"correlationId + {k * (ids + 1)}"
                if c in ("id", "rowid"):
                    return "NULL"
                return f'"{c}"'
            cols = ", ".join(f'"{c}"' for c in columns[t])
            select = ", ".join(expr(c) for c in columns[t])
            db.execute(f"INSERT INTO main.{t} ({cols}) SELECT {select} FROM orig_{t}")
        if k % 50 == 0:
            db.commit()
    db.commit()
    db.close()
    print(f"tile-nsys: {copies} copies, {os.path.getsize(args.output)} bytes written to {args.output}")


if __name__ == "__main__":
    main()
