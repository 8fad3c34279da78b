/* Memory a part of the library keeps for reuse (the recycler's blocks, the core's spare arena
 * chunk) is poisoned while it waits, under AddressSanitizer: a read or write of it is then
 * reported as a use after free would be. Without ASan these are nothing. */
#ifndef ISV_CODEC_POISON_H
#define ISV_CODEC_POISON_H

#if defined(__SANITIZE_ADDRESS__)
#define ISV__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ISV__ASAN 1
#endif
#endif

#ifdef ISV__ASAN
#include <sanitizer/asan_interface.h>
#define ISV__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define ISV__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define ISV__POISON(p, n) ((void)(p), (void)(n))
#define ISV__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#endif
