/*
 * check.h — relo's small test harness.
 *
 * A test file declares cases with CHECK_TEST(name) { ... } at the start of a
 * line (CMake reads those lines to register one ctest test per case) and ends
 * with CHECK_MAIN(). The executable runs the case named in argv[1], or every
 * case when none is named, and prints "N passed, N failed, N skipped".
 *
 * expect_* records a failure and goes on; require_* records it and returns
 * from the test function (so use require_* only in the CHECK_TEST body or
 * in helpers that return void). check_skip(reason), called from the thread
 * that runs the case (its body or any helper), ends the case as skipped:
 * the runner counts it and goes on with the next case. A run in which any
 * case skipped and none failed exits with 77, which ctest reports as SKIP,
 * never as a pass; a case that recorded a failure before skipping counts
 * as failed.
 *
 * Randomized tests take their seed from the RELO_SEED environment variable
 * (check_seed()), and print it when they fail.
 */
#ifndef RELO_CHECK_H
#define RELO_CHECK_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*check_fn)(void);

typedef struct check_case {
    const char *name;
    check_fn fn;
    struct check_case *next;
} check_case;

static check_case *check_cases_;
static int check_failures_;
static int check_skipped_;
static jmp_buf check_skip_jump_; /* where check_skip returns to */
static int check_in_case_;       /* a case runs: check_skip may jump */
static uint64_t check_seed_value_;
static int check_seed_used_;

#define CHECK_TEST(name)                                                    \
    static void check_test_##name(void);                                    \
    static check_case check_case_##name = {#name, check_test_##name, NULL}; \
    __attribute__((constructor)) static void check_register_##name(void)    \
    {                                                                       \
        check_case **p = &check_cases_;                                     \
        while (*p) p = &(*p)->next;                                         \
        *p = &check_case_##name;                                            \
    }                                                                       \
    static void check_test_##name(void)

static inline void check_fail_(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
    check_failures_++;
}

#define CHECK_CMP_(a, op, b, ret)                                                                         \
    do {                                                                                                  \
        uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);                                      \
        if (!(check_a_ op check_b_)) {                                                                    \
            fprintf(stderr,                                                                               \
                    "%s:%d: FAILED: %s %s %s (%" PRIu64 " vs %" PRIu64 "; signed %" PRId64 " vs %" PRId64 \
                    ")\n",                                                                                \
                    __FILE__, __LINE__, #a, #op, #b, check_a_, check_b_, (int64_t)check_a_,               \
                    (int64_t)check_b_);                                                                   \
            check_failures_++;                                                                            \
            ret;                                                                                          \
        }                                                                                                 \
    } while (0)

#define CHECK_TRUE_(c, ret)                      \
    do {                                         \
        if (!(c)) {                              \
            check_fail_(__FILE__, __LINE__, #c); \
            ret;                                 \
        }                                        \
    } while (0)

#define CHECK_STATUS_(s, want, ret)                                                             \
    do {                                                                                        \
        relo_status check_s_ = (s), check_w_ = (want);                                          \
        if (check_s_ != check_w_) {                                                             \
            fprintf(stderr, "%s:%d: FAILED: %s gave %s, expected %s\n", __FILE__, __LINE__, #s, \
                    relo_status_name(check_s_), relo_status_name(check_w_));                    \
            check_failures_++;                                                                  \
            ret;                                                                                \
        }                                                                                       \
    } while (0)

#define CHECK_NOTHING_
#define expect_true(c) CHECK_TRUE_(c, CHECK_NOTHING_)
#define expect_eq(a, b) CHECK_CMP_(a, ==, b, CHECK_NOTHING_)
#define expect_ne(a, b) CHECK_CMP_(a, !=, b, CHECK_NOTHING_)
#define expect_le(a, b) CHECK_CMP_(a, <=, b, CHECK_NOTHING_)
#define expect_lt(a, b) CHECK_CMP_(a, <, b, CHECK_NOTHING_)
#define expect_ge(a, b) CHECK_CMP_(a, >=, b, CHECK_NOTHING_)
#define expect_gt(a, b) CHECK_CMP_(a, >, b, CHECK_NOTHING_)
#define expect_ok(s) CHECK_STATUS_(s, RELO_OK, CHECK_NOTHING_)
#define expect_status(s, w) CHECK_STATUS_(s, w, CHECK_NOTHING_)

#define require_true(c) CHECK_TRUE_(c, return )
#define require_eq(a, b) CHECK_CMP_(a, ==, b, return )
#define require_ne(a, b) CHECK_CMP_(a, !=, b, return )
#define require_le(a, b) CHECK_CMP_(a, <=, b, return )
#define require_ge(a, b) CHECK_CMP_(a, >=, b, return )
#define require_ok(s) CHECK_STATUS_(s, RELO_OK, return )
#define require_status(s, w) CHECK_STATUS_(s, w, return )

/** Ends the running case as skipped: prints the reason and returns to the
 *  runner, which counts it. Outside a case (a constructor, another thread's
 *  start) it ends the process with 77 (ctest: SKIP_RETURN_CODE 77). */
#define check_skip(reason) check_skip_(reason)

static inline _Noreturn void check_skip_(const char *reason)
{
    printf("SKIP: %s\n", reason);
    fflush(stdout);
    if (check_in_case_) longjmp(check_skip_jump_, 1);
    exit(77);
}

/** The seed of a randomized test: RELO_SEED if set, else the clock. */
static inline uint64_t check_seed(void)
{
    if (!check_seed_used_) {
        const char *env = getenv("RELO_SEED");
        check_seed_value_ = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
        check_seed_used_ = 1;
    }
    return check_seed_value_;
}

typedef enum check_outcome { CHECK_PASSED, CHECK_FAILED, CHECK_SKIPPED } check_outcome;

static inline check_outcome check_run_(check_case *c)
{
    int before = check_failures_;
    check_in_case_ = 1;
    int skipped = setjmp(check_skip_jump_) != 0;
    if (!skipped) c->fn();
    check_in_case_ = 0;
    int failed = check_failures_ != before;
    printf("%s %s\n", failed ? "FAIL" : skipped ? "skip" : "ok  ", c->name);
    if (failed && check_seed_used_) printf("  (seed: RELO_SEED=%" PRIu64 ")\n", check_seed_value_);
    if (failed) return CHECK_FAILED;
    return skipped ? CHECK_SKIPPED : CHECK_PASSED;
}

#define CHECK_MAIN()                                                                  \
    int main(int argc, char **argv)                                                   \
    {                                                                                 \
        int passed = 0, failed = 0, found = 0;                                        \
        setvbuf(stdout, NULL, _IOLBF, 0);                                             \
        for (check_case *c = check_cases_; c; c = c->next) {                          \
            if (argc > 1 && strcmp(argv[1], c->name) != 0) continue;                  \
            found++;                                                                  \
            switch (check_run_(c)) {                                                  \
            case CHECK_PASSED: passed++; break;                                       \
            case CHECK_FAILED: failed++; break;                                       \
            case CHECK_SKIPPED: check_skipped_++; break;                              \
            }                                                                         \
        }                                                                             \
        if (argc > 1 && !found) {                                                     \
            fprintf(stderr, "no test named %s\n", argv[1]);                           \
            return 2;                                                                 \
        }                                                                             \
        printf("%d passed, %d failed, %d skipped\n", passed, failed, check_skipped_); \
        if (failed) return 1;                                                         \
        return check_skipped_ ? 77 : 0;                                               \
    }

#endif /* RELO_CHECK_H */
