/*
 * selftest.c — the test harness (tests/include/check.h) on itself: a case
 * that passes, one that skips in its body and one that skips from a helper.
 * Run with no argument, the summary must read "1 passed, 0 failed,
 * 2 skipped" and the exit status be 77 (SKIP); tests/CMakeLists.txt checks
 * both. The code after each skip records a failure, so a check_skip that
 * did not end its case shows as "failed".
 */
#include <stdbool.h>

#include "check.h"

static void skip_from_helper(void)
{
    check_skip("skipped from a helper");
}

CHECK_TEST(passes)
{
    expect_eq(2 + 2, 4);
}

CHECK_TEST(skips_in_body)
{
    check_skip("skipped in the body");
    expect_true(false);
}

CHECK_TEST(skips_in_helper)
{
    skip_from_helper();
    expect_true(false);
}

CHECK_MAIN()
