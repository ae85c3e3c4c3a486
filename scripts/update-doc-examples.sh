#!/bin/bash
# Rewrite every stale example marked in README.md and docs/*.md with what it is now: gpureap's
# output of a recording, the recording a test made, the file the tree ships. The same checker
# as the test (tests/integration/doc-examples.sh, with DOC_EXAMPLES_UPDATE=1); the "$ command"
# line is kept. Then read the diff, and make the prose around each change say what it shows.
#   scripts/update-doc-examples.sh [BUILD_DIR]    (default: build)
set -eu
cd "$(dirname "$0")/.."
DOC_EXAMPLES_UPDATE=1 meson test -C "${1:-build}" doc-examples -v | grep '^# updated' || echo "no example was stale"
git diff --stat -- README.md docs/
