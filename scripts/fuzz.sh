#!/usr/bin/env bash
# Fuzzes the parsers of untrusted input with cargo-fuzz (libFuzzer), one target at a time, and
# prints a table: target, executions, seconds, result. The targets are in fuzz/ (their bodies in
# fuzz/src/targets.rs); docs/reliability.md ("Fuzzed parsers") says what each feeds.
#
#   scripts/fuzz.sh [--runs N] [--max-time SECONDS] [TARGET...]
#
# Defaults: 1,000,000 runs per target, every target. --max-time (default 3600) only bounds a
# target that is far slower than expected; a target stopped by it before N runs is reported
# `short`, not `ok`. Each run starts from the committed seeds (fuzz/seeds/TARGET) and grows
# fuzz/corpus/TARGET (not committed); crash inputs go to fuzz/artifacts/TARGET, the libFuzzer
# output to fuzz/logs/TARGET.log. Exit status: 0 when every target reached N runs without a
# crash, 1 otherwise, 2 for bad options.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=1000000
max_time=3600
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
    --max-time) max_time="${2:?--max-time needs seconds}"; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
    esac
done
case "$runs$max_time" in *[!0-9]*) echo "fuzz.sh: --runs and --max-time take numbers" >&2; exit 2 ;; esac

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is not installed; installing it: cargo install cargo-fuzz --locked"
    cargo install cargo-fuzz --locked
fi

mapfile -t all < <(cargo fuzz list --fuzz-dir fuzz)
if [ ${#targets[@]} -eq 0 ]; then
    targets=("${all[@]}")
fi
for t in "${targets[@]}"; do
    if ! printf '%s\n' "${all[@]}" | grep -qx -- "$t"; then
        echo "fuzz.sh: no fuzz target $t (targets: ${all[*]})" >&2
        exit 2
    fi
done

echo "fuzz.sh: building the fuzz targets (cargo fuzz build)"
cargo fuzz build --fuzz-dir fuzz

# Intel's perfmon files (../shared/perfmon, as the events tests read them) are not committed as
# seeds (their license): excerpts of them join the run-time corpus when they are there.
perfmon_excerpts() {
    local shared=../shared/perfmon
    if [ ! -f "$shared/mapfile.csv" ] || ! command -v python3 >/dev/null; then
        echo "fuzz.sh: no $shared (or no python3): perfmon targets start from the committed seeds only"
        return
    fi
    mkdir -p fuzz/corpus/perfmon_json fuzz/corpus/perfmon_mapfile
    python3 - "$shared" <<'PY'
import glob, json, os, sys
shared = sys.argv[1]
for path in sorted(glob.glob(os.path.join(shared, "*", "events", "*.json"))):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["Events"] if isinstance(doc, dict) else doc
    name = os.path.basename(path)[:-5]
    # A few events at a time, spread over the file, so each excerpt stays a few KiB.
    for i in range(0, len(events), max(4, len(events) // 8)):
        out = {"Header": doc.get("Header", {}) if isinstance(doc, dict) else {}, "Events": events[i:i + 4]}
        with open(f"fuzz/corpus/perfmon_json/perfmon-{name}-{i}.json", "w") as f:
            json.dump(out, f, indent=1)
with open(os.path.join(shared, "mapfile.csv"), encoding="utf-8") as f:
    lines = f.read().splitlines(keepends=True)
for i in range(1, len(lines), 8):
    with open(f"fuzz/corpus/perfmon_mapfile/perfmon-mapfile-{i}.csv", "w") as f:
        f.write(lines[0] + "".join(lines[i:i + 8]))
PY
}

mkdir -p fuzz/logs
for t in "${targets[@]}"; do
    case "$t" in perfmon_json | perfmon_mapfile) perfmon_excerpts; break ;; esac
done
rows=()
failed=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    log="fuzz/logs/$t.log"
    echo "fuzz.sh: $t: $runs runs (log: $log)"
    start=$(date +%s)
    status=0
    # -rss_limit_mb: a parser that allocates from a length in its input shows up as a crash
    # (out-of-memory) instead of swapping a shared machine. -timeout: one input taking seconds
    # is a bug too (a parser's running time is bounded by its input).
    cargo fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -runs="$runs" -max_total_time="$max_time" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 >"$log" 2>&1 || status=$?
    seconds=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    if [ -z "$execs" ]; then
        # A crash ends the run before the final stats: the last status line's count.
        execs=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]].*/\1/p' "$log" | tail -1)
    fi
    execs=${execs:-0}
    artifact=$(sed -n 's/.*Test unit written to \([^ ]*\).*/\1/p' "$log" | tail -1)
    if [ "$status" -ne 0 ] || [ -n "$artifact" ]; then
        result="crash ${artifact:-(no artifact; see $log)}"
        failed=1
    elif [ "$execs" -lt "$runs" ]; then
        result="short (stopped by --max-time $max_time)"
        failed=1
    else
        result="ok"
    fi
    rows+=("$(printf '%-18s %12s %8s  %s' "$t" "$execs" "$seconds" "$result")")
done

echo
printf '%-18s %12s %8s  %s\n' target executions seconds result
printf '%s\n' "${rows[@]}"
exit "$failed"
