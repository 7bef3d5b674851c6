/* faults.c: fault injection (errors, delays, lost responses) matched by operation, table
 * and partition key value, each firing `count` times or until removed; and the request
 * counters per operation. */
#include "protocol.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *dup_or_null(const char *s)
{
    return s && s[0] ? strdup(s) : NULL;
}

static void fault_free(fakedb__fault_rec *f)
{
    free((char *)(uintptr_t)f->f.operation);
    free((char *)(uintptr_t)f->f.table);
    free((char *)(uintptr_t)f->f.key);
    free((char *)(uintptr_t)f->f.error_type);
    free(f);
}

const char *fakedb__fault_too_long(const fakedb_fault *f)
{
    static const struct {
        size_t off, max;
        const char *what;
    } fields[] = {
        { offsetof(fakedb_fault, operation), FAKEDB_MAX_FAULT_OPERATION, "operation is longer than 64 bytes" },
        { offsetof(fakedb_fault, table), FAKEDB_MAX_FAULT_TABLE, "table is longer than 255 bytes" },
        { offsetof(fakedb_fault, key), FAKEDB_MAX_FAULT_KEY, "key is longer than 2048 bytes" },
        { offsetof(fakedb_fault, error_type), FAKEDB_MAX_FAULT_ERROR_TYPE, "error_type is longer than 127 bytes" },
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const char *s = *(const char *const *)(const void *)((const char *)f + fields[i].off);
        if (s && strnlen(s, fields[i].max + 1) > fields[i].max)
            return fields[i].what;
    }
    return NULL;
}

long fakedb_fault_add(fakedb *db, const fakedb_fault *f)
{
    if (!db || !f || f->kind < FAKEDB_FAULT_ERROR || f->kind > FAKEDB_FAULT_LOST_REQUEST ||
        f->count < 0 || f->delay_ms < 0 || (f->status && (f->status < 400 || f->status > 599)))
        return FAKEDB_EINVAL;
    if (fakedb__fault_too_long(f))
        return FAKEDB_ELIMIT;
    fakedb__fault_rec *rec = calloc(1, sizeof *rec);
    if (!rec)
        return FAKEDB_ENOMEM;
    rec->f = *f;
    rec->f.operation = dup_or_null(f->operation);
    rec->f.table = dup_or_null(f->table);
    rec->f.key = dup_or_null(f->key);
    rec->f.error_type = dup_or_null(f->error_type);
    pthread_mutex_lock(&db->fault_lock);
    fakedb__fault_rec **pp = &db->faults;
    long n = 0;
    for (; *pp; n++)
        pp = &(*pp)->next;
    if (n >= FAKEDB_MAX_FAULTS) {
        pthread_mutex_unlock(&db->fault_lock);
        fault_free(rec);
        return FAKEDB_ELIMIT;
    }
    rec->id = ++db->next_fault_id;
    *pp = rec;
    long id = rec->id;
    pthread_mutex_unlock(&db->fault_lock);
    return id;
}

void fakedb_fault_remove(fakedb *db, long id)
{
    if (!db)
        return;
    pthread_mutex_lock(&db->fault_lock);
    for (fakedb__fault_rec **pp = &db->faults; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            fakedb__fault_rec *f = *pp;
            *pp = f->next;
            fault_free(f);
            break;
        }
    }
    pthread_mutex_unlock(&db->fault_lock);
}

void fakedb__faults_free(fakedb *db)
{
    fakedb__fault_rec *f = db->faults, *n;
    for (; f; f = n) {
        n = f->next;
        fault_free(f);
    }
    db->faults = NULL;
}

void fakedb_fault_clear(fakedb *db)
{
    if (!db)
        return;
    pthread_mutex_lock(&db->fault_lock);
    fakedb__faults_free(db);
    pthread_mutex_unlock(&db->fault_lock);
}

/* The partition key value of an item or key, as a string (S as is, N normalised, B as
 * base64). */
static bool key_matches(json_object *attrs, const char *pk, const char *want)
{
    json_object *av = pk ? fakedb__json_get(attrs, pk) : NULL;
    char t = fakedb__av_scalar(av);
    if (!t)
        return false;
    const char *s = fakedb__json_str(av, t == 'S' ? "S" : t == 'N' ? "N" : "B");
    return s && !strcmp(s, want);
}

typedef struct match_ctx {
    fakedb *db;
    const char *table, *key;
    bool hit;
} match_ctx;

/* The request's database (databases.c), set by protocol.c before it matches faults. */
static _Thread_local fakedb__store *tl_store;

void fakedb__faults_store_set(fakedb__store *st)
{
    tl_store = st;
}

static void match_entry(match_ctx *m, const char *table, json_object *body)
{
    if (m->hit || !table)
        return;
    if (m->table && strcmp(m->table, table))
        return;
    if (!m->key) {
        m->hit = true;
        return;
    }
    const char *pk = NULL;
    fakedb__store *st = tl_store ? tl_store : &m->db->store;
    pthread_mutex_lock(&st->lock);
    fakedb__table *t = fakedb__table_find(st, table);
    char name[256] = "";
    if (t)
        snprintf(name, sizeof name, "%s", t->pk);
    pthread_mutex_unlock(&st->lock);
    pk = name[0] ? name : NULL;
    json_object *k = fakedb__json_get(body, "Key");
    json_object *it = fakedb__json_get(body, "Item");
    m->hit = key_matches(k, pk, m->key) || key_matches(it, pk, m->key);
    json_object *keys = fakedb__json_get(body, "Keys");
    for (size_t i = 0; !m->hit && keys && json_object_is_type(keys, json_type_array) &&
                       i < json_object_array_length(keys); i++)
        m->hit = key_matches(json_object_array_get_idx(keys, i), pk, m->key);
}

bool fakedb__fault_covers(const void *arg, const char *table, const char *pk, json_object *attrs)
{
    const fakedb__fault_hit *h = arg;
    if (h->table[0] && strcmp(h->table, table))
        return false;
    return !h->key[0] || key_matches(attrs, pk, h->key);
}

static bool request_matches(fakedb *db, const fakedb__fault_rec *f, json_object *req)
{
    match_ctx m = { db, f->f.table, f->f.key, false };
    if (!m.table && !m.key)
        return true;
    match_entry(&m, fakedb__json_str(req, "TableName"), req);
    json_object *ti = fakedb__json_get(req, "TransactItems");
    for (size_t i = 0; !m.hit && ti && json_object_is_type(ti, json_type_array) && i < json_object_array_length(ti); i++) {
        json_object *e = json_object_array_get_idx(ti, i);
        if (json_object_is_type(e, json_type_object)) {
            json_object_object_foreach(e, kind, body) {
                (void)kind;
                match_entry(&m, fakedb__json_str(body, "TableName"), body);
            }
        }
    }
    json_object *ri = fakedb__json_get(req, "RequestItems");
    if (ri && json_object_is_type(ri, json_type_object)) {
        json_object_object_foreach(ri, table, spec) {
            if (m.hit)
                break;
            if (json_object_is_type(spec, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(spec); i++) {
                    json_object *e = json_object_array_get_idx(spec, i);
                    match_entry(&m, table, fakedb__json_get(e, "PutRequest"));
                    match_entry(&m, table, fakedb__json_get(e, "DeleteRequest"));
                }
            } else {
                match_entry(&m, table, spec);
            }
        }
    }
    return m.hit;
}

bool fakedb__fault_match(fakedb *db, const char *op, json_object *req, fakedb_fault_kind kind,
                         fakedb__fault_hit *hit)
{
    bool found = false;
    pthread_mutex_lock(&db->fault_lock);
    for (fakedb__fault_rec **pp = &db->faults; *pp; pp = &(*pp)->next) {
        fakedb__fault_rec *f = *pp;
        if (f->f.kind != kind || (f->f.operation && strcmp(f->f.operation, op)))
            continue;
        if (!request_matches(db, f, req))
            continue;
        memset(hit, 0, sizeof *hit);
        hit->kind = f->f.kind;
        hit->delay_ms = f->f.delay_ms;
        snprintf(hit->table, sizeof hit->table, "%s", f->f.table ? f->f.table : "");
        snprintf(hit->key, sizeof hit->key, "%s", f->f.key ? f->f.key : "");
        snprintf(hit->error_type, sizeof hit->error_type, "%s",
                 f->f.error_type ? f->f.error_type : "ProvisionedThroughputExceededException");
        hit->status = f->f.status ? f->f.status
                      : !strcmp(hit->error_type, "InternalServerError") || !strcmp(hit->error_type, "InternalFailure") ||
                                !strcmp(hit->error_type, "ServiceUnavailable")
                          ? 500 : 400;
        f->fired++;
        db->faults_fired++;
        fakedb__metrics_fault(&db->metrics, f->f.kind);
        pthread_cond_broadcast(&db->fault_fired);
        if (f->f.count > 0 && f->fired >= f->f.count) {
            *pp = f->next;
            fault_free(f);
        }
        found = true;
        break;
    }
    pthread_mutex_unlock(&db->fault_lock);
    return found;
}

static const char *kind_name(fakedb_fault_kind k)
{
    return k == FAKEDB_FAULT_ERROR ? "error" : k == FAKEDB_FAULT_DELAY ? "delay"
           : k == FAKEDB_FAULT_LOST_RESPONSE ? "lost_response"
           : k == FAKEDB_FAULT_LOST_REQUEST ? "lost_request" : "unprocessed";
}

json_object *fakedb__faults_json(fakedb *db)
{
    json_object *arr = json_object_new_array();
    pthread_mutex_lock(&db->fault_lock);
    for (fakedb__fault_rec *f = db->faults; f; f = f->next) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_int64(f->id));
        json_object_object_add(o, "kind", json_object_new_string(kind_name(f->f.kind)));
        if (f->f.operation)
            json_object_object_add(o, "operation", json_object_new_string(f->f.operation));
        if (f->f.table)
            json_object_object_add(o, "table", json_object_new_string(f->f.table));
        if (f->f.key)
            json_object_object_add(o, "key", json_object_new_string(f->f.key));
        json_object_object_add(o, "count", json_object_new_int(f->f.count));
        json_object_object_add(o, "fired", json_object_new_int(f->fired));
        if (f->f.kind == FAKEDB_FAULT_ERROR) {
            json_object_object_add(o, "error_type", json_object_new_string(f->f.error_type ? f->f.error_type : "ProvisionedThroughputExceededException"));
            json_object_object_add(o, "status", json_object_new_int(f->f.status));
        }
        if (f->f.kind == FAKEDB_FAULT_DELAY)
            json_object_object_add(o, "delay_ms", json_object_new_int64(f->f.delay_ms));
        json_object_array_add(arr, o);
    }
    pthread_mutex_unlock(&db->fault_lock);
    return arr;
}

void fakedb__stat_count(fakedb *db, int op, bool condition_failure)
{
    pthread_mutex_lock(&db->stats_lock);
    if (op >= 0 && op < FDB_OP_COUNT) {
        db->stat_requests[op]++;
        if (condition_failure)
            db->stat_cond[op]++;
    }
    db->stat_requests[FDB_OP_COUNT]++;
    if (condition_failure)
        db->stat_cond[FDB_OP_COUNT]++;
    pthread_mutex_unlock(&db->stats_lock);
}

long fakedb_faults_fired(fakedb *db)
{
    if (!db)
        return 0;
    pthread_mutex_lock(&db->fault_lock);
    long n = db->faults_fired;
    pthread_mutex_unlock(&db->fault_lock);
    return n;
}

int fakedb_wait_faults_fired(fakedb *db, long n, int64_t timeout_ms)
{
    if (!db || timeout_ms < 0)
        return FAKEDB_EINVAL;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&db->fault_lock);
    while (db->faults_fired < n) {
        if (pthread_cond_timedwait(&db->fault_fired, &db->fault_lock, &deadline) != 0 &&
            db->faults_fired < n) {
            rc = FAKEDB_ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&db->fault_lock);
    return rc;
}

fakedb_stats fakedb_get_stats(fakedb *db, const char *operation)
{
    fakedb_stats s = { 0, 0 };
    if (!db)
        return s;
    int op = operation ? fakedb__op_lookup(operation) : FDB_OP_COUNT;
    if (op < 0)
        return s;
    pthread_mutex_lock(&db->stats_lock);
    s.requests = db->stat_requests[op];
    s.condition_failures = db->stat_cond[op];
    pthread_mutex_unlock(&db->stats_lock);
    return s;
}

static bool json_i64(json_object *o, const char *key, int64_t *out)
{
    json_object *v = fakedb__json_get(o, key);
    if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return false;
    *out = json_object_get_int64(v);
    return true;
}

long fakedb__fault_add_json(fakedb *db, json_object *b, const char **why)
{
    fakedb_fault f;
    memset(&f, 0, sizeof f);
    const char *kind = fakedb__json_str(b, "kind");
    if (!kind || !strcmp(kind, "error"))
        f.kind = FAKEDB_FAULT_ERROR;
    else if (!strcmp(kind, "delay"))
        f.kind = FAKEDB_FAULT_DELAY;
    else if (!strcmp(kind, "lost_response"))
        f.kind = FAKEDB_FAULT_LOST_RESPONSE;
    else if (!strcmp(kind, "unprocessed"))
        f.kind = FAKEDB_FAULT_UNPROCESSED;
    else if (!strcmp(kind, "lost_request"))
        f.kind = FAKEDB_FAULT_LOST_REQUEST;
    else {
        *why = "kind must be error, delay, lost_response, lost_request or unprocessed";
        return -1;
    }
    int64_t v;
    f.operation = fakedb__json_str(b, "operation");
    f.table = fakedb__json_str(b, "table");
    f.key = fakedb__json_str(b, "key");
    f.error_type = fakedb__json_str(b, "error_type");
    f.count = json_i64(b, "count", &v) ? (int)v : 0;
    f.status = json_i64(b, "status", &v) ? (int)v : 0;
    f.delay_ms = json_i64(b, "delay_ms", &v) ? v : 0;
    const char *too_long = fakedb__fault_too_long(&f);
    if (too_long) {
        *why = too_long;
        return FAKEDB_ELIMIT;
    }
    long id = fakedb_fault_add(db, &f);
    if (id < 0)
        *why = id == FAKEDB_ELIMIT ? "too many faults: at most 1000 at once (FAKEDB_MAX_FAULTS)"
               : id == FAKEDB_ENOMEM ? "out of memory"
                                     : "invalid fault";
    return id;
}
