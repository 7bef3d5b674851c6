/* fake.c: the in-process fake for tests: a fakedb server on an ephemeral loopback
 * port, a fake clock that its clients share, and clients pointed at it with dummy
 * credentials, as separate processes would have. */
#include <dynalock/testing.h>
#include <fakedb/fakedb.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* 2026-01-01T00:00:00Z: a fixed start, so tests that print times are repeatable. */
#define FAKE_DEFAULT_START_MS 1767225600000LL

struct ddb_test_server {
    fakedb *server;
    ddb_clock *clock;
    int log_level;
};

ddb_test_server *ddb_test_server_start(const ddb_test_server_options *o, ddb_error *err)
{
    ddb_test_server_options defaults = {0};
    if (!o)
        o = &defaults;
    ddb_test_server *f = calloc(1, sizeof *f);
    if (!f) {
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    int64_t start_ms = o->start_wall_ms ? o->start_wall_ms : FAKE_DEFAULT_START_MS;
    f->clock = o->system_clock ? ddb_clock_system() : ddb_fake_clock_new(start_ms);
    f->log_level = o->log_level ? o->log_level : DDB_LOG_WARN;
    fakedb_error ferr;
    /* The server's clock is fake too, at the same start, so that time to live follows
     * the test; ddb_test_server_advance moves both. */
    f->server = fakedb_start(&(fakedb_options){.fake_clock = !o->system_clock,
                                               .fake_clock_start_ms = start_ms},
                             &ferr);
    if (!f->clock || !f->server) {
        ddb__fail(err, f->server ? DDB_ENOMEM : DDB_EIO, "could not start the fake server: %s",
                  f->server ? "out of memory" : ferr.message);
        ddb_test_server_stop(f);
        return NULL;
    }
    return f;
}

void ddb_test_server_stop(ddb_test_server *f)
{
    if (!f)
        return;
    fakedb_stop(f->server);
    ddb_clock_unref(f->clock);
    free(f);
}

int ddb_test_server_create_table(ddb_test_server *f, const char *name, const char *pk, const char *sk,
                          ddb_error *err)
{
    if (!f || !name || !pk)
        return ddb__fail(err, DDB_EINVAL, "a table needs a name and a partition key");
    fakedb_error ferr;
    int rc = fakedb_create_table(f->server, name, pk, sk, &ferr);
    if (rc == FAKEDB_EINUSE)
        return ddb__fail(err, DDB_EINUSE, "%s", ferr.message);
    if (rc != 0)
        return ddb__fail(err, DDB_EINVAL, "%s", ferr.message);
    return 0;
}

ddb_client *ddb_test_server_client_new(ddb_test_server *f, const ddb_client_options *base, ddb_error *err)
{
    if (!f) {
        ddb__fail(err, DDB_EINVAL, "no fake given");
        return NULL;
    }
    ddb_client_options o = base ? *base : (ddb_client_options){0};
    o.endpoint = fakedb_endpoint(f->server);
    o.region = "us-east-1";
    o.profile = NULL;
    o.access_key_id = "AKIDFAKEDB";
    o.secret_access_key = "fakedb-secret";
    o.session_token = NULL;
    o.clock = f->clock;
    o.imds_disabled = true;
    if (!base || !base->log_level)
        o.log_level = f->log_level;
    return ddb_client_new(&o, err);
}

ddb_clock *ddb_test_server_clock(ddb_test_server *f)
{
    return f ? f->clock : NULL;
}

struct fakedb *ddb_test_server_fakedb(ddb_test_server *f)
{
    return f ? f->server : NULL;
}

const char *ddb_test_server_endpoint(const ddb_test_server *f)
{
    return f ? fakedb_endpoint(f->server) : NULL;
}

int ddb_test_server_advance(ddb_test_server *f, int64_t ms)
{
    if (!f || ms < 0)
        return DDB_EINVAL;
    if (!ddb_clock_is_fake(f->clock))
        return DDB_ESTATE;
    int rc = fakedb_clock_advance(f->server, ms);
    if (rc != 0)
        return DDB_EINVAL;
    rc = ddb_fake_clock_advance(f->clock, ms);
    if (rc != 0)
        return rc;
    return ddb_fake_clock_settle(f->clock, 30000);
}
