/* log.c: the default log sink (one logfmt or JSON line per event on stderr) and level
 * names. Each line is built in memory and written with one write(2), so lines from
 * threads logging at once never interleave. */
#include "internal.h"

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

/* A growing line; on allocation failure it stops growing and the line is cut. */
typedef struct line {
    char *p;
    size_t len, cap;
    char stack[1024];
} line;

static void put(line *l, const char *s, size_t n)
{
    if (l->len + n + 1 > l->cap) {
        size_t cap = l->cap * 2;
        while (cap < l->len + n + 1)
            cap *= 2;
        char *np = l->p == l->stack ? malloc(cap) : realloc(l->p, cap);
        if (!np) {
            n = l->cap - l->len - 1;
        } else {
            if (l->p == l->stack)
                memcpy(np, l->stack, l->len);
            l->p = np;
            l->cap = cap;
        }
    }
    memcpy(l->p + l->len, s, n);
    l->len += n;
}

static void puts_(line *l, const char *s)
{
    put(l, s, strlen(s));
}

static void putc_(line *l, char c)
{
    put(l, &c, 1);
}

/* Length of a valid UTF-8 sequence at s (n bytes left), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k;
    uint32_t min;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xe0) == 0xc0) { k = 2; min = 0x80; }
    else if ((s[0] & 0xf0) == 0xe0) { k = 3; min = 0x800; }
    else if ((s[0] & 0xf8) == 0xf0) { k = 4; min = 0x10000; }
    else return 0;
    if (k > n)
        return 0;
    uint32_t cp = s[0] & (0x7f >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k;
}

/* Writes s as the inside of a double-quoted string: \" \\ \n \r \t, other control bytes
 * as \u00XX, invalid UTF-8 as U+FFFD. The same escapes serve JSON and logfmt. */
static void put_escaped(line *l, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        switch (c) {
        case '"': puts_(l, "\\\""); i++; continue;
        case '\\': puts_(l, "\\\\"); i++; continue;
        case '\n': puts_(l, "\\n"); i++; continue;
        case '\r': puts_(l, "\\r"); i++; continue;
        case '\t': puts_(l, "\\t"); i++; continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7f) {
            char buf[8];
            snprintf(buf, sizeof buf, "\\u%04x", c);
            puts_(l, buf);
            i++;
            continue;
        }
        size_t k = utf8_len(u + i, n - i);
        if (k == 0) {
            puts_(l, "\xef\xbf\xbd");
            i++;
        } else {
            put(l, s + i, k);
            i += k;
        }
    }
}

/* logfmt: bare when the value has no space, quote, '=', control or non-ASCII byte. */
static void put_logfmt_value(line *l, const char *v)
{
    bool bare = *v != '\0';
    for (const unsigned char *p = (const unsigned char *)v; *p && bare; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p >= 0x7f)
            bare = false;
    if (bare) {
        puts_(l, v);
        return;
    }
    putc_(l, '"');
    put_escaped(l, v);
    putc_(l, '"');
}

/* logfmt keys cannot be quoted: characters that would break the line become '_'. */
static void put_logfmt_key(line *l, const char *k)
{
    if (!*k) {
        putc_(l, '_');
        return;
    }
    for (const unsigned char *p = (const unsigned char *)k; *p; p++)
        putc_(l, (*p <= ' ' || *p == '"' || *p == '=' || *p >= 0x7f) ? '_' : (char)*p);
}

static void put_timestamp(line *l)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char buf[96];
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ts.tv_nsec / 1000000) % 1000);
    puts_(l, buf);
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

void ddb_log_to_stderr(void *arg, int level, int event_id, const char *category,
                    const char *message, const ddb_log_field *fields, size_t n)
{
    ddb_log_format fmt = arg ? *(const ddb_log_format *)arg : DDB_LOG_LOGFMT;
    line l = { .len = 0, .cap = sizeof l.stack };
    l.p = l.stack;
    char num[24];
    if (!message)
        message = "";
    if (fmt == DDB_LOG_JSON) {
        puts_(&l, "{\"ts\":\"");
        put_timestamp(&l);
        puts_(&l, "\",\"level\":\"");
        puts_(&l, ddb_log_level_name(level));
        putc_(&l, '"');
        if (event_id != 0) {
            snprintf(num, sizeof num, "%d", event_id);
            puts_(&l, ",\"event\":");
            puts_(&l, num);
        }
        if (category) {
            puts_(&l, ",\"category\":\"");
            put_escaped(&l, category);
            putc_(&l, '"');
        }
        puts_(&l, ",\"msg\":\"");
        put_escaped(&l, message);
        putc_(&l, '"');
        for (size_t i = 0; fields && i < n; i++) {
            if (!fields[i].key)
                continue;
            puts_(&l, ",\"");
            put_escaped(&l, fields[i].key);
            puts_(&l, "\":");
            if (fields[i].value) {
                putc_(&l, '"');
                put_escaped(&l, fields[i].value);
                putc_(&l, '"');
            } else {
                puts_(&l, "null");
            }
        }
        puts_(&l, "}\n");
    } else {
        puts_(&l, "ts=");
        put_timestamp(&l);
        puts_(&l, " level=");
        puts_(&l, ddb_log_level_name(level));
        if (event_id != 0) {
            snprintf(num, sizeof num, "%d", event_id);
            puts_(&l, " event=");
            puts_(&l, num);
        }
        if (category) {
            puts_(&l, " category=");
            put_logfmt_value(&l, category);
        }
        puts_(&l, " msg=");
        put_logfmt_value(&l, message);
        for (size_t i = 0; fields && i < n; i++) {
            if (!fields[i].key)
                continue;
            putc_(&l, ' ');
            put_logfmt_key(&l, fields[i].key);
            putc_(&l, '=');
            put_logfmt_value(&l, fields[i].value ? fields[i].value : "");
        }
        putc_(&l, '\n');
    }
    /* A line cut short by a failed allocation still ends with a newline. */
    if (l.len > 0 && l.p[l.len - 1] != '\n')
        l.p[l.len - 1] = '\n';
    write_all(STDERR_FILENO, l.p, l.len);
    if (l.p != l.stack)
        free(l.p);
}
