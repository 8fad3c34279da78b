/* cmocka needs these before its header. */
#ifndef ISV_TEST_PRELUDE_H
#define ISV_TEST_PRELUDE_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#endif
