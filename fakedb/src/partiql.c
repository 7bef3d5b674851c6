/* partiql.c: ExecuteStatement, BatchExecuteStatement and ExecuteTransaction. Each
 * statement is parsed by expr_partiql.c into DynamoDB's expression language and run as
 * the request it amounts to: a SELECT that fixes the partition key as a Query (else a
 * Scan), INSERT as a PutItem that must not find the item, UPDATE as an UpdateItem whose
 * WHERE is its condition, DELETE as a DeleteItem, a transaction as TransactWriteItems
 * or TransactGetItems. So the items, conditions and updates go through the same code
 * as every other request. */
#include "ops.h"
#include "expr.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STATEMENT 8192
#define MAX_BATCH 25
#define MAX_TX 100
#define E_DUPLICATE FDB_NS_DDB "DuplicateItemException"
#define DUPLICATE_MSG "Duplicate primary key exists in table"

/* The key schema a statement is resolved against. */
typedef struct keys {
    char table[256];
    char pk[256], sk[256];      /* sk "" when none */
    char pkt, skt;
    char qpk[256], qsk[256];    /* of the index queried, or the table's */
    char qpkt;
} keys;

static void add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v));
}

static void copy_member(json_object *from, json_object *to, const char *k)
{
    json_object *v = fakedb__json_get(from, k);
    if (v)
        json_object_object_add(to, k, json_object_get(v));
}

static int schema(fakedb__store *db, const fakedb__pq_stmt *st, keys *k, fakedb__reply *r)
{
    json_object *req = json_object_new_object();
    fakedb__table *t;
    add_str(req, "TableName", st->table);
    memset(k, 0, sizeof *k);
    pthread_mutex_lock(&db->lock);
    int rc = fakedb__table_lookup(db, req, &t, r);
    if (rc == 0) {
        fakedb__copy_str(k->table, sizeof k->table, t->name);
        fakedb__copy_str(k->pk, sizeof k->pk, t->pk);
        fakedb__copy_str(k->sk, sizeof k->sk, t->sk ? t->sk : "");
        k->pkt = t->pk_type;
        k->skt = t->sk_type;
        fakedb__copy_str(k->qpk, sizeof k->qpk, t->pk);
        k->qpkt = t->pk_type;
        fakedb__copy_str(k->qsk, sizeof k->qsk, t->sk ? t->sk : "");
        if (st->index) {
            const fakedb__index *ix = fakedb__index_find(t, st->index);
            if (!ix) {
                rc = fakedb__reply_fail_validation(r, "The table does not have the specified index: %s", st->index);
            } else if (ix->multi) {
                /* a multi-attribute key: the SELECT reads the index as a scan, its WHERE
                 * the filter (no single attribute makes a key condition) */
                k->qpk[0] = k->qsk[0] = 0;
            } else {
                fakedb__copy_str(k->qpk, sizeof k->qpk, ix->pk);
                k->qpkt = ix->pk_type;
                fakedb__copy_str(k->qsk, sizeof k->qsk, ix->sk ? ix->sk : "");
            }
        }
    }
    pthread_mutex_unlock(&db->lock);
    json_object_put(req);
    if (rc && r->err.type && !strcmp(r->err.type, FDB_E_NOT_FOUND))
        fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Cannot do operations on a non-existent table");
    return rc;
}

/* The term of WHERE that fixes `attr` by equality, or NULL. */
static const fakedb__pq_term *eq_term(const fakedb__pq_stmt *st, const char *attr)
{
    for (int i = 0; attr[0] && i < st->nterms; i++)
        if (st->terms[i].op == FAKEDB_KEY_EQ && !strcmp(st->terms[i].attr, attr))
            return &st->terms[i];
    return NULL;
}

static int key_type_ok(fakedb__reply *r, const char *name, char want, json_object *v)
{
    if (fakedb__av_scalar(v) != want)
        return fakedb__reply_fail_validation(r, "Key attribute's data type should match its data type in table's schema: Key %s", name);
    return 0;
}

/* The primary key a write or a single-item read names in its WHERE. */
static json_object *full_key(const fakedb__pq_stmt *st, const keys *k, fakedb__reply *r)
{
    const fakedb__pq_term *p = eq_term(st, k->pk), *s = k->sk[0] ? eq_term(st, k->sk) : NULL;
    if (!p || (k->sk[0] && !s)) {
        fakedb__reply_fail_validation(r, "Where clause does not contain a mandatory equality on all key attributes");
        return NULL;
    }
    if (key_type_ok(r, k->pk, k->pkt, p->v1) || (s && key_type_ok(r, k->sk, k->skt, s->v1)))
        return NULL;
    json_object *key = json_object_new_object();
    json_object_object_add(key, k->pk, json_object_get(p->v1));
    if (s)
        json_object_object_add(key, k->sk, json_object_get(s->v1));
    return key;
}

static void add_exprs(json_object *req, const fakedb__pq_stmt *st)
{
    if (st->names)
        json_object_object_add(req, "ExpressionAttributeNames", json_object_get(st->names));
    if (st->values)
        json_object_object_add(req, "ExpressionAttributeValues", json_object_get(st->values));
}

/* The write request of INSERT, UPDATE, DELETE or EXISTS; NULL with r filled. */
static json_object *write_request(const fakedb__pq_stmt *st, const keys *k, json_object *opts, fakedb__reply *r)
{
    json_object *req = json_object_new_object();
    add_str(req, "TableName", k->table);
    copy_member(opts, req, "ReturnValuesOnConditionCheckFailure");
    copy_member(opts, req, "ReturnConsumedCapacity");
    if (st->kind == FAKEDB_PQ_INSERT) {
        const char *names[2] = { k->pk, k->sk };
        char types[2] = { k->pkt, k->skt };
        for (int i = 0; i < 2; i++) {
            if (!names[i][0])
                continue;
            json_object *v = fakedb__json_get(st->item, names[i]);
            if (!v) {
                fakedb__reply_fail_validation(r, "Key attribute should be present in the item: Key %s", names[i]);
                goto fail;
            }
            if (key_type_ok(r, names[i], types[i], v))
                goto fail;
        }
        json_object_object_add(req, "Item", json_object_get(st->item));
        add_str(req, "ConditionExpression", "attribute_not_exists(#pk)");
        json_object *n = json_object_new_object();
        add_str(n, "#pk", k->pk);
        json_object_object_add(req, "ExpressionAttributeNames", n);
        return req;
    }
    json_object *key = full_key(st, k, r);
    if (!key)
        goto fail;
    json_object_object_add(req, "Key", key);
    /* DELETE of a missing item succeeds unless WHERE says more than the key. */
    int key_terms = 1 + (k->sk[0] ? 1 : 0);
    bool cond = st->kind != FAKEDB_PQ_DELETE || st->nconjuncts > key_terms;
    if (cond) {
        add_str(req, "ConditionExpression", st->where);
        add_exprs(req, st);
    }
    if (st->kind == FAKEDB_PQ_UPDATE)
        add_str(req, "UpdateExpression", st->update);
    static const char *const rv[] = { "NONE", "ALL_OLD", "ALL_NEW", "UPDATED_OLD", "UPDATED_NEW" };
    if (st->returning != FAKEDB_PQ_RET_NONE)
        add_str(req, "ReturnValues", rv[st->returning]);
    return req;
fail:
    json_object_put(req);
    return NULL;
}

/* An expression's error as the statement's: without the name of the expression
 * parameter the statement was translated into (DynamoDB Local says "Two document paths
 * overlap ...", not "Invalid UpdateExpression: Two document paths ..."). */
static void statement_error(fakedb__reply *r)
{
    static const char *const prefixes[] = { "Invalid UpdateExpression: ", "Invalid ConditionExpression: ",
                                            "Invalid FilterExpression: ", "Invalid KeyConditionExpression: " };
    for (size_t i = 0; r->err.type && i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (!strncmp(r->err.message, prefixes[i], n))
            memmove(r->err.message, r->err.message + n, strlen(r->err.message + n) + 1);
    }
}

/* ---- SELECT ---- */

static json_object *project(const void *arg, json_object *item)
{
    const fakedb__pq_stmt *st = arg;
    if (!st->nproj)
        return json_object_get(item);
    json_object *o = json_object_new_object();
    for (int i = 0; i < st->nproj; i++) {
        json_object *v = fakedb__pq_resolve(item, &st->proj[i]);
        if (v)
            json_object_object_add(o, st->proj[i].label, json_object_get(v));
    }
    return o;
}

static void token_digest(const char *statement, char out[17])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(statement, strlen(statement), md, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static json_object *next_token(const char *statement, json_object *last_key)
{
    char d[17];
    token_digest(statement, d);
    json_object *t = json_object_new_object();
    add_str(t, "s", d);
    json_object_object_add(t, "k", json_object_get(last_key));
    size_t len = 0;
    const char *text = json_object_to_json_string_length(t, FDB_JSON_FLAGS, &len);
    unsigned char *b64 = malloc(4 * (len / 3 + 1) + 1);
    json_object *out = NULL;
    if (b64) {
        EVP_EncodeBlock(b64, (const unsigned char *)text, (int)len);
        out = json_object_new_string((const char *)b64);
        free(b64);
    }
    json_object_put(t);
    return out;
}

/* The ExclusiveStartKey a NextToken carries, or NULL with r filled. */
static json_object *parse_token(const char *statement, json_object *tok, fakedb__reply *r)
{
    if (!json_object_is_type(tok, json_type_string)) {
        fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
        return NULL;
    }
    size_t len = (size_t)json_object_get_string_len(tok);
    json_object *t = NULL, *k = NULL;
    unsigned char *raw = len > 0 && len <= 32768 && len % 4 == 0 ? malloc(len + 1) : NULL;
    if (raw) {
        int n = EVP_DecodeBlock(raw, (const unsigned char *)json_object_get_string(tok), (int)len);
        if (n > 0) {
            raw[n] = 0;
            t = fakedb__json_from_text((const char *)raw);
        }
        free(raw);
    }
    char d[17];
    token_digest(statement, d);
    const char *s = t ? fakedb__json_str(t, "s") : NULL;
    k = t ? fakedb__json_get(t, "k") : NULL;
    if (!s || strcmp(s, d) || !k || !json_object_is_type(k, json_type_object)) {
        json_object_put(t);
        fakedb__reply_fail_validation(r, "Invalid NextToken");
        return NULL;
    }
    json_object_get(k);
    json_object_put(t);
    return k;
}

/* Runs a SELECT; single: a read of one item by its full key (batch and transaction),
 * which answers {"Item": ...} or {}. */
static int run_select(fakedb__store *db, const char *text, const fakedb__pq_stmt *st, json_object *opts,
                      bool single, fakedb__reply *r)
{
    keys k;
    if (schema(db, st, &k, r))
        return -1;
    json_object *req = json_object_new_object();
    add_str(req, "TableName", k.table);
    if (st->index)
        add_str(req, "IndexName", st->index);
    copy_member(opts, req, "ConsistentRead");
    copy_member(opts, req, "ReturnConsumedCapacity");
    if (!single)
        copy_member(opts, req, "Limit");
    const fakedb__pq_term *pt = eq_term(st, k.qpk);
    char err[FAKEDB_EXPR_ERR_MAX];
    fakedb__expr_ctx *ctx = NULL;
    fakedb__expr *where = NULL;
    int rc = -1;
    if (single) {
        json_object *key = full_key(st, &k, r);
        if (!key || st->index) {
            json_object_put(key);
            if (key || (r->err.type && strstr(r->err.message, "mandatory equality")))
                fakedb__reply_fail_validation(r, "Only single item select is supported");
            goto out;
        }
        json_object_put(key);
    } else if (pt && key_type_ok(r, k.qpk, k.qpkt, pt->v1)) {
        goto out;
    }
    if (pt) {
        json_object *names = json_object_new_object(), *values = json_object_new_object();
        char kc[64] = "#k0 = :k0";
        add_str(names, "#k0", k.qpk);
        json_object_object_add(values, ":k0", json_object_get(pt->v1));
        for (int i = 0; k.qsk[0] && i < st->nterms; i++) {
            const fakedb__pq_term *t = &st->terms[i];
            if (strcmp(t->attr, k.qsk))
                continue;
            static const char *const ops[] = { "", "=", "<", "<=", ">", ">=" };
            add_str(names, "#k1", k.qsk);
            json_object_object_add(values, ":k1", json_object_get(t->v1));
            if (t->op == FAKEDB_KEY_BETWEEN) {
                json_object_object_add(values, ":k2", json_object_get(t->v2));
                snprintf(kc, sizeof kc, "#k0 = :k0 AND #k1 BETWEEN :k1 AND :k2");
            } else if (t->op == FAKEDB_KEY_BEGINS_WITH) {
                snprintf(kc, sizeof kc, "#k0 = :k0 AND begins_with(#k1, :k1)");
            } else {
                snprintf(kc, sizeof kc, "#k0 = :k0 AND #k1 %s :k1", ops[t->op]);
            }
            break;
        }
        add_str(req, "KeyConditionExpression", kc);
        json_object_object_add(req, "ExpressionAttributeNames", names);
        json_object_object_add(req, "ExpressionAttributeValues", values);
    }
    if (st->order_by) {
        if (!pt) {
            fakedb__reply_fail_validation(r, "Must have at least one non-optional hash key condition in WHERE clause when using ORDER BY clause.");
            goto out;
        }
        if (strcmp(st->order_by, k.qsk) && strcmp(st->order_by, k.qpk)) {
            fakedb__reply_fail_validation(r, "ORDER BY can name only a key attribute of the table or index read: %s", st->order_by);
            goto out;
        }
        json_object_object_add(req, "ScanIndexForward", json_object_new_boolean(!st->order_desc));
    }
    json_object *tok = fakedb__json_get(opts, "NextToken");
    if (tok) {
        json_object *esk = parse_token(text, tok, r);
        if (!esk)
            goto out;
        json_object_object_add(req, "ExclusiveStartKey", esk);
    }
    if (st->where) {
        ctx = fakedb__expr_ctx_new(st->names, st->values, err);
        where = ctx ? fakedb__expr_parse(ctx, FAKEDB_EXPR_FILTER, st->where, err) : NULL;
        if (!where) {
            fakedb__reply_fail_validation(r, "%s", err);
            statement_error(r);
            goto out;
        }
    }
    fakedb__pq_select sel = { where, project, st };
    rc = fakedb__query_partiql(db, req, pt == NULL, &sel, r);
    if (rc)
        statement_error(r);
    if (rc == 0) {
        json_object *items = fakedb__json_get(r->body, "Items");
        json_object *out = json_object_new_object();
        if (single) {
            json_object *first = items && json_object_array_length(items) ? json_object_array_get_idx(items, 0) : NULL;
            if (first)
                json_object_object_add(out, "Item", json_object_get(first));
        } else {
            json_object_object_add(out, "Items", items ? json_object_get(items) : json_object_new_array());
            json_object *last = fakedb__json_get(r->body, "LastEvaluatedKey");
            if (last)
                json_object_object_add(out, "NextToken", next_token(text, last));
        }
        copy_member(r->body, out, "ConsumedCapacity");
        json_object_put(r->body);
        r->body = out;
    }
out:
    fakedb__expr_free(where);
    fakedb__expr_ctx_free(ctx);
    json_object_put(req);
    return rc;
}

/* ---- one statement ---- */

static int parse_statement(json_object *holder, fakedb__pq_stmt *st, const char **text, fakedb__reply *r)
{
    char err[FAKEDB_EXPR_ERR_MAX];
    json_object *s = fakedb__json_get(holder, "Statement");
    json_object *params = fakedb__json_get(holder, "Parameters");
    memset(st, 0, sizeof *st);
    *text = "";
    if (!s)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'statement' failed to satisfy constraint: Member must not be null");
    if (!json_object_is_type(s, json_type_string))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    *text = json_object_get_string(s);
    if (json_object_get_string_len(s) > MAX_STATEMENT)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value at 'statement' failed to satisfy constraint: Member must have length less than or equal to %d", MAX_STATEMENT);
    if (params) {
        if (!json_object_is_type(params, json_type_array))
            return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
        size_t n = json_object_array_length(params);
        if (n == 0)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '[]' at 'parameters' failed to satisfy constraint: Member must have length greater than or equal to 1");
        json_object *as_item = json_object_new_object();
        for (size_t i = 0; i < n; i++) {
            char name[32];
            snprintf(name, sizeof name, "p%zu", i);
            json_object_object_add(as_item, name, json_object_get(json_object_array_get_idx(params, i)));
        }
        int bad = fakedb__item_validate(as_item, &r->err);
        json_object_put(as_item);
        if (bad)
            return -1;
    }
    if (strlen(*text) != (size_t)json_object_get_string_len(s))   /* a NUL inside */
        return fakedb__reply_fail_validation(r, "Statement wasn't well formed, can't be processed: %s", *text);
    if (fakedb__pq_parse(*text, params, st, err))
        return fakedb__reply_fail_validation(r, "%s", err);
    return 0;
}

/* A write statement run alone (ExecuteStatement, or one of a batch). */
static int run_write(fakedb__store *db, const fakedb__pq_stmt *st, json_object *opts, fakedb__reply *r)
{
    keys k;
    if (st->index)
        return fakedb__reply_fail_validation(r, "Statement wasn't well formed, can't be processed: an index cannot be written");
    if (schema(db, st, &k, r))
        return -1;
    json_object *req = write_request(st, &k, opts, r);
    if (!req)
        return -1;
    int rc;
    switch (st->kind) {
    case FAKEDB_PQ_INSERT: rc = fakedb__op_put_item(db, req, r); break;
    case FAKEDB_PQ_UPDATE: rc = fakedb__op_update_item(db, req, r); break;
    default: rc = fakedb__op_delete_item(db, req, r); break;
    }
    json_object_put(req);
    statement_error(r);
    if (rc && st->kind == FAKEDB_PQ_INSERT && r->condition_failure) {
        json_object_put(r->body);
        r->body = NULL;
        fakedb__reply_fail(r, E_DUPLICATE, DUPLICATE_MSG);
        return -1;
    }
    if (rc == 0) {
        json_object *out = json_object_new_object(), *items = json_object_new_array();
        json_object *attrs = fakedb__json_get(r->body, "Attributes");
        if (attrs)
            json_object_array_add(items, json_object_get(attrs));
        json_object_object_add(out, "Items", items);
        copy_member(r->body, out, "ConsumedCapacity");
        json_object_put(r->body);
        r->body = out;
    }
    return rc;
}

int fakedb__op_execute_statement(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    fakedb__pq_stmt st;
    const char *text;
    if (parse_statement(req, &st, &text, r))
        return -1;
    int rc;
    if (st.kind == FAKEDB_PQ_EXISTS)
        rc = fakedb__reply_fail_validation(r, "EXISTS can only be used in ExecuteTransaction write requests.");
    else if (st.kind == FAKEDB_PQ_SELECT)
        rc = run_select(db, text, &st, req, false, r);
    else
        rc = run_write(db, &st, req, r);
    fakedb__pq_free(&st);
    return rc;
}

/* ---- BatchExecuteStatement ---- */

static int statement_list(json_object *req, const char *member, const char *label, int max, json_object **out,
                          fakedb__reply *r)
{
    if (fakedb__reply_need_list(req, member, label, (size_t)max, out, r) != 0)
        return -1;
    size_t n = json_object_array_length(*out);
    for (size_t i = 0; i < n; i++)
        if (!json_object_is_type(json_object_array_get_idx(*out, i), json_type_object))
            return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    return 0;
}

/* The BatchStatementError code of an error type: its name less "Exception". */
static json_object *batch_error(const fakedb__reply *sub)
{
    const char *type = sub->err.type ? sub->err.type : FDB_E_INTERNAL;
    const char *name = strrchr(type, '#') ? strrchr(type, '#') + 1 : type;
    char code[96];
    fakedb__copy_str(code, sizeof code, name);
    size_t n = strlen(code);
    if (n > 9 && !strcmp(code + n - 9, "Exception"))
        code[n - 9] = 0;
    json_object *e = json_object_new_object();
    add_str(e, "Code", !strcmp(code, "Validation") ? "ValidationError" : code);
    add_str(e, "Message", sub->err.message);
    json_object *item = sub->body ? fakedb__json_get(sub->body, "Item") : NULL;
    if (item)
        json_object_object_add(e, "Item", json_object_get(item));
    return e;
}

static bool is_read(const fakedb__pq_stmt *st)
{
    return st->kind == FAKEDB_PQ_SELECT;
}

int fakedb__op_batch_execute_statement(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    json_object *list;
    if (statement_list(req, "Statements", "statements", MAX_BATCH, &list, r))
        return -1;
    size_t n = json_object_array_length(list);
    fakedb__pq_stmt *st = calloc(n, sizeof *st);
    fakedb__reply *errs = calloc(n, sizeof *errs);
    const char **texts = calloc(n, sizeof *texts);
    int rc = 0;
    if (!st || !errs || !texts) {
        rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        goto out;
    }
    int reads = 0, writes = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        if (parse_statement(e, &st[i], &texts[i], &errs[i])) {
            json_object *s = fakedb__json_get(e, "Statement");
            if (errs[i].err.type && !strcmp(errs[i].err.type, FDB_E_VALIDATION) && s &&
                strstr(errs[i].err.message, "Statement wasn't well formed")) {
                /* A text of no known statement: DynamoDB names the kinds it runs. */
                const char *t = json_object_get_string(s);
                while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')
                    t++;
                if (strncasecmp(t, "SELECT", 6) && strncasecmp(t, "INSERT", 6) && strncasecmp(t, "UPDATE", 6) &&
                    strncasecmp(t, "DELETE", 6))
                    fakedb__copy_str(errs[i].err.message, sizeof errs[i].err.message,
                                     "Invalid operation. Only select, insert, update and delete operations are valid");
            }
            continue;
        }
        if (st[i].kind == FAKEDB_PQ_EXISTS)
            fakedb__reply_fail_validation(&errs[i], "EXISTS can only be used in ExecuteTransaction write requests.");
        else if (is_read(&st[i]))
            reads++;
        else
            writes++;
    }
    if (reads && writes) {
        rc = fakedb__reply_fail_validation(r, "Read and write requests together in the same batch is not supported.");
        goto out;
    }
    json_object *responses = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *resp = json_object_new_object();
        json_object *opts = json_object_array_get_idx(list, i);
        if (!errs[i].err.type) {
            if (is_read(&st[i]))
                run_select(db, texts[i], &st[i], opts, true, &errs[i]);
            else
                run_write(db, &st[i], opts, &errs[i]);
        }
        if (errs[i].err.type) {
            json_object_object_add(resp, "Error", batch_error(&errs[i]));
            if (st[i].table && strcmp(errs[i].err.type, FDB_E_NOT_FOUND) && strcmp(errs[i].err.type, FDB_E_VALIDATION))
                add_str(resp, "TableName", st[i].table);
        } else {
            add_str(resp, "TableName", st[i].table);
            json_object *item = fakedb__json_get(errs[i].body, "Item");
            if (item)
                json_object_object_add(resp, "Item", json_object_get(item));
        }
        json_object_array_add(responses, resp);
    }
    r->body = json_object_new_object();
    json_object_object_add(r->body, "Responses", responses);
out:
    for (size_t i = 0; st && errs && i < n; i++) {
        fakedb__pq_free(&st[i]);
        json_object_put(errs[i].body);
    }
    free(st);
    free(errs);
    free(texts);
    return rc;
}

/* ---- ExecuteTransaction ---- */

/* Rewrites TransactWriteItems' cancellation for the statements: a failed INSERT is a
 * duplicate key, reported as DynamoDB reports it. */
static void tx_cancel_reasons(fakedb__reply *r, const fakedb__pq_stmt *st, size_t n)
{
    json_object *reasons = r->body ? fakedb__json_get(r->body, "CancellationReasons") : NULL;
    if (!reasons || json_object_array_length(reasons) != n)
        return;
    char codes[2048];
    size_t o = 0;
    codes[0] = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(reasons, i);
        const char *code = fakedb__json_str(e, "Code");
        if (st[i].kind == FAKEDB_PQ_EXISTS && code && !strcmp(code, "ConditionalCheckFailed"))
            add_str(e, "Message", "The conditional request failed.");
        if (st[i].kind == FAKEDB_PQ_INSERT && code && !strcmp(code, "ConditionalCheckFailed")) {
            add_str(e, "Code", "ValidationError");
            add_str(e, "Message", DUPLICATE_MSG);
            json_object_object_del(e, "Item");
            code = "ValidationError";
        }
        int k = snprintf(codes + o, o < sizeof codes ? sizeof codes - o : 0, "%s%s", i ? ", " : "", code ? code : "None");
        if (k > 0)
            o += (size_t)k;
    }
    json_object *body = json_object_get(r->body);       /* kept across the new error */
    fakedb__reply_fail(r, FDB_E_TX_CANCELED,
                       "Transaction cancelled, please refer cancellation reasons for specific reasons [%s]", codes);
    r->body = body;
}

static int tx_reads(fakedb__store *db, const fakedb__pq_stmt *st, const char **texts, size_t n,
                    fakedb__reply *r)
{
    json_object *responses = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        fakedb__reply sub;
        memset(&sub, 0, sizeof sub);
        json_object *opts = json_object_new_object();
        json_object_object_add(opts, "ConsistentRead", json_object_new_boolean(1));
        if (run_select(db, texts[i], &st[i], opts, true, &sub)) {
            json_object_put(opts);
            json_object_put(responses);
            if (strstr(sub.err.message, "Only single item select"))
                return fakedb__reply_fail_validation(r, "Validation failed in TransactStatements[%zu]: Select statements within ExecuteTransaction must specify the primary key in the where clause.", i);
            fakedb__reply_fail(r, sub.err.type, "%s", sub.err.message);
            json_object_put(sub.body);
            return -1;
        }
        json_object_put(opts);
        json_object *o = json_object_new_object();
        json_object *item = fakedb__json_get(sub.body, "Item");
        if (item)
            json_object_object_add(o, "Item", json_object_get(item));
        json_object_array_add(responses, o);
        json_object_put(sub.body);
    }
    r->body = json_object_new_object();
    json_object_object_add(r->body, "Responses", responses);
    return 0;
}

static int tx_writes(fakedb__store *db, json_object *req, json_object *list, const fakedb__pq_stmt *st, size_t n,
                     fakedb__reply *r)
{
    static const char *const kinds[] = { "", "Put", "Update", "Delete", "ConditionCheck" };
    json_object *items = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        keys k;
        fakedb__reply sub;
        memset(&sub, 0, sizeof sub);
        if (st[i].returning != FAKEDB_PQ_RET_NONE) {
            json_object_put(items);
            return fakedb__reply_fail_validation(r, "Validation failed in TransactStatements[%zu]: RETURNING is not supported in ExecuteTransaction", i);
        }
        json_object *w = NULL;
        if (st[i].index)
            fakedb__reply_fail_validation(&sub, "Statement wasn't well formed, can't be processed: an index cannot be written");
        else if (schema(db, &st[i], &k, &sub) == 0 && st[i].kind == FAKEDB_PQ_EXISTS &&
                 st[i].nconjuncts <= 1 + (k.sk[0] ? 1 : 0))
            fakedb__reply_fail_validation(&sub, "EXISTS() must contain a single item read with additional condition");
        else if (!sub.err.type)
            w = write_request(&st[i], &k, json_object_array_get_idx(list, i), &sub);
        if (!w) {
            json_object_put(items);
            if (sub.err.type && !strcmp(sub.err.type, FDB_E_VALIDATION))
                return fakedb__reply_fail_validation(r, "Validation failed in TransactStatements[%zu]: %s", i, sub.err.message);
            if (sub.err.type && !strcmp(sub.err.type, FDB_E_NOT_FOUND))
                return fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found");
            return fakedb__reply_fail(r, sub.err.type ? sub.err.type : FDB_E_INTERNAL, "%s", sub.err.message);
        }
        json_object_object_del(w, "ReturnConsumedCapacity");
        json_object *e = json_object_new_object();
        json_object_object_add(e, kinds[st[i].kind], w);
        json_object_array_add(items, e);
    }
    json_object *treq = json_object_new_object();
    json_object_object_add(treq, "TransactItems", items);
    copy_member(req, treq, "ClientRequestToken");
    copy_member(req, treq, "ReturnConsumedCapacity");
    int rc = fakedb__op_transact_write(db, treq, r);
    json_object_put(treq);
    statement_error(r);
    if (rc && r->err.type && !strcmp(r->err.type, FDB_E_TX_CANCELED))
        tx_cancel_reasons(r, st, n);
    if (rc == 0) {
        json_object *out = json_object_new_object();
        json_object_object_add(out, "Responses", json_object_new_array());
        copy_member(r->body, out, "ConsumedCapacity");
        json_object_put(r->body);
        r->body = out;
    }
    return rc;
}

int fakedb__op_execute_transaction(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    json_object *list;
    if (statement_list(req, "TransactStatements", "transactStatements", MAX_TX, &list, r))
        return -1;
    size_t n = json_object_array_length(list), parsed = 0;
    fakedb__pq_stmt *st = calloc(n, sizeof *st);
    const char **texts = calloc(n, sizeof *texts);
    int rc = 0, reads = 0, writes = 0;
    if (!st || !texts) {
        rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (parse_statement(json_object_array_get_idx(list, i), &st[i], &texts[i], r)) {
            rc = -1;
            goto out;
        }
        parsed = i + 1;
        if (is_read(&st[i]))
            reads++;
        else
            writes++;
    }
    if (reads && writes)
        rc = fakedb__reply_fail_validation(r, "ExecuteTransaction API does not support both read and write operations in the same request.");
    else if (reads)
        rc = tx_reads(db, st, texts, n, r);
    else
        rc = tx_writes(db, req, list, st, n, r);
out:
    for (size_t i = 0; i < parsed; i++)
        fakedb__pq_free(&st[i]);
    free(st);
    free(texts);
    return rc;
}
