/* databases.c: fakedb's databases per access key and region (fakedb_options'
 * separate_databases, `fakedb --separate-databases`), as DynamoDB Local keeps them without
 * -sharedDb. Each (key, region) of a request's SigV4 credential scope has its own store
 * (its own sqlite, tables and lock), made on its first request; with a file, database
 * (KEY, REGION) lives in FILE.KEY_REGION.sqlite and those found at start are opened then.
 * Stores are only added while the server runs (never freed before it stops), so a pointer
 * to one stays valid without the list's lock. Without the option every request uses the
 * one shared store, db->store. */
#include "protocol.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fakedb__database {
    char key[FDB_DB_KEY_MAX + 1];
    char region[FDB_DB_REGION_MAX + 1];
    char *path;                 /* owned; NULL: in memory */
    fakedb__store store;
    struct fakedb__database *next;
} fakedb__database;

static bool key_ok(const char *s, size_t n)
{
    if (n == 0 || n > FDB_DB_KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

static bool region_ok(const char *s, size_t n)
{
    if (n == 0 || n > FDB_DB_REGION_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* The access key and region of an Authorization header's Credential=KEY/DATE/REGION/...
 * The key must be letters and digits (as DynamoDB Local 2's): -1 when it is not. A region
 * that is not a region's name is us-east-1, as in the ARNs (protocol.c). */
static int scope_of(const char *auth, char *key, char *region)
{
    const char *c = auth ? strstr(auth, "Credential=") : NULL;
    if (!c)
        return -1;
    c += strlen("Credential=");
    size_t kn = strcspn(c, "/, ");
    if (c[kn] != '/' || !key_ok(c, kn))
        return -1;
    memcpy(key, c, kn);
    key[kn] = 0;
    const char *r = c + kn + 1;
    r += strcspn(r, "/, ");
    size_t rn = *r == '/' ? strcspn(r + 1, "/, ") : 0;
    if (*r == '/' && r[1 + rn] == '/' && region_ok(r + 1, rn)) {
        memcpy(region, r + 1, rn);
        region[rn] = 0;
    } else {
        strcpy(region, "us-east-1");
    }
    return 0;
}

/* Opens database (key, region) and links it in; db->dbs_lock held. NULL on failure (err
 * set) or when FDB_MAX_DATABASES are open. */
static fakedb__store *open_database(fakedb *db, const char *key, const char *region, fakedb_error *err)
{
    if (db->n_dbs >= FDB_MAX_DATABASES) {
        err->code = FAKEDB_ELIMIT;
        snprintf(err->message, sizeof err->message,
                 "Too many databases: fakedb keeps at most %d (access key, region) pairs", FDB_MAX_DATABASES);
        return NULL;
    }
    fakedb__database *d = calloc(1, sizeof *d);
    if (!d) {
        err->code = FAKEDB_ENOMEM;
        snprintf(err->message, sizeof err->message, "out of memory");
        return NULL;
    }
    snprintf(d->key, sizeof d->key, "%s", key);
    snprintf(d->region, sizeof d->region, "%s", region);
    if (db->db_path) {
        size_t n = strlen(db->db_path) + strlen(key) + strlen(region) + 16;
        d->path = malloc(n);
        if (d->path)
            snprintf(d->path, n, "%s.%s_%s.sqlite", db->db_path, key, region);
    }
    if (db->db_path && !d->path) {
        free(d);
        err->code = FAKEDB_ENOMEM;
        snprintf(err->message, sizeof err->message, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&d->store.lock, NULL);
    d->store.db_path = d->path;
    d->store.log_requests = db->store.log_requests;
    d->store.clock = db->store.clock;
    /* The settings of the shared store (fakedb_account_id_set...) hold for every one. */
    pthread_mutex_lock(&db->store.lock);
    memcpy(d->store.account, db->store.account, sizeof d->store.account);
    d->store.transient_ms = db->store.transient_ms;
    pthread_mutex_unlock(&db->store.lock);
    pthread_mutex_lock(&d->store.lock);
    int rc = fakedb__store_open(&d->store, err);
    pthread_mutex_unlock(&d->store.lock);
    if (rc) {
        fakedb__store_close(&d->store);
        pthread_mutex_destroy(&d->store.lock);
        free(d->path);
        free(d);
        return NULL;
    }
    /* At the end, so that fakedb__databases_each visits them in the order they came. */
    fakedb__database **pp = &db->dbs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = d;
    db->n_dbs++;
    return &d->store;
}

static fakedb__store *find_or_open(fakedb *db, const char *key, const char *region, fakedb_error *err)
{
    pthread_mutex_lock(&db->dbs_lock);
    fakedb__store *st = NULL;
    for (fakedb__database *d = db->dbs; d && !st; d = d->next)
        if (!strcmp(d->key, key) && !strcmp(d->region, region))
            st = &d->store;
    if (!st)
        st = open_database(db, key, region, err);
    pthread_mutex_unlock(&db->dbs_lock);
    return st;
}

fakedb__store *fakedb__database_for(fakedb *db, const char *authorization, fakedb_error *why)
{
    if (!db->separate_dbs)
        return &db->store;
    char key[FDB_DB_KEY_MAX + 1], region[FDB_DB_REGION_MAX + 1];
    if (scope_of(authorization, key, region)) {
        why->code = FAKEDB_EINVAL;
        snprintf(why->message, sizeof why->message, "The Access Key ID or security token is invalid.");
        return NULL;
    }
    fakedb__store *st = find_or_open(db, key, region, why);
    if (!st && db->log_requests)
        fprintf(stderr, "fakedb: database %s/%s: %s\n", key, region, why->message);
    return st;
}

fakedb__store *fakedb__database_named(fakedb *db, const char *key, const char *region)
{
    if (!db->separate_dbs)
        return &db->store;
    if (!key || !region || !key_ok(key, strlen(key)) || !region_ok(region, strlen(region)))
        return NULL;
    pthread_mutex_lock(&db->dbs_lock);
    fakedb__store *st = NULL;
    for (fakedb__database *d = db->dbs; d && !st; d = d->next)
        if (!strcmp(d->key, key) && !strcmp(d->region, region))
            st = &d->store;
    pthread_mutex_unlock(&db->dbs_lock);
    return st;
}

void fakedb__databases_each(fakedb *db, void (*fn)(void *arg, fakedb__store *st, const char *key,
                                                   const char *region),
                            void *arg)
{
    if (!db->separate_dbs) {
        fn(arg, &db->store, NULL, NULL);
        return;
    }
    /* The list only grows, and an entry is never freed while the server runs: walk it
     * without the lock, up to the entries there were when the walk began. */
    pthread_mutex_lock(&db->dbs_lock);
    fakedb__database *d = db->dbs;
    size_t n = db->n_dbs;
    pthread_mutex_unlock(&db->dbs_lock);
    for (size_t i = 0; i < n; i++) {
        fn(arg, &d->store, d->key, d->region);
        if (i + 1 < n) /* the last one's next may be being linked now: not read */
            d = d->next;
    }
}

int fakedb__databases_open_existing(fakedb *db, fakedb_error *err)
{
    if (!db->separate_dbs || !db->db_path)
        return 0;
    const char *slash = strrchr(db->db_path, '/');
    char *dir = slash ? strndup(db->db_path, (size_t)(slash - db->db_path) + (slash == db->db_path)) : strdup(".");
    const char *base = slash ? slash + 1 : db->db_path;
    if (!dir) {
        err->code = FAKEDB_ENOMEM;
        snprintf(err->message, sizeof err->message, "out of memory");
        return FAKEDB_ENOMEM;
    }
    DIR *dh = opendir(dir);
    free(dir);
    if (!dh)
        return 0; /* the store's own open reports a folder that cannot be used */
    size_t bl = strlen(base);
    static const char suffix[] = ".sqlite";
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(dh))) {
        const char *name = e->d_name;
        size_t nl = strlen(name);
        if (nl <= bl + 1 + sizeof suffix - 1 || strncmp(name, base, bl) || name[bl] != '.' ||
            strcmp(name + nl - (sizeof suffix - 1), suffix))
            continue;
        const char *k = name + bl + 1;
        size_t rest = nl - bl - 1 - (sizeof suffix - 1);
        const char *us = memchr(k, '_', rest);
        if (!us)
            continue;
        size_t kn = (size_t)(us - k), rn = rest - kn - 1;
        if (!key_ok(k, kn) || !region_ok(us + 1, rn))
            continue;
        char key[FDB_DB_KEY_MAX + 1], region[FDB_DB_REGION_MAX + 1];
        memcpy(key, k, kn);
        key[kn] = 0;
        memcpy(region, us + 1, rn);
        region[rn] = 0;
        if (!find_or_open(db, key, region, err))
            rc = err->code ? err->code : FAKEDB_EIO;
    }
    closedir(dh);
    return rc;
}

void fakedb__databases_free(fakedb *db)
{
    fakedb__database *d = db->dbs;
    while (d) {
        fakedb__database *n = d->next;
        fakedb__store_close(&d->store);
        pthread_mutex_destroy(&d->store.lock);
        free(d->path);
        free(d);
        d = n;
    }
    db->dbs = NULL;
    db->n_dbs = 0;
}
