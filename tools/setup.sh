#!/usr/bin/env bash
# One-shot, idempotent setup on a fresh Debian 12 / Python 3.11 machine:
#   system packages (check_urdf, graphviz), a venv in .venv with bondsim_ros and its extras
#   (ROS 2 Kilted wheels from PyPI included), and the locally generated tf2_msgs.
# Re-running it is cheap: each step is skipped when its stamp says it is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="${BONDSIM_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*" >&2; }

# --- system packages -------------------------------------------------------------------
need_apt=()
command -v check_urdf >/dev/null 2>&1 || need_apt+=(liburdfdom-tools)
command -v dot >/dev/null 2>&1 || need_apt+=(graphviz)
"$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
# Python headers: the locally generated tf2_msgs extension compiles against them
"$PY" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  || need_apt+=(python3-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    log "apt-get install ${need_apt[*]}"
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    log "warning: no apt-get; please install: ${need_apt[*]}"
  fi
fi

# --- venv and the package ---------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv $VENV"
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.bondsim_setup_stamp"
want=$(cat setup.py setup.cfg | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing bondsim_ros[ros,mechanism,test,bench] (editable)"
  "$VENV/bin/python" -m pip install -q --upgrade pip wheel setuptools
  "$VENV/bin/python" -m pip install -q -e ".[ros,mechanism,test,bench]"
  echo "$want" > "$stamp"
fi

# --- messages the PyPI wheels do not ship (tf2_msgs), generated locally ----------------------
if [ -f tools/build_msgs.py ]; then
  "$VENV/bin/python" tools/build_msgs.py --venv "$VENV"
fi
log "ready: $VENV"
