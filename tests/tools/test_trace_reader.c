/*
 * test_trace_reader.c — the trace readers on good and bad input: every
 * malformed case FORMAT.md names, truncated and corrupt gzip, empty files,
 * and RMM logs whose pointers come back after a free.
 *
 * Built twice: against relo_trace (zlib where found) and against
 * relo_trace_pipe (gzip -dc), so both gzip paths are tested.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "trace_reader.h"
#include "trace_source.h"

/* Reads text from memory as a file called mem.trace. */
static bool read_text(const char *text, trace *t, trace_error *e)
{
    return trace_read_buffer(text, strlen(text), "mem.trace", TRACE_FORMAT_AUTO, t, e);
}

/* Whether text is rejected on `line` with a message containing `words`. */
static bool rejects(const char *text, uint64_t line, const char *words)
{
    trace t;
    trace_error e;
    memset(&e, 0, sizeof e);
    bool ok = read_text(text, &t, &e);
    trace_free(&t);
    if (ok) {
        fprintf(stderr, "  accepted: %s\n", text);
        return false;
    }
    bool match = e.line == line && strstr(e.message, words) != NULL && strcmp(e.file, "mem.trace") == 0;
    if (!match)
        fprintf(stderr, "  got %s:%llu: %s (wanted line %llu, '%s')\n", e.file, (unsigned long long)e.line,
                e.message, (unsigned long long)line, words);
    return match;
}

/* A scratch directory for the files a case writes; removed at exit. */
static char scratch[64];

static void remove_scratch(void)
{
    if (scratch[0]) rmdir(scratch);
}

static const char *scratch_path(const char *name)
{
    static char path[128];
    if (!scratch[0]) {
        strcpy(scratch, "/tmp/relo-trace-test-XXXXXX");
        if (!mkdtemp(scratch)) return NULL;
        atexit(remove_scratch);
    }
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    return path;
}

static bool write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Gzips text into name in the scratch directory with the gzip command. */
static const char *gzip_file(const char *name, const char *text)
{
    char plain[160], cmd[512];
    const char *p = scratch_path("plain.tmp");
    if (!p) return NULL;
    snprintf(plain, sizeof plain, "%s", p);
    if (!write_file(plain, text, strlen(text))) return NULL;
    const char *gz = scratch_path(name);
    snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s' 2>/dev/null", plain, gz);
    if (system(cmd) != 0) return NULL;
    unlink(plain);
    return scratch_path(name);
}

static const char *small_trace =
    "# relo-trace 1\n"
    "# workload: tiny test trace\n"
    "# peak_live_bytes: 300\n"
    "a 1 100\n"
    "a 2 200\n"
    "f 1\n"
    "# a comment between events\n"
    "a 3 50 2\n"
    "f 2\n";

CHECK_TEST(reads_valid_trace)
{
    trace t;
    trace_error e;
    require_true(read_text(small_trace, &t, &e));
    expect_eq(t.event_count, 5);
    expect_eq(t.alloc_count, 3);
    expect_eq(t.stream_count, 2);
    expect_eq(t.peak_live_bytes, 300);
    expect_true(t.header_peak_known);
    expect_eq(t.header_peak_live_bytes, 300);
    expect_eq(t.live_at_end, 1);
    expect_eq(t.live_at_end_bytes, 50);
    expect_true(strcmp(t.workload, "tiny") == 0);
    expect_eq(t.events[2].kind, TRACE_FREE);
    expect_eq(t.events[2].alloc, 0);
    expect_eq(t.events[2].size, 100);
    expect_eq(t.events[3].stream, 1);
    expect_eq(t.streams[1], 2);
    trace_free(&t);
}

CHECK_TEST(accepts_blank_lines_crlf_and_max_size)
{
    trace t;
    trace_error e;
    require_true(read_text("\r\n  \na 1 18446744073709551615\r\n\tf 1\r\na 2 0", &t, &e));
    expect_eq(t.event_count, 3);
    expect_eq(t.events[0].size, UINT64_MAX);
    expect_eq(t.events[2].size, 0);
    trace_free(&t);
}

CHECK_TEST(rejects_unknown_event_letter)
{
    expect_true(rejects("a 1 10\nx 2 10\n", 2, "unknown event 'x'"));
    expect_true(rejects("a 1 10\nalloc 2 10\n", 2, "unknown event 'alloc'"));
    expect_true(rejects("A 1 10\n", 1, "unknown event"));
}

CHECK_TEST(rejects_missing_fields)
{
    expect_true(rejects("a\n", 1, "without an id"));
    expect_true(rejects("a 1\n", 1, "without a size"));
    expect_true(rejects("a 1 10\nf\n", 2, "without an id"));
    expect_true(rejects("a 1 10 0 9\n", 1, "too many fields"));
    expect_true(rejects("a 1 10\nf 1 2\n", 2, "too many fields"));
}

CHECK_TEST(rejects_non_numeric_fields)
{
    expect_true(rejects("a x 10\n", 1, "id 'x' is not a number"));
    expect_true(rejects("a 1 1O\n", 1, "size '1O' is not a number"));
    expect_true(rejects("a 1 -5\n", 1, "size '-5' is negative (expected a whole number from 0"));
    expect_true(rejects("a 1 +5\n", 1, "is not a number"));
    expect_true(rejects("a 1 0x10\n", 1, "is not a number"));
    expect_true(rejects("a 1 10 s\n", 1, "stream 's' is not a number"));
    expect_true(rejects("a 1 10\nf one\n", 2, "id 'one' is not a number"));
    expect_true(rejects("a 0 10\n", 1, "id 0"));
}

CHECK_TEST(rejects_numbers_over_64_bits)
{
    expect_true(
        rejects("a 1 18446744073709551616\n", 1, "size '18446744073709551616' does not fit in 64 bits"));
    expect_true(rejects("a 1 99999999999999999999999999\n", 1, "does not fit in 64 bits"));
    expect_true(rejects("a 18446744073709551616 1\n", 1, "id '18446744073709551616' does not fit"));
    expect_true(rejects("a 1 1 18446744073709551616\n", 1, "stream"));
}

CHECK_TEST(rejects_duplicate_ids)
{
    expect_true(rejects("a 1 10\na 1 20\n", 2, "duplicate id 1 (still live"));
    expect_true(rejects("a 1 10\nf 1\na 1 20\n", 3, "duplicate id 1 (already freed"));
}

CHECK_TEST(rejects_free_of_dead_ids)
{
    expect_true(rejects("a 1 10\nf 2\n", 2, "free of id 2, which is not live (never allocated)"));
    expect_true(rejects("a 1 10\nf 1\nf 1\n", 3, "free of id 1, which is not live (already freed)"));
}

CHECK_TEST(rejects_bad_version_nul_and_long_lines)
{
    expect_true(rejects("# relo-trace 2\na 1 10\n", 1, "unsupported trace format version '2'"));
    static const char nul[] = "a 1 10\na 2\0 10\n";
    trace t;
    trace_error e;
    expect_true(!trace_read_buffer(nul, sizeof nul - 1, "mem.trace", TRACE_FORMAT_RELO, &t, &e));
    expect_eq(e.line, 2);
    expect_true(strstr(e.message, "NUL") != NULL);
    trace_free(&t);
    size_t n = LINE_READER_MAX + 100;
    char *big = malloc(n + 1);
    require_true(big != NULL);
    memset(big, '#', n);
    big[n] = '\0';
    expect_true(!read_text(big, &t, &e));
    expect_eq(e.line, 1);
    expect_true(strstr(e.message, "longer than") != NULL);
    trace_free(&t);
    free(big);
}

CHECK_TEST(rejects_bad_header_numbers)
{
    expect_true(rejects("# peak_live_bytes: lots\na 1 10\n", 1, "header peak_live_bytes"));
    expect_true(rejects("# events: 99999999999999999999999\na 1 10\n", 1, "does not fit in 64 bits"));
}

CHECK_TEST(rejects_empty_input)
{
    trace t;
    trace_error e;
    expect_true(!trace_read_buffer("", 0, "mem.trace", TRACE_FORMAT_AUTO, &t, &e));
    expect_true(strstr(e.message, "empty file") != NULL);
    trace_free(&t);
    expect_true(rejects("# relo-trace 1\n# events: 0\n", 0, "no events"));
    const char *path = scratch_path("empty.trace");
    require_true(path && write_file(path, "", 0));
    expect_true(!trace_read_file(path, TRACE_FORMAT_AUTO, &t, &e));
    expect_true(strstr(e.message, "empty file") != NULL);
    expect_true(strstr(e.file, "empty.trace") != NULL);
    trace_free(&t);
    unlink(path);
    expect_true(!trace_read_file("/nonexistent/relo.trace", TRACE_FORMAT_AUTO, &t, &e));
    expect_true(strstr(e.message, "cannot open") != NULL);
    trace_free(&t);
}

CHECK_TEST(reads_gzip_like_plain)
{
    const char *gz = gzip_file("small.trace.gz", small_trace);
    if (!gz) check_skip("the gzip command is not available");
    trace t;
    trace_error e;
    require_true(trace_read_file(gz, TRACE_FORMAT_AUTO, &t, &e));
    expect_eq(t.event_count, 5);
    expect_eq(t.peak_live_bytes, 300);
    expect_true(strcmp(t.name, "small") == 0);
    trace_free(&t);
    unlink(gz);
}

/* A trace long enough that gzip output spans several blocks. */
static char *long_trace(void)
{
    size_t cap = 4u << 20, n = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    n += (size_t)snprintf(s + n, cap - n, "# relo-trace 1\n");
    for (unsigned i = 1; i <= 60000; i++)
        n += (size_t)snprintf(s + n, cap - n, "a %u %u\nf %u\n", i, (i * 2654435761u) % 100000u, i);
    return s;
}

CHECK_TEST(rejects_truncated_gzip)
{
    char *text = long_trace();
    require_true(text != NULL);
    const char *gz = gzip_file("long.trace.gz", text);
    free(text);
    if (!gz) check_skip("the gzip command is not available");
    char path[160];
    snprintf(path, sizeof path, "%s", gz);
    FILE *f = fopen(path, "rb");
    require_true(f != NULL);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    require_true(n > 1000);
    /* Cut in the middle, and just before the 8-byte trailer. */
    size_t cuts[] = {n / 2, n - 4, 10};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        require_true(write_file(path, buf, cuts[i]));
        trace t;
        trace_error e;
        memset(&e, 0, sizeof e);
        expect_true(!trace_read_file(path, TRACE_FORMAT_AUTO, &t, &e));
        expect_true(strstr(e.message, "gzip") != NULL);
        expect_true(strstr(e.file, "long.trace.gz") != NULL);
        trace_free(&t);
    }
    /* Flip a byte in the middle: corrupt, not truncated. */
    buf[n / 2] ^= 0x5a;
    require_true(write_file(path, buf, n));
    trace t;
    trace_error e;
    expect_true(!trace_read_file(path, TRACE_FORMAT_AUTO, &t, &e));
    expect_true(strstr(e.message, "gzip") != NULL);
    trace_free(&t);
    unlink(path);
}

CHECK_TEST(reads_from_file_stream)
{
    const char *path = scratch_path("stream.trace");
    require_true(path && write_file(path, small_trace, strlen(small_trace)));
    FILE *f = fopen(path, "rb");
    require_true(f != NULL);
    trace t;
    trace_error e;
    expect_true(trace_read_stream(f, "stream.trace", TRACE_FORMAT_RELO, &t, &e));
    expect_eq(t.event_count, 5);
    fclose(f);
    trace_free(&t);
    unlink(path);
}

static const char *rmm_log =
    "Thread,Time,Action,Pointer,Size,Stream\n"
    "140,06:52:29:495612,allocate,0x7f0000000000,1000,0x0\n"
    "140,06:52:29:495613,allocate,0x7f0000100000,500,0x0\n"
    "140,06:52:29:495614,allocate failure,0x0,999999999999,0x0\n"
    "140,06:52:29:495615,free,0x7f0000000000,1000,0x0\n"
    "140,06:52:29:495616,allocate,0x7f0000000000,2000,0x5\n"
    "140,06:52:29:495617,free,0x7f0000000000,2000,0x5\n"
    "140,06:52:29:495618,free,0x7f0000100000,500,0x0\n";

CHECK_TEST(rmm_maps_reused_pointers_to_new_ids)
{
    trace t;
    trace_error e;
    require_true(read_text(rmm_log, &t, &e));
    expect_eq(t.event_count, 6);
    expect_eq(t.alloc_count, 3);
    expect_eq(t.stream_count, 2);
    expect_eq(t.events[2].kind, TRACE_FREE);
    expect_eq(t.events[2].alloc, 0);
    expect_eq(t.events[3].alloc, 2); /* the reused pointer is a new allocation */
    expect_eq(t.events[3].size, 2000);
    expect_eq(t.events[3].stream, 1);
    expect_eq(t.events[4].alloc, 2);
    expect_eq(t.events[5].alloc, 1);
    expect_eq(t.peak_live_bytes, 2500);
    expect_eq(t.live_at_end, 0);
    trace_free(&t);
}

CHECK_TEST(rmm_rejects_bad_lines)
{
    expect_true(rejects("Thread,Time,Action,Pointer,Size,Stream\n1,t,free,0x10,5,0\n", 0,
                        "no events (no allocate line)")); /* the free is skipped */
    expect_true(rejects("Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x10,-5,0\n", 2,
                        "Size '-5' is negative"));
    expect_true(
        rejects("Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x10,5,0\n1,t,allocate,16,5,0\n", 3,
                "still live"));
    expect_true(
        rejects("Thread,Time,Action,Pointer,Size,Stream\n1,t,grab,0x10,5,0\n", 2, "unknown action 'grab'"));
    expect_true(rejects("Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x10,five,0\n", 2,
                        "Size 'five' is not a number"));
    expect_true(rejects("Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0xzz,5,0\n", 2,
                        "Pointer '0xzz' is not a number"));
    expect_true(
        rejects("Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x10\n", 2, "missing field 'Size'"));
    expect_true(rejects("Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x10,99999999999999999999,0\n",
                        2, "does not fit in 64 bits"));
    expect_true(rejects("Thread,Time,Action,Size\n1,t,allocate,5\n", 1, "lacks the column 'Pointer'"));
    expect_true(rejects("Thread,Time,Action,Pointer,Size,Stream\n", 0, "no events"));
    trace t;
    trace_error e;
    expect_true(!trace_read_buffer("a 1 10\n", 7, "x.csv", TRACE_FORMAT_RMM, &t, &e));
    expect_true(strstr(e.message, "lacks the column") != NULL);
    trace_free(&t);
}

CHECK_TEST(rmm_counts_skipped_frees_deallocate_and_size_mismatches)
{
    static const char log[] =
        "Thread,Time,Action,Pointer,Size,Stream\n"
        "1,t,free,0x90,64,0\n" /* allocated before the log began */
        "1,t,allocate,0x10,100,0\n"
        "1,t,deallocate,0x10,100,0\n"
        "1,t,allocate,0x10,300,0\n"
        "1,t,free,0x10,200,0\n"  /* names another size */
        "1,t,free,0x10,300,0\n"; /* not live any more */
    trace t;
    trace_error e;
    require_true(read_text(log, &t, &e));
    expect_eq(t.event_count, 4);
    expect_eq(t.events[1].kind, TRACE_FREE);
    expect_eq(t.events[3].size, 300); /* the allocation's size is replayed */
    expect_eq(t.skipped_frees, 2);
    expect_eq(t.first_skipped_free_line, 2);
    expect_eq(t.size_mismatches, 1);
    expect_eq(t.first_size_mismatch_line, 6);
    expect_eq(t.live_at_end, 0);
    trace_free(&t);
}

/* Writes n events of one reused RMM pointer to a file; returns its path. */
static const char *reused_pointer_log(size_t n)
{
    const char *path = scratch_path("reused.csv");
    if (!path) return NULL;
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fputs("Thread,Time,Action,Pointer,Size,Stream\n", f);
    for (size_t i = 0; i < n / 2; i++) fputs("1,t,allocate,0x10,64,0\n1,t,free,0x10,64,0\n", f);
    return fclose(f) == 0 ? path : NULL;
}

/* Whether got is want; prints both when not. */
static bool same_text(const char *got, const char *want)
{
    if (strcmp(got, want) == 0) return true;
    fprintf(stderr, "  got '%s', wanted '%s'\n", got, want);
    return false;
}

CHECK_TEST(a_byte_order_mark_starts_any_format)
{
    trace t;
    trace_error e;
    /* A relo trace, its first line a header or an event. */
    require_true(read_text("\xef\xbb\xbf# relo-trace 1\na 1 100\nf 1\n", &t, &e));
    expect_eq(t.event_count, 2);
    trace_free(&t);
    require_true(
        read_text("\xef\xbb\xbf"
                  "a 1 100\n",
                  &t, &e));
    expect_eq(t.event_count, 1);
    trace_free(&t);
    /* An RMM log: detected from the header behind the mark. */
    require_true(
        read_text("\xef\xbb\xbfThread,Time,Action,Pointer,Size,Stream\n1,0,allocate,0x10,64,0\n", &t, &e));
    expect_eq(t.event_count, 1);
    expect_eq(t.events[0].size, 64);
    trace_free(&t);
    /* Only at the start: one inside the file is a bad line. */
    expect_true(
        rejects("a 1 100\n\xef\xbb\xbf"
                "a 2 100\n",
                2, "unknown event"));
}

/* Whether size bytes at data, read as format, are refused at line 0 with
 * a message containing words. */
static bool refuses_as(const void *data, size_t size, trace_format format, const char *words)
{
    trace t;
    trace_error e;
    memset(&e, 0, sizeof e);
    bool ok = trace_read_buffer(data, size, "mem.trace", format, &t, &e);
    trace_free(&t);
    bool match = !ok && e.line == 0 && strstr(e.message, words) != NULL;
    if (!match)
        fprintf(stderr, "  got %s:%llu: %s (wanted '%s')\n", e.file, (unsigned long long)e.line, e.message,
                words);
    return match;
}

CHECK_TEST(files_of_other_kinds_are_named_with_what_to_do)
{
    /* pickle.dumps({"device_traces": [[]]}, protocol=4), any format asked. */
    static const char pickle[] =
        "\x80\x04\x95\x19\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x0d"
        "device_traces\x94]\x94]\x94"
        "as.";
    for (int f = TRACE_FORMAT_AUTO; f < TRACE_FORMAT_COUNT; f++)
        expect_true(refuses_as(pickle, sizeof pickle - 1, (trace_format)f,
                               "a Python pickle, not a trace: a PyTorch memory snapshot"));
    expect_true(refuses_as(pickle, sizeof pickle - 1, TRACE_FORMAT_AUTO,
                           "tools/torch_snapshot_to_trace.py FILE -o out.trace.gz (installed as "
                           "relo-torch-snapshot-to-trace)"));
    /* The same saved as JSON, after a byte-order mark and blank lines. */
    static const char json[] = "\xef\xbb\xbf\n  {\"device_traces\": [[]]}\n";
    expect_true(refuses_as(json, sizeof json - 1, TRACE_FORMAT_AUTO, "JSON, not a trace"));
    expect_true(refuses_as("[]", 2, TRACE_FORMAT_RELO, "relo-torch-snapshot-to-trace"));
    /* An RMM log read as a relo trace, and a relo trace read as an RMM log. */
    static const char rmm[] = "Thread,Time,Action,Pointer,Size,Stream\n1,0,allocate,0x10,64,0\n";
    expect_true(refuses_as(rmm, sizeof rmm - 1, TRACE_FORMAT_RELO, "an RMM memory-event log"));
    expect_true(refuses_as(rmm, sizeof rmm - 1, TRACE_FORMAT_RELO, "use --format rmm"));
    expect_true(refuses_as(small_trace, strlen(small_trace), TRACE_FORMAT_RMM, "use --format relo"));
    /* Auto still reads both; a pickle's magic later in a file is a bad line. */
    trace t;
    trace_error e;
    expect_true(trace_read_buffer(rmm, sizeof rmm - 1, "mem.csv", TRACE_FORMAT_AUTO, &t, &e));
    trace_free(&t);
    expect_true(rejects("a 1 100\n\x80\x04\n", 2, "unknown event"));
}

CHECK_TEST(names_are_escaped_for_the_terminal)
{
    char out[64];
    /* Printable ASCII and valid UTF-8 (e acute, a CJK character, an emoji) stay. */
    expect_true(same_text(trace_escape_name("run-1.trace", out, sizeof out), "run-1.trace"));
    expect_true(same_text(trace_escape_name("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80", out, sizeof out),
                          "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"));
    /* ESC, BEL, newline, DEL; the C1 control CSI (U+009B); a lone
     * continuation byte, an overlong slash, a surrogate, a cut sequence. */
    expect_true(
        same_text(trace_escape_name("a\x1b[2J\x07\n\x7f", out, sizeof out), "a\\x1b[2J\\x07\\x0a\\x7f"));
    expect_true(same_text(trace_escape_name("\xc2\x9b"
                                            "31m",
                                            out, sizeof out),
                          "\\xc2\\x9b31m"));
    expect_true(same_text(trace_escape_name("\x80\xc0\xaf\xed\xa0\x80\xe4\xb8", out, sizeof out),
                          "\\x80\\xc0\\xaf\\xed\\xa0\\x80\\xe4\\xb8"));
    /* Cut at the capacity, never inside an escape or a character. */
    expect_true(same_text(trace_escape_name("ab\x1b", out, 6), "ab"));
    expect_true(same_text(trace_escape_name("a\xc3\xa9", out, 3), "a"));
    /* A reader's message and a trace's name carry the escaped form. */
    trace t;
    trace_error e;
    expect_true(!trace_read_buffer("x 1\n", 4, "bad\x1b]0;t\x07.trace", TRACE_FORMAT_RELO, &t, &e));
    expect_true(same_text(e.file, "bad\\x1b]0;t\\x07.trace"));
    trace_free(&t);
    trace_set_name_from_path(&t, "/d/n\x1b[1m.trace.gz");
    expect_true(same_text(t.name, "n\\x1b[1m"));
}

CHECK_TEST(event_limit_refuses_a_trace_past_it)
{
    expect_ge(trace_default_max_events(), 4096);
    const char *path = reused_pointer_log(10000);
    require_true(path != NULL);
    trace t;
    trace_error e;
    expect_true(!trace_read_path(path, TRACE_FORMAT_AUTO, 1000, &t, &e));
    expect_eq(e.line, 1002); /* the header, then 1000 events */
    expect_true(strstr(e.message, "more than 1000 events") != NULL);
    /* The array stopped growing at the limit, not at the next doubling. */
    expect_le(t.event_capacity, 1000);
    trace_free(&t);
    expect_true(trace_read_path(path, TRACE_FORMAT_AUTO, 10000, &t, &e));
    expect_eq(t.event_count, 10000);
    trace_free(&t);
    unlink(path);
}

/* A relo trace of n allocations, none freed: every id stays in the map. */
static const char *live_trace(size_t n)
{
    const char *path = scratch_path("live.trace");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return NULL;
    fputs("# relo-trace 1\n", f);
    for (size_t i = 1; i <= n; i++) fprintf(f, "a %zu 64\n", i);
    return fclose(f) == 0 ? path : NULL;
}

CHECK_TEST(default_limit_counts_the_memory_each_format_holds)
{
    /* With a budget of 1 MiB, 16 bytes an event would allow 65,536 events.
     * A relo trace whose ids all stay in the map holds far more per event
     * and is stopped by what it holds, not by the count. */
    trace_memory_budget_set(1u << 20);
    const char *path = live_trace(60000);
    require_true(path != NULL);
    trace t;
    trace_error e;
    expect_true(!trace_read_path(path, TRACE_FORMAT_AUTO, 0, &t, &e));
    expect_true(strstr(e.message, "the most held in memory: 1 MiB") != NULL);
    expect_true(strstr(e.message, "bytes per event here") != NULL);
    expect_lt(t.event_count, 30000);
    expect_le(t.event_capacity * sizeof(trace_event), 1u << 20);
    trace_free(&t);
    unlink(path);
    /* An RMM log that reuses one pointer holds little beside its events:
     * it reads up to the count the budget allows at 16 bytes an event. */
    path = reused_pointer_log(70000);
    require_true(path != NULL);
    expect_true(!trace_read_path(path, TRACE_FORMAT_AUTO, 0, &t, &e));
    expect_gt(t.event_count, 60000);
    expect_le(t.event_capacity * sizeof(trace_event) + t.reader_bytes, 1u << 20);
    trace_free(&t);
    /* --max-events set: the count alone decides. */
    expect_true(trace_read_path(path, TRACE_FORMAT_AUTO, 70000, &t, &e));
    expect_eq(t.event_count, 70000);
    trace_free(&t);
    unlink(path);
    trace_memory_budget_set(0);
}

CHECK_TEST(gzip_with_an_overlong_line_stops_at_the_line)
{
    /* One line past the limit, then 16 MiB more that must not be decoded. */
    size_t tail = 16u << 20;
    size_t n = LINE_READER_MAX + 16 + tail;
    char *text = malloc(n + 1);
    require_true(text != NULL);
    memset(text, '#', LINE_READER_MAX + 16);
    text[LINE_READER_MAX + 16] = '\n';
    for (size_t i = LINE_READER_MAX + 17; i < n; i++) text[i] = i % 64 == 63 ? '\n' : 'z';
    text[n] = '\0';
    const char *gz = gzip_file("long_line.trace.gz", text);
    free(text);
    if (!gz) check_skip("the gzip command is not available");
    char path[256];
    snprintf(path, sizeof path, "%s", gz);
    trace t;
    trace_error e;
    expect_true(!trace_read_file(path, TRACE_FORMAT_AUTO, &t, &e));
    expect_eq(e.line, 1);
    expect_true(strstr(e.message, "longer than") != NULL);
    /* Decoded: the line, a chunk of the reader and one of the source. */
    expect_lt(t.source_bytes, LINE_READER_MAX + (1u << 20));
    trace_free(&t);
    unlink(path);
}

CHECK_TEST(reads_standard_input_as_dash)
{
    const char *path = scratch_path("stdin.trace");
    require_true(path != NULL && write_file(path, small_trace, strlen(small_trace)));
    require_true(freopen(path, "rb", stdin) != NULL);
    trace t;
    trace_error e;
    require_true(trace_read_path("-", TRACE_FORMAT_AUTO, 0, &t, &e));
    expect_eq(t.event_count, 5);
    expect_true(strcmp(t.name, "stdin") == 0);
    trace_free(&t);
    unlink(path);
}

/* The build says which gzip path the reader library was made with
 * (RELO_TEST_EXPECT_ZLIB): the library reports that one and opens a gzip
 * file through it, so the pipe build really tests the pipe. */
CHECK_TEST(uses_the_gzip_path_it_was_built_with)
{
#ifndef RELO_TEST_EXPECT_ZLIB
#error "the build must define RELO_TEST_EXPECT_ZLIB (tests/tools/CMakeLists.txt)"
#endif
    bool want_zlib = RELO_TEST_EXPECT_ZLIB;
    printf("  gzip through %s\n", trace_source_has_zlib() ? "zlib" : "a gzip -dc pipe");
    expect_eq(trace_source_has_zlib(), want_zlib);

    const char *gz = gzip_file("path.trace.gz", small_trace);
    if (!gz) check_skip("the gzip command is not available");
    char path[160];
    snprintf(path, sizeof path, "%s", gz);
    trace_source src;
    char msg[256];
    require_true(trace_source_open_path(&src, path, msg, sizeof msg));
    expect_eq(src.kind, want_zlib ? TRACE_SOURCE_ZLIB : TRACE_SOURCE_PIPE);
    /* The source reads the text back, whichever path it took. */
    char buf[512];
    size_t n = 0;
    long got;
    while ((got = trace_source_read(&src, buf + n, sizeof buf - 1 - n, msg, sizeof msg)) > 0)
        n += (size_t)got;
    buf[n] = '\0';
    expect_true(got == 0);
    expect_true(strcmp(buf, small_trace) == 0);
    expect_true(trace_source_close(&src, true, msg, sizeof msg));
    unlink(path);
}

CHECK_MAIN()
