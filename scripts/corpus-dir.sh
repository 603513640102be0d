#!/usr/bin/env bash
# Prints the folder that holds the public trace corpus on this machine, looked for as the
# tests look for it: $STEPSCOPE_TRACES, a shared/traces folder beside the checkout, then the
# cache that scripts/fetch-traces.sh fills (${XDG_CACHE_HOME:-~/.cache}/stepscope/traces).
# Fails, naming the command to run, when none is there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
for dir in "${STEPSCOPE_TRACES:-}" "$root/../shared/traces" "${XDG_CACHE_HOME:-$HOME/.cache}/stepscope/traces"; do
  if [ -n "$dir" ] && [ -d "$dir" ]; then
    (cd "$dir" && pwd)
    exit 0
  fi
done
echo "error: the trace corpus is not on this machine; run: bash scripts/fetch-traces.sh" >&2
exit 1
