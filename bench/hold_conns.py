#!/usr/bin/env python3
"""Opens N keep-alive connections to a server, sends one small request on each,
keeps them all open and idle, and reports the server's RSS before and after.

    hold_conns.py --port P --count 10000 --hold 3 --measure PID
prints:  conns <TAB> N <TAB> rss_before_kib <TAB> rss_after_kib <TAB> still_open

Hold for less than hookgate's 10 s header read timeout, which also closes
keep-alive connections that stay idle that long.
"""

import argparse
import resource
import socket
import sys
import time

REQUEST = b"GET /bench-idle HTTP/1.1\r\nHost: bench\r\n\r\n"


def rss_kib(pid: int) -> int:
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--hold", type=float, default=3.0)
    p.add_argument("--measure", type=int, required=True)
    a = p.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = a.count + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))

    before = rss_kib(a.measure)
    conns = []
    deadline = time.monotonic() + 60
    try:
        # One at a time: connect, ask, read the answer. Only one request is
        # ever in flight, so what stays is the idle connections, not the
        # garbage of a burst.
        for _ in range(a.count):
            if time.monotonic() > deadline:
                break
            s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
            s.sendall(REQUEST)
            s.recv(4096)
            conns.append(s)
        time.sleep(a.hold)
        after = rss_kib(a.measure)
        # Still open? A closed connection reads as end of file at once.
        alive = 0
        for s in conns:
            s.setblocking(False)
            try:
                alive += 1 if s.recv(1) else 0
            except BlockingIOError:
                alive += 1
    finally:
        for s in conns:
            s.close()
    print("conns\t%d\t%d\t%d\t%d" % (a.count, before, after, alive))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
