/* dl_fixture.c: starts an in-process fakedb for a test and makes clients for it; see
 * dl_fixture.h. Failures abort the test through check. */
#include "dl_fixture.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_FAKE_START_MS 1704067200000LL /* 2024-01-01T00:00:00Z */

dl_fixture dl_fx;

int dl_fixture_start(dl_fixture *f, const dl_fixture_options *o)
{
    dl_fixture_options zero = { 0 };
    if (!o)
        o = &zero;
    memset(f, 0, sizeof *f);
    int64_t start = o->fake_clock_start_ms ? o->fake_clock_start_ms : DEFAULT_FAKE_START_MS;
    fakedb_options fo = {
        .fake_clock = o->server_fake_clock,
        .fake_clock_start_ms = o->server_fake_clock ? start : 0,
        .threads = o->server_threads,
    };
    fakedb_error ferr = { 0 };
    f->db = fakedb_start(&fo, &ferr);
    if (!f->db) {
        fprintf(stderr, "dl_fixture: fakedb_start failed: %s\n", ferr.message);
        return -1;
    }
    f->endpoint = fakedb_endpoint(f->db);
    f->clock = o->fake_clock ? ddb_fake_clock_new(start) : ddb_clock_system();
    if (!f->clock) {
        fprintf(stderr, "dl_fixture: no clock\n");
        dl_fixture_stop(f);
        return -1;
    }
    return 0;
}

void dl_fixture_stop(dl_fixture *f)
{
    if (!f)
        return;
    fakedb_stop(f->db);
    ddb_clock_unref(f->clock);
    memset(f, 0, sizeof *f);
}

int dl_fixture_create_table(dl_fixture *f, const char *name, const char *pk, const char *sk)
{
    fakedb_error ferr = { 0 };
    if (fakedb_create_table(f->db, name, pk, sk, &ferr) != 0) {
        fprintf(stderr, "dl_fixture: creating %s failed: %s\n", name, ferr.message);
        return -1;
    }
    return 0;
}

ddb_client *dl_fixture_client(dl_fixture *f, const ddb_client_options *base)
{
    ddb_client_options o = { 0 };
    if (base)
        o = *base;
    o.endpoint = f->endpoint;
    if (!o.region)
        o.region = "us-east-1";
    if (!o.access_key_id) {
        o.access_key_id = "AKIDFIXTURE";
        o.secret_access_key = "fixture-secret-key";
        o.session_token = NULL;
    }
    if (!o.clock)
        o.clock = f->clock;
    if (!o.log_level)
        o.log_level = DDB_LOG_WARN;
    o.imds_disabled = true;
    ddb_error err;
    ddb_client *c = ddb_client_new(&o, &err);
    if (!c)
        fprintf(stderr, "dl_fixture: ddb_client_new failed: %s\n", err.message);
    return c;
}

void dl_fixture_setup(void)
{
    ck_assert_int_eq(dl_fixture_start(&dl_fx, NULL), 0);
}

void dl_fixture_setup_fake_clock(void)
{
    ck_assert_int_eq(dl_fixture_start(&dl_fx, &(dl_fixture_options){ .fake_clock = true }), 0);
}

void dl_fixture_teardown(void)
{
    dl_fixture_stop(&dl_fx);
}
