/* SPDX-License-Identifier: MIT */
/*
 * JSON strings from outside data (profile.h): paths, sysfs strings and a spec's name go into
 * JSON as valid UTF-8 (RFC 3629), each invalid byte written as \xHH. Split out of output.c
 * (issue 11).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/profile.h"

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF), or 0 when the byte at s does not start one. */
size_t dg_utf8_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned c = s[0];
	size_t n;
	uint32_t cp;

	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

json_t *dg_json_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p), bad = 0;

	for (size_t i = 0, k; i < n; i += k ? k : 1)
		bad += (k = dg_utf8_len((const char *)p + i)) == 0;
	if (!bad)
		return json_stringn((const char *)p, n);
	/* Each invalid byte becomes the 4 characters \xHH. */
	char *out = malloc(n + 3 * bad + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0, k; i < n; i += k ? k : 1) {
		k = dg_utf8_len((const char *)p + i);
		if (k) {
			memcpy(o, p + i, k);
			o += k;
		} else {
			o += sprintf(o, "\\x%02X", p[i]);
		}
	}
	*o = '\0';
	json_t *j = json_stringn(out, (size_t)(o - out));
	free(out);
	return j;
}
