#!/usr/bin/env bash
# `ixbench review` on a change the size reviewers see every day, in a repository the size of
# InferenceX: a clone of an InferenceX checkout (1,280 files), one commit that edits one shell
# recipe (a dead knob) and appends one perf-changelog entry. Times `review --base HEAD~1 --head
# HEAD` (git refs: ls-tree, diff, the files the checks read, whole-repository word searches) and,
# side by side in the same run, `git diff --stat` of the same two commits as the floor of any
# tool that looks at the change. Prints the median of RUNS (default 11) for both and the ratio.
#
# Usage: bench/review.sh [IXBENCH [INFERENCEX_GIT_DIR [RUNS]]]
#   e.g. bench/review.sh build/release/src/cli/ixbench /path/to/InferenceX
set -euo pipefail
bin=$(realpath "${1:-build/release/src/cli/ixbench}")
source_repo=${2:?give an InferenceX checkout or git directory}
runs=${3:-11}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$source_repo" "$work/repo"
cd "$work/repo"
echo "files: $(git ls-files | wc -l)"
recipe=$(git ls-files 'benchmarks/single_node/fixed_seq_len/*.sh' | grep -v /deprecated/ | sed -n 1p)
echo "recipe: $recipe"
echo 'export AIPERF_BENCHMARK_GRACE_PERIOD=30' >> "$recipe"
printf '\n- config-keys:\n    - dsr1-fp8-h200-sglang\n  description:\n    - "Longer drain"\n  pr-link: XXX\n' \
  >> perf-changelog.yaml
git -c user.name=b -c user.email=b@b commit -qam "one recipe, one entry"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_runs() {
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s%N)
    "$@" > /dev/null 2>&1 || true
    end=$(date +%s%N)
    echo $(((end - start) / 1000))
  done | median
}
review_us=$(time_runs "$bin" review --base HEAD~1 --head HEAD --pr 1)
diff_us=$(time_runs git diff --stat HEAD~1 HEAD)
"$bin" review --base HEAD~1 --head HEAD --pr 1 | tail -8 || true
echo "review: $(echo "scale=1; $review_us / 1000" | bc) ms median of $runs"
echo "git diff --stat: $(echo "scale=1; $diff_us / 1000" | bc) ms median of $runs"
echo "ratio review / git diff: $(echo "scale=1; $review_us / $diff_us" | bc)"
