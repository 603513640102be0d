#!/usr/bin/env bash
# Fills the trace corpus cache that the corpus test group reads
# (`cargo test --workspace --features corpus`).
#
# Every file is listed in testdata/corpus.tsv with the public repository, commit and path it
# comes from, its size and SHA-256. Each file is taken, in this order, from:
#   1. the cache itself, when already there with the right checksum;
#   2. a local mirror: $STEPSCOPE_TRACES, or a shared/traces folder beside the checkout;
#   3. the repository's own testdata/traces (the curated set);
#   4. https://raw.githubusercontent.com/REPOSITORY/COMMIT/PATH (pinned commit).
# A file whose checksum differs is refused, never kept.
#
# Usage: bash scripts/fetch-traces.sh [CACHE_DIR]
#   CACHE_DIR defaults to ${XDG_CACHE_HOME:-~/.cache}/stepscope/traces, where the tests look.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
list="$root/testdata/corpus.tsv"
cache="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/stepscope/traces}"
mirrors=()
[ -n "${STEPSCOPE_TRACES:-}" ] && mirrors+=("$STEPSCOPE_TRACES")
[ -d "$root/../shared/traces" ] && mirrors+=("$(cd "$root/../shared/traces" && pwd)")
mirrors+=("$root/testdata/traces")

sum_of() { sha256sum "$1" | cut -d' ' -f1; }

# Copies or downloads one file into the cache; prints where it came from.
fetch_one() {
  local path="$1" repo="$2" commit="$3" source="$4" sha="$5"
  local dest="$cache/$path" tmp="$cache/$path.part"
  mkdir -p "$(dirname "$dest")"
  if [ -f "$dest" ] && [ "$(sum_of "$dest")" = "$sha" ]; then
    echo cached; return 0
  fi
  local mirror
  for mirror in "${mirrors[@]}"; do
    if [ -f "$mirror/$path" ] && [ "$(sum_of "$mirror/$path")" = "$sha" ]; then
      cp "$mirror/$path" "$tmp" && mv "$tmp" "$dest"
      echo "mirror"; return 0
    fi
  done
  if [ "$repo" = "-" ]; then
    echo "unavailable: recorded for this project, no public copy (set STEPSCOPE_TRACES to a mirror that has it)"
    return 1
  fi
  local url="https://raw.githubusercontent.com/$repo/$commit/$source"
  if [ -e "$offline" ]; then
    echo "not downloaded (no network, see the first failure): $url"; return 1
  fi
  local code=0
  curl -fsSL --retry 3 --connect-timeout 20 -o "$tmp" "$url" || code=$?
  if [ "$code" != 0 ]; then
    rm -f "$tmp"
    # Cannot resolve, connect or time out: no network; the other downloads are not tried.
    case "$code" in 6|7|28) : > "$offline" ;; esac
    echo "download failed (curl exit $code): $url"; return 1
  fi
  if [ "$(sum_of "$tmp")" != "$sha" ]; then
    rm -f "$tmp"; echo "checksum differs: $url (expected $sha)"; return 1
  fi
  mv "$tmp" "$dest"
  echo "downloaded"
}

mkdir -p "$cache"
offline=$(mktemp -u)
trap 'rm -f "$offline"' EXIT
total=$(grep -vc '^#' "$list")
n=0; failed=0
while IFS=$'\t' read -r path repo commit source bytes sha _licence _in_repo; do
  case "$path" in '#'*|'') continue ;; esac
  n=$((n + 1))
  if how=$(fetch_one "$path" "$repo" "$commit" "$source" "$sha"); then
    printf '[%3d/%d] %-10s %s (%s bytes)\n' "$n" "$total" "$how" "$path" "$bytes"
  else
    failed=$((failed + 1))
    printf '[%3d/%d] MISSING    %s: %s\n' "$n" "$total" "$path" "$how" >&2
  fi
done < "$list"

if [ "$failed" -gt 0 ]; then
  echo "$failed of $total files are missing from $cache (see above); the corpus tests that read them will fail" >&2
  exit 1
fi
echo "the trace corpus is complete in $cache ($total files); run: cargo test --workspace --features corpus"
