/* otel.c: the exporter. The ddb_telemetry callbacks turn the library's per-client span
 * ids into OpenTelemetry spans (128-bit trace ids, 64-bit span ids, children in their
 * parent's trace), queue the ended ones (bounded: a full queue drops and counts) and
 * aggregate the metric points (cumulative sums and explicit-bucket histograms per
 * attribute set). One background thread waits on the exporter's clock (the client's, so
 * a fake clock moves the schedule and the backoff) and sends OTLP/HTTP JSON with
 * libcurl, retrying 429/502/503/504 and network failures with exponential backoff or
 * the collector's Retry-After. It is a thread of its own, not a task of the client's
 * scheduler: that scheduler is private to libddb, and its timer worker is shared by
 * every ddb_cancel_after of the clock, which an export that hangs must not hold up. */
#include "otel_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

enum { KIND_INTERNAL = 1, KIND_CLIENT = 3 };
#define OWN_SPAN_BIT (UINT64_C(1) << 63) /* ids of ddb_otel_span_start: never a client's */
#define CTX_KEEP 8192                     /* ended spans whose ids are kept for children and links */
#define MAX_BACKOFF_MS 30000

typedef struct attrv {
    char *key;
    int type;
    union { char *s; int64_t i; bool b; double d; } v;
} attrv;

typedef struct linkv {
    uint8_t trace[16], span[8];
} linkv;

typedef struct span {
    uint8_t trace[16], id[8], parent[8];
    bool has_parent;
    int kind;
    char *name;
    char *error;
    int64_t start_ns, end_ns;
    attrv *attrs;
    size_t n_attrs, cap_attrs;
    linkv *links;
    size_t n_links;
    uint64_t restore_parent; /* ddb_otel_span_start: the thread's parent before it */
} span;

/* What a library span id maps to: kept while the span lives and for CTX_KEEP ends after. */
typedef struct ctxe {
    uint64_t lib_id;
    uint8_t trace[16], id[8];
    span *live;
    struct ctxe *next;
} ctxe;

typedef struct stream {
    char *key; /* name, unit and the attributes, canonical */
    char *name, *unit;
    bool histogram;
    attrv *attrs;
    size_t n_attrs;
    double sum, min, max;
    uint64_t count;
    uint64_t *buckets; /* n_bounds + 1 */
    const double *bounds;
    size_t n_bounds;
} stream;

struct ddb_otel {
    ddb__otel_config cfg;
    ddb_telemetry tel;
    ddb_clock *clock;
    uint64_t uid;
    int64_t wall0_ns, mono0_ns;

    pthread_mutex_t mu; /* everything below but the sending state */
    uint64_t rng;
    ctxe **buckets;
    size_t n_buckets, n_ctx;
    uint64_t *ended; /* ring of CTX_KEEP lib ids */
    size_t ended_head, n_ended;
    span **queue; /* ring of max_queue ended spans */
    size_t q_head, q_len;
    stream **streams;
    size_t n_streams;
    uint64_t own_next;
    ddb_otel_stats st;
    bool stopping;
    ddb_cancel *stop, *wake;
    bool wake_set;
    int64_t next_span_ns, next_metric_ns;
    /* a span export waiting for its retry (background thread only, under mu) */
    char *retry_body;
    size_t retry_len, retry_spans;
    int retry_attempt;
    int64_t retry_due_ns;

    pthread_mutex_t send_mu; /* one export at a time; the curl handle */
    CURL *curl;
    pthread_t thread;
    bool thread_started;
    atomic_bool abort_sends; /* the exporter stops: the thread's transfer ends now */
};

static atomic_uint_fast64_t g_uid = 1;

static _Thread_local struct {
    uint64_t uid; /* of the exporter it was set for; 0: none */
    uint8_t trace[16], span[8];
} tl_remote;

/* ---------------------------------------------------------------- helpers */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void rand_bytes(ddb_otel *o, uint8_t *p, size_t n)
{
    do {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t r = splitmix(&o->rng);
            memcpy(p + i, &r, n - i < 8 ? n - i : 8);
        }
        bool zero = true;
        for (size_t i = 0; i < n; i++)
            zero &= p[i] == 0;
        if (!zero)
            return;
    } while (1);
}

static int64_t now_unix_ns(ddb_otel *o)
{
    return o->wall0_ns + (ddb_clock_mono_ns(o->clock) - o->mono0_ns);
}

static void attr_clear(attrv *a)
{
    free(a->key);
    if (a->type == DDB_ATTR_STR)
        free(a->v.s);
}

/* A metric stream and what it owns; its n_attrs attributes are set. */
static void stream_free(stream *s)
{
    for (size_t i = 0; i < s->n_attrs; i++)
        attr_clear(&s->attrs[i]);
    free(s->attrs);
    free(s->key);
    free(s->name);
    free(s->unit);
    free(s->buckets);
    free(s);
}

static bool attr_copy(attrv *d, const ddb_attr *s)
{
    d->key = strdup(s->key ? s->key : "");
    d->type = (int)s->type;
    if (s->type == DDB_ATTR_STR) {
        d->v.s = strdup(s->v.s ? s->v.s : "");
        if (!d->v.s) {
            free(d->key);
            return false;
        }
    } else if (s->type == DDB_ATTR_INT) {
        d->v.i = s->v.i;
    } else if (s->type == DDB_ATTR_BOOL) {
        d->v.b = s->v.b;
    } else {
        d->v.d = s->v.d;
    }
    if (!d->key) {
        if (s->type == DDB_ATTR_STR)
            free(d->v.s);
        return false;
    }
    return true;
}

static ddb_attr attr_view(const attrv *a)
{
    ddb_attr r = { .key = a->key, .type = DDB_ATTR_STR };
    r.type = a->type == DDB_ATTR_INT ? DDB_ATTR_INT
           : a->type == DDB_ATTR_BOOL ? DDB_ATTR_BOOL
           : a->type == DDB_ATTR_DOUBLE ? DDB_ATTR_DOUBLE : DDB_ATTR_STR;
    if (a->type == DDB_ATTR_STR)
        r.v.s = a->v.s;
    else if (a->type == DDB_ATTR_INT)
        r.v.i = a->v.i;
    else if (a->type == DDB_ATTR_BOOL)
        r.v.b = a->v.b;
    else
        r.v.d = a->v.d;
    return r;
}

static void span_free(span *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_attrs; i++)
        attr_clear(&s->attrs[i]);
    free(s->attrs);
    free(s->links);
    free(s->name);
    free(s->error);
    free(s);
}

/* ---------------------------------------------------- the span id table */

static size_t hslot(const ddb_otel *o, uint64_t id)
{
    return (size_t)((id * UINT64_C(0x9e3779b97f4a7c15)) >> 20) & (o->n_buckets - 1);
}

static ctxe *ctx_find(ddb_otel *o, uint64_t id)
{
    for (ctxe *e = o->buckets[hslot(o, id)]; e; e = e->next)
        if (e->lib_id == id)
            return e;
    return NULL;
}

static void ctx_remove(ddb_otel *o, uint64_t id)
{
    for (ctxe **pp = &o->buckets[hslot(o, id)]; *pp; pp = &(*pp)->next)
        if ((*pp)->lib_id == id) {
            ctxe *e = *pp;
            *pp = e->next;
            free(e);
            o->n_ctx--;
            return;
        }
}

static void ctx_grow(ddb_otel *o)
{
    size_t nb = o->n_buckets * 2;
    ctxe **b = calloc(nb, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    ctxe **old = o->buckets;
    size_t onb = o->n_buckets;
    o->buckets = b;
    o->n_buckets = nb;
    for (size_t i = 0; i < onb; i++)
        for (ctxe *e = old[i], *n; e; e = n) {
            n = e->next;
            size_t h = hslot(o, e->lib_id);
            e->next = b[h];
            b[h] = e;
        }
    free(old);
}

static ctxe *ctx_add(ddb_otel *o, uint64_t id)
{
    ctx_remove(o, id); /* a reused id (a new exporter's own counter never repeats) */
    ctxe *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->lib_id = id;
    if (o->n_ctx + 1 > 2 * o->n_buckets)
        ctx_grow(o);
    size_t h = hslot(o, id);
    e->next = o->buckets[h];
    o->buckets[h] = e;
    o->n_ctx++;
    return e;
}

static void ctx_ended(ddb_otel *o, uint64_t id)
{
    if (o->n_ended == CTX_KEEP) {
        ctx_remove(o, o->ended[o->ended_head]);
        o->ended_head = (o->ended_head + 1) % CTX_KEEP;
        o->n_ended--;
    }
    o->ended[(o->ended_head + o->n_ended) % CTX_KEEP] = id;
    o->n_ended++;
}

/* ------------------------------------------------------------- callbacks */

/* Under mu: asks the thread for an export before its schedule (a batch is full). Returns
 * the token to set once mu is released (NULL: nothing to do), so that no lock of the
 * library's is taken under mu. */
static ddb_cancel *wake_exporter(ddb_otel *o)
{
    if (o->wake_set || !o->wake)
        return NULL;
    o->wake_set = true;
    return ddb_cancel_ref(o->wake);
}

static void start_span(ddb_otel *o, uint64_t id, uint64_t parent_id, const char *name,
                       const uint64_t *links, size_t n_links, int kind, uint64_t restore)
{
    span *s = calloc(1, sizeof *s);
    if (!s)
        return;
    s->name = strdup(name ? name : "");
    s->links = n_links ? calloc(n_links, sizeof *s->links) : NULL;
    if (!s->name || (n_links && !s->links)) {
        span_free(s);
        return;
    }
    s->kind = kind ? kind : (name && strncmp(name, "Lock.", 5) == 0 ? KIND_INTERNAL : KIND_CLIENT);
    s->restore_parent = restore;
    int64_t t = now_unix_ns(o);
    pthread_mutex_lock(&o->mu);
    s->start_ns = t;
    ctxe *p = parent_id ? ctx_find(o, parent_id) : NULL;
    if (p) {
        memcpy(s->trace, p->trace, 16);
        memcpy(s->parent, p->id, 8);
        s->has_parent = true;
    } else if (!parent_id && tl_remote.uid == o->uid) {
        memcpy(s->trace, tl_remote.trace, 16);
        memcpy(s->parent, tl_remote.span, 8);
        s->has_parent = true;
    } else {
        rand_bytes(o, s->trace, 16); /* a root, or a parent forgotten long ago */
    }
    rand_bytes(o, s->id, 8);
    for (size_t i = 0; i < n_links; i++) {
        ctxe *l = ctx_find(o, links[i]);
        if (l) {
            memcpy(s->links[s->n_links].trace, l->trace, 16);
            memcpy(s->links[s->n_links].span, l->id, 8);
            s->n_links++;
        }
    }
    ctxe *e = ctx_add(o, id);
    if (!e) {
        pthread_mutex_unlock(&o->mu);
        span_free(s);
        return;
    }
    memcpy(e->trace, s->trace, 16);
    memcpy(e->id, s->id, 8);
    e->live = s;
    pthread_mutex_unlock(&o->mu);
}

static void cb_span_start(void *arg, uint64_t id, uint64_t parent_id, const char *name,
                          const uint64_t *links, size_t n_links)
{
    start_span(arg, id, parent_id, name, links, n_links, 0, 0);
}

static bool attrs_grow(span *s)
{
    size_t nc = s->cap_attrs ? 2 * s->cap_attrs : 8;
    attrv *na = realloc(s->attrs, nc * sizeof *na);
    if (!na)
        return false;
    s->attrs = na;
    s->cap_attrs = nc;
    return true;
}

static void cb_span_attr(void *arg, uint64_t id, const ddb_attr *a)
{
    ddb_otel *o = arg;
    if (!a || !a->key)
        return;
    pthread_mutex_lock(&o->mu);
    ctxe *e = ctx_find(o, id);
    span *s = e ? e->live : NULL;
    if (s) {
        size_t i = 0;
        while (i < s->n_attrs && strcmp(s->attrs[i].key, a->key) != 0)
            i++;
        attrv nv;
        if (attr_copy(&nv, a)) {
            if (i < s->n_attrs) {
                attr_clear(&s->attrs[i]);
                s->attrs[i] = nv;
            } else if (s->n_attrs < s->cap_attrs || attrs_grow(s)) {
                s->attrs[s->n_attrs++] = nv;
            } else {
                attr_clear(&nv);
            }
        }
    }
    pthread_mutex_unlock(&o->mu);
}

static void cb_span_end(void *arg, uint64_t id, const char *error_type)
{
    ddb_otel *o = arg;
    char *err = error_type ? strdup(error_type) : NULL;
    int64_t t = now_unix_ns(o);
    span *drop = NULL;
    ddb_cancel *wake = NULL;
    pthread_mutex_lock(&o->mu);
    ctxe *e = ctx_find(o, id);
    span *s = e ? e->live : NULL;
    if (!s) {
        pthread_mutex_unlock(&o->mu);
        free(err);
        return;
    }
    e->live = NULL;
    ctx_ended(o, id);
    s->end_ns = t;
    s->error = err;
    if (o->q_len == (size_t)o->cfg.max_queue) {
        o->st.spans_queue_full++;
        drop = s;
    } else {
        o->queue[(o->q_head + o->q_len) % (size_t)o->cfg.max_queue] = s;
        o->q_len++;
        if (o->q_len >= (size_t)o->cfg.batch && !o->retry_body)
            wake = wake_exporter(o); /* not while a retry waits: it would only spin */
    }
    pthread_mutex_unlock(&o->mu);
    if (wake) {
        ddb_cancel_set(wake);
        ddb_cancel_unref(wake);
    }
    span_free(drop);
}

/* ---- metrics */

static int attr_cmp(const void *a, const void *b)
{
    return strcmp(((const ddb_attr *)a)->key, ((const ddb_attr *)b)->key);
}

static bool is_histogram(const char *name, const char *unit)
{
    size_t n = strlen(name);
    return (unit && (strcmp(unit, "s") == 0 || strcmp(unit, "ms") == 0)) ||
           (n >= 9 && strcmp(name + n - 9, ".duration") == 0);
}

static void cb_metric(void *arg, const char *name, const char *unit, double value,
                      const ddb_attr *attrs, size_t n_attrs)
{
    ddb_otel *o = arg;
    if (!name || n_attrs > 64)
        return;
    ddb_attr sorted[64];
    size_t n = 0;
    for (size_t i = 0; i < n_attrs; i++)
        if (attrs[i].key)
            sorted[n++] = attrs[i];
    qsort(sorted, n, sizeof *sorted, attr_cmp);
    char kb[1024];
    dl_buf key = { 0 };
    dl__buf_init_storage(&key, kb, sizeof kb);
    dl__buf_puts(&key, name);
    dl__buf_putc(&key, '\x1f');
    dl__buf_puts(&key, unit ? unit : "");
    for (size_t i = 0; i < n; i++) {
        dl__buf_putc(&key, '\x1f');
        ddb__otel_json_attr(&key, &sorted[i]);
    }
    if (key.oom) {
        dl__buf_cleanup(&key);
        return;
    }
    pthread_mutex_lock(&o->mu);
    stream *s = NULL;
    for (size_t i = 0; i < o->n_streams && !s; i++)
        if (strcmp(o->streams[i]->key, key.p) == 0)
            s = o->streams[i];
    if (!s) {
        stream **ns = realloc(o->streams, (o->n_streams + 1) * sizeof *ns);
        if (ns)
            o->streams = ns;
        s = ns ? calloc(1, sizeof *s) : NULL;
        if (s) {
            s->key = strdup(key.p);
            s->name = strdup(name);
            s->unit = strdup(unit ? unit : "");
            s->histogram = is_histogram(name, unit);
            s->attrs = n ? calloc(n, sizeof *s->attrs) : NULL;
            s->bounds = ddb__otel_bounds(unit, &s->n_bounds);
            s->buckets = calloc(s->n_bounds + 1, sizeof *s->buckets);
            bool ok = s->key && s->name && s->unit && (!n || s->attrs) && s->buckets;
            for (size_t i = 0; ok && i < n; i++, s->n_attrs++)
                ok = attr_copy(&s->attrs[i], &sorted[i]);
            if (!ok) {
                stream_free(s);
                s = NULL;
            } else {
                o->streams[o->n_streams++] = s;
            }
        }
    }
    if (s) {
        if (s->count == 0 || value < s->min)
            s->min = value;
        if (s->count == 0 || value > s->max)
            s->max = value;
        s->count++;
        s->sum += value;
        if (s->histogram) {
            size_t b = 0;
            while (b < s->n_bounds && value > s->bounds[b])
                b++;
            s->buckets[b]++;
        }
    }
    pthread_mutex_unlock(&o->mu);
    dl__buf_cleanup(&key);
}

/* ------------------------------------------------------------- payloads */

static void put_scope(dl_buf *b)
{
    dl__buf_puts(b, "\"scope\":{\"name\":\"dynalock\",\"version\":");
    ddb__otel_json_str(b, ddb_version());
    dl__buf_putc(b, '}');
}

static void put_span(dl_buf *b, const span *s)
{
    char hx[33];
    dl__buf_puts(b, "{\"traceId\":\"");
    ddb__otel_hex(s->trace, 16, hx);
    dl__buf_puts(b, hx);
    dl__buf_puts(b, "\",\"spanId\":\"");
    ddb__otel_hex(s->id, 8, hx);
    dl__buf_puts(b, hx);
    dl__buf_putc(b, '"');
    if (s->has_parent) {
        dl__buf_puts(b, ",\"parentSpanId\":\"");
        ddb__otel_hex(s->parent, 8, hx);
        dl__buf_puts(b, hx);
        dl__buf_putc(b, '"');
    }
    dl__buf_puts(b, ",\"name\":");
    ddb__otel_json_str(b, s->name);
    dl__buf_puts(b, s->kind == KIND_CLIENT ? ",\"kind\":3" : ",\"kind\":1");
    dl__buf_puts(b, ",\"startTimeUnixNano\":");
    ddb__otel_json_u64s(b, (uint64_t)s->start_ns);
    dl__buf_puts(b, ",\"endTimeUnixNano\":");
    ddb__otel_json_u64s(b, (uint64_t)s->end_ns);
    dl__buf_puts(b, ",\"attributes\":[");
    bool has_error_type = false;
    for (size_t i = 0; i < s->n_attrs; i++) {
        if (i)
            dl__buf_putc(b, ',');
        ddb_attr a = attr_view(&s->attrs[i]);
        has_error_type |= strcmp(a.key, "error.type") == 0;
        ddb__otel_json_attr(b, &a);
    }
    if (s->error && !has_error_type) {
        ddb_attr a = { .key = "error.type", .type = DDB_ATTR_STR };
        a.v.s = s->error;
        if (s->n_attrs)
            dl__buf_putc(b, ',');
        ddb__otel_json_attr(b, &a);
    }
    dl__buf_putc(b, ']');
    if (s->n_links) {
        dl__buf_puts(b, ",\"links\":[");
        for (size_t i = 0; i < s->n_links; i++) {
            dl__buf_puts(b, i ? ",{\"traceId\":\"" : "{\"traceId\":\"");
            ddb__otel_hex(s->links[i].trace, 16, hx);
            dl__buf_puts(b, hx);
            dl__buf_puts(b, "\",\"spanId\":\"");
            ddb__otel_hex(s->links[i].span, 8, hx);
            dl__buf_puts(b, hx);
            dl__buf_puts(b, "\"}");
        }
        dl__buf_putc(b, ']');
    }
    if (s->error) {
        dl__buf_puts(b, ",\"status\":{\"code\":2,\"message\":");
        ddb__otel_json_str(b, s->error);
        dl__buf_putc(b, '}');
    }
    dl__buf_putc(b, '}');
}

static char *spans_payload(ddb_otel *o, span **v, size_t n, size_t *len)
{
    dl_buf b = { 0 };
    dl__buf_puts(&b, "{\"resourceSpans\":[{");
    ddb__otel_json_resource(&b, &o->cfg);
    dl__buf_puts(&b, ",\"scopeSpans\":[{");
    put_scope(&b);
    dl__buf_puts(&b, ",\"spans\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            dl__buf_putc(&b, ',');
        put_span(&b, v[i]);
    }
    dl__buf_puts(&b, "]}]}]}");
    return dl__buf_take(&b, len);
}

static void put_point_head(dl_buf *b, const stream *s, int64_t start, int64_t now)
{
    dl__buf_puts(b, "{\"attributes\":[");
    for (size_t i = 0; i < s->n_attrs; i++) {
        if (i)
            dl__buf_putc(b, ',');
        ddb_attr a = attr_view(&s->attrs[i]);
        ddb__otel_json_attr(b, &a);
    }
    dl__buf_puts(b, "],\"startTimeUnixNano\":");
    ddb__otel_json_u64s(b, (uint64_t)start);
    dl__buf_puts(b, ",\"timeUnixNano\":");
    ddb__otel_json_u64s(b, (uint64_t)now);
}

/* Under mu: the cumulative state of every stream, NULL when there is none. */
static char *metrics_payload(ddb_otel *o, size_t *len)
{
    if (!o->n_streams)
        return NULL;
    int64_t now = now_unix_ns(o);
    dl_buf b = { 0 };
    dl__buf_puts(&b, "{\"resourceMetrics\":[{");
    ddb__otel_json_resource(&b, &o->cfg);
    dl__buf_puts(&b, ",\"scopeMetrics\":[{");
    put_scope(&b);
    dl__buf_puts(&b, ",\"metrics\":[");
    bool first_metric = true;
    for (size_t i = 0; i < o->n_streams; i++) {
        const stream *s = o->streams[i];
        bool seen = false; /* one metric per name, its streams as its points */
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(o->streams[j]->name, s->name) == 0;
        if (seen)
            continue;
        if (!first_metric)
            dl__buf_putc(&b, ',');
        first_metric = false;
        dl__buf_puts(&b, "{\"name\":");
        ddb__otel_json_str(&b, s->name);
        dl__buf_puts(&b, ",\"unit\":");
        ddb__otel_json_str(&b, s->unit);
        dl__buf_puts(&b, s->histogram ? ",\"histogram\":{\"dataPoints\":[" : ",\"sum\":{\"dataPoints\":[");
        bool first = true;
        for (size_t j = i; j < o->n_streams; j++) {
            const stream *p = o->streams[j];
            if (strcmp(p->name, s->name) != 0)
                continue;
            if (!first)
                dl__buf_putc(&b, ',');
            first = false;
            put_point_head(&b, p, o->wall0_ns, now);
            if (p->histogram) {
                dl__buf_puts(&b, ",\"count\":");
                ddb__otel_json_u64s(&b, p->count);
                dl__buf_puts(&b, ",\"sum\":");
                ddb__otel_json_double(&b, p->sum);
                dl__buf_puts(&b, ",\"bucketCounts\":[");
                for (size_t k = 0; k <= p->n_bounds; k++) {
                    if (k)
                        dl__buf_putc(&b, ',');
                    ddb__otel_json_u64s(&b, p->buckets[k]);
                }
                dl__buf_puts(&b, "],\"explicitBounds\":[");
                for (size_t k = 0; k < p->n_bounds; k++) {
                    if (k)
                        dl__buf_putc(&b, ',');
                    ddb__otel_json_double(&b, p->bounds[k]);
                }
                dl__buf_puts(&b, "],\"min\":");
                ddb__otel_json_double(&b, p->min);
                dl__buf_puts(&b, ",\"max\":");
                ddb__otel_json_double(&b, p->max);
                dl__buf_putc(&b, '}');
            } else if (p->sum == floor(p->sum) && fabs(p->sum) < 9e15) {
                dl__buf_puts(&b, ",\"asInt\":");
                ddb__otel_json_u64s(&b, (uint64_t)(int64_t)p->sum);
                dl__buf_putc(&b, '}');
            } else {
                dl__buf_puts(&b, ",\"asDouble\":");
                ddb__otel_json_double(&b, p->sum);
                dl__buf_putc(&b, '}');
            }
        }
        dl__buf_puts(&b, s->histogram ? "],\"aggregationTemporality\":2}}"
                                      : "],\"aggregationTemporality\":2,\"isMonotonic\":true}}");
    }
    dl__buf_puts(&b, "]}]}]}");
    return dl__buf_take(&b, len);
}

/* ------------------------------------------------------------------ HTTP */

typedef struct answer {
    ddb_otel *o;
    int64_t retry_after_ms; /* -1: none */
    bool background;        /* the thread's: aborted when the exporter stops */
} answer;

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    answer *a = arg;
    return a->background && atomic_load(&a->o->abort_sends) ? 1 : 0;
}

static size_t discard_body(char *p, size_t sz, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    answer *a = arg;
    size_t len = sz * n;
    if (len > 12 && strncasecmp(p, "retry-after:", 12) == 0) {
        char v[128];
        size_t vl = len - 12 < sizeof v - 1 ? len - 12 : sizeof v - 1;
        memcpy(v, p + 12, vl);
        v[vl] = '\0';
        char *s = v;
        while (*s == ' ' || *s == '\t')
            s++;
        char *e = s + strlen(s);
        while (e > s && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
            *--e = '\0';
        char *end;
        errno = 0;
        long long secs = strtoll(s, &end, 10);
        if (end != s && !*end && !errno && secs >= 0) {
            a->retry_after_ms = secs > 86400 ? 86400000 : secs * 1000;
        } else {
            time_t t = curl_getdate(s, NULL);
            if (t != (time_t)-1) {
                int64_t d = (int64_t)t * 1000 - ddb_clock_wall_ms(a->o->clock);
                a->retry_after_ms = d < 0 ? 0 : d > 86400000 ? 86400000 : d;
            }
        }
    }
    return len;
}

/* Under send_mu. 0 with *status for an answer; DDB_ENETWORK / DDB_ETIMEDOUT / DDB_ENOMEM. */
static int post(ddb_otel *o, const char *url, const ddb__otel_kv *h, size_t nh,
                const char *body, size_t len, int64_t timeout_ms, bool background,
                int *status, int64_t *retry_after_ms)
{
    *status = 0;
    *retry_after_ms = -1;
    if (!o->curl && !(o->curl = curl_easy_init()))
        return DDB_ENOMEM;
    CURL *c = o->curl;
    curl_easy_reset(c);
    struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
    for (size_t i = 0; hl && i < nh; i++) {
        size_t n = strlen(h[i].key) + strlen(h[i].value) + 3;
        char *line = malloc(n);
        if (!line)
            break;
        snprintf(line, n, "%s: %s", h[i].key, h[i].value);
        struct curl_slist *nl = curl_slist_append(hl, line);
        free(line);
        if (!nl)
            break;
        hl = nl;
    }
    if (!hl)
        return DDB_ENOMEM;
    answer a = { o, -1, background };
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "dynalock-otel");
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &a);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(hl);
    if (rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_ABORTED_BY_CALLBACK)
        return DDB_ETIMEDOUT;
    if (rc != CURLE_OK)
        return DDB_ENETWORK;
    long st = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    *status = (int)st;
    *retry_after_ms = a.retry_after_ms;
    return 0;
}

static bool retryable(int rc, int status)
{
    if (rc == DDB_ENETWORK || rc == DDB_ETIMEDOUT)
        return true;
    return status == 429 || status == 502 || status == 503 || status == 504;
}

static int outcome_error(int rc, int status, const char *what, ddb_error *err)
{
    if (rc)
        return ddb_error_set(err, rc, "The OTLP export of %s got no answer.", what);
    if (status >= 200 && status < 300)
        return 0;
    ddb_error_set(err, DDB_ESERVICE, "The collector answered the export of %s with HTTP %d.",
                  what, status);
    if (err)
        err->http_status = status;
    return DDB_ESERVICE;
}

/* --------------------------------------------------------------- exports */

/* Takes up to a batch of spans off the queue and makes their payload; NULL when empty. */
static char *take_batch(ddb_otel *o, size_t *len, size_t *n_spans)
{
    span *v[4096];
    span **vp = v;
    pthread_mutex_lock(&o->mu);
    size_t n = o->q_len < (size_t)o->cfg.batch ? o->q_len : (size_t)o->cfg.batch;
    if (n > sizeof v / sizeof *v) {
        vp = malloc(n * sizeof *vp);
        if (!vp)
            n = sizeof v / sizeof *v, vp = v;
    }
    for (size_t i = 0; i < n; i++) {
        vp[i] = o->queue[o->q_head];
        o->q_head = (o->q_head + 1) % (size_t)o->cfg.max_queue;
        o->q_len--;
    }
    pthread_mutex_unlock(&o->mu);
    char *body = NULL;
    if (n) {
        body = spans_payload(o, vp, n, len);
        if (!body) {
            pthread_mutex_lock(&o->mu);
            o->st.spans_failed += n;
            pthread_mutex_unlock(&o->mu);
        }
    }
    for (size_t i = 0; i < n; i++)
        span_free(vp[i]);
    if (vp != v)
        free(vp);
    *n_spans = body ? n : 0;
    return body;
}

/* Sends one span payload once; counts the outcome unless it is to be retried (returns
 * true then, and keeps nothing: the caller keeps the body). Under send_mu. */
static bool send_spans(ddb_otel *o, const char *body, size_t len, size_t n, int64_t timeout_ms,
                       bool may_retry, bool background, int *rc_out, int *status_out, int64_t *retry_after)
{
    int status;
    int rc = post(o, o->cfg.traces_url, o->cfg.trace_headers, o->cfg.n_trace_headers, body,
                  len, timeout_ms, background, &status, retry_after);
    *rc_out = rc;
    *status_out = status;
    pthread_mutex_lock(&o->mu);
    if (status)
        o->st.last_http_status = status;
    bool retry = may_retry && retryable(rc, status);
    if (retry)
        o->st.retries++;
    else if (!rc && status >= 200 && status < 300)
        o->st.spans_exported += n;
    else
        o->st.spans_failed += n;
    pthread_mutex_unlock(&o->mu);
    return retry;
}

static int export_metrics(ddb_otel *o, int64_t timeout_ms, bool background, ddb_error *err)
{
    size_t len = 0;
    pthread_mutex_lock(&o->mu);
    char *body = metrics_payload(o, &len);
    pthread_mutex_unlock(&o->mu);
    if (!body)
        return 0;
    int status;
    int64_t ra;
    int rc = post(o, o->cfg.metrics_url, o->cfg.metric_headers, o->cfg.n_metric_headers, body,
                  len, timeout_ms, background, &status, &ra);
    free(body);
    pthread_mutex_lock(&o->mu);
    if (status)
        o->st.last_http_status = status;
    if (!rc && status >= 200 && status < 300)
        o->st.metric_exports++;
    else
        o->st.metric_failed++; /* cumulative: the next export carries the same counts */
    pthread_mutex_unlock(&o->mu);
    return outcome_error(rc, status, "metrics", err);
}

static int64_t backoff_ms(ddb_otel *o, int attempt, int64_t retry_after_ms)
{
    if (retry_after_ms >= 0)
        return retry_after_ms;
    int64_t d = o->cfg.retry_base_ms;
    for (int i = 1; i < attempt && d < MAX_BACKOFF_MS; i++)
        d *= 2;
    if (d > MAX_BACKOFF_MS)
        d = MAX_BACKOFF_MS;
    /* jitter in [d/2, d]: collectors that came back are not hit by every client at once */
    pthread_mutex_lock(&o->mu);
    uint64_t r = splitmix(&o->rng);
    pthread_mutex_unlock(&o->mu);
    return d / 2 + (int64_t)(r % (uint64_t)(d / 2 + 1));
}

/* The background thread's work once it is due: a retry, or the spans and the metrics. */
static void export_due(ddb_otel *o)
{
    pthread_mutex_lock(&o->send_mu);
    int64_t now = ddb_clock_mono_ns(o->clock);
    pthread_mutex_lock(&o->mu);
    char *rbody = o->retry_body;
    size_t rlen = o->retry_len, rn = o->retry_spans;
    int attempt = o->retry_attempt;
    bool retry_due = rbody && now >= o->retry_due_ns;
    bool spans_due = !rbody && (now >= o->next_span_ns || o->wake_set ||
                                o->q_len >= (size_t)o->cfg.batch);
    bool metrics_due = now >= o->next_metric_ns;
    if (retry_due)
        o->retry_body = NULL;
    if (spans_due)
        o->next_span_ns = now + o->cfg.delay_ms * 1000000;
    if (metrics_due)
        o->next_metric_ns = now + o->cfg.metric_interval_ms * 1000000;
    pthread_mutex_unlock(&o->mu);

    for (int round = 0; retry_due || spans_due; round++) {
        char *body = rbody;
        size_t len = rlen, n = rn;
        if (!retry_due) {
            body = take_batch(o, &len, &n);
            attempt = 0;
            if (!body)
                break;
        }
        retry_due = false;
        attempt++;
        int rc, status;
        int64_t ra;
        bool again = send_spans(o, body, len, n, o->cfg.traces_timeout_ms,
                                attempt < o->cfg.max_attempts, true, &rc, &status, &ra);
        if (again) {
            int64_t d = backoff_ms(o, attempt, ra);
            pthread_mutex_lock(&o->mu);
            o->retry_body = body;
            o->retry_len = len;
            o->retry_spans = n;
            o->retry_attempt = attempt;
            o->retry_due_ns = ddb_clock_mono_ns(o->clock) + d * 1000000;
            pthread_mutex_unlock(&o->mu);
            break;
        }
        free(body);
        if (round > 1 << 20)
            break;
    }
    if (metrics_due)
        export_metrics(o, o->cfg.metrics_timeout_ms, true, NULL);
    pthread_mutex_unlock(&o->send_mu);
}

static void *run(void *arg)
{
    ddb_otel *o = arg;
    for (;;) {
        pthread_mutex_lock(&o->mu);
        if (o->stopping) {
            pthread_mutex_unlock(&o->mu);
            break;
        }
        int64_t due = o->retry_body ? o->retry_due_ns : o->next_span_ns;
        if (o->next_metric_ns < due)
            due = o->next_metric_ns;
        bool woken = o->wake_set;
        ddb_cancel *wake = ddb_cancel_ref(o->wake);
        pthread_mutex_unlock(&o->mu);
        int64_t now = ddb_clock_mono_ns(o->clock);
        if (due > now && !woken) {
            ddb_cancel *w = ddb_cancel_new_linked2(o->stop, wake);
            if (w)
                ddb_clock_sleep(o->clock, (due - now + 999999) / 1000000, w);
            ddb_cancel_unref(w);
        }
        ddb_cancel_unref(wake);
        pthread_mutex_lock(&o->mu);
        bool stop = o->stopping;
        if (o->wake_set) {
            ddb_cancel *nw = ddb_cancel_new();
            if (nw) {
                ddb_cancel_unref(o->wake);
                o->wake = nw;
                o->wake_set = false;
            }
        }
        pthread_mutex_unlock(&o->mu);
        if (stop)
            break;
        export_due(o);
    }
    return NULL;
}

/* -------------------------------------------------------------- the API */

ddb_otel *ddb_otel_new(const ddb_otel_options *opt, ddb_error *err)
{
    if (err)
        ddb_error_clear(err);
    ddb_otel *o = calloc(1, sizeof *o);
    if (!o) {
        ddb_error_set(err, DDB_ENOMEM, NULL);
        return NULL;
    }
    if (ddb__otel_config_resolve(opt, NULL, NULL, &o->cfg, err)) {
        free(o);
        return NULL;
    }
    o->clock = ddb_clock_ref(opt && opt->clock ? opt->clock : ddb_clock_system());
    o->uid = atomic_fetch_add(&g_uid, 1);
    o->mono0_ns = ddb_clock_mono_ns(o->clock);
    o->wall0_ns = ddb_clock_wall_ms(o->clock) * 1000000;
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
        seed = (uint64_t)o->mono0_ns ^ (uint64_t)(uintptr_t)o;
    o->rng = seed;
    o->n_buckets = 256;
    o->buckets = calloc(o->n_buckets, sizeof *o->buckets);
    o->ended = calloc(CTX_KEEP, sizeof *o->ended);
    o->queue = calloc((size_t)o->cfg.max_queue, sizeof *o->queue);
    o->stop = ddb_cancel_new();
    o->wake = ddb_cancel_new();
    o->next_span_ns = o->mono0_ns + o->cfg.delay_ms * 1000000;
    o->next_metric_ns = o->mono0_ns + o->cfg.metric_interval_ms * 1000000;
    o->tel = (ddb_telemetry){ .arg = o, .span_start = cb_span_start, .span_attr = cb_span_attr,
                              .span_end = cb_span_end, .metric = cb_metric };
    pthread_mutex_init(&o->mu, NULL);
    pthread_mutex_init(&o->send_mu, NULL);
    if (!o->buckets || !o->ended || !o->queue || !o->stop || !o->wake ||
        curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        ddb_error_set(err, DDB_ENOMEM, NULL);
        ddb_otel_free(o);
        return NULL;
    }
    if (pthread_create(&o->thread, NULL, run, o) != 0) {
        ddb_error_set(err, DDB_ENOMEM, "The exporter's thread could not be started.");
        ddb_otel_free(o);
        return NULL;
    }
    o->thread_started = true;
    return o;
}

const ddb_telemetry *ddb_otel_telemetry(ddb_otel *o)
{
    return o ? &o->tel : NULL;
}

/* What is left of a flush's deadline, on the clock and in real time (curl's waits are
 * real, a fake clock's are not): the larger of the two spent. */
static int64_t left_ms(ddb_otel *o, int64_t timeout_ms, int64_t start_mono,
                       const struct timespec *ts0)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t real = (ts.tv_sec - ts0->tv_sec) * 1000 + (ts.tv_nsec - ts0->tv_nsec) / 1000000;
    int64_t fake = (ddb_clock_mono_ns(o->clock) - start_mono) / 1000000;
    return timeout_ms - (real > fake ? real : fake);
}

static int flush(ddb_otel *o, int64_t timeout_ms, ddb_error *err)
{
    if (err)
        ddb_error_clear(err);
    pthread_mutex_lock(&o->send_mu);
    int64_t start = ddb_clock_mono_ns(o->clock);
    struct timespec ts0;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    int first = 0;
    ddb_error e1;
    pthread_mutex_lock(&o->mu);
    char *rbody = o->retry_body;
    size_t rlen = o->retry_len, rn = o->retry_spans;
    o->retry_body = NULL;
    pthread_mutex_unlock(&o->mu);
    for (;;) {
        char *body = rbody;
        size_t len = rlen, n = rn;
        rbody = NULL;
        if (!body)
            body = take_batch(o, &len, &n);
        if (!body)
            break;
        int64_t left = left_ms(o, timeout_ms, start, &ts0);
        int rc = DDB_ETIMEDOUT, status = 0;
        if (left > 0) {
            int64_t ra;
            send_spans(o, body, len, n, left < o->cfg.traces_timeout_ms ? left : o->cfg.traces_timeout_ms,
                       false, false, &rc, &status, &ra);
        } else {
            pthread_mutex_lock(&o->mu);
            o->st.spans_failed += n;
            pthread_mutex_unlock(&o->mu);
        }
        free(body);
        int r = outcome_error(rc, status, "spans", &e1);
        if (r && !first) {
            first = r;
            if (err)
                *err = e1;
        }
    }
    int64_t left = left_ms(o, timeout_ms, start, &ts0);
    int r = left > 0 ? export_metrics(o, left < o->cfg.metrics_timeout_ms ? left : o->cfg.metrics_timeout_ms, false, &e1)
                     : ddb_error_set(&e1, DDB_ETIMEDOUT, "The flush ran out of time before the metrics.");
    if (r && !first) {
        first = r;
        if (err)
            *err = e1;
    }
    pthread_mutex_unlock(&o->send_mu);
    return first;
}

int ddb_otel_flush(ddb_otel *o, int64_t timeout_ms, ddb_error *err)
{
    if (!o)
        return ddb_error_set(err, DDB_EINVAL, "No exporter.");
    return flush(o, timeout_ms > 0 ? timeout_ms : o->cfg.traces_timeout_ms, err);
}

void ddb_otel_free(ddb_otel *o)
{
    if (!o)
        return;
    if (o->thread_started) {
        pthread_mutex_lock(&o->mu);
        o->stopping = true;
        pthread_mutex_unlock(&o->mu);
        atomic_store(&o->abort_sends, true);
        ddb_cancel_set(o->stop);
        pthread_join(o->thread, NULL);
        flush(o, o->cfg.shutdown_ms, NULL);
    }
    if (o->curl)
        curl_easy_cleanup(o->curl);
    for (size_t i = 0; o->buckets && i < o->n_buckets; i++)
        for (ctxe *e = o->buckets[i], *n; e; e = n) {
            n = e->next;
            span_free(e->live);
            free(e);
        }
    free(o->buckets);
    free(o->ended);
    for (size_t i = 0; o->queue && i < o->q_len; i++)
        span_free(o->queue[(o->q_head + i) % (size_t)o->cfg.max_queue]);
    free(o->queue);
    for (size_t i = 0; i < o->n_streams; i++)
        stream_free(o->streams[i]);
    free(o->streams);
    free(o->retry_body);
    ddb_cancel_unref(o->stop);
    ddb_cancel_unref(o->wake);
    ddb_clock_unref(o->clock);
    ddb__otel_config_cleanup(&o->cfg);
    pthread_mutex_destroy(&o->mu);
    pthread_mutex_destroy(&o->send_mu);
    if (tl_remote.uid == o->uid)
        tl_remote.uid = 0;
    free(o);
}

void ddb_otel_get_stats(ddb_otel *o, ddb_otel_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!o)
        return;
    pthread_mutex_lock(&o->mu);
    *out = o->st;
    pthread_mutex_unlock(&o->mu);
}

uint64_t ddb_otel_dropped(ddb_otel *o)
{
    ddb_otel_stats s;
    ddb_otel_get_stats(o, &s);
    return s.spans_queue_full + s.spans_failed;
}

/* ---------------------------------------------------------- trace context */

int ddb_otel_set_remote_parent(ddb_otel *o, const char *traceparent, ddb_error *err)
{
    if (err)
        ddb_error_clear(err);
    tl_remote.uid = 0;
    if (!o)
        return ddb_error_set(err, DDB_EINVAL, "No exporter.");
    if (!traceparent)
        return 0;
    uint8_t t[16], s[8];
    if (ddb__otel_parse_traceparent(traceparent, t, s, NULL) != 0)
        return ddb_error_set(err, DDB_EINVAL, "\"%.64s\" is not a W3C traceparent of version 00.",
                             traceparent);
    memcpy(tl_remote.trace, t, 16);
    memcpy(tl_remote.span, s, 8);
    tl_remote.uid = o->uid;
    return 0;
}

int ddb_otel_traceparent(ddb_otel *o, uint64_t span_id, char out[DDB_OTEL_TRACEPARENT_SIZE])
{
    if (!o || !out)
        return DDB_EINVAL;
    out[0] = '\0';
    if (!span_id)
        span_id = ddb_telemetry_get_parent();
    if (!span_id) {
        if (tl_remote.uid != o->uid)
            return DDB_ENOTFOUND;
        ddb__otel_format_traceparent(tl_remote.trace, tl_remote.span, 1, out);
        return 0;
    }
    pthread_mutex_lock(&o->mu);
    ctxe *e = ctx_find(o, span_id);
    if (e)
        ddb__otel_format_traceparent(e->trace, e->id, 1, out);
    pthread_mutex_unlock(&o->mu);
    return e ? 0 : DDB_ENOTFOUND;
}

uint64_t ddb_otel_span_start(ddb_otel *o, const char *name)
{
    if (!o)
        return 0;
    pthread_mutex_lock(&o->mu);
    uint64_t id = OWN_SPAN_BIT | ++o->own_next;
    pthread_mutex_unlock(&o->mu);
    uint64_t parent = ddb_telemetry_get_parent();
    start_span(o, id, parent, name, NULL, 0, KIND_INTERNAL, parent);
    pthread_mutex_lock(&o->mu);
    bool ok = ctx_find(o, id) != NULL;
    pthread_mutex_unlock(&o->mu);
    if (!ok)
        return 0;
    ddb_telemetry_set_parent(id);
    return id;
}

void ddb_otel_span_attr(ddb_otel *o, uint64_t span_id, const ddb_attr *attr)
{
    if (o && span_id)
        cb_span_attr(o, span_id, attr);
}

void ddb_otel_span_end(ddb_otel *o, uint64_t span_id, const char *error_type)
{
    if (!o || !span_id)
        return;
    pthread_mutex_lock(&o->mu);
    ctxe *e = ctx_find(o, span_id);
    bool live = e && e->live;
    uint64_t restore = live ? e->live->restore_parent : 0;
    pthread_mutex_unlock(&o->mu);
    if (!live)
        return;
    cb_span_end(o, span_id, error_type);
    if (ddb_telemetry_get_parent() == span_id)
        ddb_telemetry_set_parent(restore);
}
