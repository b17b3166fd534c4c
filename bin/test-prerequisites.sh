#!/bin/sh
# `npm test`'s first step (package.json "pretest"): the programs the suite runs that are
# neither npm packages nor the services (Postgres, Redis). A fresh machine has none of them.
#   chromium    /usr/bin/chromium      the console's browser tests (playwright-core drives it)
#   pgbouncer   /usr/sbin/pgbouncer    test/pgbouncer.test.ts starts one in front of Postgres
#   prometheus  promtool               checking the alert rules (the same package's /usr/bin/prometheus
#                                      is the server test/prometheus-alerts.test.ts starts)
# (And Node 22, which it cannot install for the npm running it: it says how, in one line.)
# Run as root with apt-get at hand, it installs the missing Debian packages; otherwise it stops
# at once with one line naming what is missing and the command that installs it, so no test
# fails later, one by one, over a missing program (and none is skipped for it).
# CHROMIUM_PATH and PGBOUNCER_PATH, as the tests read them, point at other copies (and
# PROMETHEUS_PATH at another server for test/prometheus-alerts.test.ts).
set -u
cd "$(dirname "$0")/.." || exit 1

# Node first: the tests run the CLI with this node, and the CLI refuses one older than 22.
node_problem="$(node --input-type=module -e 'import { nodeVersionProblem } from "./bin/node-version.js"; console.log(nodeVersionProblem(process.versions.node) || "")' 2>&1)"
if [ -n "$node_problem" ]; then
  echo "npm test: $node_problem" >&2
  exit 1
fi

need() { # need <debian package> <path or command name>
  case "$2" in
    /*) [ -x "$2" ] && return 0 ;;
    *) command -v "$2" >/dev/null 2>&1 && return 0 ;;
  esac
  missing="$missing $1"
  tools="$tools, $2"
}
check() {
  missing=""
  tools=""
  need chromium "${CHROMIUM_PATH:-/usr/bin/chromium}"
  need pgbouncer "${PGBOUNCER_PATH:-/usr/sbin/pgbouncer}"
  need prometheus promtool
  missing="${missing# }"
  tools="${tools#, }"
}

check
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "npm test needs $tools, not found: install Debian's $missing with \`sudo apt-get update && sudo apt-get install -y $missing\` (bin/test-prerequisites.sh says why each)" >&2
  exit 1
fi

echo "npm test: installing Debian's $missing (apt-get, as root) for the tests" >&2
log="$(mktemp)"
# shellcheck disable=SC2086 # the list is words on purpose
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >"$log" 2>&1; then
  echo "npm test: \`apt-get install -y $missing\` failed: $(grep -E '^(E|Err):' "$log" | tail -n 1) (full output: $log)" >&2
  exit 1
fi
rm -f "$log"
wanted="$missing"
check
if [ -n "$missing" ]; then
  echo "npm test: installed $wanted, yet $missing still missing (is /usr/bin or /usr/sbin off PATH, or CHROMIUM_PATH/PGBOUNCER_PATH wrong?)" >&2
  exit 1
fi
