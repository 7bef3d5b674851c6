/* control.c: what the embedding program and the admin API (admin.c, console.c) call to
 * steer a running fakedb: reset, a table without HTTP, the clock's moves (which expire the
 * items that came due and answer the clock long polls, waiters.c), the version. It calls
 * nothing of server.c, admin.c or console.c. */
#include "server.h"

#include <dynalock/version.h>

#include <stdio.h>
#include <string.h>

/* Expires the items due in one database (fakedb__databases_each). */
void fakedb__sweep_one(void *arg, fakedb__store *st, const char *key, const char *region)
{
    (void)arg, (void)key, (void)region;
    fakedb__ttl_sweep(st);
}

/* One slice of removing deleted tables' rows in one database (fakedb__databases_each);
 * *arg (a bool) becomes true when there may be more. */
void fakedb__purge_one(void *arg, fakedb__store *st, const char *key, const char *region)
{
    (void)key, (void)region;
    if (fakedb__purge_step(st) > 0)
        *(bool *)arg = true;
}

/* All of them, a slice at a time (requests run between the slices). */
static void purge_all(void *arg, fakedb__store *st, const char *key, const char *region)
{
    (void)arg, (void)key, (void)region;
    while (fakedb__purge_step(st) > 0)
        ;
}

static void reset_one(void *arg, fakedb__store *st, const char *key, const char *region)
{
    (void)arg, (void)key, (void)region;
    pthread_mutex_lock(&st->lock);
    fakedb__store_reset(st);
    pthread_mutex_unlock(&st->lock);
}

/* Every database, shared or separate. */
void fakedb_reset(fakedb *db)
{
    if (!db)
        return;
    fakedb__databases_each(db, reset_one, NULL);
    fakedb_fault_clear(db);
    pthread_mutex_lock(&db->stats_lock);
    memset(db->stat_requests, 0, sizeof db->stat_requests);
    memset(db->stat_cond, 0, sizeof db->stat_cond);
    pthread_mutex_unlock(&db->stats_lock);
}

/* A table for the embedding program: CreateTable without HTTP, string keys. */
int fakedb_create_table(fakedb *db, const char *name, const char *pk, const char *sk,
                        fakedb_error *err)
{
    fakedb__reply r;
    memset(&r, 0, sizeof r);
    if (!db || !name || !pk) {
        if (err) {
            err->code = FAKEDB_EINVAL;
            snprintf(err->message, sizeof err->message, "a table name and a partition key are required");
        }
        return FAKEDB_EINVAL;
    }
    if (db->separate_dbs) {
        if (err) {
            err->code = FAKEDB_EINVAL;
            snprintf(err->message, sizeof err->message,
                     "with separate databases a table belongs to an access key and region: create it by a signed request");
        }
        return FAKEDB_EINVAL;
    }
    json_object *req = json_object_new_object();
    json_object *defs = json_object_new_array(), *ks = json_object_new_array();
    const char *names[2] = { pk, sk };
    for (int i = 0; i < 2 && names[i]; i++) {
        json_object *d = json_object_new_object(), *k = json_object_new_object();
        json_object_object_add(d, "AttributeName", json_object_new_string(names[i]));
        json_object_object_add(d, "AttributeType", json_object_new_string("S"));
        json_object_object_add(k, "AttributeName", json_object_new_string(names[i]));
        json_object_object_add(k, "KeyType", json_object_new_string(i ? "RANGE" : "HASH"));
        json_object_array_add(defs, d);
        json_object_array_add(ks, k);
    }
    json_object_object_add(req, "TableName", json_object_new_string(name));
    json_object_object_add(req, "AttributeDefinitions", defs);
    json_object_object_add(req, "KeySchema", ks);
    json_object_object_add(req, "BillingMode", json_object_new_string("PAY_PER_REQUEST"));
    int rc = fakedb__op_create_table(&db->store, req, &r);
    json_object_put(req);
    json_object_put(r.body);
    if (rc == 0)
        return 0;
    int code = r.err.type && !strcmp(r.err.type, FDB_E_IN_USE) ? FAKEDB_EINUSE : FAKEDB_EINVAL;
    if (err) {
        err->code = code;
        fakedb__copy_str(err->message, sizeof err->message, r.err.message);
    }
    return code;
}

int64_t fakedb_clock_now_ms(fakedb *db)
{
    return db ? fakedb__now_ms(&db->clock) : 0;
}

/* A fake clock's move expires the items that became due, removes the rows of the tables
 * deleted since the last move, and answers the clock long polls, before it returns. */
static int clock_move(fakedb *db, bool relative, int64_t v)
{
    if (!db)
        return FAKEDB_EINVAL;
    int rc = fakedb__clock_move(&db->clock, relative, v);
    if (rc)
        return rc;
    fakedb__databases_each(db, fakedb__sweep_one, NULL);
    fakedb__databases_each(db, purge_all, NULL);
    fakedb__wake_waiters(db);
    return 0;
}

int fakedb_clock_advance(fakedb *db, int64_t ms)
{
    return clock_move(db, true, ms);
}

int fakedb_clock_set(fakedb *db, int64_t epoch_ms)
{
    return clock_move(db, false, epoch_ms);
}

const char *fakedb_version(void)
{
    return DDB_VERSION_STRING; /* one version for the whole project */
}
