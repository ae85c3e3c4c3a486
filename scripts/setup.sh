#!/bin/bash
# The first command of the README: install what is needed, build, and run 'gpureap status'.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
echo "built build/src/gpureap; running 'gpureap status':" >&2
echo >&2
set +e
build/src/gpureap status
rc=$?
set -e
echo >&2
echo "gpureap status exited $rc (0 clean, 1 something holds a GPU, 3 no driver or driver failure; see docs/exit-codes.md)" >&2
exit 0
