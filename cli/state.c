/* state.c: `dynalock state NAME` and `dynalock list`, lock state for operators: a
 * readable table, or JSON with --json. Both read through libddb_coord
 * (ddb_lock_table_get_state, ddb_lock_table_list), which knows the lock item; `list`
 * keeps only lock items, so it works on a single-table design that holds other entities
 * too. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "utf8.h"

void cli_json_string(const char *s)
{
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", stdout); break;
        case '\\': fputs("\\\\", stdout); break;
        case '\n': fputs("\\n", stdout); break;
        case '\r': fputs("\\r", stdout); break;
        case '\t': fputs("\\t", stdout); break;
        default:
            if (*p < 0x20)
                printf("\\u%04x", *p);
            else
                putchar(*p);
        }
    }
    putchar('"');
}

char *cli_safe_text(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    if (!size)
        return buf;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    for (size_t i = 0; i < n;) {
        size_t k = dl__utf8_seq(p + i, n - i);
        /* C1 controls are U+0080..U+009F: C2 80..C2 9F in UTF-8. */
        bool control = p[i] < 0x20 || p[i] == 0x7F || k == 0 ||
                       (k == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0);
        size_t bytes = k ? k : 1;
        size_t need = control ? 4 * bytes : bytes;
        if (o + need >= size)
            break;
        if (control) {
            for (size_t j = 0; j < bytes; j++)
                o += (size_t)snprintf(buf + o, size - o, "\\x%02x", p[i + j]);
        } else {
            memcpy(buf + o, p + i, bytes);
            o += bytes;
        }
        i += bytes;
    }
    buf[o] = '\0';
    return buf;
}

size_t cli_text_chars(const char *s)
{
    size_t chars = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        chars += (*p & 0xC0) != 0x80;
    return chars;
}

int cli_cmd_state(cli_opts *o)
{
    const char *name = o->args[0];
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, true);
    if (rc)
        return rc;
    ddb_lock_state st;
    ddb_error err;
    ddb_error_clear(&err);
    char what[512];
    snprintf(what, sizeof what, "cannot read lock '%s' on table '%s'", name, o->table);
    cli_req req;
    cli_req_begin(&req, "GetItem", what, false);
    rc = ddb_lock_table_get_state(c.locks, name, &st, cli_stop(), &err);
    if (rc) {
        rc = cli_req_fail(&req, rc, &err);
        cli_conn_close(&c);
        return rc;
    }
    cli_req_end(&req);
    char lease[32] = "-";
    if (st.lease_ms > 0)
        cli_format_duration(st.lease_ms, lease, sizeof lease);
    if (o->json) {
        fputs("{\"name\":", stdout);
        cli_json_string(name);
        fputs(",\"table\":", stdout);
        cli_json_string(o->table);
        printf(",\"exists\":%s,\"held\":%s,\"holder\":", st.exists ? "true" : "false",
               st.is_held ? "true" : "false");
        cli_json_string(st.holder_label[0] ? st.holder_label : NULL);
        printf(",\"fencing_token\":%lld,\"lease_ms\":%lld}\n", (long long)st.fencing_token,
               (long long)st.lease_ms);
    } else {
        /* 4 bytes of escape for each byte of a label of the longest. */
        char safe[4 * DDB_HOLDER_LABEL_MAX_BYTES + 1];
        printf("lock     %s\n", cli_safe_text(name, safe, sizeof safe));
        printf("table    %s\n", cli_safe_text(o->table, safe, sizeof safe));
        printf("state    %s\n", !st.exists ? "no item (free; the next token is 1)"
                                 : st.is_held ? "held" : "free");
        if (st.exists) {
            printf("holder   %s\n",
                   st.holder_label[0] ? cli_safe_text(st.holder_label, safe, sizeof safe)
                                      : "-");
            printf("token    %lld\n", (long long)st.fencing_token);
            printf("lease    %s\n", lease);
        }
    }
    cli_conn_close(&c);
    return fflush(stdout) == 0 ? 0 : CLI_EXIT_IOERR;
}

/* ------------------------------------------------------------------------ list */

typedef struct lock_row {
    char *name;
    char *holder;
    int64_t token;
    int64_t lease_ms;
    bool held;
} lock_row;

typedef struct lock_rows {
    lock_row *rows;
    size_t n, cap;
} lock_rows;

static void rows_free(lock_rows *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->rows[i].name);
        free(r->rows[i].holder);
    }
    free(r->rows);
}

static int rows_add(lock_rows *r, const char *name, const ddb_lock_state *st, bool json)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        lock_row *more = realloc(r->rows, cap * sizeof *more);
        if (!more)
            return -1;
        r->rows = more;
        r->cap = cap;
    }
    lock_row *row = &r->rows[r->n];
    memset(row, 0, sizeof *row);
    row->name = strdup(name);
    row->holder = st->holder_label[0] ? strdup(st->holder_label) : NULL;
    if (!json) {
        /* Human output: the text as it will be printed, escaped. */
        char safe[4 * DDB_HOLDER_LABEL_MAX_BYTES + 1];
        if (row->name) {
            char *n = strdup(cli_safe_text(row->name, safe, sizeof safe));
            free(row->name);
            row->name = n;
        }
        if (row->holder) {
            char *h = strdup(cli_safe_text(row->holder, safe, sizeof safe));
            free(row->holder);
            row->holder = h;
        }
    }
    if (!row->name || (st->holder_label[0] && !row->holder)) {
        free(row->name);
        free(row->holder);
        return -1;
    }
    row->token = st->fencing_token;
    row->lease_ms = st->lease_ms;
    row->held = st->is_held;
    r->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const lock_row *)a)->name, ((const lock_row *)b)->name);
}

static void print_rows(const lock_rows *r, bool json)
{
    if (json) {
        putchar('[');
        for (size_t i = 0; i < r->n; i++) {
            const lock_row *row = &r->rows[i];
            fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
            cli_json_string(row->name);
            printf(",\"held\":%s,\"holder\":", row->held ? "true" : "false");
            cli_json_string(row->holder);
            printf(",\"fencing_token\":%lld,\"lease_ms\":%lld}", (long long)row->token,
                   (long long)row->lease_ms);
        }
        puts("]");
        return;
    }
    int wname = 4, wholder = 6;
    for (size_t i = 0; i < r->n; i++) {
        int n = (int)cli_text_chars(r->rows[i].name);
        int h = r->rows[i].holder ? (int)cli_text_chars(r->rows[i].holder) : 1;
        wname = n > wname ? n : wname;
        wholder = h > wholder ? h : wholder;
    }
    printf("%-*s  %-*s  %6s  %6s  %s\n", wname, "NAME", wholder, "HOLDER", "TOKEN", "LEASE",
           "HELD");
    for (size_t i = 0; i < r->n; i++) {
        const lock_row *row = &r->rows[i];
        char lease[32] = "-";
        if (row->lease_ms > 0)
            cli_format_duration(row->lease_ms, lease, sizeof lease);
        /* Padded by characters: printf's widths count bytes. */
        const char *holder = row->holder ? row->holder : "-";
        printf("%s%*s  %s%*s  %6lld  %6s  %s\n", row->name,
               wname - (int)cli_text_chars(row->name), "", holder,
               wholder - (int)cli_text_chars(holder), "", (long long)row->token, lease,
               row->held ? "yes" : "no");
    }
}

int cli_cmd_list(cli_opts *o)
{
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, true);
    if (rc)
        return rc;
    ddb_error err;
    ddb_error_clear(&err);
    lock_rows rows = {0};
    char what[512];
    snprintf(what, sizeof what, "cannot list the locks of table '%s'", o->table);
    cli_req req;
    cli_req_begin(&req, "Scan", what, false);
    ddb_lock_list *list = ddb_lock_table_list(c.locks, NULL, cli_stop(), &err);
    rc = list ? 0 : (err.code ? err.code : DDB_ENOMEM);
    while (rc == 0) {
        const char *name;
        ddb_lock_state st;
        int more = ddb_lock_list_next(list, &name, &st, &err);
        if (more <= 0) {
            rc = more;
            break;
        }
        if (rows_add(&rows, name, &st, o->json) != 0)
            rc = DDB_ENOMEM;
    }
    int status = 0;
    if (rc != 0) {
        status = cli_req_fail(&req, rc, &err);
    } else {
        cli_req_end(&req);
        if (rows.n)
            qsort(rows.rows, rows.n, sizeof *rows.rows, by_name);
        print_rows(&rows, o->json);
        if (fflush(stdout) != 0)
            status = CLI_EXIT_IOERR;
    }
    rows_free(&rows);
    ddb_lock_list_free(list);
    cli_conn_close(&c);
    return status;
}
