#!/usr/bin/env python3
"""Writes a synthetic agentic session trace (one trace object per line, SPEC §6 shape) for
`ixbench bench replay` capacity runs: SESSIONS sessions of TURNS turns, each turn's context
growing by GROW 64-token blocks over the previous one, with a fan-out of two subagents every
SUBAGENT_EVERY turns. Deterministic (no randomness).

usage: gen_session_trace.py OUT.jsonl [SESSIONS=2000] [TURNS=50] [GROW=2] [SUBAGENT_EVERY=10]
"""
import json
import sys

out = sys.argv[1]
sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
turns = int(sys.argv[3]) if len(sys.argv) > 3 else 50
grow = int(sys.argv[4]) if len(sys.argv) > 4 else 2
every = int(sys.argv[5]) if len(sys.argv) > 5 else 10
bs = 64

with open(out, "w") as f:
    for s in range(sessions):
        requests, ids, t = [], [], 0.0
        for k in range(turns):
            ids = ids + [s * 1_000_000 + k * 100 + j for j in range(grow)]
            requests.append({"t": t, "type": "n", "in": len(ids) * bs, "out": 64, "hash_ids": ids,
                             "api_time": 0.5, "think_time": 1.0})
            t += 2.0
            if every and k % every == every - 1 and k + 1 < turns:
                for a in range(2):
                    sub = [{"t": t, "type": "n", "in": 2 * bs, "out": 32,
                            "hash_ids": [s * 1_000_000 + 900_000 + k * 10 + a, 7]}]
                    requests.append({"t": t, "type": "subagent", "agent_id": f"sa{k}-{a}", "requests": sub})
                t += 1.0
        f.write(json.dumps({"id": f"synthetic-{s}", "block_size": bs, "requests": requests}) + "\n")
