# The trace readers as a library of their own, relo_trace: relo-replay, the
# reader tests, the benchmark and the fuzz harness all link it, and it does
# not need the core, so it builds (and its tests run) on its own.
#
# Included from tools/CMakeLists.txt, and from bench/ or tests/ when tools
# are off; the guard makes a second include a no-op. Sets
# RELO_TRACE_SOURCES (absolute paths) for builds that compile the reader
# themselves, such as a fuzzer that instruments it.
include_guard(GLOBAL)

set(RELO_TRACE_DIR ${CMAKE_CURRENT_LIST_DIR})
set(RELO_TRACE_SOURCES
  ${RELO_TRACE_DIR}/id_map.c
  ${RELO_TRACE_DIR}/line_reader.c
  ${RELO_TRACE_DIR}/parse_util.c
  ${RELO_TRACE_DIR}/relo_format.c
  ${RELO_TRACE_DIR}/rmm_format.c
  ${RELO_TRACE_DIR}/trace.c
  ${RELO_TRACE_DIR}/trace_reader.c
  ${RELO_TRACE_DIR}/trace_source.c)

# zlib reads .trace.gz in-process; without it the reader pipes through
# `gzip -dc`, so the tools build where zlib1g-dev is missing.
# -DRELO_TRACE_NO_ZLIB=ON forces that path (its tests use it).
option(RELO_TRACE_NO_ZLIB "Read gzip traces through a gzip -dc pipe even when zlib is found" OFF)
if(NOT RELO_TRACE_NO_ZLIB)
  find_package(ZLIB QUIET)
endif()

# relo_trace_library(<target> <use zlib: ON|OFF>)
function(relo_trace_library target use_zlib)
  add_library(${target} STATIC ${RELO_TRACE_SOURCES})
  target_include_directories(${target} PUBLIC ${RELO_TRACE_DIR})
  target_compile_options(${target} PRIVATE ${RELO_WARNINGS})
  target_compile_definitions(${target} PRIVATE _POSIX_C_SOURCE=200809L)
  if(use_zlib)
    target_compile_definitions(${target} PRIVATE RELO_TRACE_HAVE_ZLIB)
    target_link_libraries(${target} PUBLIC ZLIB::ZLIB)
  endif()
endfunction()

if(ZLIB_FOUND)
  relo_trace_library(relo_trace ON)
  message(STATUS "relo: trace reader reads gzip with zlib ${ZLIB_VERSION_STRING}")
else()
  relo_trace_library(relo_trace OFF)
  message(STATUS "relo: trace reader reads gzip through a gzip -dc pipe (zlib not used)")
endif()
# The pipe variant, always built, so its tests run on every machine.
relo_trace_library(relo_trace_pipe OFF)
