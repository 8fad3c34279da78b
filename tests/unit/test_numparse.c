/* codec/numparse: decimal literals -> FP64/FP32/FP16/BF16, correctly rounded (nearest even):
 * the scanner's fields and error kinds, exact ties, halfway subnormals, more than 19 digits,
 * overflow/underflow, NaN/Infinity/-0, integer magnitudes; compared with strtod/strtof
 * (which are exact on glibc) wherever they apply. */
#include "cmocka_prelude.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/numparse.h"

/* Scan s from an exact-size heap copy (no NUL after it, so ASan catches a read past the end).
 * Returns the offset the scan stopped at, or -1 with *err and *err_off set. The literal's
 * start/end pointers are rebased onto s. */
static long scan(const char *s, isv__numlit *n, int *err, long *err_off) {
  size_t len = strlen(s);
  char *copy = malloc(len);
  assert_non_null(copy);
  memcpy(copy, s, len);
  int e = -1;
  const char *errp = NULL;
  const char *end = isv__num_scan(copy, copy + len, n, &e, &errp);
  long r;
  if (end) {
    r = (long)(end - copy);
    n->start = s + (n->start - copy);
    n->end = s + (n->end - copy);
  } else {
    r = -1;
    if (err) *err = e;
    if (err_off) *err_off = (long)(errp - copy);
  }
  free(copy);
  return r;
}

/* Scan a whole literal; it must be accepted up to its last character. */
static isv__numlit lit(const char *s) {
  isv__numlit n;
  long r = scan(s, &n, NULL, NULL);
  if (r != (long)strlen(s)) fail_msg("%.80s: scan stopped at %ld", s, r);
  return n;
}

static uint64_t f64_bits(const char *s) {
  isv__numlit n = lit(s);
  double d = isv__num_to_f64(&n);
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

static uint32_t f32_bits(const char *s) {
  isv__numlit n = lit(s);
  float f = isv__num_to_f32(&n);
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static uint16_t f16_bits(const char *s) {
  isv__numlit n = lit(s);
  return isv__num_to_f16(&n);
}

static uint16_t bf16_bits(const char *s) {
  isv__numlit n = lit(s);
  return isv__num_to_bf16(&n);
}

static void expect_f64(const char *s, uint64_t want) {
  uint64_t got = f64_bits(s);
  if (got != want)
    fail_msg("FP64 %.80s: got %016llx want %016llx", s, (unsigned long long)got,
             (unsigned long long)want);
}

static void expect_f32(const char *s, uint32_t want) {
  uint32_t got = f32_bits(s);
  if (got != want) fail_msg("FP32 %.80s: got %08x want %08x", s, got, want);
}

/* FP64 and FP32 agree with glibc's strtod/strtof (correctly rounded). */
static void expect_like_strtod(const char *s) {
  double d = strtod(s, NULL);
  float f = strtof(s, NULL);
  uint64_t ud;
  uint32_t uf;
  memcpy(&ud, &d, 8);
  memcpy(&uf, &f, 4);
  expect_f64(s, ud);
  expect_f32(s, uf);
}

static void scanner_fields(void **state) {
  (void)state;
  isv__numlit n = lit("12.50e-3");
  assert_true(n.w == 1250 && n.q == -5); /* value = w * 10^q */
  assert_int_equal(n.neg, 0);
  assert_int_equal(n.special, ISV__NUM_FINITE);
  assert_int_equal(n.truncated, 0);
  assert_int_equal(n.is_int, 0);
  n = lit("-0.000123");
  assert_true(n.w == 123 && n.q == -6); /* leading zeros are not significant */
  assert_int_equal(n.neg, 1);
  assert_int_equal(n.is_int, 0);
  n = lit("4200");
  assert_true(n.w == 4200 && n.q == 0);
  assert_int_equal(n.is_int, 1);
  n = lit("7E+2");
  assert_true(n.w == 7 && n.q == 2);
  assert_int_equal(n.is_int, 0);
  /* 23 digits: the first 19 are kept, the rest go into q */
  n = lit("12345678901234567890123");
  assert_true(n.w == 1234567890123456789u && n.q == 4);
  assert_int_equal(n.truncated, 1);
  assert_int_equal(n.is_int, 1);
  n = lit("12345678901234567890000");
  assert_true(n.w == 1234567890123456789u && n.q == 4);
  assert_int_equal(n.truncated, 0); /* only zeros were dropped */
  n = lit("1.23456789012345678901");
  assert_true(n.w == 1234567890123456789u && n.q == -18);
  assert_int_equal(n.truncated, 1);
  n = lit("1.23456789012345678900");
  assert_true(n.w == 1234567890123456789u && n.q == -18);
  assert_int_equal(n.truncated, 0);
  n = lit("0.000000000000000000000012345678901234567891e5");
  assert_true(n.w == 1234567890123456789u && n.q == -41 + 5);
  assert_int_equal(n.truncated, 1);
}

static void scan_stops_where_the_literal_ends(void **state) {
  (void)state;
  static const struct {
    const char *s;
    long end;
    int is_int;
  } cases[] = {
      {"12,", 2, 1},     {"1.5]", 3, 0},      {"-3e2}", 4, 0},   {"0 ", 1, 1},
      {"0x10", 1, 1},    {"1e5e3", 3, 0},     {"NaN,", 3, 0},    {"Infinity]", 8, 0},
      {"-Infinity", 9, 0}, {"123456789012345678901234567890abc", 30, 1},
      {"1.25 ", 4, 0},   {"9.87654321x", 10, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    isv__numlit n;
    long r = scan(cases[i].s, &n, NULL, NULL);
    if (r != cases[i].end) fail_msg("%s: stopped at %ld, want %ld", cases[i].s, r, cases[i].end);
    assert_ptr_equal(n.start, cases[i].s);
    assert_ptr_equal(n.end, cases[i].s + cases[i].end);
    assert_int_equal(n.is_int, cases[i].is_int);
  }
}

static void scanner_error_kinds(void **state) {
  (void)state;
  static const struct {
    const char *s;
    int err;
    long off; /* where the error is reported */
  } cases[] = {
      {"01", ISV__NERR_LEADING0, 0},  {"-01", ISV__NERR_LEADING0, 1},
      {"00", ISV__NERR_LEADING0, 0},  {"-00.5", ISV__NERR_LEADING0, 1},
      {"1.", ISV__NERR_FRAC, 2},      {"1.e5", ISV__NERR_FRAC, 2},
      {"-0.x", ISV__NERR_FRAC, 3},    {"12345678901234567890.", ISV__NERR_FRAC, 21},
      {"1e", ISV__NERR_EXP, 2},       {"1e+", ISV__NERR_EXP, 3},
      {"1E-x", ISV__NERR_EXP, 3},     {"2.5e", ISV__NERR_EXP, 4},
      {"1e+-5", ISV__NERR_EXP, 3},    {"+1", ISV__NERR_SYNTAX, 0},
      {".5", ISV__NERR_SYNTAX, 0},    {"-", ISV__NERR_SYNTAX, 0},
      {"-x", ISV__NERR_SYNTAX, 0},    {"x", ISV__NERR_SYNTAX, 0},
      {"e5", ISV__NERR_SYNTAX, 0},    {"Infinit", ISV__NERR_SYNTAX, 0},
      {"infinity", ISV__NERR_SYNTAX, 0}, {"Inf", ISV__NERR_SYNTAX, 0},
      {"nan", ISV__NERR_SYNTAX, 0},   {"-NaN", ISV__NERR_SYNTAX, 0},
      {"NAN", ISV__NERR_SYNTAX, 0},   {"- 1", ISV__NERR_SYNTAX, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    isv__numlit n;
    int err = -1;
    long off = -2;
    long r = scan(cases[i].s, &n, &err, &off);
    if (r != -1) fail_msg("%s: accepted up to %ld", cases[i].s, r);
    if (err != cases[i].err || off != cases[i].off)
      fail_msg("%s: error %d at %ld, want %d at %ld", cases[i].s, err, off, cases[i].err,
               cases[i].off);
  }
}

static void simple_values_match_strtod(void **state) {
  (void)state;
  static const char *const cases[] = {
      "0.1",   "0.2",  "0.3",      "1.5",         "-2.5",        "3.14159",   "123456789",
      "1e22",  "1e23", "1e-22",    "1e-23",       "-2.5e-3",     "0.000123",  "4.35",
      "100",   "1E2",  "65504",    "8388607.5",   "2.2e-308",    "9.87e307",  "1e308",
      "1e-45", "7e-46", "1.4e-45", "3.4028235e38", "1.17549435e-38", "6e-8", "123.456e-7",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_like_strtod(cases[i]);
}

/* Exact decimal expansions (computed with Python's fractions). */
static const char two_m1075[] = /* 2^-1075: half the smallest FP64 subnormal */
    "2.470328229206232720882843964341106861825299013071623822127928412503377536351043759326"
    "49918180817996189898282347722858865463328355177969898199387398005390939063150356595155"
    "70226392290858392449105184435931802849936536152500319370457678249219365623669863658480"
    "75700158576926990370631192827955855133292783433840935197801553124659726357957462276646"
    "52728272200563740064854999770965994704540208281662262378573934507363390079677619305775"
    "06740176324673600968951340535537458516661134223766678604162159680461914467291840300530"
    "05753084904876539171138659164623952491262365388187963623937328042389101867234849766823"
    "50898633885879256283027559956575244555072551893136908362547791869486679949683240497058"
    "21028513185451396213837722826145437693412532098591327667236328125"
    "e-324";
static const char three_two_m1075[] = /* 3 * 2^-1075: halfway between subnormals 1 and 2 */
    "7.410984687618698162648531893023320585475897039214871466383785237510132609053131277979"
    "49754542453988569694847043168576596389985065533909694598162194016172817189451069785467"
    "10679176872575177347315553307795408549809608457500958111373034747658096871009590975442"
    "27100475730780971111893578483867565399878350301522805593404659373979179073872386829939"
    "58184816601691220194564999312897984113620624844986787135721803522090170239032857917325"
    "20220528974020802906854021606612375549983402671300035812486479041385743401875520901590"
    "17259254714629617513415977493871857473787096164563890871811984127167305601704549300470"
    "52695901657637768849082679869725733665217655679410725087643375608460039849049721491174"
    "63085539556354188641513168478436313080237596295773983001708984375"
    "e-324";
static const char fp64_normal_mid[] = /* halfway between the largest subnormal and DBL_MIN */
    "2.225073858507201136057409796709131975934819546351645648023426109724822222021076945516"
    "52952390813508791414915891303962110687008643869459464552765720740782062174337998814106"
    "32673292535522868813721490129811224514518898490572223072852551331557550159143974763979"
    "83411801999323962548289017107081850690630666655994938275772572015763062690663332647565"
    "30000924588831643303777979186961204949739037782970490505108060994073026293712895895000"
    "35837999672072543043602840788957717961509455167482434710307026091446215722898802581825"
    "45180325707018860872113128079512233426288368622321503775666622503982534335974568884423"
    "90026549819838548794829220689472168983109969836584681402285424333066033985088644580400"
    "103493397042756718644338377048603786162277173854562306587467901408672332763671875"
    "e-308";
static const char dbl_max_mid[] = /* halfway between DBL_MAX and 2^1024 */
    "1.797693134862315807937289714053034150799341327100378269361737789804449682927647509466"
    "49017977587207096330286416692887910946555547851940402630657488671505820681908902000708"
    "38367627385484581771153176447573027006985557136695962284291481986083493647529271907416"
    "8444365510704342711559699508093042880177904174497792"
    "e+308";

static void fp32_exact_ties_round_to_even(void **state) {
  (void)state;
  /* 2^24 + 1 lies halfway between 2^24 (even) and 2^24 + 2 (odd): down */
  expect_f32("16777217", 0x4B800000);
  expect_f32("16777217.0", 0x4B800000);
  expect_f32("1.6777217e7", 0x4B800000);
  /* 2^24 + 3: halfway between 2^24 + 2 (odd) and 2^24 + 4 (even): up */
  expect_f32("16777219", 0x4B800002);
  /* a hair either side of the tie decides */
  expect_f32("16777217.000000000000000000001", 0x4B800001);
  expect_f32("16777216.999999999999999999999", 0x4B800000);
  /* 1 + 2^-24 and 1 + 3 * 2^-24 */
  expect_f32("1.000000059604644775390625", 0x3F800000);
  expect_f32("1.0000000596046447753906250001", 0x3F800001);
  expect_f32("1.0000000596046447753906249999", 0x3F800000);
  expect_f32("1.000000178813934326171875", 0x3F800002);
  /* 1 + 2^-24 + 2^-60: its double is 1 + 2^-24 exactly, a float tie; the literal is above */
  expect_f32("1.000000059604644776257986737988403547205962240695953369140625", 0x3F800001);
  /* the midpoint between FLT_MAX and 2^128 rounds to even: infinity; just below it does not */
  expect_f32("340282356779733661637539395458142568448", 0x7F800000);
  expect_f32("340282356779733661637539395458142568447", 0x7F7FFFFF);
  expect_f32("3.4028235677973366e38", 0x7F7FFFFF);
  static const char *const like[] = {
      "16777217",          "16777219",
      "16777217.000000000000000000001",
      "1.000000059604644775390625",
      "1.000000178813934326171875",
      "340282356779733661637539395458142568448",
      "3.4028235677973366e38",
  };
  for (size_t i = 0; i < sizeof like / sizeof like[0]; i++) expect_like_strtod(like[i]);
}

static void fp64_exact_ties_round_to_even(void **state) {
  (void)state;
  /* 2^53 + 1: halfway between 2^53 (even) and 2^53 + 2 */
  expect_f64("9007199254740993", 0x4340000000000000u);
  expect_f64("9007199254740993.0", 0x4340000000000000u);
  expect_f64("9.007199254740993e15", 0x4340000000000000u);
  expect_f64("9007199254740993000000000000000e-15", 0x4340000000000000u);
  /* 2^53 + 3: up to 2^53 + 4 (even) */
  expect_f64("9007199254740995", 0x4340000000000002u);
  /* past the 19th digit, a single nonzero digit breaks the tie */
  expect_f64("9007199254740993.0000000000000000001", 0x4340000000000001u);
  expect_f64("9007199254740992.9999999999999999999", 0x4340000000000000u);
  /* 1 + 2^-53 */
  expect_f64("1.00000000000000011102230246251565404236316680908203125", 0x3FF0000000000000u);
  expect_f64("1.000000000000000111022302462515654042363166809082031250001",
             0x3FF0000000000001u);
  expect_f64("1.000000000000000111022302462515654042363166809082031249999",
             0x3FF0000000000000u);
  /* the midpoint between DBL_MAX and 2^1024 rounds to even: infinity */
  expect_f64(dbl_max_mid, 0x7FF0000000000000u);
  expect_f64("1.7976931348623158e308", 0x7FEFFFFFFFFFFFFFu);
  expect_f64("1.7976931348623157e308", 0x7FEFFFFFFFFFFFFFu);
  expect_f64("1.7976931348623159e308", 0x7FF0000000000000u);
  static const char *const like[] = {
      "9007199254740993", "9007199254740995", "9007199254740993.0000000000000000001",
      "1.00000000000000011102230246251565404236316680908203125", dbl_max_mid,
      "1.7976931348623158e308",
  };
  for (size_t i = 0; i < sizeof like / sizeof like[0]; i++) expect_like_strtod(like[i]);
}

/* s with its last mantissa digit replaced by the digits in `tail` (before the exponent). */
static char *with_tail(char *out, size_t cap, const char *s, size_t keep, const char *tail) {
  const char *e = strchr(s, 'e');
  assert_non_null(e);
  assert_true(keep <= (size_t)(e - s));
  int n = snprintf(out, cap, "%.*s%s%s", (int)keep, s, tail, e);
  assert_true(n > 0 && (size_t)n < cap);
  return out;
}

static void halfway_subnormals(void **state) {
  (void)state;
  static char buf[1200];
  const size_t l1 = (size_t)(strchr(two_m1075, 'e') - two_m1075);
  const size_t l3 = (size_t)(strchr(three_two_m1075, 'e') - three_two_m1075);
  const size_t ln = (size_t)(strchr(fp64_normal_mid, 'e') - fp64_normal_mid);
  /* FP64: 2^-1075 is a tie between 0 and the smallest subnormal: to 0 (even) */
  expect_f64(two_m1075, 0);
  expect_f64(with_tail(buf, sizeof buf, two_m1075, l1, "0000000000000001"), 1);
  expect_f64(with_tail(buf, sizeof buf, two_m1075, 40, ""), 0); /* truncated: below */
  expect_f64("2.4703282292062328e-324", 1);
  expect_f64("2.4703282292062327e-324", 0);
  expect_f64("-2.4703282292062328e-324", 0x8000000000000001u);
  /* 3 * 2^-1075: a tie between subnormals 1 (odd) and 2 (even): up */
  expect_f64(three_two_m1075, 2);
  expect_f64(with_tail(buf, sizeof buf, three_two_m1075, 40, ""), 1);
  expect_f64(with_tail(buf, sizeof buf, three_two_m1075, l3, "01"), 2);
  /* between the largest subnormal (odd) and DBL_MIN (even) */
  expect_f64(fp64_normal_mid, 0x0010000000000000u);
  expect_f64(with_tail(buf, sizeof buf, fp64_normal_mid, 60, ""), 0x000FFFFFFFFFFFFFu);
  expect_f64(with_tail(buf, sizeof buf, fp64_normal_mid, ln, "0001"), 0x0010000000000000u);
  expect_like_strtod(two_m1075);
  expect_like_strtod(three_two_m1075);
  expect_like_strtod(fp64_normal_mid);

  /* FP32: 2^-150 (a tie with 0), 3 * 2^-150, and the subnormal/normal boundary */
  expect_f32("7.006492321624085354618647916449580656401309709382578858785341419448955413429303"
             "00743319094181060791015625e-46", 0);
  expect_f32("7.006492321624085354618647916449580656401309709382578858785341419448955413429303"
             "007433190941810607910156250001e-46", 1);
  expect_f32("7.0064923216240853547e-46", 1);
  expect_f32("7.0064923216240853546e-46", 0);
  expect_f32("2.101947696487225606385594374934874196920392912814773657635602425834686624028790"
             "902229957282543182373046875e-45", 2);
  expect_f32("2.1019476964872256063e-45", 1);
  expect_f32("1.175494280757364291727882991035766513322858992758990427682963118425003064965173"
             "0385585324256680905818939208984375e-38", 0x00800000);
  expect_f32("1.1754942807573642917e-38", 0x007FFFFF);
  expect_like_strtod("7.0064923216240853547e-46");
  expect_like_strtod("7.0064923216240853546e-46");
  expect_like_strtod("2.1019476964872256063e-45");
  expect_like_strtod("1.1754942807573642917e-38");
}

static void more_than_19_digits(void **state) {
  (void)state;
  static const char *const cases[] = {
      "123456789012345678901234567890",
      "18446744073709551615", /* UINT64_MAX: 20 digits, above 2^63 */
      "18446744073709551616",
      "9223372036854775807",
      "9223372036854775808",
      "9999999999999999999",
      "99999999999999999999",
      "0.1000000000000000055511151231257827021181583404541015625", /* the double 0.1 */
      "0.1000000000000000055511151231257827021181583404541015624",
      "0.1000000000000000055511151231257827021181583404541015626",
      "3.141592653589793238462643383279502884197169399375105820974944",
      "2.718281828459045235360287471352662497757247093699959574966967e-200",
      "6.02214076000000000000000000000000000000000000000000001e23",
      "1.00000000000000000000000000000000000000000000000000000000001",
      "0.99999999999999999999999999999999999999999999999999999999999",
      "4.9406564584124654417656879286822137236505980e-324",
      "1.4012984643248170709237295832899161312802619418765e-45",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_like_strtod(cases[i]);
  /* 1000 digits of 1s */
  static char ones[1004];
  ones[0] = '0';
  ones[1] = '.';
  memset(ones + 2, '1', 1000);
  ones[1002] = '\0';
  expect_like_strtod(ones);
  ones[0] = '1';
  ones[1] = '1';
  expect_like_strtod(ones); /* "11111...": an integer of 1002 digits: +inf */
  expect_f64(ones, 0x7FF0000000000000u);
}

static void overflow_and_underflow(void **state) {
  (void)state;
  expect_f64("1e400", 0x7FF0000000000000u);
  expect_f64("-1e400", 0xFFF0000000000000u);
  expect_f64("1e-400", 0);
  expect_f64("-1e-400", 0x8000000000000000u); /* the sign survives underflow */
  expect_f32("1e39", 0x7F800000);
  expect_f32("-1e39", 0xFF800000);
  expect_f32("1e-46", 0);
  expect_f32("-1e-46", 0x80000000);
  assert_int_equal(f16_bits("1e400"), 0x7C00);
  assert_int_equal(f16_bits("65520"), 0x7C00); /* the tie with 2^16 rounds to even: inf */
  assert_int_equal(f16_bits("65519.999"), 0x7BFF);
  assert_int_equal(f16_bits("-1e-400"), 0x8000);
  assert_int_equal(bf16_bits("1e39"), 0x7F80);
  assert_int_equal(bf16_bits("1e-400"), 0x0000);
  /* exponents far beyond any table */
  expect_f64("1e99999999999999999999", 0x7FF0000000000000u);
  expect_f64("1e-99999999999999999999", 0);
  expect_f64("0e99999999999999999999", 0);
  expect_f32("1e99999999999999999999", 0x7F800000);
  /* digits and exponent that cancel out */
  expect_f64("0.00000000000000000000000000000000000000000000000001e50", 0x3FF0000000000000u);
  expect_f64("100000000000000000000000000000000000000000000000000e-50", 0x3FF0000000000000u);
  expect_like_strtod("1000000000000000000000000000000000000000e-400");
  expect_like_strtod("0.000000000000000000000000000000000000001e347");
  expect_like_strtod("1e308");
  expect_like_strtod("1e309");
  expect_like_strtod("1e-324");
  expect_like_strtod("3e-324");
}

static void nan_infinity_and_signed_zero(void **state) {
  (void)state;
  isv__numlit n = lit("NaN");
  assert_int_equal(n.special, ISV__NUM_NAN);
  assert_true(isnan(isv__num_to_f64(&n)));
  assert_true(isnan(isv__num_to_f32(&n)));
  uint16_t h = f16_bits("NaN");
  assert_true((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0);
  h = bf16_bits("NaN");
  assert_true((h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0);

  n = lit("Infinity");
  assert_int_equal(n.special, ISV__NUM_INF);
  assert_int_equal(n.neg, 0);
  expect_f64("Infinity", 0x7FF0000000000000u);
  expect_f32("Infinity", 0x7F800000);
  assert_int_equal(f16_bits("Infinity"), 0x7C00);
  assert_int_equal(bf16_bits("Infinity"), 0x7F80);
  n = lit("-Infinity");
  assert_int_equal(n.special, ISV__NUM_INF);
  assert_int_equal(n.neg, 1);
  expect_f64("-Infinity", 0xFFF0000000000000u);
  expect_f32("-Infinity", 0xFF800000);
  assert_int_equal(f16_bits("-Infinity"), 0xFC00);
  assert_int_equal(bf16_bits("-Infinity"), 0xFF80);

  static const char *const neg_zeros[] = {"-0", "-0.0", "-0e10", "-0.000e-5", "-0E+400"};
  for (size_t i = 0; i < sizeof neg_zeros / sizeof neg_zeros[0]; i++) {
    expect_f64(neg_zeros[i], 0x8000000000000000u);
    expect_f32(neg_zeros[i], 0x80000000);
    assert_int_equal(f16_bits(neg_zeros[i]), 0x8000);
    assert_int_equal(bf16_bits(neg_zeros[i]), 0x8000);
  }
  static const char *const zeros[] = {"0", "0.0", "0e10", "0.000000e-5", "0E+400"};
  for (size_t i = 0; i < sizeof zeros / sizeof zeros[0]; i++) {
    expect_f64(zeros[i], 0);
    expect_f32(zeros[i], 0);
    assert_int_equal(f16_bits(zeros[i]), 0);
    assert_int_equal(bf16_bits(zeros[i]), 0);
  }
}

/* FP16/BF16 expectations from exact rational rounding (Python's fractions). */
static void half_formats_round_once(void **state) {
  (void)state;
  static const struct {
    const char *s;
    uint16_t f16, bf16;
  } cases[] = {
      {"1", 0x3C00, 0x3F80},
      {"-2", 0xC000, 0xC000},
      {"0.1", 0x2E66, 0x3DCD},
      {"65504", 0x7BFF, 0x4780},
      {"2049", 0x6800, 0x4500},  /* FP16 tie, down to even */
      {"2051", 0x6802, 0x4500},  /* FP16 tie, up to even */
      {"2049.0000000000000000000001", 0x6801, 0x4500},
      {"5.9604644775390625e-08", 0x0001, 0x3380},  /* 2^-24: smallest FP16 subnormal */
      {"2.98023223876953125e-08", 0x0000, 0x3300}, /* 2^-25: tie with 0 */
      {"2.980232238769531250000001e-08", 0x0001, 0x3300},
      {"8.94069671630859375e-08", 0x0002, 0x33C0}, /* 3 * 2^-25: tie, up to 2 */
      {"6.103515625e-05", 0x0400, 0x3880},         /* 2^-14: smallest FP16 normal */
      {"1.00390625", 0x3C04, 0x3F80},              /* 1 + 2^-8: BF16 tie, down */
      {"1.01171875", 0x3C0C, 0x3F82},              /* 1 + 3 * 2^-8: BF16 tie, up */
      /* 1 + 2^-8 + 2^-30: through FP32 it would become the BF16 tie 1 + 2^-8 and go down */
      {"1.003906250931322574615478515625", 0x3C04, 0x3F81},
      /* 1 + 2^-11 + 2^-60: through FP64 it would become the FP16 tie 1 + 2^-11 and go down */
      {"1.000488281250000000867361737988403547205962240695953369140625", 0x3C01, 0x3F80},
      {"1.00048828125", 0x3C00, 0x3F80}, /* the FP16 tie itself */
      {"9.183549615799121e-41", 0x0000, 0x0001},   /* BF16 subnormal */
      {"3.3961e38", 0x7C00, 0x7F7F},
      {"3.4e38", 0x7C00, 0x7F80}, /* above BF16's largest finite and its midpoint */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t h = f16_bits(cases[i].s), b = bf16_bits(cases[i].s);
    if (h != cases[i].f16) fail_msg("FP16 %s: got %04x want %04x", cases[i].s, h, cases[i].f16);
    if (b != cases[i].bf16)
      fail_msg("BF16 %s: got %04x want %04x", cases[i].s, b, cases[i].bf16);
  }
}

static void integer_magnitudes(void **state) {
  (void)state;
  static const struct {
    const char *s;
    int rc;
    uint64_t mag;
  } cases[] = {
      {"0", 0, 0},
      {"-0", 0, 0},
      {"7", 0, 7},
      {"-42", 0, 42},
      {"9223372036854775807", 0, 9223372036854775807u},
      {"-9223372036854775808", 0, 9223372036854775808u},
      {"12345678901234567890", 0, 12345678901234567890u}, /* more than 19 digits: exact */
      {"18446744073709551615", 0, UINT64_MAX},
      {"18446744073709551616", -2, 0},
      {"18446744073709551620", -2, 0},
      {"99999999999999999999", -2, 0},
      {"-100000000000000000000", -2, 0},
      {"1.0", -1, 0},
      {"1e3", -1, 0},
      {"0.5", -1, 0},
      {"NaN", -1, 0},
      {"-Infinity", -1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    isv__numlit n = lit(cases[i].s);
    uint64_t mag = 0xDEAD;
    int rc = isv__num_to_mag(&n, &mag);
    if (rc != cases[i].rc) fail_msg("%s: rc %d want %d", cases[i].s, rc, cases[i].rc);
    if (rc == 0 && mag != cases[i].mag)
      fail_msg("%s: %llu want %llu", cases[i].s, (unsigned long long)mag,
               (unsigned long long)cases[i].mag);
    assert_int_equal(n.neg, cases[i].s[0] == '-');
  }
}

static uint64_t rng_state = 0x2545F4914F6CDD1Du;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* One random digit; shape 1 favours zeros (near exact values), 2 nines (near carries). */
static char digit(int shape) {
  if (shape == 1 && rng() % 4) return '0';
  if (shape == 2 && rng() % 4) return '9';
  return (char)('0' + rng() % 10);
}

/* Random literals of many shapes (long, short, near ties, extreme exponents) vs strtod. */
/* isv__num_swar_digits4 and isv__num_swar_digits4_spaced against a byte-by-byte reading of
 * their forms — "1,2,3,4," and "1,2,3,4]", "1, 2, 3, 4," and "1, 2, 3, 4]" (json.dumps's
 * separators) — for every byte value at every position: four one-digit elements are taken,
 * with each digit's value; any other byte anywhere (a digit's neighbours '/' and ':', a byte of
 * 0x80 or more whose add would carry) is not. */
static void four_one_digit_elements_in_a_word(void **state) {
  (void)state;
  static const struct {
    const char *form, *closed; /* digits at every `stride`th byte, the last byte ',' or ']' */
    int stride;
    int (*read)(const char *, uint64_t *);
  } forms[] = {{"1,2,3,4,", "1,2,3,4]", 2, isv__num_swar_digits4},
               {"1, 2, 3, 4,", "1, 2, 3, 4]", 3, isv__num_swar_digits4_spaced}};
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    const int len = (int)strlen(forms[f].form), stride = forms[f].stride;
    for (int closing = 0; closing < 2; closing++)
      for (int at = 0; at < len; at++)
        for (int b = 0; b < 256; b++) {
          char w[16];
          memcpy(w, closing ? forms[f].closed : forms[f].form, (size_t)len);
          w[at] = (char)b;
          int want = 1;
          for (int i = 0; i < len - 1; i++)
            if (i % stride == 0 ? w[i] < '0' || w[i] > '9' : w[i] != forms[f].form[i]) want = 0;
          if (w[len - 1] != ',' && w[len - 1] != ']') want = 0;
          if (want) want = w[len - 1] == ']' ? 2 : 1;
          uint64_t d = 0;
          int got = forms[f].read(w, &d);
          if (got != want)
            fail_msg("%s: byte %#x at %d of %s: %d, not %d", forms[f].form, b, at,
                     closing ? "]" : ",", got, want);
          for (int i = 0; got && i < 4; i++)
            if (((d >> (16 * i)) & 0xffff) != (uint64_t)(w[stride * i] - '0'))
              fail_msg("%s: byte %#x at %d: element %d is %llu", forms[f].form, b, at, i,
                       (unsigned long long)((d >> (16 * i)) & 0xffff));
        }
  }
}

static void random_literals_match_strtod(void **state) {
  (void)state;
  for (int iter = 0; iter < 20000; iter++) {
    char s[160];
    size_t n = 0;
    int shape = (int)(rng() % 3);
    if (rng() % 4 == 0) s[n++] = '-';
    if (rng() % 3 == 0) { /* 0.000ddd */
      s[n++] = '0';
      s[n++] = '.';
      for (int z = (int)(rng() % 12); z > 0; z--) s[n++] = '0';
      for (int d = 1 + (int)(rng() % 30); d > 0; d--) s[n++] = digit(shape);
    } else { /* ddd[.ddd] */
      s[n++] = (char)('1' + rng() % 9);
      for (int d = (int)(rng() % 30); d > 0; d--) s[n++] = digit(shape);
      if (rng() % 2) {
        s[n++] = '.';
        for (int d = 1 + (int)(rng() % 25); d > 0; d--) s[n++] = digit(shape);
      }
    }
    if (rng() % 2) n += (size_t)snprintf(s + n, sizeof s - n, "e%d", (int)(rng() % 720) - 360);
    s[n] = '\0';
    expect_like_strtod(s);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(scanner_fields),
      cmocka_unit_test(scan_stops_where_the_literal_ends),
      cmocka_unit_test(scanner_error_kinds),
      cmocka_unit_test(simple_values_match_strtod),
      cmocka_unit_test(fp32_exact_ties_round_to_even),
      cmocka_unit_test(fp64_exact_ties_round_to_even),
      cmocka_unit_test(halfway_subnormals),
      cmocka_unit_test(more_than_19_digits),
      cmocka_unit_test(overflow_and_underflow),
      cmocka_unit_test(nan_infinity_and_signed_zero),
      cmocka_unit_test(half_formats_round_once),
      cmocka_unit_test(integer_magnitudes),
      cmocka_unit_test(four_one_digit_elements_in_a_word),
      cmocka_unit_test(random_literals_match_strtod),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
