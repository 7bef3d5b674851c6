/* fence.c: fencing in a transaction -- a ConditionCheck on the lock item that the
 * transaction commits only while the lease still holds the lock, with this owner and
 * this fencing token. */
#include "coord_internal.h"

#include <string.h>

#include "internal.h"

int ddb_tx_check_lease(ddb_tx *tx, ddb_lease *lease, ddb_tx_marker *marker)
{
    if (!tx)
        return DDB_EINVAL;
    ddb_error e;
    ddb_error_clear(&e);
    if (!lease) {
        ddb__fail(&e, DDB_EINVAL, "The lease given to ddb_tx_check_lease is NULL.");
        ddb__tx_set_error(tx, &e);
        return DDB_EINVAL;
    }
    ddb_item *key = dl_lock_key_table(lease->table, lease->name, &e);
    ddb_item *values = ddb_item_new();
    int rc = (key && values) ? 0 : DDB_ENOMEM;
    if (rc == 0 && (ddb_item_set_s(values, ":o", lease->owner) != 0 ||
                    ddb_item_set_i64(values, ":f", lease->fence) != 0))
        rc = DDB_ENOMEM;
    if (rc == 0) {
        static const char *const names[] = {"#o", DDB__LOCK_ATTR_OWNER, "#f",
                                            DDB__LOCK_ATTR_FENCE, NULL};
        rc = ddb_tx_check(tx, lease->table, key,
                          &(ddb_tx_options){.condition = "#o = :o AND #f = :f",
                                            .names = names,
                                            .values = values},
                          marker, NULL);
    } else {
        ddb__fail(&e, DDB_ENOMEM, "Out of memory.");
        ddb__tx_set_error(tx, &e);
    }
    ddb_item_free(values);
    ddb_item_free(key);
    return rc;
}

int ddb_tx_check_current_lease(ddb_tx *tx, ddb_tx_marker *marker, ddb_error *err)
{
    ddb_error_clear(err);
    if (!tx)
        return ddb__fail(err, DDB_EINVAL, "The transaction is NULL.");
    ddb_lease *lease = ddb_lease_current();
    if (!lease) {
        ddb_error e;
        ddb_error_clear(&e);
        ddb__fail(&e, DDB_ESTATE,
                  "No lease is current; pass the lease, or start this work inside "
                  "ddb_lock_run_as_leader");
        ddb__tx_set_error(tx, &e);
        if (err)
            *err = e;
        return DDB_ESTATE;
    }
    int rc = ddb_tx_check_lease(tx, lease, marker, NULL);
    if (rc != 0)
        ddb__fail(err, rc, "The check of lock \"%s\" could not be added to the transaction.",
                  lease->name);
    return rc;
}
