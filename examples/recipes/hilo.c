/* hilo.c: a hi/lo sequence (see hilo.h and docs/recipes.md). */
#include "hilo.h"

#include <stdio.h>
#include <string.h>

void recipe_hilo_init(recipe_hilo *s, ddb_table *t, const char *name, int64_t block)
{
    memset(s, 0, sizeof *s);
    s->table = t;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->block = block > 0 ? block : 1;
    s->next = 1;
    s->hi = 0;
    pthread_mutex_init(&s->mu, NULL);
}

void recipe_hilo_cleanup(recipe_hilo *s)
{
    pthread_mutex_destroy(&s->mu);
}

int recipe_hilo_next(recipe_hilo *s, int64_t *id, ddb_error *err)
{
    pthread_mutex_lock(&s->mu);
    if (s->next > s->hi) {
        /* Reserve the next block: ADD makes the counter, and is atomic across processes. */
        ddb_item *key = ddb_item_new();
        char pk[160];
        snprintf(pk, sizeof pk, "SEQ#%s", s->name);
        ddb_item_set_s(key, ddb_table_pk(s->table), pk);
        if (ddb_table_sk(s->table))
            ddb_item_set_s(key, ddb_table_sk(s->table), "SEQ");
        ddb_item *v = ddb_item_new();
        ddb_item_set_i64(v, ":b", s->block);
        ddb_result res = {0};
        int rc = ddb_table_update_item(s->table, key, "ADD hi :b",
                                 &(ddb_write_options){.values = v,
                                                      .return_values = DDB_RETURN_UPDATED_NEW},
                                 &res, NULL, err);
        ddb_item_free(v);
        ddb_item_free(key);
        int64_t hi = 0;
        if (rc == 0 && ddb_item_get_i64(res.item, "hi", &hi) != 0)
            rc = DDB_EPROTOCOL;
        ddb_result_cleanup(&res);
        if (rc != 0) {
            pthread_mutex_unlock(&s->mu);
            return rc;
        }
        s->hi = hi;
        s->next = hi - s->block + 1;
    }
    *id = s->next++;
    pthread_mutex_unlock(&s->mu);
    return 0;
}
