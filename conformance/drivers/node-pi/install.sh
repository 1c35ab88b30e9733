#!/bin/sh
# Install @mariozechner/pi-agent-core into a cache directory (never into the repository).
# Usage: conformance/drivers/node-pi/install.sh [CACHE_DIR]   (default: $PI_CACHE or ~/.cache/phi-conformance/node-pi)
set -eu
CACHE="${1:-${PI_CACHE:-$HOME/.cache/phi-conformance/node-pi}}"
VERSION="${PI_AGENT_CORE_VERSION:-0.73.1}"
mkdir -p "$CACHE"
npm install --silent --no-audit --no-fund --prefix "$CACHE" "@mariozechner/pi-agent-core@$VERSION"
echo "installed @mariozechner/pi-agent-core@$VERSION into $CACHE"
echo "run: PI_CACHE=$CACHE python -m phi.conformance run --driver \"node conformance/drivers/node-pi/driver.mjs\""
