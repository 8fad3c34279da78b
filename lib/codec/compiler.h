/* Compiler helpers shared by the codec's hot loops. */
#ifndef ISV_CODEC_COMPILER_H
#define ISV_CODEC_COMPILER_H

#if defined(__GNUC__)
#define ISV_LIKELY(x) __builtin_expect(!!(x), 1)
#define ISV_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ISV_INLINE static inline __attribute__((always_inline))
#define ISV_NOINLINE static __attribute__((noinline))
#else
#define ISV_LIKELY(x) (x)
#define ISV_UNLIKELY(x) (x)
#define ISV_INLINE static inline
#define ISV_NOINLINE static
#endif

/* A rule between owners or threads: in debug builds a broken one aborts with its text; in
 * release builds (NDEBUG) the caller refuses the call with a code instead, so write
 *   if (!(rule)) { ISV_ASSERT(0, "the rule"); return ISV_ESTATE; }  */
#ifndef NDEBUG
#include <stdio.h>
#include <stdlib.h>
#define ISV_ASSERT(cond, rule)                                                                    \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf(stderr, "libinferserve: %s:%d: broken rule: %s\n", __FILE__, __LINE__, rule);     \
      abort();                                                                                    \
    }                                                                                             \
  } while (0)
#else
#define ISV_ASSERT(cond, rule) ((void)0)
#endif

__extension__ typedef unsigned __int128 isv__u128;

#endif
