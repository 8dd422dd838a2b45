# Targets for working on relo, none built by default:
#
#   check    builds every target of the build folder, then runs every test
#            (ctest --output-on-failure)
#   format   formats the C sources in the style of .clang-format
#            (scripts/format.sh; scripts/format.sh --check only lists)
#   layers   the layer rule on calls: tests/tools/check_calls.py on the
#            objects of librelo and of the device backends' libraries
#            (HACKING.md, "Layers")
#
# Included at the end of the top-level CMakeLists.txt, once every target
# is defined.

# Every target this build folder builds by default, for check to depend on.
function(relo_collect_targets dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  set(built "")
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    get_target_property(excluded ${t} EXCLUDE_FROM_ALL)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$" AND NOT excluded)
      list(APPEND built ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    relo_collect_targets(${sub} sub_built)
    list(APPEND built ${sub_built})
  endforeach()
  set(${out} ${built} PARENT_SCOPE)
endfunction()

relo_collect_targets(${PROJECT_SOURCE_DIR} _relo_all_targets)
cmake_host_system_information(RESULT _relo_cores QUERY NUMBER_OF_LOGICAL_CORES)
add_custom_target(check
  COMMAND ${CMAKE_CTEST_COMMAND} --output-on-failure -j${_relo_cores} -C $<CONFIG>
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
  COMMENT "Running every test"
  USES_TERMINAL)
if(_relo_all_targets)
  add_dependencies(check ${_relo_all_targets})
endif()

add_custom_target(format
  COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/format.sh
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "Formatting the C sources (.clang-format)"
  USES_TERMINAL)

# The objects' folders: CMake names each object after its source
# (CMakeFiles/relo_static.dir/src/pool/pool.c.o), under a folder per
# configuration in multi-configuration generators.
if(CMAKE_CONFIGURATION_TYPES)
  set(_relo_obj_config "/$<CONFIG>")
else()
  set(_relo_obj_config "")
endif()
set(_relo_layer_dirs ${PROJECT_BINARY_DIR}/CMakeFiles/relo_static.dir${_relo_obj_config}/src)
set(_relo_layer_deps relo_static)
foreach(b ${RELO_BACKEND_COMPONENTS})
  list(APPEND _relo_layer_dirs ${PROJECT_BINARY_DIR}/CMakeFiles/relo_${b}.dir${_relo_obj_config}/src)
  list(APPEND _relo_layer_deps relo_${b})
endforeach()
# librelo.a carries ordinary code beside the link-time-optimisation IR, which
# any nm reads; the compiler's own nm reads the IR too.
set(_relo_nm ${CMAKE_NM})
string(REGEX MATCH "^[0-9]+" _relo_cc_major "${CMAKE_C_COMPILER_VERSION}")
if(RELO_USE_LTO AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  find_program(RELO_GCC_NM NAMES gcc-nm-${_relo_cc_major} gcc-nm)
  mark_as_advanced(RELO_GCC_NM)
  if(RELO_GCC_NM)
    set(_relo_nm ${RELO_GCC_NM})
  endif()
elseif(RELO_USE_LTO AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  find_program(RELO_LLVM_NM NAMES llvm-nm-${_relo_cc_major} llvm-nm)
  mark_as_advanced(RELO_LLVM_NM)
  if(RELO_LLVM_NM)
    set(_relo_nm ${RELO_LLVM_NM})
  endif()
endif()
# relo__assert_fail has callers only where internal asserts are compiled in.
set(_relo_keep "")
if(RELO_DEBUG LESS 2)
  set(_relo_keep --keep relo__assert_fail)
endif()
find_program(RELO_PYTHON3 python3)
if(RELO_PYTHON3)
  add_custom_target(layers
    COMMAND ${RELO_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/tools/check_calls.py --nm ${_relo_nm}
            --src ${PROJECT_SOURCE_DIR}/src ${_relo_keep} ${_relo_layer_dirs}
    COMMENT "Checking that calls run down the layers, without a cycle"
    VERBATIM)
else()
  add_custom_target(layers
    COMMAND ${CMAKE_COMMAND} -E echo "layers: python3 not found"
    COMMAND ${CMAKE_COMMAND} -E false)
endif()
add_dependencies(layers ${_relo_layer_deps})

# The same check in ctest: on the objects this build made (librelo is built
# before the tests run), so a call that runs up a folder, a cycle between
# files or an unused internal symbol fails the test command, and CI.
if(RELO_PYTHON3)
  add_test(NAME layers.calls
           COMMAND ${RELO_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/tools/check_calls.py --nm ${_relo_nm}
                   --src ${PROJECT_SOURCE_DIR}/src ${_relo_keep} ${_relo_layer_dirs})
else()
  add_test(NAME layers.calls COMMAND sh -c "echo 'SKIP: python3 not found'; exit 77")
endif()
set_tests_properties(layers.calls PROPERTIES LABELS tools SKIP_RETURN_CODE 77 TIMEOUT 120)
