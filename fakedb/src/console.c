/* console.c: fakedb's console under /fake/console: the page (HTML, CSS and JavaScript
 * embedded at build time, fakedb/console/) and the JSON it reads (/fake/console/api/...):
 * tables, items, an item's stream history, lock items, the clock, faults, recent requests.
 * Reads go through the operations like a client's would; the changes of state (clock,
 * faults) refuse a request that a foreign page could forge. */
#include "server.h"

#include <sigv4.h>

#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The layout cmake/embed_files.cmake writes. */
typedef struct fakedb__embedded {
    const char *path;
    const unsigned char *data;
    size_t len;
} fakedb__embedded;
extern const fakedb__embedded fakedb__console_files[];

#define MAX_LOCKS 2000
#define MAX_HISTORY 200

/* What the console remembers of one lock item: its version (rvn and owner) and when, on
 * fakedb's clock, it first saw that version. */
typedef struct fakedb__lock_seen {
    char *key;                  /* table, NUL-separated key */
    size_t key_len;
    char *version;
    int64_t since_ms;
    bool changed;               /* seen to change (else since_ms is when first seen) */
    unsigned gen;
    struct fakedb__lock_seen *next;
} fakedb__lock_seen;

static unsigned g_scan_gen; /* atomic: numbers the scans of every server in the process */

static void reply(fakedb__http_resp *rs, int status, json_object *o)
{
    fakedb__resp_json(rs, status, o);
    json_object_put(o);
    rs->console = true;
}

static void reply_error(fakedb__http_resp *rs, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reply_error(fakedb__http_resp *rs, int status, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(msg));
    reply(rs, status, o);
}

static const char *header(const fakedb__http_req *rq, const char *name)
{
    for (size_t i = 0; i < rq->n_headers; i++)
        if (!strcasecmp(rq->headers[i].name, name))
            return rq->headers[i].value;
    return NULL;
}

/* A change of state must come from the console's own page: its custom header (a foreign
 * page cannot send one without a CORS preflight, which fakedb never grants), and, when
 * the browser says where the request comes from, this very origin. */
static const char *forged(const fakedb__http_req *rq)
{
    const char *mark = header(rq, "X-Fakedb-Console");
    if (!mark || strcmp(mark, "1"))
        return "a change from the console needs the header X-Fakedb-Console: 1";
    const char *site = header(rq, "Sec-Fetch-Site");
    if (site && strcmp(site, "same-origin") && strcmp(site, "none"))
        return "a change from the console must come from its own page (Sec-Fetch-Site)";
    const char *origin = header(rq, "Origin");
    if (origin) {
        const char *host = header(rq, "Host");
        if (!host || strncmp(origin, "http://", 7) || strcmp(origin + 7, host))
            return "a change from the console must come from its own origin";
    }
    return NULL;
}

void fakedb__console_headers(struct MHD_Response *resp)
{
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                            "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
                            "frame-ancestors 'none'");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
}

void fakedb__console_free(fakedb *db)
{
    for (fakedb__lock_seen *s = db->lock_seen, *n; s; s = n) {
        n = s->next;
        free(s->key);
        free(s->version);
        free(s);
    }
    db->lock_seen = NULL;
}

static bool serve_file(const char *name, fakedb__http_resp *rs)
{
    for (const fakedb__embedded *f = fakedb__console_files; f->path; f++) {
        if (strcmp(f->path, name))
            continue;
        rs->body = malloc(f->len ? f->len : 1);
        if (!rs->body) {
            reply_error(rs, 500, "out of memory");
            return true;
        }
        memcpy(rs->body, f->data, f->len);
        rs->body_len = f->len;
        rs->status = 200;
        const char *dot = strrchr(name, '.');
        rs->content_type = !strcmp(dot, ".html") ? "text/html; charset=utf-8"
            : !strcmp(dot, ".css") ? "text/css; charset=utf-8"
            : !strcmp(dot, ".svg") ? "image/svg+xml"
            : "text/javascript; charset=utf-8";
        rs->console = true;
        return true;
    }
    return false;
}

/* The database this thread's console request shows (fakedb__console_handle sets it):
 * db->store, or with separate databases the one its access_key and region name. */
static _Thread_local fakedb__store *tl_store;

/* The databases there are, for the console's chooser: [{access_key, region}]. */
static void add_database(void *arg, fakedb__store *st, const char *key, const char *region)
{
    (void)st;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "access_key", json_object_new_string(key));
    json_object_object_add(o, "region", json_object_new_string(region));
    json_object_array_add(arg, o);
}

/* Runs operation op on req (taken); its body, or NULL with rs answered. */
static json_object *call(fakedb *db, int op, json_object *req, fakedb__http_resp *rs)
{
    fakedb__reply r;
    memset(&r, 0, sizeof r);
    fakedb__op_call(op, tl_store ? tl_store : &db->store, req, &r);
    json_object_put(req);
    if (r.err.type) {
        const char *h = strchr(r.err.type, '#');
        reply_error(rs, fakedb__error_status(&r.err) == 500 ? 500 : 400, "%s: %s", h ? h + 1 : r.err.type,
                    r.err.message);
        json_object_put(r.body);
        return NULL;
    }
    return r.body ? r.body : json_object_new_object();
}

static json_object *table_req(const char *name)
{
    json_object *q = json_object_new_object();
    json_object_object_add(q, "TableName", json_object_new_string(name));
    return q;
}

/* The names of every table, or NULL with rs answered. */
static json_object *table_names(fakedb *db, fakedb__http_resp *rs)
{
    json_object *names = json_object_new_array();
    const char *start = NULL;
    json_object *page = NULL;
    for (;;) {
        json_object *q = json_object_new_object();
        json_object_object_add(q, "Limit", json_object_new_int(100));
        if (start)
            json_object_object_add(q, "ExclusiveStartTableName", json_object_new_string(start));
        json_object *b = call(db, FDB_OP_LIST_TABLES, q, rs);
        json_object_put(page);
        page = b;
        if (!b) {
            json_object_put(names);
            return NULL;
        }
        json_object *list = fakedb__json_get(b, "TableNames");
        for (size_t i = 0; list && i < json_object_array_length(list); i++)
            json_object_array_add(names, json_object_get(json_object_array_get_idx(list, i)));
        start = fakedb__json_str(b, "LastEvaluatedTableName");
        if (!start)
            break;
    }
    json_object_put(page);
    return names;
}

/* The key's names and the partition key's type ('S', 'N', 'B') of a DescribeTable's Table. */
static void key_names(json_object *table, const char **hash, const char **range, char *hash_type)
{
    fakedb__spec_key_names(fakedb__json_get(table, "KeySchema"), hash, range);
    *hash_type = *hash ? fakedb__spec_attr_type(fakedb__json_get(table, "AttributeDefinitions"), *hash) : 0;
}

static void api_tables(fakedb *db, fakedb__http_resp *rs)
{
    json_object *names = table_names(db, rs);
    if (!names)
        return;
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(names); i++) {
        const char *name = json_object_get_string(json_object_array_get_idx(names, i));
        json_object *d = call(db, FDB_OP_DESCRIBE_TABLE, table_req(name), rs);
        if (!d) {
            /* deleted meanwhile: leave it out */
            free(rs->body);
            memset(rs, 0, sizeof *rs);
            continue;
        }
        json_object *e = json_object_new_object();
        json_object_object_add(e, "table", json_object_get(fakedb__json_get(d, "Table")));
        json_object_put(d);
        json_object *t = call(db, FDB_OP_DESCRIBE_TTL, table_req(name), rs);
        if (t) {
            json_object_object_add(e, "ttl", json_object_get(fakedb__json_get(t, "TimeToLiveDescription")));
            json_object_put(t);
        } else {
            free(rs->body);
            memset(rs, 0, sizeof *rs);
        }
        json_object_array_add(out, e);
    }
    json_object_put(names);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "tables", out);
    reply(rs, 200, o);
}

/* A JSON object from a query argument, or NULL (not given, or not an object). */
static json_object *arg_object(const char *s, bool *bad)
{
    *bad = false;
    if (!s || !*s)
        return NULL;
    json_object *o = json_tokener_parse(s);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        *bad = true;
        return NULL;
    }
    return o;
}

static void api_items(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs)
{
    const char *name = rq->get_arg(rq->arg_ctx, "table");
    const char *prefix = rq->get_arg(rq->arg_ctx, "prefix");
    const char *lim = rq->get_arg(rq->arg_ctx, "limit");
    if (!name || !*name) {
        reply_error(rs, 400, "table is required");
        return;
    }
    long limit = 50;
    if (lim) {
        char *end = NULL;
        limit = strtol(lim, &end, 10);
        if (!*lim || *end || limit < 1 || limit > 1000) {
            reply_error(rs, 400, "limit must be an integer from 1 to 1000");
            return;
        }
    }
    bool bad;
    json_object *start = arg_object(rq->get_arg(rq->arg_ctx, "start"), &bad);
    if (bad) {
        reply_error(rs, 400, "start must be a key as a JSON object");
        return;
    }
    json_object *d = call(db, FDB_OP_DESCRIBE_TABLE, table_req(name), rs);
    if (!d) {
        json_object_put(start);
        return;
    }
    json_object *table = fakedb__json_get(d, "Table");
    const char *hash = NULL, *range = NULL;
    char type = 0;
    key_names(table, &hash, &range, &type);
    json_object *q = table_req(name);
    json_object_object_add(q, "Limit", json_object_new_int((int)limit));
    if (start)
        json_object_object_add(q, "ExclusiveStartKey", start);
    if (prefix && *prefix) {
        if (type != 'S') {
            json_object_put(q);
            json_object_put(d);
            reply_error(rs, 400, "a key prefix needs a string partition key");
            return;
        }
        json_object_object_add(q, "FilterExpression", json_object_new_string("begins_with(#k, :p)"));
        json_object *n = json_object_new_object(), *v = json_object_new_object(), *s = json_object_new_object();
        json_object_object_add(n, "#k", json_object_new_string(hash));
        json_object_object_add(s, "S", json_object_new_string(prefix));
        json_object_object_add(v, ":p", s);
        json_object_object_add(q, "ExpressionAttributeNames", n);
        json_object_object_add(q, "ExpressionAttributeValues", v);
    }
    json_object *b = call(db, FDB_OP_SCAN, q, rs);
    if (!b) {
        json_object_put(d);
        return;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "items", json_object_get(fakedb__json_get(b, "Items")));
    json_object *next = fakedb__json_get(b, "LastEvaluatedKey");
    json_object_object_add(o, "next", next ? json_object_get(next) : NULL);
    json_object_object_add(o, "key_schema", json_object_get(fakedb__json_get(table, "KeySchema")));
    json_object_object_add(o, "stream", json_object_new_boolean(fakedb__json_get(table, "LatestStreamArn") != NULL));
    json_object_put(b);
    json_object_put(d);
    reply(rs, 200, o);
}

typedef struct history {
    json_object *key;
    json_object *out;           /* array, oldest first */
} history;

static json_object *parse_or_null(const char *s)
{
    return s ? json_tokener_parse(s) : NULL;
}

static int on_record(void *arg, const fakedb__stream_rec *rec)
{
    history *h = arg;
    json_object *keys = parse_or_null(rec->keys);
    bool same = keys && json_object_equal(keys, h->key);
    json_object_put(keys);
    if (!same)
        return 0;
    json_object *e = json_object_new_object();
    json_object_object_add(e, "seq", json_object_new_int64(rec->seq));
    json_object_object_add(e, "at_ms", json_object_new_int64(rec->created_ms));
    json_object_object_add(e, "event", json_object_new_string(rec->event));
    json_object_object_add(e, "by_ttl", json_object_new_boolean(rec->by_ttl));
    json_object_object_add(e, "new_image", parse_or_null(rec->new_image));
    json_object_object_add(e, "old_image", parse_or_null(rec->old_image));
    json_object_array_add(h->out, e);
    if (json_object_array_length(h->out) > MAX_HISTORY)
        json_object_array_del_idx(h->out, 0, 1);
    return 0;
}

static void api_history(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs)
{
    const char *name = rq->get_arg(rq->arg_ctx, "table");
    bool bad;
    json_object *key = arg_object(rq->get_arg(rq->arg_ctx, "key"), &bad);
    if (!name || !*name || !key) {
        json_object_put(key);
        reply_error(rs, 400, "table and key (the item's key as DynamoDB JSON) are required");
        return;
    }
    history h = { key, json_object_new_array() };
    int streams = 0;
    int rc = 0;
    fakedb__store *st = tl_store ? tl_store : &db->store;
    pthread_mutex_lock(&st->lock);
    int64_t after = 0;
    for (;;) {
        fakedb__stream list[16];
        size_t n = 0;
        rc = fakedb__stream_list(st, name, after, 16, list, &n);
        for (size_t i = 0; i < n; i++) {
            if (!rc)
                rc = fakedb__stream_records(st, list[i].id, 0, 1000000, on_record, &h);
            after = list[i].id;
            fakedb__stream_clear(&list[i]);
            streams++;
        }
        if (rc || n < 16)
            break;
    }
    pthread_mutex_unlock(&st->lock);
    json_object_put(key);
    if (rc) {
        json_object_put(h.out);
        reply_error(rs, 500, "reading the stream failed");
        return;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "stream", json_object_new_boolean(streams > 0));
    json_object_object_add(o, "records", h.out);
    reply(rs, 200, o);
}

static json_object *clock_json(fakedb *db)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "now_ms", json_object_new_int64(fakedb__now_ms(&db->clock)));
    pthread_mutex_lock(&db->clock.lock);
    bool fake = db->clock.fake;
    pthread_mutex_unlock(&db->clock.lock);
    json_object_object_add(o, "fake", json_object_new_boolean(fake));
    return o;
}

/* A number attribute's value ({"N": "..."}), or def. */
static int64_t num_attr(json_object *item, const char *name, int64_t def)
{
    const char *n = fakedb__json_str(fakedb__json_get(item, name), "N");
    return n ? strtoll(n, NULL, 10) : def;
}

static const char *str_attr(json_object *item, const char *name)
{
    return fakedb__json_str(fakedb__json_get(item, name), "S");
}

/* When the console first saw this version of a lock item (now when it is new). With
 * console_lock held, as for every function below that is given `gen`. */
static fakedb__lock_seen *observe(fakedb *db, const char *key, size_t key_len, const char *version,
                                  int64_t now, unsigned gen)
{
    fakedb__lock_seen *s = db->lock_seen;
    while (s && (s->key_len != key_len || memcmp(s->key, key, key_len)))
        s = s->next;
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || !(s->key = malloc(key_len)) || !(s->version = strdup(version))) {
            if (s)
                free(s->key);
            free(s);
            return NULL;
        }
        memcpy(s->key, key, key_len);
        s->key_len = key_len;
        s->since_ms = now;
        s->next = db->lock_seen;
        db->lock_seen = s;
    } else if (strcmp(s->version, version)) {
        char *v = strdup(version);
        if (!v)
            return NULL;
        free(s->version);
        s->version = v;
        s->since_ms = now;
        s->changed = true;
    }
    s->gen = gen;
    return s;
}

static void add_lock(fakedb *db, json_object *out, const char *table, const char *hash, const char *range,
                     json_object *item, int64_t now, unsigned gen)
{
    const char *pk = str_attr(item, hash);
    const char *sk = range ? str_attr(item, range) : NULL;
    if (!pk || strncmp(pk, "LOCK#", 5))
        return;
    json_object *e = json_object_new_object();
    json_object_object_add(e, "table", json_object_new_string(table));
    json_object_object_add(e, "name", json_object_new_string(pk + strlen("LOCK#")));
    json_object *key = json_object_new_object();
    json_object_object_add(key, hash, json_object_get(fakedb__json_get(item, hash)));
    if (range && fakedb__json_get(item, range))
        json_object_object_add(key, range, json_object_get(fakedb__json_get(item, range)));
    json_object_object_add(e, "key", key);
    const char *owner = str_attr(item, "owner"), *rvn = str_attr(item, "rvn"), *holder = str_attr(item, "holder");
    json_object_object_add(e, "owner", owner ? json_object_new_string(owner) : NULL);
    json_object_object_add(e, "rvn", rvn ? json_object_new_string(rvn) : NULL);
    json_object_object_add(e, "holder", holder ? json_object_new_string(holder) : NULL);
    int64_t fence = num_attr(item, "fence", -1), lease = num_attr(item, "leaseMs", -1);
    json_object_object_add(e, "fence", fence >= 0 ? json_object_new_int64(fence) : NULL);
    json_object_object_add(e, "lease_ms", lease >= 0 ? json_object_new_int64(lease) : NULL);
    json_object_object_add(e, "value", json_object_get(fakedb__json_get(item, "value")));
    /* the key and the version, NUL-separated */
    char buf[1200];
    int kl = snprintf(buf, sizeof buf, "%s%c%s%c%s", table, 0, pk, 0, sk ? sk : "");
    if (kl < 0 || (size_t)kl >= sizeof buf)
        kl = (int)sizeof buf - 1;
    char version[600];
    snprintf(version, sizeof version, "%s\n%s", rvn ? rvn : "", owner ? owner : "");
    fakedb__lock_seen *s = observe(db, buf, (size_t)kl, version, now, gen);
    int64_t since = s ? s->since_ms : now;
    bool changed = s && s->changed;
    json_object_object_add(e, "unchanged_since_ms", json_object_new_int64(since));
    json_object_object_add(e, "unchanged_ms", json_object_new_int64(now - since));
    json_object_object_add(e, "seen_change", json_object_new_boolean(changed));
    bool held = owner != NULL;
    json_object_object_add(e, "held", json_object_new_boolean(held));
    json_object_object_add(e, "past_due", json_object_new_boolean(held && lease >= 0 && now - since >= lease));
    json_object_array_add(out, e);
}

/* The lock items of one table (partition key LOCK#..., sort key LOCK when it has one). */
static int scan_locks(fakedb *db, const char *name, json_object *out, int64_t now, unsigned gen,
                      fakedb__http_resp *rs)
{
    json_object *d = call(db, FDB_OP_DESCRIBE_TABLE, table_req(name), rs);
    if (!d)
        return -1;
    const char *hash = NULL, *range = NULL;
    char type = 0;
    json_object *table = fakedb__json_get(d, "Table");
    key_names(table, &hash, &range, &type);
    if (type != 'S') {
        json_object_put(d);
        return 0;
    }
    json_object *start = NULL;
    for (;;) {
        json_object *q = table_req(name);
        json_object *n = json_object_new_object(), *v = json_object_new_object(), *s = json_object_new_object();
        json_object_object_add(n, "#k", json_object_new_string(hash));
        json_object_object_add(s, "S", json_object_new_string("LOCK#"));
        json_object_object_add(v, ":p", s);
        json_object_object_add(q, "ExpressionAttributeNames", n);
        json_object_object_add(q, "ExpressionAttributeValues", v);
        json_object_object_add(q, "FilterExpression", json_object_new_string("begins_with(#k, :p)"));
        if (start)
            json_object_object_add(q, "ExclusiveStartKey", start);
        json_object *b = call(db, FDB_OP_SCAN, q, rs);
        if (!b) {
            json_object_put(d);
            return -1;
        }
        json_object *items = fakedb__json_get(b, "Items");
        for (size_t i = 0; items && i < json_object_array_length(items); i++) {
            json_object *it = json_object_array_get_idx(items, i);
            if (range && !(str_attr(it, range) && !strcmp(str_attr(it, range), "LOCK")))
                continue;
            if (json_object_array_length(out) < MAX_LOCKS)
                add_lock(db, out, name, hash, range, it, now, gen);
        }
        json_object *next = fakedb__json_get(b, "LastEvaluatedKey");
        start = next ? json_object_get(next) : NULL;
        json_object_put(b);
        if (!start || json_object_array_length(out) >= MAX_LOCKS)
            break;
    }
    json_object_put(start);
    json_object_put(d);
    return 0;
}

static void api_locks(fakedb *db, fakedb__http_resp *rs)
{
    json_object *names = table_names(db, rs);
    if (!names)
        return;
    json_object *c = clock_json(db);
    int64_t now = json_object_get_int64(fakedb__json_get(c, "now_ms"));
    unsigned gen = __atomic_add_fetch(&g_scan_gen, 1, __ATOMIC_RELAXED);
    /* one scan at a time, so that a scan forgets only what it did not see itself; the
     * operations below take the store's lock, never held while this one is taken */
    pthread_mutex_lock(&db->console_lock);
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(names); i++) {
        if (scan_locks(db, json_object_get_string(json_object_array_get_idx(names, i)), out, now, gen, rs)) {
            /* a table deleted meanwhile */
            free(rs->body);
            memset(rs, 0, sizeof *rs);
        }
    }
    json_object_put(names);
    /* forget the items this scan did not see */
    for (fakedb__lock_seen **p = &db->lock_seen; *p;) {
        fakedb__lock_seen *s = *p;
        if (s->gen != gen) {
            *p = s->next;
            free(s->key);
            free(s->version);
            free(s);
        } else {
            p = &s->next;
        }
    }
    pthread_mutex_unlock(&db->console_lock);
    json_object_object_add(c, "locks", out);
    reply(rs, 200, c);
}

/* A long poll (wait_ms) with nothing after `after` yet returns 2 to be suspended, unless
 * it already waited (rq->resumed). */
static int api_requests(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs, int64_t *after_seq,
                        int64_t *timeout_ms)
{
    uint64_t after = 0;
    const char *a = rq->get_arg(rq->arg_ctx, "after");
    if (a) {
        char *end = NULL;
        after = strtoull(a, &end, 10);
        if (!*a || *end || *a == '-') {
            reply_error(rs, 400, "after must be a sequence number");
            return 0;
        }
    }
    const char *w = rq->get_arg(rq->arg_ctx, "wait_ms");
    if (w) {
        char *end = NULL;
        long long v = strtoll(w, &end, 10);
        if (!*w || *end || v < 0 || v > 60000) {
            reply_error(rs, 400, "wait_ms must be an integer from 0 to 60000");
            return 0;
        }
        if (v > 0 && !rq->resumed && __atomic_load_n(&db->recent.seq, __ATOMIC_ACQUIRE) <= after) {
            *after_seq = (int64_t)after;
            *timeout_ms = v;
            return 2;
        }
    }
    fakedb__recent_entry *copy = malloc(sizeof(fakedb__recent_entry) * FDB_RECENT_SLOTS);
    if (!copy) {
        reply_error(rs, 500, "out of memory");
        return 0;
    }
    size_t n = 0;
    pthread_mutex_lock(&db->recent.lock);
    uint64_t last = db->recent.seq;
    uint64_t first = last > FDB_RECENT_SLOTS ? last - FDB_RECENT_SLOTS + 1 : 1;
    if (after + 1 > first)
        first = after + 1;
    for (uint64_t s = first; s <= last; s++)
        copy[n++] = db->recent.e[(s - 1) % FDB_RECENT_SLOTS];
    pthread_mutex_unlock(&db->recent.lock);
    uint64_t now_ns = fakedb__metrics_now_ns();
    json_object *list = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        fakedb__recent_entry *e = &copy[i];
        json_object *j = json_object_new_object();
        json_object_object_add(j, "seq", json_object_new_int64((int64_t)e->seq));
        json_object_object_add(j, "operation", json_object_new_string(e->op >= 0 ? fakedb__op_name(e->op) : "unknown"));
        json_object_object_add(j, "table", json_object_new_string(e->table));
        json_object_object_add(j, "status", json_object_new_int(e->status));
        json_object_object_add(j, "latency_us", json_object_new_int64((int64_t)(e->latency_ns / 1000)));
        json_object_object_add(j, "error", json_object_new_string(e->error));
        json_object_object_add(j, "age_ms", json_object_new_int64((int64_t)((now_ns - e->mono_ns) / 1000000)));
        json_object_array_add(list, j);
    }
    free(copy);
    /* every request answered since start, by operation: the page takes rates from these */
    json_object *totals = json_object_new_object();
    for (int op = 0; op <= FDB_OP_COUNT; op++) {
        unsigned long sum = 0;
        for (int s = 0; s < FDB_STATUS_SLOTS; s++)
            sum += __atomic_load_n(&db->metrics.requests[op][s], __ATOMIC_RELAXED);
        if (sum)
            json_object_object_add(totals, op < FDB_OP_COUNT ? fakedb__op_name(op) : "unknown",
                                   json_object_new_int64((int64_t)sum));
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "seq", json_object_new_int64((int64_t)last));
    json_object_object_add(o, "mono_ms", json_object_new_int64((int64_t)(now_ns / 1000000)));
    json_object_object_add(o, "requests", list);
    json_object_object_add(o, "totals", totals);
    reply(rs, 200, o);
    return 0;
}

static json_object *body_object(fakedb__http_req *rq)
{
    if (!rq->body || !rq->body_len)
        return NULL;
    return fakedb__json_object_from(rq->body, rq->body_len);
}

static void api_change(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs, const char *api)
{
    bool post = !strcmp(rq->method, "POST"), del = !strcmp(rq->method, "DELETE");
    if (!strcmp(api, "/clock/advance") && post) {
        json_object *b = body_object(rq);
        json_object *ms = b ? fakedb__json_get(b, "ms") : NULL;
        if (!ms || !json_object_is_type(ms, json_type_int)) {
            json_object_put(b);
            reply_error(rs, 400, "body must be {\"ms\": N}");
            return;
        }
        int64_t v = json_object_get_int64(ms);
        json_object_put(b);
        if (v < 0 || fakedb_clock_advance(db, v)) {
            reply_error(rs, 400, "the clock is not fake, or the move goes backwards");
            return;
        }
        reply(rs, 200, clock_json(db));
        return;
    }
    if (!strcmp(api, "/faults") && post) {
        json_object *b = body_object(rq);
        if (!b) {
            reply_error(rs, 400, "body must be a JSON object");
            return;
        }
        const char *why = NULL;
        long id = fakedb__fault_add_json(db, b, &why);
        json_object_put(b);
        if (id < 0) {
            reply_error(rs, 400, "%s", why);
            return;
        }
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_int64(id));
        reply(rs, 200, o);
        return;
    }
    if (!strncmp(api, "/faults/", 8) && del) {
        char *end = NULL;
        long id = strtol(api + 8, &end, 10);
        if (!api[8] || *end) {
            reply_error(rs, 400, "fault id must be an integer");
            return;
        }
        fakedb_fault_remove(db, id);
        reply(rs, 200, json_object_new_object());
        return;
    }
    reply_error(rs, 404, "no such console endpoint");
}

int fakedb__console_handle(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs, const char *path,
                           int64_t *after_seq, int64_t *timeout_ms)
{
    bool get = !strcmp(rq->method, "GET");
    if (!strcmp(path, "") || !strcmp(path, "/")) {
        if (!get) {
            reply_error(rs, 405, "the console's page is read with GET");
            return 0;
        }
        serve_file("index.html", rs);
        return 0;
    }
    if (strncmp(path, "/api/", 5)) {
        if (!get || !serve_file(path + 1, rs))
            reply_error(rs, 404, "no such console file");
        return 0;
    }
    const char *api = path + 4;
    tl_store = &db->store;
    if (db->separate_dbs && !strcmp(api, "/databases") && get) {
        json_object *o = json_object_new_object(), *a = json_object_new_array();
        fakedb__databases_each(db, add_database, a);
        json_object_object_add(o, "databases", a);
        reply(rs, 200, o);
        return 0;
    }
    if (db->separate_dbs && (!strcmp(api, "/tables") || !strcmp(api, "/items") || !strcmp(api, "/history") ||
                             !strcmp(api, "/locks"))) {
        const char *key = rq->get_arg(rq->arg_ctx, "access_key"), *region = rq->get_arg(rq->arg_ctx, "region");
        if (!key || !region) {
            reply_error(rs, 400, "fakedb keeps a database per access key and region: name one with ?access_key=KEY&region=REGION (GET /fake/console/api/databases lists them)");
            return 0;
        }
        tl_store = fakedb__database_named(db, key, region);
        if (!tl_store) {
            reply_error(rs, 404, "no database for that access key and region (GET /fake/console/api/databases lists them)");
            return 0;
        }
    }
    if (!get) {
        const char *why = forged(rq);
        if (why) {
            reply_error(rs, 403, "%s", why);
            return 0;
        }
        api_change(db, rq, rs, api);
        return 0;
    }
    if (!strcmp(api, "/tables"))
        api_tables(db, rs);
    else if (!strcmp(api, "/items"))
        api_items(db, rq, rs);
    else if (!strcmp(api, "/history"))
        api_history(db, rq, rs);
    else if (!strcmp(api, "/locks"))
        api_locks(db, rs);
    else if (!strcmp(api, "/clock"))
        reply(rs, 200, clock_json(db));
    else if (!strcmp(api, "/faults")) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "faults", fakedb__faults_json(db));
        json_object_object_add(o, "fired_total", json_object_new_int64(fakedb_faults_fired(db)));
        reply(rs, 200, o);
    } else if (!strcmp(api, "/requests"))
        return api_requests(db, rq, rs, after_seq, timeout_ms);
    else
        reply_error(rs, 404, "no such console endpoint");
    return 0;
}
