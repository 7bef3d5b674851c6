/* fuzz_sts.c: libFuzzer target for the reading of an STS answer (expat, in
 * lib/ddb/cred_util.c): any bytes as the body of an answer, read for the credentials of
 * AssumeRole and AssumeRoleWithWebIdentity and for an error's code. Nothing may crash or
 * leak; a value found is text without an element inside. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *doc = fuzz_text(data, size);
    if (!doc)
        return 0;
    static const char *const q[][2] = {
        { "AssumeRoleWithWebIdentityResult", "AccessKeyId" },
        { "AssumeRoleResult", "SessionToken" },
        { "AssumeRoleResult", "Expiration" },
        { "Error", "Code" },
        { NULL, "RequestId" },
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        char *v = ddb__xml_text(doc, q[i][0], q[i][1]);
        if (v && strchr(v, '<') && strstr(doc, "CDATA") == NULL && strstr(doc, "&lt;") == NULL &&
            strstr(doc, "&#") == NULL)
            abort(); /* markup in a value can only come from CDATA or a reference */
        if (v && q[i][1][0] == 'E')
            (void)ddb__parse_iso8601_ms(v);
        free(v);
    }
    free(doc);
    return 0;
}
