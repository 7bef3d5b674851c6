/* fuzz_cred_json.c: libFuzzer target for the JSON answers of the credentials providers:
 * the container endpoint and IMDS ({"AccessKeyId",...}) when the first byte is even, SSO's
 * GetRoleCredentials ({"roleCredentials":{...}}) when it is odd. Nothing may crash or
 * leak; credentials taken have both keys. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *body = fuzz_text(data + 1, size - 1);
    if (!body)
        return 0;
    ddb__credentials c = { 0 };
    bool got;
    if (data[0] % 2 == 0) {
        got = ddb__parse_cred_json(body, &c);
    } else {
        ddb_error err;
        ddb_error_clear(&err);
        ddb__cred_ctx ctx = { .err = &err };
        got = ddb__sso_role_credentials(&ctx, "sso", body, &c) == 0;
    }
    if (got && (!c.access_key_id || !*c.access_key_id || !c.secret_access_key))
        abort();
    ddb__credentials_cleanup(&c);
    free(body);
    return 0;
}
