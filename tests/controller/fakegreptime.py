#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small stand-in for GreptimeDB's SQL HTTP API, for the controller's autoscaler tests.

  POST /v1/sql?db=DB   form field sql (application/x-www-form-urlencoded), one SELECT,
                       run on an in-memory SQLite database holding the seed 002 table
                       tf_worker_usage. The answer has GreptimeDB's JSON shape:
                       {"output":[{"records":{"schema":{"column_schemas":[{"name","data_type"}]},
                       "rows":[[...]],"total_rows":N}}],"execution_time_ms":T}
                       and failures {"code":C,"error":"...","execution_time_ms":0} with HTTP
                       400 (code 1004 invalid SQL / 4001 table or database not found).
  POST /_fake/insert   {"table":"tf_worker_usage","rows":[{column: value, ...}]} preloads rows
                       (greptime_timestamp in milliseconds).
  GET  /_fake/queries  {"queries":[sql, ...]}: what the controller asked.

Binds 127.0.0.1 only. Usage: fakegreptime.py [--port N] [--port-file FILE]
"""
import argparse
import json
import os
import sqlite3
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# GreptimeDB's column types for the table the hypervisor's metrics sink writes (tags String,
# fields Float64 / Int64, the time index TimestampMillisecond).
TABLES = {
    "tf_worker_usage": [("greptime_timestamp", "TimestampMillisecond"), ("node", "String"),
                        ("pool", "String"), ("uuid", "String"), ("worker", "String"),
                        ("namespace", "String"), ("workload", "String"),
                        ("compute_percentage", "Float64"), ("compute_tflops", "Float64"),
                        ("memory_bytes", "Int64"), ("memory_percentage", "Float64")],
}
SQLITE_TYPES = {"TimestampMillisecond": "INTEGER", "String": "TEXT", "Float64": "REAL",
                "Int64": "INTEGER"}


class Db:
    def __init__(self):
        self.lock = threading.Lock()
        self.conn = sqlite3.connect(":memory:", check_same_thread=False)
        self.queries = []
        for t, cols in TABLES.items():
            self.conn.execute("CREATE TABLE %s (%s)" % (t, ", ".join(
                "%s %s" % (c, SQLITE_TYPES[ty]) for c, ty in cols)))

    def insert(self, table, rows):
        cols = [c for c, _ in TABLES[table]]
        with self.lock:
            for r in rows:
                self.conn.execute("INSERT INTO %s (%s) VALUES (%s)" % (
                    table, ", ".join(cols), ", ".join("?" for _ in cols)),
                    [r.get(c) for c in cols])

    def query(self, sql):
        self.queries.append(sql)
        if not sql.lstrip().upper().startswith("SELECT"):
            raise GreptimeError(1004, "only SELECT is supported by the fake")
        with self.lock:
            try:
                cur = self.conn.execute(sql)
            except sqlite3.OperationalError as e:
                msg = str(e)
                if msg.startswith("no such table"):
                    raise GreptimeError(4001, "Table not found: greptime.public.%s" %
                                        msg.split(":")[-1].strip())
                raise GreptimeError(1004, "Failed to parse SQL: %s" % msg)
            rows = [list(r) for r in cur.fetchall()]
            names = [d[0] for d in cur.description or []]
        known = {c: ty for cols in TABLES.values() for c, ty in cols}
        schemas = []
        for i, n in enumerate(names):
            ty = known.get(n)
            if ty is None:  # an expression: its values' type
                vals = [r[i] for r in rows if r[i] is not None]
                ty = "Float64" if any(isinstance(v, float) for v in vals) else \
                    "String" if any(isinstance(v, str) for v in vals) else "Int64"
            schemas.append({"name": n, "data_type": ty})
        return {"output": [{"records": {"schema": {"column_schemas": schemas}, "rows": rows,
                                        "total_rows": len(rows)}}]}


class GreptimeError(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code, self.msg = code, msg


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        if self.path == "/_fake/queries":
            return self.reply(200, {"queries": self.server.db.queries})
        self.reply(404, {"code": 1001, "error": "not found", "execution_time_ms": 0})

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        raw = self.body()
        if url.path == "/_fake/insert":
            req = json.loads(raw)
            self.server.db.insert(req["table"], req["rows"])
            return self.reply(200, {"inserted": len(req["rows"])})
        if url.path != "/v1/sql":
            return self.reply(404, {"code": 1001, "error": "not found", "execution_time_ms": 0})
        start = time.monotonic()
        try:
            db = dict(urllib.parse.parse_qsl(url.query)).get("db", "public")
            if db != "public":
                raise GreptimeError(4001, "Database not found: %s" % db)
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if ctype != "application/x-www-form-urlencoded":
                raise GreptimeError(1004, "expected a form body, got %r" % ctype)
            sql = dict(urllib.parse.parse_qsl(raw.decode(), keep_blank_values=True)).get("sql")
            if not sql:
                raise GreptimeError(1004, "sql parameter is required.")
            out = self.server.db.query(sql)
            out["execution_time_ms"] = int((time.monotonic() - start) * 1000)
            self.reply(200, out)
        except GreptimeError as e:
            self.reply(400, {"code": e.code, "error": e.msg, "execution_time_ms": 0})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    srv.db = Db()
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.rename(args.port_file + ".tmp", args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
