/* transport/h1_quick.c against llhttp, side by side: the bytes of one read go to
 * isv__h1_quick_read and, with recording callbacks that pause at the message's end as
 * transport/http1.c's do, to llhttp. When the quick reading takes them, llhttp must read the
 * same message from them without an error: the same method, version, URL, fields (names and
 * values, each as the span callbacks give it), Content-Length, keep-alive answer, body and
 * message length, and no upgrade. Shared by fuzz_h1_quick and tests/unit/test_h1_quick.c. */
#ifndef ISV_FUZZ_H1_QUICK_SAME_H
#define ISV_FUZZ_H1_QUICK_SAME_H

#include <stddef.h>

#include "transport/h1_quick.h"

/* 1 when the quick reading declines the bytes or llhttp agrees with what it read; 0 with `why`
 * saying how they differ. *taken (may be NULL): whether the quick reading took them. Every
 * reading goes through one memo (h1q_memo), as a server's do through its transport's: a head
 * read again is taken from it. */
int h1q_same(const char *p, size_t n, int *taken, char *why, size_t why_len);
isv__h1_quick_memo *h1q_memo(void);

#endif
