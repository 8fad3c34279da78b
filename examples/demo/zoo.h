/* The demo model zoo: small models with a stable contract that the integration tests and the
 * protocol conformance suites rely on.
 *
 *   simple              INPUT0, INPUT1 INT32 [-1,16] -> OUTPUT0 = a+b, OUTPUT1 = a-b
 *   simple_string       the same on decimal text (BYTES)
 *   identity_<t>        INPUT0 [-1,-1] -> OUTPUT0 identical, for every datatype t
 *   multi_version       v1..v3: OUTPUT0 = INPUT0 + version; stable -> 2, canary -> 3, default 3
 *   classifier          iris-like FP32 [-1,4] -> softmax FP32 [-1,3] with class labels
 *   half_plus_three     v123: y = 0.5 x + 3 (TensorFlow Serving's test model, renamed)
 *   slow                sleeps INPUT0 ms on the thread pool, echoes it
 *   failing             always fails with ISV_EBACKEND
 *   loading             registered in state LOADING
 */
#ifndef INFERSERVE_DEMO_ZOO_H
#define INFERSERVE_DEMO_ZOO_H

#include <inferserve.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Register every model of the zoo on srv. 0, or the negative ISV_E* code of the first failure
 * (isv_server_last_error(srv) says more). */
int demo_zoo_register(isv_server *srv);

#ifdef __cplusplus
}
#endif

#endif
