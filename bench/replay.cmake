# bench_replay: time per event on the traces given, relo (sim, host)
# against glibc, jemalloc and mimalloc (loaded at run time when present).
# Included from bench/CMakeLists.txt; needs the trace reader of tools/.
#
#   build-bench/bench/bench_replay examples/traces/*.trace.gz
#   build-bench/tools/relo-replay --table md examples/traces   (the README's fit table)
include(${PROJECT_SOURCE_DIR}/tools/trace.cmake)
relo_add_bench(bench_replay LIBS relo_trace ${CMAKE_DL_LIBS})
