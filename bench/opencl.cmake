# OpenCL benchmarks, included from bench/CMakeLists.txt when the OpenCL
# backend is built.
if(RELO_HAVE_OPENCL)
  relo_add_bench(bench_opencl_reloc LIBS relo_opencl)
endif()
