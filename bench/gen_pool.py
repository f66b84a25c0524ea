#!/usr/bin/env python3
"""Writes a pool of distinct, signed webhook requests for the load generator.

Every request is a complete HTTP/1.1 request (headers and a JSON body of
exactly --body-bytes bytes) with its own event id and its own signature, and
every record has the same length so bench/pool.lua can read them back with
fixed-size reads.

    gen_pool.py --scheme github --secret S --path /webhooks/github \
                --count 300000 --prefix r1 --out pool.bin

Schemes: github (no signed timestamp: the pool never goes stale) and stripe
(signed `t`, so the hookgate source needs a tolerance longer than the run).
"""

import argparse
import hashlib
import hmac
import sys
import time


def body_for(event_id: str, kind: str, size: int) -> bytes:
    head = '{"id":"%s","type":"%s","data":{"object":{"note":"' % (event_id, kind)
    tail = '"}}}'
    pad = size - len(head) - len(tail)
    if pad < 0:
        sys.exit("body size too small for the event id")
    # Distinct filler per event, so no two bodies share more than their shape.
    seed = hashlib.sha256(event_id.encode()).hexdigest()
    filler = (seed * (pad // len(seed) + 1))[:pad]
    return (head + filler + tail).encode()


def request(scheme: str, secret: bytes, path: str, event_id: str, body: bytes, ts: int) -> bytes:
    if scheme == "github":
        sig = hmac.new(secret, body, hashlib.sha256).hexdigest()
        headers = [
            ("X-GitHub-Event", "push"),
            ("X-GitHub-Delivery", event_id),
            ("X-Hub-Signature-256", "sha256=" + sig),
        ]
    elif scheme == "stripe":
        signed = str(ts).encode() + b"." + body
        sig = hmac.new(secret, signed, hashlib.sha256).hexdigest()
        headers = [("Stripe-Signature", "t=%d,v1=%s" % (ts, sig))]
    else:
        sys.exit("unknown scheme " + scheme)
    lines = ["POST %s HTTP/1.1" % path, "Host: bench", "Content-Type: application/json"]
    lines += ["%s: %s" % h for h in headers]
    lines.append("Content-Length: %d" % len(body))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scheme", default="github")
    p.add_argument("--secret", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--prefix", default="evt")
    p.add_argument("--body-bytes", type=int, default=1024)
    p.add_argument("--out", required=True)
    a = p.parse_args()

    secret = a.secret.encode()
    ts = int(time.time())
    width = len(str(a.count))
    kind = "push" if a.scheme == "github" else "invoice.paid"
    reclen = None
    with open(a.out, "wb") as out:
        for i in range(a.count):
            event_id = "%s-%0*d" % (a.prefix, width, i)
            rec = request(a.scheme, secret, a.path, event_id, body_for(event_id, kind, a.body_bytes), ts)
            if reclen is None:
                reclen = len(rec)
            elif len(rec) != reclen:
                sys.exit("record %d has length %d, not %d" % (i, len(rec), reclen))
            out.write(rec)
    print(reclen)


if __name__ == "__main__":
    main()
