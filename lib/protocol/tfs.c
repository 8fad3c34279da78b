/* TF Serving's shared rules (tfs.h). */
#include "protocol/tfs.h"

#include <stdio.h>
#include <string.h>

int isv__tfs_signature(const isv_model_config *cfg, const char *name, size_t len,
                       const isv__signature **sig) {
  if (name == NULL) {
    name = ISV__TFS_DEFAULT_SIGNATURE;
    len = strlen(name);
  }
  *sig = NULL;
  if (cfg->n_sigs == 0)
    return len == strlen(ISV__TFS_DEFAULT_SIGNATURE) &&
           memcmp(name, ISV__TFS_DEFAULT_SIGNATURE, len) == 0;
  for (size_t i = 0; i < cfg->n_sigs; i++)
    if (strlen(cfg->sigs[i].name) == len && memcmp(cfg->sigs[i].name, name, len) == 0) {
      *sig = &cfg->sigs[i];
      return 1;
    }
  return 0;
}

size_t isv__tfs_sig_n_in(const isv_model_config *cfg, const isv__signature *sig) {
  return sig ? sig->n_in : cfg->n_inputs;
}

size_t isv__tfs_sig_n_out(const isv_model_config *cfg, const isv__signature *sig) {
  return sig ? sig->n_out : cfg->n_outputs;
}

static const isv__io *io_named(const isv__io *io, size_t n, const char *name) {
  for (size_t j = 0; j < n; j++)
    if (strcmp(io[j].name, name) == 0) return &io[j];
  return NULL;
}

const isv__io *isv__tfs_sig_in(const isv_model_config *cfg, const isv__signature *sig, size_t k,
                               const char **alias) {
  if (sig == NULL) {
    *alias = cfg->inputs[k].name;
    return &cfg->inputs[k];
  }
  *alias = sig->in_aliases[k];
  return io_named(cfg->inputs, cfg->n_inputs, sig->in_names[k]); /* registration checked it */
}

const isv__io *isv__tfs_sig_out(const isv_model_config *cfg, const isv__signature *sig, size_t k,
                                const char **alias) {
  if (sig == NULL) {
    *alias = cfg->outputs[k].name;
    return &cfg->outputs[k];
  }
  *alias = sig->out_aliases[k];
  return io_named(cfg->outputs, cfg->n_outputs, sig->out_names[k]);
}

const char *isv__tfs_out_alias(const isv__signature *sig, const char *name) {
  for (size_t i = 0; sig && i < sig->n_out; i++)
    if (strcmp(sig->out_names[i], name) == 0) return sig->out_aliases[i];
  return name;
}

const char *isv__tfs_method_name(isv_signature_method m) {
  return m == ISV_SIGNATURE_CLASSIFY ? "tensorflow/serving/classify"
         : m == ISV_SIGNATURE_REGRESS ? "tensorflow/serving/regress"
                                      : "tensorflow/serving/predict";
}

const char *isv__tfs_state_name(isv_model_state st) {
  switch (st) {
  case ISV_MODEL_LOADING: return "LOADING";
  case ISV_MODEL_READY: return "AVAILABLE";
  case ISV_MODEL_UNLOADING: return "UNLOADING";
  case ISV_MODEL_UNAVAILABLE: return "END";
  default: return "UNKNOWN";
  }
}

int isv__tfs_state_number(isv_model_state st) {
  switch (st) {
  case ISV_MODEL_LOADING: return 20;
  case ISV_MODEL_READY: return 30;
  case ISV_MODEL_UNLOADING: return 40;
  case ISV_MODEL_UNAVAILABLE: return 50;
  default: return 0;
  }
}

/* The output that goes by `name`, else the only one; NULL when neither. */
static const isv_tensor *output_named(const isv_request *r, const isv__signature *sig,
                                      const char *name) {
  for (size_t i = 0; i < r->n_outputs; i++)
    if (strcmp(isv__tfs_out_alias(sig, r->outputs[i].name), name) == 0) return &r->outputs[i];
  return r->n_outputs == 1 ? &r->outputs[0] : NULL;
}

int isv__tfs_classes_of(const isv_request *r, const isv__signature *sig, isv__tfs_classes *c,
                        char *msg, size_t cap) {
  memset(c, 0, sizeof *c);
  c->scores = output_named(r, sig, "scores");
  for (size_t i = 0; i < r->n_outputs; i++)
    if (strcmp(isv__tfs_out_alias(sig, r->outputs[i].name), "classes") == 0)
      c->classes = &r->outputs[i];
  if (c->scores == c->classes) c->scores = NULL;
  const isv_tensor *s = c->scores;
  if (s == NULL || (s->dt != ISV_FP32 && s->dt != ISV_FP64) || s->ndim < 1 || s->ndim > 2) {
    snprintf(msg, cap, "classify needs a \"scores\" output (FP32 or FP64, [examples] or "
                       "[examples, classes])");
    return ISV_EINVAL;
  }
  c->n = (size_t)s->shape[0];
  c->k = s->ndim == 2 ? (size_t)s->shape[1] : 1;
  if (c->classes && (c->classes->dt != ISV_BYTES || c->classes->count != c->n * c->k)) {
    snprintf(msg, cap, "the \"classes\" output must be BYTES of the shape of \"scores\"");
    return ISV_EINVAL;
  }
  const isv_model_config *cfg = r->model ? r->model->cfg : NULL;
  if (cfg && cfg->n_labels == c->k) c->labels = cfg->labels;
  return 0;
}

double isv__tfs_class(const isv__tfs_classes *c, size_t i, size_t j, const char **p, size_t *n,
                      char *buf, size_t cap) {
  if (c->classes) {
    const isv_bytes *b = (const isv_bytes *)c->classes->data + i * c->k + j;
    *p = b->ptr;
    *n = b->len;
  } else if (c->labels) {
    *p = c->labels[j];
    *n = strlen(c->labels[j]);
  } else {
    snprintf(buf, cap, "%zu", j);
    *p = buf;
    *n = strlen(buf);
  }
  return isv__tfs_real(c->scores, i * c->k + j);
}

const isv_tensor *isv__tfs_regression_of(const isv_request *r, const isv__signature *sig,
                                         char *msg, size_t cap) {
  const isv_tensor *t = output_named(r, sig, "outputs");
  if (t == NULL || (t->dt != ISV_FP32 && t->dt != ISV_FP64) || t->ndim < 1 ||
      (size_t)t->shape[0] != t->count) {
    snprintf(msg, cap, "regress needs an \"outputs\" output of one FP32 or FP64 value per "
                       "example ([examples] or [examples, 1])");
    return NULL;
  }
  return t;
}

double isv__tfs_real(const isv_tensor *t, size_t i) {
  return t->dt == ISV_FP64 ? ((const double *)t->data)[i] : ((const float *)t->data)[i];
}
