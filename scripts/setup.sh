#!/usr/bin/env bash
# Creates .venv at the repo root and installs rageval with everything its tests need.
# torch is pinned to the CPU wheel 2.13.0 and installed first, so nothing else can pull a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
# Headless Chromium and its driver: the per-query page's browser tests and the README screenshot.
# Installed only when missing, and only as root (otherwise those tests skip and say why).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
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
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -m pip install -q torch==2.13.0 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -m pip install -q -e '.[dev]' 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -c "import torch, rageval, faiss, bm25s, sentence_transformers" \
    || { echo "setup: the environment in .venv is incomplete (see pip output above)" >&2; exit 1; }
  echo "$want" > "$stamp"
fi
