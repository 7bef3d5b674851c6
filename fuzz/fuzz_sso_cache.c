/* fuzz_sso_cache.c: libFuzzer target for the SSO token cache file (~/.aws/sso/cache/
 * HASH.json), which the AWS CLI or anyone with the user's rights may have written: its
 * text is parsed as the SSO provider reads it. Nothing may crash or leak; a whole token
 * has an access token and an expiry time. */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    json_object *o = NULL;
    const char *token = NULL, *expires = NULL;
    int64_t expires_ms = 0;
    bool whole = ddb__sso_cache_parse(text, &o, &token, &expires, &expires_ms);
    if (whole && (!token || !*token || !expires || expires_ms == 0))
        abort();
    json_object_put(o);
    free(text);
    return 0;
}
