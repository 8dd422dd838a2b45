/*
 * test_names.c — every public enum has a name for every value, and an
 * unknown value gets a name too, never NULL.
 */
#include "check.h"
#include "relo.h"

CHECK_TEST(every_status_has_a_name_and_a_sentence)
{
    for (int i = 0; i < RELO_STATUS_COUNT; i++) {
        const char *name = relo_status_name((relo_status)i);
        expect_true(strncmp(name, "RELO_", 5) == 0);
        expect_true(strcmp(name, "RELO_STATUS_UNKNOWN") != 0);
        expect_true(strlen(relo_status_string((relo_status)i)) > 5);
    }
    expect_true(strcmp(relo_status_name(RELO_ERR_NOT_FOUND), "RELO_ERR_NOT_FOUND") == 0);
    expect_true(strcmp(relo_status_name((relo_status)999), "RELO_STATUS_UNKNOWN") == 0);
    expect_true(relo_status_string((relo_status)999) != NULL);
}

CHECK_TEST(other_enums_have_names)
{
    expect_true(strcmp(relo_placement_name(RELO_PLACEMENT_DEFAULT), "RELO_PLACEMENT_DEFAULT") == 0);
    expect_true(strcmp(relo_placement_name(RELO_PLACEMENT_PACKED), "RELO_PLACEMENT_PACKED") == 0);
    expect_true(strcmp(relo_placement_name(RELO_PLACEMENT_ADAPTIVE), "RELO_PLACEMENT_ADAPTIVE") == 0);
    expect_true(strcmp(relo_placement_name(RELO_PLACEMENT_EXCLUSIVE), "RELO_PLACEMENT_EXCLUSIVE") == 0);
    expect_true(strcmp(relo_relocation_name(RELO_RELOCATION_OFF), "RELO_RELOCATION_OFF") == 0);
    expect_true(strcmp(relo_log_level_name(RELO_LOG_WARN), "RELO_LOG_WARN") == 0);
    expect_true(strcmp(relo_mode_name(RELO_MODE_PERSISTENT), "RELO_MODE_PERSISTENT") == 0);
    expect_true(strcmp(relo_placement_name(RELO_PLACEMENT_COUNT), "RELO_PLACEMENT_UNKNOWN") == 0);
    expect_true(strcmp(relo_placement_name((relo_placement)7), "RELO_PLACEMENT_UNKNOWN") == 0);
    expect_true(strcmp(relo_mode_name((relo_mode)7), "RELO_MODE_UNKNOWN") == 0);
}

CHECK_MAIN()
