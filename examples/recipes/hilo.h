/* hilo.h: a hi/lo sequence, a recipe on libddb (docs/recipes.md). One atomic ADD on a
 * counter item reserves a block of ids; the process hands them out from memory, so a
 * thousand ids cost one request. Ids are unique and rising per process, not gapless. */
#ifndef DL_RECIPE_HILO_H
#define DL_RECIPE_HILO_H

#include <dynalock/ddb.h>
#include <pthread.h>

typedef struct recipe_hilo {
    ddb_table *table;
    char name[128];
    int64_t block;     /* ids reserved per request */
    int64_t next, hi;  /* next id to hand out; last id of the block (next > hi: none) */
    pthread_mutex_t mu;
} recipe_hilo;

/* A sequence `name` in table t, reserving `block` ids at a time. */
void recipe_hilo_init(recipe_hilo *s, ddb_table *t, const char *name, int64_t block);
void recipe_hilo_cleanup(recipe_hilo *s);
/* The next id (>= 1) in *id. Any thread. */
int recipe_hilo_next(recipe_hilo *s, int64_t *id, ddb_error *err);

#endif
