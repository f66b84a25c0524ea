#!/usr/bin/env python3
"""A stand-in for your application: answers 200 to every POST on
127.0.0.1:3000 and prints what hookgate forwarded. Set APP_STATUS=500 to
watch hookgate release the nonce so the sender's retry goes through."""
import http.server
import os

STATUS = int(os.environ.get("APP_STATUS", "200"))


class App(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        print(
            f"app: {self.command} {self.path} "
            f"event_id={self.headers.get('X-Verified-Event-Id')} "
            f"type={self.headers.get('X-Verified-Event-Type')} "
            f"source={self.headers.get('X-Verified-Source')} "
            f"body={body[:80]!r} -> {STATUS}",
            flush=True,
        )
        self.send_response(STATUS)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"received":true}\n')

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", 3000), App).serve_forever()
