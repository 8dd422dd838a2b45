# CUDA benchmarks, included from bench/CMakeLists.txt when the CUDA backend
# is built. Run by scripts/gpu-check.sh on a GPU machine.
if(RELO_HAVE_CUDA)
  relo_add_bench(bench_cuda LIBS relo_cuda)
endif()
