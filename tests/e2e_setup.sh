#!/usr/bin/env bash
# Install what tests/test_e2e.py needs on a bare Debian machine: Debian's Chromium (the test drives /usr/bin/chromium;
# playwright's own browser download is never used) and the playwright Python package.
# Idempotent and quiet: prints nothing and exits 0 when both are there; prints the installer's output only on failure.
set -euo pipefail

PY=${PYTHON:-python3}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() { "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "e2e_setup.sh: failed: $*" >&2; exit 1; }; }

if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
    run "${SUDO[@]}" apt-get update -qq
    run "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
fi

if ! "$PY" -c "import playwright.sync_api" 2>/dev/null; then
    run env PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install --quiet playwright
fi
