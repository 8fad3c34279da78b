/* core/options.c: the defaults, every public setter's accepted and refused values (a refused
 * value leaves the option as it was), and the protocol switches by name. */
#include "cmocka_prelude.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"

static int setup(void **state) {
  isv_options *o = NULL;
  assert_int_equal(isv_options_new(&o), 0);
  assert_non_null(o);
  *state = o;
  return 0;
}

static int teardown(void **state) {
  isv_options_free(*state);
  return 0;
}

/* A string of n copies of c (n < 128). */
static const char *repeat(char *buf, char c, size_t n) {
  memset(buf, c, n);
  buf[n] = '\0';
  return buf;
}

static void new_holds_every_default(void **state) {
  const isv_options *o = *state;
  assert_int_equal(o->max_body_bytes, 65u * 1024 * 1024); /* a 64 MiB tensor and its header */
  assert_int_equal(o->max_header_bytes, 64u * 1024);
  assert_int_equal(o->idle_timeout_ms, 60000);
  assert_int_equal(o->header_timeout_ms, 30000);
  assert_int_equal(o->max_connections, 10000);
  assert_int_equal(o->max_json_depth, 64);
  assert_int_equal(o->buffer_cache_bytes, 64u * 1024 * 1024);
  assert_int_equal(o->small_block_cache_bytes, 2u * 1024 * 1024);
  assert_int_equal(o->strict_readiness, 0);
  assert_int_equal(o->shared_memory, 0);
  assert_int_equal(o->shared_memory_in_place, 0); /* copies: a client cannot SIGBUS it */
  assert_string_equal(o->server_name, "libinferserve");
  assert_string_equal(o->server_version, isv_version());
  assert_int_equal(o->n_protocols, 0);
  assert_int_equal(isv__options_protocol(o, "kserve_v2"), -1);
}

static void defaults_fill_a_stack_struct_like_new(void **state) {
  isv_options s;
  memset(&s, 0xAB, sizeof s); /* garbage first: defaults must set every field */
  isv__options_defaults(&s);
  const isv_options *o = *state;
  assert_int_equal(s.max_body_bytes, o->max_body_bytes);
  assert_int_equal(s.max_header_bytes, o->max_header_bytes);
  assert_int_equal(s.idle_timeout_ms, o->idle_timeout_ms);
  assert_int_equal(s.header_timeout_ms, o->header_timeout_ms);
  assert_int_equal(s.max_connections, o->max_connections);
  assert_int_equal(s.max_json_depth, o->max_json_depth);
  assert_int_equal(s.buffer_cache_bytes, o->buffer_cache_bytes);
  assert_int_equal(s.strict_readiness, 0);
  assert_string_equal(s.server_name, "libinferserve");
  assert_string_equal(s.server_version, isv_version());
  assert_int_equal(s.n_protocols, 0);
}

static void new_with_null_out_is_einval_and_free_null_is_a_noop(void **state) {
  (void)state;
  assert_int_equal(isv_options_new(NULL), ISV_EINVAL);
  isv_options_free(NULL);
}

static void every_setter_refuses_a_null_options(void **state) {
  (void)state;
  assert_int_equal(isv_options_set_max_body_bytes(NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_max_header_bytes(NULL, 4096), ISV_EINVAL);
  assert_int_equal(isv_options_set_idle_timeout_ms(NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_header_timeout_ms(NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_max_connections(NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_max_json_depth(NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_strict_readiness(NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_shared_memory_in_place(NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_buffer_cache_bytes(NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_small_block_cache_bytes(NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_server_name(NULL, "a", "b"), ISV_EINVAL);
  assert_int_equal(isv_options_set_protocol(NULL, "metrics", 0), ISV_EINVAL);
}

static void max_body_bytes_refuses_zero(void **state) {
  isv_options *o = *state;
  assert_int_equal(isv_options_set_max_body_bytes(o, 0), ISV_EINVAL);
  assert_int_equal(o->max_body_bytes, (64u << 20) + (1u << 20));
  assert_int_equal(isv_options_set_max_body_bytes(o, 1), 0);
  assert_int_equal(o->max_body_bytes, 1);
  assert_int_equal(isv_options_set_max_body_bytes(o, SIZE_MAX), 0);
  assert_true(o->max_body_bytes == SIZE_MAX);
  assert_int_equal(isv_options_set_max_body_bytes(o, 0), ISV_EINVAL);
  assert_true(o->max_body_bytes == SIZE_MAX);
}

static void max_header_bytes_needs_at_least_64(void **state) {
  isv_options *o = *state;
  assert_int_equal(isv_options_set_max_header_bytes(o, 0), ISV_EINVAL);
  assert_int_equal(isv_options_set_max_header_bytes(o, 63), ISV_EINVAL);
  assert_int_equal(o->max_header_bytes, 64u << 10);
  assert_int_equal(isv_options_set_max_header_bytes(o, 64), 0);
  assert_int_equal(o->max_header_bytes, 64);
  assert_int_equal(isv_options_set_max_header_bytes(o, 63), ISV_EINVAL);
  assert_int_equal(o->max_header_bytes, 64);
  assert_int_equal(isv_options_set_max_header_bytes(o, 1u << 20), 0);
  assert_int_equal(o->max_header_bytes, 1u << 20);
}

static void timeouts_refuse_zero(void **state) {
  isv_options *o = *state;
  assert_int_equal(isv_options_set_idle_timeout_ms(o, 0), ISV_EINVAL);
  assert_int_equal(o->idle_timeout_ms, 60000);
  assert_int_equal(isv_options_set_idle_timeout_ms(o, 1), 0);
  assert_int_equal(o->idle_timeout_ms, 1);
  assert_int_equal(isv_options_set_idle_timeout_ms(o, UINT64_MAX), 0);
  assert_true(o->idle_timeout_ms == UINT64_MAX);
  assert_int_equal(isv_options_set_idle_timeout_ms(o, 0), ISV_EINVAL);
  assert_true(o->idle_timeout_ms == UINT64_MAX);

  assert_int_equal(isv_options_set_header_timeout_ms(o, 0), ISV_EINVAL);
  assert_int_equal(o->header_timeout_ms, 30000);
  assert_int_equal(isv_options_set_header_timeout_ms(o, 1), 0);
  assert_int_equal(o->header_timeout_ms, 1);
  assert_int_equal(isv_options_set_header_timeout_ms(o, UINT64_MAX), 0);
  assert_true(o->header_timeout_ms == UINT64_MAX);
  assert_int_equal(isv_options_set_header_timeout_ms(o, 0), ISV_EINVAL);
  assert_true(o->header_timeout_ms == UINT64_MAX);
  assert_int_equal(o->idle_timeout_ms, UINT64_MAX); /* the two are independent */
}

static void max_connections_refuses_zero(void **state) {
  isv_options *o = *state;
  assert_int_equal(isv_options_set_max_connections(o, 0), ISV_EINVAL);
  assert_int_equal(o->max_connections, 10000);
  assert_int_equal(isv_options_set_max_connections(o, 1), 0);
  assert_int_equal(o->max_connections, 1);
  assert_int_equal(isv_options_set_max_connections(o, UINT_MAX), 0);
  assert_int_equal(o->max_connections, UINT_MAX);
  assert_int_equal(isv_options_set_max_connections(o, 0), ISV_EINVAL);
  assert_int_equal(o->max_connections, UINT_MAX);
}

static void max_json_depth_is_between_1_and_1024(void **state) {
  isv_options *o = *state;
  assert_int_equal(isv_options_set_max_json_depth(o, 0), ISV_EINVAL);
  assert_int_equal(isv_options_set_max_json_depth(o, 1025), ISV_EINVAL);
  assert_int_equal(isv_options_set_max_json_depth(o, UINT_MAX), ISV_EINVAL);
  assert_int_equal(o->max_json_depth, 64);
  assert_int_equal(isv_options_set_max_json_depth(o, 1), 0);
  assert_int_equal(o->max_json_depth, 1);
  assert_int_equal(isv_options_set_max_json_depth(o, 1024), 0);
  assert_int_equal(o->max_json_depth, 1024);
  assert_int_equal(isv_options_set_max_json_depth(o, 1025), ISV_EINVAL);
  assert_int_equal(o->max_json_depth, 1024);
}

static void strict_readiness_is_a_boolean(void **state) {
  isv_options *o = *state;
  assert_int_equal(isv_options_set_strict_readiness(o, 42), 0);
  assert_int_equal(o->strict_readiness, 1);
  assert_int_equal(isv_options_set_strict_readiness(o, -1), 0);
  assert_int_equal(o->strict_readiness, 1);
  assert_int_equal(isv_options_set_strict_readiness(o, 0), 0);
  assert_int_equal(o->strict_readiness, 0);
}

static void buffer_prefault_is_bounded_by_the_cache_s_slots(void **state) {
  isv_options *o = *state;
  assert_int_equal(o->prefault_blocks, 0); /* none by default */
  assert_int_equal(isv_options_set_buffer_prefault(o, 64u << 20, 2), 0);
  assert_int_equal(o->prefault_block_bytes, 64u << 20);
  assert_int_equal(o->prefault_blocks, 2);
  assert_int_equal(isv_options_set_buffer_prefault(o, 64u << 20, 9), ISV_EINVAL); /* 8 slots */
  assert_int_equal(isv_options_set_buffer_prefault(o, (1u << 20) - 1, 1), ISV_EINVAL); /* malloc's */
  assert_int_equal(isv_options_set_buffer_prefault(NULL, 1u << 20, 1), ISV_EINVAL);
  assert_int_equal(o->prefault_blocks, 2); /* a refused call changes nothing */
  assert_int_equal(isv_options_set_buffer_prefault(o, 0, 0), 0); /* none again */
  assert_int_equal(o->prefault_blocks, 0);
  assert_int_equal(o->prefault_block_bytes, 0);
}

static void caches_accept_zero(void **state) {
  isv_options *o = *state;
  assert_int_equal(isv_options_set_buffer_cache_bytes(o, 0), 0); /* keeps none */
  assert_int_equal(o->buffer_cache_bytes, 0);
  assert_int_equal(isv_options_set_buffer_cache_bytes(o, SIZE_MAX), 0);
  assert_true(o->buffer_cache_bytes == SIZE_MAX);
  assert_int_equal(isv_options_set_buffer_cache_bytes(o, 1u << 20), 0);
  assert_int_equal(o->buffer_cache_bytes, 1u << 20);
  assert_int_equal(isv_options_set_small_block_cache_bytes(o, 0), 0); /* keeps none */
  assert_int_equal(o->small_block_cache_bytes, 0);
}

static void server_name_lengths_and_nulls(void **state) {
  isv_options *o = *state;
  char name[128], version[128];
  assert_int_equal(isv_options_set_server_name(o, "triton", "2.40"), 0);
  assert_string_equal(o->server_name, "triton");
  assert_string_equal(o->server_version, "2.40");
  /* refused: either string NULL or too long; neither string changes */
  assert_int_equal(isv_options_set_server_name(o, NULL, "1"), ISV_EINVAL);
  assert_int_equal(isv_options_set_server_name(o, "x", NULL), ISV_EINVAL);
  assert_int_equal(isv_options_set_server_name(o, repeat(name, 'n', 64), "1"), ISV_EINVAL);
  assert_int_equal(isv_options_set_server_name(o, "x", repeat(version, 'v', 32)), ISV_EINVAL);
  assert_string_equal(o->server_name, "triton");
  assert_string_equal(o->server_version, "2.40");
  /* the longest that fit: 63 and 31 characters */
  assert_int_equal(
      isv_options_set_server_name(o, repeat(name, 'n', 63), repeat(version, 'v', 31)), 0);
  assert_string_equal(o->server_name, name);
  assert_string_equal(o->server_version, version);
  assert_int_equal(strlen(o->server_name), 63);
  assert_int_equal(strlen(o->server_version), 31);
}

static void protocol_switches_are_stored_by_name(void **state) {
  isv_options *o = *state;
  assert_int_equal(isv__options_protocol(o, "metrics"), -1);
  assert_int_equal(isv_options_set_protocol(o, "metrics", 0), 0);
  assert_int_equal(isv__options_protocol(o, "metrics"), 0);
  assert_int_equal(isv__options_protocol(o, "grpc_health"), -1); /* others keep the default */
  assert_int_equal(isv__options_protocol(o, "metric"), -1);      /* whole names only */
  assert_int_equal(isv_options_set_protocol(o, "grpc_health", 7), 0);
  assert_int_equal(isv__options_protocol(o, "grpc_health"), 1); /* any non-zero is on */
  assert_int_equal(o->n_protocols, 2);
}

static void protocol_switch_replaces_an_earlier_setting(void **state) {
  isv_options *o = *state;
  assert_int_equal(isv_options_set_protocol(o, "kserve_v2", 0), 0);
  assert_int_equal(isv_options_set_protocol(o, "kserve_v2", 1), 0);
  assert_int_equal(isv__options_protocol(o, "kserve_v2"), 1);
  assert_int_equal(isv_options_set_protocol(o, "kserve_v2", 0), 0);
  assert_int_equal(isv__options_protocol(o, "kserve_v2"), 0);
  assert_int_equal(o->n_protocols, 1); /* one slot, not three */
}

static void protocol_names_must_be_1_to_31_characters(void **state) {
  isv_options *o = *state;
  char name[128];
  assert_int_equal(isv_options_set_protocol(o, NULL, 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_protocol(o, "", 1), ISV_EINVAL);
  assert_int_equal(isv_options_set_protocol(o, repeat(name, 'p', 32), 0), ISV_EINVAL);
  assert_int_equal(isv__options_protocol(o, name), -1);
  assert_int_equal(o->n_protocols, 0);
  assert_int_equal(isv_options_set_protocol(o, repeat(name, 'p', 31), 0), 0);
  assert_int_equal(isv__options_protocol(o, name), 0);
}

static void protocol_switches_hold_16_names_then_enomem(void **state) {
  isv_options *o = *state;
  char names[ISV__MAX_PROTOCOL_SWITCHES + 1][8];
  for (int i = 0; i <= ISV__MAX_PROTOCOL_SWITCHES; i++) {
    names[i][0] = 'p';
    names[i][1] = (char)('a' + i / 10);
    names[i][2] = (char)('0' + i % 10);
    names[i][3] = '\0';
  }
  assert_int_equal(ISV__MAX_PROTOCOL_SWITCHES, 16); /* the number the public header promises */
  for (int i = 0; i < ISV__MAX_PROTOCOL_SWITCHES; i++)
    assert_int_equal(isv_options_set_protocol(o, names[i], i % 2), 0);
  assert_int_equal(isv_options_set_protocol(o, names[16], 1), ISV_ENOMEM);
  assert_int_equal(isv__options_protocol(o, names[16]), -1);
  assert_int_equal(o->n_protocols, 16);
  /* a name already switched can still be switched again when the table is full */
  assert_int_equal(isv_options_set_protocol(o, names[0], 1), 0);
  assert_int_equal(isv__options_protocol(o, names[0]), 1);
  for (int i = 1; i < ISV__MAX_PROTOCOL_SWITCHES; i++)
    assert_int_equal(isv__options_protocol(o, names[i]), i % 2);
}

/* isv_server_new reads the switches: an unknown name is ISV_ENOTFOUND, a known one is fine. */
static void server_new_refuses_an_unknown_protocol_name(void **state) {
  isv_options *o = *state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  assert_int_equal(isv_options_set_protocol(o, "metrics", 0), 0);
  isv_server *srv = NULL;
  assert_int_equal(isv_server_new(&loop, o, &srv), 0);
  assert_non_null(srv);
  assert_int_equal(isv_server_close(srv, NULL, NULL), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(isv_options_set_protocol(o, "no_such_front_end", 1), 0);
  srv = (isv_server *)1;
  assert_int_equal(isv_server_new(&loop, o, &srv), ISV_ENOTFOUND);
  assert_null(srv);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(new_holds_every_default, setup, teardown),
      cmocka_unit_test_setup_teardown(defaults_fill_a_stack_struct_like_new, setup, teardown),
      cmocka_unit_test(new_with_null_out_is_einval_and_free_null_is_a_noop),
      cmocka_unit_test(every_setter_refuses_a_null_options),
      cmocka_unit_test_setup_teardown(max_body_bytes_refuses_zero, setup, teardown),
      cmocka_unit_test_setup_teardown(max_header_bytes_needs_at_least_64, setup, teardown),
      cmocka_unit_test_setup_teardown(timeouts_refuse_zero, setup, teardown),
      cmocka_unit_test_setup_teardown(max_connections_refuses_zero, setup, teardown),
      cmocka_unit_test_setup_teardown(max_json_depth_is_between_1_and_1024, setup, teardown),
      cmocka_unit_test_setup_teardown(strict_readiness_is_a_boolean, setup, teardown),
      cmocka_unit_test_setup_teardown(caches_accept_zero, setup, teardown),
      cmocka_unit_test_setup_teardown(buffer_prefault_is_bounded_by_the_cache_s_slots, setup, teardown),
      cmocka_unit_test_setup_teardown(server_name_lengths_and_nulls, setup, teardown),
      cmocka_unit_test_setup_teardown(protocol_switches_are_stored_by_name, setup, teardown),
      cmocka_unit_test_setup_teardown(protocol_switch_replaces_an_earlier_setting, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(protocol_names_must_be_1_to_31_characters, setup, teardown),
      cmocka_unit_test_setup_teardown(protocol_switches_hold_16_names_then_enomem, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(server_new_refuses_an_unknown_protocol_name, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
