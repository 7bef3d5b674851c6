/* metrics.c: fakedb's own metrics, for looking at the load a CI run puts on it: requests
 * by operation and status, errors by type, a latency histogram, faults fired by kind,
 * and at scrape time the items and bytes of each table and the open connections. The
 * request path only adds to atomic counters (an error also takes a short lock of its
 * own); GET /fake/metrics renders them in Prometheus's text format 0.0.4. */
#include "protocol.h"

#include <buf.h>
#include <utf8.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The histogram's upper bounds in ns, and as Prometheus writes them (le="..."): finer
 * than Prometheus's default below 5 ms, where fakedb's answers are. */
static const uint64_t k_bounds_ns[FDB_DURATION_BUCKETS] = {
    100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000,
    50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000u, 5000000000u,
    10000000000u,
};
static const char *const k_bounds_text[FDB_DURATION_BUCKETS] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
};

/* Named as the admin endpoint /fake/faults names them. */
static const char *const k_fault_kinds[FAKEDB_FAULT_LOST_REQUEST + 1] = {
    [FAKEDB_FAULT_ERROR] = "error", [FAKEDB_FAULT_DELAY] = "delay",
    [FAKEDB_FAULT_LOST_RESPONSE] = "lost_response", [FAKEDB_FAULT_UNPROCESSED] = "unprocessed",
    [FAKEDB_FAULT_LOST_REQUEST] = "lost_request",
};

void fakedb__metrics_init(fakedb__metrics *m)
{
    pthread_mutex_init(&m->error_lock, NULL);
}

void fakedb__metrics_cleanup(fakedb__metrics *m)
{
    for (fakedb__error_count *e = m->errors, *n; e; e = n) {
        n = e->next;
        free(e);
    }
    m->errors = NULL;
    pthread_mutex_destroy(&m->error_lock);
}

uint64_t fakedb__metrics_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void add(unsigned long *counter, unsigned long n)
{
    __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static unsigned long load(const unsigned long *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

void fakedb__metrics_request(fakedb__metrics *m, int op, int status, const char *error_type,
                             uint64_t ns)
{
    if (op < 0 || op > FDB_OP_COUNT)
        op = FDB_OP_COUNT;
    int slot = status >= 100 && status <= 599 ? 1 + status - 100 : 0;
    add(&m->requests[op][slot], 1);
    int b = 0;
    while (b < FDB_DURATION_BUCKETS && ns > k_bounds_ns[b])
        b++;
    add(&m->duration[op][b], 1);
    __atomic_fetch_add(&m->duration_ns[op], ns, __ATOMIC_RELAXED);
    if (!error_type || !error_type[0])
        return;
    /* Errors are few kinds: a short list, searched under its own lock. */
    pthread_mutex_lock(&m->error_lock);
    fakedb__error_count *e = m->errors;
    while (e && (e->op != op || strcmp(e->type, error_type)))
        e = e->next;
    if (!e && (e = calloc(1, sizeof *e)) != NULL) {
        e->op = op;
        fakedb__copy_str(e->type, sizeof e->type, error_type);
        e->next = m->errors;
        m->errors = e;
    }
    if (e)
        e->n++;
    pthread_mutex_unlock(&m->error_lock);
}

void fakedb__metrics_fault(fakedb__metrics *m, fakedb_fault_kind kind)
{
    if (kind >= FAKEDB_FAULT_ERROR && kind <= FAKEDB_FAULT_LOST_REQUEST)
        add(&m->faults[kind], 1);
}

/* A label value as the text format wants it: backslash, double quote and line feed
 * escaped; a byte that is not part of well-formed UTF-8 becomes U+FFFD, so that a
 * scraper never meets invalid text. */
static void put_label(dl_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    while (n > 0) {
        size_t k = dl__utf8_seq(p, n);
        if (k == 0) {
            dl__buf_puts(b, "\xEF\xBF\xBD");
            k = 1;
        } else if (*p == '\\') {
            dl__buf_puts(b, "\\\\");
        } else if (*p == '"') {
            dl__buf_puts(b, "\\\"");
        } else if (*p == '\n') {
            dl__buf_puts(b, "\\n");
        } else {
            dl__buf_put(b, p, k);
        }
        p += k;
        n -= k;
    }
}

char *fakedb__metrics_escape(const char *s)
{
    dl_buf b = { 0 };
    dl__buf_puts(&b, "");
    put_label(&b, s ? s : "");
    return dl__buf_take(&b, NULL);
}

static void put_fmt(dl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_fmt(dl_buf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        dl__buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void head(dl_buf *b, const char *name, const char *type, const char *help)
{
    put_fmt(b, "# HELP %s ", name);
    dl__buf_puts(b, help);
    put_fmt(b, "\n# TYPE %s %s\n", name, type);
}

static const char *op_label(int op)
{
    return op < FDB_OP_COUNT ? fakedb__op_name(op) : "unknown";
}

static void put_requests(dl_buf *b, const fakedb__metrics *m)
{
    head(b, "fakedb_requests_total", "counter",
         "DynamoDB API requests answered, by operation and HTTP status (\"none\": the "
         "connection was closed unanswered by a lost_response or lost_request fault).");
    for (int op = 0; op <= FDB_OP_COUNT; op++) {
        for (int slot = 0; slot < FDB_STATUS_SLOTS; slot++) {
            unsigned long n = load(&m->requests[op][slot]);
            if (!n)
                continue;
            dl__buf_puts(b, "fakedb_requests_total{operation=\"");
            put_label(b, op_label(op));
            if (slot)
                put_fmt(b, "\",status=\"%d\"} %lu\n", slot - 1 + 100, n);
            else
                put_fmt(b, "\",status=\"none\"} %lu\n", n);
        }
    }
}

static void put_errors(dl_buf *b, fakedb__metrics *m)
{
    head(b, "fakedb_request_errors_total", "counter",
         "DynamoDB API requests answered with an error, by operation and error type (the "
         "__type after its namespace).");
    pthread_mutex_lock(&m->error_lock);
    for (const fakedb__error_count *e = m->errors; e; e = e->next) {
        dl__buf_puts(b, "fakedb_request_errors_total{operation=\"");
        put_label(b, op_label(e->op));
        dl__buf_puts(b, "\",error_type=\"");
        put_label(b, e->type);
        put_fmt(b, "\"} %lu\n", e->n);
    }
    pthread_mutex_unlock(&m->error_lock);
}

static void put_durations(dl_buf *b, const fakedb__metrics *m)
{
    head(b, "fakedb_request_duration_seconds", "histogram",
         "Time fakedb took to handle a DynamoDB API request, from its body received to its "
         "answer ready (a delay fault's wait not included), by operation.");
    for (int op = 0; op <= FDB_OP_COUNT; op++) {
        unsigned long counts[FDB_DURATION_BUCKETS + 1], total = 0;
        for (int i = 0; i <= FDB_DURATION_BUCKETS; i++)
            total += counts[i] = load(&m->duration[op][i]);
        if (!total)
            continue;
        /* The count is the sum of the buckets read, so +Inf and _count always agree,
         * even while requests are counted during the scrape. */
        unsigned long cum = 0;
        for (int i = 0; i <= FDB_DURATION_BUCKETS; i++) {
            cum += counts[i];
            dl__buf_puts(b, "fakedb_request_duration_seconds_bucket{operation=\"");
            put_label(b, op_label(op));
            put_fmt(b, "\",le=\"%s\"} %lu\n", i < FDB_DURATION_BUCKETS ? k_bounds_text[i] : "+Inf", cum);
        }
        uint64_t ns = __atomic_load_n(&m->duration_ns[op], __ATOMIC_RELAXED);
        dl__buf_puts(b, "fakedb_request_duration_seconds_sum{operation=\"");
        put_label(b, op_label(op));
        put_fmt(b, "\"} %" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000u, ns % 1000000000u);
        dl__buf_puts(b, "fakedb_request_duration_seconds_count{operation=\"");
        put_label(b, op_label(op));
        put_fmt(b, "\"} %lu\n", total);
    }
}

typedef struct tables_ctx {
    dl_buf *b;
    int g;
} tables_ctx;

/* One database's tables for gauge ctx->g; with separate databases each line names the
 * database's access key and region too. */
static void put_store_tables(void *arg, fakedb__store *st, const char *key, const char *region)
{
    static const char *const names[2] = { "fakedb_table_items", "fakedb_table_bytes" };
    tables_ctx *c = arg;
    pthread_mutex_lock(&st->lock);
    for (const fakedb__table *t = st->tables; t; t = t->next) {
        put_fmt(c->b, "%s{", names[c->g]);
        if (key) {
            dl__buf_puts(c->b, "access_key=\"");
            put_label(c->b, key);
            dl__buf_puts(c->b, "\",region=\"");
            put_label(c->b, region);
            dl__buf_puts(c->b, "\",");
        }
        dl__buf_puts(c->b, "table=\"");
        put_label(c->b, t->name);
        put_fmt(c->b, "\"} %" PRId64 "\n", c->g ? t->size_bytes : t->item_count);
    }
    pthread_mutex_unlock(&st->lock);
}

static void put_tables(dl_buf *b, fakedb *db)
{
    static const char *const names[2] = { "fakedb_table_items", "fakedb_table_bytes" };
    static const char *const helps[2] = {
        "Items in a table now (DescribeTable's ItemCount, kept up to date).",
        "Bytes of the items in a table now, as DynamoDB sizes items (TableSizeBytes).",
    };
    for (int g = 0; g < 2; g++) {
        head(b, names[g], "gauge", helps[g]);
        tables_ctx c = { b, g };
        fakedb__databases_each(db, put_store_tables, &c);
    }
}

/* One database's line of fakedb_deleted_items_pending. */
static void put_store_pending(void *arg, fakedb__store *st, const char *key, const char *region)
{
    dl_buf *b = arg;
    pthread_mutex_lock(&st->lock);
    int64_t n = fakedb__purge_pending(st);
    pthread_mutex_unlock(&st->lock);
    dl__buf_puts(b, "fakedb_deleted_items_pending");
    if (key) {
        dl__buf_puts(b, "{access_key=\"");
        put_label(b, key);
        dl__buf_puts(b, "\",region=\"");
        put_label(b, region);
        dl__buf_puts(b, "\"}");
    }
    put_fmt(b, " %" PRId64 "\n", n);
}

static void put_faults(dl_buf *b, const fakedb__metrics *m)
{
    head(b, "fakedb_faults_fired_total", "counter",
         "Times an injected fault fired (a request matched it), by the fault's kind.");
    for (int k = FAKEDB_FAULT_ERROR; k <= FAKEDB_FAULT_LOST_REQUEST; k++) {
        dl__buf_puts(b, "fakedb_faults_fired_total{kind=\"");
        put_label(b, k_fault_kinds[k]);
        put_fmt(b, "\"} %lu\n", load(&m->faults[k]));
    }
}

char *fakedb__metrics_text(fakedb *db, unsigned open_connections, size_t *len)
{
    dl_buf b = { 0 };
    put_requests(&b, &db->metrics);
    put_errors(&b, &db->metrics);
    put_durations(&b, &db->metrics);
    put_tables(&b, db);
    head(&b, "fakedb_deleted_items_pending", "gauge",
         "Items of deleted tables not yet removed (DeleteTable answers at once; the rows go in the background).");
    fakedb__databases_each(db, put_store_pending, &b);
    put_faults(&b, &db->metrics);
    head(&b, "fakedb_open_connections", "gauge",
         "Client connections open now (the scrape's own included).");
    put_fmt(&b, "fakedb_open_connections %u\n", open_connections);
    return dl__buf_take(&b, len);
}

void fakedb__recent_add(fakedb__recent *r, int op, int status, const char *table,
                        const char *error_type, uint64_t now_ns, uint64_t latency_ns)
{
    size_t tn = table ? strnlen(table, sizeof r->e[0].table - 1) : 0;
    size_t en = error_type ? strnlen(error_type, sizeof r->e[0].error - 1) : 0;
    pthread_mutex_lock(&r->lock);
    fakedb__recent_entry *e = &r->e[r->seq % FDB_RECENT_SLOTS];
    uint64_t seq = r->seq + 1;
    e->seq = seq;
    e->op = op;
    e->status = status;
    e->mono_ns = now_ns;
    e->latency_ns = latency_ns;
    memcpy(e->table, table ? table : "", tn);
    e->table[tn] = 0;
    memcpy(e->error, error_type ? error_type : "", en);
    e->error[en] = 0;
    /* atomic: the server's ticker reads it without the lock, for console long polls */
    __atomic_store_n(&r->seq, seq, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&r->lock);
}
