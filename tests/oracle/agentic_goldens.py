#!/usr/bin/env python3
"""Generates tests/data/agentic_aggregate/: small aiperf artifact folders and, for each, the
record InferenceX's own aggregation writes for it (expected.json), which
tests/unit/metrics/agentic_aggregate_test.cc holds ixbench's output to byte for byte.

Each case is <case>/result/ (RESULT_DIR: aiperf_artifacts/, server logs), <case>/env.json (the
variables) and, when the case has trace metadata, <case>/hf/ (HF_HUB_CACHE).

Usage: python3 tests/oracle/agentic_goldens.py /path/to/InferenceX   (from the project root)
"""
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

OUT = Path("tests/data/agentic_aggregate")

BASE_ENV = {
    "MODEL": "test-model", "MODEL_PREFIX": "test/prefix", "FRAMEWORK": "vllm", "PRECISION": "fp4",
    "TP": "4", "PP_SIZE": "1", "DCP_SIZE": "1", "PCP_SIZE": "1", "EP_SIZE": "1", "DP_ATTENTION": "false",
    "CONC": "8", "KV_OFFLOADING": "none", "RUNNER_TYPE": "b200-x4", "IMAGE": "test/image:0.1",
    "RECIPE_FINGERPRINT": "b" * 64, "SPEC_DECODING": "none", "DISAGG": "false", "IS_MULTINODE": "false",
}


def record(conv, turn, isl, osl, ttft, e2e, itl, start_ns, end_ns, phase="profiling"):
    return {
        "metadata": {"conversation_id": conv, "turn_index": turn, "request_start_ns": start_ns,
                     "request_end_ns": end_ns, "benchmark_phase": phase},
        "metrics": {
            "input_sequence_length": {"value": isl, "unit": "tokens"},
            "output_sequence_length": {"value": osl, "unit": "tokens"},
            "time_to_first_token": {"value": ttft, "unit": "ms"},
            "request_latency": {"value": e2e, "unit": "ms"},
            "inter_token_latency": {"value": itl, "unit": "ms"},
        },
        "error": None,
    }


def basic_records():  # the script's own test fixture
    return [
        record("trace-A", 0, 100, 50, 30.0, 1000.0, 18.0, 1_000_000_000, 2_000_000_000),
        record("trace-A", 1, 180, 60, 35.0, 1100.0, 18.5, 2_500_000_000, 3_700_000_000),
        record("trace-B", 0, 120, 40, 32.0, 900.0, 17.5, 1_500_000_000, 2_300_000_000),
        record("trace-B", 1, 200, 70, 40.0, 1400.0, 19.0, 3_000_000_000, 4_500_000_000),
        record("trace-A", 2, 240, 55, 33.0, 1050.0, 18.2, 4_000_000_000, 5_100_000_000),
    ]


def mixed_records():
    rng = random.Random(7)
    rows = []
    for i in range(40):
        start = 1_767_225_600_000_000_000 + i * 237_000_000 + rng.randint(0, 10**8)
        rows.append(record(f"trace-{i % 4}" + ("::sa:helper" if i % 7 == 3 else ""), i // 4, rng.randint(1, 5000),
                           rng.randint(1, 900), rng.uniform(1, 900), rng.uniform(100, 9000), rng.uniform(1, 50),
                           start, start + rng.randint(10**8, 5 * 10**9)))
        if i % 5 == 2:
            rows[-1]["metrics"]["full_response_inter_token_latency"] = {"value": rng.uniform(1, 9), "unit": "ms"}
    rows[1]["metadata"]["benchmark_phase"] = "warmup"
    rows[2]["error"] = {"type": "", "code": 503, "message": "x"}
    rows[3]["error"] = {"message": "ReadTimeout: the server did not answer\nsecond line"}
    rows[4]["error"] = "Connection refused"
    rows[5]["error"] = {"error": "   \u00fcn\u00efcode failure: boom"}
    rows[6]["metadata"]["benchmark_phase"] = "warmup"
    rows[6]["error"] = {"type": "RequestCancellationError"}
    rows[7]["error"] = {}  # falsy: kept
    rows[8]["metrics"]["output_sequence_length"] = {"value": "12", "unit": "tokens"}
    rows[9]["metrics"]["input_sequence_length"] = 12.7
    rows[10]["metrics"]["time_to_first_token"] = {"value": None}
    rows[11]["metrics"]["request_latency"] = {"value": "nan"}
    rows[12]["metadata"]["request_start_ns"] = 0
    rows[13]["metrics"]["inter_token_latency"] = {"value": True}
    del rows[14]["metadata"]["benchmark_phase"]
    return rows


def counter(*values, labels=None):
    return {"type": "counter", "series": [
        {"stats": {"total": v}, **({"labels": labels[i]} if labels else {})} for i, v in enumerate(values)]}


def gauge(stat, *values):
    return {"type": "gauge", "series": [{"stats": {stat: v}} for v in values]}


CASES = {
    "basic": {"aggregate": {"request_count": 5, "metadata": {"dataset": {
        "source_type": "public_dataset", "loader": "semianalysis_cc_traces_weka_with_subagents",
        "num_dataset_entries": 393}}}},
    "vllm": {
        "env": {"KV_OFFLOADING": "dram", "KV_OFFLOAD_BACKEND": "lmcache", "TOTAL_CPU_DRAM_GB": "2400",
                "KV_OFFLOAD_BACKEND_METADATA": json.dumps({"name": "lmcache", "version": "0.5.1"}),
                "ROUTER_METADATA": json.dumps({"name": "vllm-router", "version": "0.1.14"}),
                "KV_P2P_TRANSFER": "mooncake", "TP": "4", "PP_SIZE": "2", "PCP_SIZE": "2"},
        "server": {"metrics": {
            "vllm:prefix_cache_hits": counter(12345.678901, 100.0),
            "vllm:prefix_cache_queries": counter(37037.036703, 300.0),
            "vllm:prompt_tokens": counter(12345.0), "vllm:generation_tokens": counter(6789.5),
            "vllm:kv_cache_usage_perc": {"type": "gauge", "series": [
                {"endpoint_url": "http://a:8000/metrics", "labels": {"engine": "0"}, "stats": {"max": 0.123456789}},
                {"endpoint_url": "http://b:8000/metrics", "labels": {"engine": "1"}, "stats": {"avg": 0.5},
                 "timeslices": [{"start_ns": 1, "avg": 0.4}]}]},
            "vllm:external_prefix_cache_hits": counter(10.0), "vllm:external_prefix_cache_queries": counter(30.0),
            "vllm:kv_offload_bytes_gpu_to_cpu": counter(1e7), "vllm:kv_offload_time_gpu_to_cpu": counter(3.0)}},
        "log": "INFO (EngineCore_DP0 pid=100) GPU KV cache size: 5,000,000 tokens\n"
               "INFO (EngineCore_DP0 pid=100) GPU KV cache size: 5,000,000 tokens\n"
               "INFO (EngineCore_DP1 pid=101) GPU KV cache size: 6,500,000 tokens\n",
    },
    "sglang": {
        "env": {"FRAMEWORK": "sglang"},
        "server": {"metrics": {
            "sglang:prompt_tokens": counter(1000.0), "sglang:generation_tokens": counter(200.0),
            "sglang:cached_tokens": counter(400.0, 100.0, labels=[{"cache_source": "device"}, {"cache_source": "host"}]),
            "sglang:token_usage": gauge("max", 0.75), "sglang:hicache_host_used_tokens": gauge("max", 300.0),
            "sglang:hicache_host_total_tokens": gauge("max", 1000.0),
            "sglang:realtime_tokens": counter(500.0, 7.0, labels=[{"mode": "prefill_compute"}, {"mode": "decode"}]),
            "sglang:max_total_num_tokens": gauge("max", 1000.0, 1200.0)}},
        "watch": {"watchtower-a_prefill_w0.out":
                  "[2026] server_args=ServerArgs(tp_size=4, dp_size=4)\n"
                  "[2026-07-08 16:49:59 DP0 TP0 EP0] max_total_num_tokens=4602880, chunked_prefill_size=4096\n"},
    },
    "dynamo_multinode": {
        "env": {"FRAMEWORK": "dynamo-vllm", "IS_MULTINODE": "true", "DISAGG": "true", "PREFILL_NUM_WORKERS": "1",
                "PREFILL_TP": "8", "PREFILL_EP": "8", "PREFILL_HARDWARE": "b200", "DECODE_NUM_WORKERS": "2",
                "DECODE_TP": "4", "DECODE_PP_SIZE": "2", "DECODE_DP_ATTN": "true", "DECODE_HARDWARE": "h100"},
        "server": {"metrics": {
            "dynamo_frontend_input_sequence_tokens": counter(900.0), "dynamo_frontend_output_tokens": counter(300.0),
            "dynamo_frontend_cached_tokens": counter(450.0),
            "dynamo_component_router_shared_cache_hit_rate": gauge("avg", 0.55, 0.45),
            "dynamo_component_gpu_cache_usage_percent": gauge("max", 75.0),
            "vllm:prefix_cache_hits": {"type": "counter", "series": [
                {"labels": {"dynamo_component": "prefill", "worker_id": "p0"}, "stats": {"total": 400.0}},
                {"endpoint_url": "http://d0/metrics", "labels": {"dynamo_component": "backend", "dp_rank": 0},
                 "stats": {"total": 100.0}}]},
            "vllm:prefix_cache_queries": {"type": "counter", "series": [
                {"labels": {"dynamo_component": "prefill", "worker_id": "p0"}, "stats": {"total": 800.0}}]},
            "vllm:prompt_tokens_by_source": counter(300.0, 150.0, 450.0, labels=[
                {"source": "local_cache_hit"}, {"source": "external_kv_transfer"}, {"source": "local_compute"}])}},
    },
    "atom": {
        "env": {"FRAMEWORK": "atom"},
        "server": {"metrics": {
            "atom:prompt_tokens_total": counter(1000.5), "atom_generation_tokens": counter(2.5),
            "atom:prefix_cache_cached_tokens": counter(300.0), "atom:prefix_cache_full_tokens": counter(900.0),
            "atom_lmcache_loaded_tokens": counter(90.0), "atom:kv_cache_usage_ratio": gauge("avg", 42.0)}},
    },
    "mixed": {
        "records": mixed_records(),
        "aggregate": {"theoretical_prefix_cache_hit": {"unit": "%", "avg": 25.0},
                      "metadata": {"dataset": {"a": 1.5, "b": [1.0, 2.25], "n": "x"}}},
        "hf": [{"id": f"trace-{k}", "requests": [{"type": "n", "hash_ids": [1], "out": 7 * j + k}
                                                 for j in range(12)] + [{"type": "subagent", "requests": []}]}
               for k in range(4)],
    },
    "run_subdir": {"subdir": "run_0", "aggregate": {"request_count": 5}},
    "zero_completed": {"records": [dict(r, metadata=dict(r["metadata"], benchmark_phase="warmup"))
                                   for r in basic_records()[:2]],
                       "aggregate": {"request_count": 0}},
}


def write_case(name, case, checkout):
    root = OUT / name
    shutil.rmtree(root, ignore_errors=True)
    artifacts = root / "result" / "aiperf_artifacts"
    if case.get("subdir"):
        artifacts = artifacts / case["subdir"]
    artifacts.mkdir(parents=True)
    with open(artifacts / "profile_export.jsonl", "w") as f:
        for row in case.get("records", basic_records()):
            f.write(json.dumps(row) + "\n")
    json.dump(case.get("aggregate", {"request_count": 5}), open(artifacts / "profile_export_aiperf.json", "w"))
    if "server" in case:
        json.dump(case["server"], open(artifacts / "server_metrics_export.json", "w"))
    if "log" in case:
        (root / "result" / "server.log").write_text(case["log"])
    for file_name, text in case.get("watch", {}).items():
        (root / "result" / file_name).write_text(text)
    if "hf" in case:
        snapshot = root / "hf" / "datasets--semianalysisai--cc-traces-weka-062126" / "snapshots" / "abc"
        snapshot.mkdir(parents=True)
        with open(snapshot / "traces.jsonl", "w") as f:
            for trace in case["hf"]:
                f.write(json.dumps(trace) + "\n")
            f.write("not json: skipped\n")
    env = dict(BASE_ENV, **case.get("env", {}))
    json.dump(env, open(root / "env.json", "w"), indent=2)
    run_env = dict(os.environ, **env, RESULT_DIR=str((root / "result").resolve()), RESULT_FILENAME="expected",
                   AGENTIC_OUTPUT_DIR=str(root.resolve()), HF_HUB_CACHE=str((root / "hf").resolve()))
    subprocess.run([sys.executable, "-m", "utils.agentic.aggregation.process_agentic_result"], cwd=checkout,
                   env=run_env, check=True, stdout=subprocess.DEVNULL)


def main():
    checkout = sys.argv[1]
    for name, case in CASES.items():
        write_case(name, case, checkout)


if __name__ == "__main__":
    main()
