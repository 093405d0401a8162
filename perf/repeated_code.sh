#!/usr/bin/env bash
# The product code's repeated-code figure of docs/architecture.md ("Repeated code"): the tracked .py, .js, .html,
# .css and bin/ files, without tests/, */tests/, migrations, perf/ and the docs, copied to a folder of their own
# and read with the team's `duplicates` tool (not in CI: it is a developer's command).
# Usage: perf/repeated_code.sh [--most N]   (prints the tool's count line and its rows)
set -euo pipefail
cd "$(dirname "$0")/.."
most=${2:-200}
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
git ls-files | grep -E '\.(py|js|html|css)$|^bin/' | grep -vE '(^|/)tests/|/migrations/|^perf/|^docs/' |
  while read -r f; do mkdir -p "$copy/$(dirname "$f")"; cp "$f" "$copy/$f"; done
cd "$copy" && duplicates --seconds 90 --most "$most"
