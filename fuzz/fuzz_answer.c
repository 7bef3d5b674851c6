/* fuzz_answer.c: libFuzzer target for libddb's reading of DynamoDB's answers: the body is
 * parsed as the client parses an answer (ddb__json_parse), then read as an item answer
 * ("Item", "Attributes"), a page ("Items", "LastEvaluatedKey") and through the public
 * ddb_item_from_json. Nothing may crash or leak, and an item read is written back to the
 * same JSON: writing it and reading that again gives the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "client.h"
#include "fuzz_common.h"
#include "items.h"

/* The item's JSON, read back, is the same JSON: what the client read it holds exactly. */
static void round_trip(const ddb_item *it)
{
    char *text = ddb_item_to_json(it);
    if (!text)
        return; /* out of memory */
    ddb_item *again = ddb_item_from_json(text, strlen(text), NULL);
    if (!again)
        abort();
    char *text2 = ddb_item_to_json(again);
    if (text2 && strcmp(text, text2) != 0)
        abort();
    free(text2);
    ddb_item_free(again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ddb_error err;
    ddb_error_clear(&err);
    json_object *resp = ddb__json_parse((const char *)data, size, DDB_EPROTOCOL, &err);
    if (resp) {
        static const char *const keys[] = {"Item", "Attributes", "LastEvaluatedKey"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            ddb_item *it = NULL;
            if (ddb__jget_item(resp, keys[k], &it, &err) == 0 && it)
                round_trip(it);
            ddb_item_free(it);
        }
        json_object *items;
        if (json_object_is_type(resp, json_type_object) &&
            json_object_object_get_ex(resp, "Items", &items) &&
            json_object_is_type(items, json_type_array)) {
            for (size_t i = 0; i < json_object_array_length(items) && i < 64; i++) {
                ddb_item *it = ddb__item_from_jobj(json_object_array_get_idx(items, i), &err);
                if (it)
                    round_trip(it);
                ddb_item_free(it);
            }
        }
        json_object_put(resp);
    }
    ddb_item *it = ddb_item_from_json((const char *)data, size, &err);
    if (it)
        round_trip(it);
    ddb_item_free(it);
    return 0;
}
