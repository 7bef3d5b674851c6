/* batch.c: BatchGetItem and BatchWriteItem on one table. Keys and writes go in chunks
 * of DynamoDB's limits (100 keys, 25 writes); what comes back unprocessed is sent
 * again after a backoff on the client's clock, until all is done or the cancel is set. */
#include "client.h"

#include <stdlib.h>
#include <string.h>

#define GET_CHUNK 100
#define WRITE_CHUNK 25
/* Rounds in a row that make no progress before giving up as throttled. */
#define MAX_IDLE_ROUNDS 10

void ddb_item_array_free(ddb_item **items, size_t n)
{
    if (!items)
        return;
    for (size_t i = 0; i < n; i++)
        ddb_item_free(items[i]);
    free(items);
}

/* A queue of pending request entries (json objects), refilled from Unprocessed*. */
typedef struct pending {
    json_object **v;
    size_t n, cap, head;
} pending;

static int pending_push(pending *q, json_object *o)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 32;
        json_object **nv = realloc(q->v, cap * sizeof *nv);
        if (!nv)
            return DDB_ENOMEM;
        q->v = nv;
        q->cap = cap;
    }
    q->v[q->n++] = o;
    return 0;
}

static void pending_free(pending *q)
{
    for (size_t i = q->head; i < q->n; i++)
        json_object_put(q->v[i]);
    free(q->v);
}

/* The request of one round, with up to max entries moved from q (*sent of them):
 * {"RequestItems":{table:{"Keys":[...]}}} for a get (keys_key "Keys"), or
 * {"RequestItems":{table:[...]}} for a write (keys_key NULL). NULL when out of memory. */
static json_object *round_request(const char *table, const char *keys_key, bool consistent_read,
                                  pending *q, size_t max, size_t *sent)
{
    json_object *req = json_object_new_object();
    json_object *items = ddb__jadd(req, "RequestItems", json_object_new_object());
    json_object *arr;
    if (keys_key) {
        json_object *tab = ddb__jadd(items, table, json_object_new_object());
        arr = ddb__jadd(tab, keys_key, json_object_new_array());
        if (arr && consistent_read && !ddb__jadd(tab, "ConsistentRead", json_object_new_boolean(1)))
            arr = NULL;
    } else {
        arr = ddb__jadd(items, table, json_object_new_array());
    }
    *sent = 0;
    while (arr && q->head < q->n && *sent < max) {
        if (json_object_array_add(arr, q->v[q->head]) != 0) {
            arr = NULL; /* the entry stays in q */
        } else {
            q->head++;
            (*sent)++;
        }
    }
    if (!arr) {
        json_object_put(req);
        return NULL;
    }
    return req;
}

/* Waits before the next round when the last one left work unprocessed. */
static int backoff(ddb_client *c, int round, ddb_cancel *cancel, ddb_error *err, const char *op,
                   const char *table)
{
    int64_t ms = ddb__retry_backoff_ms(c->retry, round);
    if (ddb_clock_sleep(c->clock, ms, cancel) != 0)
        return ddb__fail(err, DDB_ECANCELED, "%s on %s was cancelled while waiting to retry unprocessed items",
                         op, table);
    return 0;
}

static int add_items(ddb_item ***items, size_t *n, size_t *cap, json_object *arr, ddb_error *err)
{
    size_t m = json_object_array_length(arr);
    for (size_t i = 0; i < m; i++) {
        ddb_item *it = ddb__item_from_jobj(json_object_array_get_idx(arr, i), err);
        if (!it)
            return err && err->code ? err->code : DDB_EPROTOCOL;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            ddb_item **ni = realloc(*items, nc * sizeof *ni);
            if (!ni) {
                ddb_item_free(it);
                return ddb__fail(err, DDB_ENOMEM, "out of memory");
            }
            *items = ni;
            *cap = nc;
        }
        (*items)[(*n)++] = it;
    }
    return 0;
}

/* The end of a round: what the answer left unprocessed (resp[field][table], or its
 * [sub] when sub is not NULL) goes back on the queue, and a round that left some waits
 * its backoff first; a batch that makes no progress for MAX_IDLE_ROUNDS rounds in a row
 * is throttled. */
static int round_end(ddb_client *c, const char *table, const char *op, json_object *resp,
                     const char *field, const char *sub, pending *q, size_t sent, int *idle,
                     int *round, ddb_cancel *cancel, ddb_error *err)
{
    json_object *u, *ut, *arr;
    if (!json_object_object_get_ex(resp, field, &u) ||
        !json_object_object_get_ex(u, table, &ut))
        return 0;
    if (sub && !json_object_object_get_ex(ut, sub, &arr))
        return 0;
    if (!sub)
        arr = ut;
    if (!json_object_is_type(arr, json_type_array))
        return 0;
    size_t unprocessed = json_object_array_length(arr);
    for (size_t i = 0; i < unprocessed; i++)
        if (pending_push(q, json_object_get(json_object_array_get_idx(arr, i))) != 0) {
            json_object_put(json_object_array_get_idx(arr, i));
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
        }
    if (unprocessed == 0)
        return 0;
    *idle = unprocessed == sent ? *idle + 1 : 0;
    if (*idle >= MAX_IDLE_ROUNDS)
        return ddb__fail(err, DDB_ETHROTTLED, "a %s on %s made no progress in %d rounds", op,
                         table, *idle);
    return backoff(c, ++*round, cancel, err, op, table);
}

int ddb_table_batch_get(ddb_table *t, const ddb_item *const *keys, size_t n_keys, bool consistent_read,
                  ddb_item ***items, size_t *n_items, ddb_cancel *cancel, ddb_error *err)
{
    ddb__err_reset(err);
    if (items)
        *items = NULL;
    if (n_items)
        *n_items = 0;
    if (!t || !items || !n_items || (n_keys && !keys))
        return ddb__fail(err, DDB_EINVAL, "ddb_table_batch_get needs a table, keys and outputs");
    ddb_client *c = t->client;
    DDB__CALL_SCOPE(c->clock);
    pending q = { 0 };
    ddb_item **out = NULL;
    size_t n_out = 0, cap_out = 0;
    int rc = 0, idle = 0, round = 0;

    for (size_t i = 0; i < n_keys && rc == 0; i++) {
        json_object *k = keys[i] ? ddb__item_to_jobj(keys[i]) : NULL;
        if (!keys[i])
            rc = ddb__fail(err, DDB_EINVAL, "key %zu of a batch get on %s is NULL", i, t->name);
        else if (!k || pending_push(&q, k) != 0) {
            json_object_put(k);
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        }
    }
    ddb__call call = { .operation = "BatchGetItem", .table = t->name };
    while (rc == 0 && q.head < q.n) {
        size_t sent;
        json_object *req = round_request(t->name, "Keys", consistent_read, &q, GET_CHUNK, &sent);
        if (!req) {
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
            break;
        }
        json_object *resp = NULL;
        rc = ddb__client_send(c, &call, req, &resp, cancel, NULL, err);
        json_object_put(req);
        if (rc != 0) {
            json_object_put(resp);
            break;
        }
        json_object *r, *arr;
        if (json_object_object_get_ex(resp, "Responses", &r) &&
            json_object_object_get_ex(r, t->name, &arr) && json_object_is_type(arr, json_type_array))
            rc = add_items(&out, &n_out, &cap_out, arr, err);
        if (rc == 0)
            rc = round_end(c, t->name, "BatchGetItem", resp, "UnprocessedKeys", "Keys", &q, sent,
                           &idle, &round, cancel, err);
        json_object_put(resp);
    }
    pending_free(&q);
    if (rc != 0) {
        ddb_item_array_free(out, n_out);
        return rc;
    }
    *items = out;
    *n_items = n_out;
    return 0;
}

static json_object *write_request(const char *kind, const char *field, const ddb_item *it)
{
    json_object *w = json_object_new_object();
    json_object *inner = ddb__jadd(w, kind, json_object_new_object());
    if (!inner || ddb__jadd_item(inner, field, it, NULL) != 0) {
        json_object_put(w);
        return NULL;
    }
    return w;
}

int ddb_table_batch_write(ddb_table *t, const ddb_item *const *puts, size_t n_puts,
                    const ddb_item *const *delete_keys, size_t n_deletes, ddb_cancel *cancel,
                    ddb_error *err)
{
    ddb__err_reset(err);
    if (!t || (n_puts && !puts) || (n_deletes && !delete_keys))
        return ddb__fail(err, DDB_EINVAL, "ddb_table_batch_write needs a table and its items");
    ddb_client *c = t->client;
    DDB__CALL_SCOPE(c->clock);
    pending q = { 0 };
    int rc = 0, idle = 0, round = 0;
    for (size_t i = 0; i < n_puts + n_deletes && rc == 0; i++) {
        bool put = i < n_puts;
        const ddb_item *it = put ? puts[i] : delete_keys[i - n_puts];
        if (!it) {
            rc = ddb__fail(err, DDB_EINVAL, "entry %zu of a batch write on %s is NULL", i, t->name);
            break;
        }
        json_object *w = put ? write_request("PutRequest", "Item", it)
                             : write_request("DeleteRequest", "Key", it);
        if (!w || pending_push(&q, w) != 0) {
            json_object_put(w);
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        }
    }
    ddb__call call = { .operation = "BatchWriteItem", .table = t->name };
    while (rc == 0 && q.head < q.n) {
        size_t sent;
        json_object *req = round_request(t->name, NULL, false, &q, WRITE_CHUNK, &sent);
        if (!req) {
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
            break;
        }
        json_object *resp = NULL;
        rc = ddb__client_send(c, &call, req, &resp, cancel, NULL, err);
        json_object_put(req);
        if (rc != 0) {
            json_object_put(resp);
            break;
        }
        rc = round_end(c, t->name, "BatchWriteItem", resp, "UnprocessedItems", NULL, &q, sent,
                       &idle, &round, cancel, err);
        json_object_put(resp);
    }
    pending_free(&q);
    return rc;
}
