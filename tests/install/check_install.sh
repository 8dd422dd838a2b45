#!/bin/sh
# Installs the build into a scratch prefix, then builds examples/basic.c
# against the installed headers and library twice, through pkg-config and
# through find_package(relo), and runs both. Exits 77 (skip) without
# pkg-config.
#
# usage: check_install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR C_COMPILER
set -eu
build=$1
src=$2
scratch=$3
cc=$4
rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
# The tools land in bin: the replayer where it was built, the converter
# always (it runs wherever python3 does).
if [ -f "$build/tools/relo-replay" ]; then
    "$prefix/bin/relo-replay" --version >/dev/null
    echo "ok   relo-replay installed"
fi
test -x "$prefix/bin/relo-torch-snapshot-to-trace"
if command -v python3 >/dev/null 2>&1; then
    "$prefix/bin/relo-torch-snapshot-to-trace" --help >/dev/null
fi
echo "ok   relo-torch-snapshot-to-trace installed"

libdir=$(find "$prefix" -name relo.pc -path '*pkgconfig*' | head -n 1 | xargs dirname | xargs dirname)
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if command -v pkg-config >/dev/null 2>&1; then
    flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs relo)
    # shellcheck disable=SC2086
    "$cc" -std=c11 -o "$scratch/basic_pc" "$src/examples/basic.c" $flags
    "$scratch/basic_pc" >/dev/null
    echo "ok   pkg-config consumer"
else
    echo "SKIP: pkg-config not found"
    exit 77
fi

mkdir -p "$scratch/consumer"
cat >"$scratch/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(relo REQUIRED)
add_executable(basic $src/examples/basic.c)
target_link_libraries(basic PRIVATE relo::relo_static)
CMAKE
cmake -S "$scratch/consumer" -B "$scratch/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$scratch/consumer/build" >/dev/null
"$scratch/consumer/build/basic" >/dev/null
echo "ok   find_package(relo) consumer"
