/* grps's metadata as YAML: grps_meta.h. */
#include "protocol/grps_meta.h"

#include <string.h>

#include "codec/datatype.h"
#include "codec/json_writer.h"
#include "core/queries.h"

static void str(isv__buf *b, const char *s) { isv__json_write_string(b, s, strlen(s)); }

static void versions_of(const isv__model_entry *e, isv__buf *b) {
  isv__buf_putc(b, '[');
  for (const isv_model *v = e->versions; v; v = v->next) {
    if (v != e->versions) isv__buf_puts(b, ", ");
    str(b, v->version);
  }
  isv__buf_putc(b, ']');
}

static void model_line(isv__model_entry *e, void *data) {
  isv__buf *b = data;
  isv__buf_puts(b, "  - name: ");
  str(b, e->name);
  isv__buf_puts(b, "\n    versions: ");
  versions_of(e, b);
  isv__buf_puts(b, "\n    states: [");
  for (const isv_model *v = e->versions; v; v = v->next) {
    if (v != e->versions) isv__buf_puts(b, ", ");
    isv__buf_puts(b, isv__model_state_name(v->state));
  }
  isv__buf_puts(b, "]\n");
}

void isv__grps_server_yaml(isv__core *c, isv__buf *b) {
  isv__buf_puts(b, "name: ");
  str(b, c->opts.server_name);
  isv__buf_puts(b, "\nversion: ");
  str(b, c->opts.server_version);
  isv__buf_puts(b, "\nlive: true\nready: ");
  isv__buf_puts(b, isv__core_ready(c) ? "true" : "false");
  isv__buf_puts(b, "\nonline: ");
  isv__buf_puts(b, isv__core_online(c) ? "true" : "false");
  isv__buf_puts(b, "\ndefault_model: ");
  str(b, c->default_model);
  isv__buf_puts(b, "\nmodels:");
  size_t before = b->len;
  isv__buf_putc(b, '\n');
  isv__registry_foreach(isv__core_models(c), model_line, b);
  if (b->len == before + 1) { /* none: an empty flow sequence, not a null */
    b->len = before;
    isv__buf_puts(b, " []\n");
  }
}

static void ios(isv__buf *b, const char *key, const isv__io *io, size_t n, uint32_t max_batch) {
  isv__buf_puts(b, key);
  isv__buf_puts(b, n ? ":\n" : ": []\n");
  for (size_t i = 0; i < n; i++) {
    const char *dt = isv__dt_name(io[i].dt, ISV__DTN_GRPS);
    isv__buf_puts(b, "  - name: ");
    str(b, io[i].name);
    isv__buf_puts(b, "\n    dtype: ");
    isv__buf_puts(b, dt ? dt : isv_datatype_name(io[i].dt));
    isv__buf_puts(b, "\n    shape: [");
    if (max_batch) isv__buf_puts(b, io[i].ndim || io[i].any_rank ? "-1, " : "-1");
    for (size_t d = 0; d < io[i].ndim; d++) {
      if (d) isv__buf_puts(b, ", ");
      isv__json_write_i64(b, io[i].shape[d]);
    }
    isv__buf_puts(b, "]\n");
  }
}

void isv__grps_model_yaml(const isv__core *c, const isv_model *m, isv__buf *b) {
  const isv_model_config *cfg = m->cfg;
  isv__buf_puts(b, "name: ");
  str(b, cfg->name);
  isv__buf_puts(b, "\nversion: ");
  str(b, m->version);
  isv__buf_puts(b, "\nversions: ");
  if (m->entry) {
    versions_of(m->entry, b);
  } else { /* removed while a request holds it */
    isv__buf_putc(b, '[');
    str(b, m->version);
    isv__buf_putc(b, ']');
  }
  isv__buf_puts(b, "\nplatform: ");
  str(b, cfg->platform);
  isv__buf_puts(b, "\nstate: ");
  isv__buf_puts(b, isv__model_state_name(m->state));
  isv__buf_puts(b, "\nready: ");
  isv__buf_puts(b, isv__core_model_ready(c, m) ? "true" : "false");
  isv__buf_puts(b, "\nmax_batch_size: ");
  isv__json_write_u64(b, cfg->max_batch);
  isv__buf_puts(b, "\ndecoupled: ");
  isv__buf_puts(b, cfg->decoupled ? "true" : "false");
  isv__buf_puts(b, "\nopen_io: ");
  isv__buf_puts(b, cfg->open_io ? "true" : "false");
  isv__buf_puts(b, "\nnative: ");
  isv__buf_puts(b, cfg->native ? "true" : "false");
  isv__buf_putc(b, '\n');
  ios(b, "inputs", cfg->inputs, cfg->n_inputs, cfg->max_batch);
  ios(b, "outputs", cfg->outputs, cfg->n_outputs, cfg->max_batch);
}
