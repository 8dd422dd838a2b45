/*
 * trace_source.c — opening and reading trace bytes (see trace_source.h).
 *
 * zlib is optional so the tool builds where zlib1g-dev is missing; the
 * fallback runs `gzip -dc` through popen, whose failure shows only in its
 * exit status, hence the status check at close.
 */
#include "trace_source.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef RELO_TRACE_HAVE_ZLIB
#include <zlib.h>
#endif

bool trace_source_has_zlib(void)
{
#ifdef RELO_TRACE_HAVE_ZLIB
    return true;
#else
    return false;
#endif
}

/* Whether the file starts with gzip's magic bytes 1f 8b. */
static bool is_gzip(FILE *f)
{
    unsigned char magic[2];
    size_t n = fread(magic, 1, 2, f);
    rewind(f);
    return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

#ifndef RELO_TRACE_HAVE_ZLIB
/* Opens `gzip -dc` on path, quoting it for the shell: every ' becomes '\''. */
static FILE *open_pipe(const char *path)
{
    size_t n = strlen(path);
    if (n > SIZE_MAX / 4 - 64) return NULL;
    char *cmd = malloc(n * 4 + 64);
    if (!cmd) return NULL;
    char *p = cmd;
    p += sprintf(p, "gzip -dc -- '");
    for (const char *c = path; *c; c++) {
        if (*c == '\'') {
            memcpy(p, "'\\''", 4);
            p += 4;
        } else {
            *p++ = *c;
        }
    }
    strcpy(p, "' 2>/dev/null");
    FILE *f = popen(cmd, "r");
    free(cmd);
    return f;
}
#endif

bool trace_source_open_path(trace_source *s, const char *path, char *msg, size_t msg_cap)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, msg_cap, "cannot open: %s", strerror(errno));
        return false;
    }
    if (!is_gzip(f)) {
        s->kind = TRACE_SOURCE_FILE;
        s->file = f;
        s->owns_file = true;
        return true;
    }
    fclose(f);
#ifdef RELO_TRACE_HAVE_ZLIB
    gzFile gz = gzopen(path, "rb");
    if (!gz) {
        snprintf(msg, msg_cap, "cannot open gzip stream: %s", strerror(errno));
        return false;
    }
    gzbuffer(gz, 1u << 16);
    s->kind = TRACE_SOURCE_ZLIB;
    s->gz = gz;
#else
    FILE *pipe = open_pipe(path);
    if (!pipe) {
        snprintf(msg, msg_cap, "cannot run gzip -dc: %s", strerror(errno));
        return false;
    }
    s->kind = TRACE_SOURCE_PIPE;
    s->file = pipe;
#endif
    return true;
}

bool trace_source_open_stdin(trace_source *s, char *msg, size_t msg_cap)
{
    memset(s, 0, sizeof *s);
#ifdef RELO_TRACE_HAVE_ZLIB
    /* A duplicate, so gzclose leaves standard input itself open. */
    int fd = dup(fileno(stdin));
    gzFile gz = fd < 0 ? NULL : gzdopen(fd, "rb");
    if (!gz) {
        if (fd >= 0) close(fd);
        snprintf(msg, msg_cap, "cannot read standard input: %s", strerror(errno));
        return false;
    }
    gzbuffer(gz, 1u << 16);
    s->kind = TRACE_SOURCE_ZLIB;
    s->gz = gz;
#else
    int c = getc(stdin);
    if (c == 0x1f) {
        snprintf(msg, msg_cap,
                 "gzip data on standard input needs a relo-replay built with zlib: pipe it through gzip -dc");
        return false;
    }
    if (c != EOF) ungetc(c, stdin);
    s->kind = TRACE_SOURCE_FILE;
    s->file = stdin;
#endif
    return true;
}

void trace_source_open_file(trace_source *s, FILE *f)
{
    memset(s, 0, sizeof *s);
    s->kind = TRACE_SOURCE_FILE;
    s->file = f;
}

void trace_source_open_memory(trace_source *s, const void *data, size_t size)
{
    memset(s, 0, sizeof *s);
    s->kind = TRACE_SOURCE_MEMORY;
    s->data = data;
    s->size = size;
}

static long read_some(trace_source *s, char *buf, size_t cap, char *msg, size_t msg_cap);

long trace_source_read(void *ctx, char *buf, size_t cap, char *msg, size_t msg_cap)
{
    trace_source *s = ctx;
    long n = read_some(s, buf, cap, msg, msg_cap);
    if (n > 0) s->bytes += (uint64_t)n;
    return n;
}

static long read_some(trace_source *s, char *buf, size_t cap, char *msg, size_t msg_cap)
{
    if (cap > (size_t)INT32_MAX) cap = (size_t)INT32_MAX;
    switch (s->kind) {
    case TRACE_SOURCE_MEMORY: {
        size_t n = s->size - s->pos < cap ? s->size - s->pos : cap;
        memcpy(buf, s->data + s->pos, n);
        s->pos += n;
        return (long)n;
    }
    case TRACE_SOURCE_FILE:
    case TRACE_SOURCE_PIPE: {
        size_t n = fread(buf, 1, cap, s->file);
        if (n == 0 && ferror(s->file)) {
            snprintf(s->error, sizeof s->error, "read error: %s", strerror(errno));
            s->failed = true;
            snprintf(msg, msg_cap, "%s", s->error);
            return -1;
        }
        return (long)n;
    }
    case TRACE_SOURCE_ZLIB:
#ifdef RELO_TRACE_HAVE_ZLIB
    {
        int n = gzread((gzFile)s->gz, buf, (unsigned)cap);
        int code = Z_OK;
        const char *why = gzerror((gzFile)s->gz, &code);
        /* zlib reports a truncated stream as Z_BUF_ERROR yet still returns
         * the bytes it decoded, and 0 afterwards: check the code every time. */
        if (n < 0 || code != Z_OK) {
            /* zlib prefixes its message with the path; the caller adds it too. */
            const char *tail = why ? strrchr(why, ':') : NULL;
            tail = tail ? tail + 1 + (tail[1] == ' ') : (why && *why ? why : "zlib error");
            if (code == Z_BUF_ERROR)
                snprintf(s->error, sizeof s->error, "truncated gzip data (%s)", tail);
            else
                snprintf(s->error, sizeof s->error, "corrupt gzip data (%s)", tail);
            s->failed = true;
            snprintf(msg, msg_cap, "%s", s->error);
            return -1;
        }
        return n;
    }
#endif
    case TRACE_SOURCE_KIND_COUNT: break;
    }
    snprintf(msg, msg_cap, "internal error: unknown source");
    return -1;
}

bool trace_source_close(trace_source *s, bool drain, char *msg, size_t msg_cap)
{
    bool ok = true;
    switch (s->kind) {
    case TRACE_SOURCE_FILE:
        if (s->owns_file && s->file) fclose(s->file);
        if (s->failed) {
            snprintf(msg, msg_cap, "%s", s->error);
            ok = false;
        }
        break;
    case TRACE_SOURCE_PIPE: {
        if (!s->file) break;
        /* Drain first: a gzip killed by SIGPIPE would look like corrupt
         * data. Past the bound, or without drain, its status says nothing. */
        char sink[4096];
        uint64_t drained = 0;
        size_t n = 0;
        while (drain && drained < TRACE_SOURCE_DRAIN_MAX && (n = fread(sink, 1, sizeof sink, s->file)) > 0)
            drained += n;
        s->bytes += drained;
        bool at_end = drain && feof(s->file);
        int status = pclose(s->file);
        if (at_end && (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
            s->failed = true;
            snprintf(msg, msg_cap, "truncated or corrupt gzip data (gzip -dc exited with status %d)",
                     status == -1        ? -1
                     : WIFEXITED(status) ? WEXITSTATUS(status)
                                         : 128);
            ok = false;
        }
        break;
    }
    case TRACE_SOURCE_ZLIB:
#ifdef RELO_TRACE_HAVE_ZLIB
        if (!s->gz) break;
        if (!s->failed && drain) {
            /* A parser that stopped early may have read garbage from corrupt
             * data: decode on so the checksum speaks, within a bound. */
            char sink[4096];
            char why[256];
            uint64_t drained = 0;
            long n;
            while (drained < TRACE_SOURCE_DRAIN_MAX &&
                   (n = trace_source_read(s, sink, sizeof sink, why, sizeof why)) > 0)
                drained += (uint64_t)n;
        }
        gzclose((gzFile)s->gz);
        if (s->failed) {
            snprintf(msg, msg_cap, "%s", s->error);
            ok = false;
        }
#endif
        break;
    case TRACE_SOURCE_MEMORY:
    case TRACE_SOURCE_KIND_COUNT: break;
    }
    s->file = NULL;
    s->gz = NULL;
    return ok;
}
