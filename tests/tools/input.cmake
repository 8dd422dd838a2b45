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

# A sweep asking for more than SWEEP_MAX_REPLAYS replays is refused before
# any replay: from a ratio when the options are read, from the fit capacity
# once the fit is known.
relo_cli_test(sweep_too_many_replays 2
              "--sweep 1:1000000:0.0000001% asks for 1e\\+15 replays, more than the 100000 a sweep"
              ARGS --sweep 1:1000000:0.0000001% ${_data}/tiny.trace)
relo_cli_test(sweep_from_fit_too_many_replays 1
              "sweep stopped: [0-9]+ to [0-9]+ bytes by 15 asks for [0-9]+ replays, more than the 100000"
              ARGS --quiet --sweep fit:1000:0.0001% ${_data}/tiny.trace)

# A trace that starts with a UTF-8 byte-order mark reads as without one.
relo_cli_test(byte_order_mark 0 "\"trace\":\"bom\",.*\"events\":4,.*\"peak_live_bytes\":3145728"
              ARGS --json ${_data}/bom.trace)

# Files of other kinds given as a trace: a PyTorch snapshot (pickle or
# JSON) names the converter; an RMM log read as a relo trace names
# --format rmm.
relo_cli_test(snapshot_pickle_names_the_converter 2
              "snapshot.pickle: a Python pickle, not a trace: a PyTorch memory snapshot .* becomes a trace with tools/torch_snapshot_to_trace.py FILE -o out.trace.gz \\(installed as relo-torch-snapshot-to-trace\\)"
              ARGS ${_data}/snapshot.pickle)
relo_cli_test(snapshot_json_names_the_converter 2
              "snapshot.json: JSON, not a trace: .*relo-torch-snapshot-to-trace" ARGS ${_data}/snapshot.json)
relo_cli_test(rmm_log_as_relo_names_the_format 2
              "tiny_rmm.csv: an RMM memory-event log .*read as a relo trace: use --format rmm"
              ARGS --format relo ${_data}/tiny_rmm.csv)

# The documented path from a training script's snapshot to the report:
# a snapshot pickle in PyTorch's shape, built without PyTorch, converted
# and replayed with --fit --capacity auto --baseline pytorch --html.
if(RELO_PYTHON3)
  add_test(NAME tools.snapshot_to_report
           COMMAND ${RELO_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/snapshot_to_report.py
                   ${PROJECT_SOURCE_DIR}/tools/torch_snapshot_to_trace.py $<TARGET_FILE:relo-replay>
                   ${CMAKE_CURRENT_BINARY_DIR}/snapshot-to-report)
else()
  add_test(NAME tools.snapshot_to_report COMMAND sh -c "echo 'SKIP: python3 not found'; exit 77")
endif()
set_tests_properties(tools.snapshot_to_report PROPERTIES LABELS tools TIMEOUT 300 SKIP_RETURN_CODE 77)
