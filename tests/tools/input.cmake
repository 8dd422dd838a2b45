# relo-replay's input: file names with control bytes, byte-order marks,
# files of other kinds given where a trace is expected, the sweep's bound,
# and the whole path from a PyTorch snapshot to the report. Included by
# CMakeLists.txt after relo_cli_test.

# File names holding escape sequences, a newline and a C1 control reach
# the terminal escaped, in error messages and in the table.
add_test(NAME tools.cli.escaped_names
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/escape_names.sh $<TARGET_FILE:relo-replay> ${_data}
                 ${CMAKE_CURRENT_BINARY_DIR}/escaped-names)
set_tests_properties(tools.cli.escaped_names PROPERTIES LABELS tools TIMEOUT 60)
