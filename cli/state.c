/* state.c: `dynalock state NAME` and `dynalock list`, lock state for operators: a
 * readable table, or JSON with --json. Both read through libddb_coord
 * (ddb_lock_table_get_state, ddb_lock_table_list), which knows the lock item; `list`
 * keeps only lock items, so it works on a single-table design that holds other entities
 * too. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The JSON object of a lock's state, without a new line. */
static void print_state_json(const char *name, const char *table, const ddb_lock_state *st,
                             const char *time, int slot)
{
    fputs("{", stdout);
    if (time)
        printf("\"time\":\"%s\",", time);
    fputs("\"name\":", stdout);
    cli_json_string(name);
    fputs(",\"table\":", stdout);
    cli_json_string(table);
    printf(",\"exists\":%s,\"held\":%s,\"holder\":", st->exists ? "true" : "false",
           st->is_held ? "true" : "false");
    cli_json_string(st->holder_label[0] ? st->holder_label : NULL);
    fputs(",\"owner\":", stdout);
    cli_json_string(st->owner[0] ? st->owner : NULL);
    fputs(",\"record_version\":", stdout);
    cli_json_string(st->record_version[0] ? st->record_version : NULL);
    printf(",\"fencing_token\":%lld,\"lease_ms\":%lld,\"value\":", (long long)st->fencing_token,
           (long long)st->lease_ms);
    cli_json_string(st->has_value ? st->value : NULL);
    printf(",\"unchanged_ms\":%lld", (long long)st->unchanged_ms);
    if (slot >= 0)
        printf(",\"slot\":%d", slot);
    putchar('}');
}

/* "15s (first read)", or "45s, longer than its lease: the holder has stopped renewing". */
static void describe_unchanged(const ddb_lock_state *st, int64_t observed_ms, char *buf,
                               size_t size)
{
    char d[32];
    cli_format_duration(st->unchanged_ms, d, sizeof d);
    if (st->unchanged_ms > st->lease_ms)
        snprintf(buf, size, "%s, longer than its lease: the holder has stopped renewing", d);
    else if (observed_ms == 0)
        snprintf(buf, size, "%s (one read; --for DURATION reads for longer)", d);
    else
        snprintf(buf, size, "%s", d);
}

static int state_slots(cli_opts *o);

int cli_cmd_state(cli_opts *o)
{
    if (o->slots)
        return state_slots(o);
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
    ddb_clock *clock = ddb_client_clock(c.client);
    int64_t start = ddb_clock_mono_ns(clock), observed_ms = 0;
    for (;;) {
        cli_req req;
        cli_req_begin(&req, "GetItem", what, false);
        rc = ddb_lock_table_get_state(c.locks, name, &st, cli_stop(), &err);
        if (rc) {
            rc = cli_req_fail(&req, rc, &err);
            cli_conn_close(&c);
            return rc;
        }
        cli_req_end(&req);
        /* --for: read again every third of the lease (a second when free) until it has
         * passed, so that unchanged_ms covers it. */
        observed_ms = (ddb_clock_mono_ns(clock) - start) / 1000000;
        int64_t left = o->for_ms - observed_ms;
        if (left <= 0)
            break;
        int64_t wait = st.is_held ? st.lease_ms / 3 : 1000;
        if (wait > left)
            wait = left;
        if (ddb_clock_sleep(clock, wait, cli_stop()) == DDB_ECANCELED)
            break; /* a signal: show what was seen so far */
    }
    char lease[32] = "-";
    if (st.lease_ms > 0)
        cli_format_duration(st.lease_ms, lease, sizeof lease);
    if (o->json) {
        print_state_json(name, o->table, &st, NULL, -1);
        putchar('\n');
    } else {
        /* 4 bytes of escape for each byte of the longest value. */
        char safe[4 * DDB_LEASE_VALUE_MAX_BYTES + 1];
        printf("lock       %s\n", cli_safe_text(name, safe, sizeof safe));
        printf("table      %s\n", cli_safe_text(o->table, safe, sizeof safe));
        printf("state      %s\n", !st.exists ? "no item (free; the next token is 1)"
                                 : st.is_held ? "held" : "free");
        if (st.exists) {
            printf("token      %lld\n", (long long)st.fencing_token);
        }
        if (st.is_held) {
            printf("holder     %s\n",
                   st.holder_label[0] ? cli_safe_text(st.holder_label, safe, sizeof safe)
                                      : "-");
            printf("owner      %s\n", cli_safe_text(st.owner, safe, sizeof safe));
            printf("lease      %s\n", lease);
            printf("value      %s\n",
                   st.has_value ? cli_safe_text(st.value, safe, sizeof safe) : "-");
            char unchanged[128];
            describe_unchanged(&st, observed_ms, unchanged, sizeof unchanged);
            printf("unchanged  %s\n", unchanged);
        }
    }
    cli_conn_close(&c);
    if (fflush(stdout) != 0)
        return CLI_EXIT_IOERR;
    return cli_stop_signal() ? 128 + cli_stop_signal() : 0;
}

/* ----------------------------------------------------------------------- watch */

typedef struct watch_ctx {
    cli_opts *o;
    ddb_clock *clock;
    long long printed;
    bool write_failed;
} watch_ctx;

static int watch_print(void *arg, const char *name, const ddb_lock_state *st)
{
    watch_ctx *w = arg;
    char time[40];
    int64_t ms = ddb_clock_wall_ms(w->clock);
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(time, sizeof time, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(time + n, sizeof time - n, ".%03dZ", (int)(ms % 1000));
    if (w->o->json) {
        print_state_json(name, w->o->table, st, time, -1);
        putchar('\n');
    } else {
        char safe[4 * DDB_LEASE_VALUE_MAX_BYTES + 1];
        printf("%s  %s  token %lld", time,
               !st->exists ? "no-item" : st->is_held ? "held" : "free",
               (long long)st->fencing_token);
        if (st->is_held) {
            char lease[32];
            cli_format_duration(st->lease_ms, lease, sizeof lease);
            printf("  holder %s",
                   st->holder_label[0] ? cli_safe_text(st->holder_label, safe, sizeof safe)
                                       : "-");
            printf("  value %s",
                   st->has_value ? cli_safe_text(st->value, safe, sizeof safe) : "-");
            printf("  lease %s  owner %s", lease, cli_safe_text(st->owner, safe, sizeof safe));
        }
        putchar('\n');
    }
    if (fflush(stdout) != 0) {
        w->write_failed = true;
        return 1;
    }
    return w->o->count && ++w->printed >= w->o->count;
}

int cli_cmd_watch(cli_opts *o)
{
    const char *name = o->args[0];
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, true);
    if (rc)
        return rc;
    ddb_error err;
    ddb_error_clear(&err);
    char what[512];
    snprintf(what, sizeof what, "cannot watch lock '%s' on table '%s'", name, o->table);
    watch_ctx w = {.o = o, .clock = ddb_client_clock(c.client)};
    /* Named for the watchdog: the watch is a read, whatever it waits for. */
    cli_req req;
    cli_req_begin(&req, "GetItem", what, false);
    rc = ddb_lock_table_watch(c.locks, name, NULL, watch_print, &w, cli_stop(), &err);
    int status = 0;
    if (w.write_failed) {
        cli_req_end(&req);
        cli_error("cannot write to standard output");
        status = CLI_EXIT_IOERR;
    } else if (rc == DDB_ECANCELED && cli_stop_signal()) {
        cli_req_end(&req); /* interrupted: the way a watch ends */
    } else if (rc != 0) {
        status = cli_req_fail(&req, rc, &err);
    } else {
        cli_req_end(&req);
    }
    cli_conn_close(&c);
    return status;
}

/* ------------------------------------------------------------------------ list */

typedef struct lock_row {
    char *name;
    char *holder;
    char *value;
    char *owner;
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
        free(r->rows[i].value);
        free(r->rows[i].owner);
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
    row->value = st->has_value ? strdup(st->value) : NULL;
    row->owner = st->owner[0] ? strdup(st->owner) : NULL;
    if (!json) {
        /* Human output: the text as it will be printed, escaped. */
        char safe[4 * DDB_LEASE_VALUE_MAX_BYTES + 1];
        char **texts[] = {&row->name, &row->holder, &row->value};
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
            if (!*texts[i])
                continue;
            char *t = strdup(cli_safe_text(*texts[i], safe, sizeof safe));
            free(*texts[i]);
            *texts[i] = t;
            if (!t)
                break;
        }
    }
    if (!row->name || (st->holder_label[0] && !row->holder) ||
        (st->has_value && !row->value) || (st->owner[0] && !row->owner)) {
        free(row->name);
        free(row->holder);
        free(row->value);
        free(row->owner);
        return -1;
    }
    row->token = st->fencing_token;
    row->lease_ms = st->lease_ms;
    row->held = st->is_held;
    r->n++;
    return 0;
}

/* By name, and the slots of one name by their number (job#slot2 before job#slot10). */
static int by_name(const void *a, const void *b)
{
    const char *x = ((const lock_row *)a)->name, *y = ((const lock_row *)b)->name;
    size_t xl, yl;
    int xk, yk;
    if (ddb_lock_slot_parse(x, &xl, &xk) && ddb_lock_slot_parse(y, &yl, &yk) && xl == yl &&
        memcmp(x, y, xl) == 0)
        return (xk > yk) - (xk < yk);
    return strcmp(x, y);
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
            fputs(",\"owner\":", stdout);
            cli_json_string(row->owner);
            printf(",\"fencing_token\":%lld,\"lease_ms\":%lld,\"value\":", (long long)row->token,
                   (long long)row->lease_ms);
            cli_json_string(row->value);
            /* A slot's lock (run --slots): the name it is a slot of, and its number. */
            size_t base;
            int slot;
            if (ddb_lock_slot_parse(row->name, &base, &slot)) {
                char *of = strndup(row->name, base);
                fputs(",\"slot_of\":", stdout);
                cli_json_string(of ? of : "");
                printf(",\"slot\":%d", slot);
                free(of);
            }
            putchar('}');
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
    printf("%-*s  %-*s  %6s  %6s  %-4s  %s\n", wname, "NAME", wholder, "HOLDER", "TOKEN",
           "LEASE", "HELD", "VALUE");
    for (size_t i = 0; i < r->n; i++) {
        const lock_row *row = &r->rows[i];
        char lease[32] = "-";
        if (row->lease_ms > 0)
            cli_format_duration(row->lease_ms, lease, sizeof lease);
        /* Padded by characters: printf's widths count bytes. */
        const char *holder = row->holder ? row->holder : "-";
        printf("%s%*s  %s%*s  %6lld  %6s  %-4s  %s\n", row->name,
               wname - (int)cli_text_chars(row->name), "", holder,
               wholder - (int)cli_text_chars(holder), "", (long long)row->token, lease,
               row->held ? "yes" : "no", row->value ? row->value : "-");
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

/* ------------------------------------------------------------ state --slots */

/* `state --slots N NAME`: each slot's lock read once (a strongly consistent GetItem each),
 * a count of those held, and a row per slot as `list` shows it; or one JSON object. */
static int state_slots(cli_opts *o)
{
    const char *name = o->args[0];
    cli_conn c;
    int rc = cli_conn_open(&c, o, true, true);
    if (rc)
        return rc;
    ddb_lock_state *st = calloc((size_t)o->slots, sizeof *st);
    char (*names)[DDB_LOCK_NAME_SIZE] = calloc((size_t)o->slots, sizeof *names);
    lock_rows rows = {0};
    int held = 0, status = 0;
    if (!st || !names) {
        status = cli_fail("cannot read the slots", DDB_ENOMEM, NULL);
        goto out;
    }
    for (int k = 0; k < o->slots; k++) {
        ddb_error err;
        ddb_error_clear(&err);
        rc = ddb_lock_slot_name(name, k, names[k], sizeof names[k], &err);
        char what[512];
        snprintf(what, sizeof what, "cannot read lock '%s' on table '%s'", names[k], o->table);
        cli_req req;
        cli_req_begin(&req, "GetItem", what, false);
        if (rc == 0)
            rc = ddb_lock_table_get_state(c.locks, names[k], &st[k], cli_stop(), &err);
        if (rc) {
            status = cli_req_fail(&req, rc, &err);
            goto out;
        }
        cli_req_end(&req);
        held += st[k].is_held;
        if (!o->json && rows_add(&rows, names[k], &st[k], false) != 0) {
            status = cli_fail("cannot read the slots", DDB_ENOMEM, NULL);
            goto out;
        }
    }
    if (o->json) {
        fputs("{\"name\":", stdout);
        cli_json_string(name);
        fputs(",\"table\":", stdout);
        cli_json_string(o->table);
        printf(",\"slots\":%d,\"held\":%d,\"locks\":[", o->slots, held);
        for (int k = 0; k < o->slots; k++) {
            if (k)
                putchar(',');
            print_state_json(names[k], o->table, &st[k], NULL, k);
        }
        puts("]}");
    } else {
        char safe[4 * DDB_LOCK_NAME_SIZE + 1];
        printf("lock       %s\n", cli_safe_text(name, safe, sizeof safe));
        printf("table      %s\n", cli_safe_text(o->table, safe, sizeof safe));
        printf("slots      %d, %d held, %d free\n\n", o->slots, held, o->slots - held);
        print_rows(&rows, false);
    }
    if (fflush(stdout) != 0)
        status = CLI_EXIT_IOERR;
out:
    rows_free(&rows);
    free(names);
    free(st);
    cli_conn_close(&c);
    return status;
}
