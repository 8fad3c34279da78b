/* Requests in flight per client (lib/core/clients.c): the limit per key, releases, keys that
 * are too long, and one table used from two threads at once (the group's, under TSan). */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <string.h>
#include <uv.h>

#include "core/clients.h"
#include "inferserve.h"

static void the_limit_is_per_key(void **state) {
  (void)state;
  isv__clients t;
  assert_int_equal(isv__clients_init(&t, NULL), 0);
  int full;
  isv__client *a1 = isv__clients_take(&t, "10.0.0.1", 2, &full);
  isv__client *a2 = isv__clients_take(&t, "10.0.0.1", 2, &full);
  assert_non_null(a1);
  assert_ptr_equal(a1, a2); /* one count per key */
  assert_null(isv__clients_take(&t, "10.0.0.1", 2, &full));
  assert_int_equal(full, 1);
  isv__client *b = isv__clients_take(&t, "10.0.0.2", 2, &full); /* another key: its own */
  assert_non_null(b);
  isv__client_release(a1);
  a1 = isv__clients_take(&t, "10.0.0.1", 2, &full); /* room again */
  assert_non_null(a1);
  isv__client_release(a1);
  isv__client_release(a2);
  isv__client_release(b);
  isv__client_release(NULL);
  for (size_t i = 0; i < ISV__CLIENT_BUCKETS; i++) assert_null(t.buckets[i]); /* all gone */
  isv__clients_free(&t);
}

static void long_keys_are_cut_alike(void **state) {
  (void)state;
  isv__clients t;
  assert_int_equal(isv__clients_init(&t, NULL), 0);
  char k1[300], k2[300];
  memset(k1, 'x', sizeof k1 - 1);
  k1[sizeof k1 - 1] = '\0';
  memcpy(k2, k1, sizeof k2);
  k2[200] = 'y'; /* differs past the cut: the same client */
  int full;
  isv__client *a = isv__clients_take(&t, k1, 1, &full);
  assert_non_null(a);
  assert_null(isv__clients_take(&t, k2, 1, &full));
  assert_int_equal(full, 1);
  isv__client_release(a);
  isv__clients_free(&t); /* frees what is left: nothing here */
}

typedef struct hammer {
  isv__clients *t;
  int over; /* times both threads held the key's one place at once: must stay 0 */
  atomic_int *held;
} hammer;

static void hammer_main(void *arg) {
  hammer *h = arg;
  for (int i = 0; i < 20000; i++) {
    int full;
    isv__client *c = isv__clients_take(h->t, "shared", 1, &full);
    if (c == NULL) continue;
    if (atomic_fetch_add(h->held, 1) >= 1) h->over++; /* both at once: the limit let 2 in */
    atomic_fetch_sub(h->held, 1);
    isv__client_release(c);
  }
}

static void two_threads_one_table(void **state) {
  (void)state;
  isv__clients t;
  assert_int_equal(isv__clients_init(&t, NULL), 0);
  atomic_int held = 0;
  hammer h[2] = {{&t, 0, &held}, {&t, 0, &held}};
  uv_thread_t th[2];
  for (int i = 0; i < 2; i++) uv_thread_create(&th[i], hammer_main, &h[i]);
  for (int i = 0; i < 2; i++) uv_thread_join(&th[i]);
  assert_int_equal(h[0].over + h[1].over, 0);
  for (size_t i = 0; i < ISV__CLIENT_BUCKETS; i++) assert_null(t.buckets[i]);
  isv__clients_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_limit_is_per_key),
      cmocka_unit_test(long_keys_are_cut_alike),
      cmocka_unit_test(two_threads_one_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
