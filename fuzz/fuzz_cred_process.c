/* fuzz_cred_process.c: libFuzzer target for the reading of a credential_process's
 * output (the version 1 JSON document, lib/ddb/cred_process.c): any bytes as stdout.
 * Nothing may crash or leak; credentials taken have both keys. */
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
    ddb_error err;
    ddb_error_clear(&err);
    ddb__cred_ctx ctx = { .err = &err };
    ddb__credentials c = { 0 };
    int rc = ddb__cred_process_parse(&ctx, "credential_process", text, &c);
    if (rc == 0 && (!c.access_key_id || !*c.access_key_id || !c.secret_access_key))
        abort();
    ddb__credentials_cleanup(&c);
    free(text);
    return 0;
}
