#!/usr/bin/env python3
"""A local HTTP server for the agent's push tests: records every POST and
answers as it is told.

    httpsink.py DIR        listen on 127.0.0.1, a free port, written to DIR/port

Each POST becomes DIR/NNNNNN.json (method, path, query, headers, the status
answered, the time) and DIR/NNNNNN.body (the body as received), both
renamed into place whole, NNNNNN counting from 1 in arrival order.

Told through GET /_control?..., per path prefix (path=, default "" = all;
the longest matching prefix wins):
    status=N      answer N (default 200)
    for=S         only for the next S seconds, then 200 again
    times=N       only for the next N requests, then 200 again
    retry_after=S send Retry-After: S with it
    hang=S        wait S seconds before answering
    drop=1        close the connection without an answer
    body=HEX      answer these bytes (a 2xx; default "ok\n")
GET /_control?reset=1 forgets every rule.  Runs until killed.
"""
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]
LOCK = threading.Lock()
RULES = {}  # path prefix -> dict(status, until, retry_after, hang, drop)
COUNT = [0]


def write_whole(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


def rule_for(path):
    with LOCK:
        best = None
        for prefix, rule in RULES.items():
            if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
                best = (prefix, rule)
        if not best:
            return {}
        rule = best[1]
        if rule.get("until") and time.time() >= rule["until"]:
            del RULES[best[0]]
            return {}
        if "times" in rule:
            rule["times"] -= 1
            if rule["times"] <= 0:
                del RULES[best[0]]
        return dict(rule)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        try:
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            # the client gave up (its timeout, after a hang): nothing to answer
            self.close_connection = True

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/_control":
            self.answer(404)
            return
        q = dict(urllib.parse.parse_qsl(url.query))
        with LOCK:
            if q.get("reset"):
                RULES.clear()
            else:
                rule = {
                    "status": int(q.get("status", "200")),
                    "retry_after": q.get("retry_after"),
                    "hang": float(q.get("hang", "0")),
                    "drop": q.get("drop") == "1",
                    "body": bytes.fromhex(q["body"]) if "body" in q else None,
                }
                if "for" in q:
                    rule["until"] = time.time() + float(q["for"])
                if "times" in q:
                    rule["times"] = int(q["times"])
                RULES[q.get("path", "")] = rule
        self.answer(200, b"ok\n")

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        rule = rule_for(url.path)
        if rule.get("hang"):
            time.sleep(rule["hang"])
        status = rule.get("status", 200)
        with LOCK:
            COUNT[0] += 1
            k = COUNT[0]
        rec = {
            "n": k,
            "method": "POST",
            "path": url.path,
            "query": url.query,
            "headers": {h.lower(): v for h, v in self.headers.items()},
            "status": 0 if rule.get("drop") else status,
            "time": time.time(),
        }
        write_whole(os.path.join(DIR, "%06d.body" % k), body)
        write_whole(os.path.join(DIR, "%06d.json" % k), json.dumps(rec).encode())
        if rule.get("drop"):
            self.close_connection = True
            return
        headers = []
        if rule.get("retry_after"):
            headers.append(("Retry-After", rule["retry_after"]))
        text = b"ok\n" if status < 300 else b"told to fail with %d\n" % status
        if status < 300 and rule.get("body") is not None:
            text = rule["body"]
        self.answer(status, text, headers)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    write_whole(os.path.join(DIR, "port"), b"%d\n" % server.server_address[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
