/* text.c: the command's text for a terminal: UTF-8 checks, the width of a text in
 * characters, and the escaping of what a terminal would act on (C0 and C1 controls, DEL,
 * bidirectional overrides, line separators, bytes that are not UTF-8), by the one test
 * the log lines use too (dl__utf8_is_control in common/utf8.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "utf8.h"

bool cli_utf8_valid(const char *s)
{
    return dl__utf8_valid(s, strlen(s));
}

char *cli_safe_text(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    if (!size)
        return buf;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    for (size_t i = 0; i < n;) {
        size_t k = dl__utf8_seq(p + i, n - i);
        bool control = dl__utf8_is_control(p + i, k); /* as the log lines escape them */
        size_t bytes = k ? k : 1;
        size_t need = control ? 4 * bytes : bytes;
        if (o + need >= size)
            break;
        if (control) {
            for (size_t j = 0; j < bytes; j++)
                o += (size_t)snprintf(buf + o, size - o, "\\x%02x", p[i + j]);
        } else {
            memcpy(buf + o, p + i, bytes);
            o += bytes;
        }
        i += bytes;
    }
    buf[o] = '\0';
    return buf;
}

size_t cli_text_chars(const char *s)
{
    size_t chars = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        chars += (*p & 0xC0) != 0x80;
    return chars;
}
