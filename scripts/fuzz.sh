#!/bin/sh
# Runs every fuzz target of the module for a bounded time each
# (FUZZTIME: iterations like 50000x, or a duration). A crash fails the run; `go test` then saves the
# input under the package's testdata/fuzz/, where it becomes a regression
# test of the normal test run.
set -eu
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-50000x}"
GO="${GO:-go}"
status=0
for file in $(grep -l '^func Fuzz' $(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go')); do
	dir=$(dirname "$file")
	for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
		printf '%-45s %s ... ' "$dir" "$target"
		if out=$("$GO" test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime=10s "./$dir" 2>&1); then
			echo ok
		else
			echo FAIL
			echo "$out" | tail -30
			status=1
		fi
	done
done
exit $status
