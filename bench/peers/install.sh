#!/usr/bin/env bash
# Install the benchmark peers into bench-only places, never into the product's venv:
#   .cache/peers-venv   a Python venv with dbos (on SQLite), restate-sdk (+ hypercorn), py-spy
#   .cache/peers-npm    an npm prefix with @restatedev/restate-server (its binary)
# Each peer is optional: one that fails to install is reported and skipped, and
# `python -m bench` then prints a "skipped" line for it.
set -u
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
VENV=.cache/peers-venv
NPM_PREFIX=.cache/peers-npm
status=0

if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  "$PYTHON" -m venv "$VENV" || exit 1
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi

echo "== DBOS Transact (PyPI dbos) into $VENV"
"$VENV/bin/python" -m pip install -q "dbos>=2,<4" || { echo "!! dbos did not install"; status=1; }

echo "== Restate Python SDK (PyPI restate-sdk, hypercorn) into $VENV"
"$VENV/bin/python" -m pip install -q "restate-sdk[serde]>=0.8" "hypercorn>=0.17" httpx \
  || { echo "!! restate-sdk did not install"; status=1; }

echo "== py-spy (profiling the host; bench-only) into $VENV"
"$VENV/bin/python" -m pip install -q py-spy || echo "!! py-spy did not install (profiles only)"

if command -v npm >/dev/null 2>&1; then
  echo "== Restate server (npm @restatedev/restate-server) into $NPM_PREFIX"
  mkdir -p "$NPM_PREFIX"
  npm install --silent --no-audit --no-fund --prefix "$NPM_PREFIX" @restatedev/restate-server \
    || { echo "!! @restatedev/restate-server did not install"; status=1; }
else
  echo "!! npm not found: Restate's server is skipped"
fi
echo "== peers installed (status $status)"
exit 0
