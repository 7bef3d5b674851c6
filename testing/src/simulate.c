/* simulate.c: what other processes do to a lock, played by a test: a holder that
 * acquired and crashed, a release by whoever held it, a deletion of the item, and the
 * state of the item as a comparable value. Each is libddb_coord's write without
 * conditions (ddb_lock_force_*), so the item is written exactly as a lock table writes
 * it, on any DynamoDB-compatible server; they are for tests, never for a table in
 * production. */
#include <dynalock/testing.h>

#include <string.h>

int ddb_lock_simulate_holder(ddb_lock_table *locks, const char *name, int64_t lease_ms,
                             const char *holder_label, int64_t *token, ddb_error *err)
{
    return ddb_lock_force_hold(locks, name, lease_ms, holder_label, token, NULL, err);
}

int ddb_lock_simulate_release(ddb_lock_table *locks, const char *name, ddb_error *err)
{
    return ddb_lock_force_release(locks, name, NULL, err);
}

int ddb_lock_simulate_delete(ddb_lock_table *locks, const char *name, ddb_error *err)
{
    return ddb_lock_force_delete(locks, name, NULL, err);
}

int ddb_lock_get_state(ddb_lock_table *locks, const char *name, ddb_lock_state *out,
                       ddb_error *err)
{
    return ddb_lock_table_get_state(locks, name, out, NULL, err);
}

bool ddb_lock_state_equal(const ddb_lock_state *a, const ddb_lock_state *b)
{
    if (!a || !b)
        return a == b;
    return a->exists == b->exists && a->is_held == b->is_held && a->lease_ms == b->lease_ms &&
           a->fencing_token == b->fencing_token &&
           strcmp(a->holder_label, b->holder_label) == 0;
}
