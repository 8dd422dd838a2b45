/*
 * test_log.c — the log contract of relo.h: the callback in the device desc
 * runs once a call has ended, without the device lock, so it may call relo
 * (here relo_device_stats, relo_stream_stats, relo_resolve, relo_pin,
 * relo_unpin, relo_read, relo_retain and relo_release on the device that
 * logged, and relo_reclaim_device after a reservation that ran passes); and
 * relo prints nothing of its own: with no callback a relocation the device
 * abandons writes nothing to stdout or stderr.
 *
 * The line comes from a relocation abandoned because the device's wait
 * fails (the host backend's fault injection), which relo logs as a warning.
 * Were the callback run with the lock held, its first call would wait for
 * that lock forever: an alarm turns such a hang into a failure.
 */
#include <signal.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "mock_backend.h"

/* Seconds the whole case may take before the alarm calls it a deadlock. */
#define LOG_DEADLINE_S 20u

/* What the callback saw, and the objects it calls relo on. */
static struct {
    relo_device *dev;
    relo_stream *s;
    relo_handle h;
    int lines;
    int abandoned_lines;
    int calls_ok;       /* callbacks whose every relo call succeeded */
    uint64_t abandoned; /* relocations_abandoned as the callback read it */
} seen;

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] =
        "FAIL: a relo call made from the log callback never returned "
        "(the callback ran with the device lock held, or in a call still at work)\n";
    ssize_t n = write(STDOUT_FILENO, msg, sizeof msg - 1);
    (void)n;
    _exit(1);
}

/* Calls relo on the device that logged: each call takes the device lock. */
static void log_calls_relo(void *user, relo_log_level level, const char *message)
{
    (void)user;
    seen.lines++;
    if (level == RELO_LOG_WARN && strstr(message, "abandoned")) seen.abandoned_lines++;
    relo_stats dev, st;
    relo_binding b;
    bool ok = relo_device_stats(seen.dev, &dev) == RELO_OK;
    ok = relo_stream_stats(seen.s, &st) == RELO_OK && ok;
    ok = relo_resolve(seen.s, seen.h, &b) == RELO_OK && b.size == 1 * MiB && ok;
    ok = relo_pin(seen.s, seen.h, &b) == RELO_OK && ok;
    ok = relo_unpin(seen.dev, seen.h) == RELO_OK && ok;
    uint8_t byte = 0;
    ok = relo_read(seen.dev, seen.h, 0, &byte, 1) == RELO_OK && byte == fx_pattern_byte(7, 0) && ok;
    ok = relo_retain(seen.dev, seen.h) == RELO_OK && ok;
    ok = relo_release(seen.dev, seen.h) == RELO_OK && ok;
    if (ok) seen.calls_ok++;
    seen.abandoned = dev.relocations_abandoned;
}

/* A device of the adaptive placement whose stream holds one 1 MiB allocation on
 * an outdated page (a 20 MiB request grew the arena past it), so that
 * relo_reclaim relocates it; the device's wait then fails, and the
 * relocation is abandoned. */
static void abandon_a_relocation(fx *f, relo_handle *keep)
{
    *keep = fx_reserve(f->s, 1 * MiB);
    seen.h = *keep;
    relo_handle grow = fx_reserve(f->s, 20 * MiB);
    require_true(keep->id && grow.id);
    expect_ok(fx_write_pattern(f->dev, *keep, 7, 1 * MiB));
    expect_ok(relo_release(f->dev, grow));
    require_eq(fx_stats(f->s).outdated_pages, 1);
    relo_host_desc faults;
    memset(&faults, 0, sizeof faults);
    faults.fail_wait_device = true;
    require_ok(relo_backend_host_set_faults(f->backend, &faults));
    expect_ok(relo_reclaim(f->s));
    expect_eq(fx_dev_stats(f->dev).relocations_abandoned, 1);
    memset(&faults, 0, sizeof faults);
    expect_ok(relo_backend_host_set_faults(f->backend, &faults));
}

CHECK_TEST(callback_may_call_relo)
{
    signal(SIGALRM, on_alarm);
    alarm(LOG_DEADLINE_S);
    memset(&seen, 0, sizeof seen);
    relo_device_desc desc = fx_desc(RELO_PLACEMENT_ADAPTIVE);
    desc.log = log_calls_relo;
    fx f;
    require_ok(fx_open(&f, NULL, &desc));
    seen.dev = f.dev;
    seen.s = f.s;
    relo_handle keep;
    abandon_a_relocation(&f, &keep);
    alarm(0);

    expect_eq(seen.lines, 1);
    expect_eq(seen.abandoned_lines, 1);
    expect_eq(seen.calls_ok, 1);
    expect_eq(seen.abandoned, 1); /* the stats the callback read were current */
    expect_true(fx_check_pattern(f.dev, keep, 7, 1 * MiB));
    expect_ok(relo_device_check(f.dev));
    expect_ok(relo_release(f.dev, keep));
    fx_close(&f);
}

/* Bytes written to the file open at fd. */
static long bytes_written(int fd)
{
    return (long)lseek(fd, 0, SEEK_END);
}

CHECK_TEST(nothing_printed_without_a_callback)
{
    /* fx_open gives every device a sink; this one has none. */
    relo_host_desc hd = fx_host();
    relo_backend *b = NULL;
    require_ok(relo_backend_host_create(&hd, &b));
    relo_device_desc desc = fx_desc(RELO_PLACEMENT_ADAPTIVE);
    fx f;
    memset(&f, 0, sizeof f);
    f.backend = b;
    require_ok(relo_device_create(&desc, b, &f.dev));
    require_ok(relo_stream_create(f.dev, NULL, &f.s));

    FILE *out = tmpfile();
    require_true(out != NULL);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
    require_true(saved_out >= 0 && saved_err >= 0);
    dup2(fileno(out), STDOUT_FILENO);
    dup2(fileno(out), STDERR_FILENO);
    relo_handle keep = fx_reserve(f.s, 1 * MiB);
    relo_handle grow = fx_reserve(f.s, 20 * MiB);
    relo_status released = relo_release(f.dev, grow);
    relo_host_desc faults;
    memset(&faults, 0, sizeof faults);
    faults.fail_wait_device = true;
    relo_status set = relo_backend_host_set_faults(b, &faults);
    relo_status reclaimed = relo_reclaim(f.s);
    relo_stats st = fx_dev_stats(f.dev);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);

    expect_true(keep.id != 0 && grow.id != 0);
    expect_ok(released);
    expect_ok(set);
    expect_ok(reclaimed);
    expect_eq(st.relocations_abandoned, 1);
    expect_eq(bytes_written(fileno(out)), 0);
    fclose(out);
    memset(&faults, 0, sizeof faults);
    expect_ok(relo_backend_host_set_faults(b, &faults));
    expect_ok(relo_release(f.dev, keep));
    fx_close(&f);
}

/* A callback that reclaims the device that logged (once: the reclaim may
 * log too), and counts the reclaims that returned. */
static struct {
    relo_device *dev;
    int depth;
    int lines;
    int reclaims;
} pass_seen;

static void log_reclaims(void *user, relo_log_level level, const char *message)
{
    (void)user;
    (void)level;
    (void)message;
    pass_seen.lines++;
    if (pass_seen.depth++ == 0) {
        relo_status st = relo_reclaim_device(pass_seen.dev);
        if (st == RELO_OK || st == RELO_ERR_BUSY) pass_seen.reclaims++;
    }
    pass_seen.depth--;
}

/* A reservation the device refuses a page for runs pass after pass to make
 * room; the first is abandoned (its device wait fails) and logs, and later
 * ones drop the lock while they wait for the device. The line reaches the
 * callback only once the reservation returns, with no pass of its own open:
 * so the callback may call even what waits for a pass (relo_reclaim_device
 * here), where it would otherwise wait for its own thread forever. */
CHECK_TEST(callback_may_call_what_waits_for_a_pass)
{
    signal(SIGALRM, on_alarm);
    alarm(LOG_DEADLINE_S);
    memset(&pass_seen, 0, sizeof pass_seen);
    mock_ctx m;
    relo_backend *b = NULL;
    require_ok(mock_backend_create(&m, NULL, &b));
    relo_device_desc desc = fx_desc(RELO_PLACEMENT_PACKED);
    desc.log = log_reclaims;
    fx f;
    require_ok(fx_open_backend(&f, b, &desc));
    pass_seen.dev = f.dev;
    enum { N = 64 };
    relo_handle h[N];
    for (int i = 0; i < N; i++) {
        h[i] = fx_reserve(f.s, 16 * KiB);
        require_ne(h[i].id, 0);
    }
    for (int i = 1; i < N; i += 2) expect_ok(relo_release(f.dev, h[i]));
    m.capacity = m.bytes_held;                      /* nothing more is lent */
    mock_refuse(&m, MOCK_WAIT_DEVICE, 1, false, 0); /* the first pass is abandoned */
    uint64_t waits = m.calls[MOCK_WAIT_DEVICE];
    relo_handle big = {0};
    relo_status st = relo_reserve(f.s, 48 * KiB, &big);
    alarm(0);
    expect_ok(st);
    expect_gt(m.calls[MOCK_WAIT_DEVICE] - waits, 1); /* a pass ran after the line was logged */
    expect_gt(pass_seen.lines, 0);
    expect_eq(pass_seen.reclaims, 1);
    expect_ok(relo_device_check(f.dev));
    if (big.id) expect_ok(relo_release(f.dev, big));
    for (int i = 0; i < N; i += 2) expect_ok(relo_release(f.dev, h[i]));
    fx_close(&f);
}

CHECK_MAIN()
