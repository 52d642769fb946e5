#!/usr/bin/env python3
"""Runs InferenceX's own changelog planner (utils/process_changelog.py) beside `ixbench plan
--format matrix` on changes rebuilt from the real perf-changelog.yaml, and compares the bytes.

    python3 tests/oracle/plan_oracle.py --ixbench build/release/src/cli/ixbench \
        --inferencex /path/to/InferenceX --data ../shared/data/inferencex [--sample 40]

Each case is a git repository: the checkout's utils/, the data's master configs and runners.yaml,
and a base commit with the real changelog; the head commit appends entries taken from the real
file's history (one at a time, then a batch of many, then with --trim-conc / --all-evals /
--evals-only), and, for append-only, also adds a concurrency to one config. Cases where the
planner refuses the change (a key whose config was since removed) must be refused by both.
Needs PyYAML and pydantic.
"""

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIGS = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"]


def entry_blocks(text: str) -> list[str]:
    starts = [m.start() for m in re.finditer(r"(?m)^- config-keys:", text)]
    blocks = []
    for begin, end in zip(starts, starts[1:] + [len(text)]):
        lines = [line.rstrip() for line in text[begin:end].split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        blocks.append("\n".join(lines) + "\n")
    return blocks


def resolvable(block: str, keys: set[str]) -> bool:
    import yaml
    entry = yaml.safe_load(block)[0]
    for pattern in entry["config-keys"]:
        regex = re.compile(re.escape(pattern).replace(r"\*", ".*"))
        if not any(regex.fullmatch(key) for key in keys):
            return False
    return True


def with_link(block: str) -> str:
    return re.sub(r"(?m)^  pr-link:.*$", "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/9999", block)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(root: Path, args, base_text: str, head_text: str, edit=None) -> Path:
    repo = Path(tempfile.mkdtemp(dir=root))
    shutil.copytree(Path(args.inferencex) / "utils", repo / "utils")
    (repo / "configs").mkdir()
    for name in ("amd-master.yaml", "nvidia-master.yaml", "runners.yaml"):
        shutil.copy(Path(args.data) / name, repo / "configs" / name)
    (repo / "perf-changelog.yaml").write_text(base_text)
    git(repo, "init", "-q")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    git(repo, "tag", "base")
    (repo / "perf-changelog.yaml").write_text(head_text)
    if edit:
        edit(repo)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "head")
    git(repo, "tag", "head")
    return repo


TIMES = {"inferencex": 0.0, "ixbench": 0.0}


def run_both(repo: Path, args, flags: list[str]) -> tuple[str, str]:
    started = time.perf_counter()
    py = subprocess.run(
        [sys.executable, "utils/process_changelog.py", "--base-ref", "base", "--head-ref", "head",
         "--changelog-file", "perf-changelog.yaml", *flags],
        cwd=repo, capture_output=True, text=True)
    TIMES["inferencex"] += time.perf_counter() - started
    started = time.perf_counter()
    ix = subprocess.run(
        [args.ixbench, "plan", "--base", "base", "--head", "head", "--config-files", *CONFIGS,
         "--runner-config", "configs/runners.yaml", "--format", "matrix", *flags],
        cwd=repo, capture_output=True, text=True)
    TIMES["ixbench"] += time.perf_counter() - started
    py_out = py.stdout if py.returncode == 0 else f"refused ({py.stderr.strip().splitlines()[-1:]})"
    ix_out = ix.stdout if ix.returncode == 0 else f"refused ({ix.stderr.strip()[:300]})"
    return py_out, ix_out


def compare(name: str, py_out: str, ix_out: str) -> bool:
    same = py_out == ix_out or (py_out.startswith("refused") and ix_out.startswith("refused"))
    rows = py_out.count('"exp-name"')
    print(f"{'ok  ' if same else 'DIFF'} {name}: {rows} rows" + ("" if not py_out.startswith("refused") else " (both refuse)"))
    if not same:
        print("  inferencex:", py_out[:400])
        print("  ixbench:   ", ix_out[:400])
    return same


def add_conc(repo: Path) -> None:
    """Adds a concurrency to the first conc-list of dsr1-fp8-h200-sglang (an append-only change)."""
    path = repo / "configs/nvidia-master.yaml"
    text = path.read_text()
    at = text.index("\ndsr1-fp8-h200-sglang:")
    head, tail = text[:at], text[at:]
    tail = re.sub(r"conc-end: (\d+)", lambda m: f"conc-end: {int(m.group(1)) * 2}", tail, count=1)
    path.write_text(head + tail)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ixbench", required=True)
    parser.add_argument("--inferencex", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--sample", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.ixbench = str(Path(args.ixbench).resolve())

    real = (Path(args.data) / "perf-changelog.yaml").read_text()
    blocks = entry_blocks(real)
    base = real if real.endswith("\n") and not real.endswith("\n\n") else real.rstrip("\n") + "\n"
    rng = random.Random(args.seed)
    chosen = sorted(rng.sample(range(len(blocks)), min(args.sample, len(blocks))))
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for index in chosen:
            head = base + "\n" + with_link(blocks[index])
            repo = make_repo(root, args, base, head)
            ok &= compare(f"entry {index + 1}", *run_both(repo, args, []))
            shutil.rmtree(repo)
        import yaml
        keys = set()
        for name in ("amd-master.yaml", "nvidia-master.yaml"):
            keys |= set(yaml.safe_load((Path(args.data) / name).read_text()))
        batch = [with_link(b) for b in blocks[-150:] if resolvable(b, keys) and "append-only: true" not in b]
        repo = make_repo(root, args, base, base + "\n" + "\n".join(batch))
        for flags in ([], ["--trim-conc"], ["--all-evals"], ["--evals-only"]):
            ok &= compare(f"{len(batch)} recent entries at once {' '.join(flags)}", *run_both(repo, args, flags))
        shutil.rmtree(repo)
        append_only = ("- config-keys:\n    - dsr1-fp8-h200-sglang\n  scenario-type:\n    - fixed-seq-len\n"
                       "  description:\n    - \"More concurrency\"\n  pr-link: https://github.com/SemiAnalysisAI/"
                       "InferenceX/pull/9999\n  append-only: true\n")
        repo = make_repo(root, args, base, base + "\n" + append_only, add_conc)
        ok &= compare("append-only: one config gains concurrencies", *run_both(repo, args, []))
        shutil.rmtree(repo)
    print(f"time: process_changelog.py {TIMES['inferencex']:.1f} s, ixbench plan {TIMES['ixbench']:.2f} s "
          f"({TIMES['inferencex'] / max(TIMES['ixbench'], 1e-9):.0f}x)")
    print("all agree" if ok else "DISAGREEMENT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
