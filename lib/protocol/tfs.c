/* TF Serving's shared rules (tfs.h). */
#include "protocol/tfs.h"

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
