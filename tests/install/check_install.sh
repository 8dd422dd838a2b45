#!/bin/sh
# Installs the build into a scratch prefix and uses it the way the README's
# "Using relo from your project" says, as a program outside this tree would:
#
#   1. librelo.so needs nothing but libc, libm and pthreads: no GPU runtime.
#   2. pkg-config: cc app.c $(pkg-config --cflags --libs relo)
#      -Wl,-rpath,$(pkg-config --variable=libdir relo); the program runs
#      with no LD_LIBRARY_PATH and needs librelo.so, no GPU runtime.
#   3. CMake: find_package(relo REQUIRED) and relo::relo (and
#      relo::relo_static), configured with the CUDA toolkit hidden (no nvcc
#      on PATH or where CMake looks, CUDAToolkit_ROOT an empty folder); the
#      programs run.
#   4. Each device backend built (opencl, cuda, vulkan): its component and its
#      relo-<backend>.pc link a program that calls the backend. Where relo
#      has the CUDA backend, asking for the cuda component with the toolkit
#      hidden must fail: that shows the hiding in 3 worked.
#
# usage: check_install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR C_COMPILER
# Exits 77 (skip) without pkg-config or readelf.
set -eu
build=$1
src=$2
scratch=$3
cc=$4

for tool in pkg-config readelf; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool not found"
        exit 77
    fi
done

rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
# The tools land in bin: the replayer and relo-bound where they were built, the converter
# always (it runs wherever python3 does).
if [ -f "$build/tools/relo-replay" ]; then
    "$prefix/bin/relo-replay" --version >/dev/null
    echo "ok   relo-replay installed"
fi
if [ -f "$build/tools/relo-bound" ]; then
    "$prefix/bin/relo-bound" --help >/dev/null
    echo "ok   relo-bound installed"
fi
test -x "$prefix/bin/relo-torch-snapshot-to-trace"
if command -v python3 >/dev/null 2>&1; then
    "$prefix/bin/relo-torch-snapshot-to-trace" --help >/dev/null
fi
echo "ok   relo-torch-snapshot-to-trace installed"

pc=$(find "$prefix" -name relo.pc -path '*/pkgconfig/*' | head -n 1)
if [ -z "$pc" ]; then
    echo "FAIL: no relo.pc under $prefix"
    exit 1
fi
libdir=$(dirname "$(dirname "$pc")")
# The programs must find librelo the way the README says, not through ours.
unset LD_LIBRARY_PATH

# needed FILE: the libraries FILE needs, one per line.
needed() {
    readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
}

# gpu_free FILE: fails when FILE needs anything but the C library, libm,
# pthreads, the dynamic loader and relo's own core.
gpu_free() {
    for lib in $(needed "$1"); do
        case $lib in
        libc.so.* | libm.so.* | libpthread.so.* | ld-linux*.so.* | librelo.so.*) ;;
        *)
            echo "FAIL: $1 needs $lib"
            exit 1
            ;;
        esac
    done
}

# needs FILE LIB: fails unless FILE needs LIB (a soname prefix).
needs() {
    if ! needed "$1" | grep -q "^$2"; then
        echo "FAIL: $1 does not need $2:"
        needed "$1"
        exit 1
    fi
}

# 1. The core library.
echo "librelo.so needs: $(needed "$libdir/librelo.so" | tr '\n' ' ')"
gpu_free "$libdir/librelo.so"
echo "ok   librelo.so needs no GPU runtime"

# 2. pkg-config, exactly as the README says.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
"$cc" -o "$scratch/basic_pc" "$src/examples/basic.c" $(pkg-config --cflags --libs relo) \
    -Wl,-rpath,"$(pkg-config --variable=libdir relo)"
"$scratch/basic_pc" >/dev/null
needs "$scratch/basic_pc" librelo.so
gpu_free "$scratch/basic_pc"
echo "ok   pkg-config relo: built, runs without LD_LIBRARY_PATH, needs librelo.so and no GPU runtime"

# 3. CMake, exactly as the README says, with the CUDA toolkit hidden: no
# folder holding nvcc on PATH, every such folder in CMAKE_IGNORE_PATH (the
# CUDA module also looks in the system's default folders), CUDAToolkit_ROOT
# an empty folder.
nvcc_dirs=""
for d in $(printf '%s\n' "$PATH" | tr ':' ' ') /usr/bin /usr/local/bin /opt/cuda/bin \
    /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$d/nvcc" ]; then nvcc_dirs="$nvcc_dirs $d"; fi
done
hidden_path=""
for d in $(printf '%s\n' "$PATH" | tr ':' ' '); do
    if [ ! -x "$d/nvcc" ]; then hidden_path="${hidden_path:+$hidden_path:}$d"; fi
done
ignore=$(printf '%s\n' $nvcc_dirs | sed '/^$/d' | tr '\n' ';')
no_cuda=$scratch/no-cuda-toolkit
mkdir -p "$no_cuda"
# configure_hidden SOURCE BUILD: cmake configure with no CUDA toolkit in sight.
configure_hidden() {
    env -u CUDA_PATH -u CUDA_HOME -u CUDAToolkit_ROOT PATH="$hidden_path" \
        cmake -S "$1" -B "$2" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
        -DCUDAToolkit_ROOT="$no_cuda" "-DCMAKE_IGNORE_PATH=$ignore"
}

mkdir -p "$scratch/consumer"
cat >"$scratch/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(relo REQUIRED)
add_executable(app $src/examples/basic.c)
target_link_libraries(app PRIVATE relo::relo)
add_executable(app_static $src/examples/basic.c)
target_link_libraries(app_static PRIVATE relo::relo_static)
CMAKE
if ! configure_hidden "$scratch/consumer" "$scratch/consumer/build" >"$scratch/consumer.log" 2>&1; then
    cat "$scratch/consumer.log"
    echo "FAIL: find_package(relo) with the CUDA toolkit hidden"
    exit 1
fi
cmake --build "$scratch/consumer/build" >/dev/null
"$scratch/consumer/build/app" >/dev/null
"$scratch/consumer/build/app_static" >/dev/null
needs "$scratch/consumer/build/app" librelo.so
gpu_free "$scratch/consumer/build/app"
gpu_free "$scratch/consumer/build/app_static"
echo "ok   find_package(relo) + relo::relo and relo::relo_static, CUDA toolkit hidden: built, run"

# 4. Device backends: each a component with its own library and .pc.
for b in opencl cuda vulkan; do
    if [ ! -e "$libdir/librelo_$b.so" ]; then
        echo "--   $b backend not built: its component is not checked"
        continue
    fi
    case $b in
    opencl)
        runtime=libOpenCL.so
        call='relo_backend_opencl_create(NULL, NULL, NULL, &backend)'
        ;;
    cuda)
        runtime=libcuda.so
        call='relo_backend_cuda_create(NULL, 0, NULL, &backend)'
        ;;
    vulkan)
        runtime=libvulkan.so
        call='relo_backend_vulkan_create(NULL, &backend)'
        ;;
    esac
    needs "$libdir/librelo_$b.so" "$runtime"
    # A program that reaches the backend: without a context the call must
    # refuse its arguments, which needs no device.
    cat >"$scratch/use_$b.c" <<C
#include <stdio.h>
#include <relo_$b.h>
int main(void)
{
    relo_backend *backend = NULL;
    relo_status s = $call;
    printf("%s\n", relo_status_name(s));
    return s == RELO_ERR_INVALID_ARGUMENT ? 0 : 1;
}
C
    # shellcheck disable=SC2046
    "$cc" -o "$scratch/use_${b}_pc" "$scratch/use_$b.c" $(pkg-config --cflags --libs "relo-$b") \
        -Wl,-rpath,"$(pkg-config --variable=libdir relo)"
    needs "$scratch/use_${b}_pc" "librelo_$b.so"
    # Running needs the vendor runtime, which a machine with only the SDK's
    # link stubs lacks: there the programs are built, not run.
    run=1
    if ldd "$scratch/use_${b}_pc" | grep -q "not found"; then
        run=0
    fi

    mkdir -p "$scratch/consumer_$b"
    cat >"$scratch/consumer_$b/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(consumer_$b C)
find_package(relo REQUIRED COMPONENTS $b)
add_executable(app $scratch/use_$b.c)
target_link_libraries(app PRIVATE relo::relo_$b)
CMAKE
    if ! cmake -S "$scratch/consumer_$b" -B "$scratch/consumer_$b/build" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" >"$scratch/consumer_$b.log" 2>&1; then
        cat "$scratch/consumer_$b.log"
        echo "FAIL: find_package(relo COMPONENTS $b)"
        exit 1
    fi
    cmake --build "$scratch/consumer_$b/build" >/dev/null
    needs "$scratch/consumer_$b/build/app" "librelo_$b.so"
    if [ $run = 1 ]; then
        "$scratch/use_${b}_pc" >/dev/null
        "$scratch/consumer_$b/build/app" >/dev/null
        echo "ok   relo-$b.pc and component $b (relo::relo_$b): built, run"
    else
        echo "ok   relo-$b.pc and component $b (relo::relo_$b): built (no ${runtime}.1 here to run them)"
    fi

    if [ $b = cuda ]; then
        # The control for step 3: the hidden toolkit really is out of sight.
        if configure_hidden "$scratch/consumer_$b" "$scratch/consumer_$b/build-hidden" >"$scratch/consumer_$b.hidden.log" 2>&1; then
            echo "FAIL: the cuda component was found with the toolkit hidden, so step 3 proved nothing"
            exit 1
        fi
        echo "ok   with the toolkit hidden, find_package(relo COMPONENTS cuda) fails, as it must"
    fi
done
