#!/usr/bin/env bash
# Creates .venv at the repo root and installs rageval into it.
#   bash scripts/setup.sh           rageval and its dependencies: enough for the demo and your data
#   bash scripts/setup.sh --tests   also every extra and the test tools, and (as root, when missing)
#                                   headless Chromium for the browser tests; .ci/run uses this
# torch is pinned to the CPU wheel 2.13.0 and installed first, so nothing else can pull a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=demo
[ "${1:-}" = "--tests" ] && mode=tests
if [ "$mode" = tests ] && { ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; }; then
  # the per-query page's browser tests and the README screenshot; a user's install never needs it
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "setup: chromium/chromedriver missing; as root: apt-get install chromium chromium-driver" >&2
  fi
fi
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.rageval-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
have=$(cat "$stamp" 2>/dev/null || true)
# a tests install covers the demo's; a demo install is upgraded by --tests
if [ "$have" != "$want tests" ] && { [ "$mode" = tests ] || [ "$have" != "$want demo" ]; }; then
  pip() { .venv/bin/python -m pip install -q "$@" 2>&1 | grep -v '^WARNING: Location' || true; }
  pip --upgrade pip
  pip torch==2.13.0
  if [ "$mode" = tests ]; then pip -e '.[dev]'; else pip -e .; fi
  .venv/bin/python -c "import torch, rageval, faiss, bm25s, sentence_transformers, rich" \
    || { echo "setup: the environment in .venv is incomplete (see pip output above)" >&2; exit 1; }
  echo "$want $mode" > "$stamp"
fi
