# relo-replay against hostile input and the messages that point a way
# forward (issue 16). Included by CMakeLists.txt after relo_cli_test.

# A size of 2^64 - 1 fails on its own event: the page limit saturates.
relo_cli_test(huge_size 1 "replay failed at event 4: relo_reserve\\(18446744073709551615 bytes\\)"
              ARGS ${_data}/huge_size.trace)

relo_add_check_file(${CMAKE_CURRENT_SOURCE_DIR}/test_replay_robust.c LABEL tools LIBS relo_replay_parts)

# --capacity with a fraction: exact, or refused with what is expected.
relo_cli_test(capacity_fraction_exact 0 "\"capacity\":19327352832," ARGS --json --capacity 0.017578125T ${_data}/tiny.trace)
relo_cli_test(capacity_fraction_refused 2 "invalid value '0.018730341T' for --capacity \\(expected auto"
              ARGS --capacity 0.018730341T ${_data}/tiny.trace)

# Messages that point a way forward.
relo_cli_test(version 0 "^relo-replay [0-9]+\\.[0-9]+\\.[0-9]+ \\(library [0-9]+\\.[0-9]+\\.[0-9]+\\)$" ARGS --version)
relo_cli_test(bad_backend_lists_choices 2 "invalid value 'gpu' for --backend \\(expected sim, host, opencl or vulkan\\)"
              ARGS --backend gpu ${_data}/tiny.trace)
relo_cli_test(bad_placement_lists_choices 2 "for --placement \\(expected packed, adaptive or exclusive\\)"
              ARGS --placement dense ${_data}/tiny.trace)
relo_cli_test(bad_format_lists_choices 2 "for --format \\(expected auto, relo or rmm\\)" ARGS --format csv ${_data}/tiny.trace)
relo_cli_test(verify_full_on_sim 2 "--verify-full checks bytes, and the sim backend holds none"
              ARGS --verify-full ${_data}/tiny.trace)
relo_cli_test(negative_size 2 "negative_size.trace:3: size '-8192' is negative" ARGS ${_data}/negative_size.trace)
relo_cli_test(unknown_event_hint 2 "unknown event 'hello' \\(expected 'a' or 'f'\\): an RMM log needs --format rmm"
              ARGS ${_data}/unknown_event.trace)
relo_cli_test(json_unreadable 2 "\"file\":\"[^\"]*nonexistent.trace\",\"ok\":false,\"status\":\"unreadable\",\"error\":\"cannot open"
              ARGS --json ${_data}/tiny.trace ${_data}/nonexistent.trace)
add_test(NAME tools.cli.stdin
         COMMAND sh ${_cli} 0 "\"trace\":\"stdin\",\"file\":\"-\".*\"peak_live_bytes\":14680064"
                 -- sh -c "$<TARGET_FILE:relo-replay> --json - < ${_data}/tiny.trace")
set_tests_properties(tools.cli.stdin PROPERTIES LABELS tools TIMEOUT 120)

# The RMM reader: a log started mid-run, "deallocate", a size that differs.
relo_cli_test(rmm_skips_unknown_frees 0 "rmm_midrun.csv:2: warning: skipped 2 frees of pointers the log never allocated"
              ARGS --quiet ${_data}/rmm_midrun.csv)
relo_cli_test(rmm_size_mismatch_warns 0 "rmm_midrun.csv:8: warning: 1 free gives a size other than the allocation's"
              ARGS --quiet ${_data}/rmm_midrun.csv)
relo_cli_test(rmm_counts_in_json 0 "\"events\":6,.*\"skipped_frees\":2,\"size_mismatches\":1"
              ARGS --json ${_data}/rmm_midrun.csv)

# An event limit refuses a log of one pointer reused without end.
relo_cli_test(max_events 2 "rmm_midrun.csv:8: more than 4 events, the most held in memory"
              ARGS --max-events 4 ${_data}/rmm_midrun.csv)

# The timeline picture: steps, live under reserved, the legend above the
# plot, few lines across it, and a failed replay said to have failed with
# its x axis ending where the data does.
if(RELO_PYTHON3)
  set(_svgcheck ${CMAKE_CURRENT_SOURCE_DIR}/check_svg.py)
  set(_growing ${PROJECT_SOURCE_DIR}/examples/traces/transformer_train_growing.trace.gz)
  add_test(NAME tools.svg.completed
           COMMAND sh -c "$<TARGET_FILE:relo-replay> --quiet --svg svg_ok.svg ${_data}/tiny.trace && ${RELO_PYTHON3} ${_svgcheck} svg_ok.svg --last-event 13"
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  add_test(NAME tools.svg.failed
           COMMAND sh -c "$<TARGET_FILE:relo-replay> --quiet --placement adaptive --capacity 100M --svg svg_failed.svg ${_growing}; [ $? = 1 ] && ${RELO_PYTHON3} ${_svgcheck} svg_failed.svg --failed --last-event 36349 --verdict $<TARGET_FILE:relo-replay> --placement adaptive --capacity 100M ${_growing}"
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  add_test(NAME tools.svg.many_relocations
           COMMAND sh -c "$<TARGET_FILE:relo-replay> --quiet --placement packed --svg svg_packed.svg ${_growing} && ${RELO_PYTHON3} ${_svgcheck} svg_packed.svg --last-event 44959"
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  # The verdict's table says what relo-replay --json says of the same run:
  # at relo's fit capacity, where each baseline ran out of memory, and the
  # figures of each on its own fit capacity.
  set(_verdict_args --fit --capacity auto --baseline pytorch --baseline pytorch-expandable ${_growing})
  string(REPLACE ";" " " _verdict_args "${_verdict_args}")
  add_test(NAME tools.svg.verdict
           COMMAND sh -c "$<TARGET_FILE:relo-replay> --quiet --svg svg_verdict.svg ${_verdict_args} && ${RELO_PYTHON3} ${_svgcheck} svg_verdict.svg --last-event 44959 --verdict $<TARGET_FILE:relo-replay> ${_verdict_args}"
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(tools.svg.completed tools.svg.failed tools.svg.many_relocations tools.svg.verdict
                       PROPERTIES LABELS tools TIMEOUT 120)
endif()

# Output files: where the SVG went, one file per trace even for two traces
# of one name, and an exit status of its own when it cannot be written.
relo_cli_test(svg_written_note 0 "tiny.trace: timeline written to .*svg_note.svg"
              ARGS --svg ${CMAKE_CURRENT_BINARY_DIR}/svg_note.svg ${_data}/tiny.trace)
relo_cli_test(svg_unwritable 3 "nonexistent-dir/x.svg: cannot write the SVG"
              ARGS --svg ${CMAKE_CURRENT_BINARY_DIR}/nonexistent-dir/x.svg ${_data}/tiny.trace)
add_test(NAME tools.cli.svg_same_name
         COMMAND sh -c "rm -rf same && mkdir -p same/a same/b && cp ${_data}/tiny.trace same/a/t.trace && cp ${_data}/tiny.trace same/b/t.trace && $<TARGET_FILE:relo-replay> --quiet --svg same/p.svg same/a/t.trace same/b/t.trace && test -s same/p-t.svg && test -s same/p-t-2.svg"
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(tools.cli.svg_same_name PROPERTIES LABELS tools TIMEOUT 120)
