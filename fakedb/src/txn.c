/* txn.c: TransactWriteItems and TransactGetItems. A transaction is validated whole, its
 * conditions are evaluated against one snapshot (the data lock is held throughout), and
 * it is applied all or nothing in one sqlite transaction; a failed condition cancels it
 * with the reasons in request order. ClientRequestToken makes a write idempotent for ten
 * minutes of the server's clock. */
#include "ops.h"
#include "expr.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TX_ITEMS 100
#define MAX_TX_BYTES (4 * 1024 * 1024)

/* A key that does not fit the table's schema: DynamoDB cancels the transaction with a
 * ValidationError reason for that action instead of failing the request. */
static bool key_schema_error(const fakedb__reply *r)
{
    return r->err.type && !strcmp(r->err.type, FDB_E_VALIDATION) &&
           (strstr(r->err.message, "Type mismatch for key") || strstr(r->err.message, "Missing the key") ||
            strstr(r->err.message, "The provided key element does not match the schema"));
}

static int same_item(const fakedb__write *a, const fakedb__write *b)
{
    return a->table == b->table && a->key.pk_len == b->key.pk_len && a->key.sk_len == b->key.sk_len &&
           !memcmp(a->key.pk, b->key.pk, a->key.pk_len) && !memcmp(a->key.sk, b->key.sk, a->key.sk_len);
}

static int tx_items(json_object *req, fakedb__reply *r, json_object **out)
{
    return fakedb__reply_need_list(req, "TransactItems", "transactItems", MAX_TX_ITEMS, out, r);
}

static void digest_of(json_object *o, char out[65])
{
    size_t len = 0;
    const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(s, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned i = 0; i < mdlen && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[64] = 0;
}

static void cancel(fakedb__reply *r, fakedb__write *w, size_t n, const int *outcome,
                   char (*msgs)[FAKEDB_EXPR_ERR_MAX + 64])
{
    char codes[4096];
    size_t o = 0;
    json_object *reasons = json_object_new_array();
    bool cond = false;
    codes[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const char *code = outcome[i] == 1 ? "ConditionalCheckFailed" : outcome[i] == -1 ? "ValidationError" : "None";
        json_object *e = json_object_new_object();
        json_object_object_add(e, "Code", json_object_new_string(code));
        if (outcome[i] == 1) {
            cond = true;
            json_object_object_add(e, "Message", json_object_new_string("The conditional request failed"));
            if (w[i].return_old_on_fail && w[i].old_item)
                json_object_object_add(e, "Item", json_object_get(w[i].old_item));
        } else if (outcome[i] == -1) {
            json_object_object_add(e, "Message", json_object_new_string(msgs[i]));
        }
        json_object_array_add(reasons, e);
        int k = snprintf(codes + o, o < sizeof codes ? sizeof codes - o : 0, "%s%s", i ? ", " : "", code);
        if (k > 0)
            o += (size_t)k;
    }
    fakedb__reply_fail(r, FDB_E_TX_CANCELED, "Transaction cancelled, please refer cancellation reasons for specific reasons [%s]", codes);
    r->condition_failure = cond;
    r->body = json_object_new_object();
    json_object_object_add(r->body, "CancellationReasons", reasons);
}

static const char *const k_kinds[] = { "Put", "Update", "Delete", "ConditionCheck" };
static const fakedb__wkind k_wkinds[] = { FDB_W_PUT, FDB_W_UPDATE, FDB_W_DELETE, FDB_W_CHECK };

static int tx_write_locked(fakedb__store *db, json_object *req, json_object *list, fakedb__write *w,
                           size_t *prepared, fakedb__reply *r)
{
    size_t n = json_object_array_length(list);
    const char *token = fakedb__json_str(req, "ClientRequestToken");
    char digest[65] = "", seen[80];
    int64_t now = fakedb__now_ms(db->clock);
    if (token) {
        size_t tl = strlen(token);
        if (tl < 1 || tl > 36)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36", token);
        digest_of(list, digest);
        int found = fakedb__token_lookup(db, token, now, seen, sizeof seen);
        if (found == 1) {
            if (strcmp(seen, digest))
                return fakedb__reply_fail(r, FDB_E_IDEMPOTENT, "Request token is already used for a different request.");
            r->body = json_object_new_object();
            return 0;
        }
    }
    int *outcome = calloc(n, sizeof *outcome);
    char (*msgs)[FAKEDB_EXPR_ERR_MAX + 64] = calloc(n, sizeof *msgs);
    bool failed = false;
    int rc = 0;
    size_t payload = 0;
    if (!outcome || !msgs) {
        free(outcome);
        free(msgs);
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    }
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        json_object *body = NULL;
        int kind = -1, found = 0;
        for (int k = 0; k < 4; k++) {
            json_object *v = fakedb__json_get(e, k_kinds[k]);
            if (v) {
                found++;
                kind = k;
                body = v;
            }
        }
        if (found != 1) {
            rc = fakedb__reply_fail_validation(r, "TransactItems can only contain one of Check, Put, Update or Delete");
            goto out;
        }
        /* Counted before it is prepared: a write that fails half-way holds parsed
         * expressions that the cleanup must free too. */
        *prepared = i + 1;
        if (fakedb__write_prepare(db, k_wkinds[kind], body, &w[i], r)) {
            if (!key_schema_error(r)) {
                rc = -1;
                goto out;
            }
            /* DynamoDB stops at the first invalid action: it alone is named, those after
             * it are None (-2: invalid, not named); every action is still read, as a
             * malformed one fails the whole request first */
            outcome[i] = failed ? -2 : -1;
            fakedb__copy_str(msgs[i], sizeof msgs[i], r->err.message);
            memset(r, 0, sizeof *r);
            failed = true;
            continue;
        }
        payload += fakedb__item_size(w[i].kind == FDB_W_PUT ? w[i].item : w[i].key_attrs);
        for (size_t j = 0; j < i; j++) {
            if (!outcome[j] && same_item(&w[j], &w[i])) {
                rc = fakedb__reply_fail_validation(r, "Transaction request cannot include multiple operations on one item");
                goto out;
            }
        }
    }
    if (payload > MAX_TX_BYTES) {
        rc = fakedb__reply_fail_validation(r, "Transaction payload size cannot exceed 4MB. Payload Size: %zu", payload);
        goto out;
    }
    if (failed) {
        cancel(r, w, n, outcome, msgs);
        rc = -1;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        fakedb__reply sub;
        memset(&sub, 0, sizeof sub);
        outcome[i] = fakedb__write_eval(db, &w[i], &sub);
        /* An action that cannot be evaluated (an update naming a missing operand, an
         * item grown past 400 KB) fails the whole request, as DynamoDB does; only keys
         * that do not fit (above) become ValidationError reasons. */
        if (outcome[i] < 0) {
            fakedb__reply_fail(r, sub.err.type ? sub.err.type : FDB_E_INTERNAL, "%s", sub.err.message);
            json_object_put(sub.body);
            rc = -1;
            goto out;
        }
        json_object_put(sub.body);
        failed = failed || outcome[i] != 0;
    }
    if (failed) {
        cancel(r, w, n, outcome, msgs);
        rc = -1;
    } else {
        if (fakedb__tx_begin(db))
            rc = -1;
        for (size_t i = 0; rc == 0 && i < n; i++)
            rc = fakedb__write_apply(db, &w[i]);
        if (rc == 0 && token)
            rc = fakedb__token_save(db, token, digest, now + FDB_TOKEN_TTL_MS);
        if (rc == 0)
            rc = fakedb__tx_commit(db);
        if (rc) {
            fakedb__tx_rollback(db);
            fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        } else {
            r->body = json_object_new_object();
        }
    }
out:
    free(outcome);
    free(msgs);
    return rc;
}

/* A transaction's ConsumedCapacity: each action twice what its single-item form costs,
 * index writes included (a read strongly consistent); the units are repeated as
 * WriteCapacityUnits or ReadCapacityUnits, as DynamoDB's transactions answer. */
static void tx_capacity(json_object *req, json_object *body, fakedb__write *w, size_t n, bool write)
{
    if (!fakedb__capacity_wanted(req))
        return;
    json_object *caps = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        const fakedb__table *t = w[i].table;
        double *ix_units = calloc(t->n_idx + 1, sizeof *ix_units);
        if (!ix_units)
            continue;
        double units = write ? fakedb__write_capacity(&w[i], ix_units)
                             : fakedb__read_units(w[i].old_item ? fakedb__item_size(w[i].old_item) : 0, true);
        for (size_t k = 0; k < t->n_idx; k++)
            ix_units[k] *= 2;
        fakedb__capacity_list_add(req, caps, t, write ? "WriteCapacityUnits" : "ReadCapacityUnits", 2 * units, ix_units);
        free(ix_units);
    }
    json_object_object_add(body, "ConsumedCapacity", caps);
}

int fakedb__op_transact_write(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    json_object *list;
    if (tx_items(req, r, &list))
        return -1;
    size_t n = json_object_array_length(list), prepared = 0;
    fakedb__write *w = calloc(n, sizeof *w);
    if (!w)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    pthread_mutex_lock(&db->lock);
    int rc = tx_write_locked(db, req, list, w, &prepared, r);
    if (rc == 0)
        tx_capacity(req, r->body, w, prepared, true);
    pthread_mutex_unlock(&db->lock);
    for (size_t i = 0; i < prepared; i++)
        fakedb__write_cleanup(&w[i]);
    free(w);
    return rc;
}

int fakedb__op_transact_get(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    json_object *list;
    if (tx_items(req, r, &list))
        return -1;
    size_t n = json_object_array_length(list), prepared = 0;
    fakedb__write *w = calloc(n, sizeof *w);
    struct fakedb__expr **proj = calloc(n, sizeof *proj);
    json_object *responses = json_object_new_array();
    int rc = 0;
    if (!w || !proj) {
        free(w);
        free(proj);
        json_object_put(responses);
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    }
    pthread_mutex_lock(&db->lock);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        json_object *get = fakedb__json_get(e, "Get");
        if (!get || json_object_object_length(e) != 1) {
            rc = fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'transactItems.%zu.member.get' failed to satisfy constraint: Member must not be null", i + 1);
            break;
        }
        static const char *const params[] = { "ProjectionExpression", NULL };
        memset(&w[i], 0, sizeof w[i]);
        w[i].kind = FDB_W_CHECK;
        prepared = i + 1;
        json_object *key = fakedb__json_get(get, "Key");
        if (fakedb__table_lookup(db, get, &w[i].table, r)) {
            rc = -1;
            break;
        }
        if (!key) {
            rc = fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'key' failed to satisfy constraint: Member must not be null");
            break;
        }
        if (fakedb__item_validate(key, &r->err) || fakedb__key_make(w[i].table, key, FDB_KEY_PARAM, &w[i].key, &r->err) ||
            fakedb__expr_setup(get, params, &w[i].ctx, r) || fakedb__parse_projection(get, w[i].ctx, &proj[i], r) ||
            fakedb__expr_unused(w[i].ctx, r)) {
            rc = -1;
            break;
        }
        for (size_t j = 0; j < i; j++)
            if (same_item(&w[j], &w[i]))
                rc = fakedb__reply_fail_validation(r, "Transaction request cannot include multiple operations on one item");
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (fakedb__item_get(db, w[i].table, &w[i].key, &w[i].old_item)) {
            rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
            break;
        }
        json_object *o = json_object_new_object();
        if (w[i].old_item)
            json_object_object_add(o, "Item", fakedb__apply_projection(proj[i], NULL, w[i].old_item));
        json_object_array_add(responses, o);
    }
    if (rc == 0) {
        r->body = json_object_new_object();
        json_object_object_add(r->body, "Responses", json_object_get(responses));
        tx_capacity(req, r->body, w, n, false);
    }
    pthread_mutex_unlock(&db->lock);
    for (size_t i = 0; i < n; i++)
        fakedb__expr_free(proj[i]);
    for (size_t i = 0; i < prepared; i++)
        fakedb__write_cleanup(&w[i]);
    free(proj);
    free(w);
    json_object_put(responses);
    return rc;
}
