/* log.c: the default log sink (one logfmt or JSON line per event on stderr) and level
 * names. Each line is built in memory and written with one write(2), so lines from
 * threads logging at once never interleave. */
#include "internal.h"
#include "buf.h"
#include "utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *ddb_log_level_name(int level)
{
    switch (level) {
    case DDB_LOG_TRACE: return "trace";
    case DDB_LOG_DEBUG: return "debug";
    case DDB_LOG_INFO: return "info";
    case DDB_LOG_WARN: return "warn";
    case DDB_LOG_ERROR: return "error";
    case DDB_LOG_OFF: return "off";
    default: return "unknown";
    }
}

/* Writes s as the inside of a double-quoted string: \" \\ \n \r \t, invalid UTF-8 as
 * U+FFFD, and what else a terminal would act on rather than show (dl__utf8_is_control,
 * the test the command's output uses: C0 and C1 controls, DEL, bidirectional marks and
 * overrides, line separators) as \uXXXX. The same escapes serve JSON and logfmt. */
static void put_escaped(dl_buf *l, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        switch (c) {
        case '"': dl__buf_puts(l, "\\\""); i++; continue;
        case '\\': dl__buf_puts(l, "\\\\"); i++; continue;
        case '\n': dl__buf_puts(l, "\\n"); i++; continue;
        case '\r': dl__buf_puts(l, "\\r"); i++; continue;
        case '\t': dl__buf_puts(l, "\\t"); i++; continue;
        default: break;
        }
        size_t k = dl__utf8_seq(u + i, n - i);
        if (k != 0 && dl__utf8_is_control(u + i, k)) {
            char buf[8];
            snprintf(buf, sizeof buf, "\\u%04lx", dl__utf8_code_point(u + i, k));
            dl__buf_puts(l, buf);
            i += k;
            continue;
        }
        if (k == 0) {
            dl__buf_puts(l, "\xef\xbf\xbd");
            i++;
        } else {
            dl__buf_put(l, s + i, k);
            i += k;
        }
    }
}

/* logfmt: bare when the value has no space, quote, '=', control or non-ASCII byte. */
static void put_logfmt_value(dl_buf *l, const char *v)
{
    bool bare = *v != '\0';
    for (const unsigned char *p = (const unsigned char *)v; *p && bare; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p >= 0x7f)
            bare = false;
    if (bare) {
        dl__buf_puts(l, v);
        return;
    }
    dl__buf_putc(l, '"');
    put_escaped(l, v);
    dl__buf_putc(l, '"');
}

/* logfmt keys cannot be quoted: characters that would break the line become '_'. */
static void put_logfmt_key(dl_buf *l, const char *k)
{
    if (!*k) {
        dl__buf_putc(l, '_');
        return;
    }
    for (const unsigned char *p = (const unsigned char *)k; *p; p++)
        dl__buf_putc(l, (*p <= ' ' || *p == '"' || *p == '=' || *p >= 0x7f) ? '_' : (char)*p);
}

/* The wall time of `clock` (NULL: the system's real time), as 2026-01-01T00:00:00.000Z. */
static void put_timestamp(dl_buf *l, ddb_clock *clock)
{
    int64_t ms;
    if (clock) {
        ms = ddb_clock_wall_ms(clock);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char buf[96];
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    dl__buf_puts(l, buf);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void log_line(ddb_log_format fmt, ddb_clock *clock, int level, int event_id,
                     const char *category, const char *message, const ddb_log_field *fields,
                     size_t n);

void ddb_log_to_stderr(void *arg, int level, int event_id, const char *category,
                    const char *message, const ddb_log_field *fields, size_t n)
{
    log_line(arg ? *(const ddb_log_format *)arg : DDB_LOG_LOGFMT, NULL, level, event_id,
             category, message, fields, n);
}

void ddb_log_to_stderr_with(void *arg, int level, int event_id, const char *category,
                            const char *message, const ddb_log_field *fields, size_t n)
{
    const ddb_log_stderr_options *o = arg;
    log_line(o ? o->format : DDB_LOG_LOGFMT, o ? o->clock : NULL, level, event_id, category,
             message, fields, n);
}

static void log_line(ddb_log_format fmt, ddb_clock *clock, int level, int event_id,
                     const char *category, const char *message, const ddb_log_field *fields,
                     size_t n)
{
    /* on allocation failure the line stops growing and is cut */
    char stack[1024];
    dl_buf l;
    dl__buf_init_storage(&l, stack, sizeof stack);
    char num[24];
    if (!message)
        message = "";
    if (fmt == DDB_LOG_JSON) {
        dl__buf_puts(&l, "{\"ts\":\"");
        put_timestamp(&l, clock);
        dl__buf_puts(&l, "\",\"level\":\"");
        dl__buf_puts(&l, ddb_log_level_name(level));
        dl__buf_putc(&l, '"');
        if (event_id != 0) {
            snprintf(num, sizeof num, "%d", event_id);
            dl__buf_puts(&l, ",\"event\":");
            dl__buf_puts(&l, num);
        }
        if (category) {
            dl__buf_puts(&l, ",\"category\":\"");
            put_escaped(&l, category);
            dl__buf_putc(&l, '"');
        }
        dl__buf_puts(&l, ",\"msg\":\"");
        put_escaped(&l, message);
        dl__buf_putc(&l, '"');
        for (size_t i = 0; fields && i < n; i++) {
            if (!fields[i].key)
                continue;
            dl__buf_puts(&l, ",\"");
            put_escaped(&l, fields[i].key);
            dl__buf_puts(&l, "\":");
            if (fields[i].value) {
                dl__buf_putc(&l, '"');
                put_escaped(&l, fields[i].value);
                dl__buf_putc(&l, '"');
            } else {
                dl__buf_puts(&l, "null");
            }
        }
        dl__buf_puts(&l, "}\n");
    } else {
        dl__buf_puts(&l, "ts=");
        put_timestamp(&l, clock);
        dl__buf_puts(&l, " level=");
        dl__buf_puts(&l, ddb_log_level_name(level));
        if (event_id != 0) {
            snprintf(num, sizeof num, "%d", event_id);
            dl__buf_puts(&l, " event=");
            dl__buf_puts(&l, num);
        }
        if (category) {
            dl__buf_puts(&l, " category=");
            put_logfmt_value(&l, category);
        }
        dl__buf_puts(&l, " msg=");
        put_logfmt_value(&l, message);
        for (size_t i = 0; fields && i < n; i++) {
            if (!fields[i].key)
                continue;
            dl__buf_putc(&l, ' ');
            put_logfmt_key(&l, fields[i].key);
            dl__buf_putc(&l, '=');
            put_logfmt_value(&l, fields[i].value ? fields[i].value : "");
        }
        dl__buf_putc(&l, '\n');
    }
    /* A line cut short by a failed allocation still ends with a newline. */
    if (l.len > 0 && l.p[l.len - 1] != '\n')
        l.p[l.len - 1] = '\n';
    write_all(STDERR_FILENO, l.p, l.len);
    dl__buf_cleanup(&l);
}
