/* queue.c: a work queue over a sparse index (see queue.h and docs/recipes.md). */
#include "queue.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ddb_index_def recipe_queue_index(void)
{
    return (ddb_index_def){.name = RECIPE_QUEUE_INDEX,
                           .key = {.pk = "queue", .pk_type = DDB_S, .sk = "queuedAt",
                                   .sk_type = DDB_S},
                           .projection = DDB_PROJECT_KEYS_ONLY};
}

static ddb_item *message_key(ddb_table *t, const char *id)
{
    ddb_item *key = ddb_item_new();
    char pk[300];
    snprintf(pk, sizeof pk, "MSG#%s", id);
    ddb_item_set_s(key, ddb_table_pk(t), pk);
    if (ddb_table_sk(t))
        ddb_item_set_s(key, ddb_table_sk(t), "MSG");
    return key;
}

int recipe_queue_push(ddb_table *t, const char *queue, const char *id, const char *body,
                      ddb_error *err)
{
    ddb_item *item = message_key(t, id);
    char at[64];
    /* Zero-padded milliseconds sort as text; the id breaks ties. */
    snprintf(at, sizeof at, "%015" PRId64 "#%.40s",
             ddb_clock_wall_ms(ddb_client_clock(ddb_table_client(t))), id);
    ddb_item_set_s(item, "id", id);
    ddb_item_set_s(item, "queue", queue);
    ddb_item_set_s(item, "queuedAt", at);
    ddb_item_set_s(item, "body", body);
    int rc = ddb_table_put_item(t, item,
                          &(ddb_write_options){.condition = "attribute_not_exists(id)"}, NULL, NULL,
                          err);
    ddb_item_free(item);
    return rc;
}

int recipe_queue_claim(ddb_table *t, const char *queue, const char *worker, char **id,
                       char **body, ddb_error *err)
{
    *id = *body = NULL;
    ddb_item *values = ddb_item_new();
    ddb_item_set_s(values, ":q", queue);
    ddb_pages *pages = ddb_table_query(t,
                                 &(ddb_query_options){.index = RECIPE_QUEUE_INDEX,
                                                      .key_condition = "#q = :q",
                                                      .names = (const char *[]){"#q", "queue",
                                                                                NULL},
                                                      .values = values,
                                                      .limit = 10}, NULL,
                                 err);
    ddb_item_free(values);
    if (!pages)
        return err ? err->code : DDB_ENOMEM;
    int rc;
    while ((rc = ddb_pages_next(pages, err)) == 1) {
        for (size_t i = 0; i < ddb_pages_count(pages); i++) {
            const ddb_item *k = ddb_pages_item(pages, i);
            /* The index is eventually consistent: the claim's condition is the truth. */
            ddb_item *key = ddb_item_new();
            ddb_item_set_s(key, ddb_table_pk(t), ddb_item_get_s(k, ddb_table_pk(t)));
            if (ddb_table_sk(t))
                ddb_item_set_s(key, ddb_table_sk(t), ddb_item_get_s(k, ddb_table_sk(t)));
            ddb_item *v = ddb_item_new();
            ddb_item_set_s(v, ":w", worker);
            ddb_item_set_s(v, ":q", queue);
            ddb_result res = {0};
            ddb_error e;
            int crc = ddb_table_update_item(
                t, key, "SET claimedBy = :w REMOVE #q, queuedAt",
                &(ddb_write_options){.condition = "#q = :q",
                                     .names = (const char *[]){"#q", "queue", NULL},
                                     .values = v,
                                     .return_values = DDB_RETURN_ALL_NEW},
                &res, NULL, &e);
            ddb_item_free(v);
            ddb_item_free(key);
            if (crc == 0) {
                *id = strdup(ddb_item_get_s(res.item, "id"));
                *body = strdup(ddb_item_get_s(res.item, "body"));
                ddb_result_cleanup(&res);
                ddb_pages_free(pages);
                return (*id && *body) ? 0 : DDB_ENOMEM;
            }
            ddb_result_cleanup(&res);
            if (crc != DDB_ECONDITION) { /* another worker took it: try the next */
                if (err)
                    *err = e;
                ddb_pages_free(pages);
                return crc;
            }
        }
    }
    ddb_pages_free(pages);
    return rc < 0 ? rc : 0;
}

int recipe_queue_done(ddb_table *t, const char *id, const char *worker, ddb_error *err)
{
    ddb_item *key = message_key(t, id);
    ddb_item *v = ddb_item_new();
    ddb_item_set_s(v, ":w", worker);
    int rc = ddb_table_delete_item(t, key,
                             &(ddb_write_options){.condition = "claimedBy = :w", .values = v},
                             NULL, NULL, err);
    ddb_item_free(v);
    ddb_item_free(key);
    return rc;
}
