#!/usr/bin/env bash
# The whole suite as two pytest processes at once, for a machine with PostgreSQL and Redis
# (`make test` uses it when DATABASE_URL is set, as on CI): the browser tests (tests/e2e)
# beside everything else, each with its own test database, broker database and var folder,
# so neither waits for the other's containers or browser. Extra arguments go to both.
set -u
cd "$(dirname "$0")/.."
PYTEST=.venv/bin/pytest
url="${DATABASE_URL%%\?*}"
query="${DATABASE_URL#"$url"}"
var="${HILBENCH_VAR_DIR:-$(pwd)/var}"
mkdir -p "$var/e2e"
log="$var/e2e/tests.log"
DATABASE_URL="${url}_e2e${query}" \
CELERY_BROKER_URL="${CELERY_BROKER_URL%/*}/1" \
HILBENCH_VAR_DIR="$var/e2e" \
  "$PYTEST" tests/e2e "$@" > "$log" 2>&1 &
e2e_pid=$!
"$PYTEST" --ignore=tests/e2e "$@"
rest=$?
wait "$e2e_pid"
e2e=$?
echo "=================== browser tests (tests/e2e), run beside the rest ==================="
cat "$log"
echo "the rest: exit $rest; browser tests: exit $e2e"
[ "$rest" -eq 0 ] || exit "$rest"
exit "$e2e"
