/* ttl.c: time to live. Items whose TTL attribute (a number of epoch seconds) is due on
 * the server's clock are deleted: on every fake clock move before it returns, and about
 * once a second with the system clock. As DynamoDB does, values more than five years in
 * the past are ignored. The same sweep trims DynamoDB Streams' records and disabled streams
 * past their retention (stream_store.c). */
#include "store.h"

#include <stdlib.h>
#include <string.h>

#define FIVE_YEARS_S (5LL * 365 * 24 * 3600)

static int sweep_table(fakedb__store *db, fakedb__table *t, int64_t now_s)
{
    /* collect first: deleting while a statement walks the same index is avoided */
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT pk, sk, item FROM fdb_items WHERE tid = ?1 AND ttl IS NOT NULL AND ttl <= ?2 AND ttl >= ?3 LIMIT 1000");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_int64(st, 2, now_s);
    sqlite3_bind_int64(st, 3, now_s - FIVE_YEARS_S);
    size_t cap = 16, n = 0;
    fakedb__key *keys = malloc(cap * sizeof *keys);
    json_object **items = malloc(cap * sizeof *items);
    int rc = keys && items ? 0 : -1;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap *= 2;
            fakedb__key *nk = realloc(keys, cap * sizeof *keys);
            if (nk)
                keys = nk;
            json_object **ni = realloc(items, cap * sizeof *items);
            if (ni)
                items = ni;
            if (!nk || !ni) {
                rc = -1;
                break;
            }
        }
        fakedb__key *k = &keys[n];
        if (!fakedb__key_from_row(st, k))
            continue;
        items[n] = fakedb__json_from_text((const char *)sqlite3_column_text(st, 2));
        n++;
    }
    sqlite3_reset(st);
    db->ttl_deleting = true; /* their stream records name the service as the deleter */
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = fakedb__item_remove(db, t, &keys[i], items[i]);
    db->ttl_deleting = false;
    for (size_t i = 0; i < n; i++)
        json_object_put(items[i]);
    free(keys);
    free(items);
    return rc < 0 ? rc : (int)n;
}

/* A batch of at most 1,000 items per transaction, with the lock released between the
 * batches (requests run between them); the tables are visited in the order of their ids,
 * found again after each batch since one may be deleted in between. */
int fakedb__ttl_sweep(fakedb__store *db)
{
    int64_t now_s = fakedb__now_ms(db->clock) / 1000;
    int64_t done_id = INT64_MIN; /* the tables up to this id are swept */
    int total = 0;
    for (;;) {
        pthread_mutex_lock(&db->lock);
        fakedb__table *t = NULL;
        for (fakedb__table *x = db->tables; x; x = x->next)
            if (x->ttl_attr && x->id > done_id && (!t || x->id < t->id))
                t = x;
        if (!t) {
            fakedb__streams_trim(db, fakedb__now_ms(db->clock));
            pthread_mutex_unlock(&db->lock);
            return total;
        }
        int n = -1;
        if (fakedb__tx_begin(db) == 0) {
            n = sweep_table(db, t, now_s);
            if (n < 0 || fakedb__tx_commit(db)) {
                fakedb__tx_rollback(db);
                n = -1;
            }
        }
        if (n < 1000)
            done_id = t->id;
        if (n > 0)
            total += n;
        pthread_mutex_unlock(&db->lock);
    }
}
