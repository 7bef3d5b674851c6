/* dl_fixture.h: a test fixture over real HTTP: an in-process fakedb on an ephemeral
 * port, an optional fake client clock, tables with string keys, and clients pointed at
 * the server with dummy credentials. Used by the client and the lock-layer suites. */
#ifndef DL_FIXTURE_H
#define DL_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <dynalock/ddb.h>
#include <fakedb/fakedb.h>

typedef struct dl_fixture_options {
    bool fake_clock;             /* the clients' clock is a ddb fake clock */
    int64_t fake_clock_start_ms; /* its wall start; 0 = 2024-01-01T00:00:00Z */
    bool server_fake_clock;      /* fakedb's own clock is fake too */
    int server_threads;          /* 0 = fakedb's default */
} dl_fixture_options;

typedef struct dl_fixture {
    fakedb *db;
    ddb_clock *clock;            /* the fake clock, or the system clock */
    const char *endpoint;        /* borrowed from db */
} dl_fixture;

/* Starts the server (and the fake clock). 0, or -1 with a message on stderr. */
int dl_fixture_start(dl_fixture *f, const dl_fixture_options *o);
/* Stops the server and frees the clock. Safe on a fixture that did not start. */
void dl_fixture_stop(dl_fixture *f);
/* Creates an ACTIVE table with string keys (sk may be NULL). 0 or -1. */
int dl_fixture_create_table(dl_fixture *f, const char *name, const char *pk, const char *sk);
/* A client pointed at the server: `base` (may be NULL) with the endpoint, a region,
 * dummy credentials and, unless base sets one, the fixture's clock filled in. NULL on
 * failure (message on stderr). Free with ddb_client_free. */
ddb_client *dl_fixture_client(dl_fixture *f, const ddb_client_options *base);

/* For check's tcase_add_checked_fixture / tcase_add_unchecked_fixture: one fixture in
 * the global dl_fx, with the system clock or a fake clock. */
extern dl_fixture dl_fx;
void dl_fixture_setup(void);
void dl_fixture_setup_fake_clock(void);
void dl_fixture_teardown(void);

#endif
