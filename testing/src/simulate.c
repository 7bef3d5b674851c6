/* simulate.c: what other processes do to a lock, played by a test: a holder that
 * acquired and crashed, a release by whoever held it, a deletion of the item, and the
 * state of the item as a comparable value. The writes go through the lock table's own
 * table and client without conditions, so they work on any DynamoDB-compatible server;
 * they are for tests, never for a table in production. */
#include <dynalock/testing.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_internal.h"
#include "internal.h"

static int check_label(const char *label, ddb_error *err)
{
    if (!label)
        return 0;
    size_t n = strlen(label);
    if (n < 1 || n > DDB_HOLDER_LABEL_MAX)
        return ddb__fail(err, DDB_EINVAL,
                         "a holder label has 1 to %d characters; this one has %zu",
                         DDB_HOLDER_LABEL_MAX, n);
    return 0;
}

int ddb_lock_simulate_holder(ddb_lock_table *locks, const char *name, int64_t lease_ms,
                             const char *holder_label, int64_t *token, ddb_error *err)
{
    if (!locks)
        return ddb__fail(err, DDB_EINVAL, "no lock table given");
    if (lease_ms < DDB_LEASE_MIN_MS || lease_ms > DDB_LEASE_MAX_MS)
        return ddb__fail(err, DDB_EINVAL,
                         "a lease lasts from 1 s to 1 day (1000 to 86400000 ms); %lld ms is out "
                         "of range",
                         (long long)lease_ms);
    int rc = check_label(holder_label, err);
    if (rc)
        return rc;
    ddb_item *key = ddb__lock_key(locks, name, err);
    if (!key)
        return err ? err->code : DDB_EINVAL;
    char owner[DDB__LOCK_ID_LEN + 1], rvn[DDB__LOCK_ID_LEN + 1];
    ddb__lock_new_id(owner);
    ddb__lock_new_id(rvn);

    const char *ttl = ddb__lock_table_ttl_attribute(locks);
    char update[256];
    snprintf(update, sizeof update, "SET #t = :t, #o = :o, #r = :r, #l = :l%s%s ADD #f :one%s",
             holder_label ? ", #h = :h" : "", ttl ? ", #x = :x" : "",
             holder_label ? "" : " REMOVE #h");
    const char *names[] = {"#t", DDB__LOCK_ATTR_TYPE, "#o", DDB__LOCK_ATTR_OWNER,
                           "#r", DDB__LOCK_ATTR_RVN, "#l", DDB__LOCK_ATTR_LEASE_MS,
                           "#f", DDB__LOCK_ATTR_FENCE, "#h", DDB__LOCK_ATTR_HOLDER,
                           ttl ? "#x" : NULL, ttl, NULL};
    ddb_item *values = ddb_item_new();
    if (!values) {
        ddb_item_free(key);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    rc = ddb_item_set_s(values, ":t", DDB__LOCK_TYPE_VALUE);
    rc = rc ? rc : ddb_item_set_s(values, ":o", owner);
    rc = rc ? rc : ddb_item_set_s(values, ":r", rvn);
    rc = rc ? rc : ddb_item_set_i64(values, ":l", lease_ms);
    rc = rc ? rc : ddb_item_set_i64(values, ":one", 1);
    if (!rc && holder_label)
        rc = ddb_item_set_s(values, ":h", holder_label);
    if (!rc && ttl)
        rc = ddb_item_set_i64(values, ":x", ddb__lock_table_ttl_epoch_s(locks));
    if (rc) {
        ddb_item_free(key);
        ddb_item_free(values);
        return ddb__fail(err, rc, "could not build the simulated holder's write");
    }
    ddb_result res = {0};
    rc = ddb_table_update_item(ddb_lock_table_table(locks), key, update,
                         &(ddb_write_options){.names = names, .values = values,
                                              .return_values = DDB_RETURN_ALL_NEW},
                         &res, NULL, err);
    if (rc == 0 && token) {
        if (!res.item || ddb_item_get_i64(res.item, DDB__LOCK_ATTR_FENCE, token) != 0)
            rc = ddb__fail(err, DDB_EPROTOCOL, "the simulated holder's write returned no fence");
    }
    ddb_result_cleanup(&res);
    ddb_item_free(key);
    ddb_item_free(values);
    return rc;
}

int ddb_lock_simulate_release(ddb_lock_table *locks, const char *name, ddb_error *err)
{
    if (!locks)
        return ddb__fail(err, DDB_EINVAL, "no lock table given");
    ddb_item *key = ddb__lock_key(locks, name, err);
    if (!key)
        return err ? err->code : DDB_EINVAL;
    ddb_table *table = ddb_lock_table_table(locks);
    const char *ttl = ddb__lock_table_ttl_attribute(locks);
    char rvn[DDB__LOCK_ID_LEN + 1];
    ddb__lock_new_id(rvn);
    char update[160];
    snprintf(update, sizeof update, "SET #r = :r%s REMOVE #o, #l, #h", ttl ? ", #x = :x" : "");
    const char *names[] = {"#k", ddb_table_pk(table), "#r", DDB__LOCK_ATTR_RVN,
                           "#o", DDB__LOCK_ATTR_OWNER, "#l", DDB__LOCK_ATTR_LEASE_MS,
                           "#h", DDB__LOCK_ATTR_HOLDER, ttl ? "#x" : NULL, ttl, NULL};
    ddb_item *values = ddb_item_new();
    int rc = values ? ddb_item_set_s(values, ":r", rvn) : DDB_ENOMEM;
    if (!rc && ttl)
        rc = ddb_item_set_i64(values, ":x", ddb__lock_table_ttl_epoch_s(locks));
    if (!rc) {
        /* The only condition is that an item exists: releasing a lock that has no item
         * must not create one without a lock's attributes. */
        rc = ddb_table_update_item(table, key, update,
                             &(ddb_write_options){.condition = "attribute_exists(#k)",
                                                  .names = names, .values = values},
                             NULL, NULL, err);
        if (rc == DDB_ECONDITION) {
            ddb_error_clear(err);
            rc = 0;
        }
    } else {
        ddb__fail(err, rc, "out of memory");
    }
    ddb_item_free(key);
    ddb_item_free(values);
    return rc;
}

int ddb_lock_simulate_delete(ddb_lock_table *locks, const char *name, ddb_error *err)
{
    if (!locks)
        return ddb__fail(err, DDB_EINVAL, "no lock table given");
    ddb_item *key = ddb__lock_key(locks, name, err);
    if (!key)
        return err ? err->code : DDB_EINVAL;
    int rc = ddb_table_delete_item(ddb_lock_table_table(locks), key, NULL, NULL, NULL, err);
    ddb_item_free(key);
    return rc;
}

int ddb_lock_get_state(ddb_lock_table *locks, const char *name, ddb_lock_state *out,
                       ddb_error *err)
{
    if (!locks || !out)
        return ddb__fail(err, DDB_EINVAL, "no lock table or state given");
    memset(out, 0, sizeof *out);
    ddb_item *key = ddb__lock_key(locks, name, err);
    if (!key)
        return err ? err->code : DDB_EINVAL;
    ddb_result res = {0};
    int rc = ddb_table_get_item(ddb_lock_table_table(locks), key,
                          &(ddb_get_options){.consistent_read = true}, &res, NULL, err);
    ddb_item_free(key);
    if (rc != 0) {
        ddb_result_cleanup(&res);
        return rc;
    }
    ddb__lock_item li;
    rc = ddb__lock_item_parse(locks, name, res.item, &li, err);
    ddb_result_cleanup(&res);
    if (rc != 0)
        return rc;
    out->exists = li.exists;
    out->is_held = li.held;
    if (li.holder)
        snprintf(out->holder_label, sizeof out->holder_label, "%s", li.holder);
    out->lease_ms = li.held ? li.lease_ms : 0;
    out->fencing_token = li.fence;
    ddb__lock_item_cleanup(&li);
    return 0;
}

bool ddb_lock_state_equal(const ddb_lock_state *a, const ddb_lock_state *b)
{
    if (!a || !b)
        return a == b;
    return a->exists == b->exists && a->is_held == b->is_held && a->lease_ms == b->lease_ms &&
           a->fencing_token == b->fencing_token &&
           strcmp(a->holder_label, b->holder_label) == 0;
}
