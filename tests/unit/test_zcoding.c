/* Unit tests: lib/codec/zcoding.c — naming codings, choosing one from Accept-Encoding, decoding
 * bodies made by Python's gzip/zlib modules, round trips, and every way a body is refused:
 * truncated, corrupt, trailing bytes, over the size limit (a zip bomb costs no more than the
 * limit). */
#include "cmocka_prelude.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/zcoding.h"
#include "inferserve.h"

static void coding_names(void **state) {
  (void)state;
  static const struct {
    const char *v;
    isv__coding c;
  } cases[] = {{"gzip", ISV__CODING_GZIP},         {"GZip", ISV__CODING_GZIP},
               {" x-gzip ", ISV__CODING_GZIP},     {"deflate", ISV__CODING_DEFLATE},
               {"identity", ISV__CODING_IDENTITY}, {"", ISV__CODING_IDENTITY},
               {"  ", ISV__CODING_IDENTITY},       {"br", ISV__CODING_UNKNOWN},
               {"gzip, gzip", ISV__CODING_UNKNOWN}, {"gzipx", ISV__CODING_UNKNOWN},
               {"compress", ISV__CODING_UNKNOWN}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    assert_int_equal(isv__coding_of(cases[i].v, strlen(cases[i].v)), cases[i].c);
  assert_int_equal(isv__coding_of(NULL, 0), ISV__CODING_IDENTITY);
  assert_string_equal(isv__coding_name(ISV__CODING_GZIP), "gzip");
  assert_string_equal(isv__coding_name(ISV__CODING_DEFLATE), "deflate");
  assert_string_equal(isv__coding_name(ISV__CODING_IDENTITY), "identity");
}

static void accept_encoding_choice(void **state) {
  (void)state;
  static const struct {
    const char *v;
    isv__coding c;
  } cases[] = {
      {"gzip", ISV__CODING_GZIP},
      {"gzip, deflate, br", ISV__CODING_GZIP},
      {"deflate", ISV__CODING_DEFLATE},
      {"br, deflate;q=0.5", ISV__CODING_DEFLATE},
      {"gzip;q=0, deflate", ISV__CODING_DEFLATE},
      {"gzip; q=0.000, deflate;q=0", ISV__CODING_IDENTITY},
      {"GZIP;Q=0.1", ISV__CODING_GZIP},
      {"*", ISV__CODING_GZIP},
      {"*;q=0", ISV__CODING_IDENTITY},
      {"gzip;q=0, *", ISV__CODING_DEFLATE},
      {"identity", ISV__CODING_IDENTITY},
      {"br", ISV__CODING_IDENTITY},
      {"", ISV__CODING_IDENTITY},
      {",,;,", ISV__CODING_IDENTITY},
      {"x-gzip ; q=1.0", ISV__CODING_GZIP},
      {"gzip;q=", ISV__CODING_GZIP}, /* malformed q: still asked for */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    isv__coding got = isv__coding_accepted(cases[i].v, strlen(cases[i].v));
    if (got != cases[i].c) fail_msg("'%s': got %d, want %d", cases[i].v, got, cases[i].c);
  }
  assert_int_equal(isv__coding_accepted(NULL, 0), ISV__CODING_IDENTITY);
}

/* "hello hello hello\n" as Python 3 makes it: gzip.compress(mtime=0), zlib.compress, and a raw
 * deflate stream (zlib.compressobj(wbits=-15)) — what clients label "deflate" either way. */
static const unsigned char py_gzip[] = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03,
                                        0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57, 0xc8, 0x40, 0x90, 0x5c,
                                        0x00, 0x3b, 0x7c, 0x8a, 0xdf, 0x12, 0x00, 0x00, 0x00};
static const unsigned char py_zlib[] = {0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57, 0xc8,
                                        0x40, 0x90, 0x5c, 0x00, 0x40, 0xb5, 0x06, 0x87};
static const unsigned char py_raw[] = {0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57,
                                       0xc8, 0x40, 0x90, 0x5c, 0x00};
static const char hello[] = "hello hello hello\n";

static int inflate_to(isv__coding c, const void *in, size_t n, size_t max, char **out, size_t *len,
                      char *err) {
  return isv__inflate(c, in, n, max, NULL, out, len, err, 160);
}

static void decodes_what_python_makes(void **state) {
  (void)state;
  const struct {
    isv__coding c;
    const unsigned char *p;
    size_t n;
  } cases[] = {{ISV__CODING_GZIP, py_gzip, sizeof py_gzip},
               {ISV__CODING_DEFLATE, py_zlib, sizeof py_zlib},
               {ISV__CODING_DEFLATE, py_raw, sizeof py_raw}};
  for (size_t i = 0; i < 3; i++) {
    char *out, err[160];
    size_t len;
    assert_int_equal(inflate_to(cases[i].c, cases[i].p, cases[i].n, 1000, &out, &len, err), 0);
    assert_int_equal(len, strlen(hello));
    assert_memory_equal(out, hello, len);
    assert_int_equal(out[len], '\0'); /* terminated, for decoders that want it */
    isv__free(out);
    /* exactly at the limit is fine; one byte under is not */
    assert_int_equal(inflate_to(cases[i].c, cases[i].p, cases[i].n, len, &out, &len, err), 0);
    isv__free(out);
    assert_int_equal(inflate_to(cases[i].c, cases[i].p, cases[i].n, strlen(hello) - 1, &out,
                                &len, err), ISV_ETOOBIG);
    assert_null(out);
  }
  /* a zlib stream labelled gzip is still not gzip */
  char *out, err[160];
  size_t len;
  assert_int_equal(inflate_to(ISV__CODING_GZIP, py_zlib, sizeof py_zlib, 1000, &out, &len, err),
                   ISV_EBADREQ);
  assert_non_null(strstr(err, "the body is not valid gzip data: "));
}

static void refusals_name_the_problem(void **state) {
  (void)state;
  char *out, err[160];
  size_t len;
  /* every cut of the gzip member is refused, none crashes */
  for (size_t cut = 0; cut < sizeof py_gzip; cut++) {
    int rc = inflate_to(ISV__CODING_GZIP, py_gzip, cut, 1000, &out, &len, err);
    assert_int_equal(rc, ISV_EBADREQ);
    assert_null(out);
  }
  assert_int_equal(inflate_to(ISV__CODING_GZIP, py_gzip, sizeof py_gzip - 3, 1000, &out, &len,
                              err), ISV_EBADREQ);
  assert_string_equal(err, "the body is not valid gzip data: the data ends before the end of "
                           "the compressed stream");
  /* trailing bytes after the member */
  unsigned char more[sizeof py_gzip + 3];
  memcpy(more, py_gzip, sizeof py_gzip);
  memcpy(more + sizeof py_gzip, "abc", 3);
  assert_int_equal(inflate_to(ISV__CODING_GZIP, more, sizeof more, 1000, &out, &len, err),
                   ISV_EBADREQ);
  assert_string_equal(err, "the body is not valid gzip data: bytes follow the end of the "
                           "compressed stream (not another gzip member)");
  /* ... but another member is the body's continuation (RFC 1952 §2.2) */
  unsigned char two[2 * sizeof py_gzip];
  memcpy(two, py_gzip, sizeof py_gzip);
  memcpy(two + sizeof py_gzip, py_gzip, sizeof py_gzip);
  char *one;
  size_t one_len;
  assert_int_equal(inflate_to(ISV__CODING_GZIP, py_gzip, sizeof py_gzip, 1000, &one, &one_len,
                              err), 0);
  assert_int_equal(inflate_to(ISV__CODING_GZIP, two, sizeof two, 1000, &out, &len, err), 0);
  assert_int_equal(len, 2 * one_len);
  assert_memory_equal(out, one, one_len);
  assert_memory_equal(out + one_len, one, one_len);
  isv__free(out);
  isv__free(one);
  /* a flipped bit in the data: the CRC (or the stream) tells */
  unsigned char bad[sizeof py_gzip];
  memcpy(bad, py_gzip, sizeof bad);
  bad[14] ^= 0x10;
  assert_int_equal(inflate_to(ISV__CODING_GZIP, bad, sizeof bad, 1000, &out, &len, err),
                   ISV_EBADREQ);
  assert_non_null(strstr(err, "the body is not valid gzip data: "));
  /* plain text labelled deflate */
  assert_int_equal(inflate_to(ISV__CODING_DEFLATE, "{\"a\":1}", 7, 1000, &out, &len, err),
                   ISV_EBADREQ);
  assert_non_null(strstr(err, "the body is not valid deflate data: "));
  /* codings that are not compressions */
  assert_int_equal(inflate_to(ISV__CODING_IDENTITY, py_gzip, sizeof py_gzip, 1000, &out, &len,
                              err), ISV_EINVAL);
}

static void a_bomb_costs_no_more_than_the_limit(void **state) {
  (void)state;
  /* 64 MiB of zeros deflate to well under 1% of it; the limit of 1 MiB stops it there */
  size_t n = (size_t)64 << 20;
  char *zeros = calloc(1, n);
  assert_non_null(zeros);
  isv__buf z;
  isv__buf_init(&z, NULL);
  isv__zpiece p = {zeros, n};
  assert_int_equal(isv__deflate(ISV__CODING_GZIP, &p, 1, &z), 0);
  free(zeros);
  assert_true(z.len < n / 100);
  char *out, err[160];
  size_t len;
  assert_int_equal(inflate_to(ISV__CODING_GZIP, z.data, z.len, (size_t)1 << 20, &out, &len, err),
                   ISV_ETOOBIG);
  assert_null(out);
  isv__buf_free(&z);
}

/* The sliced inflater: each run stops after its slice, the budget holds every byte of output
 * buffer from the moment it exists, a bomb stops where the budget ends, and nothing stays
 * charged once the body is given back or the inflater freed. */
static void slices_and_the_budget(void **state) {
  (void)state;
  size_t n = (size_t)4 << 20;
  char *zeros = calloc(1, n);
  assert_non_null(zeros);
  isv__buf z;
  isv__buf_init(&z, NULL);
  isv__zpiece p = {zeros, n};
  assert_int_equal(isv__deflate(ISV__CODING_GZIP, &p, 1, &z), 0);
  free(zeros);

  isv__budget b;
  isv__budget_init(&b, (size_t)64 << 20);
  isv__inflater *f;
  assert_int_equal(isv__inflater_new(ISV__CODING_GZIP, z.data, z.len, n, NULL, &b, &f), 0);
  int runs = 0, rc;
  size_t before = 0;
  while ((rc = isv__inflater_run(f, (size_t)256 << 10)) == ISV__INFLATE_MORE) {
    runs++;
    size_t got = isv__inflater_produced(f);
    assert_true(got - before >= ((size_t)256 << 10) && got - before < ((size_t)512 << 10));
    assert_true(isv__budget_used(&b) >= got); /* charged as it came out */
    before = got;
  }
  assert_int_equal(rc, 0);
  assert_true(runs >= 14); /* 4 MiB in slices of 256 KiB */
  size_t len, charged;
  char *out = isv__inflater_take(f, &len, &charged);
  assert_int_equal(len, n);
  assert_int_equal(charged, isv__budget_used(&b));
  isv__inflater_free(f); /* holds nothing now: the charge is the body's */
  assert_int_equal(isv__budget_used(&b), charged);
  isv__budget_give(&b, charged);
  isv__free(out);
  assert_int_equal(isv__budget_used(&b), 0);

  /* a budget of 1 MiB: the 4 MiB body is refused when it runs out, and gives it all back */
  isv__budget small;
  isv__budget_init(&small, (size_t)1 << 20);
  assert_int_equal(isv__inflater_new(ISV__CODING_GZIP, z.data, z.len, n, NULL, &small, &f), 0);
  assert_int_equal(isv__inflater_run(f, SIZE_MAX), ISV_EUNAVAIL);
  assert_true(isv__inflater_produced(f) <= ((size_t)1 << 20));
  isv__inflater_free(f);
  assert_int_equal(isv__budget_used(&small), 0);
  isv__buf_free(&z);
}

static void round_trips_over_pieces(void **state) {
  (void)state;
  /* pieces of every size, incl. empty ones; both codings */
  char data[70000];
  uint32_t x = 7;
  for (size_t i = 0; i < sizeof data; i++) {
    x = x * 1664525u + 1013904223u;
    data[i] = (char)(i % 3 ? 'a' + (x >> 28) : (x >> 24));
  }
  isv__zpiece pieces[] = {{data, 0}, {data, 1}, {data + 1, 0}, {data + 1, 30000},
                          {data + 30001, 39999}};
  for (int k = 0; k < 2; k++) {
    isv__coding c = k ? ISV__CODING_DEFLATE : ISV__CODING_GZIP;
    isv__buf z;
    isv__buf_init(&z, NULL);
    assert_int_equal(isv__deflate(c, pieces, 5, &z), 0);
    char *out, err[160];
    size_t len;
    assert_int_equal(inflate_to(c, z.data, z.len, sizeof data, &out, &len, err), 0);
    assert_int_equal(len, sizeof data);
    assert_memory_equal(out, data, len);
    isv__free(out);
    isv__buf_free(&z);
    /* nothing at all encodes to a valid empty body */
    isv__buf_init(&z, NULL);
    assert_int_equal(isv__deflate(c, NULL, 0, &z), 0);
    assert_int_equal(inflate_to(c, z.data, z.len, 0, &out, &len, err), 0);
    assert_int_equal(len, 0);
    isv__free(out);
    isv__buf_free(&z);
  }
  isv__buf z;
  isv__buf_init(&z, NULL);
  assert_int_equal(isv__deflate(ISV__CODING_IDENTITY, pieces, 1, &z), ISV_EINVAL);
  isv__buf_free(&z);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(coding_names),
      cmocka_unit_test(accept_encoding_choice),
      cmocka_unit_test(decodes_what_python_makes),
      cmocka_unit_test(refusals_name_the_problem),
      cmocka_unit_test(a_bomb_costs_no_more_than_the_limit),
      cmocka_unit_test(round_trips_over_pieces),
      cmocka_unit_test(slices_and_the_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
