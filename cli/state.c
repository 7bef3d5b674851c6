/* state.c: `dynalock state NAME` and `dynalock list`, lock state for operators: a
 * readable table, or JSON with --json. `list` scans the table for items whose _type is
 * LOCK, so it works on a single-table design that holds other entities too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dynalock/testing.h>

#include "cli.h"

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

int cli_cmd_state(cli_opts *o)
{
    const char *name = o->args[0];
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, false);
    if (rc)
        return rc;
    ddb_lock_state st;
    ddb_error err;
    ddb_error_clear(&err);
    char what[512];
    snprintf(what, sizeof what, "cannot read lock '%s' on table '%s'", name, o->table);
    cli_req req;
    cli_req_begin(&req, "GetItem", what, false);
    rc = cli_lock_read(c.table, name, cli_stop(), &st, &err);
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
        printf("lock     %s\n", name);
        printf("table    %s\n", o->table);
        printf("state    %s\n", !st.exists ? "no item (free; the next token is 1)"
                                 : st.is_held ? "held" : "free");
        if (st.exists) {
            printf("holder   %s\n", st.holder_label[0] ? st.holder_label : "-");
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

static int rows_add(lock_rows *r, const ddb_item *it, const char *pk)
{
    const char *key = ddb_item_get_s(it, pk);
    if (!key || strncmp(key, "LOCK#", 5) != 0)
        return 0;
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
    const char *holder = ddb_item_get_s(it, "holder");
    row->name = strdup(key + 5);
    row->holder = holder ? strdup(holder) : NULL;
    if (!row->name || (holder && !row->holder)) {
        free(row->name);
        free(row->holder);
        return -1;
    }
    ddb_item_get_i64(it, "fence", &row->token);
    ddb_item_get_i64(it, "leaseMs", &row->lease_ms);
    row->held = ddb_item_get(it, "owner") != NULL;
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
        int n = (int)strlen(r->rows[i].name);
        int h = r->rows[i].holder ? (int)strlen(r->rows[i].holder) : 1;
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
        printf("%-*s  %-*s  %6lld  %6s  %s\n", wname, row->name, wholder,
               row->holder ? row->holder : "-", (long long)row->token, lease,
               row->held ? "yes" : "no");
    }
}

int cli_cmd_list(cli_opts *o)
{
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, false);
    if (rc)
        return rc;
    static const char *const names[] = {"#t", "_type", NULL};
    ddb_item *values = ddb_item_new();
    ddb_error err;
    ddb_error_clear(&err);
    lock_rows rows = {0};
    ddb_pages *pages = NULL;
    char what[512];
    snprintf(what, sizeof what, "cannot list the locks of table '%s'", o->table);
    cli_req req;
    cli_req_begin(&req, "Scan", what, false);
    if (!values || ddb_item_set_s(values, ":lock", "LOCK") != 0) {
        rc = DDB_ENOMEM;
    } else {
        ddb_query_options q = {.filter = "#t = :lock", .names = names, .values = values,
                               .consistent_read = true, .cancel = cli_stop()};
        pages = ddb_table_scan(c.table, &q, NULL, &err);
        rc = pages ? 0 : (err.code ? err.code : DDB_ENOMEM);
    }
    while (rc == 0) {
        int more = ddb_pages_next(pages, &err);
        if (more < 0) {
            rc = more;
            break;
        }
        if (more == 0)
            break;
        for (size_t i = 0; i < ddb_pages_count(pages) && rc == 0; i++)
            if (rows_add(&rows, ddb_pages_item(pages, i), o->pk) != 0)
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
    ddb_pages_free(pages);
    ddb_item_free(values);
    cli_conn_close(&c);
    return status;
}
