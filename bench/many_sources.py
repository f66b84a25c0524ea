#!/usr/bin/env python3
"""Writes a config of N Stripe sources on distinct paths (memory store).

usage: many_sources.py N OUT.toml [UPSTREAM_PORT PUBLIC_PORT ADMIN_PORT]
Source i is named s{i} at /tenants/t{i}/stripe with secret whsec_bench_{i}.
"""
import sys

n = int(sys.argv[1])
out = sys.argv[2]
upstream, public, admin = (sys.argv[3:6] + ["3000", "8080", "9090"][len(sys.argv[3:6]):])
with open(out, "w") as f:
    f.write(f'[server]\nlisten = "127.0.0.1:{public}"\nupstream = "http://127.0.0.1:{upstream}"\n')
    f.write(f'[admin]\nlisten = "127.0.0.1:{admin}"\n[store]\nkind = "memory"\n')
    for i in range(n):
        f.write(
            f'[[source]]\nname = "s{i}"\npath = "/tenants/t{i}/stripe"\nscheme = "stripe"\n'
            f'secrets = ["whsec_bench_{i}"]\ntolerance = "5m"\n'
        )
