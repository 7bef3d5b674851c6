/* fuzz_expr.c: libFuzzer target for fakedb's expression language. The first byte picks
 * the kind of expression; the rest is its text, parsed with a fixed set of names and
 * values and, when it parses, evaluated or applied to a fixed item. Nothing may crash,
 * leak or read out of bounds, whatever the text. */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "fuzz_common.h"

static const char NAMES[] = "{\"#a\":\"a\",\"#b\":\"b\",\"#l\":\"l\",\"#m\":\"m\"}";
static const char VALUES[] =
    "{\":s\":{\"S\":\"x\"},\":n\":{\"N\":\"1.5\"},\":l\":{\"L\":[{\"N\":\"1\"}]},"
    "\":ss\":{\"SS\":[\"a\",\"b\"]},\":ns\":{\"NS\":[\"1\",\"2\"]},\":b\":{\"B\":\"AAE=\"},"
    "\":t\":{\"BOOL\":true},\":z\":{\"NULL\":true},\":m\":{\"M\":{\"k\":{\"S\":\"v\"}}}}";
static const char ITEM[] =
    "{\"pk\":{\"S\":\"p\"},\"a\":{\"S\":\"hello\"},\"b\":{\"N\":\"10\"},"
    "\"l\":{\"L\":[{\"S\":\"x\"},{\"M\":{\"k\":{\"N\":\"1\"}}}]},"
    "\"m\":{\"M\":{\"k\":{\"SS\":[\"a\"]},\"n\":{\"L\":[]}}},\"s\":{\"NS\":[\"1\",\"3\"]}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fakedb__expr_kind kind = (fakedb__expr_kind)(data[0] % 5);
    char *text = fuzz_text(data + 1, size - 1);
    if (!text)
        return 0;

    json_object *names = json_tokener_parse(NAMES);
    json_object *values = json_tokener_parse(VALUES);
    json_object *item = json_tokener_parse(ITEM);
    char err[FAKEDB_EXPR_ERR_MAX];
    fakedb__expr_ctx *ctx = fakedb__expr_ctx_new(names, values, err);
    fakedb__expr *e = ctx ? fakedb__expr_parse(ctx, kind, text, err) : NULL;
    if (e) {
        bool result;
        static const char *const keys[] = {"pk", NULL};
        fakedb__key_cond kc;
        switch (kind) {
        case FAKEDB_EXPR_CONDITION:
        case FAKEDB_EXPR_FILTER:
            fakedb__expr_eval(e, item, &result, err);
            fakedb__expr_eval(e, NULL, &result, err);
            break;
        case FAKEDB_EXPR_UPDATE:
            fakedb__expr_apply_update(e, item, keys, err);
            break;
        case FAKEDB_EXPR_PROJECTION:
            json_object_put(fakedb__expr_project(e, item));
            break;
        case FAKEDB_EXPR_KEY_CONDITION:
            fakedb__expr_key_condition(e, "pk", 'S', "b", 'N', &kc, err);
            break;
        }
        fakedb__expr_check_unused(ctx, err);
        fakedb__expr_free(e);
    }
    fakedb__expr_ctx_free(ctx);
    json_object_put(names);
    json_object_put(values);
    json_object_put(item);
    free(text);
    return 0;
}
