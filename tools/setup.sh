#!/usr/bin/env bash
# One-shot, idempotent setup on a fresh Debian 12 / Python 3.11 machine:
#   system packages (check_urdf, graphviz, KLU, node and npm), a venv with bondsim_ros and its extras
#   (ROS 2 wheels from PyPI included), the locally generated tf2_msgs and composition_interfaces,
#   and the official Foxglove client the tests run (test/npm, from the npm registry).
#     bash tools/setup.sh                      ROS 2 Kilted (the newest) in .venv
#     ROS_DISTRO=jazzy bash tools/setup.sh     ROS 2 Jazzy in .venv-jazzy
# When ../shared/wheels exists beside the checkout (development and CI machines), its launch
# and launch_ros wheels are installed too, so the tests run the launch files for real.
# Re-running it is cheap: each step is skipped when its stamp says it is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DISTRO="${ROS_DISTRO:-kilted}"
case "$DISTRO" in
  kilted) DEFAULT_VENV="$ROOT/.venv" ;;
  jazzy) DEFAULT_VENV="$ROOT/.venv-jazzy" ;;
  *) echo "[setup] ROS_DISTRO=$DISTRO: PyPI has ROS 2 wheels for kilted and jazzy only" >&2; exit 2 ;;
esac
export ROS_DISTRO="$DISTRO"  # setup.py's `ros` extra and build_msgs.py pick ros-$DISTRO-* wheels
VENV="${BONDSIM_VENV:-$DEFAULT_VENV}"
PY="${PYTHON:-python3}"
log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*" >&2; }

# --- system packages -------------------------------------------------------------------
need_apt=()
command -v check_urdf >/dev/null 2>&1 || need_apt+=(liburdfdom-tools)
command -v dot >/dev/null 2>&1 || need_apt+=(graphviz)
"$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# the system Python's setuptools: what colcon builds this package with on a ROS install, which
# test/test_ccore.py runs colcon's setup.py commands with
/usr/bin/python3 -c 'import setuptools' >/dev/null 2>&1 || need_apt+=(python3-setuptools)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
# the C compiler that builds the solver core and every model's kernels (solver/native.py)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
# SuiteSparse's KLU: the solver core's sparse LU (without it, the core's own; solver/_ccore.py)
[ -f /usr/include/suitesparse/klu.h ] || need_apt+=(libsuitesparse-dev)
# SUNDIALS IDA: the C reference the solver is measured against (benchmarks/c_ida.py), which
# test/test_benchmark_fairness.py checks
[ -f /usr/include/ida/ida.h ] || need_apt+=(libsundials-dev)
# node and npm: test/test_foxglove.py runs the official npm client (@foxglove/ws-protocol)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
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
want=$( (cat setup.py setup.cfg; echo "$DISTRO") | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing bondsim_ros[ros,mechanism,test,bench,foxglove,cluster] (editable, ROS 2 $DISTRO)"
  "$VENV/bin/python" -m pip install -q --upgrade pip wheel setuptools
  "$VENV/bin/python" -m pip install -q -e ".[ros,mechanism,test,bench,foxglove,cluster]"
  echo "$want" > "$stamp"
fi

# --- launch and launch_ros (not on PyPI), only where ../shared/wheels provides them ----------
WHEELS="$ROOT/../shared/wheels"
if compgen -G "$WHEELS/*.whl" >/dev/null; then
  wstamp="$VENV/.bondsim_wheels_stamp"
  wwant=$(ls -l "$WHEELS"/*.whl | sha256sum | cut -c1-16)
  if [ ! -f "$wstamp" ] || [ "$(cat "$wstamp")" != "$wwant" ]; then
    log "installing launch wheels from $WHEELS"
    # --no-deps: their ament_index_python dependency is the ros-*-ament-index-python wheel here
    "$VENV/bin/python" -m pip install -q --no-deps "$WHEELS"/*.whl
    "$VENV/bin/python" -m pip install -q osrf-pycommon lark-parser  # lark-parser: what rosidl_parser uses too
    echo "$wwant" > "$wstamp"
  fi
fi

# --- interfaces the PyPI wheels do not ship (tf2_msgs, composition_interfaces), generated ----
if [ -f tools/build_msgs.py ]; then
  "$VENV/bin/python" tools/build_msgs.py --venv "$VENV" --distro "$DISTRO"
fi
# --- the official Foxglove WebSocket client for the tests (test/npm, versions in its lock file) --
NPM_DIR="$ROOT/test/npm"
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
  nstamp="$NPM_DIR/node_modules/.bondsim_npm_stamp"  # inside node_modules: `npm ci` removes it first
  nwant=$( (cat "$NPM_DIR/package.json" "$NPM_DIR/package-lock.json"; node --version) | sha256sum | cut -c1-16)
  if [ ! -f "$nstamp" ] || [ "$(cat "$nstamp")" != "$nwant" ]; then
    log "installing @foxglove/ws-protocol in test/npm (npm ci)"
    (cd "$NPM_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$nwant" > "$nstamp"
  fi
else
  log "warning: no node/npm; test/test_foxglove.py's official-client test will skip (fail under BONDSIM_NO_SKIP=1)"
fi
log "ready: $VENV"
