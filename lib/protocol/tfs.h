/* TensorFlow Serving's rules that its REST (tfs_http.c, tfs_json.c) and gRPC (tfs_grpc.c,
 * tfs_pb.c) front ends share: which signature a name chooses, the tensors a signature's aliases
 * stand for, the method names, and the registry's states as TF Serving's. One copy: the REST and
 * gRPC answers about one model must agree. */
#ifndef ISV_PROTOCOL_TFS_H
#define ISV_PROTOCOL_TFS_H

#include "protocol/layer.h"

#include <stddef.h>

#include "core/registry.h"
#include "core/request.h"

/* The signature a request names when it names none; a model registered without signatures has
 * only this one, implicit (every input and output under its own name, method predict). */
#define ISV__TFS_DEFAULT_SIGNATURE "serving_default"

/* The signature (name, len) of cfg (name NULL: the default one): 1 with *sig set (NULL: the
 * implicit serving_default of a model without signatures), or 0 when cfg has none of that
 * name. */
int isv__tfs_signature(const isv_model_config *cfg, const char *name, size_t len,
                       const isv__signature **sig);

/* How many inputs (outputs) sig exposes (NULL: every one of the model's). */
size_t isv__tfs_sig_n_in(const isv_model_config *cfg, const isv__signature *sig);
size_t isv__tfs_sig_n_out(const isv_model_config *cfg, const isv__signature *sig);
/* The k-th input (output) of sig: the model's tensor, and its alias in *alias. */
const isv__io *isv__tfs_sig_in(const isv_model_config *cfg, const isv__signature *sig, size_t k,
                               const char **alias);
const isv__io *isv__tfs_sig_out(const isv_model_config *cfg, const isv__signature *sig, size_t k,
                                const char **alias);
/* The name the model's output `name` goes by in sig's answers: its alias, else its own. */
const char *isv__tfs_out_alias(const isv__signature *sig, const char *name);

/* What a classify answer is made of (r's outputs by sig's aliases): "scores" (or the only
 * output; FP32 or FP64, [n] or [n, k]) and "classes" (BYTES of the same shape) when there is
 * one; else the model's labels when it has k; else the class index. */
typedef struct isv__tfs_classes {
  const isv_tensor *scores, *classes;
  size_t n, k;
  char *const *labels; /* the model's, when it has k of them */
} isv__tfs_classes;
/* 0, or ISV_EINVAL with msg set (the model's answer cannot be a classification). */
int isv__tfs_classes_of(const isv_request *r, const isv__signature *sig, isv__tfs_classes *c,
                        char *msg, size_t cap);
/* Example i's class j: its label into (*p, *n) (buf, of cap >= 24, holds an index) and score. */
double isv__tfs_class(const isv__tfs_classes *c, size_t i, size_t j, const char **p, size_t *n,
                      char *buf, size_t cap);
/* The regress answer's tensor: "outputs" (or the only output), FP32 or FP64, one value per
 * example; NULL with msg set when there is none such. */
const isv_tensor *isv__tfs_regression_of(const isv_request *r, const isv__signature *sig,
                                         char *msg, size_t cap);
/* Element i of an FP32 or FP64 tensor. */
double isv__tfs_real(const isv_tensor *t, size_t i);

/* "tensorflow/serving/predict" (classify, regress). */
const char *isv__tfs_method_name(isv_signature_method m);

/* The registry's state as TF Serving's ModelVersionStatus.State: its name ("AVAILABLE") and its
 * number (30). */
const char *isv__tfs_state_name(isv_model_state st);
int isv__tfs_state_number(isv_model_state st);

#endif
