#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for GreptimeDB's HTTP API (writes and SQL), as strict as the real one about
what it accepts, for the controller's and the hypervisors' metrics tests.

  POST /v1/influxdb/api/v2/write?db=DB&precision=P   (also /v1/influxdb/write; bucket= is an
                       alias of db) InfluxDB line protocol. Like GreptimeDB's automatic schema:
                       a new measurement becomes a table (tags String, the primary key; float
                       fields Float64, i integers Int64, u integers UInt64, booleans Boolean,
                       strings String; the time index greptime_timestamp,
                       TimestampMillisecond), new tags and fields become new columns. A line
                       that does not parse, a field whose type differs from its column's, a
                       name used both as tag and field, a missing field set, an unknown
                       precision or database: the whole request is refused, HTTP 400 with
                       {"code", "error"}, nothing written. A row with the tags and time of an
                       existing one replaces it (GreptimeDB's last-row merge). 204 on success.
  POST /v1/sql?db=DB   form field sql (application/x-www-form-urlencoded), one SELECT, run on
                       SQLite after translating GreptimeDB's now(), '<d>'::INTERVAL and
                       INTERVAL '<d>' (durations as milliseconds); date_bin(interval, ts). The answer has GreptimeDB's
                       JSON shape: {"output":[{"records":{"schema":{"column_schemas":[{"name",
                       "data_type"}]},"rows":[[...]],"total_rows":N}}],"execution_time_ms":T};
                       failures {"code":C,"error":"...","execution_time_ms":0} with HTTP 400
                       (1004 invalid SQL, 4001 table or database not found).
  POST /_fake/insert   {"table":"tf_worker_usage","rows":[{column: value, ...}]} preloads rows
                       of the seed tables (greptime_timestamp in milliseconds).
  GET  /_fake/queries  {"queries":[sql, ...]}: what was asked.
  GET  /_fake/writes   {"requests": N, "refused": N, "lines": N}.

Binds 127.0.0.1 only. --db FILE keeps the data in a file (a restarted fake, e.g. after a
simulated outage, still has it). Usage: fakegreptime.py [--port N] [--port-file FILE] [--db F]
"""
import argparse
import json
import os
import re
import sqlite3
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TS = "greptime_timestamp"
# The seed tables' column types, for /_fake/insert (what the writers produce).
TABLES = {
    "tf_worker_usage": {"tags": ["node", "pool", "uuid", "worker", "namespace", "workload"],
                        "fields": {"compute_percentage": "Float64", "compute_tflops": "Float64",
                                   "memory_bytes": "Int64", "memory_percentage": "Float64"}},
}
SQLITE_TYPES = {"String": "TEXT", "Float64": "REAL", "Int64": "INTEGER", "UInt64": "INTEGER",
                "Boolean": "INTEGER", "TimestampMillisecond": "INTEGER"}
PRECISION_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1, "s": 1000}
UNITS_MS = {"ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "sec": 1000, "second": 1000,
            "seconds": 1000, "m": 60000, "min": 60000, "minute": 60000, "minutes": 60000,
            "h": 3600000, "hr": 3600000, "hour": 3600000, "hours": 3600000, "d": 86400000,
            "day": 86400000, "days": 86400000, "w": 604800000, "week": 604800000,
            "weeks": 604800000}


class GreptimeError(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code, self.msg = code, msg


# ---- line protocol ------------------------------------------------------------------------

def _split(s, seps, what, line):
    """Splits S at the first unescaped char of SEPS: (head, sep, rest)."""
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            i += 2
            continue
        if c in seps:
            return s[:i], c, s[i + 1:]
        i += 1
    return s, "", ""


def _unescape(s):
    return re.sub(r"\\([,= \\\"])", r"\1", s)


def _field_value(raw, line):
    if raw.startswith('"'):
        if len(raw) < 2 or not raw.endswith('"'):
            raise GreptimeError(1004, "invalid line protocol: unterminated string in %r" % line)
        return "String", re.sub(r'\\(["\\])', r"\1", raw[1:-1])
    if raw in ("t", "T", "true", "True", "TRUE"):
        return "Boolean", 1
    if raw in ("f", "F", "false", "False", "FALSE"):
        return "Boolean", 0
    if re.fullmatch(r"-?\d+i", raw):
        return "Int64", int(raw[:-1])
    if re.fullmatch(r"\d+u", raw):
        return "UInt64", int(raw[:-1])
    if re.fullmatch(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", raw):
        return "Float64", float(raw)
    raise GreptimeError(1004, "invalid line protocol: bad field value %r in %r" % (raw, line))


def _fields(text, line):
    """The field set: name -> (type, value); string values may contain separators."""
    out, i, n = {}, 0, len(text)
    while i < n:
        key, sep, _ = _split(text[i:], "=", "field", line)
        if not sep or not key:
            raise GreptimeError(1004, "invalid line protocol: bad field in %r" % line)
        i += len(key) + 1
        if i < n and text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise GreptimeError(1004, "invalid line protocol: unterminated string in %r"
                                    % line)
            raw, i = text[i:j + 1], j + 1
        else:
            j = i
            while j < n and text[j] != ",":
                j += 1
            raw, i = text[i:j], j
        if i < n:
            if text[i] != ",":
                raise GreptimeError(1004, "invalid line protocol: bad field set in %r" % line)
            i += 1
            if i == n:
                raise GreptimeError(1004, "invalid line protocol: trailing comma in %r" % line)
        name = _unescape(key)
        if name in out:
            raise GreptimeError(1004, "invalid line protocol: field %s twice in %r" % (name, line))
        out[name] = _field_value(raw, line)
    return out


def parse_line(line, precision_ms):
    """(measurement, tags{}, fields{name: (type, value)}, ts_ms or None)."""
    head, sep, rest = _split(line, " ", "", line)
    if not sep:
        raise GreptimeError(1004, "invalid line protocol: no field set in %r" % line)
    parts = []
    while True:
        p, s2, head = _split(head, ",", "", line)
        parts.append(p)
        if not s2:
            break
    meas = _unescape(parts[0])
    if not meas:
        raise GreptimeError(1004, "invalid line protocol: empty measurement in %r" % line)
    tags = {}
    for t in parts[1:]:
        k, s3, v = _split(t, "=", "", line)
        if not s3 or not k or not v:
            raise GreptimeError(1004, "invalid line protocol: bad tag %r in %r" % (t, line))
        tags[_unescape(k)] = _unescape(v)
    # The field set ends at the last unquoted space (then the timestamp), if any.
    fs, ts = rest, None
    in_str, i, last_space = False, 0, -1
    while i < len(rest):
        c = rest[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            in_str = not in_str
        elif c == " " and not in_str:
            last_space = i
        i += 1
    if last_space >= 0:
        fs, tsraw = rest[:last_space], rest[last_space + 1:]
        if not re.fullmatch(r"-?\d+", tsraw):
            raise GreptimeError(1004, "invalid line protocol: bad timestamp %r in %r"
                                % (tsraw, line))
        ts = int(int(tsraw) * precision_ms)
    fields = _fields(fs, line)
    if not fields:
        raise GreptimeError(1004, "invalid line protocol: no fields in %r" % line)
    for k in tags:
        if k in fields:
            raise GreptimeError(1004, "invalid line protocol: %s is both a tag and a field in %r"
                                % (k, line))
    return meas, tags, fields, ts


# ---- SQL dialect --------------------------------------------------------------------------

def duration_ms(text):
    terms = re.findall(r"\s*(\d+)\s*([a-zA-Z]+)", text)
    if not terms or re.sub(r"\s*\d+\s*[a-zA-Z]+", "", text).strip():
        raise GreptimeError(1004, "Failed to parse SQL: invalid interval %r" % text)
    total = 0
    for n, unit in terms:
        if unit.lower() not in UNITS_MS:
            raise GreptimeError(1004, "Failed to parse SQL: invalid interval unit %r" % unit)
        total += int(n) * UNITS_MS[unit.lower()]
    return total


def translate(sql):
    """GreptimeDB's interval syntax -> milliseconds (outside string literals is enough for the
    queries the writers' users run)."""
    sql = re.sub(r"'([^']*)'\s*::\s*INTERVAL", lambda m: str(duration_ms(m.group(1))), sql,
                 flags=re.I)
    sql = re.sub(r"\bINTERVAL\s+'([^']*)'", lambda m: str(duration_ms(m.group(1))), sql,
                 flags=re.I)
    return sql


class Db:
    def __init__(self, path):
        self.lock = threading.Lock()
        self.conn = sqlite3.connect(path or ":memory:", check_same_thread=False)
        self.conn.create_function("now", 0, lambda: int(time.time() * 1000))
        # date_bin(interval, ts): the start of the interval-wide bucket holding ts (aligned
        # to the epoch, GreptimeDB's default origin); the interval arrives translated to ms.
        self.conn.create_function("date_bin", 2, lambda w, ts: None if ts is None or not w
                                  else ts - ts % w)
        self.queries = []
        self.stats = {"requests": 0, "refused": 0, "lines": 0}
        self.schema = {}  # table -> {column: (kind "tag"|"field"|"ts", type)}
        for (t,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND "
                                      "name != '_schema'").fetchall():
            pass
        self.conn.execute("CREATE TABLE IF NOT EXISTS _schema (tbl TEXT, col TEXT, kind TEXT, "
                          "type TEXT, PRIMARY KEY (tbl, col))")
        for tbl, col, kind, ty in self.conn.execute("SELECT * FROM _schema").fetchall():
            self.schema.setdefault(tbl, {})[col] = (kind, ty)

    def _ensure(self, table, tags, fields):
        """Creates TABLE or adds columns; raises on a conflict with the existing schema."""
        have = self.schema.get(table)
        want = {TS: ("ts", "TimestampMillisecond")}
        want.update({k: ("tag", "String") for k in tags})
        want.update({k: ("field", ty) for k, ty in fields.items()})
        if have is not None:
            for col, (kind, ty) in want.items():
                if col in have and have[col] != (kind, ty):
                    hk, ht = have[col]
                    raise GreptimeError(
                        1004, "Invalid request to region, reason: column %s of table %s is a "
                        "%s of type %s, the request writes a %s of type %s" %
                        (col, table, hk, ht, kind, ty))
        return want

    def _apply_schema(self, table, want):
        have = self.schema.get(table)
        q = lambda c: '"%s"' % c.replace('"', '""')  # noqa: E731
        if have is None:
            self.conn.execute("CREATE TABLE %s (%s)" % (q(table), ", ".join(
                "%s %s" % (q(c), SQLITE_TYPES[ty]) for c, (k, ty) in want.items())))
            have = self.schema[table] = {}
        for c, (k, ty) in want.items():
            if c not in have:
                if c not in [r[1] for r in self.conn.execute("PRAGMA table_info(%s)" % q(table))]:
                    self.conn.execute("ALTER TABLE %s ADD COLUMN %s %s" % (q(table), q(c),
                                                                         SQLITE_TYPES[ty]))
                have[c] = (k, ty)
                self.conn.execute("INSERT OR REPLACE INTO _schema VALUES (?,?,?,?)",
                                  (table, c, k, ty))

    def _put(self, table, tags, values, ts):
        q = lambda c: '"%s"' % c.replace('"', '""')  # noqa: E731
        alltags = [c for c, (k, _) in self.schema[table].items() if k == "tag"]
        cond = " AND ".join(["%s = ?" % q(TS)] + ["%s IS ?" % q(t) for t in alltags])
        self.conn.execute("DELETE FROM %s WHERE %s" % (q(table), cond),
                          [ts] + [tags.get(t) for t in alltags])
        cols = [TS] + list(tags) + list(values)
        self.conn.execute("INSERT INTO %s (%s) VALUES (%s)" % (
            q(table), ", ".join(q(c) for c in cols), ", ".join("?" for _ in cols)),
            [ts] + list(tags.values()) + list(values.values()))

    def write(self, body, precision_ms):
        lines = [ln for ln in body.split("\n") if ln.strip() and not ln.lstrip().startswith("#")]
        parsed = [parse_line(ln.rstrip("\r"), precision_ms) for ln in lines]
        now = int(time.time() * 1000)
        with self.lock:
            self.stats["requests"] += 1
            # Validate the whole request against the schema (and itself) before writing.
            pending = {}
            for meas, tags, fields, ts in parsed:
                types = {k: ty for k, (ty, _) in fields.items()}
                want = self._ensure(meas, tags, types)
                prev = pending.get(meas, {})
                for c, kt in want.items():
                    if c in prev and prev[c] != kt:
                        raise GreptimeError(1004, "Invalid request: column %s of %s has two "
                                            "types in one request (%s, %s)" %
                                            (c, meas, prev[c][1], kt[1]))
                prev.update(want)
                pending[meas] = prev
            for meas, want in pending.items():
                self._apply_schema(meas, want)
            for meas, tags, fields, ts in parsed:
                self._put(meas, tags, {k: v for k, (_, v) in fields.items()},
                          ts if ts is not None else now)
            self.conn.commit()
            self.stats["lines"] += len(parsed)

    def insert(self, table, rows):
        spec = TABLES[table]
        with self.lock:
            want = {TS: ("ts", "TimestampMillisecond")}
            want.update({t: ("tag", "String") for t in spec["tags"]})
            want.update({f: ("field", ty) for f, ty in spec["fields"].items()})
            self._apply_schema(table, want)
            for r in rows:
                tags = {t: r[t] for t in spec["tags"] if r.get(t) is not None}
                vals = {f: r[f] for f in spec["fields"] if r.get(f) is not None}
                self._put(table, tags, vals, r[TS])
            self.conn.commit()

    def query(self, sql):
        self.queries.append(sql)
        if not sql.lstrip().upper().startswith("SELECT"):
            raise GreptimeError(1004, "only SELECT is supported by the fake")
        with self.lock:
            try:
                cur = self.conn.execute(translate(sql))
            except sqlite3.OperationalError as e:
                msg = str(e)
                if msg.startswith("no such table"):
                    raise GreptimeError(4001, "Table not found: greptime.public.%s" %
                                        msg.split(":")[-1].strip())
                raise GreptimeError(1004, "Failed to parse SQL: %s" % msg)
            except sqlite3.Warning as e:
                raise GreptimeError(1004, "Failed to parse SQL: %s" % e)
            rows = [list(r) for r in cur.fetchall()]
            names = [d[0] for d in cur.description or []]
        known = {}
        for cols in self.schema.values():
            for c, (_, ty) in cols.items():
                known.setdefault(c, ty)
        schemas = []
        for i, n in enumerate(names):
            ty = known.get(n)
            if ty is None:  # an expression: its values' type
                vals = [r[i] for r in rows if r[i] is not None]
                ty = "Float64" if any(isinstance(v, float) for v in vals) else \
                    "String" if any(isinstance(v, str) for v in vals) else "Int64"
            elif ty == "Boolean":
                for r in rows:
                    if r[i] is not None:
                        r[i] = bool(r[i])
            schemas.append({"name": n, "data_type": ty})
        return {"output": [{"records": {"schema": {"column_schemas": schemas}, "rows": rows,
                                        "total_rows": len(rows)}}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, obj=None):
        body = json.dumps(obj).encode() if obj is not None else b""
        self.send_response(code)
        if obj is not None:
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
        if self.path == "/_fake/writes":
            return self.reply(200, self.server.db.stats)
        if self.path == "/health":
            return self.reply(200, {})
        self.reply(404, {"code": 1001, "error": "not found", "execution_time_ms": 0})

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        raw = self.body()
        qs = dict(urllib.parse.parse_qsl(url.query))
        db = self.server.db
        if url.path == "/_fake/insert":
            req = json.loads(raw)
            db.insert(req["table"], req["rows"])
            return self.reply(200, {"inserted": len(req["rows"])})
        if url.path in ("/v1/influxdb/api/v2/write", "/v1/influxdb/write"):
            try:
                name = qs.get("db") or qs.get("bucket") or "public"
                if name != "public":
                    raise GreptimeError(4001, "Database not found: %s" % name)
                prec = qs.get("precision", "ns")
                if prec not in PRECISION_TO_MS:
                    raise GreptimeError(1004, "invalid precision %r: expected ns, us, ms or s"
                                        % prec)
                db.write(raw.decode("utf-8"), PRECISION_TO_MS[prec])
                return self.reply(204)
            except (GreptimeError, UnicodeDecodeError) as e:
                with db.lock:
                    db.stats["refused"] += 1
                code, msg = (e.code, e.msg) if isinstance(e, GreptimeError) else (1004, str(e))
                return self.reply(400, {"code": code, "error": msg})
        if url.path != "/v1/sql":
            return self.reply(404, {"code": 1001, "error": "not found", "execution_time_ms": 0})
        start = time.monotonic()
        try:
            name = qs.get("db", "public")
            if name != "public":
                raise GreptimeError(4001, "Database not found: %s" % name)
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if ctype != "application/x-www-form-urlencoded":
                raise GreptimeError(1004, "expected a form body, got %r" % ctype)
            sql = dict(urllib.parse.parse_qsl(raw.decode(), keep_blank_values=True)).get("sql")
            if not sql:
                raise GreptimeError(1004, "sql parameter is required.")
            out = db.query(sql)
            out["execution_time_ms"] = int((time.monotonic() - start) * 1000)
            self.reply(200, out)
        except GreptimeError as e:
            self.reply(400, {"code": e.code, "error": e.msg, "execution_time_ms": 0})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--db")
    args = ap.parse_args()
    ThreadingHTTPServer.allow_reuse_address = True
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    srv.db = Db(args.db)
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
