/* fence.c: fencing in a transaction -- a ConditionCheck on the lock item that the
 * transaction commits only while the lease still holds the lock, with this owner and
 * this fencing token. */
#include "coord_internal.h"

#include <string.h>

#include "ddb_private.h"

/* Adds the check; a failure also poisons the transaction, so that its send fails with
 * the same error even when the caller ignores this one. */
static int add_check(ddb_tx *tx, ddb_table *table, const char *name, const char *owner,
                     int64_t fence, ddb_tx_marker *marker, ddb_error *err)
{
    ddb_error e;
    ddb_error_clear(&e);
    int rc = dl_item_check(tx, table, name, owner, fence, marker, &e);
    if (rc != 0) {
        if (e.code == 0)
            ddb__fail(&e, rc, "The check of lock \"%s\" could not be added.", name);
        ddb__tx_set_error(tx, &e);
        if (err)
            *err = e;
    }
    return rc;
}

int ddb_tx_check_lease(ddb_tx *tx, ddb_lease *lease, ddb_tx_marker *marker, ddb_error *err)
{
    ddb_error_clear(err);
    if (!tx)
        return ddb__fail(err, DDB_EINVAL, "The transaction is NULL.");
    if (!lease) {
        ddb_error e;
        ddb_error_clear(&e);
        ddb__fail(&e, DDB_EINVAL, "The lease given to ddb_tx_check_lease is NULL.");
        ddb__tx_set_error(tx, &e);
        if (err)
            *err = e;
        return DDB_EINVAL;
    }
    return add_check(tx, lease->table, lease->name, lease->owner, lease->fence, marker, err);
}

int ddb_tx_check_lock(ddb_tx *tx, ddb_lock_table *locks, const char *name, const char *owner,
                      int64_t fencing_token, ddb_tx_marker *marker, ddb_error *err)
{
    ddb_error_clear(err);
    if (!tx)
        return ddb__fail(err, DDB_EINVAL, "The transaction is NULL.");
    if (!locks || !owner || !*owner) {
        ddb_error e;
        ddb_error_clear(&e);
        ddb__fail(&e, DDB_EINVAL, "ddb_tx_check_lock needs a lock table and an owner.");
        ddb__tx_set_error(tx, &e);
        if (err)
            *err = e;
        return DDB_EINVAL;
    }
    return add_check(tx, locks->table, name, owner, fencing_token, marker, err);
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
    return ddb_tx_check_lease(tx, lease, marker, err);
}
