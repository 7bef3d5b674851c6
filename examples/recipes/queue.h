/* queue.h: a work queue over a sparse index, a recipe on libddb (docs/recipes.md). A
 * pending message carries the index's key attributes; claiming it removes them, so the
 * index holds only what waits, and a Query of it is the queue in order. */
#ifndef DL_RECIPE_QUEUE_H
#define DL_RECIPE_QUEUE_H

#include <dynalock/ddb.h>

/* The index: partition key "queue" (the queue's name), sort key "queuedAt" (a sortable
 * time and id). Create it on the table with recipe_queue_index(). */
#define RECIPE_QUEUE_INDEX "ByQueue"
ddb_index_def recipe_queue_index(void);

/* Adds a message `id` with `body` to queue `queue`, at the client's wall clock. */
int recipe_queue_push(ddb_table *t, const char *queue, const char *id, const char *body,
                      ddb_error *err);
/* Claims the oldest pending message for `worker`: *id and *body are malloc'd (free them),
 * or NULL when the queue is empty. Claiming is a conditional write, so two workers never
 * claim the same message; a worker that loses a race tries the next one. */
int recipe_queue_claim(ddb_table *t, const char *queue, const char *worker, char **id,
                       char **body, ddb_error *err);
/* Deletes a claimed message once it is done, on condition that `worker` claimed it. */
int recipe_queue_done(ddb_table *t, const char *id, const char *worker, ddb_error *err);

#endif
