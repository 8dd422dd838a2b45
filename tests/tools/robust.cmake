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
