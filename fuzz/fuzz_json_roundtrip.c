/* libFuzzer target: tensor write -> read round trip.
 *
 * The first byte picks a float type (FP32, FP64, FP16, BF16) and a layout (flat or nested);
 * the rest of the input is that type's raw little-endian elements. isv__json_write_tensor (or
 * _nested) writes them, isv__json_read_tensor reads them back: the bits must be identical,
 * NaN compared as NaN. Each FP32/FP64 element's text must also read back through strtof /
 * strtod to the same bits. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/numfmt.h"

static int is_nan_bits(isv_datatype dt, const uint8_t *p) {
  switch (dt) {
    case ISV_FP32: {
      uint32_t u;
      memcpy(&u, p, 4);
      return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu);
    }
    case ISV_FP64: {
      uint64_t u;
      memcpy(&u, p, 8);
      return (u & 0x7FF0000000000000u) == 0x7FF0000000000000u && (u & 0xFFFFFFFFFFFFFu);
    }
    case ISV_FP16: {
      uint16_t u;
      memcpy(&u, p, 2);
      return (u & 0x7C00) == 0x7C00 && (u & 0x3FF);
    }
    default: {
      uint16_t u;
      memcpy(&u, p, 2);
      return (u & 0x7F80) == 0x7F80 && (u & 0x7F);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  static const isv_datatype types[4] = {ISV_FP32, ISV_FP64, ISV_FP16, ISV_BF16};
  static const size_t sizes[4] = {4, 8, 2, 2};
  int k = data[0] & 3;
  int nested = (data[0] >> 2) & 1;
  isv_datatype dt = types[k];
  size_t es = sizes[k];
  size_t count = (size - 1) / es;
  uint8_t *in = malloc(count * es + 1);
  uint8_t *out = malloc(count * es + 1);
  if (!in || !out) abort();
  memcpy(in, data + 1, count * es);

  isv__buf b;
  isv__buf_init(&b, NULL);
  if (nested && count % 2 == 0) {
    int64_t shape[2] = {2, (int64_t)count / 2};
    isv__json_write_tensor_nested(&b, dt, in, shape, 2);
  } else {
    isv__json_write_tensor(&b, dt, in, count);
  }
  if (b.failed) abort();

  isv__json_reader r;
  isv__json_reader_init(&r, b.data, b.len, 8);
  isv__json_token t;
  if (isv__json_next(&r, &t) != ISV__JSON_ARRAY_BEGIN) abort();
  if (isv__json_read_tensor(&r, &t, dt, out, count) != 0) {
    fprintf(stderr, "read failed: %s\n", isv__json_error(&r, NULL));
    abort();
  }
  if (isv__json_next(&r, &t) != ISV__JSON_EOF) abort();
  for (size_t i = 0; i < count; i++) {
    const uint8_t *a = in + i * es, *o = out + i * es;
    if (is_nan_bits(dt, a)) {
      if (!is_nan_bits(dt, o)) abort();
      continue;
    }
    if (memcmp(a, o, es) != 0) {
      fprintf(stderr, "element %zu differs\n", i);
      abort();
    }
    /* the text of each FP32/FP64 element reads back through libc too */
    char txt[33];
    if (dt == ISV_FP32) {
      float f, g;
      memcpy(&f, a, 4);
      if (!isfinite(f)) continue;
      txt[isv__fmt_f32(txt, f)] = 0;
      g = strtof(txt, NULL);
      if (memcmp(&f, &g, 4) != 0) abort();
    } else if (dt == ISV_FP64) {
      double f, g;
      memcpy(&f, a, 8);
      if (!isfinite(f)) continue;
      txt[isv__fmt_f64(txt, f)] = 0;
      g = strtod(txt, NULL);
      if (memcmp(&f, &g, 8) != 0) abort();
    }
  }
  isv__buf_free(&b);
  free(in);
  free(out);
  return 0;
}
