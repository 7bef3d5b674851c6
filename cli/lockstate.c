/* lockstate.c: a lock's state, read by the command itself so that the read takes a
 * cancel token (ddb_lock_get_state takes none, and a read DynamoDB does not answer must
 * not outlast a signal or --wait). It understands the lock item as libddb_coord writes
 * it -- owner, rvn, leaseMs, holder, fence -- and refuses, as the library does, an item
 * at a lock's key that has an owner but is not a lock. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int not_a_lock(const char *name, const char *table, const char *why, ddb_error *err)
{
    if (err) {
        ddb_error_clear(err);
        err->code = DDB_ESTATE;
        snprintf(err->message, sizeof err->message,
                 "the item at the key of lock '%s' in table '%s' has an owner but is not a "
                 "lock (%s)", name, table, why);
    }
    return DDB_ESTATE;
}

int cli_lock_read(ddb_table *t, const char *name, ddb_cancel *cancel, ddb_lock_state *out,
                  ddb_error *err)
{
    memset(out, 0, sizeof *out);
    ddb_item *key = cli_lock_key(ddb_table_pk(t), ddb_table_sk(t), name);
    if (!key)
        return DDB_ENOMEM;
    ddb_result res = {0};
    int rc = ddb_table_get_item(t, key,
                          &(ddb_get_options){.consistent_read = true, .cancel = cancel}, &res, NULL,
                          err);
    ddb_item_free(key);
    const ddb_item *it = res.item;
    if (rc != 0 || !it) {
        ddb_result_cleanup(&res);
        return rc;
    }
    out->exists = true;
    int64_t n = 0;
    if (ddb_item_get(it, "fence") && ddb_item_get_i64(it, "fence", &n) == 0)
        out->fencing_token = n;
    if (ddb_item_get(it, "owner")) {
        const char *why = NULL;
        int64_t lease_ms = 0;
        if (!ddb_item_get_s(it, "owner"))
            why = "its owner is not a string";
        else if (!ddb_item_get_s(it, "rvn"))
            why = "it has no record version rvn";
        else if (!ddb_item_get(it, "leaseMs") || ddb_item_get_i64(it, "leaseMs", &lease_ms) != 0)
            why = "it has no lease duration leaseMs";
        else if (lease_ms < 1 || lease_ms > DDB_LEASE_MAX_MS)
            why = "its lease duration leaseMs is out of range";
        if (why) {
            ddb_result_cleanup(&res);
            memset(out, 0, sizeof *out);
            return not_a_lock(name, ddb_table_name(t), why, err);
        }
        const char *holder = ddb_item_get_s(it, "holder");
        out->is_held = true;
        out->lease_ms = lease_ms;
        if (holder)
            snprintf(out->holder_label, sizeof out->holder_label, "%s", holder);
    }
    ddb_result_cleanup(&res);
    return 0;
}
