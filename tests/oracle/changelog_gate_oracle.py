#!/usr/bin/env python3
"""Runs InferenceX's own changelog gate on every case of tests/data/changelog and compares its
verdict (pass / fail) with ixbench's expected.txt.

    IXBENCH_CHANGELOG_CASES_DUMP=/tmp/cases build/release/tests/ixbench_changelog_tests
    python3 tests/oracle/changelog_gate_oracle.py --inferencex /path/to/InferenceX --cases /tmp/cases

Needs PyYAML and pydantic (InferenceX's ChangelogEntry). The gate's functions are imported from
the checkout's utils/validate_perf_changelog.py; ixbench's messages differ from its (ixbench
reports every problem, with positions), so only the verdicts are compared.
"""

import argparse
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]


def read_args(case: Path) -> int | None:
    args = (SOURCE / "tests/data/changelog" / case.name / "args")
    words = args.read_text().split() if args.exists() else []
    return int(words[words.index("--pr") + 1]) if "--pr" in words else None


def inferencex_verdict(gate, case: Path, pr_number: int | None) -> str:
    base_raw = (case / "base.yaml").read_bytes()
    head_raw = (case / "head.yaml").read_bytes()
    try:
        base = gate.parse_changelog(base_raw, "base")
        head = gate.parse_changelog(head_raw, "head")
        additions, corrections = gate.compare_entries(base, head, pr_number)
        gate.validate_raw_change(base_raw, head_raw, len(additions), corrections)
    except gate.ChangelogValidationError as error:
        return f"fail: {error}"
    return "ok"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--inferencex", required=True, type=Path)
    parser.add_argument("--cases", required=True, type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(args.inferencex / "utils"))
    import validate_perf_changelog as gate  # noqa: E402

    disagreements = 0
    for case in sorted(path for path in args.cases.iterdir() if path.is_dir()):
        expected = (SOURCE / "tests/data/changelog" / case.name / "expected.txt").read_text()
        ours = "ok" if expected.splitlines()[-1].startswith("ok:") else "fail"
        theirs = inferencex_verdict(gate, case, read_args(case))
        agree = theirs.split(":")[0] == ours
        disagreements += not agree
        print(f"{'same' if agree else 'DIFF'} {case.name}: ixbench {ours}; InferenceX {theirs}")
    print(f"{disagreements} disagreement(s)")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
