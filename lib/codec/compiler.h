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

__extension__ typedef unsigned __int128 isv__u128;

#endif
