/* A consumer of the installed dynalock package: starts the fake server in-process,
 * takes a lease on a lock, and checks its fencing token. Exits 0 on success. */
#include <dynalock/coord.h>
#include <dynalock/ddb.h>
#include <fakedb/fakedb.h>
#include <stdio.h>

int main(void)
{
    fakedb_error ferr;
    fakedb *db = fakedb_start(&(fakedb_options){.fake_clock = true}, &ferr);
    if (!db) {
        fprintf(stderr, "consumer: fakedb_start: %s\n", ferr.message);
        return 1;
    }
    int status = 1;
    ddb_error err;
    ddb_client *client = NULL;
    ddb_table *table = NULL;
    ddb_lock_table *locks = NULL;
    ddb_lease *lease = NULL;
    if (fakedb_create_table(db, "Shop", "pk", "sk", &ferr) != 0)
        goto out;
    client = ddb_client_new(&(ddb_client_options){.endpoint = fakedb_endpoint(db),
                                                  .region = "us-east-1",
                                                  .access_key_id = "AKIDEXAMPLE",
                                                  .secret_access_key = "secret"},
                            &err);
    if (!client)
        goto out;
    table = ddb_table_open(client, "Shop", "pk", "sk", &err);
    locks = table ? ddb_lock_table_new(table, NULL, &err) : NULL;
    if (!locks)
        goto out;
    if (ddb_lock_try_acquire(locks, "consumer", 30000, &lease, NULL, &err) != 0 || !lease)
        goto out;
    if (ddb_lease_fencing_token(lease) == 1)
        status = 0;
out:
    if (status != 0)
        fprintf(stderr, "consumer: %s\n", err.message);
    ddb_lease_release(lease);
    ddb_lock_table_free(locks);
    ddb_table_close(table);
    ddb_client_free(client);
    fakedb_stop(db);
    printf("consumer: %s\n", status == 0 ? "ok" : "failed");
    return status;
}
