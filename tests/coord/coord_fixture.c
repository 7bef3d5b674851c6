/* coord_fixture.c: the world the lock-layer suites run in -- see coord_fixture.h. Every
 * failure aborts the test through check. */
#include "coord_fixture.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Real-time guards against hangs; never what a test measures. */
#define GUARD_MS 20000

cx CX;
static int table_seq;

bool cx_fakedb(void)
{
    return CX.fx.db != NULL;
}

static void create_table(const char *name, const char *sk)
{
    if (!CX.external) {
        ck_assert_int_eq(dl_fixture_create_table(&CX.fx, name, "pk", sk), 0);
        return;
    }
    ddb_client *c = dl_fixture_client(&CX.fx, NULL);
    ck_assert_ptr_nonnull(c);
    ddb_error err;
    ddb_key_schema ks = {.pk = "pk", .pk_type = DDB_S, .sk = sk, .sk_type = DDB_S};
    int rc = ddb_client_create_table(c, name, &ks, &(ddb_create_table_options){.wait_active = true}, NULL,
                              &err);
    ck_assert_msg(rc == 0, "create table %s: %s", name, err.message);
    ddb_client_free(c);
}

void cx_setup(void)
{
    memset(&CX, 0, sizeof CX);
    const char *endpoint = getenv("DYNALOCK_TEST_ENDPOINT");
    table_seq++;
    if (endpoint && *endpoint) {
        CX.external = true;
        CX.fx.endpoint = endpoint;
        CX.fx.clock = ddb_fake_clock_new(1767225600000LL);
        ck_assert_ptr_nonnull(CX.fx.clock);
        snprintf(CX.shop, sizeof CX.shop, "Shop_%d_%d", (int)getpid(), table_seq);
        snprintf(CX.flat, sizeof CX.flat, "Flat_%d_%d", (int)getpid(), table_seq);
    } else {
        ck_assert_int_eq(dl_fixture_start(&CX.fx, &(dl_fixture_options){.fake_clock = true}),
                         0);
        snprintf(CX.shop, sizeof CX.shop, "Shop");
        snprintf(CX.flat, sizeof CX.flat, "Flat");
    }
    create_table(CX.shop, "sk");
    create_table(CX.flat, NULL);
}

void cx_teardown(void)
{
    if (CX.external) {
        ddb_client *c = dl_fixture_client(&CX.fx, NULL);
        if (c) {
            ddb_client_delete_table(c, CX.shop, NULL, NULL);
            ddb_client_delete_table(c, CX.flat, NULL, NULL);
            ddb_client_free(c);
        }
        ddb_clock_unref(CX.fx.clock);
        memset(&CX, 0, sizeof CX);
        return;
    }
    dl_fixture_stop(&CX.fx);
}

/* ---------------------------------------------------------------- recorder */

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

static void rec_log_fn(void *arg, int level, int event_id, const char *category,
                       const char *message, const ddb_log_field *fields, size_t n)
{
    rec *r = arg;
    pthread_mutex_lock(&r->mu);
    if (r->n_logs < REC_MAX) {
        rec_log *l = &r->logs[r->n_logs++];
        memset(l, 0, sizeof *l);
        l->level = level;
        l->event_id = event_id;
        copy(l->category, sizeof l->category, category);
        copy(l->message, sizeof l->message, message);
        for (size_t i = 0; i < n && i < REC_FIELDS; i++) {
            copy(l->keys[i], sizeof l->keys[i], fields[i].key);
            copy(l->values[i], sizeof l->values[i], fields[i].value);
            l->n++;
        }
    }
    pthread_mutex_unlock(&r->mu);
}

static void attr_text(const ddb_attr *a, char *out, size_t n)
{
    switch (a->type) {
    case DDB_ATTR_STR:
        copy(out, n, a->v.s);
        break;
    case DDB_ATTR_INT:
        snprintf(out, n, "%" PRId64, a->v.i);
        break;
    case DDB_ATTR_BOOL:
        copy(out, n, a->v.b ? "true" : "false");
        break;
    case DDB_ATTR_DOUBLE:
        snprintf(out, n, "%g", a->v.d);
        break;
    }
}

static rec_span *span_find(rec *r, uint64_t id)
{
    for (size_t i = r->n_spans; i-- > 0;)
        if (r->spans[i].id == id)
            return &r->spans[i];
    return NULL;
}

static void rec_span_start(void *arg, uint64_t id, uint64_t parent, const char *name,
                           const uint64_t *links, size_t n_links)
{
    rec *r = arg;
    pthread_mutex_lock(&r->mu);
    if (r->n_spans < REC_MAX) {
        rec_span *s = &r->spans[r->n_spans++];
        memset(s, 0, sizeof *s);
        s->id = id;
        s->parent = parent;
        copy(s->name, sizeof s->name, name);
        for (size_t i = 0; i < n_links && i < 2; i++)
            s->links[s->n_links++] = links[i];
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void rec_on_span_attr(void *arg, uint64_t id, const ddb_attr *a)
{
    rec *r = arg;
    pthread_mutex_lock(&r->mu);
    rec_span *s = span_find(r, id);
    if (s && s->n < 12) {
        copy(s->keys[s->n], sizeof s->keys[0], a->key);
        attr_text(a, s->values[s->n], sizeof s->values[0]);
        s->n++;
    }
    pthread_mutex_unlock(&r->mu);
}

static void rec_span_end(void *arg, uint64_t id, const char *error_type)
{
    rec *r = arg;
    pthread_mutex_lock(&r->mu);
    rec_span *s = span_find(r, id);
    if (s) {
        s->ended = true;
        copy(s->error_type, sizeof s->error_type, error_type);
    }
    pthread_mutex_unlock(&r->mu);
}

static void rec_metric_fn(void *arg, const char *name, const char *unit, double value,
                          const ddb_attr *attrs, size_t n)
{
    rec *r = arg;
    if (strncmp(name, "dynalock.lock.", 14) != 0)
        return; /* the client's own request metrics are not what these suites look at */
    pthread_mutex_lock(&r->mu);
    if (r->n_metrics < REC_MAX * 8) {
        rec_metric *m = &r->metrics[r->n_metrics++];
        memset(m, 0, sizeof *m);
        copy(m->name, sizeof m->name, name);
        copy(m->unit, sizeof m->unit, unit);
        m->value = value;
        for (size_t i = 0; i < n && i < 4; i++) {
            copy(m->keys[i], sizeof m->keys[i], attrs[i].key);
            attr_text(&attrs[i], m->values[i], sizeof m->values[i]);
            m->n++;
        }
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

int rec_logs(rec *r, int event_id)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n_logs; i++)
        if (!event_id || r->logs[i].event_id == event_id)
            n++;
    pthread_mutex_unlock(&r->mu);
    return n;
}

bool rec_last_log(rec *r, int event_id, rec_log *out)
{
    bool found = false;
    pthread_mutex_lock(&r->mu);
    for (size_t i = r->n_logs; i-- > 0;) {
        if (r->logs[i].event_id == event_id) {
            *out = r->logs[i];
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return found;
}

const char *rec_field(const rec_log *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->keys[i], key) == 0)
            return l->values[i];
    return "";
}

const char *rec_metric_attr(const rec_metric *m, const char *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->keys[i], key) == 0)
            return m->values[i];
    return NULL;
}

int rec_metrics(rec *r, const char *name, const char *key, const char *value)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n_metrics; i++) {
        rec_metric *m = &r->metrics[i];
        if (strcmp(m->name, name) != 0)
            continue;
        if (key) {
            const char *v = rec_metric_attr(m, key);
            if (!v || (value && strcmp(v, value) != 0))
                continue;
        }
        n++;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

static struct timespec guard_deadline(void);

/* Waits until n records named name are there: metric points, or spans started. */
static void rec_wait(rec *r, const char *name, int n, bool spans)
{
    struct timespec deadline = guard_deadline();
    pthread_mutex_lock(&r->mu);
    for (;;) {
        int have = 0;
        size_t count = spans ? r->n_spans : r->n_metrics;
        for (size_t i = 0; i < count; i++)
            if (strcmp(spans ? r->spans[i].name : r->metrics[i].name, name) == 0)
                have++;
        if (have >= n)
            break;
        if (pthread_cond_timedwait(&r->cv, &r->mu, &deadline) != 0) {
            pthread_mutex_unlock(&r->mu);
            ck_abort_msg("waited for %d %s of %s, saw %d", n, spans ? "spans" : "points", name,
                         have);
        }
    }
    pthread_mutex_unlock(&r->mu);
}

void rec_wait_metrics(rec *r, const char *name, int n)
{
    rec_wait(r, name, n, false);
}

void rec_wait_spans(rec *r, const char *name, int n)
{
    rec_wait(r, name, n, true);
}

bool rec_last_metric(rec *r, const char *name, rec_metric *out)
{
    bool found = false;
    pthread_mutex_lock(&r->mu);
    for (size_t i = r->n_metrics; i-- > 0;) {
        if (strcmp(r->metrics[i].name, name) == 0) {
            *out = r->metrics[i];
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return found;
}

int rec_spans(rec *r, const char *name, rec_span *out)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n_spans; i++) {
        if (strcmp(r->spans[i].name, name) == 0) {
            n++;
            if (out)
                *out = r->spans[i];
        }
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

int rec_children(rec *r, uint64_t parent, const char *name)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n_spans; i++)
        if (r->spans[i].parent == parent && (!name || strcmp(r->spans[i].name, name) == 0))
            n++;
    pthread_mutex_unlock(&r->mu);
    return n;
}

const char *rec_span_attr(const rec_span *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->keys[i], key) == 0)
            return s->values[i];
    return NULL;
}

/* ---------------------------------------------------------------- processes */

static void on_refusal(void *arg, const char *name)
{
    (void)name;
    proc *p = arg;
    pthread_mutex_lock(&p->mu);
    p->refusals++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

ddb_lease *cx_take(proc *p, const char *name, int64_t lease_ms)
{
    ddb_lease *lease = NULL;
    ddb_error err;
    int rc = ddb_lock_try_acquire(p->locks, name, lease_ms, &lease, NULL, &err);
    ck_assert_msg(rc == 0, "try_acquire: %s", err.message);
    ck_assert_ptr_nonnull(lease);
    return lease;
}

proc *cx_proc(const proc_options *o)
{
    proc_options zero = {0};
    if (!o)
        o = &zero;
    proc *p = calloc(1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    p->rec = calloc(1, sizeof *p->rec);
    ck_assert_ptr_nonnull(p->rec);
    pthread_mutex_init(&p->rec->mu, NULL);
    pthread_cond_init(&p->rec->cv, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    ddb_telemetry tel = {.arg = p->rec,
                         .span_start = rec_span_start,
                         .span_attr = rec_on_span_attr,
                         .span_end = rec_span_end,
                         .metric = rec_metric_fn};
    p->client = dl_fixture_client(
        &CX.fx, &(ddb_client_options){
                    .log = rec_log_fn,
                    .log_arg = p->rec,
                    .log_level = o->log_level ? o->log_level : DDB_LOG_DEBUG,
                    .telemetry = &tel,
                    .retry = {.max_attempts = o->max_attempts ? o->max_attempts
                                                              : DDB_NO_RETRIES}});
    ck_assert_ptr_nonnull(p->client);
    const char *table = o->table ? o->table : CX.shop;
    ddb_error err;
    const char *sk = strcmp(table, CX.flat) == 0 ? NULL : "sk";
    p->table = ddb_table_open(p->client, table, "pk", sk, &err);
    ck_assert_ptr_nonnull(p->table);
    p->locks = ddb_lock_table_new(p->table,
                                  &(ddb_lock_table_options){
                                      .holder_label = o->holder_label,
                                      .lease_value = o->lease_value,
                                      .ttl_attribute = o->ttl_attribute,
                                      .ttl_retention_ms = o->ttl_retention_ms},
                                  &err);
    ck_assert_msg(p->locks != NULL, "lock table: %s", err.message);
    p->hook = ddb_lock_table_watch_refusals(p->locks, on_refusal, p, NULL);
    ck_assert_int_gt(p->hook, 0);
    return p;
}

void cx_proc_free(proc *p)
{
    if (!p)
        return;
    ddb_lock_table_unwatch_refusals(p->locks, p->hook);
    ddb_lock_table_free(p->locks);
    ddb_table_close(p->table);
    ddb_client_free(p->client);
    pthread_mutex_destroy(&p->rec->mu);
    pthread_cond_destroy(&p->rec->cv);
    free(p->rec);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

long proc_refusals(proc *p)
{
    pthread_mutex_lock(&p->mu);
    long n = p->refusals;
    pthread_mutex_unlock(&p->mu);
    return n;
}

static struct timespec guard_deadline(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += GUARD_MS / 1000;
    return ts;
}

void proc_wait_refusals(proc *p, long n)
{
    struct timespec deadline = guard_deadline();
    pthread_mutex_lock(&p->mu);
    while (p->refusals < n) {
        if (pthread_cond_timedwait(&p->cv, &p->mu, &deadline) != 0 && p->refusals < n) {
            long got = p->refusals;
            pthread_mutex_unlock(&p->mu);
            ck_abort_msg("waited for refusal %ld, saw %ld", n, got);
        }
    }
    pthread_mutex_unlock(&p->mu);
}

void cx_advance(int64_t ms)
{
    ck_assert_int_eq(ddb_fake_clock_advance(CX.fx.clock, ms), 0);
    ck_assert_int_eq(ddb_fake_clock_settle(CX.fx.clock, GUARD_MS), 0);
}

int64_t cx_mono_ms(void)
{
    return ddb_clock_mono_ns(CX.fx.clock) / 1000000;
}

/* ----------------------------------------------------------- the lock item */

void cx_read(proc *p, const char *name, ddb__lock_item *out)
{
    ddb_error err;
    ddb_item *key = ddb__lock_key(p->locks, name, &err);
    ck_assert_ptr_nonnull(key);
    ddb_result res = {0};
    int rc = ddb_table_get_item(p->table, key, &(ddb_get_options){.consistent_read = true}, &res, NULL,
                          &err);
    ck_assert_msg(rc == 0, "read: %s", err.message);
    rc = ddb__lock_item_parse(p->locks, name, res.item, out, &err);
    ck_assert_msg(rc == 0, "parse: %s", err.message);
    ddb_result_cleanup(&res);
    ddb_item_free(key);
}

/* The moves of other processes are the lock table's own writes without conditions, so
 * they write the item exactly as a lock table does. */
int64_t cx_sim_holder(proc *p, const char *name, int64_t lease_ms, const char *label)
{
    ddb_error err;
    int64_t fence = 0;
    int rc = ddb_lock_force_hold(p->locks, name, lease_ms, label, &fence, NULL, &err);
    ck_assert_msg(rc == 0, "simulated holder: %s", err.message);
    return fence;
}

void cx_sim_release(proc *p, const char *name)
{
    ddb_error err;
    int rc = ddb_lock_force_release(p->locks, name, NULL, &err);
    ck_assert_msg(rc == 0, "simulated release: %s", err.message);
}

void cx_sim_delete(proc *p, const char *name)
{
    ddb_error err;
    int rc = ddb_lock_force_delete(p->locks, name, NULL, &err);
    ck_assert_msg(rc == 0, "simulated delete: %s", err.message);
}

void cx_put_raw(proc *p, const char *name, const char *attr, const char *value)
{
    ddb_error err;
    ddb_item *item = ddb__lock_key(p->locks, name, &err);
    ck_assert_ptr_nonnull(item);
    ddb_item_set_s(item, attr, value);
    ck_assert_int_eq(ddb_table_put_item(p->table, item, NULL, NULL, NULL, &err), 0);
    ddb_item_free(item);
}

long cx_requests(const char *operation)
{
    return fakedb_get_stats(CX.fx.db, operation).requests;
}

long cx_condition_failures(const char *operation)
{
    return fakedb_get_stats(CX.fx.db, operation).condition_failures;
}

/* ----------------------------------------------------- acquires on a thread */

static void *bg_main(void *arg)
{
    bg *b = arg;
    if (b->work)
        b->rc = ddb_lock_run_as_leader(b->p->locks, b->name, b->lease_ms, b->work, b->arg,
                                       b->stop, &b->err);
    else
        b->rc = ddb_lock_acquire(b->p->locks, b->name, b->lease_ms, &b->lease, b->stop,
                                 &b->err);
    atomic_store(&b->done, true);
    return NULL;
}

static void bg_start(bg *b)
{
    b->stop = ddb_cancel_new();
    ck_assert_ptr_nonnull(b->stop);
    atomic_init(&b->done, false);
    ck_assert_int_eq(pthread_create(&b->th, NULL, bg_main, b), 0);
}

void bg_acquire(bg *b, proc *p, const char *name, int64_t lease_ms)
{
    memset(b, 0, sizeof *b);
    b->p = p;
    b->name = name;
    b->lease_ms = lease_ms;
    bg_start(b);
}

void bg_leader(bg *b, proc *p, const char *name, int64_t lease_ms, ddb_leader_fn work,
               void *arg)
{
    memset(b, 0, sizeof *b);
    b->p = p;
    b->name = name;
    b->lease_ms = lease_ms;
    b->work = work;
    b->arg = arg;
    bg_start(b);
}

int bg_join(bg *b)
{
    /* A hang guard: the test itself decides when the thread may end. */
    struct timespec deadline = guard_deadline();
    int rc = pthread_timedjoin_np(b->th, NULL, &deadline);
    ck_assert_msg(rc == 0, "the thread of %s did not end", b->name);
    ddb_cancel_unref(b->stop);
    b->stop = NULL;
    return b->rc;
}

bool bg_done(bg *b)
{
    return atomic_load(&b->done);
}

void cx_event_init(cx_event *e)
{
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->count = 0;
}

void cx_event_signal(cx_event *e)
{
    pthread_mutex_lock(&e->mu);
    e->count++;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

void cx_event_wait(cx_event *e, int n)
{
    struct timespec deadline = guard_deadline();
    pthread_mutex_lock(&e->mu);
    while (e->count < n) {
        if (pthread_cond_timedwait(&e->cv, &e->mu, &deadline) != 0 && e->count < n) {
            int got = e->count;
            pthread_mutex_unlock(&e->mu);
            ck_abort_msg("waited for event %d, saw %d", n, got);
        }
    }
    pthread_mutex_unlock(&e->mu);
}

static void late_update_span_start(void *arg, uint64_t id, uint64_t parent, const char *name,
                                   const uint64_t *links, size_t n_links)
{
    (void)id;
    (void)links;
    (void)n_links;
    cx_late_update *l = arg;
    if (parent != 0 && strcmp(name, "UpdateItem") == 0 && atomic_exchange(&l->armed, false)) {
        ddb_fake_clock_advance(CX.fx.clock, l->by_ms);
        atomic_fetch_add(&l->fired, 1);
    }
}

void cx_late_update_init(cx_late_update *l)
{
    memset(l, 0, sizeof *l);
    l->tel = (ddb_telemetry){.arg = l, .span_start = late_update_span_start};
    atomic_init(&l->armed, false);
    atomic_init(&l->fired, 0);
}

void cx_late_update_arm(cx_late_update *l, int64_t by_ms)
{
    l->by_ms = by_ms;
    atomic_store(&l->armed, true);
}

void cx_event_destroy(cx_event *e)
{
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
}
