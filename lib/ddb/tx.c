/* tx.c: transactions. ddb_tx builds a TransactWriteItems request action by action,
 * hands out markers, and after a cancelled send tells each action's reason (and the
 * old item, with ALL_OLD) from CancellationReasons. ddb_client_transact_get is TransactGetItems. */
#include "client.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* DynamoDB takes at most 100 actions per transaction. */
#define TX_MAX_ACTIONS 100

typedef struct tx_action {
    json_object *req;            /* {"Put": {...}} etc. */
    char *table;
    ddb_tx_failure reason;
    ddb_item *item;              /* ALL_OLD on a failed condition */
} tx_action;

struct ddb_tx {
    ddb_client *client;
    tx_action *actions;
    size_t n, cap;
    char *token;
    ddb_error poison;            /* set by ddb__tx_set_error: send fails with it */
};

ddb_tx *ddb_tx_new(ddb_client *c)
{
    if (!c)
        return NULL;
    ddb_tx *tx = calloc(1, sizeof *tx);
    if (tx)
        tx->client = c;
    return tx;
}

static void clear_outcome(ddb_tx *tx)
{
    for (size_t i = 0; i < tx->n; i++) {
        tx->actions[i].reason = DDB_TXFAIL_NONE;
        ddb_item_free(tx->actions[i].item);
        tx->actions[i].item = NULL;
    }
}

void ddb_tx_free(ddb_tx *tx)
{
    if (!tx)
        return;
    clear_outcome(tx);
    for (size_t i = 0; i < tx->n; i++) {
        json_object_put(tx->actions[i].req);
        free(tx->actions[i].table);
    }
    free(tx->actions);
    free(tx->token);
    free(tx);
}

size_t ddb_tx_count(const ddb_tx *tx) { return tx ? tx->n : 0; }

void ddb__tx_set_error(ddb_tx *tx, const ddb_error *err)
{
    if (!tx || !err || err->code == 0)
        return;
    if (tx->poison.code == 0)
        tx->poison = *err;
}

int ddb_tx_set_token(ddb_tx *tx, const char *client_request_token)
{
    if (!tx || !client_request_token || !*client_request_token || strlen(client_request_token) > 36)
        return DDB_EINVAL;
    char *t = strdup(client_request_token);
    if (!t)
        return DDB_ENOMEM;
    free(tx->token);
    tx->token = t;
    return 0;
}

/* Adds one action of `kind` with `field` -> item (Item or Key) and the options. */
static int add_action(ddb_tx *tx, const char *kind, ddb_table *t, const char *field,
                      const ddb_item *item, const char *update, const ddb_tx_options *o,
                      ddb_tx_marker *marker, ddb_error *err)
{
    ddb__err_reset(err);
    if (marker)
        marker->index = -1;
    if (!tx || !t || !item)
        return ddb__fail(err, DDB_EINVAL, "A %s action needs a transaction, a table and %s",
                         kind, strcmp(field, "Item") == 0 ? "an item" : "a key");
    if (tx->n >= TX_MAX_ACTIONS)
        return ddb__fail(err, DDB_EINVAL, "A transaction holds at most %d actions",
                         TX_MAX_ACTIONS);
    if (strcmp(kind, "ConditionCheck") == 0 && (!o || !o->condition || !*o->condition))
        return ddb__fail(err, DDB_EINVAL, "A ConditionCheck action needs a condition");
    if (strcmp(kind, "Update") == 0 && (!update || !*update))
        return ddb__fail(err, DDB_EINVAL, "An Update action needs an update expression");
    if (tx->n == tx->cap) {
        size_t cap = tx->cap ? tx->cap * 2 : 8;
        tx_action *na = realloc(tx->actions, cap * sizeof *na);
        if (!na)
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
        tx->actions = na;
        tx->cap = cap;
    }
    json_object *body = json_object_new_object();
    json_object *wrap = json_object_new_object();
    char *tname = strdup(t->name);
    int rc = 0;
    if (!body || !wrap || !tname || !ddb__jadd_str(body, "TableName", t->name))
        rc = DDB_ENOMEM;
    if (rc == 0)
        rc = ddb__jadd_item(body, field, item, NULL);
    if (rc == 0 && update && !ddb__jadd_str(body, "UpdateExpression", update))
        rc = DDB_ENOMEM;
    if (rc == 0 && o) {
        if (o->condition && !ddb__jadd_str(body, "ConditionExpression", o->condition))
            rc = DDB_ENOMEM;
        if (rc == 0)
            rc = ddb__jadd_expr(body, o->names, o->values, NULL);
        if (rc == 0 && o->return_old_on_condition_fail &&
            !ddb__jadd_str(body, "ReturnValuesOnConditionCheckFailure", "ALL_OLD"))
            rc = DDB_ENOMEM;
    }
    if (rc == 0 && json_object_object_add(wrap, kind, body) != 0)
        rc = DDB_ENOMEM;
    else if (rc == 0)
        body = NULL;
    if (rc != 0) {
        json_object_put(body);
        json_object_put(wrap);
        free(tname);
        return ddb__fail(err, rc, rc == DDB_ENOMEM ? "out of memory" : "the %s action is invalid", kind);
    }
    tx->actions[tx->n] = (tx_action){ .req = wrap, .table = tname };
    if (marker)
        marker->index = (int)tx->n;
    tx->n++;
    return 0;
}

int ddb_tx_put(ddb_tx *tx, ddb_table *t, const ddb_item *item, const ddb_tx_options *o,
               ddb_tx_marker *marker, ddb_error *err)
{
    return add_action(tx, "Put", t, "Item", item, NULL, o, marker, err);
}

int ddb_tx_update(ddb_tx *tx, ddb_table *t, const ddb_item *key, const char *update,
                  const ddb_tx_options *o, ddb_tx_marker *marker, ddb_error *err)
{
    return add_action(tx, "Update", t, "Key", key, update, o, marker, err);
}

int ddb_tx_delete(ddb_tx *tx, ddb_table *t, const ddb_item *key, const ddb_tx_options *o,
                  ddb_tx_marker *marker, ddb_error *err)
{
    return add_action(tx, "Delete", t, "Key", key, NULL, o, marker, err);
}

int ddb_tx_check(ddb_tx *tx, ddb_table *t, const ddb_item *key, const ddb_tx_options *o,
                 ddb_tx_marker *marker, ddb_error *err)
{
    return add_action(tx, "ConditionCheck", t, "Key", key, NULL, o, marker, err);
}

static ddb_tx_failure failure_for_code(const char *code)
{
    if (!code || !*code || strcmp(code, "None") == 0)
        return DDB_TXFAIL_NONE;
    if (strcmp(code, "ConditionalCheckFailed") == 0)
        return DDB_TXFAIL_CONDITIONAL_CHECK_FAILED;
    if (strcmp(code, "TransactionConflict") == 0)
        return DDB_TXFAIL_TRANSACTION_CONFLICT;
    if (strcmp(code, "ItemCollectionSizeLimitExceeded") == 0)
        return DDB_TXFAIL_ITEM_COLLECTION_SIZE_LIMIT_EXCEEDED;
    if (strcmp(code, "ThrottlingError") == 0 || strcmp(code, "ProvisionedThroughputExceeded") == 0 ||
        strcmp(code, "RequestLimitExceeded") == 0)
        return DDB_TXFAIL_THROTTLING;
    if (strcmp(code, "ValidationError") == 0)
        return DDB_TXFAIL_VALIDATION;
    return DDB_TXFAIL_OTHER;
}

/* Reads CancellationReasons; without them, the bracketed list of the message
 * ("... [ConditionalCheckFailed, None]") says the same thing. */
static void read_reasons(ddb_tx *tx, json_object *body, const char *message)
{
    json_object *reasons;
    if (body && json_object_object_get_ex(body, "CancellationReasons", &reasons) &&
        json_object_is_type(reasons, json_type_array)) {
        size_t n = json_object_array_length(reasons);
        for (size_t i = 0; i < n && i < tx->n; i++) {
            json_object *r = json_object_array_get_idx(reasons, i), *code;
            const char *cs = json_object_object_get_ex(r, "Code", &code) ? json_object_get_string(code) : NULL;
            tx->actions[i].reason = failure_for_code(cs);
            ddb_item *it = NULL;
            if (ddb__jget_item(r, "Item", &it, NULL) == 0)
                tx->actions[i].item = it;
        }
        return;
    }
    const char *lb = message ? strrchr(message, '[') : NULL;
    if (!lb)
        return;
    const char *p = lb + 1;
    for (size_t i = 0; i < tx->n && *p && *p != ']'; i++) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, ",]"), l = len;
        while (l > 0 && p[l - 1] == ' ')
            l--;
        if (l > 63)
            l = 63;
        char code[64];
        memcpy(code, p, l);
        code[l] = '\0';
        tx->actions[i].reason = failure_for_code(code);
        p += len;
        if (*p == ',')
            p++;
    }
}

/* The tables of the transaction, comma-separated and each once, for telemetry. */
static char *table_names(const char *const *names, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(names[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = '\0';
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(names[i], names[j]) == 0;
        if (seen)
            continue;
        at += (size_t)sprintf(s + at, "%s%s", at ? "," : "", names[i]);
    }
    return s;
}

static char *tx_table_names(const ddb_tx *tx)
{
    const char **names = malloc((tx->n ? tx->n : 1) * sizeof *names);
    if (!names)
        return NULL;
    for (size_t i = 0; i < tx->n; i++)
        names[i] = tx->actions[i].table;
    char *s = table_names(names, tx->n);
    free(names);
    return s;
}

/* A random version-4 UUID (36 characters and a NUL), the form the AWS SDKs give a
 * ClientRequestToken they fill in. */
static const char *new_request_token(char out[37])
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n > 0) {
            got += (size_t)n;
        } else if (n < 0 && errno != EINTR) {
            /* No entropy source: unique within this process is what a retry needs. */
            static _Atomic uint64_t counter;
            uint64_t x = atomic_fetch_add(&counter, 1) + 1, y = (uint64_t)getpid();
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            y ^= (uint64_t)ts.tv_sec << 32 ^ (uint64_t)ts.tv_nsec;
            memcpy(b, &x, 8);
            memcpy(b + 8, &y, 8);
            break;
        }
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (size_t i = 0; i < sizeof b; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
    }
    *p = '\0';
    return out;
}

int ddb_tx_send(ddb_tx *tx, ddb_cancel *cancel, ddb_error *err)
{
    ddb__err_reset(err);
    if (!tx)
        return ddb__fail(err, DDB_EINVAL, "no transaction was given");
    clear_outcome(tx);
    if (tx->poison.code != 0) {
        if (err)
            *err = tx->poison;
        return tx->poison.code;
    }
    if (tx->n == 0)
        return ddb__fail(err, DDB_EINVAL, "a transaction needs at least one action");
    DDB__CALL_SCOPE(tx->client->clock);
    json_object *req = json_object_new_object(), *arr = json_object_new_array_ext((int)tx->n);
    char *names = tx_table_names(tx);
    int rc = 0;
    if (!req || !arr || !names || json_object_object_add(req, "TransactItems", arr) != 0) {
        json_object_put(arr);
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < tx->n; i++) {
        if (json_object_array_add(arr, json_object_get(tx->actions[i].req)) != 0) {
            json_object_put(tx->actions[i].req);
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
            goto out;
        }
    }
    /* As the AWS SDKs fill in an idempotency token: one per send, the same on every
     * retry, so that a retry of a transaction that was applied while its answer was lost
     * succeeds (for ten minutes) instead of failing its conditions. */
    char made[37];
    const char *token = tx->token ? tx->token : new_request_token(made);
    if (!ddb__jadd_str(req, "ClientRequestToken", token)) {
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    bool one_table = strchr(names, ',') == NULL;
    ddb__call call = { .operation = "TransactWriteItems", .table = one_table ? names : NULL,
                       .table_names = names };
    json_object *resp = NULL;
    ddb_error local;
    ddb_error_clear(&local);
    rc = ddb__client_send(tx->client, &call, req, &resp, cancel, NULL, &local);
    if (rc == DDB_ETXCANCELED)
        read_reasons(tx, resp, local.message);
    json_object_put(resp);
    if (rc != 0 && err)
        *err = local;
out:
    json_object_put(req);
    free(names);
    return rc;
}

ddb_tx_failure ddb_tx_reason_for(const ddb_tx *tx, ddb_tx_marker marker)
{
    if (!tx || marker.index < 0 || (size_t)marker.index >= tx->n)
        return DDB_TXFAIL_NONE;
    return tx->actions[marker.index].reason;
}

const ddb_item *ddb_tx_item_for(const ddb_tx *tx, ddb_tx_marker marker)
{
    if (!tx || marker.index < 0 || (size_t)marker.index >= tx->n)
        return NULL;
    return tx->actions[marker.index].item;
}

int ddb_client_transact_get(ddb_client *c, ddb_table *const *tables, const ddb_item *const *keys, size_t n,
               ddb_item ***items, ddb_cancel *cancel, ddb_error *err)
{
    ddb__err_reset(err);
    if (items)
        *items = NULL;
    if (!c || !tables || !keys || !items || n == 0 || n > TX_MAX_ACTIONS)
        return ddb__fail(err, DDB_EINVAL, "ddb_client_transact_get needs a client and 1 to 100 tables and keys");
    for (size_t i = 0; i < n; i++)
        if (!tables[i] || !keys[i])
            return ddb__fail(err, DDB_EINVAL, "table or key %zu of a transactional get is NULL", i);
    DDB__CALL_SCOPE(c->clock);
    json_object *req = json_object_new_object(), *arr = json_object_new_array();
    const char **tn = malloc(n * sizeof *tn);
    char *names = NULL;
    int rc = 0;
    if (!req || !arr || !tn || json_object_object_add(req, "TransactItems", arr) != 0) {
        json_object_put(arr);
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        tn[i] = tables[i]->name;
        json_object *w = json_object_new_object();
        json_object *g = ddb__jadd(w, "Get", json_object_new_object());
        if (!g || !ddb__jadd_str(g, "TableName", tables[i]->name) ||
            ddb__jadd_item(g, "Key", keys[i], NULL) != 0 || json_object_array_add(arr, w) != 0) {
            json_object_put(w);
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
            break;
        }
    }
    if (rc != 0)
        goto out;
    names = table_names(tn, n);
    if (!names) {
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    ddb__call call = { .operation = "TransactGetItems",
                       .table = strchr(names, ',') ? NULL : names, .table_names = names };
    json_object *resp = NULL;
    rc = ddb__client_send(c, &call, req, &resp, cancel, NULL, err);
    if (rc == 0) {
        json_object *r;
        ddb_item **out = calloc(n, sizeof *out);
        if (!out) {
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        } else if (!json_object_object_get_ex(resp, "Responses", &r) ||
                   !json_object_is_type(r, json_type_array) || json_object_array_length(r) != n) {
            rc = ddb__fail(err, DDB_EPROTOCOL, "TransactGetItems answered with %s responses",
                           "a wrong number of");
        } else {
            for (size_t i = 0; i < n && rc == 0; i++) {
                ddb_error perr;
                ddb_error_clear(&perr);
                int prc = ddb__jget_item(json_object_array_get_idx(r, i), "Item", &out[i], &perr);
                if (prc != 0)
                    rc = ddb__fail(err, prc, "TransactGetItems answered with a bad item: %s", perr.message);
            }
        }
        if (rc == 0)
            *items = out;
        else
            ddb_item_array_free(out, n);
    }
    json_object_put(resp);
out:
    json_object_put(req);
    free(tn);
    free(names);
    return rc;
}
