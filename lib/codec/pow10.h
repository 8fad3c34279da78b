/* Powers of ten for exact decimal <-> binary conversion, shared by the number parser
 * (numparse.h, decimal -> binary) and the number formatter (numfmt.c, Schubfach).
 *
 * isv__pow10_tab[k - ISV__POW10_KMIN] = floor(10^k * 2^(127 - E_k)) as {high 64, low 64},
 * where E_k = floor(log2(10^k)) = (k * 1741647) >> 19; the top bit is set. The table is
 * generated exactly with Python integers by gen_pow10.py (pow10.c is its output; the test
 * suite regenerates it and compares). */
#ifndef ISV_CODEC_POW10_H
#define ISV_CODEC_POW10_H

#include <stdint.h>

#define ISV__POW10_KMIN (-343)
#define ISV__POW10_KMAX 324
extern const uint64_t isv__pow10_tab[ISV__POW10_KMAX - ISV__POW10_KMIN + 1][2];

#endif
